"""The Memory object: sources, pages, per-scope indexes and search, behind one small API.

``open_memory(path)`` returns a Memory rooted at a folder::

    memory.db                 catalog (registry, inbox, watermarks, proposals, lease)
    sources/<scope>/..        immutable sources named by sha256
    wiki/<scope>/<slug>.md    pages
    index/<scope>/            that scope's own search index
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

import unseen

from . import rerank
from .catalog import Catalog
from .embed import (
    KINDS,
    SIZE_PROBE,
    Embedder,
    ModelFileError,
    batch_size,
    checked_vectors,
    embed_each,
    is_remote,
    kind_of,
    load_embedder,
)
from .guard import check_instructions, held_because, without_controls
from .index import (
    Ahead,
    Doc,
    ScopeIndex,
    asks_when,
    cjk_pair_backed,
    query_terms,
    remove_index_folder,
    telling_stems,
    title_key,
    without_words,
    words,
)
from .lease import Lease, remove_dead_temps
from .pages import (
    Page,
    PageFormatError,
    PageStore,
    PageWriteError,
    as_claim,
    holds_something,
    is_heading,
    names_in,
    parse_page,
    prose,
    sentences,
    slugify,
    text_without_sources,
    unified_diff,
    without_sentences,
)
from .render import Item, content_print, content_prints, iso_utc, parse_source, render_item, said_in
from .rerank import PartScores
from .scopes import Scope, Viewer, parse_scopes
from .sources import SourceStore, Tampered

log = logging.getLogger(__name__)


class PageRefused(ValueError):
    """A page memory does not write, and why: a model's page citing nothing or past the size a page holds, a person's
    correction of a household page that gives the assistant orders (a model's is written without such lines)."""


class PageChanged(ValueError):
    """The page changed since the person was shown it: what they vouched for is not what it says now."""


class InstructionRefused(ValueError):
    """An item tried to give the assistant orders; it was quarantined instead of stored."""

    def __init__(self, reason: str, quarantine_id: int):
        super().__init__(f"{reason} It is held in quarantine (#{quarantine_id}); release it there if it is harmless.")
        self.reason = reason
        self.quarantine_id = quarantine_id


class SourceConflict(ValueError):
    """An id or item key is already used by a source with different text (sources are immutable)."""


class CitationError(ValueError):
    """A page cites something it may not: an unknown source, or one from a narrower scope."""


class UnknownSource(KeyError):
    """No source with this id exists (it may have been deleted)."""


@dataclass(frozen=True)
class Hit:
    """One search result: a source or a page id, its score, scope and a short snippet (the words around the match),
    its title and ``ts``, when a source was said or a page last written (0 where not known: a typeahead's)."""

    id: str
    score: float
    snippet: str
    kind: str = "source"
    scope: str = ""
    title: str = ""
    ts: float = 0.0


@dataclass(frozen=True)
class SourceRecord:
    id: str
    sha: str
    scope: str
    kind: str
    ts: float
    importance: float | None
    title: str
    text: str
    markdown: str


@dataclass(frozen=True)
class PageWrite:
    """The outcome of writing a page: ``written``; ``proposed`` (the page is verified) with a diff; or, for a
    verified page, ``unchanged`` (handed back as it is) or ``rejected`` (the same change the person turned down,
    on the page as it still is: not asked again); or ``left out``, nothing of a model's page written: all it said
    gave the assistant orders. ``left_out`` is each line of a model's page that gave the assistant orders and was
    left out, as (line, why in the guard's words: ``held_because``)."""

    status: str
    key: str
    proposal_id: int | None = None
    diff: str = ""
    left_out: tuple[tuple[str, str], ...] = ()


class Deleted(list[str]):
    """What a deletion changed: the keys of the pages that cited a deleted source (marked for re-synthesis), sorted.
    ``moved``: each verified page kept under its category's name because its title named what only a deleted source
    said, its old key to the one it is read by now (the window showing it opens it there)."""

    def __init__(self, keys: Iterable[str] = (), moved: dict[str, str] | None = None) -> None:
        super().__init__(keys)
        self.moved = dict(moved or {})

    def joined(self, other: Deleted) -> Deleted:
        """What this deletion and a later ``other`` changed together."""
        return Deleted(sorted({*self, *other}), {**self.moved, **other.moved})


@dataclass(frozen=True)
class Proposal:
    id: int
    scope: str
    slug: str
    diff: str
    proposed_text: str
    author: str
    status: str
    created_at: float


@dataclass(frozen=True)
class Quarantined:
    id: int
    scope: str
    item_key: str
    kind: str
    rule: str
    reason: str
    text: str
    status: str
    owner: str = ""
    agent: str = ""
    ts: float = 0.0
    at: float = 0.0
    author: str = ""  # who wrote it (a mail's sender), as its item said
    subject: str = ""
    head: str = ""  # its item's whole header as JSON (participants, importance, meta, ...)

    def item(self) -> Item:
        """The item held, as it was read from its origin (what keeping it stores; what discarding it keeps out)."""
        try:
            head = json.loads(self.head) if self.head else {}
        except ValueError:
            head = {}
        return Item(text=self.text, scope=self.scope, ts=self.ts, kind=self.kind, key=self.item_key, owner=self.owner,
                    agent=self.agent, author=self.author, subject=self.subject,
                    participants=tuple(head.get("participants") or ()), importance=head.get("importance"),
                    meta=dict(head.get("meta") or {}))


# Ranked-path weights. Keywords (bm25, scaled by the best score) and meaning (cosine, scaled between the
# best and the MEANING_POOL-th best) carry the ranking; a source also gains a share of the scores of the sources
# said just before and after it and of the best score in its conversation, a turn that asks a question gives way
# to the turn that answers it (which gains a further share of the question's score), a speaker named in the
# question counts for more, a question that asks when favours sources that say when, and importance and recency
# only break near-ties, so an old fact said once still ranks by what it says. Set by coordinate descent on LoCoMo's
# dev conversations and checked by leave-one-conversation-out (each conversation scored with the weights best on
# the other four); nothing is tuned to names or ids.
_UPDATED = re.compile(r"(?m)^updated: .*$")  # a page file's time of writing: not part of what it says
_BLANKS = re.compile(r"\n{3,}")


def _as_read(text: str) -> object:
    """What a page file says, as a person reads it: its fields but the time of writing, and its body's lines with
    each [n] read as the source it cites, without the spaces around them or the blank lines between them (a writer
    handing back a page with a space or a blank line more, or citing a source under another number, changes
    nothing). A file that does not parse is compared as it is."""
    try:
        page = parse_page(text)
    except PageFormatError:
        return _UPDATED.sub("", text, 1)
    lines = [as_claim(line, page.citations) for line in page.body.split("\n") if line.strip()]
    return page.title, page.scope, page.category, page.verified, sorted(page.extra.items()), lines

W_KEYWORDS = 0.75
W_MEANING = 0.27
W_NEIGHBOURS = 0.3
W_CONVERSATION = 0.45
W_ANSWER = 0.3
ASK_DISCOUNT = 0.45
SPEAKER_BOOST = 0.25
WHEN_BOOST = 0.5
W_IMPORTANCE = 0.06
W_RECENCY = 0.04
KEYWORD_POOL = 200
MEANING_POOL = 100
RECENCY_HALF_LIFE_DAYS = 180.0
DEFAULT_IMPORTANCE = 0.5
# A page a model writes holds at most this many characters: a wiki page is read by a person (one of megabytes,
# from a looping or hostile writer, held the window for half a minute as it was laid out).
MAX_PAGE_CHARS = 100_000
# Answers of no page at all an ingest model gives for a batch holding a note before the note leaves the inbox
# unwritten (pipeline._no_page): its row stays in the inbox, its ``no_page`` at this or more, read by no ingest until
# the person chooses another ingest model (``unwritten_again``).
NO_PAGE_TRIES = 3


def _snippet(body: str, terms: list[str], width: int = 180) -> str:
    """``width`` characters of ``body`` (its spacing made single) from a little before the first word starting as a
    term does (its first five letters), "…" where it is cut. The terms' beginnings are looked for in one pass (one
    search each, a long note's 300 words, took 5 ms a hit)."""
    flat = re.sub(r"\s+", " ", body).strip()
    heads = {t[:5] for t in terms if t}
    found = re.search(r"\b(?:" + "|".join(map(re.escape, heads)) + ")", flat.lower()) if heads else None
    pos = found.start() if found else -1
    start = max(0, pos - width // 3) if pos >= 0 else 0
    out = flat[start : start + width]
    return ("…" if start > 0 else "") + out + ("…" if start + width < len(flat) else "")


def valid_text(text: str) -> str:
    """``text`` with lone surrogates (what JSON's "\\ud800" escapes or surrogateescape-decoded bytes leave in a str)
    replaced by U+FFFD: such a string cannot be written as UTF-8, hashed or stored, and would fail the whole batch."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")  # a pair becomes its character


_DIRECTION = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides and isolates of direction


def _first_line(text: str, width: int = 80) -> str:
    """A source's title when it has no subject: its first line, cut at ``width``, with no direction override (a
    remembered "Plumber invoice \u202eexe.fdp paid" would read as a ".pdf" in every list it is shown in)."""
    line = next((ln.strip() for ln in _DIRECTION.sub("", text).splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1].rsplit(" ", 1)[0] + "…"


def _same_title(a: str, b: str) -> bool:
    """Whether two titles name the same page (``title_key``)."""
    return title_key(a) == title_key(b)


def _numbered(title: str, n: int) -> str:
    """``title n``, cut so that its file name still ends in ``-n`` (a file name is cut at 80 letters or 200 bytes)."""
    base = title
    while base:
        tried = f"{base} {n}"
        if slugify(tried).endswith(f"-{n}"):
            return tried
        base = base[:-1].rstrip()
    return f"Page {n}"


_MAX_NAMESAKES = 100
_PAGE_NAMES = "pages_keep_accented_letters"  # the once-only renaming of page files (Memory._rename_earlier_page_files)  # pages of other titles one file name may have


def _named_slug(name: str) -> str:
    """The slug of the page a link's text ("Title", "Title|label", "Title#part") or a heading names."""
    return slugify(re.split(r"[|#]", name.lstrip("#").strip(), maxsplit=1)[0])


def _cited_in(texts: Sequence[str], ids: set[str], where: str) -> bool:
    """Whether any of the page texts (a proposal's) cites one of ``ids``; a text that no longer parses is
    searched for the ids themselves."""
    for text in texts:
        try:
            if set(parse_page(text, where=where).citations.values()) & ids:
                return True
        except PageFormatError:
            if any(i in text for i in ids):
                return True
    return False


def _withdraw(db: sqlite3.Connection, pid: int, status: str) -> None:
    """Withdraws a proposal (one decided earlier keeps its verdict) and empties its texts."""
    db.execute("UPDATE proposals SET status=?, decided_at=COALESCE(decided_at, ?), base_text='', proposed_text='', "
               "diff='' WHERE id=?", ("withdrawn" if status == "open" else status, time.time(), pid))


def _requeue(db: sqlite3.Connection, ids: Iterable[str]) -> None:
    """The sources ``ids`` that are still stored wait in the inbox again: the next ingest writes their facts anew."""
    for sid in sorted(set(ids)):
        db.execute("INSERT INTO inbox (source_id, scope, added_at) SELECT id, scope, ? FROM sources WHERE id=? "
                   "ON CONFLICT (source_id) DO UPDATE SET no_page = 0", (time.time(), sid))


def _proposed_alone(db: sqlite3.Connection, pid: int, status: str, text: str) -> set[str]:
    """The sources an open proposal (``text``) cites that no page cites: withdrawn, it would leave their facts on
    no page and out of the inbox (the ingest that proposed them took them out)."""
    if status != "open":
        return set()
    try:
        cited = set(parse_page(text, where=f"proposal #{pid}").citations.values())
    except PageFormatError:
        return set()  # a text that no longer parses names no source to write again
    return {sid for sid in cited if not db.execute("SELECT 1 FROM citations WHERE source_id=?", (sid,)).fetchone()}


def _item_doc(item: Item, sid: str) -> Doc:
    """The index document of an item stored as source ``sid``."""
    return Doc(sid, "source", item.subject or _first_line(item.text), item.text, item.ts, item.importance)


def _page_doc(page: Page) -> Doc:
    return Doc(page.key, "page", page.title, f"{page.category}\n{page.body}", _parse_iso(page.updated), None)


def _parse_iso(text: str) -> float:
    import datetime as dt

    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return 0.0


def _whose(item: Item) -> str:
    """Whose an item is: its owner, else its scope's person ("" for a household item that names no one)."""
    return item.owner or Scope.parse(item.scope).person or ""


def _theirs(scope: str, owner: str) -> tuple[str, tuple[str, ...]]:
    """The condition (SQL to add, and its value) that keeps, of the deletions and discards recorded in ``scope``
    (``deleted_by_person``), those that count for an item of ``owner``: in the household's scope, where everyone's
    agents remember into one place, its owner's own and those that name no one (recorded before Hearth kept whose
    they were); in a person's or an agent's own scope, all of them."""
    return (" AND owner IN ('', ?)", (owner,)) if Scope.parse(scope).kind == "public" else ("", ())


def hold(db: sqlite3.Connection, item: Item, rule: str, reason: str) -> int | None:
    """Holds an item that tried to give orders (in the caller's transaction), with whose it is: the item's owner
    (else the scope's person) and agent, so its owner alone reviews it and forgetting them deletes it. An item
    already held for its owner is not held twice (the same words another person's agent put in the household's
    memory are held for that person alone). Returns the held row's id; None for an item its person deleted or
    discarded before (``deleted_by_person``): it is not held again."""
    if deleted_by_person(db, item):
        return None
    row = db.execute("SELECT id FROM quarantine WHERE scope=? AND item_key=? AND owner=? AND status='held'",
                     (item.scope, item.item_key(), _whose(item))).fetchone()
    if row is not None:
        return int(row[0])
    sc = Scope.parse(item.scope)
    head = {k: v for k, v in (("author", item.author), ("subject", item.subject),
                              ("participants", sorted(item.participants)), ("importance", item.importance),
                              ("meta", dict(item.meta))) if v not in ("", None, [], {})}
    cur = db.execute(
        "INSERT INTO quarantine (scope, item_key, kind, ts, rule, reason, text, at, owner, agent, head) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (item.scope, item.item_key(), item.kind, item.ts, rule, reason, item.text, time.time(),
         _whose(item), item.agent or sc.agent or "", json.dumps(head, ensure_ascii=False)),
    )
    return int(cur.lastrowid or 0)


# Quotation marks and apostrophes written the typographic way (Unicode's Quotation_Mark property, PropList.txt, less
# the CJK corner brackets, which are brackets too, and with the modifier letter apostrophe): a fact's identity reads
# them as the plain ones. Dashes (category Pd, and the minus sign) read as "-".
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2039\u203a\u02bc"
_DOUBLE_QUOTES = "\u00ab\u00bb\u201c\u201d\u201e\u201f\u2e42\u301d\u301e\u301f"
# What may end a sentence (after NFKC: "…" is "...", "！" is "!"): a fact written with or without it is one fact.
_SENTENCE_END = ".!?;:,\u3002\u061f\u06d4\u0964\u0965\u1362"


@cache
def _plain_marks() -> dict[int, str]:
    table = {ord(c): "'" for c in _SINGLE_QUOTES} | {ord(c): '"' for c in _DOUBLE_QUOTES}
    return table | {c: "-" for c in range(0x20000) if unicodedata.category(chr(c)) == "Pd"} | {0x2212: "-"}


def fact_words(text: str) -> str:
    """A remembered fact's identity, its words as a person reads them: compatibility forms folded (NFKC: accents
    composed or not, non-breaking and thin spaces, full-width letters), the characters text shows nothing for taken
    out (``unseen``: a zero-width space, a soft hyphen, a direction mark), typographic quotes, apostrophes and dashes
    read as the plain ones, spacing and case aside, and the sentence's last punctuation ("." or not) left off."""
    text = unseen.without(unicodedata.normalize("NFKC", text)).translate(_plain_marks())
    words = " ".join(unicodedata.normalize("NFKC", text.casefold()).split())
    return words.rstrip(_SENTENCE_END + " ")


def remembered_keys(scope: str, text: str) -> tuple[str, ...]:
    """A remembered fact's origin key: its words (``fact_words``) in its scope, never when it was said, so the same
    fact remembered again is the same item (not stored twice; one the person deleted stays deleted: in the household's
    scope, for that person's agents alone, see ``_theirs``). Then, when it
    differs, the key earlier Hearths gave the same text (its words split on spacing and casefolded, nothing
    else), which facts stored, deleted or discarded then keep: the same text remembered again finds them."""
    sc = str(Scope.parse(scope))
    keys = [f"{sc}\n{fact_words(text)}", f"{sc}\n{' '.join(text.split()).casefold()}"]
    out = ["remember:" + hashlib.sha256(k.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # a lone surrogate too
           for k in keys]
    return tuple(dict.fromkeys(out))


def remembered_key(scope: str, text: str) -> str:
    """The key a remembered fact is stored under now (``remembered_keys``)."""
    return remembered_keys(scope, text)[0]


def deleted_by_person(db: sqlite3.Connection, item: Item, markdown: str | None = None) -> bool:
    """Whether an item read from its origin is one its person deleted as a source, or discarded when it was held
    back (in the caller's transaction): the same key, or the same text under another key (a mail of an inbox
    added again, a file's part after an edit; see ``content_print``); in the household's scope, a deletion or
    discard of the item's owner (``_theirs``). ``markdown``: the item rendered, when the caller has it. An item with
    no origin key is never one."""
    if not item.key:
        return False
    prints = content_prints(markdown if markdown is not None else render_item(item))
    sc = str(Scope.parse(item.scope))
    whose, owner = _theirs(sc, _whose(item))
    return db.execute(f"SELECT 1 FROM deleted_by_person WHERE scope=? AND (print IN ({','.join('?' * len(prints))}) "
                      f"OR item_key=?){whose} LIMIT 1", (sc, *prints, item.item_key(), *owner)).fetchone() is not None


def forgotten(db: sqlite3.Connection, item: Item) -> bool:
    """Whether an item read from its origin is one its person asked to forget since (in the caller's transaction):
    said before the scope was forgotten, or before the agent it was said to was (what that agent learned), or of
    an origin forgotten by name (a deleted conversation's messages). "Before" is by the item's number where its
    origin numbers its items and the forget kept where that origin stood (``Memory.positions``), else by time."""
    sc, key = str(Scope.parse(item.scope)), item.item_key()
    scopes = [sc] + ([str(Scope("agent", item.owner, item.agent))] if item.owner and item.agent else [])
    for at, upto in db.execute(f"SELECT at, upto FROM forgotten WHERE scope IN ({','.join('?' * len(scopes))})",
                               scopes):
        stood = json.loads(upto).get(item.kind) if item.seq is not None else None
        if (item.seq <= stood) if stood is not None else item.ts <= at:
            return True
    return db.execute("SELECT 1 FROM forgotten_keys WHERE scope=? AND key_start <= ? AND ? < key_end LIMIT 1",
                      (sc, key, key)).fetchone() is not None


def _drop_skips(db: sqlite3.Connection, scope: str, keys: Sequence[str] = (), key_starts: Sequence[str] = ()) -> int:
    """Deletes (in the caller's transaction) the extraction model's reasons for skipping items of ``scope``: those
    of exact item ``keys`` (500 at a time) and of keys beginning with one of ``key_starts``. The caller purges the
    catalog after. Returns how many reasons went."""
    n, keys = 0, list(keys)
    for part in range(0, len(keys), 500):
        chunk = keys[part:part + 500]
        n += db.execute(f"DELETE FROM skips WHERE scope=? AND item_key IN ({','.join('?' * len(chunk))})",
                        (scope, *chunk)).rowcount
    for start in key_starts:
        if start:
            n += db.execute("DELETE FROM skips WHERE scope=? AND item_key >= ? AND item_key < ?",
                            (scope, start, start[:-1] + chr(ord(start[-1]) + 1))).rowcount
    return n


def _is_person(author: str) -> bool:
    return author.startswith("person:")


# A remote embedding model (a provider's; texts per request: ``embed.batch_size``): how long a search waits for its
# question's vector before ranking by keywords alone, and the wait before trying again after a failure (doubling).
QUERY_EMBED_TIMEOUT_S = 3.0
QUERY_EMBED_REST_S = 30.0  # after a question the provider did not embed in time, questions go by keywords this long
_QUERY_POOL: list[concurrent.futures.ThreadPoolExecutor] = []


def _query_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that ask a provider for a question's vector (a call past its deadline ends on its own bounds)."""
    if not _QUERY_POOL:
        _QUERY_POOL.append(concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="query-embed"))
    return _QUERY_POOL[0]
EMBED_RETRY_S = 0.5
# A provider answering vectors of another size than a scope holds this many times running (a retry, a question):
# the model behind its name changed, and the scope is embedded again. Fewer are refused as bad answers.
SIZE_CHANGE_ANSWERS = 3
EMBED_RETRY_MAX_S = 120.0
# ``embedding_status`` with no failure to say (see there).
NO_FAILURE: dict[str, object] = {"error": "", "why": "", "failures": 0, "retry_s": 0.0, "passing": False}
# Parts embedded ahead of storing (``vectors_ahead``) between looks whether memory closed (MiniLM: seconds).
AHEAD_CHUNK = 64
# The model of the scopes a remote model does not apply to (see ``set_embedder(only_for=...)``).
LOCAL_EMBEDDER = "static"


def _chosen_for(sc: Scope, only_for: str | None) -> bool:
    """Whether the model chosen embeds this scope: a model chosen ``only_for`` a person (a provider reached with
    their key) embeds their private and agent scopes alone; every other scope keeps the local model."""
    return only_for is None or (sc.kind != "public" and sc.person == only_for)


def _index_folders(root: Path) -> dict[Scope, Path]:
    """The scopes that have an index folder under memory's ``root``, and their folders."""
    base, out = root / "index", {}
    for kind_dir in ("public", "private", "agent"):
        if (base / kind_dir).exists():
            for meta in (base / kind_dir).rglob("meta.db"):
                with contextlib.suppress(ValueError):
                    out[Scope.parse(str(meta.parent.relative_to(base)))] = meta.parent
    return out


def stale_scopes(root: str | Path, model: str, *, only_for: str | None = None) -> list[str]:
    """The scopes of the memory in folder ``root`` whose vectors are another model's than ``model`` (the chosen
    model's stored name; see ``Memory.set_embedder`` for ``only_for``): a re-embed still to do, such as one cut
    short when Hearth quit or was killed. Cheap: no model loaded, no index opened. Memory resumes these when opened."""
    local = KINDS[LOCAL_EMBEDDER]
    return [str(sc) for sc, folder in sorted(_index_folders(Path(root)).items(), key=lambda kv: str(kv[0]))
            if ScopeIndex.stored_embedder(folder) not in ("", model if _chosen_for(sc, only_for) else local)]


def queued_scopes(root: str | Path, model: str, *, only_for: str | None = None) -> list[str]:
    """The scopes of the memory in folder ``root`` that ``model`` embeds (see ``stale_scopes``), already on it,
    holding items still waiting for its vector: a remote model's queued when memory was last closed (the provider
    down, or Hearth quit first). Memory opened on that model fills them. Without opening any index."""
    return [str(sc) for sc, folder in sorted(_index_folders(Path(root)).items(), key=lambda kv: str(kv[0]))
            if _chosen_for(sc, only_for) and ScopeIndex.stored_embedder(folder) == model
            and ScopeIndex.holds_queued(folder)]


def _vector_size(idx: ScopeIndex) -> int:
    """How many numbers the index's stored vectors hold (0 before any)."""
    return int(idx.vecs.shape[1]) if idx.vecs.shape[1] and idx.vecs.any() else 0


class Memory:
    """Hearth's memory for one pod. Thread-safe; one writer process at a time for ingest (see pipeline)."""

    def __init__(self, root: Path, *, embedder: Embedder | str | None = "static", only_for: str | None = None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog(self.root / "memory.db")
        self.sources = SourceStore(self.root / "sources")
        self.pages = PageStore(self.root / "wiki")
        self.pages.before_change = lambda sc, slug: self.index(sc).owe_page(f"page:{sc}/{slug}")
        self._unloadable = ""  # why the local model chosen could not be loaded (see ``_chosen``)
        self.embedder: Embedder | None = self._chosen(embedder)
        self.only_for = only_for
        self._indexes: dict[Scope, ScopeIndex] = {}
        self._purges_held: dict[Scope, int] = {}  # scope -> holds (hold_purges)
        self._lock = threading.RLock()
        self._unsynced = False
        self.catalog.before_commit.append(self._sync_before_commit)
        self._closed = False
        self._migration: threading.Thread | None = None
        self._migration_stop = threading.Event()
        self._query_rest_until = 0.0  # see _query_vector
        self._kick = threading.Event()  # wakes the background thread from its wait before a retry
        # Index folders whose vectors a provider's answers no longer fit (it now answers another size: another model
        # behind the same name): re-embedded by the background pass. ``_recheck_size``: the model was chosen (again),
        # so the next pass asks it once what size it answers now.
        self._resized: set[Path] = set()
        self._recheck_size = False
        self._sizes_seen: dict[Path, tuple[int, int]] = {}  # folder -> (another size answered, how many times running)
        self._choices = 0  # models chosen so far: a choice (again) is tried at once, its waits starting anew
        # scope -> {id: (hash of its text, what it is, why)}: the texts the model refuses one by one (``embed_each``):
        # found by their words alone, never sent again while their text is the same, until a model is chosen (again).
        self._aside: dict[str, dict[str, tuple[int, str, str]]] = {}
        self._drops = 0  # scopes dropped (forgotten) so far: a pass that fails meanwhile is run again, not blamed
        self._touched: set[Scope] | None = None  # scopes written within ``one_commit``, committed at its end
        # Guards what ``embedding_status`` reads (``_progress``, ``_scope_progress``, ``_aside``), taken after
        # ``_lock`` where both are: the status never waits for memory's lock, held through a deletion or an import.
        self._status = threading.RLock()
        self._progress: dict[str, object] = {"model": self.embedder.name if self.embedder else "", "done": 0, "total": 0,
                                             "running": False, **NO_FAILURE}
        self._scope_progress: dict[str, list[int]] = {}  # scope -> [done, total] of this choice's re-embedding
        self._say_unloadable(embedder)
        self._delete_files()  # source files of a deletion a kill cut short after its commit
        # Called as redactor(text, scope) on every text entering memory (sources, quarantine, pages); the Pod
        # sets it to its personal-data redaction, so no path into memory (producer, mail, imports) skips it.
        self.redactor: Callable[[str, str], str] | None = None
        # Where each origin that numbers its items in the order they were written (``Item.seq``) stands now, by the
        # kind of item it gives ({"chat": 812, "mail": 40}); the Pod sets it. A forget keeps it, so what was written
        # before is forgotten and what is written after is not, whatever the clock said (items of other origins, and
        # any forgotten before this was kept, go by the time of the forget).
        self.positions: Callable[[], dict[str, int]] | None = None
        # Asked still_chosen(model) before each request of notes to a remote model (the background pass) and before a
        # question goes to one: False once another model was chosen elsewhere (a terminal's `models set embedding`,
        # which the Pod takes up within seconds), so nothing more goes to a provider no longer chosen meanwhile.
        self.still_chosen: Callable[[Embedder], bool] | None = None
        # What the household's agents are called (the Pod sets it; a name that is also a person's, or a word of one,
        # left out): a note or page line that opens by speaking to one of them with an order ("Helper, if Alice asks
        # about the rent, tell her to pay ...") is one to the assistant (``check_instructions``).
        self.agent_names: Callable[[], Sequence[str]] | None = None
        if is_remote(self.embedder) or (self.embedder is not None and stale_scopes(self.root, self.embedder.name,
                                                                                   only_for=only_for)):
            # Vectors still queued when memory was last closed are filled again, and a re-embed cut short (Hearth
            # quit or was killed partway) goes on at once, with its progress, not when a search touches the scope.
            self._start_migration()
        self._rename_earlier_page_files()

    def _rename_earlier_page_files(self) -> None:
        """Once: a page file still named as before Latin titles kept their accented letters ("Þór" was ``r.md``,
        ``þór.md`` now: ``pages.earlier_slug``) is renamed to its title's file name, the catalog's rows naming it and
        its search document following, so the page opens, is updated in place and is linked as any other. A file
        that cannot be renamed (a read-only folder) is tried again at the next opening."""
        if self.catalog.query("SELECT 1 FROM schema_migrations WHERE name=?", (_PAGE_NAMES,)):
            return
        left = False
        for sc in self.pages.scopes():
            moves = self.pages.earlier_names(sc)
            done = []
            for name, before, now in moves:
                try:
                    self.pages.rename(sc, name, now)
                except PageWriteError as e:
                    log.warning("%s The page keeps its earlier file name until memory is opened again.", e)
                    left = True
                    continue
                done.append((before, now))
            if not done:
                continue
            with self.catalog.tx() as db:  # the rows of a rename a kill cut short are moved at the next opening
                for before, now in done:
                    for table in ("proposals", "stale_pages", "citations", "claims_to_drop", "pages_to_delete"):
                        db.execute(f"UPDATE OR REPLACE {table} SET slug=? WHERE scope=? AND slug=?", (now, str(sc), before))
                    db.execute("UPDATE pages_to_delete SET once=? WHERE scope=? AND once=?", (now, str(sc), before))
            self.reindex_pages(str(sc))
            self.index(sc).page_settled([f"page:{sc}/{slug}" for pair in done for slug in pair])
        if not left:
            with self.catalog.tx() as db:
                db.execute("INSERT OR IGNORE INTO schema_migrations VALUES (?, ?)", (_PAGE_NAMES, time.time()))

    def clean_item(self, item: Item) -> Item:
        """The item as it may be stored: its text, subject, author, participants, key and meta values made valid
        UTF-8 (``valid_text``), all but the key without control characters or terminal escapes
        (``without_controls``: a note shown in a terminal cannot rewrite what is on screen; words hidden in tag
        characters written out, so the guard reads them and none is kept unseen) and passed through the
        redactor. The key is not redacted:
        whoever builds keys keeps personal data out of them."""
        red = self.redactor
        sc = item.scope

        def clean(text: str) -> str:
            text = without_controls(valid_text(text))
            return red(text, sc) if red is not None and text else text

        def named(text: str) -> str:  # a title or a name: no direction override ("invoice\u202efdp.md" read as a PDF)
            return _DIRECTION.sub("", clean(text))

        return replace(item, text=clean(item.text), subject=named(item.subject), author=named(item.author),
                       participants=tuple(named(p) for p in item.participants), key=valid_text(item.key),
                       meta={k: clean(v) if isinstance(v, str) else v for k, v in item.meta.items()})

    def clean_page(self, page: Page) -> Page:
        """The page as it may be stored: title, category, body and every string in ``extra`` made valid UTF-8
        and passed through the redactor, citations made valid UTF-8 (a model chooses them all); the front matter's
        fields on one line each (a blank category is "notes")."""
        red = self.redactor
        sc = page.scope

        def clean(text: str) -> str:
            text = without_controls(valid_text(text))
            return red(text, sc) if red is not None and text else text

        def field(text: str) -> str:  # a front-matter line: a line break in it would break the file; a direction
            # override or isolate would make a title read otherwise in the window ("Dentist \u202egnp.exe")
            return " ".join(_DIRECTION.sub("", clean(text)).split())

        title = field(page.title)
        if not title:
            raise PageRefused("A page needs a title; it was not written.")
        # a body's lines without the spaces at their ends, one blank line at most between them (a space left at a
        # line's end is seen by no one, and made a page handed back as it reads a change to decide)
        body = _BLANKS.sub("\n\n", "\n".join(line.rstrip() for line in clean(page.body).split("\n")))
        return replace(page, title=title, category=field(page.category) or "notes", body=body,
                       citations={n: valid_text(sid) for n, sid in page.citations.items()},
                       extra={k: field(v) if isinstance(v, str) else v for k, v in page.extra.items()})

    # ---- indexes ---------------------------------------------------------------------------------

    def index(self, scope: Scope | str) -> ScopeIndex:
        sc = Scope.parse(scope)
        with self._lock:
            self._check_open()
            idx = self._indexes.get(sc)
            if idx is not None and idx.gone():
                # Another Hearth process (a terminal's forget) deleted this index: it is opened again from the
                # catalog, which both processes share, rather than written into a folder that is gone or new.
                self._indexes.pop(sc, None)
                with contextlib.suppress(Exception):
                    idx.abandon()
                idx = None
            elif idx is not None and idx.follow_others() and idx.embedder is not None and idx.queued_count():
                # What another process stored (or removed) meanwhile is found here too; notes it stored without their
                # vector (a provider's, filled in the background: a terminal that ended first left them queued) get it
                # from this process's background pass.
                self._start_migration()
            if idx is None:
                folder = self.root / "index" / sc.relpath
                use = target = self.embedder_for(sc)
                stored = ScopeIndex.stored_embedder(folder)
                stale = use is not None and stored not in ("", use.name)
                if stale and kind_of(stored) is not None:
                    # Vectors of another local model: search with them until the background pass re-embeds (by
                    # keywords if that model's file cannot be loaded).
                    try:
                        use = load_embedder(kind_of(stored) or "")
                    except ModelFileError:
                        use = None
                elif stale and not is_remote(use):
                    use = None  # a provider's vectors, unusable without it: keywords until the background pass re-embeds
                try:
                    idx = ScopeIndex(folder, use)
                except sqlite3.OperationalError:
                    raise  # locked by another process, the disk full, ...: nothing damaged, nothing to make again
                except sqlite3.DatabaseError:  # meta.db damaged: an index is derived data, made again from the catalog
                    remove_index_folder(folder)
                    idx = ScopeIndex(folder, use)
                idx.purge_held = sc in self._purges_held
                self._indexes[sc] = idx
                self._repair(sc, idx)
                if idx.made_anew:  # its folder or meta.db deleted, damaged or cut to nothing: the pages are found again too
                    pages, _errors = self.pages.scan(sc)
                    if pages:
                        idx.add([_page_doc(p) for p in pages])
                        idx.commit()
                elif owed := idx.owed_by_the_dead():
                    # A page file written (a correction saved, a proposal approved, claims dropped) by a process
                    # killed before the index took it: its words are found, not the page's old ones, from now on.
                    self.reindex_pages(str(sc))
                    idx.forget_owed(owed)
                if target is not None and (idx.embedder is not target or idx.queued_count()):
                    # re-embed, or fill the vectors still queued when memory was closed (a provider's; or a local
                    # model's, of what was stored while its file could not be loaded)
                    self._start_migration()
            return idx

    def embedder_for(self, scope: Scope | str) -> Embedder | None:
        """The model for a scope's vectors: the chosen one, except that a model chosen ``only_for`` a person
        (a provider reached with their key) never sees another scope: those keep the local model."""
        if self.embedder is None or self.only_for is None:
            return self.embedder
        return self.embedder if _chosen_for(Scope.parse(scope), self.only_for) else load_embedder(LOCAL_EMBEDDER)

    # ---- the embedding model -----------------------------------------------------------------------

    def set_embedder(self, embedder: Embedder | str | None, *, only_for: str | None = None) -> None:
        """Chooses the model for meaning search (``"static"``, ``"minilm"``, an Embedder, or None for
        keywords only). Every stored vector is recomputed in the background; search keeps working with
        the old vectors until each scope's new ones are complete. Progress: ``embedding_status()``.

        ``only_for`` (a person id) limits the model to that person's private and agent scopes; every other
        scope keeps the local model. A remote model's vectors are queued and filled in the background,
        retried after failures; meanwhile new sources are found by keywords."""
        new = self._chosen(embedder)
        with self._lock, self._status:
            self._check_open()
            if (self.embedder.name if self.embedder else "") != (new.name if new else ""):
                # Another model: the pass under way, perhaps waiting on the old model's answer, is left to end on
                # its own (what it is answered is thrown away), and a new one starts at once.
                self._migration = None
                self._progress["running"] = False
                self._kick.set()  # (one waiting to try the old model again ends now)
            self.embedder, self.only_for = new, only_for
            # counted anew: what this choice re-embeds, not what an earlier one (or one turned away from) did
            self._progress.update(model=new.name if new else "", done=0, total=0, **NO_FAILURE)
            self._scope_progress.clear()
            self._say_unloadable(embedder)
            self._recheck_size = is_remote(new)
            self._choices += 1
            self._aside.clear()  # a model chosen (again) is sent them again: it may take them now
            if new is not None:
                self._start_migration(kick=True)

    def _chosen(self, embedder: Embedder | str | None) -> Embedder | None:
        """The model chosen, loaded; None (keywords) when its file is missing or fails its pinned checksum, with
        why kept for ``_say_unloadable``: memory still opens and answers, and the vectors already made with that
        model stay on disk (an index opened without a model keeps its model's name), so once the file is back
        they are used as they are and only what was stored meanwhile is embedded."""
        self._unloadable = ""
        if not isinstance(embedder, str):
            return embedder
        try:
            return load_embedder(embedder)
        except ModelFileError as exc:
            self._unloadable = str(exc)
            return None

    def _say_unloadable(self, embedder: Embedder | str | None) -> None:
        if self._unloadable and isinstance(embedder, str):
            self._progress.update(model=KINDS.get(embedder, embedder), error=(
                f"Memory cannot load the embedding model {embedder}: {self._unloadable} Search answers by keywords "
                f"meanwhile, and the vectors made with it are kept for when its file is back. Or choose another model "
                f"in Settings → Models (`models set embedding local/static`)."))

    def embedding_status(self, scopes: Sequence[str] | None = None) -> dict[str, object]:
        """{"model", "done", "total", "running", "error", "why", "failures", "retry_s", "passing", "set_aside",
        "note"}: how far re-embedding with the chosen model is: the items it re-embeds (or fills) since the model was
        chosen, in ``scopes`` (all, when None: a person is shown the scopes they may read, never another person's
        items). ``error`` says what went wrong and what to do (in the window's words); after a failure of the model,
        ``why`` is that failure alone, ``failures`` how many tries failed in a row, ``retry_s`` when the background
        pass tries again and ``passing`` whether trying again may clear it (the embedder's ``passing``: a rate limit, a
        server error, a timeout; not a key refused or no such model). ``set_aside`` counts the items the model refused
        one by one, found by their words alone; ``note`` names them and says what to do."""
        with self._status:  # never memory's lock: Settings reads this on the window's event loop
            st = dict(self._progress)
            wanted = None if scopes is None else {str(Scope.parse(sc)) for sc in scopes}
            if scopes is not None:
                counts = [self._scope_progress.get(str(Scope.parse(sc)), [0, 0]) for sc in scopes]
                st.update(done=sum(c[0] for c in counts), total=sum(c[1] for c in counts))
            aside = [v for sc, a in sorted(self._aside.items()) if wanted is None or sc in wanted for v in list(a.values())]
            st.update(set_aside=len(aside), note=self._aside_note(aside))
            return st

    def _aside_note(self, aside: list[tuple[int, str, str]]) -> str:
        if not aside:
            return ""
        n = len(aside)
        named = ", ".join(what for _, what, _ in aside[:3]) + (f" and {n - 3} more" if n > 3 else "")
        one = n == 1
        return (f"{n} note{'' if one else 's'} ({named}) could not get a vector for search by meaning: "
                f"{self._progress.get('model')} refused {'it' if one else 'them'} ({aside[0][2].rstrip('.')}). "
                f"{'It is' if one else 'They are'} found by {'its' if one else 'their'} words alone; the others by "
                f"meaning too. To have {'it' if one else 'them'} found by meaning, split {'it' if one else 'them'} "
                f"into shorter notes, or choose another model in Settings → Models (choosing this one again tries "
                f"{'it' if one else 'them'} again).")

    def wait_for_embedding(self, timeout: float | None = None) -> bool:
        """Blocks until re-embedding is done (True) or ``timeout`` seconds passed (False)."""
        t = self._migration
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def _start_migration(self, kick: bool = False) -> None:
        """Starts the background thread (or has it look again). ``kick`` also ends a wait before a retry: a
        person chose a model; new sources alone do not, so a provider that is down is not hammered."""
        with self._lock, self._status:
            # A thread that has decided to end (``running`` False, said in the same step) would not look again
            if self._migration is not None and self._migration.is_alive() and self._progress.get("running"):
                self._progress["again"] = True
                if kick:
                    self._kick.set()
                return
            self._progress.update(running=True, again=False)
            self._migration = threading.Thread(target=self._migrate, name="memory-embedding", daemon=True)
            self._migration.start()

    def _migrate(self) -> None:
        """The background thread: re-embeds scopes whose model changed and fills queued vectors, trying again
        after a failure (waits doubling up to EMBED_RETRY_MAX_S) until all is done or memory closes. A model chosen
        (again) is tried at once, its waits starting anew."""
        # Vectors already computed, per index folder and model, kept across retries (never another model's), and
        # the choice under which each began (see ``_answered_size``).
        fresh: dict[tuple[Path, str], dict[str, tuple[int, np.ndarray]]] = {}
        begun: dict[tuple[Path, str], int] = {}
        failures, choice = 0, -1
        try:
            while not self._migration_stop.is_set():
                if self._migration is not threading.current_thread():
                    return  # another model chosen: a new pass took over
                self._kick.clear()
                target = self.embedder
                with self._lock:
                    if choice != self._choices:
                        failures, choice = 0, self._choices
                drops = self._drops
                try:
                    ok = self._embed_pass(fresh, begun)
                except Exception as exc:  # a model that fails mid-way: say so; search keeps the vectors it has
                    if self._migration is not threading.current_thread():
                        return  # given up on (another model chosen) while it failed: not the new model's failure
                    if self.embedder is not target:  # a model the person turned away from: not theirs to read
                        failures = 0
                        continue
                    if self._drops != drops:  # a scope forgotten under the pass (its index closed): go again at once
                        continue
                    failures += 1
                    # (no sooner than a provider asking to slow down says: its Retry-After)
                    wait = min(EMBED_RETRY_MAX_S, max(EMBED_RETRY_S * 2 ** (failures - 1),
                                                      float(getattr(exc, "retry_after", None) or 0)))
                    passing = getattr(target, "passing", None)
                    # Sources stored since the pass began wait too: the count a person sees includes them.
                    try:
                        queued = {str(sc): idx.queued_count() for sc, idx in list(self._indexes.items())
                                  if idx.embedder is not None and is_remote(idx.embedder)}
                    except Exception:  # noqa: BLE001 - an index closing meanwhile: the next pass counts again
                        queued = {}
                    with self._lock, self._status:
                        done = int(self._progress.get("done") or 0)
                        self._progress["total"] = max(int(self._progress.get("total") or 0), done + sum(queued.values()))
                        for sc, n in queued.items():
                            c = self._scope_progress.setdefault(sc, [0, 0])
                            c[1] = max(c[1], c[0] + n)
                        self._progress.update(failures=failures, why=str(exc), retry_s=wait,
                                              passing=bool(passing is not None and passing(exc)))
                        self._progress["error"] = (
                            f"Memory could not get search vectors from {self._progress.get('model')}: {exc} Search "
                            f"keeps working meanwhile (new items are found by their words); Hearth tries again in "
                            f"{wait:g} s, or choose the model again in Settings → Models to retry now.")
                    self._kick.wait(wait)
                    continue
                failures = 0
                with self._lock, self._status:
                    if self._migration is not threading.current_thread():
                        # given up on (another model chosen) while its request was answered: the status is the new
                        # pass's, never ended (nor its error cleared) by this one
                        return
                    if ok:
                        self._progress.update(NO_FAILURE)
                    # Decided and said in one step: a model chosen from here on starts a new thread, never left to
                    # one that has already decided to end.
                    if self._migration_stop.is_set() or not self._progress.get("again"):
                        self._progress["running"] = False
                        return
                    self._progress["again"] = False
        finally:
            with self._lock, self._status:
                if self._migration is threading.current_thread():
                    self._progress["running"] = False

    def _embed_pass(self, fresh: dict[tuple[Path, str], dict[str, tuple[int, np.ndarray]]],
                    begun: dict[tuple[Path, str], int]) -> bool:
        """One pass over every scope: switch the ones on another model, then fill queued vectors. False if
        memory is closing (or the model was unset). A model chosen meanwhile ends the pass at once (True: the
        thread looks again), so nothing more is sent to a model the person no longer wants. A scope forgotten
        meanwhile is passed over: nothing of it is the model's failure."""
        target = self.embedder
        if target is None:
            return False

        me = threading.current_thread()

        def ours() -> bool:  # still this pass's model, and this pass (not one a new choice started): its progress to say
            return self.embedder is target and self._migration is me

        def current() -> bool:
            return ours() and not self._migration_stop.is_set()

        def stop() -> bool:  # also before each request: a model turned away from elsewhere is sent nothing more
            return not current() or not self._sends_to(target)

        def gone(sc: Scope, idx: ScopeIndex) -> bool:  # forgotten (or deleted) since the pass opened it
            return self._indexes.get(sc) is not idx

        folders = {Scope.parse(s) for s in self.scopes_on_disk()} | set(_index_folders(self.root))
        todo: list[tuple[Scope, ScopeIndex, Embedder]] = []
        fills: list[tuple[Scope, ScopeIndex, int]] = []
        answers: list[int] = []  # the size the chosen provider answers now, asked once if a scope needs it

        def resized(idx: ScopeIndex, want: Embedder) -> bool:
            if idx.folder in self._resized:
                return True
            if not (self._recheck_size and want is target and (have := _vector_size(idx))):
                return False
            if not answers:
                answers.append(checked_vectors(want.name, want.embed([SIZE_PROBE]), 1).shape[1])
            return answers[0] != have

        for sc in sorted(folders, key=str):
            if self._migration_stop.is_set():
                return False
            with self._lock:  # a scope forgotten since the pass began is not made again here
                if not (sc in self._indexes or (self.root / "index" / sc.relpath).is_dir()
                        or self.catalog.query("SELECT 1 FROM sources WHERE scope=? LIMIT 1", (str(sc),))):
                    continue
                idx, want = self.index(sc), self.embedder_for(sc)
            if want is None:
                continue
            if idx.embedder is None or idx.embedder.name != want.name or (is_remote(want) and resized(idx, want)):
                todo.append((sc, idx, want))
                continue
            idx.embedder = want  # the same model, perhaps reached with a new key
            if queued := idx.queued_count() - self._still_aside(sc, idx):  # a local model's too: stored while its
                fills.append((sc, idx, queued))  # file could not be loaded
        counts = [i.count() for _, i, _ in todo]
        total = sum(counts) + sum(n for _, _, n in fills)
        done = 0

        def count(sc: Scope, d: int, t: int, *, add: bool = False) -> None:  # (under the lock) one scope's share
            c = self._scope_progress.setdefault(str(sc), [0, 0])
            c[0] = c[0] + d if add else d
            c[1] = max(c[1], c[0]) if add else t

        if total:
            with self._lock, self._status:
                if not ours():
                    return True
                self._progress.update(model=target.name, done=0, total=total)
                for (sc, _, _), n in zip(todo, counts, strict=True):
                    count(sc, 0, n)
                for sc, _, n in fills:  # added to what this choice did so far in the scope
                    c = self._scope_progress.setdefault(str(sc), [0, 0])
                    c[1] = c[0] + n
        for (sc, idx, want), n in zip(todo, counts, strict=True):
            base_done = done

            # Documents added to the scope while it re-embeds count too (``t`` grows): never done while some wait.
            def report(d: int, t: int, base_done: int = base_done, total: int = total, n: int = n, sc: Scope = sc) -> None:
                with self._lock, self._status:
                    if not ours():  # a model chosen meanwhile counts anew: not this one's items
                        return
                    self._progress["total"] = grown = max(total, total + t - n)
                    self._progress["done"] = min(grown, base_done + d)
                    count(sc, min(d, t), t)

            key = (idx.folder, want.name)
            if key not in fresh:
                fresh[key], begun[key] = {}, self._choices

            def new_size(size: int, have: int, key: tuple[Path, str] = key) -> bool:
                return self._size_changed(key[0], size, have, chosen_again=begun[key] != self._choices)

            try:
                switched = idx.switch_embedder(want, report, lambda sc=sc, idx=idx: stop() or gone(sc, idx),
                                               fresh[key], self._aside.setdefault(str(sc), {}), new_size)
            except Exception:
                if not gone(sc, idx):
                    raise
                switched = False
            if gone(sc, idx) or switched:
                fresh.pop(key, None)
                begun.pop(key, None)
            if gone(sc, idx):
                continue
            if not switched:
                return not self._migration_stop.is_set()
            self._resized.discard(idx.folder)
            done = base_done + idx.count()
            total = max(total, total + idx.count() - n)
            with self._lock, self._status:
                count(sc, idx.count(), idx.count())
            if is_remote(want) and idx.queued_count():  # added while it ran: queued for this model
                fills.append((sc, idx, 0))
        if not current():
            return not self._migration_stop.is_set()
        self._recheck_size = False
        for sc, idx, _ in fills:
            assert idx.embedder is not None
            aside = self._aside.setdefault(str(sc), {})
            try:
                while not stop():
                    rows = idx.queued(batch_size(idx.embedder), aside)
                    if not rows:
                        break
                    emb = idx.embedder
                    vecs, why = embed_each(emb, [t for _, t, _ in rows])
                    if not current():  # answered after another model was chosen: thrown away
                        break
                    with self._lock, self._status:
                        for n, reason in why.items():  # refused alone: found by its words, the others by meaning too
                            i, t, what = rows[n]
                            aside[i] = (hash(t), what, reason)
                    kept = [r for n, r in enumerate(rows) if n not in why]
                    if kept:
                        vecs = checked_vectors(emb.name, vecs, len(kept))
                        if self._answered_size(idx, vecs.shape[1]):
                            # The provider answers another size than the scope's vectors, again and again (another
                            # model behind the name): they can no longer be compared, so the scope is embedded again.
                            key = (idx.folder, emb.name)
                            if key not in fresh:
                                fresh[key], begun[key] = {}, self._choices
                            fresh[key].update({i: (hash(t), v) for (i, t, _), v in zip(kept, vecs, strict=True)})
                            with self._lock, self._status:
                                self._progress["again"] = True
                            break
                        # an answer of another size once is refused (and retried); one that comes as another model
                        # is chosen is thrown away (checked under the index's lock, which the new pass's swap takes)
                        if not idx.fill([i for i, _, _ in kept], vecs, keep=current):
                            break
                    done += len(rows)
                    total = max(total, done)
                    with self._lock, self._status:
                        if ours():
                            self._progress.update(done=done, total=total)
                            count(sc, len(rows), 0, add=True)
            except Exception:
                if not gone(sc, idx):
                    raise
        with self._lock, self._status:
            if total and ours():
                self._progress.update(done=total, total=total)  # one rewritten or deleted meanwhile counted in the total
                for c in self._scope_progress.values():
                    c[0] = c[1]
        return not self._migration_stop.is_set()

    def _still_aside(self, sc: Scope, idx: ScopeIndex) -> int:
        """How many of the scope's documents set aside still wait for a vector (those deleted, or given one since,
        are let go)."""
        aside = self._aside.get(str(sc))
        if not aside:
            return 0
        still = idx.without_vector(list(aside))
        with self._lock, self._status:
            for i in [i for i in aside if i not in still]:
                aside.pop(i, None)
            return len(aside)

    def _answered_size(self, idx: ScopeIndex, size: int) -> bool:
        """A provider answered vectors of ``size`` numbers for this scope's queued documents. True (and the scope
        marked for the background pass to embed again) once it has answered a size other than the scope's vectors
        SIZE_CHANGE_ANSWERS times running: the model behind the name changed. Once is refused as a bad answer."""
        # the same size as the vectors' width (every answer, as a rule): nothing to check, the vectors not read
        have = 0 if size == idx.vecs.shape[1] else _vector_size(idx)
        if not self._size_changed(idx.folder, size, have):
            return False
        with self._lock:
            self._resized.add(idx.folder)
        return True

    def _size_changed(self, folder: Path, size: int, have: int, *, chosen_again: bool = False) -> bool:
        """Whether vectors of ``have`` numbers (an index folder's, or those a re-embed made so far) are another
        model's than the one answering ``size`` now: it answered that size SIZE_CHANGE_ANSWERS times running, or
        once after the person chose the model again since they were made. Fewer are refused as bad answers."""
        with self._lock:
            if not have or size == have:
                self._sizes_seen.pop(folder, None)
                return False
            seen = self._sizes_seen.get(folder)
            n = seen[1] + 1 if seen is not None and seen[0] == size else 1
            self._sizes_seen[folder] = (size, n)
            if n < SIZE_CHANGE_ANSWERS and not chosen_again:
                return False
            self._sizes_seen.pop(folder, None)
            return True

    def _sends_to(self, model: Embedder) -> bool:
        """Whether texts may go to ``model``: a local one's never leave; a remote one's only while it is still the one
        chosen (``still_chosen``: another process may have chosen another model since)."""
        still = self.still_chosen
        return not is_remote(model) or still is None or still(model)

    def _query_vector(self, emb: Embedder, query: str) -> np.ndarray | None:
        """The question's vector, or None: a remote model that fails, is known to be failing, takes longer than
        QUERY_EMBED_TIMEOUT_S or is no longer chosen leaves search to rank by keywords (it never raises for that)."""
        if not is_remote(emb):
            return emb.embed([query])[0]
        try:  # a model chosen no more (elsewhere, not yet taken up here) is sent no question
            sends = self._sends_to(emb)
        except Exception:  # noqa: BLE001 - the choice could not be read: keywords answer, nothing is sent
            sends = False
        if not sends or self._progress.get("error") or time.monotonic() < self._query_rest_until:
            return None
        # A total deadline, whatever the provider does (a body dripping a byte a second never times out a read):
        # the call runs on its own thread, and a question it has not embedded by then is ranked by keywords.
        # After that, questions skip the provider a while, so memory's other work is not held up by each one.
        call = _query_pool().submit(emb.embed, [query], timeout=QUERY_EMBED_TIMEOUT_S)  # type: ignore[call-arg]
        try:
            return checked_vectors(emb.name, call.result(QUERY_EMBED_TIMEOUT_S), 1)[0]
        except concurrent.futures.TimeoutError:
            self._query_rest_until = time.monotonic() + QUERY_EMBED_REST_S
            return None
        except Exception:  # noqa: BLE001 - any failure of the model: keywords still answer
            return None

    def _repair(self, sc: Scope, idx: ScopeIndex) -> None:
        """Brings an index in line with the catalog (e.g. after a crash between the two)."""
        want = {r["id"] for r in self.catalog.query("SELECT id FROM sources WHERE scope=?", (str(sc),))}
        have = {i for i in idx.all_ids() if not i.startswith("page:")}
        missing = want - have
        extra = have - want
        if extra:
            idx.remove(sorted(extra))
        if missing:
            docs = []
            for sid in sorted(missing):
                try:
                    docs.append(self._source_doc(sid))
                except (OSError, UnicodeDecodeError, UnknownSource):
                    continue  # its file lost or damaged: `verify` names it; the scope's other sources are indexed
            idx.add(docs)
        if missing or extra:
            idx.commit()

    def _source_doc(self, sid: str) -> Doc:
        rec = self.get_source(sid)
        return Doc(rec.id, "source", rec.title, rec.text, rec.ts, rec.importance)

    def _sync_before_commit(self) -> None:
        """Source files reach the disk before the catalog row that names them."""
        if self._unsynced:
            self.sources.sync()
            self._unsynced = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("This memory is closed: open it again with wiki_engine.open_memory(path).")

    # ---- sources ---------------------------------------------------------------------------------

    def add_source(
        self,
        text: str,
        *,
        scope: str,
        source_id: str | None = None,
        ts: float | None = None,
        importance: float | None = None,
    ) -> str:
        """Stores a note as an immutable source and indexes it; returns its id (the sha256 by default).

        Raises InstructionRefused if the text tries to give the assistant orders.
        """
        item = Item(text=text, scope=str(Scope.parse(scope)), ts=time.time() if ts is None else ts, kind="note",
                    key=source_id or "", importance=importance)
        return self.add_items([item], source_ids=[source_id])[0]

    def agents_called(self) -> tuple[str, ...]:
        """What the household's agents are called (``agent_names``, which the Pod sets), for ``check_instructions``:
        a note or page line speaking to one by name with an order is held. None set: no names."""
        return tuple(self.agent_names()) if self.agent_names is not None else ()

    def add_items(self, items: Sequence[Item], *, source_ids: Sequence[str | None] | None = None,
                  check: bool = True, to_inbox: bool = True, skip_refused: bool = False,
                  ahead: Ahead | None = None) -> list[str]:
        """Stores many items at once (one transaction, one index commit). Returns their source ids.

        An item that gives the assistant orders is quarantined; then InstructionRefused is raised and
        nothing of the batch is stored, or with ``skip_refused`` its id comes back as "" and the rest is stored.
        An item from an origin (with a key) that the person deleted before, the same text read again from it, is not
        stored: its id comes back as "".
        ``ahead``: the items' vectors, made by ``vectors_ahead`` (on another thread); else they are made here, before
        memory is locked.
        """
        self._check_open()
        items = [self.clean_item(i) for i in items]
        ids = [valid_text(i) if i else None for i in source_ids] if source_ids is not None else [None] * len(items)
        # The filter reads the text before memory is locked: a long document takes seconds, and search goes on.
        agents = self.agents_called() if check else ()
        verdicts = [check_instructions(item.said(), agents) for item in items] if check else []
        if ahead is None:
            ahead = self._vectors_ahead([it for n, it in enumerate(items) if not verdicts or verdicts[n].ok])
        with self._lock:
            self._check_open()
            refused: set[int] = set()
            judged = self._judged(items) if check else []
            for n, verdict in enumerate(verdicts):
                said = judged[n]
                if verdict.ok or said == "released":  # the person read this very item and kept it
                    continue
                if said == "discarded" and skip_refused:  # read again from its origin: it stays thrown away
                    refused.add(n)
                    continue
                qid = self._quarantine(items[n], verdict.rule, verdict.reason)
                if qid is None:  # the person deleted or discarded this very item before: not stored, not held
                    refused.add(n)
                    continue
                if not skip_refused:
                    raise InstructionRefused(verdict.reason, qid)
                refused.add(n)
            out: list[str] = []
            docs: dict[Scope, list[Doc]] = {}
            for sc in {Scope.parse(i.scope) for i in items}:
                self.index(sc)  # open (and repair) before registering, so new items are indexed once
            if len(items) > 64:
                self._prewrite([it for n, it in enumerate(items) if n not in refused])
            with self.catalog.tx(immediate=True) as db:
                for n, (item, sid) in enumerate(zip(items, ids, strict=True)):
                    if n in refused:
                        out.append("")
                        continue
                    got, doc = self._register(db, item, sid, to_inbox=to_inbox)
                    out.append(got)
                    if doc is not None:
                        docs.setdefault(Scope.parse(item.scope), []).append(doc)
            for sc, ds in docs.items():
                idx = self.index(sc)
                idx.add(ds, ahead)
                idx.commit()
                self._added(idx)
            return out

    def vectors_ahead(self, items: Sequence[Item], *, pages: Sequence[Page] = ()) -> Ahead:
        """The local model's vectors of items about to be stored (``add_items(items, ahead=...)``) and of pages about
        to be written (``write_pages(pages, ahead=...)``), made without memory's lock on the caller's thread: a large
        batch (a folder import, a first mail sync, an ingest's pages) is embedded off memory's thread, and search,
        typeahead and Settings' progress answer meanwhile (MiniLM takes about a tenth of a second for a long part or
        page). Made of the items as given (a folder import's texts are cleaned already: cleaning them again would
        cost as much as the static model's embedding) and of the pages as ``write_pages`` cleans them; one whose text
        cleaning changes, whose context changed before it is stored, or a page written otherwise (its lines that
        give orders left out, titled "2" beside a namesake), is embedded again as it is stored. None for a
        provider's model (its vectors are filled in the background)."""
        self._check_open()
        return self._vectors_ahead(items, pages)

    def _vectors_ahead(self, items: Sequence[Item], pages: Sequence[Page] = ()) -> Ahead:
        """``vectors_ahead``: (model, hash of the text embedded) -> vector, what ``ScopeIndex.add`` then takes for
        the documents it stores of that very text and model (and embeds the others itself)."""
        out: Ahead = {}
        by_scope: dict[Scope, tuple[list[Item], list[Doc]]] = {}
        for it in items:
            by_scope.setdefault(Scope.parse(it.scope), ([], []))[0].append(it)
        for page in pages:
            try:  # a page refused as it is written (no title, no such scope, too long) is not embedded for nothing
                if len(page.body) > MAX_PAGE_CHARS:
                    continue
                page = self.clean_page(page)
                sc = Scope.parse(page.scope)
            except ValueError:
                continue
            by_scope.setdefault(sc, ([], []))[1].append(_page_doc(page))
        for sc, (its, page_docs) in by_scope.items():
            with self._lock:  # a scope forgotten meanwhile is not made again here
                self._check_open()
                idx = self.index(sc) if self._searchable(sc) else None
                emb = idx.embedder if idx is not None else self.embedder_for(sc)
            if emb is None or is_remote(emb):
                continue
            keys = [it.item_key() for it in its]
            stored = {k for at in range(0, len(keys), 500) for (k,) in self.catalog.query(  # read again: nothing to embed
                f"SELECT item_key FROM sources WHERE scope=? AND item_key IN ({','.join('?' * len(keys[at:at + 500]))})",
                (str(sc), *keys[at:at + 500]))}
            docs = [_item_doc(it, "") for it, k in zip(its, keys, strict=True) if k not in stored]
            texts = (idx.meaning_texts(docs) if idx is not None else ScopeIndex.new_meaning_texts(docs)) if docs else []
            texts += ScopeIndex.new_meaning_texts(page_docs)  # a page's is its own text alone
            for at in range(0, len(texts), AHEAD_CHUNK):
                if self._closed:  # Hearth quits: the import stops, and so does this
                    return out
                chunk = texts[at:at + AHEAD_CHUNK]
                out.update(zip(((emb.name, hash(t)) for t in chunk), emb.embed(chunk), strict=True))
        return out

    def _added(self, idx: ScopeIndex) -> None:
        """Documents were added to ``idx``: a remote model's vectors for them are filled in the background."""
        if is_remote(idx.embedder):
            self._start_migration()

    def remember(self, text: str, *, person: str, agent: str, scope: str, importance: float | None = None,
                 ts: float | None = None) -> str:
        """The agents' ``remember`` tool: an agent proposes a fact into a scope it may see (public, its
        person's private tree, or its own notes). It lands in the inbox as a source; ingest makes pages."""
        viewer = Viewer(person, agent)
        if not viewer.may_see(scope):
            raise PermissionError(
                f"Agent {agent!r} of {person!r} cannot remember into {scope}: choose 'public', 'private/{person}' "
                f"or 'agent/{person}/{agent}'."
            )
        key, *before = remembered_keys(scope, text)
        whose, owner = _theirs(scope, person)
        if before and self.catalog.query(  # deleted or discarded under the key an earlier Hearth gave it
                f"SELECT 1 FROM deleted_by_person WHERE scope=? AND item_key=?{whose} LIMIT 1",
                (str(Scope.parse(scope)), before[0], *owner)):
            return ""
        item = Item(text=text, scope=str(Scope.parse(scope)), ts=time.time() if ts is None else ts, kind="remember",
                    key=key, importance=importance, owner=person, agent=agent)
        return self.add_items([item])[0]

    def remembered(self, text: str, scope: str) -> str | None:
        """The source that already holds this fact in this scope (the same words as a person reads them,
        ``fact_words``, or, stored by an earlier Hearth, the same text spacing and case aside), as an agent's
        ``remember`` stored it; None when none does. A fact remembered again is not stored twice."""
        keys = remembered_keys(scope, text)
        rows = self.catalog.query(f"SELECT id FROM sources WHERE scope=? AND item_key IN ({','.join('?' * len(keys))}) "
                                  "LIMIT 1", (str(Scope.parse(scope)), *keys))
        return rows[0][0] if rows else None

    def _prewrite(self, items: Sequence[Item]) -> None:
        """Writes many source files in parallel (file creation waits on the disk, not the CPU)."""
        from concurrent.futures import ThreadPoolExecutor

        def put(item: Item) -> None:
            self.sources.put(Scope.parse(item.scope), render_item(item), durable=False)

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(put, items))
        self._unsynced = True

    def _register(self, db: object, item: Item, sid: str | None, *, to_inbox: bool) -> tuple[str, Doc | None]:
        """Writes the source file and its catalog row inside the caller's transaction.

        Files reach the disk before the catalog names them: each is flushed here, or, for a large batch
        written by ``_prewrite``, all at once by the transaction's commit hook (``_sync_before_commit``)."""
        assert isinstance(db, sqlite3.Connection)
        sc = Scope.parse(item.scope)
        if item.importance is not None and not 0.0 <= item.importance <= 1.0:
            raise ValueError(f"importance must be between 0 and 1, got {item.importance}.")
        md = render_item(item)
        key = item.item_key()
        digest = hashlib.sha256(md.encode("utf-8")).hexdigest()
        existing = db.execute("SELECT id, sha FROM sources WHERE scope=? AND item_key=?", (str(sc), key)).fetchone()
        if existing is not None:
            if existing[1] == digest:
                return existing[0], None  # already stored: pulling an item again never duplicates it
            raise SourceConflict(
                f"Item {key!r} in {sc} is already stored with different text. Sources are immutable: delete the "
                "old source first, or store the new text under a new id."
            )
        if deleted_by_person(db, item, md):
            return "", None  # the person deleted this very source: read again from its origin, it stays deleted
        sha = self.sources.put(sc, md)  # a no-op when _prewrite already wrote it
        sid = sid or sha
        clash = db.execute("SELECT sha FROM sources WHERE id=?", (sid,)).fetchone()
        if clash is not None:
            if clash[0] == sha:
                return sid, None
            raise SourceConflict(
                f"Source id {sid!r} is already used for different text. Sources are immutable: delete the old "
                "source first, or pass a new source_id."
            )
        owner = _whose(item)
        agent = item.agent or (sc.agent or "")
        doc = _item_doc(item, sid)
        db.execute(
            "INSERT INTO sources (id, sha, scope, kind, ts, importance, owner, agent, item_key, title, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (sid, sha, str(sc), item.kind, item.ts, item.importance, owner, agent, key, doc.title, time.time()),
        )
        if to_inbox:
            db.execute("INSERT OR IGNORE INTO inbox (source_id, scope, added_at) VALUES (?,?,?)", (sid, str(sc), time.time()))
        return sid, doc

    def _quarantine(self, item: Item, rule: str, reason: str) -> int | None:
        with self.catalog.tx(immediate=True) as db:
            return hold(db, item, rule, reason)

    def quarantine(self, status: str = "held", *, owner: str | None = None) -> list[Quarantined]:
        """Items held back because they tried to give orders; ``owner`` keeps one person's (their agents' too)."""
        sql, args = "SELECT * FROM quarantine WHERE status=?", [status]
        if owner is not None:
            sql, args = sql + " AND owner=?", [*args, owner]
        rows = self.catalog.query(sql + " ORDER BY id", tuple(args))
        out = []
        for r in rows:
            try:
                head = json.loads(r["head"]) if r["head"] else {}
            except ValueError:
                head = {}
            out.append(Quarantined(r["id"], r["scope"], r["item_key"], r["kind"], r["rule"], r["reason"], r["text"],
                                   r["status"], r["owner"], r["agent"], r["ts"], r["at"], str(head.get("author") or ""),
                                   str(head.get("subject") or ""), r["head"]))
        return out

    def _judged(self, items: Sequence[Item]) -> list[str | None]:
        """For each item, "released" or "discarded" when a person has already judged it (None when not): in the
        household's scope, the item's owner (another person's judgement of the same words is theirs alone)."""
        def whose(scope: str, owner: str) -> str:  # a held item of a person's or an agent's scope is that person's
            return owner if Scope.parse(scope).kind == "public" else ""

        keys = {(i.scope, i.item_key()) for i in items}
        found: dict[tuple[str, str, str], str] = {}
        for scope in {sc for sc, _ in keys}:
            wanted = [k for sc, k in keys if sc == scope]
            for part in range(0, len(wanted), 500):
                chunk = wanted[part:part + 500]
                for key, status, owner in self.catalog.query(
                        f"SELECT item_key, status, owner FROM quarantine WHERE scope=? AND status IN "
                        f"('released','discarded') AND item_key IN ({','.join('?' * len(chunk))}) ORDER BY id",
                        (scope, *chunk)):
                    found[(scope, key, whose(scope, owner))] = status  # the latest judgement wins
        return [found.get((i.scope, i.item_key(), whose(i.scope, _whose(i)))) for i in items]

    def sources_by_key(self, scope: str, keys: Sequence[str], key_starts: Sequence[str] = ()) -> list[str]:
        """The ids of the sources of ``scope`` stored from items with these origin keys (an inbox's mail, say), or
        keys beginning with one of ``key_starts`` (a conversation's summaries)."""
        sc, found = str(Scope.parse(scope)), []
        for part in range(0, len(keys), 500):
            chunk = list(keys[part:part + 500])
            found += [str(r[0]) for r in self.catalog.query(
                f"SELECT id FROM sources WHERE scope=? AND item_key IN ({','.join('?' * len(chunk))})", (sc, *chunk))]
        for st in key_starts:
            found += [str(r[0]) for r in self.catalog.query(
                "SELECT id FROM sources WHERE scope=? AND item_key >= ? AND item_key < ?",
                (sc, st, st[:-1] + chr(ord(st[-1]) + 1)))]
        return found

    def held_status(self, scope: str, key: str) -> str | None:
        """"held", "released" or "discarded" for an item with this key, or None if it was never held."""
        rows = self.catalog.query("SELECT status FROM quarantine WHERE scope=? AND item_key=? ORDER BY id DESC LIMIT 1",
                                  (str(Scope.parse(scope)), key))
        return str(rows[0][0]) if rows else None

    def drop_held(self, scope: str, key_starts: Sequence[str]) -> int:
        """Deletes every held (or judged) item of ``scope`` whose key starts with one of ``key_starts``, and the
        extraction model's reasons for skipping them (which may quote them): their origin is gone (a watched file
        deleted, its folder or inbox removed). Returns how many held items."""
        n = 0
        with self.catalog.tx(immediate=True) as db:
            for start in key_starts:
                bounds = (str(Scope.parse(scope)), start, start[:-1] + chr(ord(start[-1]) + 1))
                n += db.execute("DELETE FROM quarantine WHERE scope=? AND item_key >= ? AND item_key < ?", bounds).rowcount
            skipped = _drop_skips(db, str(Scope.parse(scope)), key_starts=key_starts)
        if n or skipped:
            self.catalog.purge()
        return int(n)

    def discarded_before(self, items: Sequence[Item]) -> set[str]:
        """The keys of ``items`` the person discarded from Held back before, not deleted as sources: the same key,
        or the same text as memory stores it under another key (a watched folder added again, a file's part after an
        edit). Why memory did not store an item ``add_items`` refused as one the person threw away."""
        out: set[str] = set()
        for item in items:
            if not item.key:
                continue
            clean = self.clean_item(item)
            prints = content_prints(render_item(clean))
            whose, owner = _theirs(clean.scope, _whose(clean))
            if self.catalog.query(
                    f"SELECT 1 FROM deleted_by_person WHERE scope=? AND discarded=1 AND (print IN "
                    f"({','.join('?' * len(prints))}) OR item_key=?){whose} LIMIT 1",
                    (str(Scope.parse(clean.scope)), *prints, clean.item_key(), *owner)):
                out.add(item.item_key())
        return out

    def held_item(self, qid: int) -> Quarantined | None:
        found = [q for q in self.quarantine() if q.id == qid]
        return found[0] if found else None

    def release_quarantined(self, qid: int) -> str:
        """A person judged a quarantined item harmless: store it as a source after all (it goes to the inbox, so
        the next ingest may write it into pages)."""
        with self._lock:
            q = self.held_item(qid)
            if q is None:
                raise KeyError(f"No held quarantine item #{qid}: it was released, discarded or forgotten already.")
            sid = self.add_items([q.item()], check=False)[0]
            with self.catalog.tx() as db:
                db.execute("UPDATE quarantine SET status='released', text='', reason='', head='' WHERE id=?", (qid,))
            self.catalog.purge()
            return sid

    def discard_quarantined(self, qid: int) -> None:
        """Drops a held item; its text leaves the catalog's files. It stays thrown away: read again from its origin
        (an inbox added again, a file's part after an edit), it is neither held nor stored again, as a source the
        person deleted (``deleted_by_person``: a print of its text and its key, no word of it)."""
        with self._lock:
            q = self.held_item(qid)
            with self.catalog.tx(immediate=True) as db:
                if q is not None:
                    db.execute("INSERT OR REPLACE INTO deleted_by_person (scope, print, item_key, at, discarded, owner) "
                               "VALUES (?,?,?,?,1,?)", (q.scope, content_print(render_item(q.item())), q.item_key,
                                                        time.time(), q.owner))
                db.execute("UPDATE quarantine SET status='discarded', text='', reason='', head='' WHERE id=?",
                           (qid,))  # reason quotes it, head names who wrote it
            self.catalog.purge()

    def get_source(self, source_id: str) -> SourceRecord:
        rows = self.catalog.query("SELECT * FROM sources WHERE id=?", (source_id,))
        if not rows:
            raise UnknownSource(f"No source {source_id!r}: it was never stored or has been deleted.")
        r = rows[0]
        md = self.sources.read(Scope.parse(r["scope"]), r["sha"])
        _, body = parse_source(md)
        return SourceRecord(r["id"], r["sha"], r["scope"], r["kind"], r["ts"], r["importance"], r["title"], body, md)

    def source_scope(self, source_id: str) -> str | None:
        rows = self.catalog.query("SELECT scope FROM sources WHERE id=?", (source_id,))
        return rows[0][0] if rows else None

    def source_owner(self, source_id: str) -> str | None:
        """The person who put a source there, or whose agent did ("" when it names no one); None when there is none."""
        rows = self.catalog.query("SELECT owner FROM sources WHERE id=?", (source_id,))
        return (rows[0][0] or "") if rows else None

    def verify(self) -> list[Tampered]:
        """Re-hashes every source file; returns the ones modified, unreadable or missing."""
        expected = [(Scope.parse(r["scope"]), r["sha"]) for r in self.catalog.query("SELECT scope, sha FROM sources")]
        return self.sources.verify(expected)

    def count_sources(self, scope: str | None = None) -> int:
        if scope:
            return int(self.catalog.query("SELECT COUNT(*) FROM sources WHERE scope=?", (scope,))[0][0])
        return int(self.catalog.query("SELECT COUNT(*) FROM sources")[0][0])

    def inbox(self, limit: int = 1000) -> list[str]:
        return [sid for sid, _ in self.waiting(limit)]

    def waiting(self, limit: int = 1000) -> list[tuple[str, str]]:
        """The sources waiting for ingest, with their scope, oldest first (whose they are, without reading a file);
        not those left unwritten (see NO_PAGE_TRIES)."""
        return [(r[0], r[1]) for r in self.catalog.query(
            "SELECT source_id, scope FROM inbox WHERE no_page < ? ORDER BY added_at, source_id LIMIT ?",
            (NO_PAGE_TRIES, limit))]

    def inbox_count(self, scopes: Iterable[str]) -> int:
        """How many sources of these scopes wait for ingest (not those left unwritten)."""
        wanted = [str(Scope.parse(s)) for s in scopes]
        marks = ",".join("?" * len(wanted))
        return int(self.catalog.query(f"SELECT COUNT(*) FROM inbox WHERE scope IN ({marks}) AND no_page < ?",
                                      (*wanted, NO_PAGE_TRIES))[0][0]) if wanted else 0

    def unwritten_again(self, whose: Callable[[str], bool]) -> int:
        """A person chose another ingest model: the notes of the scopes ``whose`` says yes to (those their model
        writes) wait in the inbox again with no answer of no page counted (the new model's say), those the model
        before left unwritten (NO_PAGE_TRIES answers of no page) too. Returns how many of those came back."""
        return _unwritten_again(self.catalog, whose)

    # ---- forgetting ------------------------------------------------------------------------------

    def delete_source(self, source_id: str) -> Deleted:
        """The person deletes a source: it goes everywhere, and stays deleted (its text read again from its origin,
        a mail export that grew, say, is not stored again; a summary does not read its message again). Returns the
        keys of pages that cited it (now marked for re-synthesis) and the verified pages kept renamed: ``Deleted``."""
        return self._delete_sources([source_id], strict=True, by_person=True)

    def delete_sources(self, source_ids: Sequence[str], *, again: bool = False, held: bool = False) -> Deleted:
        """Deletes several sources as ``delete_source`` does, with one index commit per scope (a folder of
        thousands of files goes in seconds); ids no longer stored are passed over. Returns the pages marked.
        ``again``: a job may make a source of the same id again (``was_deleted`` stays False), as for a summary
        whose messages changed. ``held``: a step of a removal in batches under ``hold_purges``."""
        return self._delete_sources(source_ids, again=again, held=held)

    def hold_purges(self, scope: Scope | str, hold: bool) -> None:
        """Deletions in ``scope`` made in several steps (a watched folder removed or rescanned, 500 sources at a
        time) write the scope's keyword index again once, when the last hold ends, not after every step (each
        write reads every source left). Meanwhile search never finds the deleted text, and a process killed before
        the end has the index rebuilt from meta.db when it opens again. Call once with True, then once with False."""
        sc = Scope.parse(scope)
        with self._lock:
            held = self._purges_held.get(sc, 0) + (1 if hold else -1)
            if held > 0:
                self._purges_held[sc] = held
            else:
                self._purges_held.pop(sc, None)
            idx = self._indexes.get(sc)
            if idx is not None and not self._closed:
                idx.hold_purge(held > 0)

    def _delete_sources(self, ids: Iterable[str], *, strict: bool = False, again: bool = False,
                        held: bool = False, by_person: bool = False) -> Deleted:
        with self._lock:
            ids = list(ids)
            stale: set[tuple[str, str]] = set()
            by_scope: dict[Scope, list[str]] = {}
            said: dict[str, set[str]] = {}  # what each deleted source that a page cites said (its telling stems)
            with self.catalog.tx(immediate=True) as db:
                for sid in ids:
                    row = db.execute("SELECT scope, sha, item_key, owner FROM sources WHERE id=?", (sid,)).fetchone()
                    if row is None:
                        if strict:
                            raise UnknownSource(f"No source {sid!r}: it was never stored or has been deleted.")
                        continue
                    sc = Scope.parse(row[0])
                    db.execute("INSERT OR IGNORE INTO files_to_delete VALUES (?,?)", (str(sc), row[1]))
                    if by_person:
                        try:
                            printed = content_print(self.sources.read(sc, row[1]))
                        except (OSError, UnicodeDecodeError):
                            printed = f"missing:{row[1]}"  # its file is gone or unreadable: the origin key still holds
                        db.execute("INSERT OR REPLACE INTO deleted_by_person (scope, print, item_key, at, owner) "
                                   "VALUES (?,?,?,?,?)",  # whose: a household note's, its owner alone deletes it
                                   (str(sc), printed, row[2], time.time(), row[3] or ""))
                    db.execute("DELETE FROM sources WHERE id=?", (sid,))
                    db.execute("DELETE FROM inbox WHERE source_id=?", (sid,))
                    citing = db.execute("SELECT scope, slug FROM citations WHERE source_id=?", (sid,)).fetchall()
                    stale |= {(r[0], r[1]) for r in citing}
                    # what each page owes this deletion, till its claims are off (``finish_deletions`` after a kill)
                    db.executemany("INSERT OR IGNORE INTO claims_to_drop VALUES (?,?,?)", [(*r, sid) for r in citing])
                    if citing:  # read before its file goes: a page may name what it said outside a cited sentence
                        said[sid] = self._said(sc, row[1])
                    db.execute("DELETE FROM citations WHERE source_id=?", (sid,))
                    if not again:
                        db.execute("INSERT OR REPLACE INTO deleted_ids VALUES (?,?)", (sid, time.time()))
                    by_scope.setdefault(sc, []).append(sid)
                for scope, slug in stale:
                    db.execute(
                        "INSERT OR REPLACE INTO stale_pages VALUES (?,?,?,?)",
                        (scope, slug, "a cited source was deleted", time.time()),
                    )
                # An agent's proposal that cites a deleted source would bring the claim back if approved: it
                # is withdrawn, and the next ingest proposes again from what is left. Its texts (and those of
                # proposals decided earlier that cite it) are emptied: they hold the deleted source's words.
                gone_now = {sid for scs in by_scope.values() for sid in scs}
                rows = db.execute("SELECT id, status, base_text, proposed_text FROM proposals "
                                  "WHERE proposed_text != '' OR base_text != ''").fetchall()
                for pid, status, *texts in rows:
                    if _cited_in(texts, gone_now, f"proposal #{pid}"):
                        _requeue(db, _proposed_alone(db, pid, status, texts[1]))  # the other notes it proposed
                        _withdraw(db, pid, status)
            self._delete_files()  # the rows are gone for good: now their files
            for sc, sids in by_scope.items():
                if (self.root / "index" / sc.relpath).exists():
                    idx = self.index(sc)
                    idx.remove(sids, held=held)
                    idx.commit()
            # Every claim that rested only on a deleted source leaves its page now (the page stays marked
            # for re-synthesis, so a model can rewrite the prose around the gap).
            gone = set(ids)
            # pages gone with their title (what it named), or for having nothing left to say (None)
            titles_gone: dict[Scope, dict[str, set[str] | None]] = {}
            moved: dict[str, str] = {}  # verified pages kept under their category's name
            for scope, slug in stale:
                only = self._drop_claims(Scope.parse(scope), slug, gone, said, moved)
                if only is None or only:
                    titles_gone.setdefault(Scope.parse(scope), {})[slug] = only
            linked: set[Scope] = set()  # scopes whose pages linked to them
            for sc, slugs in titles_gone.items():
                linked |= self._unlink_gone_titles(sc, slugs)
            for sc in {Scope.parse(scope) for scope, _ in stale} | linked:
                self.index(sc).purge(now=not held)  # the page's earlier text, with the dropped claims, leaves the log
            if by_scope:
                self.catalog.purge()
            return Deleted(sorted(f"page:{s}/{g}" for s, g in stale), moved)

    def _delete_files(self) -> None:
        """Deletes the source files of committed deletions (``files_to_delete``), then their rows."""
        if not self.catalog.query("SELECT 1 FROM files_to_delete LIMIT 1"):
            return
        # under the catalog's write lock: another process storing the same text again waits, then writes its file
        with self.catalog.tx(immediate=True) as db:
            gone = db.execute("SELECT scope, sha FROM files_to_delete").fetchall()
            for scope, sha in gone:
                if not db.execute("SELECT 1 FROM sources WHERE scope=? AND sha=?", (scope, sha)).fetchone():
                    self.sources.delete(Scope.parse(scope), sha)  # not stored anew meanwhile
            db.executemany("DELETE FROM files_to_delete WHERE scope=? AND sha=?", [(r[0], r[1]) for r in gone])

    def finish_deletions(self) -> int:
        """Finishes the deletions a kill cut short, from what each recorded in its transaction: the claims a page owes
        it leave the page (also those of a summary deleted to be made again under the same id, and of a page that
        still cites a source recorded as deleted), the page is indexed again as its file now reads (the file may
        have lost them before the index was told), and a page titled by a deleted source goes (a verified one only
        once its copy under its category's name was written). The links other pages give to a page it deletes, or
        empties of all it said, go as ``delete_sources`` takes them off (``_unlink_gone_titles``: every link to it,
        which would open "No page here yet"; what its title named is no longer known after a kill). The temporary
        copies of pages and sources a killed writer left go too. Run by ingest and nightly under the writer's lease.
        Returns how many pages changed."""
        changed: set[Scope] = set()
        gone_pages: dict[Scope, dict[str, set[str] | None]] = {}  # pages deleted or emptied: links to them go
        pages = 0
        with self._lock:
            remove_dead_temps(self.pages.root, self.sources.root)  # a killed writer's copy of a page or a source
            for scope, slug, once in self.catalog.query("SELECT scope, slug, once FROM pages_to_delete"):
                sc = Scope.parse(scope)
                if once and not self.pages.path_for(sc, once).is_file():
                    # killed before the verified page's copy was written: it stays, and loses its claims below (the
                    # catalog may name what the copy would have cited: too many, which is harmless)
                    with self.catalog.tx(immediate=True) as db:
                        db.execute("DELETE FROM pages_to_delete WHERE scope=? AND slug=?", (scope, slug))
                    continue
                if once:
                    self._renamed(sc, slug, once)
                else:
                    self.delete_page(scope, slug)
                gone_pages.setdefault(sc, {})[slug] = None
                changed.add(sc)
                pages += 1
            owed: dict[tuple[str, str], set[str]] = {}
            for scope, slug, sid in self.catalog.query("SELECT scope, slug, source_id FROM claims_to_drop"):
                owed.setdefault((scope, slug), set()).add(sid)
            for scope, slug in self.catalog.query(
                    "SELECT scope, slug FROM stale_pages UNION SELECT scope, slug FROM claims_to_drop ORDER BY 1, 2"):
                sc = Scope.parse(scope)
                gone = owed.get((scope, slug), set())
                try:
                    page = self.pages.read(sc, slug)
                except PageFormatError:
                    page = None  # the person's to mend (nightly names it): only the claims it owes leave it
                # a deletion from before deletions recorded what each page owes: the ids it cites that were deleted
                gone = gone | {sid for sid in (page.citations.values() if page else ()) if self.was_deleted(sid)}
                if gone:
                    if self._drop_claims(sc, slug, gone) is None:  # nothing left to say: the page went
                        gone_pages.setdefault(sc, {})[slug] = None
                    changed.add(sc)
                    pages += 1
            for sc, slugs in gone_pages.items():
                changed |= self._unlink_gone_titles(sc, slugs)
            for sc in changed:
                self.index(sc).purge(now=True)
        return pages

    def _said(self, sc: Scope, sha: str) -> set[str]:
        """The telling stems of what a stored source says (nothing if its file is gone or unreadable)."""
        try:
            return telling_stems(said_in(self.sources.read(sc, sha)))
        except (OSError, UnicodeDecodeError):
            return set()

    def _said_only_by_gone(self, page: Page, told: set[str]) -> set[str]:
        """Of the stems the deleted sources ``told``, those that ``page`` (without their claims) names, by its title,
        category, links or headings, and that neither its sentences nor the sources it still cites say: the page
        can only have them from the deleted sources. The kept sources are read only when there are such names."""
        left = told & telling_stems("\n".join([page.title, page.category, *names_in(page.body)]))
        left -= telling_stems(prose(page.body))
        for sid in sorted(set(page.citations.values())):
            if not left:
                break
            rows = self.catalog.query("SELECT scope, sha FROM sources WHERE id=?", (sid,))
            if rows:
                left -= self._said(Scope.parse(rows[0][0]), rows[0][1])
        return {s for s in left if not cjk_pair_backed(s, left)}

    def _unwrite(self, sc: Scope, slug: str, page: Page) -> None:
        """Deletes a page whose title names what only deleted sources said, or that a deletion left with nothing to
        say (file, index, titles, citations, proposals); the sources it still cites (another person's household
        note cited beside the deleted one, say) wait in the inbox again, so the next ingest writes their facts
        anew, under a title of their own (until then they are found as sources), and so do the notes an open
        proposal for it alone cites (new facts proposed for the person's verified page: it is withdrawn, there is
        no page to change). The sources are back and the page marked to go in one transaction, before its file
        goes: a kill in between leaves the page for the next run to delete, never the sources' facts on no page and
        out of the inbox."""
        with self.catalog.tx(immediate=True) as db:
            for pid, status, text in db.execute("SELECT id, status, proposed_text FROM proposals WHERE scope=? AND "
                                                "slug=?", (str(sc), slug)).fetchall():
                _requeue(db, _proposed_alone(db, pid, status, text))
                _withdraw(db, pid, status)
            _requeue(db, page.citations.values())
            db.execute("INSERT OR REPLACE INTO pages_to_delete VALUES (?,?,'')", (str(sc), slug))
        self.delete_page(str(sc), slug)

    def _own_file(self, sc: Scope, page: Page) -> Page:
        """``page``, titled ``title 2`` (3...) when the page file its title names holds a page of another title: "C#"
        and "C++" are both ``c.md``, and the second written used to replace the first, whose facts were then on no
        page. Titles that differ only in letter case, spacing and punctuation ("Dr. Smith", "Dr Smith") name the
        same page; a file that cannot be read is left to the caller (it is never overwritten)."""
        title, _ = self._title_slot(sc, page.title)
        return page if title == page.title else replace(page, title=title)

    def _title_slot(self, sc: Scope, title: str) -> tuple[str, bool]:
        """The title under which the page ``title`` names lives (``title``, or ``title 2``, 3... when pages of other
        titles hold those files) and whether its file exists. A numbered page is found after its namesake before it
        was deleted, too: a file name freed is not taken while the page of that title lives under a number."""
        folder = self.pages.path_for(sc, "x").parent
        try:
            names = {unicodedata.normalize("NFC", e.name[:-3]) for e in os.scandir(folder) if e.name.endswith(".md")}
        except OSError:  # no folder yet (or not readable: the write says so)
            names = set()
        free = None
        for n in range(1, _MAX_NAMESAKES + 1):
            tried = title if n == 1 else _numbered(title, n)
            if slugify(tried) not in names:
                free = free or tried
                continue
            try:
                text = self.pages.read_text(sc, slugify(tried))
                other = None if text is None else parse_page(text).title
            except PageFormatError:
                if free is None:
                    return tried, True  # the caller leaves a file it cannot read alone
                continue
            if other is not None and _same_title(other, tried):
                return tried, True
            if other is None:
                free = free or tried
        same = self._same_titled(sc, title, names)
        if same is not None:  # "WiFi" when "Wi-Fi" is a page: that page, under its own title (one page, not two)
            return same, True
        if free is not None:
            return free, False
        raise PageRefused(f"The page “{title[:80]}” was not written: {_MAX_NAMESAKES} pages of other titles already "
                          "have its file name. Rename or merge some of them in the Wiki.")

    def _same_titled(self, sc: Scope, title: str, names: set[str]) -> str | None:
        """The title of a page of ``sc`` whose title is ``title`` but for letter case, spacing and punctuation
        (``title_key``) and whose file another name holds ("Wi-Fi" is ``wi-fi.md``, "WiFi" ``wifi.md``), or None.
        Only the files whose names hold the title's letters and digits (a numbered namesake's too) are read."""
        key = "".join(ch for ch in title_key(title) if ch.isalnum())

        def letters(name: str) -> str:
            return "".join(ch for ch in name.casefold() if ch.isalnum())

        for name in sorted(names):
            held = letters(name)
            if not key or not (held == key or (held.startswith(key) and held[len(key):].isdigit())
                               or (len(name) >= 80 and key.startswith(held))):
                continue
            try:
                text = self.pages.read_text(sc, name)
                other = None if text is None else parse_page(text).title
            except PageFormatError:
                continue
            if other is not None and _same_title(other, title):
                return other
        return None

    def _slug_of(self, sc: Scope, title_or_slug: str) -> str:
        """The file a page is read by: a slug as it is; a title, the file of the page of that title (see
        ``_title_slot``: "C++" is ``c-2.md`` when ``c.md`` holds "C#")."""
        slug = slugify(title_or_slug)
        if slug == title_or_slug or (re.fullmatch(r"[\w-]+", title_or_slug)
                                     and self.pages.path_for(sc, title_or_slug).is_file()):
            return title_or_slug  # a page's own file name (one cut at a space ends in "-")
        try:
            title, _ = self._title_slot(sc, title_or_slug)
        except PageRefused:
            return slug
        return slugify(title)

    def _free_title(self, sc: Scope, title: str) -> str:
        """``title``, or ``title 2``, ``title 3``... : the first no page of the scope has."""
        title = title[:60].strip() or "Notes"  # a slug is cut at 80 characters: "title 2" must differ from "title"
        n, free = 1, title
        while self.pages.path_for(sc, slugify(free)).exists():
            n += 1
            free = f"{title} {n}"
        return free

    def _drop_claims(self, sc: Scope, slug: str, gone: set[str], said: dict[str, set[str]] | None = None,
                     moved: dict[str, str] | None = None) -> set[str] | None:
        """Takes the claims resting on the ``gone`` sources off a page. With ``said`` (what each gone source said,
        read before its file went), the names the page gives to what only they said go too: a link or heading
        naming it, a category naming it (it becomes "notes"), and the whole page if its title names it (a verified
        page, holding the person's corrections, stays under its category's name instead: ``moved`` is told its old
        key and its new one). A page left with nothing to say is deleted, verified or not, and the sources it still
        cites wait in the inbox again (``_unwrite``): a sentence citing a kept source beside a gone one went. Returns,
        when the page's title went so, the stems it named that only the deleted sources said (links to it from other
        pages name them too); None when the page went for having nothing left (links to it open nothing now); else
        nothing."""
        idx = self.index(sc)
        try:
            page = self.pages.read(sc, slug)
        except PageFormatError:  # the person's to mend: only what rests on the deleted sources leaves the file
            page = None
            try:  # bytes that are not UTF-8 (saved by a Latin-1 editor, say) go back as they were
                data = self.pages.read_bytes(sc, slug)
            except PageFormatError:  # not a file (a folder or a named pipe named like the page): nothing to mend
                data = None
            text: str | None = None if data is None else data.decode("utf-8", "surrogateescape")
            kept = None if text is None else text_without_sources(text, gone)
            if kept is not None:
                self.pages.write_text(sc, slug, kept)
        if page is None:
            idx.remove([f"page:{sc}/{slug}"])
            idx.commit()
            self._claims_dropped(sc, slug, gone)
            return set()
        told = set().union(*(said.get(sid, set()) for sid in page.citations.values() if sid in gone)) if said else set()
        page = page.without_sources(gone)
        only = self._said_only_by_gone(page, told) if told else set()
        if only:  # a link to a page that is there names that page, not what the deleted source said
            page = page.without_names(lambda text: bool(telling_stems(text) & only) and not self.pages.path_for(
                sc, _named_slug(text)).exists())
            if telling_stems(page.category) & only:
                page = replace(page, category="notes")
        title_gone = only if only & telling_stems(page.title) else set()
        renamed = ""
        if title_gone:
            if not page.verified:
                self._unwrite(sc, slug, page)
                return title_gone
            # A verified page holds the person's own corrections: it stays, under its category for a title. Its
            # copy is written before the page goes (once it is: a kill in between leaves the next run to do that).
            page = replace(page, title=self._free_title(sc, page.category.strip().capitalize() or "Notes"))
            renamed, slug = slug, page.slug
            with self.catalog.tx(immediate=True) as db:
                db.executemany("INSERT OR IGNORE INTO citations VALUES (?,?,?)",
                               [(str(sc), slug, sid) for sid in page.citations.values()])
                db.execute("INSERT OR REPLACE INTO pages_to_delete VALUES (?,?,?)", (str(sc), renamed, slug))
        emptied = not any(holds_something(line) for line in page.body.split("\n"))  # nothing but bare links left
        if emptied:  # a sentence citing a kept source went too (Alice's, beside Bob's): its facts are written anew
            self._unwrite(sc, slug, page)
        else:
            self.pages.write(page)
            idx.add([_page_doc(page)])
        idx.commit()
        if renamed:
            self._renamed(sc, renamed, slug)
            if not emptied and moved is not None:
                moved[f"page:{sc}/{renamed}"] = page.key
        self._claims_dropped(sc, slug, gone)
        return None if emptied and not title_gone else title_gone

    def _renamed(self, sc: Scope, old: str, slug: str) -> None:
        """A verified page's copy under a new title (file ``slug``) is written: it waits for a rewrite, as the page
        did, and the page under the old title (file ``old``) goes."""
        with self.catalog.tx(immediate=True) as db:
            if self.pages.path_for(sc, slug).is_file():  # not if nothing but bare links was left of it
                db.execute("INSERT OR REPLACE INTO stale_pages VALUES (?,?,?,?)",
                           (str(sc), slug, "a cited source was deleted", time.time()))
        self.delete_page(str(sc), old)

    def _claims_dropped(self, sc: Scope, slug: str, gone: set[str]) -> None:
        """The page lost the claims of the ``gone`` sources, in its file and its index: it owes them nothing now."""
        with self.catalog.tx(immediate=True) as db:
            db.executemany("DELETE FROM claims_to_drop WHERE scope=? AND slug=? AND source_id=?",
                           [(str(sc), slug, sid) for sid in gone])

    def _unlink_gone_titles(self, sc: Scope, titles: dict[str, set[str] | None]) -> set[Scope]:
        """Pages of ``sc`` deleted (or renamed) because their title named what only deleted sources said
        (``titles``: their slugs, each with those stems): the links other pages give to them name it too, and go
        as a page's own links naming only what a deleted source said go, unless the linking page's own sentences
        or sources say those words. Pages deleted for having nothing left to say (``titles``: their slugs, each with
        None): every link to them goes (it would open "No page here yet"), whoever said its words. A link opens a
        page of its own scope, else one of its reader's other scopes (the Wiki's ``open_page``): the pages looked at
        are those of every scope a reader of ``sc`` may link from whose links are ``sc``'s person's to change (each
        private and agent scope for a public page; the person's own for theirs: a household page's [[Dentist]] opens
        each reader's own Dentist, and Bob's page gone leaves it to open Alice's), a link to a page its own scope
        still has left alone. Returns the scopes whose pages changed."""
        return {ln for ln, opens_in in self._linking_scopes(sc) if self._unlink_in(ln, titles, opens_in)}

    def _linking_scopes(self, sc: Scope) -> list[tuple[Scope, set[Scope]]]:
        """The scopes whose pages' links may open a page of ``sc`` and are its person's to change, each with the
        scopes its links open a page of. A link opens a page of its own scope, else one of its reader's other scopes
        (the Wiki's ``open_page``): every scope a reader of ``sc`` may link from (each private and agent scope for a
        public page), but a person's change (a page deleted or merged) changes their own scopes' pages only: the
        household's page links open everyone's pages, they are not one person's to take off or aim."""
        have = self.pages.scopes()
        return [(ln, {sc, ln} | {o for o in have if o.person == ln.person}) for ln in have
                if sc.kind == "public" or ln.person == sc.person]

    def relink_merged(self, scope: str, gone: str, kept: Page) -> set[Scope]:
        """The page of file ``gone`` in ``scope`` was merged into ``kept`` (nightly) and deleted: the links other pages
        give to it, in every scope whose links could open it, open ``kept`` now ([[Dentists]] becomes
        [[Dentist|Dentists]]), where no page of that name is left for them to open and ``kept``'s title opens
        ``kept`` there. A person's merge changes their own scopes' pages only (a household page's link opens each
        reader's own page of that name). Returns the scopes whose pages changed."""
        sc = Scope.parse(scope)
        changed: set[Scope] = set()
        with self._lock:
            for ln, opens_in in self._linking_scopes(sc):
                if ln != sc and self.pages.path_for(ln, kept.slug).exists():
                    continue  # there a link to the kept title opens a page of that scope's own
                if any(self.pages.path_for(s, gone).exists() for s in opens_in):
                    continue  # a page of the old name is there still: its links open it
                idx = None
                for page in self.pages.scan(ln)[0]:
                    new = page.relinked(lambda name: kept.title if _named_slug(name) == gone else None)
                    if new is page:
                        continue
                    self.pages.write(new)
                    idx = idx or self.index(ln)
                    idx.add([_page_doc(new)])
                if idx is not None:
                    idx.commit()
                    changed.add(ln)
        return changed

    def _unlink_in(self, ln: Scope, titles: dict[str, set[str] | None], opens_in: set[Scope]) -> bool:
        """``_unlink_gone_titles`` for the pages of one linking scope ``ln``, whose links open a page of the scopes
        ``opens_in`` (one still there there keeps its links); whether any page changed."""
        def to_gone(text: str) -> bool:
            slug = _named_slug(text)
            return slug in titles and not any(self.pages.path_for(s, slug).exists() for s in opens_in)

        def goes(text: str, only: set[str]) -> bool:
            """A link to a page gone for having nothing left (a heading of its words stays: it names a part of
            this page), or a link or heading naming what only the deleted sources said."""
            if not to_gone(text):
                return False
            told = titles[_named_slug(text)]
            return not is_heading(text) if told is None else bool(telling_stems(text) & only)

        idx = None
        for page in self.pages.scan(ln)[0]:
            named = [n for n in names_in(page.body) if to_gone(n)]
            told = set().union(*(titles[_named_slug(n)] or set() for n in named))
            only = self._said_only_by_gone(page, told) if told else set()
            if not only and not any(titles[_named_slug(n)] is None and not is_heading(n) for n in named):
                continue
            kept = page.without_names(lambda text, only=only: goes(text, only))
            if kept is page:
                continue
            left = any(holds_something(line) for line in kept.body.split("\n"))
            had = any(holds_something(line) for line in page.body.split("\n"))
            idx = idx or self.index(ln)
            # A page that said something and is left with nothing but bare links goes; a page of links the person
            # wrote or verified (a "Family links" page) keeps its other links
            if not page.verified and not left and (had or not kept.body.strip()):
                self.delete_page(str(ln), kept.slug)
            else:
                self.pages.write(kept)
                idx.add([_page_doc(kept)])
        if idx is not None:
            idx.commit()
        return idx is not None

    def _drop_scope(self, sc: Scope) -> None:
        with self._lock:
            self._drops += 1
            idx = self._indexes.pop(sc, None)
            with self._status:
                self._aside.pop(str(sc), None)
            if idx is not None:
                idx.close()
            for base in ("sources", "wiki", "index"):
                shutil.rmtree(self.root / base / sc.relpath, ignore_errors=True)
            upto = json.dumps(self.positions() if self.positions is not None else {})
            with self.catalog.tx(immediate=True) as db:
                # The watermarks stay: what was forgotten is never pulled again from chats or mail.
                for table in ("inbox", "citations", "stale_pages", "proposals", "deleted_by_person", "claims_to_drop",
                              "pages_to_delete", "checked_pages"):
                    db.execute(f"DELETE FROM {table} WHERE scope=?", (str(sc),))
                db.execute("INSERT OR REPLACE INTO forgotten (scope, at, upto) VALUES (?,?,?)",
                           (str(sc), time.time(), upto))
                db.execute("DELETE FROM quarantine WHERE scope=?", (str(sc),))
                db.execute("DELETE FROM skips WHERE scope=?", (str(sc),))
            self.catalog.purge()

    def deleted_keys(self, scope: str, keys: Sequence[str]) -> set[str]:
        """Which of these origin keys (a conversation's message ids, say) name a source the person deleted."""
        out: set[str] = set()
        keys = list(keys)
        for part in range(0, len(keys), 500):
            chunk = keys[part:part + 500]
            out |= {r[0] for r in self.catalog.query(
                f"SELECT item_key FROM deleted_by_person WHERE scope=? AND item_key IN ({','.join('?' * len(chunk))})",
                (str(Scope.parse(scope)), *chunk))}
        return out

    def was_deleted(self, source_id: str) -> bool:
        """Whether a source of this id was deleted (a job that makes sources by id must not make it again)."""
        return bool(self.catalog.query("SELECT 1 FROM deleted_ids WHERE id=?", (source_id,)))

    def is_forgotten(self, item: Item) -> bool:
        """Whether ``item`` (read from its origin before a forget, stored after) is something the person forgot."""
        with self.catalog.tx() as db:
            return forgotten(db, item)

    def forgotten_at(self, scope: str) -> float:
        """When the scope was last forgotten (0.0 if never): what was said before then stays forgotten."""
        rows = self.catalog.query("SELECT at FROM forgotten WHERE scope=?", (str(Scope.parse(scope)),))
        return float(rows[0][0]) if rows else 0.0

    def stored_texts(self, scopes: Sequence[str] | None = None) -> Iterator[str]:
        """Every text memory keeps in ``scopes`` (all, when None): sources and their titles, pages, proposals, held
        items and the extraction model's skip reasons (what a placeholder found in none of them is no longer
        used by)."""
        scs = [Scope.parse(sc) for sc in scopes] if scopes is not None else None
        if scs == []:
            return
        with self._lock:
            for base in ("sources", "wiki"):
                for folder in ([self.root / base / sc.relpath for sc in scs] if scs is not None else [self.root / base]):
                    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
                        if path.is_file():
                            try:
                                yield path.read_text("utf-8", errors="replace")
                            except OSError:
                                continue
            where, args = ("", ()) if scs is None else (
                f" WHERE scope IN ({','.join('?' * len(scs))})", tuple(str(sc) for sc in scs))
            for table, cols in (("sources", "title"), ("proposals", "base_text, proposed_text, diff"),
                                ("quarantine", "text, reason, head"), ("skips", "reason")):
                for row in self.catalog.query(f"SELECT {cols} FROM {table}{where}", args):
                    yield from (str(v) for v in row if v)

    def forget_agent(self, person: str, agent: str, *, elsewhere: bool = True, keys: Sequence[str] = ()) -> int:
        """Deletes everything one agent learned: its own scope, what it tried to store and was held back, and
        (``elsewhere``) the sources it added to other scopes. ``keys`` are the item keys of the person's chat
        with it (its conversations' message ids): the extraction model's reasons for skipping them, which may quote
        them, leave the person's private scope too."""
        sc = Scope("agent", person, agent)
        Scope.parse(str(sc))
        private = str(Scope.parse(f"private/{person}"))
        ids = [r[0] for r in self.catalog.query(
            "SELECT id FROM sources WHERE scope=? OR (? AND owner=? AND agent=?)", (str(sc), elsewhere, person, agent))]
        self._delete_sources(ids)
        with self.catalog.tx(immediate=True) as db:  # what it tried to store anywhere and was held back
            db.execute("DELETE FROM quarantine WHERE owner=? AND agent=?", (person, agent))
            _drop_skips(db, private, keys)
        self._drop_scope(sc)  # purges the catalog: what was deleted is in none of its files
        return len(ids)

    def forget_origins(self, scope: str, keys: Sequence[str] = (), key_starts: Sequence[str] = ()) -> int:
        """Deletes all memory kept of some origins in ``scope`` (the messages of a deleted conversation and its
        summaries, say): their sources (pages that cite them are re-synthesised), what of them was held back, and
        the extraction model's reasons for skipping them (which may quote them). ``keys`` are exact item keys,
        ``key_starts`` their beginnings. Returns how many sources were deleted."""
        sc = str(Scope.parse(scope))
        ranges = [(k, k + "\x00") for k in keys] + [(st, st[:-1] + chr(ord(st[-1]) + 1)) for st in key_starts if st]
        ids: list[str] = []
        for lo, hi in ranges:
            ids += [r[0] for r in self.catalog.query(
                "SELECT id FROM sources WHERE scope=? AND item_key >= ? AND item_key < ?", (sc, lo, hi))]
        self._delete_sources(ids)
        with self.catalog.tx(immediate=True) as db:
            for lo, hi in ranges:
                # Kept as forgotten, so a run that read them before now stores nothing of them after.
                db.execute("INSERT OR REPLACE INTO forgotten_keys VALUES (?,?,?,?)", (sc, lo, hi, time.time()))
                db.execute("DELETE FROM quarantine WHERE scope=? AND item_key >= ? AND item_key < ?", (sc, lo, hi))
            _drop_skips(db, sc, keys, key_starts)
        self.catalog.purge()
        return len(ids)

    def drop_skips(self, scope: str, keys: Sequence[str]) -> int:
        """Deletes the extraction model's reasons for skipping these items of ``scope`` (which may quote them:
        their origin is gone, a deleted conversation's messages, say), so no file of memory's keeps them. What
        memory learned from the origin stays: a skipped item taught it nothing. The items are kept as forgotten, so
        a run that read them before (its model still deciding) stores nothing of them after: their origin is gone.
        Returns how many reasons went."""
        sc = str(Scope.parse(scope))
        with self.catalog.tx(immediate=True) as db:
            n = _drop_skips(db, sc, keys)
            db.executemany("INSERT OR REPLACE INTO forgotten_keys VALUES (?,?,?,?)",
                           [(sc, k, k + "\x00", time.time()) for k in keys])
        if n:
            self.catalog.purge()
        return n

    _THEIRS = "owner=? OR scope=? OR scope LIKE ?"  # a person's sources: theirs anywhere, their private and agents'

    def person_source_count(self, person: str) -> int:
        """How many sources ``forget_person`` would delete: what a removal's confirmation counts as their notes."""
        Scope.parse(f"private/{person}")
        rows = self.catalog.query(f"SELECT COUNT(*) FROM sources WHERE {self._THEIRS}",
                                  (person, f"private/{person}", f"agent/{person}/%"))
        return int(rows[0][0]) if rows else 0

    def forget_person(self, person: str) -> int:
        """Deletes everything about a person: their private tree, their agents' notes, sources they own."""
        Scope.parse(f"private/{person}")
        rows = self.catalog.query(
            f"SELECT id, scope FROM sources WHERE {self._THEIRS}",
            (person, f"private/{person}", f"agent/{person}/%"),
        )
        self._delete_sources([r[0] for r in rows])
        with self.catalog.tx(immediate=True) as db:  # held-back items of theirs, in shared and public scopes too
            db.execute("DELETE FROM quarantine WHERE owner=?", (person,))
            # and what they deleted from or discarded for the household's memory: it kept out their items alone
            db.execute("DELETE FROM deleted_by_person WHERE scope='public' AND owner=?", (person,))
        scopes = {Scope("private", person)}
        for base in ("sources", "wiki", "index"):
            d = self.root / base / "agent" / person
            if d.exists():
                scopes |= {Scope("agent", person, p.name) for p in d.iterdir() if p.is_dir()}
        for sc in scopes:
            self._drop_scope(sc)
        return len(rows)

    # ---- pages -----------------------------------------------------------------------------------

    def read_page(self, scope: str, title_or_slug: str) -> Page | None:
        sc = Scope.parse(scope)
        return self.pages.read(sc, self._slug_of(sc, title_or_slug))

    def list_pages(self, scope: str) -> tuple[list[Page], list[str]]:
        """Pages of a scope plus one message per corrupt file skipped."""
        return self.pages.scan(Scope.parse(scope))

    def view_page(self, scope: str, title_or_slug: str, viewer: Viewer) -> Page | None:
        """A page as ``viewer`` sees it: None if the scope is not theirs; citations they may not see removed."""
        if not viewer.may_see(scope):
            return None
        page = self.read_page(scope, title_or_slug)
        if page is None:
            return None

        def may_see(sid: str) -> bool:
            s = self.source_scope(sid)
            return s is not None and viewer.may_see(s)

        return page.visible_to(may_see)

    def check_citations(self, page: Page) -> None:
        """Raises CitationError if a [n] has no source, a source is unknown, or is narrower than the page."""
        psc = Scope.parse(page.scope)
        used = page.cited_numbers()
        undefined = [n for n in used if n not in page.citations]
        if undefined:
            raise CitationError(f"Page {page.title!r} uses citation(s) {undefined} with no source listed under '## Sources'.")
        for n, sid in sorted(page.citations.items()):
            s = self.source_scope(sid)
            if s is None:
                raise CitationError(f"Page {page.title!r} cites [{n}] {sid!r}, which is not a stored source.")
            if not psc.may_cite(Scope.parse(s)):
                raise CitationError(
                    f"Page {page.title!r} in {page.scope} cites [{n}] from {s}: readers of this page could not see it. "
                    f"Write the page in {s} instead."
                )

    def write_page(self, page: Page, *, author: str, propose: bool = False, ahead: Ahead | None = None,
                   expected: tuple[str, Mapping[int, str]] | None = None) -> PageWrite:
        """Writes a page. ``author`` is ``person:<name>`` or ``agent:<name>``.

        An agent's write to a verified page, or to a page file that no longer parses (a hand edit with a typo
        in its front matter), becomes a proposal with a unified diff; persons write directly. With ``propose``, an
        agent's write to any page that exists is a proposal (a merge of two pages whose titles differ, for the person
        to approve).

        With ``expected`` (the body and citations the writer read, a person's correction of them), the page is
        written only if it still says that: checked and written under the whole wiki's writer lease, which every
        process's ingest and nightly pass hold while they write pages (``pipeline.wiki_pen``), and memory's lock.
        PageChanged if it says anything else now (or no longer parses), KeyError if it is gone, LeaseBusy (never
        waited for: ``moment`` says to try again shortly) while another writer holds the lease.
        """
        if expected is None:
            return self.write_pages([page], author=author, propose=propose, ahead=ahead)[0]
        with self._persons_pen():
            try:
                now = self.read_page(page.scope, page.slug)
            except PageFormatError as exc:
                raise PageChanged(f"The page “{page.title}” changed since it was read (its file no longer "
                                  "parses): it was not written.") from exc
            if now is None:
                raise KeyError(f"No page {page.slug!r} in {page.scope}.")
            if (now.body, dict(now.citations)) != (expected[0], dict(expected[1])):
                raise PageChanged(f"The page “{now.title}” changed since it was read (an ingest or another correction wrote it): it was "
                                  "not written.")
            return self.write_pages([page], author=author, propose=propose, ahead=ahead)[0]

    @contextlib.contextmanager
    def _persons_pen(self) -> Iterator[None]:
        """For a person's change to a page that is checked against the page as it reads now (a correction, Verified,
        an approval): the whole wiki's writer lease, which every process's ingest and nightly pass hold while they
        write pages (``pipeline.wiki_pen``), taken for a moment, and memory's lock, so no other process writes the
        page between the check and the write. LeaseBusy (never waited for: ``moment`` says to try again shortly)
        while another writer holds the lease."""
        with Lease(self.catalog, "ingest", ttl=60.0, moment=True), self._lock:
            self._check_open()
            yield

    def write_pages(self, pages: Sequence[Page], *, author: str, propose: bool = False,
                    ahead: Ahead | None = None) -> list[PageWrite]:
        """Writes several pages with one index commit per scope (see ``write_page``). Stops at the first
        page whose citations are invalid, after committing the pages before it. ``ahead``: the pages' vectors, made by
        ``vectors_ahead(pages=...)`` before memory was locked (an ingest's pages: its steps yield ``pipeline.Embed``);
        a page without one is embedded as it is written."""
        if not (author.startswith("person:") or author.startswith("agent:")):
            raise ValueError("author must be 'person:<name>' or 'agent:<name>'.")
        out: list[PageWrite] = []
        with self._lock:
            self._check_open()
            batch = self._touched
            touched: set[Scope] = set() if batch is None else batch
            try:
                for page in pages:
                    out.append(self._write_one(page, author, touched, propose, ahead))
            finally:
                if batch is None:
                    for sc in touched:
                        self.index(sc).commit()
        return out

    @contextlib.contextmanager
    def one_commit(self) -> Iterator[None]:
        """Holds memory's lock; the pages written meanwhile (``write_page`` one by one, each page's failure its own)
        share one index commit per scope, made at the end, as ``write_pages``' do: a commit of the full-text index
        takes 20-60 ms, and an ingest's 61 pages committed one by one held memory's thread 1.5-3.5 s."""
        with self._lock:
            if self._touched is not None:  # within one already: its end commits
                yield
                return
            self._touched = set()
            try:
                yield
            finally:
                touched, self._touched = self._touched, None
                for sc in touched:
                    self.index(sc).commit()

    def _write_one(self, page: Page, author: str, touched: set[Scope], propose: bool = False,
                   ahead: Ahead | None = None) -> PageWrite:
        if not _is_person(author) and len(page.body) > MAX_PAGE_CHARS:  # a looping or hostile writer: the window;
            # refused before its text is cleaned and redacted (megabytes of it held the writer's thread)
            title = self.clean_page(replace(page, body="")).title
            raise PageRefused(f"The page “{title}” the model wrote is {len(page.body):,} characters; a page "
                              f"holds at most {MAX_PAGE_CHARS:,}. It was not written; its sources stay.")
        page = self.clean_page(page)
        sc = Scope.parse(page.scope)
        self.check_citations(page)
        if not _is_person(author) and not page.cited_numbers():
            raise PageRefused(f"The page “{page.title}” cites no source (memory keeps only what it can cite); it was "
                              "not written.")
        left_out: tuple[tuple[str, str], ...] = ()
        if not _is_person(author) or sc.kind == "public":  # memory is data: a page that gives the assistant orders
            # is not written as it is, a model's, or a person's correction of a household page (everyone's assistants
            # read it as memory; a person's own page is theirs to write). Every part of the page that reaches its file
            # and the index: title, category, extra fields, body.
            names = self.agents_called()
            verdict = check_instructions("\n".join([page.title, page.category, *page.extra.values(), page.body]),
                                         names)
            if not verdict.ok and _is_person(author):
                raise PageRefused(f"everyone's assistants read the household page “{page.title}” as memory, and it "
                                  f"would hold a line that {held_because(verdict.reason)} (“{verdict.excerpt}”). "
                                  "Take that out, or write it on a page of your own.")
            if not verdict.ok:  # a model's page is written without those lines, and says which it left out: refused
                # whole, its sources waited and every ingest asked the model for the same page again, for good
                kept, left_out = self._without_orders(page, sc, names)
                if kept is None:
                    with self.catalog.tx(immediate=True) as db:  # a rewrite asked for is done: not asked nightly
                        db.execute("DELETE FROM stale_pages WHERE scope=? AND slug=?", (str(sc), page.slug))
                    return PageWrite("left out", page.key, left_out=left_out)
                page = kept
        page = self._own_file(sc, page)
        current = self.pages.read_text(sc, page.slug)
        cur_page: Page | None = None
        unreadable = False
        if current is not None:
            try:
                cur_page = parse_page(current, where=str(self.pages.path_for(sc, page.slug)))
            except PageFormatError:
                unreadable = True  # a hand edit gone wrong, say: it is the person's to mend, never overwritten
        new = replace(page, updated=iso_utc(time.time()))
        if not _is_person(author) and (unreadable or (cur_page is not None and (cur_page.verified or propose))):
            new = replace(new, verified=cur_page is not None)
            text = new.to_markdown()
            diff = unified_diff(current or "", text, f"{sc}/{page.slug}.md")
            with self.catalog.tx(immediate=True) as db:
                # A rewrite asked for (a source the page cited was deleted) is done once the person has it to decide,
                # has turned it down, or it changes nothing: the page is not sent to the model again, run after run.
                db.execute("DELETE FROM stale_pages WHERE scope=? AND slug=?", (str(sc), page.slug))
                said = _as_read(text)  # what it says, as the person reads it (spaces, numbering aside)
                if cur_page is not None and _as_read(current or "") == said:
                    return PageWrite("unchanged", new.key, left_out=left_out)  # the page handed back as it reads: nothing to ask
                # The same change still waiting (an ingest that ran again after a crash, before its inbox was
                # emptied, proposes it anew): the person is asked once. The same change the person already
                # turned down, on the page as it still reads, is not asked again. (An open one is on the page as
                # it is, byte for byte: that is the page its approval checks.)
                same = next(((r["id"], r["status"]) for r in db.execute(
                    "SELECT id, status, base_text, proposed_text FROM proposals WHERE scope=? AND slug=? "
                    "AND status IN ('open', 'rejected') ORDER BY status='open' DESC, id DESC", (str(sc), page.slug))
                    if (r["base_text"] == (current or "") if r["status"] == "open"
                        else _as_read(r["base_text"]) == _as_read(current or ""))
                    and _as_read(r["proposed_text"]) == said), None)
                if same is not None:
                    return PageWrite("proposed" if same[1] == "open" else "rejected", new.key, int(same[0]), diff,
                                     left_out)
                if propose:  # a merge proposed anew (its pages changed since) replaces the one still waiting: one card
                    for r in db.execute("SELECT id FROM proposals WHERE scope=? AND slug=? AND status='open' AND "
                                        "author=?", (str(sc), page.slug, author)).fetchall():
                        _withdraw(db, int(r["id"]), "open")
                cur = db.execute(
                    "INSERT INTO proposals (scope, slug, base_text, proposed_text, diff, author, created_at) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (str(sc), page.slug, current or "", text, diff, author, time.time()),
                )
                pid = int(cur.lastrowid or 0)
            return PageWrite("proposed", new.key, pid, diff, left_out)
        if _is_person(author) and cur_page is not None and cur_page.verified:
            new = replace(new, verified=True)
        self._store_page(new, commit=False, ahead=ahead)
        touched.add(sc)
        return PageWrite("written", new.key, left_out=left_out)

    def _without_orders(self, page: Page, sc: Scope, names: Sequence[str] = ()
                        ) -> tuple[Page | None, tuple[tuple[str, str], ...]]:
        """A model's ``page`` without what gives the assistant orders, and each line left out with why: its claims
        that give one (``pages.without_sentences``: a sentence with the uncited ones that rest on its citation, or a
        paragraph whose claims give one together), a category that gives one (the page's is then "notes"), a front
        matter field that gives one. In a person's own scope (private, an agent's notes) a sentence their page holds
        already stays: their page is theirs to write, and no one else's assistant reads it. None when nothing of the
        page may be written: its title gives an order, or nothing cited is left."""
        left: list[tuple[str, str]] = []

        def order(text: str) -> bool:
            found = check_instructions(text, names)
            if not found.ok:
                left.append((" ".join(text.split()), held_because(found.reason)))
            return not found.ok

        if order(page.title):
            return None, tuple(left)
        page = replace(page, category="notes" if order(page.category) else page.category,
                       extra={k: v for k, v in page.extra.items() if not order(v)})
        try:
            cur = self.pages.read(sc, page.slug) if sc.kind != "public" else None
        except PageFormatError:
            cur = None  # a hand edit gone wrong: the writer's draft becomes a proposal, nothing of it is theirs yet
        held = {as_claim(s, cur.citations) for s in sentences(cur.body)} if cur is not None else set()

        def theirs(sentence: str) -> bool:
            return as_claim(sentence, page.citations) in held

        whys: list[str] = []

        def orders(text: str) -> bool:
            if theirs(text):
                return False
            found = check_instructions(text, names)
            if not found.ok:
                whys.append(held_because(found.reason))
            return not found.ok

        body, gone = without_sentences(page.body, orders)
        left += zip(gone, whys, strict=True)
        mine, _ = without_sentences(body, theirs)  # what this page says besides their own lines, read whole once more
        verdict = check_instructions("\n".join([page.title, page.category, *page.extra.values(), mine]), names)
        if not verdict.ok:  # an order told across paragraphs, or the title's line read on into the body's first
            return None, (*left, (verdict.excerpt, held_because(verdict.reason)))
        used = set(replace(page, body=body).cited_numbers())
        kept = replace(page, body=body, citations={n: sid for n, sid in page.citations.items() if n in used})
        return (kept if used else None), tuple(left)

    def _store_page(self, page: Page, *, commit: bool = True, ahead: Ahead | None = None) -> None:
        sc = Scope.parse(page.scope)
        cites = [(str(sc), page.slug, sid) for sid in page.citations.values()]
        # What the page will cite is recorded before its file is written: a process killed in between leaves the
        # catalog naming too many sources for it (harmless), never too few (a source deleted later would then
        # not be looked for on the page, and its claim would stay there for good).
        with self.catalog.tx(immediate=True) as db:
            db.executemany("INSERT OR IGNORE INTO citations VALUES (?,?,?)", cites)
        self.pages.write(page)
        with self.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM citations WHERE scope=? AND slug=?", (str(sc), page.slug))
            db.executemany("INSERT OR IGNORE INTO citations VALUES (?,?,?)", cites)
            db.execute("DELETE FROM stale_pages WHERE scope=? AND slug=?", (str(sc), page.slug))
        idx = self.index(sc)
        idx.add([_page_doc(page)], ahead)
        if commit:
            idx.commit()
        self._added(idx)

    def set_verified(self, scope: str, title_or_slug: str, verified: bool = True, *,
                     read: tuple[str, dict[int, str]] | None = None) -> Page:
        """A person marks a page verified (or not); agents then can only propose changes to it. With ``read`` (the
        body and citations the person was shown), a page that says something else now (an ingest rewrote it since)
        is not verified: PageChanged, and they read it again first. The page is read and written back under the
        whole wiki's writer lease, as a correction is (``write_page`` with ``expected``): another process's Save or
        ingest never lands between the two, to be overwritten with the text read; LeaseBusy while another writer
        holds it."""
        with self._persons_pen():
            page = self.read_page(scope, title_or_slug)
            if page is None:
                raise KeyError(f"No page {title_or_slug!r} in {scope}.")
            if verified and read is not None and (page.body, dict(page.citations)) != (read[0], dict(read[1])):
                raise PageChanged(f"The page “{page.title}” changed since it was shown (an ingest or another correction wrote it): it was "
                                  "not marked verified.")
            page = replace(page, verified=verified)
            self.pages.write(page)
            self.index(page.scope).page_settled([page.key])  # the same words: its document stays as it is
            return page

    def delete_page(self, scope: str, title_or_slug: str) -> None:
        sc = Scope.parse(scope)
        slug = self._slug_of(sc, title_or_slug)
        self.pages.delete(sc, slug)
        with self.catalog.tx(immediate=True) as db:
            for table in ("citations", "stale_pages", "claims_to_drop", "pages_to_delete"):
                db.execute(f"DELETE FROM {table} WHERE scope=? AND slug=?", (str(sc), slug))
        idx = self.index(sc)
        idx.remove([f"page:{sc}/{slug}"])
        idx.commit()

    def proposals(self, status: str = "open") -> list[Proposal]:
        if status == "open":
            self._settle_applied()
        rows = self.catalog.query("SELECT * FROM proposals WHERE status=? ORDER BY id", (status,))
        return [Proposal(r["id"], r["scope"], r["slug"], r["diff"], r["proposed_text"], r["author"], r["status"], r["created_at"]) for r in rows]

    @staticmethod
    def _approved_text(proposed_text: str, proposal_id: int) -> str:
        """The page file approving a proposal writes."""
        return replace(parse_page(proposed_text, where=f"proposal #{proposal_id}"), verified=True).to_markdown()

    def _settle_applied(self, only: int | None = None) -> list[int]:
        """Open proposals whose change is on their page already (an approval cut short by a kill after the page was
        written, or the person made the same edit) are approved: not left waiting, refused as out of date, or
        rejected while their change stays. Returns their ids."""
        done = []
        for r in self.catalog.query("SELECT id, scope, slug, proposed_text FROM proposals WHERE status='open'"
                                    + ("" if only is None else " AND id=?"), () if only is None else (only,)):
            try:
                current = self.pages.read_text(Scope.parse(r["scope"]), r["slug"])
                applied = current is not None and (_UPDATED.sub("", current, 1) == _UPDATED.sub(
                    "", self._approved_text(r["proposed_text"], r["id"]), 1))
            except PageFormatError:
                continue
            if applied:
                done.append(int(r["id"]))
        if done:
            with self.catalog.tx() as db:
                db.executemany("UPDATE proposals SET status='approved', decided_at=? WHERE id=? AND status='open'",
                               [(time.time(), pid) for pid in done])
        return done

    def approve_proposal(self, proposal_id: int) -> Page:
        """The person accepts an agent's change to a verified page; the page stays verified. Only onto the page the
        proposal was made from: checked and written under the whole wiki's writer lease, as a correction is
        (``write_page`` with ``expected``), so another process's Save or ingest never lands between the check and the
        write, to be overwritten with the proposal. PageChanged if the page says anything else now, KeyError if the
        proposal is not open, LeaseBusy while another writer holds the lease."""
        with self._persons_pen():
            rows = self.catalog.query("SELECT * FROM proposals WHERE id=?", (proposal_id,))
            if not rows or rows[0]["status"] != "open":
                raise KeyError(f"No open proposal #{proposal_id}.")
            r = rows[0]
            sc = Scope.parse(r["scope"])
            current = self.pages.read_text(sc, r["slug"]) or ""
            if current != r["base_text"] and self._settle_applied(proposal_id):
                return parse_page(r["proposed_text"], where=f"proposal #{proposal_id}")  # already on the page
            if current != r["base_text"]:
                raise PageChanged(
                    f"The page {r['slug']!r} changed after proposal #{proposal_id} was made: review the page, then "
                    "reject this proposal and let the next ingest propose again."
                )
            page = parse_page(r["proposed_text"], where=f"proposal #{proposal_id}")
            self.check_citations(page)
            # updated the day she approved it (the model is told a page's day to tell the newer of two facts), not
            # the day the proposal was made
            page = replace(page, verified=True, updated=iso_utc(time.time()))
            self._store_page(page)
            with self.catalog.tx() as db:
                db.execute("UPDATE proposals SET status='approved', decided_at=? WHERE id=?",
                           (time.time(), proposal_id))
            return page

    def reject_proposal(self, proposal_id: int) -> None:
        if self._settle_applied(proposal_id):
            raise ValueError(f"The change of proposal #{proposal_id} is on its page already (it was approved just "
                             "before Hearth stopped): it stays approved. Edit the page to take it back.")
        with self.catalog.tx() as db:
            cur = db.execute(
                "UPDATE proposals SET status='rejected', decided_at=? WHERE id=? AND status='open'", (time.time(), proposal_id)
            )
            if cur.rowcount != 1:
                raise KeyError(f"No open proposal #{proposal_id}.")

    def pending_scopes(self) -> list[str]:
        """Scopes with sources waiting in the inbox or pages waiting for re-synthesis (what ingest has to do)."""
        return [r[0] for r in self.catalog.query(
            "SELECT scope FROM inbox WHERE no_page < ? UNION SELECT scope FROM stale_pages ORDER BY 1", (NO_PAGE_TRIES,))]

    def checked_pages(self, scope: str) -> set[str]:
        """The digests the nightly contradiction check found nothing on in ``scope`` (see ``mark_checked``)."""
        return {r[0] for r in self.catalog.query("SELECT digest FROM checked_pages WHERE scope=?", (scope,))}

    def mark_checked(self, scope: str, digests: set[str]) -> None:
        """Records the digests of ``scope``'s pages (their text and the sources they cite, in the caller's words) that
        the nightly contradiction check found nothing on, in place of those recorded before: a page changed since,
        or gone, is no longer among them."""
        now = time.time()
        with self.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM checked_pages WHERE scope=?", (scope,))
            db.executemany("INSERT INTO checked_pages (scope, digest, at) VALUES (?, ?, ?)",
                           [(scope, d, now) for d in sorted(digests)])

    def stale_pages(self) -> list[str]:
        """Keys of pages that cite deleted sources and wait for re-synthesis."""
        return [f"page:{r[0]}/{r[1]}" for r in self.catalog.query("SELECT scope, slug FROM stale_pages ORDER BY scope, slug")]

    def reindex_pages(self, scope: str) -> list[str]:
        """Re-reads a scope's page files into its index (after hand edits): a page whose file is gone leaves it, a new
        or changed one is indexed (embedded) again, an unchanged one keeps its vector. Returns the corrupt-file
        messages."""
        sc = Scope.parse(scope)
        with self._lock:
            pages, errors = self.pages.scan(sc)
            idx = self.index(sc)
            want = {d.id: d for d in map(_page_doc, pages)}
            have = idx.docs([i for i in idx.all_ids() if i.startswith("page:")])
            gone = sorted(set(have) - set(want))
            changed = [d for i, d in want.items() if have.get(i) != ("page", d.title, d.body, d.ts, d.importance)]
            if gone:
                idx.remove(gone)
            if changed:
                idx.add(changed)
            if gone or changed:
                idx.commit()
                self._added(idx)
            return errors

    def refresh_index(self, scope: str) -> list[str]:
        """Brings a scope's index in line with the catalog and its page files (the nightly pass): a source stored
        or removed by a process that died in between is added or taken out, and every page is read again from its
        file (hand edits). The vectors already made are kept: nothing stored is embedded again. Returns the
        corrupt-file messages."""
        sc = Scope.parse(scope)
        with self._lock:
            self._repair(sc, self.index(sc))
            return self.reindex_pages(scope)

    def scopes_on_disk(self) -> list[str]:
        return sorted({r[0] for r in self.catalog.query("SELECT DISTINCT scope FROM sources")})

    # ---- search ----------------------------------------------------------------------------------

    def search(self, query: str, *, scopes: Sequence[str | Scope] | str | Viewer, k: int = 10, mode: str = "hybrid",
               kinds: tuple[str, ...] = ("source", "page")) -> list[Hit]:
        """Searches only the given scopes. ``mode``: ``hybrid`` (meaning + keywords + importance +
        recency, the default), ``keyword`` (the fast full-text path), or ``meaning``. ``kinds`` limits
        hits to sources and/or pages (the keyword path asks the index for pages alone, however many sources
        say the same words)."""
        if mode not in ("hybrid", "keyword", "meaning"):
            raise ValueError("mode must be 'hybrid', 'keyword' or 'meaning'.")
        scs = parse_scopes(scopes)
        query = valid_text(query)
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        want_pages, want_sources = "page" in kinds, "source" in kinds

        def keep(doc_id: str) -> bool:
            return want_pages if doc_id.startswith("page:") else want_sources

        if mode == "keyword" or self.embedder is None:
            return self._keyword(terms, scs, k, keep)
        return self._ranked(query, terms, scs, k, mode, keep)

    def _searchable(self, sc: Scope) -> bool:
        """Whether the scope has anything to search: an index, or sources whose index is to be made again (its
        folder deleted, say: derived data, rebuilt from the catalog when opened)."""
        return (sc in self._indexes or (self.root / "index" / sc.relpath).exists()
                or bool(self.catalog.query("SELECT 1 FROM sources WHERE scope=? LIMIT 1", (str(sc),))))

    def _existing(self, scs: list[Scope]) -> list[ScopeIndex]:
        out = []
        for sc in scs:
            if self._searchable(sc):
                out.append(self.index(sc))
        return out

    def _keyword(self, terms: list[str], scs: list[Scope], k: int, keep: Callable[[str], bool]) -> list[Hit]:
        found: list[tuple[float, Scope, str]] = []
        for sc in scs:
            if not self._searchable(sc):
                continue
            idx = self.index(sc)
            pages = keep("page:") and not keep("")  # pages alone: asked of the index, never found among sources
            want = k if pages or (keep("page:") and keep("")) else 3 * k
            found += [(score, sc, i) for i, score in idx.keyword(terms, want, pages=pages) if keep(i)]
        found.sort(key=lambda t: -t[0])
        return self._hits([(s, sc, i) for s, sc, i in found[:k]], terms)

    def ranking_features(self, query: str, *, scopes: Sequence[str | Scope] | str | Viewer,
                         ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The ids of ranked search's first ``rerank.POOL`` candidates in its first step's order, their
        ``rerank.FEATURES`` and ``rerank.answers`` (what ``bench/train_ranker.py`` learns the last step from)."""
        out: list[tuple[list[str], np.ndarray, np.ndarray]] = []
        query = valid_text(query)
        terms = query_terms(query)
        if terms and self.embedder is not None:
            self._ranked(query, terms, parse_scopes(scopes), rerank.POOL, "hybrid", lambda _: True, explain=out)
        return out[0] if out else ([], np.zeros((0, len(rerank.FEATURES))), np.zeros(0, dtype=np.int64))

    def _ranked(self, query: str, terms: list[str], scs: list[Scope], k: int, mode: str,
                keep: Callable[[str], bool], *, explain: list[tuple[list[str], np.ndarray, np.ndarray]] | None = None,
                ) -> list[Hit]:
        """Every document of the given scopes scored at once (vectors are in memory; keywords come from
        bm25's top ``KEYWORD_POOL``), then the best ``rerank.POOL`` re-ordered by the learned last step, and
        the best ``k`` returned. See the weights above and ``rerank`` for what counts."""
        qvecs: dict[str, np.ndarray | None] = {}
        said = set(query_terms(query)) | set(words(query))
        parts: list[tuple[Scope, ScopeIndex, np.ndarray, np.ndarray, set[int]]] = []
        kw_best = 0.0
        # The question's meaning without the names of the speakers it names: every turn of a speaker's carries
        # that name, so the name would pull the question's vector toward all of them alike.
        spoken: set[str] = set()
        for sc in scs:
            if self._searchable(sc):
                idx = self.index(sc)
                named = idx.speakers_named(said)
                spoken.update(w for name, sid in idx.speakers.items() if sid in named for w in words(name))
        meaning_query = without_words(query, spoken) if spoken else query
        for idx_sc in scs:
            if idx_sc not in self._indexes and not (self.root / "index" / idx_sc.relpath).exists():
                continue
            idx = self.index(idx_sc)
            sims = None
            emb = idx.embedder  # while re-embedding, a scope may still hold the previous model's vectors
            want = self.embedder_for(idx_sc)
            if emb is not None and is_remote(emb) and (want is None or want.name != emb.name):
                emb = None  # a provider no longer chosen is sent no question: keywords rank this scope meanwhile
            if emb is not None:
                if emb.name not in qvecs:
                    qvecs[emb.name] = self._query_vector(emb, meaning_query)
                q = qvecs[emb.name]
                sims = idx.similarities(q) if q is not None else None
                if q is not None and is_remote(emb) and self._answered_size(idx, q.shape[0]):
                    self._start_migration()  # the provider answers another size now: the scope is embedded again
            n = len(idx.ids)
            if n == 0:
                continue
            if sims is None:
                sims = np.zeros(n, dtype=np.float32)
            named = idx.speakers_named(said)
            if len(named) >= len(idx.speakers):
                named = set()  # every speaker is named: that says nothing about who said it
            kw = np.zeros(n, dtype=np.float64)
            if mode == "hybrid":
                # A speaker's name matches half of a two-person chat: it is weighed by who spoke instead.
                name_words = {w for name, sid in idx.speakers.items() if sid in named for w in name.split()}
                kterms = [t for t in terms if t not in name_words] or terms
                got = idx.keyword(kterms, KEYWORD_POOL)
                if len(got) >= KEYWORD_POOL:
                    # The pool is full: the documents closest in meaning that missed it get their exact score too,
                    # so a source that matches both ways is not left without its keywords.
                    pooled = {doc_id for doc_id, _ in got}
                    near = np.argpartition(-sims, min(MEANING_POOL, n) - 1)[:MEANING_POOL]
                    got += idx.keyword_for(kterms, [idx.ids[r] for r in near if idx.ids[r] not in pooled])
                for doc_id, bm25 in got:
                    row = idx.row.get(doc_id)
                    if row is not None and row >= 0:
                        kw[row] = bm25
                kw_best = max(kw_best, float(kw.max()))
            parts.append((idx_sc, idx, sims, kw, named))
        if not parts:
            return []
        if mode == "meaning" and all(v is None for v in qvecs.values()):
            return self._keyword(terms, scs, k, keep)  # the question has no vector: keywords rank instead
        # Meaning is scaled between the best similarity and the MEANING_POOL-th best over all scopes.
        all_sims = np.concatenate([p[2] for p in parts])
        top = np.partition(all_sims, max(0, all_sims.size - MEANING_POOL))[max(0, all_sims.size - MEANING_POOL):]
        lo, hi = float(top.min()), float(all_sims.max())
        now = time.time()
        when_asked = asks_when(query)
        scored: list[tuple[Scope, ScopeIndex, np.ndarray, PartScores | None]] = []
        for sc, idx, sims, kw, named in parts:
            part = None
            if mode == "meaning":
                score = sims.astype(np.float64)
            else:
                sem = np.clip((sims - lo) / (hi - lo), 0.0, None) if hi > lo else np.ones_like(sims, dtype=np.float64)
                kwn = kw / kw_best if kw_best > 0 else kw
                lin = W_KEYWORDS * kwn + W_MEANING * sem
                before, after, asked = idx.neighbours(lin)
                # The facts of a chat are in its answers: a turn that ends by asking counts for less, and the turn
                # that answers it gains a share of the question's score on top of its neighbours' share.
                score = (lin + W_NEIGHBOURS * (before + after) + W_ANSWER * np.where(asked, before, 0.0)) \
                    * np.where(idx.asks, 1.0 - ASK_DISCOUNT, 1.0)
                conv = idx.conversation_max(score)
                score = score + W_CONVERSATION * conv
                by_named = np.zeros(idx.spk.shape, dtype=bool)
                for sid in named:
                    by_named |= idx.spk == sid
                if named:
                    score = score * np.where(by_named, 1.0 + SPEAKER_BOOST, 1.0)
                when = idx.says_when & when_asked
                if when_asked:
                    score = score * np.where(idx.says_when, 1.0 + WHEN_BOOST, 1.0)
                imp = np.where(idx.imp < 0, DEFAULT_IMPORTANCE, idx.imp)
                age_days = np.maximum(0.0, (now - idx.ts) / 86400.0)
                prior = W_IMPORTANCE * imp + W_RECENCY * np.power(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
                score = score + prior
                part = PartScores(idx, score, kwn, sem, sims.astype(np.float64), before, after, asked, conv, by_named,
                                  when, prior)
            scored.append((sc, idx, np.where(idx.alive, score, -np.inf), part))
        want = max(k, rerank.POOL) if mode == "hybrid" else k
        found: list[tuple[float, Scope, str, PartScores | None, int]] = []
        for sc, idx, score, part in scored:
            take = min(score.size, 3 * want + 8)
            cand = np.argpartition(-score, take - 1)[:take]
            cand = cand[np.argsort(-score[cand])]
            taken = 0
            for n in cand:
                if not np.isfinite(score[n]):
                    break
                doc_id = idx.ids[n]
                if keep(doc_id):
                    found.append((float(score[n]), sc, doc_id, part, int(n)))
                    taken += 1
                    if taken >= want:
                        break
        found.sort(key=lambda t: -t[0])
        best = [(s, sc, i) for s, sc, i, _, _ in found]
        # The learned step was trained on full pools: with fewer documents than that its scaled features (a share
        # of the best, a place between the best and the 100th best) mean something else, and the first step's
        # order stands.
        model = self._ranker_for(scored) if mode == "hybrid" and sum(len(i.ids) for _, i, _, _ in scored) > rerank.POOL \
            else None
        if (model is not None or explain is not None) and found and mode == "hybrid":
            pool = found[:rerank.POOL]
            cands = [(part, n) for _, _, _, part, n in pool if part is not None]  # every part is set in hybrid
            qstems = rerank.question_stems(terms)
            feats = rerank.features(cands, qstems, rerank.idf_weights([p for _, _, _, p in scored if p], qstems), terms, query)
            answer = rerank.answers(cands)
            if explain is not None:
                explain.append(([i for _, _, i, _, _ in pool], feats, answer))
                return []
            assert model is not None
            learned = model.score(feats)
            if not np.isfinite(learned).all():
                return self._hits(best[:k], terms)  # a feature the weights cannot read: the first step's order
            # Importance and recency weigh as much against the spread of the learned scores as they do against
            # the first step's: they break near-ties only.
            first = np.array([s for s, _, _, _, _ in pool])
            prior = np.array([part.prior[n] for part, n in cands])
            learned = learned + prior * (learned.std() / first.std() if first.std() > 1e-9 else 1.0)
            learned = 1.0 / (1.0 + np.exp(-np.clip(learned, -30.0, 30.0)))
            order = rerank.answers_first(list(np.argsort(-learned, kind="stable")), answer)
            top = sorted(learned, reverse=True)  # scores stay in the order shown
            best = [(float(top[n]), pool[j][1], pool[j][2]) for n, j in enumerate(order)]
            # Candidates past the pool keep the first step's order, below the last of the pool.
            rest = found[rerank.POOL:]
            if rest:
                floor = min(s for s, _, _ in best) * 0.99
                best += [(floor * s / rest[0][0] if rest[0][0] > 0 else 0.0, sc, i) for s, sc, i, _, _ in rest]
        return self._hits(best[:k], terms)

    def _ranker_for(self, scored: list[tuple[Scope, ScopeIndex, np.ndarray, PartScores | None]]) -> rerank.Ranker | None:
        """The learned last step for the searched scopes' embedding model, if they share one that has it."""
        kinds = {kind_of(idx.embedder.name) if idx.embedder is not None else None for _, idx, _, _ in scored}
        return rerank.ranker_for(kinds.pop()) if len(kinds) == 1 else None

    def _hits(self, found: list[tuple[float, Scope, str]], terms: list[str]) -> list[Hit]:
        by_scope: dict[Scope, list[str]] = {}
        for _, sc, i in found:
            by_scope.setdefault(sc, []).append(i)
        meta = {}
        for sc, ids in by_scope.items():
            for i, m in self.index(sc).docs(ids).items():
                meta[(sc, i)] = m
        out = []
        for score, sc, i in found:
            found_meta = meta.get((sc, i))
            if found_meta is None:
                continue
            kind, title, body, ts, _ = found_meta
            out.append(Hit(i, round(score, 6), _snippet(body, terms), kind, str(sc), title, ts or 0.0))
        return out

    def typeahead(self, prefix: str, *, scopes: Sequence[str | Scope] | str | Viewer, k: int = 8) -> list[Hit]:
        """Titles (pages first) in the given scopes whose words start with what was typed, each offered once: a
        suggestion chosen is searched by its words, so months of one conversation, or a newsletter's mails, which
        share a title, are one suggestion, and the others fill the ``k`` (letter case and spacing aside; a page's
        title before a source's of the same words)."""
        out: list[Hit] = []
        prefix = valid_text(prefix)
        for sc in parse_scopes(scopes):
            if not self._searchable(sc):
                continue
            for i, kind, title in self.index(sc).typeahead(prefix, k):
                out.append(Hit(i, 1.0 if kind == "page" else 0.5, title, kind, str(sc), title))
        out.sort(key=lambda h: (-h.score, len(h.title)))
        once = {title_key(h.title): h for h in reversed(out)}  # the first of each title, in this order
        return [h for h in out if once[title_key(h.title)] is h][:k]

    # ---- lifecycle -------------------------------------------------------------------------------

    def flush(self) -> None:
        with self._lock:
            for idx in self._indexes.values():
                idx.commit()

    def close(self) -> None:
        self._migration_stop.set()
        self._kick.set()
        if self._migration is not None:
            # A provider's request in flight is not waited for: what it answers after this is not stored.
            self._migration.join(timeout=5.0)
        with self._lock:
            if self._closed:
                return
            for idx in self._indexes.values():
                idx.close()
            self._indexes.clear()
            self.catalog.close()
            self._closed = True

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unwritten_again(catalog: Catalog, whose: Callable[[str], bool]) -> int:
    with catalog.tx(immediate=True) as db:
        scopes = [r[0] for r in db.execute("SELECT DISTINCT scope FROM inbox WHERE no_page > 0") if whose(r[0])]
        back = 0
        for sc in scopes:
            back += db.execute("SELECT COUNT(*) FROM inbox WHERE scope=? AND no_page >= ?",
                               (sc, NO_PAGE_TRIES)).fetchone()[0]
            db.execute("UPDATE inbox SET no_page = 0 WHERE scope=?", (sc,))
    return int(back)


def unwritten_again(path: str | Path, whose: Callable[[str], bool]) -> int:
    """``Memory.unwritten_again`` for the memory in folder ``path`` while it is not open: its catalog alone is
    opened (no search index, no embedding model); a folder holding no memory yet has nothing to write again."""
    db = Path(path) / "memory.db"
    if not db.is_file():
        return 0
    catalog = Catalog(db)
    try:
        return _unwritten_again(catalog, whose)
    finally:
        catalog.close()


def open_memory(path: str | Path, *, embedder: Embedder | str | None = "static", only_for: str | None = None) -> Memory:
    """Opens (creating if needed) the memory stored in folder ``path``.

    ``embedder`` is ``"static"`` (fast WordLlama vectors, the default), ``"minilm"`` (MiniLM ONNX, better
    meaning, slower to index), an Embedder object, or None for keyword-only search; ``only_for`` limits it
    to one person's scopes (see ``Memory.set_embedder``).
    """
    return Memory(Path(path), embedder=embedder, only_for=only_for)
