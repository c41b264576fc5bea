"""The Pod as one person uses it: every operation on a person's data, bound to that person for good.

The Pod keeps no "current person": each of its operations that touches a person's data takes the person
explicitly. A `PersonPod` fixes that argument once (`pod.unlock(name, passphrase)` or `pod.for_person(p)`);
the window keeps the one it shows and makes a new one when someone else unlocks, the CLI makes one per
command, `serve` one per authenticated request. What is not about a person (the store, events, the
supervisor, schedules' ticks, lifecycle) is the Pod's own and is reached through `.pod` (or, for brevity,
as an attribute of this handle).
"""

from __future__ import annotations

import functools
import inspect
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

from runtime_host.store import HEARTH_ORIGINS, UNNAMED_AS
from vault import Vault

if TYPE_CHECKING:
    from runtime_host.store import AgentInstance, AgentProfile, Person
    from wiki_engine.memory import Deleted


LINE_WORDS = 100  # characters of a source's words in a list of hits (the window's tooltip shows them all)


def source_line(words: str, said: str, ts: float) -> tuple[str, str]:
    """A source found, as a list of hits names it, in the window and on the CLI: (the words around the match, on one
    line, cut to LINE_WORDS; what it is and who said it, and the day it was said on this machine's calendar):
    "…the zorblat bag is at the gym today." and "chat, said by Alice, 07 Dec 2026". The hits of one conversation,
    or a newsletter's mails, share its title: by their titles a list read "Daily planning" twenty times. ``words``
    and ``said`` are as the person reads them (their redacted values restored); where they are shown escapes them."""
    words = " ".join(words.split())
    words = words if len(words) <= LINE_WORDS else words[:LINE_WORDS - 1].rstrip() + "…"
    when = datetime.fromtimestamp(ts).astimezone().strftime("%d %b %Y") if ts > 0 else ""
    return words, ", ".join(w for w in (" ".join(said.split()), when) if w)


class PersonFolders:
    """The watched folders of one person (`runtime_host.folders.Folders` with the person filled in)."""

    def __init__(self, folders: Any, person_id: str, name: str):
        self._folders = folders
        self._person_id = person_id
        self._name = name

    def __getattr__(self, name: str) -> Any:  # pod-wide state such as `running`
        return getattr(self._folders, name)

    def list_folders(self) -> list[Any]:
        return self._folders.list_folders(self._person_id)  # type: ignore[no-any-return]

    def find(self, ref: str) -> Any:
        return self._folders.find(ref, self._person_id)

    def add(self, path: Any) -> Any:
        self._folders.pod.store.still_here(self._person_id, self._name)
        return self._folders.add(path, self._person_id)

    async def remove(self, ref: str) -> dict[str, Any]:
        return await self._folders.remove(ref, self._person_id)  # type: ignore[no-any-return]

    def files(self, ref: str, status: str | None = None, limit: int = 100000) -> list[Any]:
        return self._folders.files(ref, self._person_id, status, limit)  # type: ignore[no-any-return]

    async def scan(self, ref: str, *, on_progress: Any = None) -> Any:
        self._folders.pod.store.still_here(self._person_id, self._name)
        return await self._folders.scan(ref, person_id=self._person_id, on_progress=on_progress)


class PersonPod:
    """One person's view of a Pod. The person never changes: to act for someone else, get their own."""

    def __init__(self, pod: Any, person: Person):
        object.__setattr__(self, "pod", pod)
        object.__setattr__(self, "_person", person)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("pod", "_person", "person", "person_id"):
            raise AttributeError(f"this PersonPod is bound to {self._person.name} for good; get another with pod.unlock()")
        if hasattr(type(self), name):
            object.__setattr__(self, name, value)  # one of this handle's own operations (a test may wrap it)
        else:
            setattr(self.pod, name, value)  # a Pod-wide attribute (tests replace `partner_client`)

    def __getattr__(self, name: str) -> Any:
        # Pod-wide things (store, subscribe, emit, close, memory, mail, channels, supervisor, tick, ...).
        return getattr(self.pod, name)

    def __repr__(self) -> str:
        return f"<PersonPod {self._person.name}>"

    # -- who
    @property
    def person(self) -> Person:
        return self._person

    @property
    def person_id(self) -> str:
        return self._person.id

    def vault(self) -> Vault:
        return self.pod.vault_for(self.person_id)

    @property
    def folders(self) -> PersonFolders:
        return PersonFolders(self.pod.folders, self.person_id, self._person.name)

    def people(self) -> list[dict[str, Any]]:
        return [{**p, "current": p["id"] == self.person_id} for p in self.pod.people()]

    def set_passphrase(self, passphrase: str, old: str | None = None) -> None:
        self.pod.set_passphrase(self.person_id, passphrase, old)

    def rename(self, name: str) -> str:
        """Gives this person a new name (the rules of adding one: `Store.person_name`) and answers it. Only the
        person does it, in their own window or `person rename`: no agent holds a tool that reaches it. Lists,
        Settings and the memory models' prompts read names afresh, so the new one shows from the next read."""
        before = self._person.name
        row = self.pod.store.rename_person(self.person_id, name)
        self._person.name = row.name  # this handle (the window's, the CLI command's) says it at once
        self.pod.audit(person_id=self.person_id, agent=None, kind="access", action="renamed",
                       summary=f"{before} is now called {row.name}")
        return row.name

    async def what_removal_takes(self, name: str) -> dict[str, Any]:
        """What removing ``name`` (themselves, or anyone for the person who set Hearth up) takes: their conversations,
        agents, inboxes and memory notes, counted for its confirmation (runtime_host/removal.py)."""
        from runtime_host import removal

        return await removal.counts(self.pod, self.person_id, name)

    async def remove_person(self, name: str, confirm: str) -> dict[str, Any]:
        """Removes ``name`` with everything theirs: themselves (``confirm`` is their passphrase, their name when they
        have none), or, for the person who set Hearth up, another (``confirm`` is that person's name). Only the
        person does it, in their window or the CLI: no agent holds a tool that reaches it."""
        return await self.pod.remove_person(self.person_id, name, confirm)  # type: ignore[no-any-return]

    # -- providers, models, agents
    def add_provider(self, name: str, **kw: Any) -> dict[str, Any]:
        return self.pod.add_provider(self.person_id, name, **kw)

    def list_providers(self, *, builtin: bool = True) -> list[dict[str, Any]]:
        return self.pod.list_providers(self.person_id, builtin=builtin)

    def provider(self, name: str) -> dict[str, Any] | None:
        """The person's provider by name (or the built-in offline model), None when they have none."""
        return self.pod._provider(self.person_id, name)

    def check_provider(self, name: str, **kw: Any) -> Any:
        return self.pod.check_provider(self.person_id, name, **kw)

    def remove_provider(self, name: str) -> None:
        self.pod.remove_provider(self.person_id, name)

    def models(self) -> dict[str, Any]:
        return self.pod.models(self.person_id)

    def set_role_model(self, role: str, ref: str) -> None:
        self.pod.set_role_model(self.person_id, role, ref)

    def role_route(self, role: str) -> dict[str, Any] | None:
        return self.pod.role_route(self.person_id, role)

    def embedding_choices(self) -> list[dict[str, Any]]:
        return self.pod.embedding_choices(self.person_id)

    def take_notices(self) -> list[tuple[str, str]]:
        """The notifications (title, text) kept for this person while someone else was shown, oldest first, even
        across a quit; given once: they are forgotten here."""
        return self.pod.store.take_notices(self.person_id)

    def embedding_status(self) -> dict[str, Any] | None:
        """How far re-embedding is. The model is the first person's choice: a provider of theirs is used for
        their own notes alone, so anyone else is shown nothing of it (not its name, nor its errors, nor what it
        set aside), only how far the notes they read are re-embedded on the local model that embeds them now.
        The items counted are those of the scopes the person may read."""
        from runtime_host.memory_jobs import owner
        from wiki_engine.embed import KINDS, kind_of
        from wiki_engine.memory import LOCAL_EMBEDDER, NO_FAILURE

        st = self.pod.embedding_status(self.person_id)
        if st is None or self.person_id == owner(self.pod) or kind_of(str(st.get("model") or "")) is not None:
            return st
        if not st["total"]:  # none of theirs was re-embedded for this choice
            return None
        return {**st, **NO_FAILURE, "model": KINDS[LOCAL_EMBEDDER],
                "running": bool(st["running"]) and st["done"] < st["total"], "set_aside": 0, "note": ""}

    def _memory_route(self, role: str) -> dict[str, Any] | None:
        return self.pod._memory_route(self.person_id, role)

    def add_agent(self, name: str, **kw: Any) -> dict[str, Any]:
        return self.pod.add_agent(self.person_id, name, **kw)

    def edit_agent(self, name: str, **changes: Any) -> dict[str, Any]:
        return self.pod.edit_agent(self.person_id, name, **changes)

    def list_agents(self) -> list[dict[str, Any]]:
        return self.pod.list_agents(self.person_id)

    def find_agent(self, name: str) -> tuple[AgentInstance, AgentProfile]:
        return self.pod.find_agent(self.person_id, name)

    async def start_agent(self, name: str) -> dict[str, Any]:
        return await self.pod.start_agent(self.person_id, name)

    async def stop_agent(self, name: str) -> None:
        await self.pod.stop_agent(self.person_id, name)

    async def restart_agent(self, name: str) -> dict[str, Any]:
        return await self.pod.restart_agent(self.person_id, name)

    async def delete_agent(self, name: str) -> None:
        await self.pod.delete_agent(self.person_id, name)

    def allow_mcp(self, agent: str, server: str, tools: list[str] | None = None) -> list[str]:
        return self.pod.allow_mcp(self.person_id, agent, server, tools)

    # -- conversations and turns
    async def start_turn(self, agent: str, text: str, **kw: Any) -> Any:
        return await self.pod.start_turn(self.person_id, agent, text, **kw)

    async def chat(self, agent: str, text: str, **kw: Any) -> Any:
        return await self.pod.chat(self.person_id, agent, text, **kw)

    def list_conversations(self, agent: str) -> list[dict[str, Any]]:
        return self.pod.list_conversations(self.person_id, agent)

    def last_chat(self, agent: str) -> str | None:
        return self.pod.last_chat(self.person_id, agent)

    def conversation(self, conversation_id: str) -> dict[str, Any]:
        return self.pod.conversation(self.person_id, conversation_id)

    def rename_conversation(self, conversation_id: str, title: str) -> dict[str, Any]:
        return self.pod.rename_conversation(self.person_id, conversation_id, title)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self.pod.delete_conversation(self.person_id, conversation_id)

    async def delete_conversation_and_forget(self, conversation_id: str) -> int:
        return await self.pod.delete_conversation_and_forget(self.person_id, conversation_id)

    def export_conversation(self, conversation_id: str, fmt: str = "markdown") -> str:
        return self.pod.export_conversation(self.person_id, conversation_id, fmt)

    def search_conversations(self, query: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.pod.search_conversations(self.person_id, query, limit)

    def turn_messages(self, turn_id: str) -> list[dict[str, Any]]:
        return self.pod.turn_messages(self.person_id, turn_id)

    def branch_conversation(self, conversation_id: str, message_id: str) -> str:
        return self.pod.branch_conversation(self.person_id, conversation_id, message_id)

    async def answer_again(self, conversation_id: str, message_id: str, text: str | None = None) -> Any:
        return await self.pod.answer_again(self.person_id, conversation_id, message_id, text)

    def latest_conversation(self, agent: str) -> Any:
        return self.pod.latest_conversation(self.person_id, agent)

    def messages(self, conversation_id: str) -> list[Any]:
        return self.pod.messages(self.person_id, conversation_id)

    def turns(self, conversation_id: str | None = None) -> list[dict[str, Any]]:
        return self.pod.turns(self.person_id, conversation_id)

    async def stop_turn(self, turn_id: str, by: str = "you") -> dict[str, Any]:
        return await self.pod.stop_turn(self.person_id, turn_id, by)

    async def stop_turns(self, agent: str, by: str = "you") -> list[dict[str, Any]]:
        """Stops every unfinished turn of one of the person's agents."""
        return await self.pod.stops.stop_agent(self.person_id, agent, by)

    def create_background_run(self, agent: str, prompt: str) -> str:
        return self.pod.create_background_run(self.person_id, agent, prompt)

    def runs(self, origins: tuple[str, ...] = HEARTH_ORIGINS) -> list[dict[str, Any]]:
        return self.pod.runs(self.person_id, origins)

    # -- schedules, tasks, partners, audit
    def add_schedule(self, agent: str, cron: str, prompt: str, **kw: Any) -> dict[str, Any]:
        return self.pod.add_schedule(self.person_id, agent, cron, prompt, **kw)

    def schedules(self) -> list[dict[str, Any]]:
        return self.pod.schedules(self.person_id)

    def pause_schedule(self, schedule_id: str, paused: bool) -> dict[str, Any]:
        return self.pod.pause_schedule(self.person_id, schedule_id, paused)

    def delete_schedule(self, schedule_id: str) -> None:
        self.pod.delete_schedule(self.person_id, schedule_id)

    def schedule_ledger(self, limit: int = 200) -> list[dict[str, Any]]:
        return self.pod.schedule_ledger(self.person_id, limit)

    def list_tasks(self, state: str | None = None) -> list[dict[str, Any]]:
        return self.pod.list_tasks(self.person_id, state)

    def task_timeline(self, task_id: str) -> list[dict[str, Any]]:
        return self.pod.task_timeline(self.person_id, task_id)

    def has_memory_model(self, role: str = "ingest") -> bool:
        return self.pod.has_memory_model(self.person_id, role)

    async def decide_task(self, task_id: str, approve: bool, decided_by: str = "app") -> dict[str, Any]:
        return await self.pod.decide_task(self.person_id, task_id, approve, decided_by)

    def add_partner(self, name: str, endpoint: str, key: str, **kw: Any) -> dict[str, Any]:
        return self.pod.add_partner(self.person_id, name, endpoint, key, **kw)

    def list_partners(self) -> list[dict[str, Any]]:
        return self.pod.list_partners(self.person_id)

    def partner_cards(self) -> list[dict[str, Any]]:
        return self.pod.partner_cards(self.person_id)

    def decide_partner_send(self, send_id: str, approve: bool, decided_by: str = "app") -> None:
        self.pod.decide_partner_send(send_id, approve, decided_by, person_id=self.person_id)

    def audit_log(self, limit: int = 500, kind: str | None = None) -> list[dict[str, Any]]:
        return self.pod.audit_log(self.person_id, limit, kind)

    def restore_redactions(self, text: str) -> str:
        return self.pod.restore_redactions(self.person_id, text)

    def read_redactions(self, *texts: str) -> None:
        """Off the window's thread: reads what ``restore_redactions`` will put back into ``texts``."""
        self.pod.read_redactions(self.person_id, texts)

    def redact_own(self, text: str) -> str:
        return self.pod.redact_own(self.person_id, text)

    # -- memory
    def person_scopes(self) -> list[str]:
        return self.pod.person_scopes(self.person_id)

    async def memory_search(self, query: str, k: int = 10, mode: str = "hybrid") -> list[Any]:
        return await self.pod.memory_search(self.person_id, query, k, mode)

    async def memory_said(self, hits: list[Any]) -> dict[str, str]:
        """Source id -> what each source among ``hits`` is and who said it, as Ask memory's model is told it
        (``said_to``: "chat, said by Alice", "chat, said by the agent Helper", "remembered by Alice's agent Helper"
        for a household fact another person's agent remembered, "mail from Ana <ana@example.org>, subject “The
        flat”", the address as the person's Mail shows it, "document “boiler.txt” from Alice's watched folder, its
        writer unknown"): the hits of one conversation, or a newsletter's mails, share one title, and the
        Wiki page's results and Ask memory's Sources tell them apart by their words, who said them and when. A
        source of another person's, or one deleted since the search, is not said."""
        from runtime_host.memory_jobs import person_names, said_to
        from wiki_engine import SourceUnreadable
        from wiki_engine.render import parse_source

        mine, names, pod = set(self.person_scopes()), person_names(self.pod), self.pod

        def said() -> dict[str, str]:
            out = {}
            for h in hits:
                if h.kind != "source" or h.scope not in mine:
                    continue
                try:
                    source = pod.memory.get_source(h.id)
                except (LookupError, SourceUnreadable):  # deleted since, or its file damaged: its words say enough
                    continue
                if source.scope not in mine:
                    continue
                head, _ = parse_source(source.markdown)
                key = head.get("key", "")
                sender = pod.mail.sender(self.person_id, key) if source.kind == "mail" else ""
                out[h.id] = said_to(self.person_id, str(source.scope), source.kind, sender or head.get("author", ""),
                                    head.get("subject", ""), head.get("owner", ""), head.get("agent", ""), names, key)
            return out

        return await pod.in_memory_thread(said)

    async def memory_proposals(self) -> list[Any]:
        """Open agent edits of this person's verified pages; other people's proposals are theirs alone."""
        mine = set(self.person_scopes())
        return [p for p in await self.pod.in_memory_thread(self.pod.memory.proposals) if p.scope in mine]

    async def memory_approve_proposal(self, proposal_id: int) -> Any:
        """The person accepts an agent's change to one of their verified pages (a household page is everyone's): the
        page as approved. KeyError for one that is not open, or not theirs (refused in the same words)."""
        await self._own_proposal(proposal_id)
        return await self.pod.in_memory_thread(lambda: self.pod.memory.approve_proposal(proposal_id))

    async def memory_reject_proposal(self, proposal_id: int) -> None:
        """The person turns down an agent's change to one of their verified pages; as memory_approve_proposal."""
        await self._own_proposal(proposal_id)
        await self.pod.in_memory_thread(lambda: self.pod.memory.reject_proposal(proposal_id))

    async def _own_proposal(self, proposal_id: int) -> None:
        """Refuses a proposal for a page of another person's memory as one that is not open (already decided, or
        never made), and audits the attempt."""
        mine = set(self.person_scopes())
        scope = next((p.scope for p in await self.pod.in_memory_thread(self.pod.memory.proposals)
                      if p.id == proposal_id), None)
        if scope is None or scope not in mine:
            if scope is not None:
                self.pod.refuse(self.person_id, "", f"tried to decide proposal {proposal_id} of another person")
            raise KeyError(f"No open proposal #{proposal_id} of yours.")

    async def _for_me(self, job: Any) -> Any:
        """Runs a memory job for everyone; raises only this person's own model's failure (another's error quotes
        their model's answer, and is theirs to fix), else gives the run's report."""
        from runtime_host.memory_jobs import MemoryModelError

        try:
            return await job()
        except MemoryModelError as exc:
            if exc.failures is None or exc.report is None:
                raise
            if self.person_id in exc.failures:
                raise MemoryModelError(exc.failures[self.person_id], (exc.summaries or {}).get(self.person_id)) from None
            return exc.report

    async def memory_summarize(self) -> dict[str, int]:
        """Rolls everyone's long conversations up into summaries; tells this person their own count, or their own
        model's failure."""
        mine = f"private/{self.person_id}"
        return {s: n for s, n in (await self._for_me(self.pod.memory_summarize)).items() if s == mine}

    async def memory_produce(self) -> list[dict[str, Any]]:
        """Runs the producer for everyone (as its timer does) and returns once this person's own part has ended
        (waiting for theirs still going in another run first): another's part goes on in the background and reports
        to them, and one still going in another run is left to it. The report is this person's alone (another's holds
        their quarantined text and folder paths)."""
        mine = f"private/{self.person_id}"
        return [r for r in await self._for_me(lambda: self.pod.memory_produce(waits_for=self.person_id))
                if r["scope"] == mine]

    def _page_file_scope(self, message: str) -> str | None:
        """The scope of the page file a message about it names (it starts with the file's path), or None."""
        wiki = f"{self.pod.memory.root / 'wiki'}{os.sep}"
        if not message.startswith(wiki):
            return None
        return message[len(wiki):].partition(":")[0].rpartition(os.sep)[0].replace(os.sep, "/")

    def _seen(self, key: str, mine: set[str]) -> bool:
        """Whether a page key (``page:<scope>/<slug>``) or a scope is one this person may see."""
        scope = key.removeprefix("page:").rpartition("/")[0] if key.startswith("page:") else key
        return scope in mine

    async def memory_ingest(self) -> dict[str, Any]:
        """Reads this person's new chat and mail first (their own part of the read step, as `memory produce` does:
        what they just said is written now, not after the next timed read), then writes the pages this person's own
        model writes (theirs; the owner's also the household's shared ones), never waiting for another person's
        model; the report names only pages this person may see, and counts, and names the model of, only their own
        (another's model and how much they wrote are theirs). Its ``message`` says why notes are left in the inbox:
        no model, their model wrote no page of them, or they are household notes the first person's model writes."""
        from runtime_host.memory_jobs import NO_INGEST_MODEL, MemoryModelError

        try:
            await self._for_me(lambda: self.pod.memory_produce(folders=False, waits_for=self.person_id))
            unread = ""
        except MemoryModelError as exc:  # their chat waits for the next read; what is in the inbox is still written
            unread = f"Your new chat could not be read first: {exc}"
        out = dict(await self._for_me(lambda: self.pod.memory_ingest(self.person_id)))
        mine = set(self.person_scopes())
        own = out.pop("by_person", {}).get(self.person_id, {})
        for timers in ("ran", "still_writing", "busy"):  # whose writers ran, were still going or met another
            # process writing: the timer's to know (their own run's ``message`` says it to them)
            out.pop(timers, None)
        waiting = await self.pod.in_memory_thread(lambda: self.pod.memory.inbox_count(mine))
        written = [k for k in out["written"] if self._seen(k, mine)]
        proposed = [k for k in out["proposed"] if self._seen(k, mine)]
        if not out.get("message"):
            why = await self._why_left(own, mine, waiting)
            if why == [NO_INGEST_MODEL] and not written and not proposed:
                out["message"] = NO_INGEST_MODEL  # another's model ran; this person's own pages wait for theirs
            elif why or unread:
                out["message"] = " ".join(filter(None, (
                    f"Ingest wrote {len(written)} page(s), proposed {len(proposed)} change(s) to verified pages; "
                    f"{waiting} item(s) left in the inbox.", *why, unread)))
        elif unread:
            out["message"] = f"{out['message']} {unread}"
        return {**out, "consumed": own.get("consumed", 0), "written_by": own.get("written_by"), "left_in_inbox": waiting,
                "written": written, "proposed": proposed,
                "rejected": [{"title": r["title"], "why": r["why"]} for r in out["rejected"]
                             if r.get("person") == self.person_id],
                "left_out": [{k: r[k] for k in ("title", "line", "why")} for r in out.get("left_out", [])
                             if r.get("person") == self.person_id],
                "unreadable": [u for u in out.get("unreadable", []) if u["scope"] in mine]}

    async def _why_left(self, own: dict[str, Any], mine: set[str], waiting: int) -> list[str]:
        """What this person's Ingest now tells them of the notes it left in the inbox (and of those its model never
        wrote a page of): each sentence says why, and what to do next."""
        from runtime_host.memory_jobs import GAVE_UP, NO_INGEST_MODEL, owner, person_names, writer_of
        from wiki_engine.pipeline import NO_PAGE_TRIES

        said: list[str] = []
        model = own.get("model") or "The model for wiki pages"
        if own.get("no_page"):
            said.append(f"{model} wrote no page from {own['no_page']} note(s): they wait in the inbox for the next "
                        "ingest. A small model often answers with no page to a long prompt; a stronger one for "
                        "“Memory: writing wiki pages” in Settings → Models (in a terminal: `models set ingest "
                        f"PROVIDER/MODEL`) writes them. A note still without a page after {NO_PAGE_TRIES} tries "
                        "leaves the inbox unwritten, until another model is chosen.")
        if own.get("gave_up"):
            said.append(GAVE_UP.format(n=own["gave_up"], model=model, tries=NO_PAGE_TRIES))
        first = owner(self.pod)
        shared = [sc for sc in mine if writer_of(self.pod, sc) != self.person_id]
        theirs = await self.pod.in_memory_thread(lambda: self.pod.memory.inbox_count(shared)) if shared else 0
        if theirs:
            name = person_names(self.pod).get(first, UNNAMED_AS)
            who = "the person who set Hearth up" if name == UNNAMED_AS else f"{name}, who set Hearth up"
            when = ("at the next timed ingest" if self.pod.has_memory_model(first, "ingest")
                    else "once they choose one in Settings → Models")
            said.append(f"{theirs} household note(s) wait for the ingest model of {who}: household pages are "
                        f"written by that model, {when}.")
        if waiting > theirs and not self.has_memory_model("ingest"):
            said.append(NO_INGEST_MODEL)  # another's model ran; this person's own pages wait for theirs
        return said

    async def memory_nightly(self) -> dict[str, Any]:
        """Runs the nightly pass for everyone; the report names only this person's pages, files and scopes, and
        tells them only what their own model did not write (a shared page's rewrite is its writer's to fix). A pass in
        which someone's model failed gives its report all the same: its ``rejected`` says what failed for them."""
        from runtime_host.memory_jobs import MemoryModelError, writer_of

        try:
            out = await self.pod.memory_nightly()
        except MemoryModelError as exc:
            if exc.report is None:
                raise
            out = exc.report
        mine = set(self.person_scopes())
        return {**out, "merged": [m for m in out["merged"] if self._seen(m[0], mine)],
                "resynthesized": [k for k in out["resynthesized"] if self._seen(k, mine)],
                "proposed": [k for k in out["proposed"] if self._seen(k, mine)],
                "reconciled": [c for c in out["reconciled"] if c.partition(": ")[0].rpartition("/")[0] in mine],
                "reindexed_scopes": [sc for sc in out["reindexed_scopes"] if sc in mine],
                "corrupt": [c for c in out["corrupt"] if self._page_file_scope(c) in mine],
                "rejected": [{"title": t, "why": why} for t, why, sc in out["rejected"]
                             if sc in mine and writer_of(self.pod, sc) == self.person_id],
                "left_out": [{"title": t, "line": line, "why": why} for t, line, why, sc in out.get("left_out", [])
                             if sc in mine and writer_of(self.pod, sc) == self.person_id]}

    async def memory_verify(self) -> list[Any]:
        """Sources of this person's scopes whose bytes no longer match their checksum."""
        mine = set(self.person_scopes())
        return [t for t in await self.pod.in_memory_thread(self.pod.memory.verify) if t.scope in mine]

    async def memory_delete_source(self, source_id: str) -> Deleted:
        return await self.pod.memory_delete_source(self.person_id, source_id)

    def source_not_deletable(self, scope: str, owner: str) -> str:
        """Why this person may not delete a source of ``scope`` that ``owner`` put there ("" when they may): a
        household note is its owner's (``remembering.not_deletable``)."""
        from runtime_host.remembering import not_deletable

        return not_deletable(self.pod, self.person_id, scope, owner)

    async def memory_held(self) -> list[Any]:
        """The person's held items, a mail's with its sender as their Mail shows it (memory keeps the address
        redacted): to keep or discard it they need to see who sent it, a look-alike of a known name told apart."""
        import dataclasses

        held = await self.pod.memory_held(self.person_id)
        return [dataclasses.replace(q, author=self.pod.mail.sender(self.person_id, q.item_key) or q.author)
                if q.kind == "mail" else q for q in held]

    async def memory_release(self, qid: int) -> str:
        return await self.pod.memory_release(self.person_id, qid)

    async def memory_discard(self, qid: int) -> None:
        await self.pod.memory_discard(self.person_id, qid)

    async def memory_forget_agent(self, name: str) -> int:
        return await self.pod.memory_forget_agent(self.person_id, name)

    async def memory_forget_me(self) -> int:
        return await self.pod.memory_forget_me(self.person_id)

    async def ask_memory(self, question: str) -> Any:
        return await self.pod.ask_memory(self.person_id, question)


# What only reads, stops or deletes: answered as before for a person being removed (their removal reads and stops
# the same), a removed person's simply empty. Every other operation (a new one too) writes, and is guarded.
_UNGUARDED = {
    "people", "vault", "what_removal_takes", "remove_person", "take_notices", "embedding_status", "embedding_choices",
    "list_providers", "provider", "models", "role_route", "list_agents", "find_agent", "stop_agent", "delete_agent",
    "remove_provider", "list_conversations", "last_chat", "conversation", "latest_conversation", "messages", "turns",
    "turn_messages", "export_conversation", "search_conversations", "delete_conversation",
    "delete_conversation_and_forget", "stop_turn", "stop_turns", "runs", "schedules", "schedule_ledger",
    "delete_schedule", "list_tasks", "task_timeline", "has_memory_model", "list_partners", "partner_cards",
    "audit_log", "read_redactions", "person_scopes", "memory_search", "memory_said", "memory_proposals",
    "memory_verify", "memory_held", "memory_delete_source", "source_not_deletable", "memory_discard",
    "memory_forget_agent", "memory_forget_me"}


def _guarded(fn: Any) -> Any:
    """An operation that writes, refused (``Store.still_here``) once its person was removed from this Hearth or is being removed: a
    window or CLI of another process that unlocked them before keeps nothing new for them (rows no one could remove,
    secrets in the keyring), and starts nothing of theirs."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(self: PersonPod, *args: Any, **kwargs: Any) -> Any:
            self.pod.store.still_here(self.person_id, self._person.name)
            return await fn(self, *args, **kwargs)

        return run_async

    @functools.wraps(fn)
    def run(self: PersonPod, *args: Any, **kwargs: Any) -> Any:
        self.pod.store.still_here(self.person_id, self._person.name)
        return fn(self, *args, **kwargs)

    return run


for _name, _fn in list(vars(PersonPod).items()):
    if inspect.isfunction(_fn) and not _name.startswith("_") and _name not in _UNGUARDED:
        setattr(PersonPod, _name, _guarded(_fn))
