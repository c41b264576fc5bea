"""The Pod: the headless heart of Hearth. Owns the store, the vault, the supervisor and the turns.

A plain asyncio object: the Qt app hosts it, `python -m runtime_host` hosts it headless. Events
(turn.started, delta, iteration, step.started, step.finished, turn.finished, worker.state) go to
every subscriber as plain dicts; nothing here knows Qt.

The Pod composes parts with one job each, and delegates to them; each part registers its own Pod tools and
never reaches into another's private state: turn driving and leases (runtime_host/turns.py), agents,
providers and routes (agenthost.py), memory (memoryhost.py), schedules (schedulehost.py), hand-offs between
agents (taskhost.py) and partner agents (partnerhost.py). Mail, channels and MCP are hosts of their own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime_host import conversations, removal
from runtime_host.agenthost import EMBEDDED, EMBEDDED_NOTE, AgentHost, UnknownAgent
from runtime_host.memoryhost import MemoryHost
from runtime_host.partnerhost import PartnerHost
from runtime_host.passphrase import check_passphrase, hash_passphrase
from runtime_host.paths import data_dir, folder_problem
from runtime_host.schedulehost import ScheduleHost
from runtime_host.store import (
    HEARTH_ORIGINS,
    UNNAMED,
    UNNAMED_AS,
    AgentInstance,
    AgentProfile,
    Person,
    StorageError,
    Store,
    StoreError,
    made_title,
    now,
    step_tree,
)
from runtime_host.supervisor import Supervisor, SupervisorConfig, WorkerHandle
from runtime_host.taskhost import TaskHost
from runtime_host.turns import MessageTooLarge, Run, TurnFailed, TurnResult, Turns
from runtime_host.turnstop import TurnStops, note_for
from vault import Vault, redact_value

if TYPE_CHECKING:
    from wiki_engine.memory import Deleted

log = logging.getLogger("hearth.pod")

# What app, serve and tests import from here (each has its home in a part of the Pod).
__all__ = ["EMBEDDED", "EMBEDDED_NOTE", "UNNAMED", "UNNAMED_AS", "MessageTooLarge", "Pod", "StoreError", "TurnFailed",
           "TurnResult", "UnknownAgent", "check_passphrase", "hash_passphrase"]


class Pod:
    def __init__(self, home: Path | None = None, *, supervisor_config: SupervisorConfig | None = None,
                 worker_command: list[str] | None = None):
        self.home = Path(home) if home else data_dir()
        problem = folder_problem(self.home)  # a read-only folder: one clear message, before anything else
        if problem is not None:
            raise StorageError(problem)
        # SQLite in the data folder by default; PostgreSQL (or another server) by URL for several hosts.
        self.store = Store(os.environ.get("HEARTH_DATABASE_URL") or self.home / "pod.db")
        self.pod_id = self.store.meta("pod_id", default_factory=lambda: __import__("uuid").uuid4().hex) or ""
        self.store.default_person()  # the first person (the one who set Hearth up) exists from the start
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self.turn_driver = Turns(self)  # turn driving, leases, recovery (runtime_host/turns.py)
        self.supervisor = Supervisor(self.turn_driver.on_worker_message, self.turn_driver.on_worker_exit, self.emit,
                                     supervisor_config, worker_command, gone=self._people_gone)
        self.stops = TurnStops(self)
        self._closed = False
        self._passphrases: dict[str, str] = {}  # in memory only: unlocks the encrypted-file vault
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._channels_task: asyncio.Task[bool] | None = None
        self._mail: Any = None
        self._mcp: Any = None
        self._channels: Any = None
        # Tools the Pod carries out for a worker, by name: handler(person_id, instance_id, args) -> output
        self.pod_tools = self.turn_driver.tools
        self.pod_tools.update({
            "list_mail": lambda p, a, args: self.mail.tool_list_mail(p, a, args),
            "read_mail": lambda p, a, args: self.mail.tool_read_mail(p, a, args),
            "draft_mail": lambda p, a, args: self.mail.tool_draft_mail(p, a, args),
            "mcp": lambda p, a, args: self.mcp.call(p, a, args),
        })
        self.task_host = TaskHost(self)  # hand-offs between agents (runtime_host/taskhost.py)
        self.task_host.register_tools(self.pod_tools)
        self.partner_host = PartnerHost(self)  # partner agents and their approved sends (runtime_host/partnerhost.py)
        self.partner_host.register_tools(self.pod_tools)
        self.memory_host = MemoryHost(self)  # memory: the wiki, its thread, tools and jobs (runtime_host/memoryhost.py)
        self.memory_host.register_tools(self.pod_tools)
        self.agent_host = AgentHost(self)  # agents, providers and routes (runtime_host/agenthost.py)
        self.agent_host.register_tools(self.pod_tools)
        self.schedule_host = ScheduleHost(self)  # schedules and the memory timers (runtime_host/schedulehost.py)

    # -- events
    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    def emit(self, event: dict[str, Any]) -> None:
        # Every turn event names its person, so a view shows only its own person's activity.
        if "person" not in event:
            run = self.turn_driver.active.get(event.get("turn_id") or "")
            if run is not None:
                event["person"] = run.person_id
            elif event.get("type") == "worker.state" and event.get("key"):
                event["person"] = event["key"][0]
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:  # a broken subscriber must not break the pod
                log.exception("event subscriber failed")

    # -- vault
    def vault_for(self, person_id: str) -> Vault:
        """The person's secrets: the OS keyring, or where none exists an encrypted file in the data folder
        unlocked with the person's passphrase (given when they unlocked Hearth)."""
        return Vault.open(f"{self.pod_id}/person/{person_id}", self._passphrases.get(person_id), self.home)

    @property
    def channels(self) -> Any:
        """The card arbiter and the phone channels (Telegram)."""
        if self._channels is None:
            from runtime_host.channelhost import ChannelsHost

            self._channels = ChannelsHost(self)
        return self._channels

    @property
    def mcp(self) -> Any:
        if self._mcp is None:
            from runtime_host.mcphost import McpHost

            self._mcp = McpHost(self)
        return self._mcp

    def allow_mcp(self, person_id: str, agent: str, server: str, tools: list[str] | None = None) -> list[str]:
        """A person allows an MCP server's tools (all it lists now, or the named ones) for one agent."""
        return self.agent_host.allow_mcp(person_id, agent, server, tools)

    @property
    def mail(self) -> Any:
        if self._mail is None:
            from runtime_host.mailhost import MailHost

            self._mail = MailHost(self)
        return self._mail

    # -- people
    def people(self) -> list[dict[str, Any]]:
        """Who shares this Hearth: names only (what each may see is theirs)."""
        return [{"id": p.id, "name": p.name, "has_passphrase": bool(p.passphrase_hash),
                 "removing": p.removing_at is not None} for p in self.store.list_people()]

    def keep_notice(self, person_id: str, title: str, text: str, conversation_id: str | None = None) -> None:
        """Keeps a notification meant for a person while someone else is shown (in pod.db: a quit does not lose
        it), for them alone; ``PersonPod.take_notices`` gives it to them when they are shown. One of a conversation
        (a run's answer) is deleted with it."""
        self.store.keep_notice(person_id, title, text, conversation_id)

    def add_person(self, name: str, passphrase: str | None = None) -> dict[str, Any]:
        name = self.store.person_name(name)  # the rules a rename follows too
        if passphrase is not None and len(passphrase) < 8:
            raise StoreError("A passphrase needs at least 8 characters.")
        p = self.store.add_person(name, hash_passphrase(passphrase) if passphrase else None)
        return {"id": p.id, "name": p.name, "has_passphrase": passphrase is not None}

    def for_person(self, person: Any) -> Any:
        """The Pod as one person uses it (a `PersonPod`), for code that already knows who is asking (a
        person the window unlocked, the owner of a schedule). People are unlocked with `unlock`."""
        from runtime_host.person import PersonPod

        row = person if isinstance(person, Person) else self.store.get_person_by_id(str(person))
        if row is None:
            raise StoreError(f"No person {person!r} on this Hearth.")
        self.agent_host.know_keys(row.id)  # their keys are hidden in whatever they type from now on
        return PersonPod(self, row)

    def first_person(self) -> Any:
        """The person who set this Hearth up (the window opens on them)."""
        return self.for_person(self.store.default_person())

    def unlock(self, name: str, passphrase: str | None = None, *, by: str = "the window") -> Any:
        """Checks `name`'s passphrase and returns the Pod as that person uses it (a `PersonPod`).
        A refused attempt is audited under that person."""
        p = self.store.get_person(name)
        if p is None:
            known = ", ".join(x.name for x in self.store.list_people())
            raise StoreError(f"No person named {name!r} (people here: {known}).")
        if p.removing_at is not None:
            raise removal.being_removed(p)
        if p.passphrase_hash and passphrase is None:
            self.audit(person_id=p.id, agent=None, kind="access", action="denied", rule="person.locked",
                       summary=f"{by} tried to act as {name} without the passphrase")
            raise StoreError(f"{name} is protected by a passphrase: unlock with it (in the CLI: "
                             f"--person {name!r} --passphrase-stdin).")
        if p.passphrase_hash and not check_passphrase(passphrase or "", p.passphrase_hash):
            self.audit(person_id=p.id, agent=None, kind="access", action="denied", rule="person.passphrase",
                       summary=f"{by} gave a wrong passphrase for {name}")
            raise StoreError(f"That passphrase does not unlock {name}. Try again.")
        if passphrase:
            self._passphrases[p.id] = passphrase
        return self.for_person(p)

    def _people_gone(self, ids: set[str]) -> set[str]:
        """Of ``ids``, the people removed from this Hearth or being removed (by this process or another)."""
        return ids - {p.id for p in self.store.list_people(active=True)}

    async def remove_person(self, by_id: str, name: str, confirm: str) -> dict[str, Any]:
        """``by_id`` removes ``name`` with everything theirs (runtime_host/removal.py); no agent tool reaches it."""
        return await removal.remove(self, by_id, name, confirm)

    def refuse(self, person_id: str, what: str, summary: str) -> StoreError:
        """Audits an attempt to reach something that is not the person's, and returns the error to raise:
        the same words whether the thing exists for someone else or not at all."""
        self.audit(person_id=person_id, agent=None, kind="access", action="denied", rule="person.scope", summary=summary)
        return StoreError(what)

    def set_passphrase(self, person_id: str, passphrase: str, old: str | None = None) -> None:
        current = self.store.get_person_by_id(person_id)
        if current is None:
            raise StoreError("No such person.")
        if current.passphrase_hash and not check_passphrase(old or "", current.passphrase_hash):
            raise StoreError("The current passphrase is not right; the passphrase was not changed.")
        if len(passphrase) < 8:
            raise StoreError("A passphrase needs at least 8 characters.")
        with self.store.session() as s:
            row = s.get(Person, person_id)
            assert row is not None
            row.passphrase_hash = hash_passphrase(passphrase)
            s.add(row)
            s.commit()
        self._passphrases[person_id] = passphrase

    # -- schedules pause (the tray's switch; the scheduler reads it on every tick)
    @property
    def schedules_paused(self) -> bool:
        return self.schedule_host.schedules_paused

    def set_schedules_paused(self, paused: bool) -> None:
        return self.schedule_host.set_schedules_paused(paused)

    # -- schedules
    def add_schedule(self, person_id: str, agent: str, cron: str, prompt: str, *, tz: str = "UTC", catch_up: str = "once",
                     name: str = "") -> dict[str, Any]:
        return self.schedule_host.add_schedule(person_id, agent, cron, prompt, tz=tz, catch_up=catch_up, name=name)

    def schedules(self, person_id: str) -> list[dict[str, Any]]:
        return self.schedule_host.schedules(person_id)

    def pause_schedule(self, person_id: str, schedule_id: str, paused: bool) -> dict[str, Any]:
        """Pauses or resumes one of the person's schedules (due times while paused are skipped)."""
        return self.schedule_host.pause_schedule(person_id, schedule_id, paused)

    def delete_schedule(self, person_id: str, schedule_id: str) -> None:
        """Deletes one of the person's schedules; its past runs stay in the ledger."""
        return self.schedule_host.delete_schedule(person_id, schedule_id)

    @staticmethod
    def schedule_preview(cron: str, tz: str = "UTC", n: int = 3) -> dict[str, Any]:
        """A cron expression in plain words and its next `n` times (in `tz`); CronError (a ValueError) says
        what is wrong with it."""
        from datetime import UTC, datetime

        from runtime_host import schedule

        sched = schedule.Schedule(cron, tz or "UTC", "once")
        runs = schedule.next_runs(sched, datetime.now(UTC), n)
        return {"description": schedule.describe(cron), "next": [r.astimezone(schedule.zone(sched.tz)) for r in runs]}

    def ensure_memory_timers(self) -> None:
        """The memory producer, ingest and nightly pass run on the same scheduler and ledger."""
        return self.schedule_host.ensure_memory_timers()

    async def tick(self, now: Any = None) -> dict[str, Any]:
        """Runs what is due at `now` (default: the current time) exactly once, across every Pod."""
        return await self.schedule_host.tick(now)

    def schedule_ledger(self, person_id: str, limit: int = 200) -> list[dict[str, Any]]:
        return self.schedule_host.schedule_ledger(person_id, limit)

    # -- providers and agents
    def add_provider(self, person_id: str, name: str, *, kind: str, base_url: str, model: str = "", key: str | None = None) -> dict[str, Any]:
        return self.agent_host.add_provider(person_id, name, kind=kind, base_url=base_url, model=model, key=key)

    def list_providers(self, person_id: str, *, builtin: bool = True) -> list[dict[str, Any]]:
        return self.agent_host.list_providers(person_id, builtin=builtin)

    def check_provider(self, person_id: str, name: str, *, kind: str | None = None, base_url: str | None = None,
                       key: str | None = None) -> Any:
        return self.agent_host.check_provider(person_id, name, kind=kind, base_url=base_url, key=key)

    def remove_provider(self, person_id: str, name: str) -> None:
        """Removes a provider and its key; refuses while an agent or a role still uses it."""
        return self.agent_host.remove_provider(person_id, name)

    def _provider(self, person_id: str, name: str) -> dict[str, Any] | None:
        return self.agent_host._provider(person_id, name)

    def profiles(self) -> dict[str, dict[str, Any]]:
        """The agent profiles Hearth ships, by template name."""
        return self.agent_host.profiles()

    def add_agent(self, person_id: str, name: str, *, provider: str | None = None, model: str | None = None, system: str | None = None,
                  toolkits: list[str] | None = None, profile: str | None = None) -> dict[str, Any]:
        return self.agent_host.add_agent(person_id, name, provider=provider, model=model, system=system, toolkits=toolkits, profile=profile)

    def edit_agent(self, person_id: str, name: str, **changes: Any) -> dict[str, Any]:
        """Changes an agent's provider, model, instructions or toolkits; its idle worker rebinds."""
        return self.agent_host.edit_agent(person_id, name, **changes)

    def list_agents(self, person_id: str) -> list[dict[str, Any]]:
        return self.agent_host.list_agents(person_id)

    def find_agent(self, person_id: str, name: str) -> tuple[AgentInstance, AgentProfile]:
        return self.agent_host.find_agent(person_id, name)

    # -- worker binding

    def message_routes(self, inst: AgentInstance, profile: AgentProfile, model: str) -> list[dict[str, Any]]:
        """One message on another model: that route first, then the agent's own chain (keys included)."""
        return self.agent_host.message_routes(inst, profile, model)

    # -- models by role
    def models(self, person_id: str) -> dict[str, Any]:
        """The person's providers, what each can do, and the model they chose for each role."""
        return self.agent_host.models(person_id)

    def set_role_model(self, person_id: str, role: str, ref: str) -> None:
        return self.agent_host.set_role_model(person_id, role, ref)

    def embedding_model(self) -> str:
        return self.agent_host.embedding_model()

    def embedding_choices(self, person_id: str) -> list[dict[str, Any]]:
        return self.agent_host.embedding_choices(person_id)

    def embedding_status(self, person_id: str | None = None) -> dict[str, Any] | None:
        return self.memory_host.embedding_status(person_id)

    def role_route(self, person_id: str, role: str) -> dict[str, Any] | None:
        """The person's route for a background role (following inheritance), or None when none is set."""
        return self.agent_host.role_route(person_id, role)

    def allowlist(self, inst: AgentInstance, profile: AgentProfile) -> Any:
        return self.agent_host.allowlist(inst, profile)

    def _binding(self, inst: AgentInstance, profile: AgentProfile) -> dict[str, Any]:
        return self.agent_host._binding(inst, profile)

    async def ensure_worker(self, inst: AgentInstance, profile: AgentProfile) -> WorkerHandle:
        return await self.agent_host.ensure_worker(inst, profile)

    async def start_agent(self, person_id: str, name: str) -> dict[str, Any]:
        """Spawns the agent's worker now (it would otherwise start on first need)."""
        return await self.agent_host.start_agent(person_id, name)

    async def stop_agent(self, person_id: str, name: str) -> None:
        return await self.agent_host.stop_agent(person_id, name)

    async def delete_agent(self, person_id: str, name: str) -> None:
        """Deletes an agent: stops its turns and worker, removes its schedules, conversations and steps."""
        return await self.agent_host.delete_agent(person_id, name)

    async def restart_agent(self, person_id: str, name: str) -> dict[str, Any]:
        """Stops the agent's worker and starts a fresh one; also clears a fatal state."""
        return await self.agent_host.restart_agent(person_id, name)

    # -- turns
    async def start_turn(self, person_id: str, agent: str, text: str, *, conversation_id: str | None = None,
                         new_conversation: bool = False, origin: str = "chat", title: str = "",
                         model: str | None = None) -> Run:
        """Writes the message and the turn, then runs it in the background. Await `run.future`.

        A message that reaches a conversation whose next turn has not started yet joins that turn
        (bursts merge into one turn); turns in one conversation run one after another.
        """
        inst, profile = self.find_agent(person_id, agent)
        return await self.start_turn_for(inst, profile, text, conversation_id=conversation_id,
                                         new_conversation=new_conversation, origin=origin, title=title, model=model)

    async def start_turn_for(self, inst: AgentInstance, profile: AgentProfile, text: str, *,
                             conversation_id: str | None = None, new_conversation: bool = False, origin: str = "chat",
                             title: str = "", model: str | None = None) -> Run:
        """start_turn for a known agent instance (schedules and triggers run for any person)."""
        agent = inst.name
        from runtime_host.sizes import message_problem

        problem = message_problem(text)
        if problem is not None:
            raise MessageTooLarge(problem)
        if model is not None and self._provider(inst.person_id, model.split("/", 1)[0]) is None:
            raise StoreError(f"No provider named {model.split('/', 1)[0]!r} for this message's model.")
        self.agent_host.know_keys(inst.person_id)
        if conversation_id:
            conv = self.store.get_conversation(conversation_id)
            if conv is None or conv.instance_id != inst.id:
                what = f"No conversation {conversation_id!r} with agent {agent!r}."
                if conv is not None and self.conversation_owner(conv.id) != inst.person_id:
                    raise self.refuse(inst.person_id, what, f"a message to {agent} named another person's "
                                                            f"conversation {conversation_id}")
                raise StoreError(what)
        else:
            conv = None if new_conversation else self.store.latest_conversation(inst.id)
            if conv is None:
                conv = self.store.create_conversation(inst.id, title=title)
        return self.turn_driver.queue(inst, profile, conv, text, origin=origin, model=model)

    async def chat(self, person_id: str, agent: str, text: str, **kw: Any) -> TurnResult:
        run = await self.start_turn(person_id, agent, text, **kw)
        return await run.future

    # -- partner agents (A2A), every send approved by a person
    def add_partner(self, person_id: str, name: str, endpoint: str, key: str, *, tls_fingerprint: str = "", ca_file: str | None = None,
                    ) -> dict[str, Any]:
        """Pins a partner as the operator adds it: endpoint, key (vault) and TLS pin, never changed later."""
        return self.partner_host.add_partner(person_id, name, endpoint, key, tls_fingerprint=tls_fingerprint, ca_file=ca_file)

    def _partner(self, name: str, person_id: str) -> Any:
        return self.partner_host._partner(name, person_id)

    def list_partners(self, person_id: str) -> list[dict[str, Any]]:
        return self.partner_host.list_partners(person_id)

    def partner_cards(self, person_id: str) -> list[dict[str, Any]]:
        return self.partner_host.partner_cards(person_id)

    def decide_partner_send(self, send_id: str, approve: bool, decided_by: str = "app", *,
                            person_id: str | None = None) -> None:
        """A person's decision (`person_id` given: only on their own sends) or a channel's (already checked)."""
        return self.partner_host.decide_partner_send(send_id, approve, decided_by, person_id=person_id)

    # -- the task ledger (hand-offs between agents)
    async def _tool_hand_off(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        return await self.task_host.tool_hand_off(person_id, instance_id, args)

    def list_tasks(self, person_id: str, state: str | None = None) -> list[dict[str, Any]]:
        return self.task_host.list_tasks(person_id, state)

    def task_timeline(self, person_id: str, task_id: str) -> list[dict[str, Any]]:
        """What happened to one of the person's tasks, oldest first (ts, kind and its details)."""
        return self.task_host.task_timeline(person_id, task_id)

    async def decide_task(self, person_id: str, task_id: str, approve: bool, decided_by: str = "app") -> dict[str, Any]:
        return await self.task_host.decide_task(person_id, task_id, approve, decided_by)

    async def _carry_out_task(self, t: Any, approve: bool, decided_by: str) -> dict[str, Any]:
        return await self.task_host.carry_out(t, approve, decided_by)

    def expire_tasks(self) -> list[str]:
        """Tasks past their deadline time out with a reason (checked on every scheduler tick)."""
        return self.task_host.expire_tasks()

    # -- audit and the safety gates
    def audit(self, *, person_id: str | None, agent: str | None, kind: str, action: str, summary: str,
              phase: str | None = None, rule: str | None = None, detail: dict[str, Any] | None = None) -> None:
        """Writes one audit event (never a secret value) and tells the views."""
        summary, detail = redact_value(summary), redact_value(detail or {})
        self.store.add_audit(person_id=person_id, agent=agent, kind=kind, phase=phase, action=action, rule=rule,
                             summary=summary, detail=detail or {})
        self.emit({"type": "audit", "person": person_id, "agent": agent, "kind": kind, "phase": phase,
                   "action": action, "rule": rule, "summary": summary})

    def audit_log(self, person_id: str, limit: int = 500, kind: str | None = None) -> list[dict[str, Any]]:
        return self.store.list_audit(person_id, limit, kind)

    def safety_policy(self, agent_id: str | None, agent_name: str) -> Any:
        """The agent's safety policy: its profile's settings over the defaults."""
        from runtime_host.safety.policy import Policy

        found = self.store.get_instance(agent_id) if agent_id else None
        raw = found[1].safety if found else None
        return Policy.from_dict(agent_name, json.loads(raw) if raw else None)

    def gate(self, phase: str, text: str, *, person_id: str, agent_id: str | None, agent_name: str,
             context: dict[str, Any] | None = None) -> Any:
        """Applies the agent's safety policy for one phase and audits what it decided (redacted, blocked,
        asked, or allowed with findings). Returns the safety Decision. Reversible redaction (opt-in per
        agent) keeps its mapping in the person's vault, never on disk in plain text."""
        from runtime_host.safety.policy import decide

        policy = self.safety_policy(agent_id, agent_name)
        keep_mapping = self._mapping_store(person_id)
        d = decide(phase, text, policy, context=context, mapping_store=keep_mapping if policy.reversible else None)
        if d.findings or d.action.value != "allowed":
            self.audit(person_id=person_id, agent=agent_name, kind="gate", phase=phase, action=d.action.value,
                       rule=d.rule, summary=d.message,
                       detail={k: v for k, v in d.event.items() if k in ("detectors", "kinds", "chars", "context")})
        return d

    def _mapping_store(self, person_id: str) -> Any:
        """Where a reversible redaction's mapping is kept: the person's vault, never a file in plain text."""

        def keep_mapping(mapping_id: str, mapping: dict[str, str]) -> None:
            self.vault_for(person_id).set(f"redactions/{mapping_id}", json.dumps(mapping))
            self.restored.kept(person_id, mapping_id, mapping)

        return keep_mapping

    def forget_mappings(self, person_id: str, ids: set[str]) -> None:
        """Deletes reversible redactions' mappings (the real values) from the person's vault: nothing uses them.
        pod.db says so after (a new token), for the window of another process that keeps some (restored.py)."""
        from runtime_host.restored import FORGOTTEN_KEY

        try:
            vault = self.vault_for(person_id)
            for mapping_id in sorted(ids):
                vault.delete(f"redactions/{mapping_id}")
        finally:  # none is shown from memory again, deleted or not (one left in the vault is read anew)
            self.restored.forget(person_id, ids)
            if ids:
                self.store.set_meta(FORGOTTEN_KEY.format(person=person_id), uuid.uuid4().hex)

    def redact_own(self, person_id: str, text: str) -> str:
        """Text the person wrote into memory themself (a page they correct), its personal data redacted as memory
        redacts everything, but reversibly: they read their own values back; agents and others see placeholders."""
        from runtime_host.safety.policy import Policy, decide

        policy = Policy(agent="memory", reversible=True)
        return decide("memory_write", text, policy, mapping_store=self._mapping_store(person_id)).text

    def restore_redactions(self, person_id: str, text: str) -> str:
        """The owner's own view of reversibly redacted text (never given to an agent or another person)."""
        from runtime_host.safety.policy import restore

        return restore(text, lambda mapping_id: self.restored.mapping(person_id, mapping_id))

    def read_redactions(self, person_id: str, texts: Any) -> None:
        """Reads from the person's vault what ``restore_redactions`` puts back into ``texts`` (a keyring read each
        entry not read before): call it off the window's thread, so showing them there reads nothing."""
        self.restored.read_ahead(person_id, texts)

    @property
    def restored(self) -> Any:
        """The person's own values, each vault entry read once and kept in memory (runtime_host/restored.py)."""
        if (found := self.__dict__.get("_restored")) is not None:
            return found
        from runtime_host.restored import FORGOTTEN_KEY, RestoredValues

        def read(person_id: str, mapping_id: str) -> dict[str, str] | None:
            raw = self.vault_for(person_id).get(f"redactions/{mapping_id}")
            return json.loads(raw) if raw else None

        def forgotten(person_id: str) -> str | None:  # another process's forget of the person's values
            return self.store.meta(FORGOTTEN_KEY.format(person=person_id))

        return self.__dict__.setdefault("_restored", RestoredValues(read, forgotten))  # one, whichever thread asks first

    # -- memory
    @property
    def memory(self) -> Any:
        """The memory wiki (opened on first use: it loads search indexes and a small embedding model)."""
        return self.memory_host.memory

    @property
    def folders(self) -> Any:
        """Watched folders: each person's documents imported into their memory (runtime_host/folders.py)."""
        found = self.__dict__.get("_folders")
        if found is None:
            from runtime_host.folders import WatchedFolders

            found = self.__dict__["_folders"] = WatchedFolders(self)
        return found

    async def in_memory_thread(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Runs memory work on one background thread (never on the UI thread, one writer at a time)."""
        return await self.memory_host.in_memory_thread(fn, *args, **kw)

    # -- memory pipelines (run by the scheduler's memory timers, or by hand; see runtime_host/memory_jobs.py)
    def has_memory_model(self, person_id: str, role: str = "ingest") -> bool:
        """Whether the model chosen for a memory role (ingest, extraction, ...) can do that job."""
        return self.memory_host.has_memory_model(person_id, role)

    def _memory_route(self, person_id: str, role: str) -> dict[str, Any] | None:
        return self.memory_host.memory_route(person_id, role)

    def person_scopes(self, pid: str) -> list[str]:
        """What a person may read: public, their private tree, and each of their agents' notes."""
        return self.memory_host.person_scopes(pid)

    def scope_label(self, scope: str) -> str:
        return self.memory_host.scope_label(scope)

    def agent_label(self, instance_id: str) -> str:
        return self.memory_host.agent_label(instance_id)

    async def memory_search(self, person_id: str, query: str, k: int = 10, mode: str = "hybrid") -> list[Any]:
        return await self.memory_host.memory_search(person_id, query, k, mode)

    async def memory_delete_source(self, person_id: str, source_id: str) -> Deleted:
        """The owner deletes one source: gone from the index; pages that cited it are marked for re-synthesis."""
        return await self.memory_host.memory_delete_source(person_id, source_id)

    async def memory_forget_agent(self, person_id: str, name: str) -> int:
        return await self.memory_host.memory_forget_agent(person_id, name)

    async def forget_origins(self, person_id: str, keys: list[str]) -> int:
        """Deletes what memory kept of some origins of the person's (an inbox's mail) and the real values behind its
        reversible placeholders that nothing left shows."""
        return await self.memory_host.forget_origins(person_id, keys)

    async def memory_forget_me(self, person_id: str) -> int:
        return await self.memory_host.memory_forget_me(person_id)

    async def memory_held(self, person_id: str) -> list[Any]:
        return await self.memory_host.memory_held(person_id)

    async def memory_release(self, person_id: str, qid: int) -> str:
        return await self.memory_host.memory_release(person_id, qid)

    async def memory_discard(self, person_id: str, qid: int) -> None:
        await self.memory_host.memory_discard(person_id, qid)

    async def memory_produce(self, *, folders: bool = True, waits_for: str | None = None,
                             told: Callable[[str, str], None] | None = None) -> list[dict[str, Any]]:
        """Pulls new chat and mail into the memory inbox (keep or skip by the extraction model), then summaries,
        then (``folders``) reads what changed in watched folders. ``waits_for``, ``told``: see memory_jobs.produce."""
        return await self.memory_host.memory_produce(folders=folders, waits_for=waits_for, told=told)

    async def memory_summarize(self) -> dict[str, int]:
        return await self.memory_host.memory_summarize()

    async def ask_memory(self, person_id: str, question: str) -> Any:
        """The slow path: the person's "Ask memory" model answers from what search finds for them, citing it."""
        return await self.memory_host.ask_memory(person_id, question)

    async def memory_ingest(self, person_id: str | None = None,
                            told: Callable[[str, str], None] | None = None) -> dict[str, Any]:
        """Turns the inbox into wiki pages once an ingest model is chosen: everyone's (the timer, ``told`` of each
        person's model failing as it fails), or only the pages ``person_id``'s own model writes (their Ingest now)."""
        return await self.memory_host.memory_ingest(person_id, told)

    async def memory_nightly(self) -> dict[str, Any]:
        return await self.memory_host.memory_nightly()

    # -- stopping and reading turns
    async def stop_turn(self, person_id: str, turn_id: str, by: str = "you") -> dict[str, Any]:
        """Stops one of the person's turns at once, keeping what it streamed; see `runtime_host.turnstop`."""
        t = self.store.get_turn(turn_id)
        if t is not None and self.instance_owner(t.instance_id) != person_id:
            raise self.refuse(person_id, f"No turn {turn_id!r}. `python -m runtime_host turns` lists them.",
                              f"{by} tried to stop turn {turn_id} of another person")
        return await self.stops.stop(turn_id, by)

    def turn_live(self, t: Any) -> bool:
        return self.turn_driver.live(t)

    def instance_owner(self, instance_id: str) -> str | None:
        """The person an agent instance belongs to (None when it is gone)."""
        found = self.store.get_instance(instance_id)
        return found[0].person_id if found else None

    def conversation_owner(self, conversation_id: str) -> str | None:
        conv = self.store.get_conversation(conversation_id)
        return self.instance_owner(conv.instance_id) if conv else None

    def _own_conversation(self, person_id: str, conversation_id: str) -> Any:
        """The person's conversation, or a refusal (audited when it is someone else's)."""
        conv = self.store.get_conversation(conversation_id)
        what = f"No conversation {conversation_id!r} of yours."
        if conv is None:
            raise StoreError(what)
        if self.instance_owner(conv.instance_id) != person_id:
            raise self.refuse(person_id, what, f"tried to open conversation {conversation_id} of another person")
        return conv

    def latest_conversation(self, person_id: str, agent: str) -> Any:
        inst, _ = self.find_agent(person_id, agent)
        return self.store.latest_conversation(inst.id)

    def messages(self, person_id: str, conversation_id: str) -> list[Any]:
        """One of the person's conversations, message by message (refused for anyone else's)."""
        self._own_conversation(person_id, conversation_id)
        return self.store.list_messages(conversation_id)

    def turns(self, person_id: str, conversation_id: str | None = None) -> list[dict[str, Any]]:
        """The person's turns (of one of their conversations, or all), with their steps as a tree."""
        if conversation_id:
            self._own_conversation(person_id, conversation_id)
        mine = {i.id for i, _ in self.store.list_agents(person_id)}
        out = []
        batch = self.store.steps_by_turn(conversation_id) if conversation_id else None
        for t in self.store.list_turns(conversation_id):
            if t.instance_id not in mine:
                continue
            steps = batch.get(t.id, []) if batch is not None else self.store.list_steps(t.id)
            out.append({
                "id": t.id, "conversation_id": t.conversation_id, "status": t.status, "error": t.error,
                "error_kind": t.error_kind, "model": t.model, "iterations": t.iterations, "restarts": t.restarts,
                "created_at": t.created_at, "started_at": t.started_at, "finished_at": t.finished_at,
                "note": note_for(t, live=self.turn_live(t)),
                "steps": step_tree(steps),
            })
        return out

    # -- conversations (see runtime_host.conversations)
    def list_conversations(self, person_id: str, agent: str) -> list[dict[str, Any]]:
        """The agent's conversations, newest first, with origin and (for scheduled runs) their schedule."""
        return conversations.list_for(self.for_person(person_id), agent)

    def last_chat(self, person_id: str, agent: str) -> str | None:
        """The id of the person's last chat with the agent (scheduled and background runs do not count)."""
        return conversations.last_chat(self.for_person(person_id), agent)

    def conversation(self, person_id: str, conversation_id: str) -> dict[str, Any]:
        """One conversation: its messages in order and its turns with their step trees."""
        return conversations.read(self.for_person(person_id), conversation_id)

    def rename_conversation(self, person_id: str, conversation_id: str, title: str) -> dict[str, Any]:
        return conversations.rename(self.for_person(person_id), conversation_id, title)

    async def delete_conversation(self, person_id: str, conversation_id: str) -> None:
        """Deletes a conversation; what memory learned from it stays, why it skipped any of its messages goes."""
        await self.memory_host.delete_conversation(person_id, conversation_id)

    async def delete_conversation_and_forget(self, person_id: str, conversation_id: str) -> int:
        """Deletes a conversation and what memory learned from it; returns how many memory sources went."""
        return await self.memory_host.delete_conversation_and_forget(person_id, conversation_id)

    def export_conversation(self, person_id: str, conversation_id: str, fmt: str = "markdown") -> str:
        return conversations.export(self.for_person(person_id), conversation_id, fmt)

    def search_conversations(self, person_id: str, query: str, limit: int = 50) -> list[dict[str, Any]]:
        """Full-text search over all of the person's conversations."""
        return conversations.search(self.for_person(person_id), query, limit)

    def turn_messages(self, person_id: str, turn_id: str) -> list[dict[str, Any]]:
        """The messages one turn wrote (the person's, then the answer), with their ids."""
        return conversations.turn_messages(self.for_person(person_id), turn_id)

    def live_text(self, turn_id: str) -> str:
        """What a turn still being written in this process has streamed so far (its top-level answer)."""
        return self.turn_driver.live_text(turn_id)

    def branch_conversation(self, person_id: str, conversation_id: str, message_id: str) -> str:
        """A new conversation with the messages up to and including `message_id`; returns its id."""
        return conversations.branch(self.for_person(person_id), conversation_id, message_id)

    async def answer_again(self, person_id: str, conversation_id: str, message_id: str, text: str | None = None) -> Run:
        """Regenerate an answer, or edit one of the person's messages (`text`) and send it again."""
        return await conversations.answer_again(self.for_person(person_id), conversation_id, message_id, text)

    # -- lifecycle
    def start_background(self) -> None:
        """Supervision ticks, the scheduler (schedules and memory timers) every 60 seconds, and a re-embed of
        memory cut short by the last quit, resumed, and a watched folder's removal it cut short finished."""
        self.supervisor.start_ticker()
        self.memory_host.resume_embedding()
        if (Path(self.home) / "folders.db").exists():
            self.folders.finish_removals_soon()
        self.ensure_memory_timers()
        self.schedule_host.start_ticking()
        self.turn_driver.start_takeover()
        self.mail.start()
        self._channels_task = asyncio.create_task(self.channels.start())
        self._channels_task.add_done_callback(self._channels_started)
        removal.finish_later(self)  # a removal a kill cut short; what another process left for a person removed

    def _channels_started(self, task: asyncio.Task[bool]) -> None:
        """A phone channel that could not start is logged and announced, never dropped in silence."""
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        log.error("the phone channels (Telegram) did not start: %s", exc)
        self.emit({"type": "channels.failed", "error": f"The phone channels did not start: {exc}"})

    def renew_leases_once(self) -> list[str]:
        """Renews this host's leases; returns the turns it stopped because it no longer holds them."""
        return self.turn_driver.renew_leases_once()

    async def take_over_orphans(self) -> list[str]:
        """Claims and resumes each unfinished turn whose lease ran out; returns the ids taken over."""
        return await self.turn_driver.take_over_orphans()

    async def recover(self) -> list[str]:
        """Turns left unfinished by a Hearth process that died are resumed from their written steps."""
        return await self.turn_driver.recover()

    async def resume_turn(self, turn_id: str) -> Run | None:
        """Takes over one unfinished turn (e.g. a detached background run) and drives it to the end."""
        return await self.turn_driver.resume(turn_id)

    # -- background runs
    def create_background_run(self, person_id: str, agent: str, prompt: str) -> str:
        """Writes a background run (its own conversation, a pending turn, no owner yet) and returns its id."""
        from runtime_host.sizes import message_problem

        inst, _profile = self.find_agent(person_id, agent)
        problem = message_problem(prompt)
        if problem is not None:
            raise MessageTooLarge(problem)
        conv = self.store.create_conversation(inst.id, title=f"Background: {made_title(prompt)[:50]}")
        turn = self.store.create_turn(conv.id, inst.id, origin="background", text=prompt)
        return turn.id

    def runs(self, person_id: str, origins: tuple[str, ...] = HEARTH_ORIGINS,
             ) -> list[dict[str, Any]]:
        agents = {i.id: i.name for i, _ in self.store.list_agents(person_id)}
        out = []
        for t in self.store.list_turns(origins=list(origins)):
            if t.instance_id not in agents:
                continue
            msgs = self.store.list_messages(t.conversation_id)
            prompt = next((m.content for m in msgs if m.turn_id == t.id and m.role == "user"), "")
            answer = next((m.content for m in msgs if m.turn_id == t.id and m.role == "assistant"), "")
            live = t.status in ("pending", "running") and (t.lease_until or 0) > now()
            out.append({"id": t.id, "agent": agents[t.instance_id], "origin": t.origin, "status": t.status,
                        "live": live, "prompt": prompt, "result": answer, "error": t.error,
                        "conversation_id": t.conversation_id, "created_at": t.created_at,
                        "started_at": t.started_at, "finished_at": t.finished_at, "iterations": t.iterations})
        return out

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.__dict__.get("_folders") is not None:  # an import going stops between files, before memory closes
            await self.__dict__["_folders"].stop()
        self.schedule_host.stop_ticking()
        self.stops.close()
        self.turn_driver.close()  # releases the leases: another host (or the next start) resumes these at once
        if self._channels is not None:
            await self._channels.close()
        if self._mail is not None:
            await self._mail.close()
        await self.supervisor.stop_all()
        self.turn_driver.cancel_waiting()
        await self.memory_host.close_memory()
        if self.__dict__.get("_folders") is not None:
            self.__dict__["_folders"].close()
        self.store.close()
