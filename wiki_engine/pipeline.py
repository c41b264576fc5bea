"""The memory pipelines the Pod runs on timers: producer (every 5 min), ingest (every 30 min, single
writer) and the nightly pass. Each takes the model's part as a callable, so any model can be wired in
and tests can pass deterministic functions.

- Producer: ``fetch(watermark) -> items``; the instruction filter quarantines orders; one batched
  ``decide(items) -> [Decision]`` call keeps or skips each item (with a reason); kept items become
  sources in the inbox, and the watermark moves, all in one transaction. A model that decides only the first
  items (a small one stops early in a long list) has those stored and the watermark moved past them alone.
- Ingest: under the ``ingest`` lease, ``synthesize(batch) -> [Page]`` turns inbox sources into pages
  with citations (a draft it refuses itself, ``DraftRefused``, is reported and the others written). Verified pages
  get proposals. The inbox is cleared only for what landed.
- Nightly: re-synthesise pages whose sources were deleted, merge duplicate pages, bring indexes in line.

Without a capable model, ``rules_decide`` keeps or skips items by general rules (empty, small talk, too
short, advertising) and no pages are written: sources stay searchable and wait in the inbox for a model.

Each pipeline is also a generator of steps (``producer_steps``, ``ingest_steps``, ``nightly_steps``): it
yields what the model must see and is sent the model's answer, so a host can do the memory work on one
thread and let the model think on another (``drive`` runs the steps in one go, as the ``run_*`` do).
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .guard import check_instructions
from .index import Ahead, query_terms, words
from .lease import Lease, LeaseBusy
from .memory import (
    NO_PAGE_TRIES,
    CitationError,
    Memory,
    PageWrite,
    SourceConflict,
    SourceRecord,
    forgotten,
    hold,
    title_key,
)
from .pages import (
    CITE,
    Page,
    PageFormatError,
    as_claim,
    holds_something,
    is_heading,
    without_empty_sections,
)
from .render import Item
from .scopes import Scope
from .sources import SourceUnreadable, Tampered

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    """The extraction model's answer for one item."""

    keep: bool
    reason: str = ""


@dataclass(frozen=True)
class Watermark:
    """Everything at or before (ts, key) of one origin in one scope has been pulled; of an origin that numbers its
    items in the order they were written (``Item.seq``: chat, mail), everything numbered up to ``seq`` (``ts`` and
    ``key`` then name the last item pulled), whatever the clock said when each was written. Such an origin's watermark
    without ``seq`` (kept before memory went by that order, or set by a forget) is carried over by its fetch."""

    ts: float
    key: str
    seq: int | None = None

    def covers(self, item: Item) -> bool:
        if item.seq is not None:  # a time of such an origin says nothing of its order: its fetch went by the number
            return self.seq is not None and item.seq <= self.seq
        return (item.ts, item.item_key()) <= (self.ts, self.key)


@dataclass
class ProducerReport:
    scope: str
    origin: str
    pulled: int = 0
    kept: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (item key, reason)
    quarantined: list[tuple[str, str]] = field(default_factory=list)  # (item key, reason)
    passed: int = 0  # items forgotten before they were pulled: the watermark moved past them, no model shown them
    watermark: Watermark | None = None


Fetch = Callable[[Watermark | None], Sequence[Item]]
Decide = Callable[[Sequence[Item]], Sequence[Decision]]


_SMALLTALK = re.compile(
    r"^(ok(ay)?|k|yes|yeah|yep|no|nope|sure|thanks?( you)?|thx|lol|haha\w*|nice( one)?|cool|good (night|morning)|"
    r"morning|night|see you( later| soon)?|bye|love you|sounds good)\b[\s,.!?]*((sure|sounds good|love you|yes|thanks)[\s,.!?]*)*$",
    re.I,
)
_PROMO = re.compile(r"\b(unsubscribe|newsletter|% off|sale\b|click (here|to))", re.I)


# Chinese and Japanese are written without spaces: a run of their letters is one \w+ however long, so words are
# counted by letters instead, one for every two (Korean is written with spaces).
_UNSPACED = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")


def word_count(text: str) -> float:
    """About how many words ``text`` holds, in any script."""
    n = 0.0
    for run in re.findall(r"\w+", text):
        unspaced = len(_UNSPACED.findall(run))
        n += (len(run) > unspaced) + unspaced / 2 if unspaced else 1
    return n


def rules_decide(items: Sequence[Item]) -> list[Decision]:
    """Keep or skip without a model, by general rules only: skips empty items, small talk, items too short
    to state a fact (under four words, in any script) and advertising; keeps everything else."""
    out: list[Decision] = []
    for it in items:
        text = it.text.strip()
        words = word_count(text)
        if not words:
            out.append(Decision(False, "empty or emoji only"))
        elif _SMALLTALK.match(text):
            out.append(Decision(False, "small talk"))
        elif words < 4:
            out.append(Decision(False, "too short to hold a fact"))
        elif _PROMO.search(text):
            out.append(Decision(False, "promotional mail"))
        else:
            out.append(Decision(True, "states a fact"))
    return out


def get_watermark(memory: Memory, scope: str, origin: str) -> Watermark | None:
    """How far ``origin`` was pulled into ``scope``; never before the scope was last forgotten (what was said
    before then stays forgotten, even if it was never pulled). A numbered watermark (``seq``) stays where it is: the
    producer passes over the items past it said before the forget, showing them to no model."""
    rows = memory.catalog.query("SELECT ts, item_key, seq FROM watermarks WHERE scope=? AND origin=?", (scope, origin))
    mark = Watermark(rows[0][0], rows[0][1], rows[0][2]) if rows else None
    gone = memory.forgotten_at(scope)
    if gone and (mark is None or (mark.seq is None and mark.ts < gone)):
        return Watermark(gone, "\U0010ffff")
    return mark


_Ask = TypeVar("_Ask")
_Done = TypeVar("_Done")


@dataclass(frozen=True)
class Wait:
    """Yielded by a pipeline's steps instead of a question for the model: a lease they need is held a moment by
    another writer. The host waits ``seconds`` without holding memory's thread (search, typeahead and pages answer
    meanwhile), then sends None to have the steps try again."""

    seconds: float = 0.05


@dataclass(frozen=True, eq=False)
class Embed:
    """Yielded by a pipeline's steps instead of a question for the model: the items they are about to store and the
    pages they are about to write, whose vectors the local model makes before memory is locked
    (``Memory.vectors_ahead``). The host makes them off memory's thread (``made``), so search and typeahead answer
    meanwhile (MiniLM: about a tenth of a second a long mail or page; a first mail sync's hundreds of mails held
    them seconds), and sends them back (an ``Ahead``): what is stored of that very text and model takes them, the
    rest is embedded as it is stored."""

    memory: Memory
    items: Sequence[Item] = ()
    pages: Sequence[Page] = ()

    def made(self) -> Ahead:
        """The vectors, or none when making them failed (memory closing, say): storing then makes them itself, and
        says what fails."""
        if not self.items and not self.pages:
            return {}
        try:
            return self.memory.vectors_ahead(self.items, pages=self.pages)
        except Exception:  # noqa: BLE001 - storing embeds them itself
            log.info("embedding %d items and %d pages ahead of storing them failed; they are embedded as they are "
                     "stored", len(self.items), len(self.pages), exc_info=True)
            return {}


def drive(steps: Generator[_Ask, Any, _Done], think: Callable[[_Ask], Sequence[Any]]) -> _Done:
    """Runs a pipeline's steps in one go: ``think`` (the model's part) answers each thing the steps yield (a
    ``Wait`` is slept here, an ``Embed`` made here). If ``think`` fails, the steps are closed (their lease released,
    nothing written) and the error raised."""
    try:
        ask = next(steps)
        while True:
            if isinstance(ask, Wait):
                time.sleep(ask.seconds)
                ask = steps.send(None)
                continue
            if isinstance(ask, Embed):
                ask = steps.send(ask.made())
                continue
            try:
                answer = list(think(ask))
            except BaseException:
                steps.close()
                raise
            ask = steps.send(answer)
    except StopIteration as done:
        return done.value


def run_producer(memory: Memory, *, scope: str, origin: str, fetch: Fetch, decide: Decide) -> ProducerReport:
    """Pulls new items of one origin (chat, mail, notes) for one scope since its watermark.

    If anything fails (fetch, the model, a disk write), the watermark does not move, so the next run
    pulls the same items again; storing is idempotent, so nothing is stored twice and nothing is missed.
    Items go in their origin's order of writing where it numbers them (``Item.seq``), else by time.
    """
    return drive(producer_steps(memory, scope=scope, origin=origin, fetch=fetch), decide)


def producer_steps(memory: Memory, *, scope: str, origin: str,
                   fetch: Fetch) -> Generator[list[Item] | Embed, Any, ProducerReport]:
    """``run_producer`` as steps: yields the items to keep or skip, is sent one Decision per item, or for the first
    items only (at least one): those are stored and the watermark moves to the last of them; the rest is pulled
    again by the next run. Items forgotten before they were pulled are shown to no model: the watermark moves past
    them. Then yields ``Embed`` (the kept items' vectors, made off memory's thread)."""
    sc = str(Scope.parse(scope))
    report = ProducerReport(sc, origin)
    mark = get_watermark(memory, sc, origin)
    items = list(fetch(mark))
    for it in items:
        if it.scope != sc:
            raise ValueError(f"fetch returned an item for {it.scope} while producing {sc}; fetch one scope at a time.")
    if len({it.seq is None for it in items}) > 1:
        raise ValueError(f"fetch returned {origin} items numbered (seq) and not: an origin goes by one order.")
    items.sort(key=lambda i: (i.seq, "") if i.seq is not None else (i.ts, i.item_key()))
    items = [memory.clean_item(i) for i in items if mark is None or not mark.covers(i)]
    with memory.catalog.tx() as db:
        gone = {id(it) for it in items if forgotten(db, it)}
    report.pulled, report.passed = len(items) - len(gone), len(gone)
    if not items:
        report.watermark = mark
        return report
    clean: list[Item] = []
    held: list[tuple[Item, str, str]] = []
    agents = memory.agents_called()
    for it in items:
        if id(it) in gone:
            continue
        v = check_instructions(it.said(), agents)
        if v.ok:
            clean.append(it)
        else:
            held.append((it, v.rule, v.reason))
    decisions = list((yield clean)) if clean else []
    if len(decisions) > len(clean) or (clean and not decisions):
        raise ValueError(
            f"The extraction model answered {len(decisions)} decisions for {len(clean)} items; nothing was stored. "
            "The next run will ask again."
        )
    if len(decisions) < len(clean):  # the first items decided only: they are stored, the rest is asked again
        upto = next(i for i, it in enumerate(items) if it is clean[len(decisions)])
        items, clean = items[:upto], clean[:len(decisions)]
        before = {id(it) for it in items}
        held = [h for h in held if id(h[0]) in before]
        report.passed = len(before & gone)
        report.pulled = len(items) - report.passed
    last = items[-1]
    new_mark = Watermark(last.ts, last.item_key(), last.seq)
    docs: dict[str, list] = {}
    for s in {i.scope for i in clean}:
        memory.index(s)  # open (and repair) first, so new items are indexed once
    # the kept items' vectors, made off memory's thread (a first mail sync: hundreds of mails) before it is locked
    ahead = yield Embed(memory, [it for it, d in zip(clean, decisions, strict=True) if d.keep])
    now = time.time()
    with memory._lock, memory.catalog.tx(immediate=True) as db:
        for it, d in zip(clean, decisions, strict=True):
            if forgotten(db, it):  # the person forgot it while the model decided: nothing of it is kept
                continue
            if d.keep:
                try:
                    sid, doc = memory._register(db, it, None, to_inbox=True)
                except SourceConflict as e:
                    db.execute("INSERT INTO skips (scope, item_key, reason, at) VALUES (?,?,?,?)",
                               (sc, it.item_key(), f"edited after it was stored: {e}", now))
                    report.skipped.append((it.item_key(), "edited after it was stored"))
                    continue
                if not sid:  # the person deleted this very item before: it stays deleted, and is not counted
                    continue
                report.kept.append(sid)
                if doc is not None:
                    docs.setdefault(it.scope, []).append(doc)
            else:
                reason = d.reason.strip() or "no reason given"
                db.execute("INSERT INTO skips (scope, item_key, reason, at) VALUES (?,?,?,?)", (sc, it.item_key(), reason, now))
                report.skipped.append((it.item_key(), reason))
        for it, rule, reason in held:
            # forgotten, or deleted (or thrown away) by the person before: read again from its origin (an inbox
            # added again), it is not held again
            if forgotten(db, it) or hold(db, it, rule, reason) is None:
                continue
            report.quarantined.append((it.item_key(), reason))
        db.execute(
            "INSERT OR REPLACE INTO watermarks (scope, origin, ts, item_key, seq) VALUES (?,?,?,?,?)",
            (sc, origin, new_mark.ts, new_mark.key, new_mark.seq),
        )
    for s, ds in docs.items():
        idx = memory.index(s)
        idx.add(ds, ahead)
        idx.commit()
    report.watermark = new_mark
    return report


# ---- ingest ------------------------------------------------------------------------------------


PAGES_SHOWN = 50  # of a scope's existing pages, the wiki writer is shown the first this many of ``existing_pages``
SOURCE_CHARS_SHOWN = 2000  # of a source, the wiki writer is shown its first this many characters


@dataclass(frozen=True)
class IngestBatch:
    """What the wiki writer sees: inbox sources, pages that need re-synthesis, and the existing pages
    of the scopes involved (so it can extend a page and link to others). A scope's pages are all there (a draft of
    one the writer was not shown keeps that page's lines), those that matter to the batch first (``_pages_first``):
    the writer is shown the first ``PAGES_SHOWN``, the stale pages (shown as pages to rewrite) last among them."""

    sources: list[SourceRecord]
    stale_pages: list[Page]
    existing_pages: dict[str, list[Page]]  # scope -> pages, those that matter to the batch first
    # source id -> its time, for each source the writer reads (the batch's, and those its pages cite): the day it is
    # shown each by, so it can tell which of two disagreeing claims is the newer
    days: dict[str, float] = field(default_factory=dict)


@dataclass
class IngestReport:
    written: list[str] = field(default_factory=list)
    proposed: list[tuple[str, int]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (page title, why)
    consumed: list[str] = field(default_factory=list)
    left_in_inbox: list[str] = field(default_factory=list)
    no_page: list[str] = field(default_factory=list)  # the writer wrote no page of these: they wait (see _no_page)
    gave_up: list[str] = field(default_factory=list)  # ... NO_PAGE_TRIES times: out of the inbox, pages never written
    # sources whose file is missing or damaged: they wait in the inbox (restored from a backup, they are written at
    # the next ingest; deleted, they leave it) while the other sources are written
    unreadable: list[Tampered] = field(default_factory=list)
    # (page title, line, why): a line of a page the writer wrote that gave the assistant orders, left out of it (the
    # rest of the page written; nothing of it when that was all it said); its source stays a source, found by search
    left_out: list[tuple[str, str, str]] = field(default_factory=list)


class DraftRefused(Exception):
    """A writer's draft of ``title`` in ``scope`` refused before it reaches memory (titled with an id, say): the report
    says which page and why (the message), the batch's other drafts are written, and the sources this one drew on
    wait in the inbox."""

    def __init__(self, message: str, title: str, scope: str):
        super().__init__(message)
        self.title, self.scope = title, scope


Synthesize = Callable[[IngestBatch], Sequence[Page | DraftRefused]]


def run_ingest(memory: Memory, synthesize: Synthesize, *, author: str = "agent:wiki-writer",
               max_sources: int = 200, lease_ttl: float = 1800.0,
               scopes: Callable[[str], bool] | None = None) -> IngestReport:
    """Turns the inbox into pages under the single-writer ``ingest`` lease.

    Raises LeaseBusy if another live process is ingesting. If ``synthesize`` raises, the inbox is left
    as it was. A draft that fails validation is reported and its sources stay in the inbox. A draft's lines that give
    the assistant orders are left out of its page, and said (``IngestReport.left_out``): its sources leave the inbox
    as any written page's do (a page refused for them waited with its sources, and was asked for again at every
    ingest). With
    ``scopes``, only sources and stale pages of the scopes it accepts reach ``synthesize`` (the rest wait
    for their own writer), and a draft for any other scope is rejected. A source whose file is missing or damaged
    is not shown to ``synthesize``: it waits in the inbox, named in the report's ``unreadable``, and the other
    sources are written.
    """
    return drive(ingest_steps(memory, author=author, max_sources=max_sources, lease_ttl=lease_ttl, scopes=scopes),
                 synthesize)


PEN_WAIT_S = 15.0  # how long one scope's ingest waits for another's writing (a moment's work) before it skips


def ingest_steps(memory: Memory, *, author: str = "agent:wiki-writer", max_sources: int = 200,
                 lease_ttl: float = 1800.0, scopes: Callable[[str], bool] | None = None, claim: str | None = None,
                 ) -> Generator[IngestBatch | Wait | Embed, Any, IngestReport]:
    """``run_ingest`` as steps: holds the lease, yields the batch, is sent the drafts, writes them. Memory may
    change while the model writes the drafts: each draft is checked as it is written (one citing a source
    deleted meanwhile is rejected, and the sources it drew on wait in the inbox), and none is written when a source
    the model read (``_shown_ids``) was deleted meanwhile: its words may be in a draft citing another.

    With ``claim`` (a scope), the run holds that scope's lease ``ingest:<scope>`` throughout, so no two ingests
    write one scope's pages at once, and the whole wiki's ``ingest`` lease only while it reads its batch and while
    it writes the drafts: another scope's ingest goes on while this one's model thinks (one person's hung model
    never holds another's pages). While another scope's ingest holds the whole wiki's lease a moment, the steps
    yield ``Wait`` (the host waits off memory's thread); held by a whole run (a nightly pass), LeaseBusy at once.
    Without ``claim``, ``ingest`` is held throughout and no scope's ingest may be running."""
    whole = claim is None
    with Lease(memory.catalog, "ingest" if whole else f"ingest:{claim}", ttl=lease_ttl,
               excludes=("ingest:%",) if whole else ()) as lease:
        # no deletion comes between what the writer is shown and the note of which sources that was
        with (yield from wiki_pen(memory, whole)), memory._lock:
            batch, report = _ingest_batch(memory, max_sources, scopes)
            seen = set(batch.days) if batch is not None else set()
        if batch is None:
            return report
        drafts = list((yield batch) or ())
        lease.renew()
        # the pages' vectors, made off memory's thread before it is locked (MiniLM: about a tenth of a second a page)
        ahead = yield Embed(memory, pages=[p for p in drafts if isinstance(p, Page)
                                           and (scopes is None or scopes(str(p.scope)))])
        lease.renew()
        with (yield from wiki_pen(memory, whole)), memory.one_commit():
            return _write_drafts(memory, batch, drafts, report, lease, author, scopes, seen, ahead)


def wiki_pen(memory: Memory, whole: bool) -> Generator[Wait, Any, AbstractContextManager[Any]]:
    """The whole wiki's writer lease, held, for one scope's ingest to read its batch or write its pages (a moment);
    the whole wiki's writer holds it already. Held a moment by another scope's ingest, it is tried again every
    50 ms for up to PEN_WAIT_S, each wait yielded; held for a whole run (a nightly pass), LeaseBusy at once."""
    if whole:
        return nullcontext()
    pen = Lease(memory.catalog, "ingest", ttl=600.0, moment=True)
    until = time.monotonic() + PEN_WAIT_S
    while True:
        try:
            pen.acquire()
            return pen
        except LeaseBusy as busy:
            if not busy.moment or time.monotonic() >= until:
                raise
        yield Wait(0.05)


def _ingest_batch(memory: Memory, max_sources: int, scopes: Callable[[str], bool] | None,
                  ) -> tuple[IngestBatch | None, IngestReport]:
    """The waiting sources and stale pages an ingest shows its model (None: nothing to do), after finishing the
    deletions a crash cut short; with the time of each source it reads (of those memory holds)."""
    memory.finish_deletions()
    report = IngestReport()
    sources: list[SourceRecord] = []
    # whose each waiting source is, from the catalog: another scope's source file is not read (its damage is for
    # its own writer's run to say, and stops no one else's pages)
    for sid, scope in memory.waiting(1_000_000):
        if scopes is not None and not scopes(scope):
            continue
        try:
            sources.append(memory.get_source(sid))
        except SourceUnreadable as e:
            report.unreadable.append(e.tampered)
            report.left_in_inbox.append(sid)
            continue
        if len(sources) >= max_sources:
            break
    stale: list[Page] = []
    for key in memory.stale_pages():
        scope, _, slug = key[len("page:") :].rpartition("/")
        if scopes is not None and not scopes(scope):
            continue
        try:
            p = memory.read_page(scope, slug)
        except PageFormatError:
            p = None
        if p is not None:
            stale.append(p)
    if not sources and not stale:
        return None, report
    existing: dict[str, list[Page]] = {}
    for sc in sorted({s.scope for s in sources} | {p.scope for p in stale}):
        pages, _ = memory.list_pages(sc)
        existing[sc] = _pages_first(memory, sc, pages, [s for s in sources if s.scope == sc],
                                    [p for p in stale if str(p.scope) == sc])
    batch = IngestBatch(sources, stale, existing)
    return replace(batch, days=_days(memory, _shown_ids(batch))), report


def _pages_first(memory: Memory, scope: str, pages: list[Page], sources: list[SourceRecord], stale: list[Page],
                 ) -> list[Page]:
    """A scope's ``pages``, those that matter to its batch first (as far as the first ``PAGES_SHOWN``, the pages the
    writer is shown): for each source in turn (one page of each source's before a second of any) the pages whose
    title the part of it the writer is shown names (each of the title's words in it), then those memory's keyword
    search of that part finds (its first ``PAGES_SHOWN`` pages shared out among the sources), then the others as
    listed, and its ``stale`` pages last: the writer is shown them anyway, as pages to rewrite, and one among the
    first ``PAGES_SHOWN`` would take another page's place. A person with many pages gets new facts on the page that
    holds their topic, and links to the pages the sources name.

    A source is searched only when its turn comes for a place, and at most ``PAGES_SHOWN`` sources are (a search
    for each place): a backlog of 200 notes searched each one under memory's lock and the writer's lease, ~3 s at
    5,000 pages, while the window's search waited; the places are filled before the 51st source's turn comes."""
    by_key = {p.key: p for p in pages}
    at = {p.key: n for n, p in enumerate(pages)}
    by_first: dict[str, list[tuple[set[str], Page]]] = {}  # a title's first word -> (its words, the page)
    for p in pages:
        terms = query_terms(p.title)
        if terms:
            by_first.setdefault(terms[0], []).append((set(terms), p))
    k = -(-PAGES_SHOWN // max(1, len(sources)))
    texts = [s.text[:SOURCE_CHARS_SHOWN] for s in sources]
    named: list[list[Page]] = []
    for text in texts:
        said = set(words(text))
        named.append(sorted((p for w in said for terms, p in by_first.get(w, ()) if terms <= said),
                            key=lambda p: at[p.key]))
    found: dict[int, list[Page]] = {}  # a source's search's pages, once its turn came

    def pick(n: int, rank: int) -> Page | None:
        """The source's page at this rank: the ones its words name, then the ones its search finds."""
        if rank < len(named[n]):
            return named[n][rank]
        if n not in found:
            if len(found) >= PAGES_SHOWN:
                return None
            found[n] = [by_key[h.id] for h in memory.search(texts[n], scopes=[scope], k=k, mode="keyword",
                                                             kinds=("page",)) if h.id in by_key]
        rank -= len(named[n])
        return found[n][rank] if rank < len(found[n]) else None

    last = {p.key for p in stale}
    order: dict[str, Page] = {}
    ranks = max((len(ps) for ps in named), default=0) + k  # no source has a page past these
    for rank, n in ((rank, n) for rank in range(ranks) for n in range(len(sources))):
        if len(order) >= PAGES_SHOWN:
            break
        p = pick(n, rank)
        if p is not None and p.key not in last:
            order.setdefault(p.key, p)
    return [*order.values(), *(p for p in pages if p.key not in order and p.key not in last),
            *(p for p in pages if p.key in last)]


def _shown_ids(batch: IngestBatch) -> set[str]:
    """The sources whose words a writer shown ``batch`` read: its sources, and those its pages' claims cite."""
    pages = [*batch.stale_pages, *(p for ps in batch.existing_pages.values() for p in ps)]
    return {s.id for s in batch.sources} | {sid for p in pages for sid in p.citations.values()}


def _stored(memory: Memory, ids: Iterable[str]) -> set[str]:
    """Which of these source ids memory holds now."""
    return set(_days(memory, ids))


def _days(memory: Memory, ids: Iterable[str]) -> dict[str, float]:
    """Each of these source ids memory holds now, with its time (``ts``)."""
    ids, out = sorted(ids), {}
    for part in range(0, len(ids), 500):
        chunk = ids[part:part + 500]
        out.update((r[0], r[1]) for r in memory.catalog.query(
            f"SELECT id, ts FROM sources WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)))
    return out


_DELETED_MEANWHILE = ("a note it was shown was deleted while it wrote, so none of its {n} page(s) were written: none "
                      "of the deleted note's words reach a page. {what}")


def _write_drafts(memory: Memory, batch: IngestBatch, drafts: Sequence[Page | DraftRefused], report: IngestReport,
                  lease: Lease, author: str, scopes: Callable[[str], bool] | None, seen: set[str], ahead: Ahead) -> IngestReport:
    """Writes an ingest model's drafts; takes the sources that reached a page (or all, when every draft was
    written) out of the inbox. A source of the ``seen`` ones (see ``_shown_ids``) deleted while the model wrote
    had its words read by it, and a draft may hold them citing another source: none is written then, and the
    batch's other sources wait in the inbox for a writer that never reads the deleted one."""
    sources = batch.sources
    if seen - _stored(memory, seen):
        report.rejected.append(("ingest", _DELETED_MEANWHILE.format(
            n=len(drafts), what="Its other notes wait in the inbox for the next ingest.")))
        report.left_in_inbox += [s.id for s in sources if s.id in _stored(memory, {s.id for s in sources})]
        return report
    if sources and not drafts:
        return _no_page(memory, sources, report)
    landed_sources: set[str] = set()
    ok = True
    for page in drafts:
        if isinstance(page, DraftRefused):  # that page alone; its sources wait in the inbox
            ok = False
            report.rejected.append((page.title, str(page)))
            continue
        if scopes is not None and not scopes(str(page.scope)):
            ok = False
            report.rejected.append((page.title, f"the writer of this batch may not write in {page.scope}"))
            continue
        try:
            res: PageWrite = memory.write_page(page, author=author, ahead=ahead)
        except (CitationError, PageFormatError, ValueError) as e:
            ok = False
            report.rejected.append((page.title, str(e)))
            continue
        landed_sources |= set(page.citations.values())
        report.left_out += [(page.title, line, why) for line, why in res.left_out]
        if res.status == "proposed":
            assert res.proposal_id is not None
            report.proposed.append((res.key, res.proposal_id))
        elif res.status == "written":
            report.written.append(res.key)
        lease.renew()
    consumed = [s.id for s in sources if ok or s.id in landed_sources]
    with memory.catalog.tx(immediate=True) as db:
        db.executemany("DELETE FROM inbox WHERE source_id=?", [(c,) for c in consumed])
    report.consumed = consumed
    report.left_in_inbox += [s.id for s in sources if s.id not in set(consumed)]
    return report


def _no_page(memory: Memory, sources: Sequence[SourceRecord], report: IngestReport) -> IngestReport:
    """A writer's answer of no page at all for a batch of notes. Its prompt never asks it to leave a note out, so
    this is a weak model's failure (a small model lost in a long prompt), no verdict on the notes: they wait in the
    inbox for the next ingest, a stronger model's say. A note shown NO_PAGE_TRIES times without a page leaves the
    inbox unwritten (it stays in memory, found by search and cited in answers): a batch that never becomes a page
    does not ask the model again at every run for ever, and the report says which. Its row stays, read by no ingest
    (``Memory.waiting``), till its person chooses another ingest model (``Memory.unwritten_again``)."""
    ids = [(s.id,) for s in sources]
    with memory.catalog.tx(immediate=True) as db:
        db.executemany("UPDATE inbox SET no_page = no_page + 1 WHERE source_id=?", ids)
        done = {r[0] for sid in ids for r in db.execute(
            "SELECT source_id FROM inbox WHERE source_id=? AND no_page >= ?", (sid[0], NO_PAGE_TRIES))}
    report.gave_up = [s.id for s in sources if s.id in done]
    report.no_page = [s.id for s in sources if s.id not in done]
    report.left_in_inbox += report.no_page
    return report


# ---- nightly -----------------------------------------------------------------------------------


@dataclass
class NightlyReport:
    merged: list[tuple[str, str]] = field(default_factory=list)  # (kept key, removed key)
    resynthesized: list[str] = field(default_factory=list)  # rewritten
    proposed: list[str] = field(default_factory=list)  # a verified page's rewrite, for its person to approve or reject
    corrupt: list[str] = field(default_factory=list)
    reindexed_scopes: list[str] = field(default_factory=list)
    # (page title, why, scope): the page stays as it was. The scope says whose it is: two people's pages may share
    # a title, and a report shown to one person must not tell them why another's page was turned down.
    rejected: list[tuple[str, str, str]] = field(default_factory=list)
    # (page title, line, why, scope): a line of a rewrite or a merge that gave the assistant orders, left out of it
    left_out: list[tuple[str, str, str, str]] = field(default_factory=list)


class WriterFailed(Exception):
    """A wiki writer's failure for the stale pages of ``scopes`` (one person's writer, when each has their own):
    nightly reports it against those scopes and goes on with the other writers' pages."""

    def __init__(self, message: str, scopes: Sequence[str]):
        super().__init__(message)
        self.scopes = tuple(scopes)


def _near_title(title: str) -> str:
    """Titles of pages a merge is proposed for, never done unasked: the same but for letter case, spacing,
    punctuation and a word's final "s" ("Dentist" and "Dentists", but also "Andrea" and "Andreas", two people: the
    person tells). Titles that are the same but for case, spacing and punctuation (``title_key``) are one page's."""
    return title_key(re.sub(r"(?<=\w{3})s\b", "", unicodedata.normalize("NFKC", title).casefold()))


def run_nightly(memory: Memory, *, merge: Callable[[Page, Page], Page] | None = None,
                resynthesize: Synthesize | None = None, author: str = "agent:wiki-writer") -> NightlyReport:
    """Merges duplicate pages (same normalised title in one scope), re-synthesises stale pages, and
    refreshes each scope's index. ``merge(a, b)`` is the model's merge; without it, the later page's
    text is appended to the earlier one. A merge that touches a verified page keeps the person's page
    and files the other as a proposal (model against human resolves to the human). Each index is brought in line
    with the catalog and the page files, keeping its vectors (see ``Memory.refresh_index``).
    """
    steps = nightly_steps(memory, merge=merge, resynthesize=resynthesize is not None, author=author)
    return drive(steps, failure_told(resynthesize or (lambda batch: [])))


def failure_told(resynthesize: Synthesize) -> Callable[[IngestBatch], list[Page | Exception]]:
    """The nightly writer, its failure handed to the steps as an answer: nightly says so in its report and goes
    on (the pages stay stale for the next night) instead of ending before the indexes are brought in line."""

    def told(batch: IngestBatch) -> list[Page | Exception]:
        try:
            return list(resynthesize(batch))
        except Exception as e:  # whatever the model's failure, the report says it
            return [e]

    return told


def rewrite_steps(memory: Memory, scope: str, author: str = "agent:wiki-writer"
                  ) -> Generator[IngestBatch | Wait | Embed, Any, NightlyReport]:
    """Nightly's re-synthesis of one scope's stale pages, as one scope's ingest writes (``pipeline.ingest_steps`` with
    ``claim``): the scope's lease held throughout, the whole wiki's only while the pages are read and while the
    rewrites are written (``Wait`` while another scope's writer holds it a moment; LeaseBusy while a whole run does)."""
    report = NightlyReport()
    with Lease(memory.catalog, f"ingest:{scope}", ttl=1800.0) as lease:
        with (yield from wiki_pen(memory, False)), memory._lock:  # no deletion between the pages read and what they cite
            stale = []
            for key in memory.stale_pages():
                sc, _, slug = key[len("page:"):].rpartition("/")
                if sc != scope:
                    continue
                try:
                    found = memory.read_page(sc, slug)
                except PageFormatError:
                    continue  # listed in the report's corrupt; stays stale until the person mends the file
                if found is not None:
                    stale.append(found)
            days = _days(memory, _shown_ids(IngestBatch([], stale, {})))
            seen = set(days)
        if not stale:
            return report
        answer = list((yield IngestBatch([], stale, {}, days)))
        lease.renew()
        ahead = yield Embed(memory, pages=_rewrites_asked(stale, answer))  # off memory's thread, before it is locked
        lease.renew()
        with (yield from wiki_pen(memory, False)), memory.one_commit():  # no deletion between check and writes
            _write_rewrites(memory, stale, answer, seen, report, author, ahead)
    return report


def nightly_steps(memory: Memory, *, merge: Callable[[Page, Page], Page] | None = None, resynthesize: bool = False,
                  author: str = "agent:wiki-writer") -> Generator[IngestBatch | Embed, Any, NightlyReport]:
    """``run_nightly`` as steps: with ``resynthesize``, yields the stale pages (if any) and is sent their
    rewrites."""
    report = NightlyReport()
    with Lease(memory.catalog, "ingest", ttl=3600.0, excludes=("ingest:%",)):  # no scope's ingest under way either
        memory.finish_deletions()
        for scope in sorted(set(memory.scopes_on_disk()) | _page_scopes(memory)):
            pages, errors = memory.list_pages(scope)
            report.corrupt += errors
            for key in (title_key, _near_title):  # one page's files merged; then near titles proposed
                groups: dict[str, list[Page]] = {}
                for p in pages:
                    groups.setdefault(key(p.title), []).append(p)
                for group in groups.values():
                    if len(group) > 1:
                        _merge_group(memory, scope, group, merge, report, author)
                pages = memory.list_pages(scope)[0]
        if resynthesize:
            stale: list[Page] = []
            with memory._lock:  # no deletion comes between the pages read and the note of the sources they cite
                for key in memory.stale_pages():
                    sc, _, slug = key[len("page:") :].rpartition("/")
                    try:
                        found = memory.read_page(sc, slug)
                    except PageFormatError:
                        continue  # listed in report.corrupt above; stays stale until the person mends the file
                    if found is not None:
                        stale.append(found)
                days = _days(memory, _shown_ids(IngestBatch([], stale, {})))
                seen = set(days)
            if stale:
                answer = list((yield IngestBatch([], stale, {}, days)))
                ahead = yield Embed(memory, pages=_rewrites_asked(stale, answer))  # before memory is locked
                with memory.one_commit():  # no deletion comes between the check and the writes
                    _write_rewrites(memory, stale, answer, seen, report, author, ahead)
        for scope in sorted(set(memory.scopes_on_disk()) | _page_scopes(memory)):
            report.corrupt += [e for e in memory.refresh_index(scope) if e not in report.corrupt]
            report.reindexed_scopes.append(scope)
    return report


def _rewrites_asked(stale: list[Page], answer: list[Page | Exception]) -> list[Page]:
    """Of a nightly writer's answer, the rewrites of the ``stale`` pages it was asked for (``_write_rewrites`` writes
    those alone)."""
    asked = {(str(p.scope), p.slug) for p in stale}
    return [p for p in answer if isinstance(p, Page) and (str(p.scope), p.slug) in asked]


def _write_rewrites(memory: Memory, stale: list[Page], answer: list[Page | Exception], seen: set[str],
                    report: NightlyReport, author: str, ahead: Ahead) -> None:
    """Writes nightly's rewrites of the ``stale`` pages. One bad draft (a citation to a source deleted while the
    model wrote, say) or a failing model leaves its pages stale for the next night; the other pages and the index
    refresh still happen. Only the pages asked about are written, each once: a writer answering with other pages
    (hundreds of them, say) has them refused, and said, per scope. A source of the ``seen`` ones (the pages' cited
    sources) deleted while the model wrote had its words shown to it in the pages' claims: none is written then."""
    if seen - _stored(memory, seen):
        drafts = [p for p in answer if not isinstance(p, Exception)]
        report.rejected += [("re-synthesis", _DELETED_MEANWHILE.format(
            n=len(drafts), what="The pages stay to be rewritten next night."), sc) for sc in sorted({str(p.scope) for p in stale})]
        answer = [p for p in answer if isinstance(p, Exception)]
    asked = {(str(p.scope), p.slug) for p in stale}
    unasked: dict[str, list[str]] = {}
    for page in answer:
        if isinstance(page, DraftRefused):
            report.rejected.append((page.title, str(page), str(page.scope)))
            continue
        if isinstance(page, Exception):
            failed = page.scopes if isinstance(page, WriterFailed) else sorted({str(p.scope) for p in stale})
            report.rejected += [("re-synthesis", f"the wiki writer failed: {page}", sc) for sc in failed]
            continue
        if (str(page.scope), page.slug) not in asked:
            unasked.setdefault(str(page.scope), []).append(page.title)
            continue
        asked.discard((str(page.scope), page.slug))
        try:
            res = memory.write_page(page, author=author, ahead=ahead)
        except (CitationError, PageFormatError, ValueError) as e:
            report.rejected.append((page.title, str(e), str(page.scope)))
            continue
        report.left_out += [(page.title, line, why, str(page.scope)) for line, why in res.left_out]
        if res.status == "written":
            report.resynthesized.append(res.key)
        elif res.status == "proposed":
            report.proposed.append(res.key)
    for sc, titles in sorted(unasked.items()):
        shown = ", ".join(f"“{t}”" for t in titles[:3]) + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")
        report.rejected.append(("re-synthesis", f"the wiki writer answered {len(titles)} page(s) beyond the "
                                f"ones it was asked to rewrite ({shown}); they were not written", sc))


def _page_scopes(memory: Memory) -> set[str]:
    return {str(sc) for sc in memory.pages.scopes()}


def _merge_group(memory: Memory, scope: str, group: list[Page], merge: Callable[[Page, Page], Page] | None,
                 report: NightlyReport, author: str) -> None:
    """Merges the pages of ``group`` into its first (the person's verified page, else the one of the shortest file
    name, "dentist" before "dentists": the same each night, whichever an ingest wrote last, so a merge waiting for
    the person is never proposed the other way round beside it). A page of the same
    title (``title_key``) is merged and deleted at once; one of another title is merged only once the person
    approved it: the merged page is proposed (a proposal that says which page goes into it), and the next night,
    finding the page as approved, deletes the other. A verified page is deleted only so, once the person approved
    the merge that names it (of the same title too: its merge is proposed naming it). Links to the page merged away
    open the kept page."""
    group.sort(key=lambda p: (not p.verified, len(p.slug), p.slug))
    keep = group[0]
    for other in group[1:]:
        ask = title_key(keep.title) != title_key(other.title)
        merged = merge(keep, other) if merge else _append_merge(keep, other)
        merged = Page(keep.title, keep.scope, merged.category, merged.body, merged.citations,
                      verified=keep.verified, extra=merged.extra)
        named = f"{author} (merging “{other.title}” into this page)"
        try:
            res = memory.write_page(merged, author=named if ask or other.verified else author, propose=ask)
        except (CitationError, PageFormatError, ValueError) as e:
            report.rejected.append((keep.title, str(e), scope))
            continue
        report.left_out += [(keep.title, line, why, scope) for line, why in res.left_out]
        # "unchanged": the page already holds what the duplicate said (a merge the person approved: for pages of
        # other titles, only that, found among the approved proposals; a page that merely happens to hold the
        # other's lines, verified or not, is no approval)
        approved = res.status == "unchanged" and _merge_approved(memory, keep, named)
        done = res.status == "written" or approved or (res.status == "unchanged" and not ask)
        if done and (approved or not other.verified):  # a verified page goes only by the merge she approved
            memory.delete_page(scope, other.slug)
            memory.relink_merged(scope, other.slug, keep)
            report.merged.append((keep.key, other.key))
        elif res.status == "proposed":
            report.proposed.append(res.key)
        reread = memory.read_page(scope, keep.slug)
        keep = reread if reread is not None else keep


def _merge_approved(memory: Memory, keep: Page, author: str) -> bool:
    """Whether the person approved the merge proposed by ``author`` into ``keep`` (a proposal of that page, by that
    author, approved)."""
    return any(p.scope == str(keep.scope) and p.slug == keep.slug and p.author == author
               for p in memory.proposals("approved"))


def _append_merge(a: Page, b: Page) -> Page:
    """Deterministic merge: b's lines that a does not already hold (the same text citing the same sources: a
    nightly killed after writing a merge and before deleting the page merged in does it again) are appended, its
    citations renumbered after a's."""
    offset = max(a.citations, default=0)
    have = {as_claim(line, a.citations) for line in a.body.split("\n")}
    # b's headings stay (a new line keeps its own section), the lines a already holds go, then any heading left
    # over nothing
    lines = [line for line in b.body.split("\n")
             if is_heading(line) or not line.strip() or as_claim(line, b.citations) not in have]
    body_b = without_empty_sections(CITE.sub(lambda m: f"[{int(m.group(1)) + offset}]", "\n".join(lines))).strip()
    if not any(holds_something(line) for line in body_b.split("\n")):
        body_b = ""
    if not body_b:
        return a
    cites = dict(a.citations)
    cites.update({n + offset: s for n, s in b.citations.items()})
    return Page(a.title, a.scope, a.category, a.body.rstrip() + "\n\n" + body_b, cites, verified=a.verified, extra=a.extra)


__all__ = [
    "Decision", "Embed", "IngestBatch", "IngestReport", "LeaseBusy", "NightlyReport", "ProducerReport", "Wait",
    "Watermark",
    "DraftRefused", "WriterFailed", "drive", "failure_told", "get_watermark", "ingest_steps", "nightly_steps",
    "producer_steps", "run_ingest", "run_nightly",
    "run_producer",
]
