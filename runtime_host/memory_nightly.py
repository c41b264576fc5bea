"""Memory's nightly pass as the Pod runs it: the merges, finished deletions and indexes under the whole wiki's lease (no
model), then each person's own part side by side, with their own model: their stale pages rewritten and their pages
checked for contradictions, each scope under its own lease, the whole wiki's held only a moment to read and to write.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

from runtime_host.memory_jobs import (
    UNUSABLE,
    WIKI_BUSY,
    Choice,
    MemoryModelError,
    _failed_run,
    _writers,
    only_cited,
    take_all,
    writer_of,
)


@dataclass
class Checked:
    """One person's contradiction check: the pages changed (``scope/slug: why``), those left as they were (page title,
    why, scope) and their model's failures (person, MemoryModelError), as nightly reports them."""

    changed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)
    model_failed: list[tuple[str, MemoryModelError]] = field(default_factory=list)


async def nightly(pod: Any) -> dict[str, Any]:
    """Merges duplicates, finishes deletions a crash cut short and brings the indexes in line (every person's ingest
    finished first, none begun meanwhile: no model is asked in this part), then each person's own part at once, each
    under their own ingest lock (see ``own_part``): one person's slow or hung model holds no one else's Ingest now or
    pages. A person's model that failed (a rewrite or a contradiction check) is raised (MemoryModelError with
    ``failures`` and the run's ``report``) once everything else is done."""
    from wiki_engine.pipeline import LeaseBusy, NightlyReport, nightly_steps

    host = pod.memory_host
    people = sorted(str(p.id) for p in pod.store.list_people(active=True))  # none being removed: see _writers
    locks = [host.job_lock("ingest")] + [host.job_lock(f"ingest:{pid}") for pid in people]
    async with contextlib.AsyncExitStack() as held:
        await take_all(locks, held)
        try:
            rep = await host.run_steps(lambda: nightly_steps(pod.memory), lambda _batch: [])
        except LeaseBusy:
            return {**vars(NightlyReport()), "reconciled": [], "message": WIKI_BUSY}
    out = dict(vars(rep))
    out["reconciled"] = []
    failed: list[tuple[str, MemoryModelError]] = []
    writers = _writers(pod)
    parts = await asyncio.gather(*(own_part(pod, pid, writers[pid]) for pid in writers))
    for rewritten, checked in parts:
        out["resynthesized"] += rewritten.resynthesized
        out["proposed"] += rewritten.proposed
        out["rejected"] += rewritten.rejected + checked.failed  # told to each page's person alone
        out["left_out"] += rewritten.left_out
        out["reconciled"] += checked.changed
    failed += [f for _r, checked in parts for f in checked.model_failed]
    # counts only: the lists name pages and files of every person, and every subscriber hears this event
    pod.emit({"type": "memory.nightly", **{k: len(v) if isinstance(v, list) else v for k, v in out.items()
                                           if isinstance(v, int | list)}})
    if failed:  # the run says it failed (for each person whose model did), once the rest of the pass is done
        raise _failed_run(failed, out)
    return out


async def own_part(pod: Any, pid: str, choice: Choice) -> tuple[Any, Checked]:
    """One person's part of the nightly pass, with their own model: the stale pages of the scopes it writes rewritten,
    one scope at a time (a model rewriting a shared page is never shown its owner's private pages), then those scopes'
    pages checked for contradictions. Under their ingest lock (after their own ingest still going, if any): their
    Ingest now meanwhile is answered at once (NIGHTLY_WRITING); everyone else's goes on."""
    from wiki_engine.pipeline import LeaseBusy, NightlyReport, rewrite_steps

    host = pod.memory_host
    rewritten, checked = NightlyReport(), Checked()
    async with host.job_lock(f"ingest:{pid}"):
        host.ingesting.add(pid)
        host.nightly.add(pid)
        try:
            scopes = await pod.in_memory_thread(lambda: sorted(
                {str(sc) for sc in pod.memory.scopes_on_disk()} | set(pod.memory.pending_scopes())))
            mine = [sc for sc in scopes if writer_of(pod, sc) == pid]
            if choice.synthesize is not None:
                stale = await pod.in_memory_thread(lambda: {k[len("page:"):].rpartition("/")[0]
                                                            for k in pod.memory.stale_pages()})
                for scope in [sc for sc in mine if sc in stale]:
                    try:
                        rep = await host.run_steps(lambda sc=scope: rewrite_steps(pod.memory, sc),
                                                   _rewriter(pid, scope, choice, checked))
                    except LeaseBusy:  # another process writes this scope now: its pages stay stale for tomorrow
                        continue
                    for name in ("resynthesized", "proposed", "rejected", "left_out"):
                        getattr(rewritten, name).extend(getattr(rep, name))
            await _check(pod, pid, mine, checked)
        finally:
            host.ingesting.discard(pid)
            host.nightly.discard(pid)
    return rewritten, checked


def _rewriter(pid: str, scope: str, choice: Choice, checked: Checked) -> Any:
    """The person's writer for one scope's stale pages, its failure handed to the steps as an answer (the pages stay
    stale, the report says so) and kept as their model's failure."""
    from wiki_engine.pipeline import WriterFailed

    def rewrite(batch: Any) -> list[Any]:
        try:
            return [page for page in choice.synthesize(batch) if str(page.scope) == scope]
        except Exception as e:  # whatever the model's failure, its person's report says it
            checked.model_failed.append((pid, e if isinstance(e, MemoryModelError) else MemoryModelError(
                str(e), "The wiki-writer model failed; the page stays stale.")))
            return [WriterFailed(str(e), [scope])]

    return rewrite


def checked_digest(page: Any, sources: list[tuple[int, Any]]) -> str:
    """What the contradiction check read of a page, as a digest: its text and each source it cites (id, the digest of
    its text, its date). A page or a source changed since (a summary made again under its id) reads anew."""
    said = [page.scope, page.slug, page.title, page.body, [(n, s.id, s.sha, s.ts) for n, s in sources]]
    return hashlib.sha256(json.dumps(said, ensure_ascii=False).encode("utf-8")).hexdigest()


async def _check(pod: Any, pid: str, scopes: list[str], checked: Checked) -> None:
    """Model against model: the person's ingest model resolves contradicting claims on the unverified pages of the
    scopes it writes, in favour of the newest source. A page a person verified is never touched (human against model:
    the human wins); without a real model for the role nothing is changed (rules cannot judge a contradiction); a page
    the check found nothing on is not sent again until it or a source it cites changes. A page left as it was because
    the model failed, or its check was refused, is said (with its title) to its person alone; the other pages go on."""
    from runtime_host.memory_jobs import model_reconcile
    from runtime_host.providers import Route
    from wiki_engine.pipeline import LeaseBusy

    route = pod.memory_host.memory_route(pid, "ingest")
    if route is None or route.get("kind") in ("embedded", UNUSABLE):  # ingest says why it cannot write
        return
    reconcile = model_reconcile(Route.from_dict(route))

    def think(question: tuple[Any, list[tuple[int, Any]]]) -> list[Any]:
        try:
            return [reconcile(*question)]
        except MemoryModelError as exc:  # this page stays as it is until the next night
            return [exc]

    for scope in scopes:
        try:
            await pod.memory_host.run_steps(lambda sc=scope: check_steps(pod.memory, sc, pid, checked), think)
        except LeaseBusy:  # another process writes the wiki now: checked tomorrow
            continue


def check_steps(memory: Any, scope: str, pid: str, checked: Checked) -> Generator[Any, Any, None]:
    """One scope's contradiction check as steps: yields (page, its sources) for each unverified page citing two or
    more sources and not found clean before as it is now, and is sent [(new body or None, why)] or [the model's
    failure]. A new body is written under the scope's lease and the whole wiki's (a moment), with only the citations
    it still uses, and only onto the page as the model read it: another process's ingest (or the person) may have
    written it meanwhile (asked again next night). Records the digests of the pages found clean."""
    from wiki_engine import CitationError, PageFormatError, SourceUnreadable, UnknownSource
    from wiki_engine.lease import Lease
    from wiki_engine.pipeline import Embed, LeaseBusy, wiki_pen

    clean = memory.checked_pages(scope)
    still: set[str] = set()
    pages, _corrupt = memory.list_pages(scope)
    for page in pages:
        if page.verified or len(set(page.citations.values())) < 2:
            continue
        try:  # a page file citing what is not stored, or what its readers may not see, goes to no model
            memory.check_citations(page)
            sources = [(n, memory.get_source(sid)) for n, sid in sorted(page.citations.items())]
        except (CitationError, UnknownSource, SourceUnreadable) as exc:  # a lost note file stops no other page
            checked.failed.append((page.title, f"not checked for contradictions: {exc}", scope))
            continue
        digest = checked_digest(page, sources)
        if digest in clean:
            still.add(digest)
            continue
        [answer] = (yield (page, sources))
        if isinstance(answer, MemoryModelError):
            checked.failed.append((page.title, str(answer), scope))
            checked.model_failed.append((pid, answer))
            continue
        body, why = answer
        if body is None:
            still.add(digest)
            continue
        fixed = replace(page, body=body, citations=only_cited(page.citations, body))
        ahead = yield Embed(memory, pages=[fixed])  # off memory's thread, before it is locked
        try:
            with Lease(memory.catalog, f"ingest:{scope}", ttl=600.0, moment=True), \
                    (yield from wiki_pen(memory, False)), memory._lock:
                if memory.read_page(page.scope, page.slug) != page:
                    continue
                res = memory.write_page(fixed, author="agent:nightly", ahead=ahead)
        except (CitationError, PageFormatError, ValueError, LeaseBusy):
            continue  # a source was deleted while the model thought, or another process writes: left as it is
        if res.status == "left out":  # all the check kept gives the assistant orders: not written, not asked again
            still.add(digest)
            continue
        # a line the page held that gives the assistant orders is left out as the page is written: said with it
        left = "".join(f"; left out a line that {gone} (“{line}”)" for line, gone in res.left_out)
        checked.changed.append(f"{scope}/{page.slug}: {why}{left}")
    memory.mark_checked(scope, still)
