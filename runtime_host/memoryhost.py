"""The Pod's memory: the memory wiki (wiki_engine), opened on first use and worked on one background thread;
the `remember` and `search_memory` Pod tools; what a person may read, search, delete and forget; and the
entry points of the memory jobs (producer, summaries, ingest, nightly, Ask memory) in runtime_host/memory_jobs.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from runtime_host import agentnotes, keptcorrections
from runtime_host.embeddingchoice import EmbeddingChoice
from runtime_host.mappingforgets import MappingForgets
from runtime_host.remembering import RememberCounts, not_deletable
from runtime_host.store import storage_errors_said
from runtime_host.turns import TurnFailed

if TYPE_CHECKING:
    from runtime_host.memory_jobs import JobLock
    from wiki_engine.memory import Deleted

log = logging.getLogger("hearth.memory")

# How often open memory looks whether another process chose another embedding model: before memory work, and
# while the window is idle (a thread of its own, see ``_watch_embedding_choice``).
EMBEDDING_RECHECK_S = 2.0


class MemoryHost(EmbeddingChoice, MappingForgets):
    """Memory: the wiki, its thread, tools and jobs. `pod` is the Pod (kept loose: this module never imports it).
    What a forget takes out of the person's keyring is MappingForgets' part; the embedding model chosen,
    EmbeddingChoice's."""

    def __init__(self, pod: Any):
        self.pod = pod
        self._memory: Any = None
        self._memory_pool: Any = None
        self._job_locks: dict[str, JobLock] = {}
        self.remember_counts = RememberCounts()  # facts each running turn remembered (remembering.PER_TURN)
        self.ingesting: set[str] = set()  # people whose ingest (a timed run's or their Ingest now) is going
        self.nightly: set[str] = set()  # those of them whose pages the nightly pass is writing
        self._embedding_seen: tuple[str, str] | None = None  # the embedding choice open memory follows
        self._embedding_checked = 0.0
        self._opening: concurrent.futures.Future[None] | None = None  # see open_if_owed
        self._going: set[asyncio.Task[Any]] = set()  # people's parts a run returned without (see keep_going)
        self._watching: threading.Thread | None = None  # see _watch_embedding_choice
        self._watch_stop = threading.Event()
        self._following: concurrent.futures.Future[None] | None = None  # its last look, on memory's thread

    def register_tools(self, tools: dict[str, Any]) -> None:
        """The Pod tools this part carries out for a worker."""
        tools["remember"] = self._tool_remember
        tools["search_memory"] = self._tool_search_memory

    def _follow_embedding_choice(self) -> None:
        """Another Hearth process on this data folder (`models set embedding` in a terminal) may have chosen
        another model: open memory takes it up within a few seconds, so nothing more goes to a provider no longer
        chosen, and what is stored next gets the chosen model's vector. Run on memory's thread (switching waits
        for memory's lock, which the event loop must never do)."""
        if self._embedding_key() != self._embedding_seen:
            self._embedding_seen = self._embedding_key()
            self._take_up_embedding()

    def _follow_due(self) -> bool:
        """Whether open memory is to look at the embedding choice again now (every EMBEDDING_RECHECK_S at most);
        True counts as the look."""
        if self._memory is None or time.monotonic() - self._embedding_checked < EMBEDDING_RECHECK_S:
            return False
        self._embedding_checked = time.monotonic()
        return True

    def _follow_here(self) -> None:
        """``_follow_embedding_choice`` on memory's thread, whatever asked it: a failure is logged, and the next
        look tries again."""
        try:
            self._follow_embedding_choice()
        except Exception:  # noqa: BLE001 - the memory work asked for goes on; the next look tries again
            log.exception("memory could not take up the embedding model chosen elsewhere")
            self._embedding_seen = None

    def _watch_embedding_choice(self) -> None:
        """A thread of its own while memory's thread runs: the embedding model another process chose is taken up
        within a few seconds even when nothing runs in the window (README: "taken up by the window within a few
        seconds"), the look ``in_memory_thread`` makes before memory work made on memory's thread every
        EMBEDDING_RECHECK_S. A thread, not a task on the window's loop: it never waits for that loop, nor it for
        this."""
        while not self._watch_stop.wait(max(EMBEDDING_RECHECK_S, 0.5)):
            pool, last = self._memory_pool, self._following
            if pool is None or (last is not None and not last.done()) or not self._follow_due():
                continue  # (a look still waiting behind long memory work is not asked again)
            try:
                self._following = pool.submit(self._follow_here)
            except RuntimeError:  # memory's thread ended: memory is closing
                return

    @property
    def is_open(self) -> bool:
        """Whether memory was opened (it opens on first use)."""
        return self._memory is not None

    def keep_going(self, task: asyncio.Task[Any], what: str) -> None:
        """A person's part of a memory run that returned without waiting for it (``memory_jobs.each_person``): kept
        until it ends (a failure its own code did not tell its person is logged), stopped when memory closes."""
        def ended(t: asyncio.Task[Any]) -> None:
            self._going.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("memory run part (%s) failed", what, exc_info=t.exception())

        self._going.add(task)
        task.add_done_callback(ended)

    async def close_memory(self) -> None:
        for task in list(self._going):  # a part still waiting on a model: its items are read again by the next run
            task.cancel()
        if self._going:
            await asyncio.wait(list(self._going), timeout=10)
        self._watch_stop.set()
        if self._opening is not None:  # memory being opened to re-embed: closed below, not left open after
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(self._opening)
        if self._memory is not None:
            await self.in_memory_thread(self._memory.close)
            self._memory = None
        if self._memory_pool is not None:
            self._memory_pool.shutdown(wait=False)

    def embedding_status(self, person_id: str | None = None) -> dict[str, Any] | None:
        """Progress of re-embedding memory after the embedding model changed ({"model", "done", "total",
        "running", "error"}), or None while memory is not open (nothing is being re-embedded). With ``person_id``,
        counted in the scopes that person may read alone: another person's items are none of theirs."""
        if self._memory is None:
            return None
        return self._memory.embedding_status(None if person_id is None else self.person_scopes(person_id))

    @property
    def memory(self) -> Any:
        """The memory wiki (opened on first use: it loads search indexes and a small embedding model)."""
        if self._memory is None:
            import wiki_engine
            from runtime_host.memory_jobs import redactor

            self._embedding_seen, self._embedding_checked = self._embedding_key(), time.monotonic()
            embedder, only_for = self.embedder_choice()
            with storage_errors_said(self.pod.home / "memory"):
                self._memory = wiki_engine.open_memory(self.pod.home / "memory", embedder=embedder, only_for=only_for)
            self._memory.redactor = redactor(self.pod)  # personal data redacted on every path into memory
            self._memory.positions = self.pod.store.memory_positions  # a forget goes by the order chat was written
            self._memory.still_chosen = self._still_chosen  # nothing more to a provider chosen no more elsewhere
            self._memory.agent_names = self.pod.store.agent_names  # "Helper, tell Alice to pay ..." is an order
            unloadable = self._memory.embedding_status().get("error")
            if unloadable:  # the local model's file damaged or gone: memory answers by keywords; said once here
                log.warning("%s", unloadable)  # (a terminal's one line), and in Settings → Models for good
        return self._memory

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """Memory's one background thread (made on first use), and the watch for a choice made elsewhere."""
        if self._memory_pool is None:
            self._memory_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory")
        if self._watching is None and not self._watch_stop.is_set():
            self._watching = threading.Thread(target=self._watch_embedding_choice, name="memory-choice-watch",
                                              daemon=True)
            self._watching.start()
        return self._memory_pool

    async def in_memory_thread(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Runs memory work on one background thread (never on the UI thread, one writer at a time)."""
        pool = self._pool()
        follow = self._follow_due()

        def run() -> Any:
            if follow:
                self._follow_here()
            with storage_errors_said(self.pod.home / "memory"):  # a read-only memory folder, a full disk: in words
                return fn(*args, **kw)

        return await asyncio.get_running_loop().run_in_executor(pool, run)

    async def run_steps(self, make_steps: Callable[[], Any], think: Callable[[Any], Any]) -> Any:
        """Runs a memory pipeline's steps (``wiki_engine.pipeline``) with its memory work on memory's thread and
        its model part (``think``) on another, so search, typeahead and pages answer while a model thinks, while
        the steps wait (``Wait``) for a lease another writer holds a moment, or while the local model embeds what
        they are about to store (``Embed``: a first mail sync's mails, an ingest's pages)."""
        from wiki_engine.pipeline import Embed, Wait

        def step(steps: Any, answer: Any) -> tuple[bool, Any]:
            try:
                return False, (next(steps) if answer is None else steps.send(answer))
            except StopIteration as done:  # a future cannot carry StopIteration: hand back the result instead
                return True, done.value

        from runtime_host.memory_jobs import on_own_thread

        steps = await self.in_memory_thread(make_steps)  # opening memory (on first use) is memory work too
        done, value = await self.in_memory_thread(step, steps, None)
        while not done:
            try:
                if isinstance(value, Wait):
                    await asyncio.sleep(value.seconds)
                    answer = None
                elif isinstance(value, Embed):
                    answer = await asyncio.to_thread(value.made)
                else:
                    answer = list(await on_own_thread(think, value))
            except BaseException:
                await self.in_memory_thread(steps.close)  # the lease is released, nothing written
                raise
            done, value = await self.in_memory_thread(step, steps, answer)
        return value

    def job_lock(self, name: str) -> JobLock:
        """One run of a memory job at a time in this Pod (``ingest:<person>`` one person's ingest; nightly takes
        ``ingest`` and every person's for its part that asks no model, then each person's for their own part)."""
        from runtime_host.memory_jobs import JobLock

        lock = self._job_locks.get(name)
        if lock is None:
            lock = self._job_locks[name] = JobLock()
        return lock

    @staticmethod
    def memory_scope(person_id: str, instance_id: str, which: str) -> str:
        return {"agent": f"agent/{person_id}/{instance_id}", "person": f"private/{person_id}",
                "public": "public"}.get(which) or ""

    async def _tool_remember(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        from runtime_host.remembering import remember

        return await remember(self, person_id, instance_id, args)

    async def _tool_search_memory(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        query = str(args.get("query") or "").strip()
        if not query:
            raise ValueError("search_memory needs a query")
        k = max(1, min(int(args.get("k") or 8), 20))
        import wiki_engine
        from runtime_host.memory_jobs import found_for_agent, person_names

        viewer = wiki_engine.Viewer(person_id, instance_id)  # a mail's hit comes wrapped as a stranger's words
        names = person_names(self.pod)  # who put a household note there, by the names people use
        return await self.in_memory_thread(lambda: found_for_agent(
            self.memory, self.memory.search(query, scopes=viewer, k=k), person=person_id, names=names))

    def has_memory_model(self, person_id: str, role: str = "ingest") -> bool:
        """Whether the model chosen for a memory role (ingest, extraction, ...) can do that job: chosen, and not the
        tiny embedded model. As ``memory_jobs.capable`` of its route, a model chosen but unusable (its provider removed,
        its key gone) counts as chosen; unlike the route it reads no key from the keyring (the Wiki's bar asks this
        on the window's thread every 20 s)."""
        choice = self.pod.agent_host.role_choice(person_id, role)
        if choice is None:
            return False
        prov = self.pod._provider(person_id, choice[0])
        return prov is None or prov["kind"] != "embedded"

    def memory_route(self, person_id: str, role: str) -> dict[str, Any] | None:
        """The person's route for a memory role; None when none is chosen. A model chosen that cannot be reached
        (its key gone from the keyring, its provider removed) is a route of kind ``unusable`` with the reason: the
        job says that, rather than "choose a model" or the rules doing the work unsaid."""
        from runtime_host.memory_jobs import UNUSABLE

        try:
            return self.pod.role_route(person_id, role)
        except TurnFailed as exc:
            return {"kind": UNUSABLE, "error": str(exc)}

    def person_scopes(self, pid: str) -> list[str]:
        """What a person may read: public, their private tree, and each of their agents' notes; nothing once they
        were removed from this Hearth (a window or a process that unlocked them before reads nothing more)."""
        if self.pod.store.get_person_by_id(pid) is None:
            return []
        return ["public", f"private/{pid}", *(f"agent/{pid}/{i.id}" for i, _ in self.pod.store.list_agents(pid))]

    def scope_label(self, scope: str) -> str:
        if scope == "public":
            return "Everyone"
        if scope.startswith("private/"):
            return "Me"
        name = self.agent_label(scope.rsplit("/", 1)[-1])
        return f"{name}'s notes" if name else scope

    def agent_label(self, instance_id: str) -> str:
        """An agent's name, or "" for an agent that no longer exists."""
        found = self.pod.store.get_instance(instance_id)
        return found[0].name if found else ""

    async def memory_search(self, person_id: str, query: str, k: int = 10, mode: str = "hybrid") -> list[Any]:
        scopes = self.person_scopes(person_id)
        return await self.in_memory_thread(lambda: self.memory.search(query, scopes=scopes, k=k, mode=mode))

    async def memory_delete_source(self, person_id: str, source_id: str) -> Deleted:
        """The owner deletes one source (a household note its owner alone: ``remembering.not_deletable``): gone from
        the index; pages that cited it are marked for re-synthesis (their keys returned, with the verified pages kept
        under their category's name: ``Deleted``). A chat message's note takes with it the summaries of its
        conversation that read the message (they quote it): the next run writes them again without it. The real
        values behind its reversible placeholders leave the person's vault once nothing left shows them."""
        from runtime_host.memory_jobs import summaries_reading

        scope, owner = await self.in_memory_thread(lambda: (self.memory.source_scope(source_id),
                                                             self.memory.source_owner(source_id)))
        if scope is None or scope not in self.person_scopes(person_id):
            raise self.pod.refuse(person_id, "No such source of yours.", f"tried to delete source {source_id} of another scope")
        if why := not_deletable(self.pod, person_id, scope, owner or ""):  # a household note of another person's
            raise self.pod.refuse(person_id, f"{why} Nothing was deleted.", f"tried to delete household source {source_id} of another person")
        rows = await self.in_memory_thread(
            lambda: self.memory.catalog.query("SELECT kind, item_key FROM sources WHERE id=?", (source_id,)))
        summaries = await summaries_reading(self.pod, person_id, rows[0][1]) if rows and rows[0][0] == "chat" else []
        mine = f"private/{person_id}"

        def said() -> Iterator[str]:  # what goes with it: the source and the summaries that read it
            return self._source_texts([source_id, *(k for k in summaries if self.memory.source_scope(k) == mine)])

        def delete() -> Deleted:
            # The summaries first: a process killed between the two leaves the source, so the person's Delete can
            # be done again and finds them; the other way round it was refused (no such source), for good.
            stale = self.memory.delete_sources([k for k in summaries if self.memory.source_scope(k) == mine], again=True)
            self.memory.drop_held(mine, summaries)
            return stale.joined(self.memory.delete_source(source_id))  # and the verified pages kept renamed

        async with self._forgetting(person_id, lambda: self._mappings_in([], said())):
            stale = await self.in_memory_thread(delete)
        if rows:  # a watched file's: its status says so (it said "indexed" until the file changed)
            await self.pod.folders.source_deleted(rows[0][1], source_id)
        return stale

    async def memory_held(self, person_id: str) -> list[Any]:
        """Items held back from this person's memory (theirs and their agents', in any scope) because they read
        as orders to the assistant. Another person's are never listed: they hold that person's words."""
        return await self.in_memory_thread(lambda: self.memory.quarantine(owner=person_id))

    async def _own_held(self, person_id: str, qid: int) -> Any:
        q = await self.in_memory_thread(lambda: self.memory.held_item(qid))
        if q is None or q.owner != person_id:
            summary = (f"tried to review held item {qid} of another person" if q is not None
                       else f"asked to review held item {qid}, which is not held (kept, discarded or never held)")
            raise self.pod.refuse(person_id, f"No held item #{qid} of yours: it was kept, discarded or never "
                                  "held. `memory held` lists yours.", summary)
        return q

    async def memory_release(self, person_id: str, qid: int) -> str:
        """The person judged a held item harmless: it is stored as a source (and reaches pages at the next ingest)."""
        q = await self._own_held(person_id, qid)
        sid = await self.in_memory_thread(lambda: self.memory.release_quarantined(qid))
        await self.pod.folders.held_decided(q.item_key)
        self.pod.audit(person_id=person_id, agent=None, kind="memory", phase="memory_write", action="released",
                       rule="memory.instruction_filter", summary=f"held item #{qid} kept by the person",
                       detail={"quarantine_id": qid, "scope": q.scope, "source_id": sid})
        return str(sid)

    async def memory_discard(self, person_id: str, qid: int) -> None:
        """The person threw a held item away: its text leaves memory's files."""
        q = await self._own_held(person_id, qid)
        async with self._forgetting(person_id, lambda: self._mappings_in([], [q.text, q.reason, q.head])):
            await self.in_memory_thread(lambda: self.memory.discard_quarantined(qid))
        await self.pod.folders.held_decided(q.item_key)
        self.pod.audit(person_id=person_id, agent=None, kind="memory", phase="memory_write", action="discarded",
                       rule="memory.instruction_filter", summary=f"held item #{qid} discarded by the person",
                       detail={"quarantine_id": qid, "scope": q.scope})

    async def forget_messages(self, person_id: str, ids: list[str], conversation_id: str | None = None,
                              said: Iterable[str] = ()) -> None:
        """Messages taken out of the end of a conversation (the last exchange edited or answered again): what
        memory kept of them goes too, and they are never pulled again. So does a summary of the conversation that
        read one of them; it is written again once the conversation reaches its length anew. The real values
        behind the reversible placeholders in them, or in ``said`` (the exchange's own words and steps, deleted
        by the caller), leave the person's vault once nothing left shows them."""
        from runtime_host.memory_jobs import summaries_past_the_end

        if not ids:
            return
        scope = f"private/{person_id}"
        summaries = await summaries_past_the_end(self.pod, person_id, conversation_id, len(ids)) if conversation_id else []

        def mine() -> list[str]:
            return [k for k in summaries if self.memory.source_scope(k) == scope]

        def forget() -> None:
            self.memory.forget_origins(scope, ids)
            self.memory.delete_sources(mine(), again=True)
            self.memory.drop_held(scope, summaries)

        async with self._forgetting(person_id, lambda: self._mappings_in([], itertools.chain(
                said, self._source_texts([*self.memory.sources_by_key(scope, ids), *mine()])))):
            await self.in_memory_thread(forget)

    async def forget_origins(self, person_id: str, keys: list[str]) -> int:
        """Deletes what memory kept of some origins of the person's (an inbox's mail): ``Memory.forget_origins`` in
        their private scope. The real values behind the reversible placeholders in it leave the person's vault
        once nothing left shows them. Returns how many sources were deleted."""
        scope = f"private/{person_id}"
        async with self._forgetting(
                person_id, lambda: self._mappings_in([], self._source_texts(self.memory.sources_by_key(scope, keys)))):
            n = int(await self.in_memory_thread(lambda: self.memory.forget_origins(scope, keys)))
        return n

    async def memory_forget_agent(self, person_id: str, name: str) -> int:
        """Everything one agent learned, its own notes, memory's summaries of the person's conversations with it
        (those written before summaries named their agent are found by their conversation), and why the extraction
        model skipped any of their messages."""
        inst, _ = self.pod.find_agent(person_id, name)
        scope = f"private/{inst.person_id}"
        convs = self.pod.store.list_conversations(inst.id)
        summaries = [f"summary-{c.id}-" for c in convs]
        keys = [m.id for c in convs for m in self.pod.store.list_messages(c.id)]

        def forget() -> int:
            n = self.memory.forget_agent(inst.person_id, inst.id, keys=keys)
            older = self.memory.sources_by_key(scope, (), summaries)
            self.memory.delete_sources(older)
            self.memory.drop_held(scope, summaries)
            return n + len(older)

        notes = agentnotes.note_files(self.pod.home, inst.person_id, inst.id)
        async with self._forgetting(inst.person_id, lambda: self._mappings_in(self.person_scopes(inst.person_id),
                                                                              agentnotes.texts(notes))):
            n = await self.in_memory_thread(forget)
            agentnotes.empty(notes)
        return n

    async def delete_conversation(self, person_id: str, conversation_id: str) -> None:
        """Deletes a conversation; what memory learned from it stays (Delete and forget takes that too). Why the
        extraction model skipped any of its messages goes with it: a reason may quote the message, and it is
        nothing memory learned. Memory not opened yet is opened for that only if it has a catalog (memory.db);
        without one there is nothing to drop. Memory first, so a failure leaves the conversation there to try
        again."""
        from runtime_host import conversations

        me = self.pod.for_person(person_id)
        conversations.deletable(me, conversation_id)
        keys = [m.id for m in self.pod.store.list_messages(conversation_id)]
        if keys and (self._memory is not None or (self.pod.home / "memory" / "memory.db").exists()):
            await self.in_memory_thread(lambda: self.memory.drop_skips(f"private/{person_id}", keys))
        conversations.delete(me, conversation_id)

    async def delete_conversation_and_forget(self, person_id: str, conversation_id: str) -> int:
        """Deletes a conversation and what memory learned from it: the sources the producer made of its messages
        and of its summaries (pages citing them are re-synthesised), what of them was held back, and why any was
        skipped. Memory is forgotten first, so a failure leaves the conversation there to try again. Returns how
        many sources were deleted."""
        from runtime_host import conversations

        me = self.pod.for_person(person_id)
        conversations.deletable(me, conversation_id)
        messages = self.pod.store.list_messages(conversation_id)
        keys = [m.id for m in messages]
        scope, summaries = f"private/{person_id}", [f"summary-{conversation_id}-"]
        said = conversations.words(self.pod.store, messages, [t.id for t in self.pod.store.list_turns(conversation_id)])

        def remembered() -> Iterator[str]:  # what memory kept of it
            return self._source_texts(self.memory.sources_by_key(scope, keys, summaries))

        async with self._forgetting(person_id, lambda: self._mappings_in([], itertools.chain(said, remembered()))):
            n = await self.in_memory_thread(lambda: self.memory.forget_origins(scope, keys, summaries))
            conversations.delete(me, conversation_id)
        self.pod.audit(person_id=person_id, agent=None, kind="memory", phase="memory_write", action="forgot",
                       rule="person.delete_conversation", summary=f"a deleted conversation's {n} memory source(s) forgotten",
                       detail={"conversation_id": conversation_id, "sources": n})
        return int(n)

    async def memory_forget_me(self, person_id: str) -> int:
        # Watched folders first, or they would import it all again (an import running now stores nothing more).
        self.pod.folders.forget_person(person_id)
        notes = agentnotes.note_files(self.pod.home, person_id)  # what their agents noted goes too
        async with self._forgetting(person_id, lambda: self._mappings_in(self.person_scopes(person_id),
                                                                         agentnotes.texts(notes))):
            n = int(await self.in_memory_thread(lambda: self.memory.forget_person(person_id)))
            agentnotes.empty(notes)
        keptcorrections.forget(self.pod, person_id)  # their wiki corrections not saved, kept for them sealed
        # a window of this process holding one in memory lets it go now (another process's, at its next give back)
        self.pod.emit({"type": "memory.forgot", "person": person_id, "what": "me"})
        return n

    async def memory_produce(self, *, folders: bool = True, waits_for: str | None = None,
                             told: Callable[[str, str], None] | None = None) -> list[dict[str, Any]]:
        """Pulls new chat and mail into the memory inbox (keep or skip by the extraction model; a watched folder's mail
        exports by the import model), then summaries; each person's part under a lock of their own (see
        memory_jobs.produce)."""
        from runtime_host import memory_jobs

        await self.forget_mappings_left()
        return await memory_jobs.produce(self.pod, folders=folders, waits_for=waits_for, told=told)

    async def memory_summarize(self) -> dict[str, int]:
        from runtime_host import memory_jobs

        return await memory_jobs.summarize_conversations(self.pod)

    async def ask_memory(self, person_id: str, question: str) -> Any:
        """The slow path: the person's "Ask memory" model answers from what search finds for them, citing it."""
        from runtime_host import memory_jobs

        return await memory_jobs.ask(self.pod, person_id, question)

    async def memory_ingest(self, person_id: str | None = None,
                            told: Callable[[str, str], None] | None = None) -> dict[str, Any]:
        """Turns the inbox into wiki pages once an ingest model is chosen: everyone's, or only those ``person_id``'s
        model writes. Each person's writer runs under a lock of its own (``ingest:<person>``), so one person's slow
        model never holds another's pages; the nightly pass takes them all only for its part that asks no model. ``told``: see memory_jobs.ingest."""
        from runtime_host import memory_jobs

        return await memory_jobs.ingest(self.pod, person_id, told)

    async def memory_nightly(self) -> dict[str, Any]:
        """The nightly pass (runtime_host/memory_nightly.py): each person's own part under their own lock alone."""
        from runtime_host import memory_nightly

        return await memory_nightly.nightly(self.pod)
