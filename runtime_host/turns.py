"""Turns: one turn driven from the queue to its end on the agent's worker, and kept alive across hosts.

`Turns` owns the turns this process runs (`active`): their order (one at a time per agent, a rate limit
per conversation, a time limit), what a worker says over its pipe (events into the store and the views,
Pod tool calls), resuming a turn when its worker crashes, and the leases that let several Hearth hosts share
one store (renewal, handing a lost turn over, taking over turns whose host died, recovery at start).

It needs only a narrow part of the Pod (`ports.TurnsPod`) and never imports `runtime_host.pod`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime_host.paths import env_number
from runtime_host.ports import TurnsPod
from runtime_host.states import WorkerState
from runtime_host.store import AgentInstance, AgentProfile, StorageError, StoreError, now, step_dict
from runtime_host.supervisor import WorkerHandle, WorkerStartError
from runtime_host.turnstop import REQUESTED
from vault import VaultUnavailable, redact_value

log = logging.getLogger("hearth.pod")

MAX_RESUMES_PER_TURN = 3
# A turn's owner renews its lease every LEASE_S / 3; another host may take the turn after it expires.
LEASE_S = env_number("HEARTH_LEASE_S", 30.0, "seconds")
TURNS_PER_MINUTE = 20  # per conversation; more wait their turn
# A turn's time limit, resumes included: the worker ends it just before; the Pod stops it at the limit if not.
TURN_TIME_LIMIT_S = env_number("HEARTH_TURN_LIMIT_S", 1800.0, "seconds")
TURN_STOP_GRACE_S = 0.0

# What a Pod tool is: handler(person_id, instance_id, args) -> output (awaitable). The identity is the pipe's.
PodTool = Callable[[str, str, dict[str, Any]], Any]


class MessageTooLarge(StoreError):
    """A message no turn can carry (larger than one turn carries, or with a character that cannot be stored,
    see `sizes.message_problem`): refused before anything is written."""


class TurnFailed(Exception):
    """Raised by `Pod.chat(..., raise_on_failure=True)` with the turn's recorded reason."""


@dataclass
class TurnResult:
    turn_id: str
    conversation_id: str
    status: str
    text: str = ""
    error: str | None = None
    error_kind: str | None = None
    model: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "done"


@dataclass
class Run:
    turn_id: str
    conversation_id: str
    instance_id: str
    agent: str
    future: asyncio.Future[TurnResult]
    handle: WorkerHandle | None = None
    resumes: int = 0
    iterations: int = 0
    started: bool = False
    merged: int = 1
    origin: str = "chat"
    model: str | None = None  # "provider" or "provider/model" chosen for this message only
    person_id: str = ""
    streamed: dict[str, str] = field(default_factory=dict)  # top-level model step id -> text streamed so far


class Turns:
    """The turns this process runs. `pod` is the narrow `TurnsPod` (store, supervisor, stops, events, gates)."""

    def __init__(self, pod: TurnsPod):
        self.pod = pod
        self.active: dict[str, Run] = {}
        # Tools the Pod carries out for a worker, by name. Each part of the Pod registers its own.
        self.tools: dict[str, PodTool] = {}
        self._agent_locks: dict[str, asyncio.Lock] = {}
        self._recent_turns: dict[str, collections.deque[float]] = {}
        self._lease_task: asyncio.Task[None] | None = None
        self._takeover_task: asyncio.Task[None] | None = None
        self.lease_ok_at = time.monotonic()  # when this host last renewed its leases
        self._side_tasks: set[asyncio.Task[Any]] = set()  # Pod tool calls and worker stops beside the pipes

    def working_on(self, person_id: str, instance_id: str) -> dict[str, str]:
        """The turn an agent's worker runs now and its conversation, as fields of a Pod event (a card its tool made
        is shown in that conversation); {} when it runs none."""
        handle = self.pod.supervisor.handles.get((person_id, instance_id))
        run = self.active.get(handle.active_turn or "") if handle is not None else None
        return {"turn_id": run.turn_id, "conversation_id": run.conversation_id} if run is not None else {}

    # -- queueing
    def queue(self, inst: AgentInstance, profile: AgentProfile, conv: Any, text: str, *, origin: str,
              model: str | None) -> Run:
        """Writes the message and its turn in `conv` and drives it in the background. A message that reaches
        a conversation whose next turn has not started yet joins that turn (bursts merge into one turn)."""
        pod = self.pod
        pending = next((r for r in self.active.values()  # the person's words never join a run Hearth started
                        if r.conversation_id == conv.id and not r.started and not r.future.done()
                        and r.origin == origin), None)
        if pending is not None:
            pod.store.add_message(conv.id, "user", text, turn_id=pending.turn_id)
            self._check_ingress(inst, conv.id, pending.turn_id, text, origin)
            pending.merged += 1
            pod.emit({"type": "turn.merged", "turn_id": pending.turn_id, "conversation_id": conv.id,
                      "agent": inst.name, "messages": pending.merged})
            return pending
        turn = pod.store.create_turn(conv.id, inst.id, origin=origin, lease_owner=pod.owner, lease_s=LEASE_S, text=text)
        self._check_ingress(inst, conv.id, turn.id, text, origin)
        fut: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        run = Run(turn.id, conv.id, inst.id, inst.name, fut, origin=origin, model=model, person_id=inst.person_id)
        self.active[turn.id] = run
        self._ensure_lease_renewal()
        pod.emit({"type": "turn.queued", "turn_id": turn.id, "conversation_id": conv.id, "agent": inst.name,
                  "origin": origin})
        asyncio.create_task(self._drive(run, inst, profile))
        return run

    def _check_ingress(self, inst: AgentInstance, conversation_id: str, turn_id: str, text: str, origin: str) -> None:
        """A person's message (typed, or from Telegram) goes through the ingress gate: personal data in it is
        flagged to them and audited (without the value), every message of a turn alike."""
        if origin not in ("chat", "telegram"):
            return
        gated = self.pod.gate("ingress", text, person_id=inst.person_id, agent_id=inst.id, agent_name=inst.name,
                              context={"conversation": conversation_id, "turn": turn_id})
        if gated.findings:
            self.pod.emit({"type": "message.flagged", "person": inst.person_id, "conversation_id": conversation_id,
                           "turn_id": turn_id, "message": gated.message})

    async def _rate_limit(self, run: Run) -> None:
        recent = self._recent_turns.setdefault(run.conversation_id, collections.deque())
        while True:
            now_m = time.monotonic()
            while recent and now_m - recent[0] > 60:
                recent.popleft()
            if len(recent) < TURNS_PER_MINUTE:
                recent.append(now_m)
                return
            wait = 60 - (now_m - recent[0]) + 0.01
            self.pod.emit({"type": "turn.delayed", "turn_id": run.turn_id, "conversation_id": run.conversation_id,
                           "agent": run.agent, "seconds": round(wait, 1),
                           "reason": f"more than {TURNS_PER_MINUTE} turns a minute in this conversation"})
            await asyncio.sleep(wait)

    # -- driving one turn
    async def _drive(self, run: Run, inst: AgentInstance, profile: AgentProfile) -> None:
        lock = self._agent_locks.setdefault(inst.id, asyncio.Lock())
        async with lock:  # one turn at a time per worker; later turns wait their turn
            await self._rate_limit(run)
            if run.future.done():  # stopped while it waited its turn
                return
            run.started = True
            try:
                self.pod.store.update_turn(run.turn_id, status="running", started_at=now())
            except StorageError as exc:
                self.finish(run, {"status": "failed", "error": str(exc), "error_kind": "storage"})
                return
            self.pod.emit({"type": "turn.started", "turn_id": run.turn_id, "conversation_id": run.conversation_id,
                           "agent": run.agent, "origin": run.origin})
            try:
                await self._send_turn(run, inst, profile)
            except (WorkerStartError, TurnFailed, ConnectionError, VaultUnavailable) as exc:
                self.finish(run, {"status": "failed", "error": str(exc), "error_kind": "worker"})
            except Exception as exc:  # never leave a turn hanging: record why it could not start
                log.exception("turn %s could not start", run.turn_id)
                self.finish(run, {"status": "failed", "error_kind": "internal",
                                  "error": f"The turn could not start: {str(exc).rstrip('.')}. Check the agent's settings."})
            with contextlib.suppress(asyncio.CancelledError):
                try:
                    await asyncio.wait_for(asyncio.shield(run.future), self._time_left(run) + TURN_STOP_GRACE_S)
                except TimeoutError:  # the worker did not end it at its limit: never leave it hanging
                    from runtime_host.worker.loop import span

                    await self.pod.stops.stop(run.turn_id,
                                              f"Hearth (the turn passed its limit of {span(TURN_TIME_LIMIT_S)})")
                    await asyncio.shield(run.future)

    def _time_left(self, run: Run) -> float:
        t = self.pod.store.get_turn(run.turn_id)
        started = (t.started_at if t else None) or now()
        return max(0.0, TURN_TIME_LIMIT_S - (now() - started))

    def history(self, conversation_id: str, turn_id: str | None = None) -> list[dict[str, Any]]:
        """The conversation as the worker gets it, bounded in size (runtime_host.sizes): however large the
        conversation grew, a turn always fits on the pipe."""
        from runtime_host.sizes import bound_history

        msgs = [m for m in self.pod.store.list_messages(conversation_id) if m.role in ("user", "assistant")]
        current = 0
        while current < len(msgs) and msgs[-1 - current].turn_id == turn_id and turn_id is not None:
            current += 1
        return bound_history([{"role": m.role, "content": m.content} for m in msgs], current=max(1, current))

    async def _send_turn(self, run: Run, inst: AgentInstance, profile: AgentProfile) -> None:
        pod = self.pod
        old = pod.supervisor.handles.get((inst.person_id, inst.id))
        if old is not None:
            await pod.stops.wait_drained(old)  # a stopped turn's worker ends it (or is stopped) first
        handle = await pod.ensure_worker(inst, profile)
        if run.future.done():  # stopped while its worker started
            return
        run.handle = handle
        pod.supervisor.begin_turn(handle, run.turn_id)
        from runtime_host.sizes import bound_steps

        steps = bound_steps([step_dict(s) for s in pod.store.list_steps(run.turn_id)])
        extra: dict[str, Any] = {}
        if run.model:
            # One message on another model: that route first, then the agent's own chain. Its key
            # travels with this turn over the pipe, like every credential.
            extra["routes"] = pod.message_routes(inst, profile, run.model)
        handle.send({"type": "turn.start", "turn_id": run.turn_id,
                     "messages": self.history(run.conversation_id, run.turn_id), **extra,
                     "steps": steps, "time_limit_s": TURN_TIME_LIMIT_S, "time_left_s": self._time_left(run)})

    def finish(self, run: Run, outcome: dict[str, Any]) -> None:
        """Ends a turn with `outcome` (status, text, error...): written, announced, and its caller told."""
        if run.future.done():
            return
        pod = self.pod
        status = outcome.get("status", "failed")
        text = outcome.get("text") or ""
        message_id = None
        try:
            if status == "done" or (status == "stopped" and text):
                message_id = pod.store.add_message(run.conversation_id, "assistant", text, turn_id=run.turn_id).id
            pod.store.update_turn(run.turn_id, status=status, error=outcome.get("error"),
                                  error_kind=outcome.get("error_kind"), model=outcome.get("model"),
                                  iterations=int(outcome.get("iterations") or run.iterations), finished_at=now(),
                                  restarts=run.resumes)
        except StorageError as exc:
            # The turn still ends, with the reason; what was written before stays (its answer streamed to the
            # person, who can send the message again once the disk has room).
            log.error("turn %s could not be saved: %s", run.turn_id, exc)
            with contextlib.suppress(StorageError):  # a smaller write may still fit: record why it ended
                pod.store.update_turn(run.turn_id, status="failed", error=str(exc), error_kind="storage",
                                      finished_at=now())
            if outcome.get("error_kind") != "storage":
                outcome = {**outcome, "status": "failed", "error": str(exc), "error_kind": "storage"}
                status = "failed"
                if run.handle is not None:
                    self._stop_worker_later(run.handle)
        if run.handle is not None:
            pod.supervisor.end_turn(run.handle, run.turn_id)
        self.active.pop(run.turn_id, None)
        result = TurnResult(run.turn_id, run.conversation_id, status, text, outcome.get("error"),
                            outcome.get("error_kind"), outcome.get("model"))
        pod.emit({"type": "turn.finished", "turn_id": run.turn_id, "conversation_id": run.conversation_id,
                  "agent": run.agent, "origin": run.origin, "person": run.person_id, "message_id": message_id,
                  **{k: v for k, v in outcome.items() if k != "type"}})
        run.future.set_result(result)

    def _beside(self, coro: Any) -> asyncio.Task[Any]:
        """Runs `coro` beside the pipes' readers, kept until it ends (and awaited by nobody)."""
        task = asyncio.create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)
        return task

    def _stop_worker_later(self, handle: WorkerHandle) -> None:
        """Stops a worker outside its pipe's reader (which must go on reading until the worker exits)."""
        self._beside(handle.stop())

    # -- what a worker says over its pipe (the supervisor calls these)
    async def on_worker_message(self, handle: WorkerHandle, msg: dict[str, Any]) -> None:
        msg = redact_value(msg)  # what a worker says reaches the store, the views and the CLI: never with a key
        kind = msg["type"]
        if kind == "event":
            turn_id = msg.get("turn_id")
            run = self.active.get(turn_id) if turn_id else None
            # The pipe is the identity: a worker may only speak for the turn it was given.
            if (run is None or handle.active_turn != turn_id) and self.pod.stops.worker_spoke(handle, turn_id, msg["event"]):
                if "seq" in msg:  # the tail of a turn the person stopped: acknowledged, not recorded
                    with contextlib.suppress(ConnectionError):
                        handle.send({"type": "ack", "seq": msg["seq"], "result": {"error": "the turn was stopped"}})
                return
            if run is None or handle.active_turn != turn_id:
                log.warning("worker %s sent an event for a turn it does not own: %s", handle.label, turn_id)
                if "seq" in msg:
                    handle.send({"type": "ack", "seq": msg["seq"], "result": {"error": "not your turn"}})
                return
            try:
                await self._on_turn_event(handle, run, msg["event"])
            except StorageError as exc:
                # Never let a write error escape the pipe's reader (it would stop reading and the turn would
                # hang): end the turn with the reason, and stop its worker (it waits for an ack it won't get).
                log.error("turn %s: %s", run.turn_id, exc)
                self.finish(run, {"status": "failed", "error": str(exc), "error_kind": "storage"})
                self._stop_worker_later(handle)
                return
            if "seq" in msg:
                with contextlib.suppress(ConnectionError):
                    handle.send({"type": "ack", "seq": msg["seq"]})
        elif kind == "pod.call":
            # Run beside the pipe's reader: a Pod tool may wait (wait_for_task) while pings go on.
            self._beside(self._on_pod_call(handle, msg))
        elif kind == "error":
            log.warning("worker %s reported: %s", handle.label, msg.get("error"))

    async def _on_pod_call(self, handle: WorkerHandle, msg: dict[str, Any]) -> None:
        """A worker asks the Pod to act. The identity is the pipe's (person, agent), never an argument."""
        person_id, instance_id = handle.key
        method = str(msg.get("method"))
        args = msg.get("args") if isinstance(msg.get("args"), dict) else {}
        if msg.get("turn_id") != handle.active_turn:
            result = {"ok": False, "error": "this worker has no such turn"}
        elif method not in self.tools:
            result = {"ok": False, "error": f"the Pod has no tool {method!r}"}
        elif (refused := self._refused_now(person_id, instance_id, method, handle.active_turn)) is not None:
            result = {"ok": False, "error": refused}
        else:
            try:
                output = await self.tools[method](person_id, instance_id, args)
                if isinstance(output, str):  # a result must fit on the pipe (runtime_host.sizes)
                    from runtime_host.sizes import MAX_TOOL_RESULT_BYTES, clip

                    output = clip(output, MAX_TOOL_RESULT_BYTES, "tool result", "ask the tool for a smaller part")
                result = {"ok": True, "output": output}
            except (PermissionError, ValueError, StoreError) as exc:
                result = {"ok": False, "error": str(exc)}
            except Exception as exc:  # a Pod tool bug goes back to the model as a tool error
                log.exception("pod tool %s failed", method)
                result = {"ok": False, "error": f"{method} failed inside Hearth: {type(exc).__name__}: {exc}"}
        with contextlib.suppress(ConnectionError):
            handle.send({"type": "pod.result", "seq": msg.get("seq"), "result": result})

    def _refused_now(self, person_id: str, instance_id: str, method: str, turn_id: str | None) -> str | None:
        """Why a Pod tool may not run for this agent now, or None. Its worker was bound with the allowlist as it
        stood when the turn began; a toolkit a person took away since (Edit agent, mid-run) stops at once, so the
        agent's allowlist is read again for every call. The MCP host checks its own tools (`mcp.call`); a Pod tool
        of no toolkit is refused (fail closed)."""
        from runtime_host.tools import TOOLKITS

        if method == "mcp":
            return None
        found = self.pod.store.get_instance(instance_id)
        if found is None:
            return f"{method} was not carried out: this agent no longer exists."
        toolkit = next((tk for tk, tools in TOOLKITS.items() if method in tools), "")
        if not toolkit:
            return f"{method} was not carried out: it is in no toolkit a person can allow an agent."
        decision = self.pod.allowlist(*found).check(toolkit, method)
        if decision:
            return None
        self.pod.audit(person_id=person_id, agent=found[0].name, kind="guard", phase="tool", action="denied",
                       rule=decision.rule, summary=f"{method}: {decision.reason}", detail={"tool": method, "turn": turn_id})
        return f"{method} was not carried out: {decision.reason}"

    async def _on_turn_event(self, handle: WorkerHandle, run: Run, ev: dict[str, Any]) -> None:
        pod = self.pod
        kind = ev.get("type")
        base = {"turn_id": run.turn_id, "conversation_id": run.conversation_id, "agent": run.agent}
        if kind == "step.started":
            pod.store.start_step(run.turn_id, ev["step_id"], kind=ev["kind"], name=ev["name"],
                                 parent_id=ev.get("parent_id"), arguments=ev.get("arguments"), call_id=ev.get("call_id"))
            pod.emit({**ev, **base, "started_at": now()})
        elif kind == "step.finished":
            pod.store.finish_step(ev["step_id"], ev["status"], ev.get("result"))
            pod.emit({**ev, **base, "finished_at": now()})
        elif kind == "iteration":
            run.iterations = int(ev.get("n") or 0)
            pod.emit({**ev, **base})
        elif kind == "guard.decision":
            reason = str(ev.get("reason") or ev.get("rule") or "").replace(str(handle.key[1]), run.agent)  # a name, not an id
            pod.audit(person_id=run.person_id, agent=run.agent, kind="guard", phase="tool",
                      action="allowed" if ev.get("allowed") else "denied", rule=ev.get("rule"),
                      summary=f"{ev.get('tool')}: {reason}",
                      detail={"tool": ev.get("tool"), "turn": run.turn_id})
        elif kind == "turn.finished":
            self.finish(run, ev)
        else:
            if kind == "delta" and not ev.get("parent_id") and ev.get("step_id"):
                run.streamed[ev["step_id"]] = run.streamed.get(ev["step_id"], "") + str(ev.get("text") or "")
            pod.emit({**ev, **base})

    async def on_worker_exit(self, handle: WorkerHandle, code: int) -> None:
        pod = self.pod
        turn_id = handle.active_turn
        run = self.active.get(turn_id) if turn_id else None
        pod.supervisor.end_turn(handle, turn_id)
        if run is None or run.future.done():
            return
        run.resumes += 1
        pod.store.update_turn(run.turn_id, restarts=run.resumes)
        why = handle.reason or f"exit code {code}"
        pod.emit({"type": "turn.resuming", "turn_id": run.turn_id, "conversation_id": run.conversation_id,
                  "agent": run.agent, "attempt": run.resumes, "reason": why})
        if run.resumes > MAX_RESUMES_PER_TURN or handle.state == WorkerState.FATAL:
            self.finish(run, {"status": "failed", "error_kind": "worker_crash", "error":
                              f"The agent's worker stopped unexpectedly {run.resumes} times during this turn "
                              f"(last: {why}). What it did so far is kept; send the message again to retry."})
            return
        found = pod.store.get_instance(run.instance_id)
        if found is None:
            self.finish(run, {"status": "failed", "error": "The agent was deleted during the turn."})
            return
        asyncio.create_task(self._resume(run, *found))

    async def _resume(self, run: Run, inst: AgentInstance, profile: AgentProfile) -> None:
        try:
            await self._send_turn(run, inst, profile)
        except Exception as exc:
            log.warning("turn %s could not resume after its worker crashed: %s", run.turn_id, exc)
            self.finish(run, {"status": "failed", "error_kind": "worker_crash",
                              "error": f"The agent's worker crashed and could not be restarted: {exc}"})

    # -- reading live turns
    def live(self, t: Any) -> bool:
        """A turn row is live: this process runs it, or another host holds its lease."""
        return t.id in self.active or (bool(t.lease_owner) and (t.lease_until or 0) > now())

    def live_text(self, turn_id: str) -> str:
        """What a turn still being written in this process has streamed so far (its top-level answer)."""
        run = self.active.get(turn_id)
        return "".join(run.streamed.values()) if run is not None else ""

    # -- leases: several Hearth hosts on one store
    def _ensure_lease_renewal(self) -> None:
        self.pod.stops.ensure_watch()
        if self._lease_task is None or self._lease_task.done():
            self._lease_task = asyncio.create_task(self._renew_leases())

    async def _renew_leases(self) -> None:
        self.lease_ok_at = time.monotonic()
        while self.active:
            await asyncio.sleep(LEASE_S / 3)
            self.renew_leases_once()

    def renew_leases_once(self) -> list[str]:
        """Renews this host's leases. A turn another host took over, or one whose lease could not be renewed
        before it runs out, is stopped here (logged, and its caller told) so two hosts never run its tools.
        Returns the turns stopped."""
        ids = [tid for tid, r in self.active.items() if not r.future.done()]
        if not ids:
            return []
        try:
            held = self.pod.store.renew_leases(self.pod.owner, ids, LEASE_S)
        except Exception as exc:
            if time.monotonic() + LEASE_S / 3 < self.lease_ok_at + LEASE_S:  # still ours until the next try
                log.warning("could not renew the leases of %d turn(s); trying again: %s", len(ids), exc)
                return []
            log.error("could not renew the leases of %d turn(s) before they run out: %s", len(ids), exc)
            lost = {tid: f"its lease could not be renewed ({type(exc).__name__}: {exc})" for tid in ids}
        else:
            self.lease_ok_at = time.monotonic()
            lost = {tid: "another Hearth host took it over after this host's lease ran out"
                    for tid in ids if tid not in held}
        for tid, why in lost.items():
            run = self.active.get(tid)
            if run is not None:
                self._abandon(run, why)
        return list(lost)

    def _abandon(self, run: Run, why: str) -> None:
        """This host stops running a turn it no longer holds, writing nothing of it: its worker is stopped (so
        no tool of it runs here again) and whoever waits for it is told why. The lease holder finishes it."""
        if run.future.done():
            return
        log.warning("turn %s (agent %s) stopped on this host: %s", run.turn_id, run.agent, why)
        self.active.pop(run.turn_id, None)
        handle = run.handle
        if handle is not None:
            self.pod.supervisor.end_turn(handle, run.turn_id)
            task = self._beside(handle.stop())
            task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or log.error(
                "the worker of abandoned turn %s did not stop: %s", run.turn_id, t.exception()))
        error = f"This Hearth host stopped running the turn: {why}. The host that holds it now finishes it."
        self.pod.emit({"type": "turn.abandoned", "turn_id": run.turn_id, "conversation_id": run.conversation_id,
                       "agent": run.agent, "origin": run.origin, "person": run.person_id, "reason": why})
        run.future.set_result(TurnResult(run.turn_id, run.conversation_id, "abandoned", "", error, "lease_lost"))

    def start_takeover(self) -> None:
        """While this host runs, it takes over turns whose owner stopped renewing their lease (that host died)."""
        if self._takeover_task is None:
            self._takeover_task = asyncio.create_task(self._takeover_loop())

    async def _takeover_loop(self) -> None:
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                await self.take_over_orphans()
            except Exception:  # the store is busy or gone: logged, and tried again next time
                log.exception("looking for turns left by a dead Hearth host failed")

    async def take_over_orphans(self) -> list[str]:
        """Claims and resumes each unfinished turn whose lease ran out; returns the ids taken over."""
        taken = []
        for t in self.pod.store.expired_leases():
            if t.id in self.active or t.lease_owner == self.pod.owner:
                continue
            run = await self.resume(t.id)
            if run is not None:
                log.info("took over turn %s from %s, whose lease ran out", t.id, t.lease_owner)
                self.pod.emit({"type": "turn.taken_over", "turn_id": t.id, "conversation_id": t.conversation_id,
                               "from": t.lease_owner, "person": run.person_id})
                taken.append(t.id)
        return taken

    async def recover(self) -> list[str]:
        """Turns left unfinished by a Hearth process that died are resumed from their written steps.
        A turn whose owner still renews its lease (another live process) is left alone."""
        store = self.pod.store
        resumed = []
        for t in store.list_turns(status="running") + store.list_turns(status="pending"):
            if t.id in self.active or not store.claim_turn(t.id, self.pod.owner, LEASE_S):
                continue
            if store.get_instance(t.instance_id) is None:
                continue
            run = await self.resume(t.id)
            if run is not None:
                resumed.append(t.id)
        return resumed

    async def resume(self, turn_id: str) -> Run | None:
        """Takes over one unfinished turn (e.g. a detached background run) and drives it to the end."""
        pod = self.pod
        t = pod.store.get_turn(turn_id)
        if t is None or t.status not in ("pending", "running"):
            return None
        if t.error_kind == REQUESTED and turn_id not in self.active:  # asked to stop while no one ran it
            await pod.stops.stop(turn_id, (t.error or "").removeprefix("stop requested by ") or "you")
            return None
        if turn_id in self.active:
            return self.active[turn_id]
        if not pod.store.claim_turn(turn_id, pod.owner, LEASE_S):
            return None
        found = pod.store.get_instance(t.instance_id)
        if found is None:
            from runtime_host import schedule

            gone = "The agent of this turn no longer exists."
            pod.store.update_turn(turn_id, status="failed", error=gone, finished_at=now())
            schedule.record_turn_finished(pod.store.engine, turn_id, ok=False, error=gone)  # no turn.finished event
            return None
        inst, profile = found
        fut: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        run = Run(t.id, t.conversation_id, inst.id, inst.name, fut, resumes=t.restarts, origin=t.origin,
                  person_id=inst.person_id)
        self.active[t.id] = run
        self._ensure_lease_renewal()
        asyncio.create_task(self._drive(run, inst, profile))
        return run

    # -- closing
    def close(self) -> None:
        """Stops renewing and taking over, and releases this host's leases: another host (or the next start)
        resumes these turns at once, not after the lease runs out."""
        if self._lease_task:
            self._lease_task.cancel()
        if self._takeover_task:
            self._takeover_task.cancel()
        try:
            self.pod.store.renew_leases(self.pod.owner, list(self.active), -1.0)
        except Exception as exc:
            log.warning("could not release the leases of %d turn(s); they resume once the leases run out: %s",
                        len(self.active), exc)

    def cancel_waiting(self) -> None:
        """After the workers stopped: whoever still waits for a turn of this process is cancelled."""
        for run in list(self.active.values()):
            if not run.future.done():
                run.future.cancel()
