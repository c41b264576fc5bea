"""Memory's part of the embedding model chosen (Settings → Models, `models set embedding`): which model memory takes
and for whose scopes, taking up a new choice (a re-embed in the background, with its progress), and opening memory
on its own thread when a re-embed or vectors queued for the model wait, at start-up or when the choice changes
while memory is not open yet. A part of MemoryHost (it uses memory's thread and the Pod's store and routes)."""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

from runtime_host.turns import TurnFailed

log = logging.getLogger("hearth.memory")


class EmbeddingChoice:
    """Mixed into MemoryHost: ``self.pod``, ``self._memory``, ``self.memory``, ``self._memory_pool``,
    ``self._pool`` and ``self._watch_stop`` are its."""

    pod: Any
    _memory: Any
    _memory_pool: concurrent.futures.ThreadPoolExecutor | None
    _embedding_seen: tuple[str, str] | None
    _opening: concurrent.futures.Future[None] | None
    _pool: Callable[[], concurrent.futures.ThreadPoolExecutor]
    _follow_here: Callable[[], None]
    _watch_stop: Any
    memory: Any
    _runs_on = False  # see resume_embedding

    def embedding_changed(self) -> concurrent.futures.Future[None] | None:
        """The embedding role's model changed: open memory re-embeds every source in the background (search
        keeps working meanwhile); memory not open yet, in a process that runs on (see ``resume_embedding``), is opened
        on its own thread when something waits for the new model (``open_if_owed``), and re-embeds there. While memory's thread runs, the switch is its next piece of
        work: loading the model and waiting for memory's lock never hold the caller (the window's event loop, when a
        person chooses in Settings). Returns the switch's (or the opening's) future while it waits."""
        if self._memory is None:  # (a one-off command, that opens memory itself if at all, ends before it would)
            return self.open_if_owed() if self._runs_on else None
        self._embedding_seen = self._embedding_key()
        if self._memory_pool is None:  # no memory thread: switch here
            self._take_up_embedding()
            return None

        def switch() -> None:
            try:
                self._take_up_embedding()
            except Exception:  # noqa: BLE001 - nobody waits on this: log it, and look again at the next memory work
                log.exception("memory could not take up the embedding model chosen")
                self._embedding_seen = None

        return self._memory_pool.submit(switch)

    def soon(self, fn: Callable[..., None], *args: Any) -> concurrent.futures.Future[None] | None:
        """``fn(*args)``, memory's thread's next work while it runs (the window never waits for it), else here."""
        if self._memory is None or self._memory_pool is None:
            return fn(*args)
        return self._memory_pool.submit(fn, *args)

    def _take_up_embedding(self) -> None:
        embedder, only_for = self.embedder_choice()
        self._memory.set_embedder(embedder, only_for=only_for)

    def _embedding_key(self) -> tuple[str, str]:
        from runtime_host import memory_jobs

        return self.pod.embedding_model(), memory_jobs.owner(self.pod)

    def _still_chosen(self, embedder: Any) -> bool:
        """Whether ``embedder`` (a provider's, that memory is about to send notes or a question) is still the
        embedding model chosen: another process may have chosen another since (a terminal's `models set embedding`),
        and memory's background pass asks before each request, whatever the window is doing."""
        from runtime_host.providers.embeddings import embedder_name

        choice = self.pod.embedding_model()
        return "/" in choice and embedder_name(*choice.split("/", 1)) == embedder.name

    def embedder_choice(self) -> tuple[Any, str | None]:
        """The embedding role's model as memory takes it, and whose scopes it may see. A local model embeds
        every scope. A provider's embeds only the scopes of the person who chose it (their private and agent
        notes): text of public memory and of other people never goes to a provider reached with their key."""
        from runtime_host import memory_jobs
        from runtime_host.providers import Route
        from runtime_host.providers.embeddings import ProviderEmbedder

        choice = self.pod.embedding_model()
        if "/" not in choice:
            return choice, None
        owner = memory_jobs.owner(self.pod)
        provider, _, model = choice.partition("/")
        try:
            route = self.pod.role_route(owner, "embedding")
        except TurnFailed as exc:  # the key is missing from the keyring: say so where progress shows
            return ProviderEmbedder.unavailable(provider, model, str(exc)), owner
        return ProviderEmbedder.for_route(Route.from_dict(route)), owner

    def resume_embedding(self) -> None:
        """At start-up: a re-embed cut short (Hearth quit or was killed partway through), or vectors still queued
        for a provider's model (it was down, or Hearth quit first), go on at once, on memory's thread (the window
        never waits for it), with their progress in ``embedding_status`` for Settings → Models; not only once a
        search touches each scope. Memory stays closed when nothing waits. From then on, this process runs on (the
        window, `serve`): memory not open yet when another model is chosen is opened for it (``embedding_changed``)."""
        self._runs_on = True
        self.open_if_owed()

    def open_if_owed(self) -> concurrent.futures.Future[None] | None:
        """Memory not open yet is opened on memory's thread (never the caller's) when the embedding model chosen
        is owed work: a scope on another model, or vectors queued for it. Opening it starts that work in the
        background, its progress shown. Memory opened meanwhile takes up the choice instead. Returns the future."""
        if self._memory is not None or self._watch_stop.is_set() or not (self.pod.home / "memory" / "index").is_dir():
            return None

        def open_it() -> None:
            try:
                if self._memory is not None:  # opened meanwhile, perhaps on the model chosen before
                    self._follow_here()
                else:
                    self._open_if_owed()
            except Exception:  # noqa: BLE001 - memory opens on first use as before, and re-embeds then
                log.exception("memory could not open to re-embed for the embedding model chosen")

        self._opening = self._pool().submit(open_it)
        return self._opening

    def _open_if_owed(self) -> None:
        from wiki_engine.embed import KINDS, is_remote
        from wiki_engine.memory import queued_scopes, stale_scopes

        embedder, only_for = self.embedder_choice()
        name = KINDS.get(embedder, embedder) if isinstance(embedder, str) else str(getattr(embedder, "name", "") or "")
        root = self.pod.home / "memory"
        if name and (stale_scopes(root, name, only_for=only_for)
                     or (is_remote(embedder) and queued_scopes(root, name, only_for=only_for))):
            _ = self.memory  # opening memory re-embeds and fills on its own background thread

