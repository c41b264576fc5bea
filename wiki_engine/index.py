"""One scope's search index: tantivy (bm25 with block-max pruning) for keywords, SQLite FTS5 for
typeahead on titles, and an in-memory matrix of embeddings for meaning.

A source is indexed with what a reader of a conversation would have in mind: its day in words on this machine's
calendar ("Monday 8 May 2023"), the source said just before it (if within an hour: the same conversation) as lower-weighted
context, and its speaker when the text starts with "Name: ". Sources close in time form a conversation
(``GAP_S``), which the ranked path uses to lift the other turns of a conversation that matches well.

Everything lives in ``index/<scope>/``; an index never holds documents of another scope.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as _dt
import itertools
import logging
import math
import os
import re
import shutil
import socket
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tantivy

from .embed import Embedder, batch_size, checked_vectors, embed_each, is_remote
from .lease import _holder_alive, _proc_started

log = logging.getLogger(__name__)

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it its
    me my of on or our so than that the their them then there these they this to was we were what when where which
    who whom why will with would you your about any did does done just shall should""".split()
)


# Sources less than this far apart in time belong to one conversation (context and grouping).
GAP_S = 3600.0
# Weight of the preceding source's words against a source's own words.
CONTEXT_BOOST = 0.5
# Bumped when what is indexed for a document changes: the keyword index is then rebuilt from meta.db.
SCHEMA = "2"
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30}){0,2}):\s")


def _marks_class() -> str:
    """A regex class of Unicode's combining marks (categories Mn, Mc, Me), as ranges."""
    ranges: list[list[int]] = []
    for c in range(0x300, 0x20000):
        if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me"):
            if ranges and c == ranges[-1][1] + 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges)


# Letters and digits of every script (Cyrillic, Greek, Arabic, CJK...), with the marks that are part of a word in
# many scripts (Hindi, Bengali, Tamil, Thai vowel signs: "चाबी" is one word, not "च" and "ब"). The keyword and title
# indexes read each term again their own way, so a word read whole here meets the text however they split it.
_ASCII_WORD = re.compile(r"[^\W_]+")
_WORD = re.compile(rf"[^\W_](?:[^\W_]|[{_marks_class()}])*")  # a mark alone (an emoji's variation selector) is none
# Chinese and Japanese are written without spaces between words (and Korean words take their endings in the word):
# a run of those scripts is read as its overlapping pairs of characters ("東京都" -> "東京 京都"), the usual way to
# index them without a dictionary. Thai, Lao, Myanmar and Khmer are written without spaces too: their runs are read
# as pairs of letters, each letter with the vowel signs and tone marks written on it ("ที่สอง" -> "ทีส สอ อง": the
# keyword index splits a word at a tone mark, so those are left out), so a pair never parts a letter from its marks.
# A query is read the same way, so its pairs meet the text's.
_CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
_SEA = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
_CJK_RUN = re.compile(f"[{_CJK}]+|[{_SEA}]+")
_SEA_RUN = re.compile(f"[{_SEA}]+")
_SEA_LETTER = re.compile(f"[{_SEA}][{_marks_class()}]*")  # a letter with the marks written on it
_WIDE = re.compile("[\uff01-\uff5e\uff61-\uffef]")  # full-width Latin letters and digits, half-width kana
# Bumped when cjk_spaced changes: only the keyword and title indexes are then rebuilt (vectors are kept). What each
# earlier reading read otherwise: an index of that reading is rebuilt only if it holds such text.
WORDS = "pairs-3"
_READ_OTHERWISE = {"cjk-pairs-2": _SEA_RUN}


def speaker_of(body: str) -> str:
    """The speaker of a chat-like source ("Caroline: hi" -> "caroline"), or ""."""
    m = _SPEAKER.match(body)
    return m.group(1).lower() if m else ""


def asks(body: str) -> bool:
    """Whether a chat-like source ends by asking something (its last sentence is a question): the source
    said next is then likely the answer, which holds the facts the question's words point to. Bracketed asides
    at the end ("[shares a photo]") are passed over, one by one (a pattern for them took exponential time)."""
    text = body.rstrip()
    while text.endswith("]") and (start := text.rfind("[")) >= 0:
        text = text[:start].rstrip()
    return text.endswith("?")


# Words that say when something happened: relative days, weekdays and months ("may" only next to a number), or
# a unit after "last", "next", "this", "past", "few" ("last week", "few years"); a year from 1900 to 2099 also
# counts. General English, nothing from any data set. Checked by word sets, not one big regex: memory computes it
# for every source when an index opens (about 6 µs a source).
_WHEN_WORDS = frozenset(
    "yesterday today tonight tomorrow recently ago january february march april june july august september october "
    "november december".split()
) | frozenset(d + s for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
              for s in ("", "s"))
_WHEN_LEADS = frozenset("last next this past few".split())
_WHEN_UNITS = frozenset(
    "day days week weeks weekend month months year years night morning evening summer winter spring fall autumn "
    "monday tuesday wednesday thursday friday saturday sunday".split())
_ASKS_WHEN = re.compile(r"^\W*when\b|\b(what|which) (year|month|day|date|time)\b|\bhow long ago\b", re.I)


def says_when(body: str) -> bool:
    """Whether a text says when something happened (a day, a month, a year, "last week", "yesterday")."""
    said = words(body)
    if not _WHEN_WORDS.isdisjoint(said):
        return True
    for n, w in enumerate(said):
        nxt = said[n + 1] if n + 1 < len(said) else ""
        if w in _WHEN_LEADS and nxt in _WHEN_UNITS:
            return True
        if w == "may" and (nxt.isdigit() or (n and said[n - 1].isdigit())):
            return True
        if len(w) == 4 and w.isdigit() and w[:2] in ("19", "20"):
            return True
    return False


def asks_when(question: str) -> bool:
    """Whether a question asks when something happened ("When did …", "What year …", "How long ago …")."""
    return _ASKS_WHEN.search(question) is not None


def date_words(ts: float) -> str:
    """The day of ``ts`` as people say it in questions: "Monday 8 May 2023", on this machine's calendar (Hearth is a
    desktop app: its time zone is the household's; a person in Auckland's Monday morning is their Monday, not UTC's
    Sunday). The one wording of a day memory indexes and shows its models (keep or skip, the wiki writer, summaries,
    the nightly check, Ask memory, an agent's search); "" for no time (0) or one past the calendar. In English
    whatever the locale (a window's Qt sets the person's): the words the index holds are the ones its English stemmer
    and questions read."""
    if ts <= 0:
        return ""
    try:
        d = _dt.datetime.fromtimestamp(ts)
    except (OverflowError, OSError, ValueError):
        return ""
    return f"{_DAY_NAMES[d.weekday()]} {d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"


_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")


def days_mark() -> str:
    """Which calendar ``date_words`` reads days on: this machine's time zone as the C library knows it (its names and
    its offsets from UTC), "utc" for any zone whose days are UTC's. An index built on another calendar (before days
    were local, every index was built on UTC's) has its keyword index rebuilt once on opening (``_days_changed``)."""
    if time.timezone == 0 and (not time.daylight or time.altzone == 0):
        return "utc"
    return f"{'/'.join(time.tzname)} {time.timezone} {time.altzone if time.daylight else time.timezone}"


# The keyword fields' own analysis (tantivy's en_stem: split on non-alphanumerics, lower-case, English stemmer),
# so that word stems counted here are the terms the keyword index holds.
_STEMMER = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40)).filter(
    tantivy.Filter.lowercase()).filter(tantivy.Filter.stemmer("english")).build()


# The marks of Thai, Lao, Myanmar and Khmer the keyword fields' analysis splits a word at (Thai and Lao tone marks,
# Myanmar's asat: not letters to it): left out of their letter pairs, in the text and the query alike, so that a
# pair stays one term.
_SEA_SPLIT = re.compile("[" + "".join(
    re.escape(chr(c)) for a, b in ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF)) for c in range(a, b + 1)
    if len(_STEMMER.analyze(f"a{chr(c)}a")) != 1) + "]")


def letters_of(run: str) -> list[str]:
    """The letters a run of ``_CJK_RUN`` is paired by: each character of Chinese, Japanese or Korean; each letter of
    Thai, Lao, Myanmar or Khmer with its marks (those the keyword index splits at left out)."""
    if not _SEA_RUN.match(run):
        return list(run)
    return [u for u in (_SEA_SPLIT.sub("", m) for m in _SEA_LETTER.findall(run)) if u]


def stems(text: str) -> list[str]:
    """The word stems of ``text`` as the keyword index sees them ("Dancing makes" -> ["danc", "make"])."""
    return _STEMMER.analyze(cjk_spaced(text))


def telling_stems(text: str) -> set[str]:
    """The stems of the words of ``text`` that tell something: stop words and Latin words of one or two letters
    ("in", "Dr") left out, so that two texts share such a stem only where they name the same thing. Chinese,
    Japanese and Korean give their letters too, besides their pairs (see ``cjk_pair_backed``)."""
    found = set(stems(" ".join(w for w in words(text) if w not in _STOP and not (len(w) <= 2 and w.isascii()))))
    return found | {c for run in _CJK_RUN.findall(text) for c in letters_of(run)}


def cjk_pair_backed(stem: str, unbacked: set[str]) -> bool:
    """Whether ``stem`` is a pair of letters of a script written without spaces (``letters_of``) neither of which
    is ``unbacked``: such text is read as overlapping pairs, so a pair across two words ("京旅" of "东京旅行") is said
    by no other text though both its words are."""
    if _CJK_RUN.fullmatch(stem) is None:
        return False
    pair = letters_of(stem)
    return len(pair) == 2 and not (set(pair) & unbacked)


def own_words(body: str) -> str:
    """A chat-like source's words without its speaker's name ("Caroline: hi" -> "hi")."""
    m = _SPEAKER.match(body)
    return body[m.end():] if m else body


_INVISIBLE_MARKS = re.compile("[\u034f\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")  # variation selectors


def title_key(title: str) -> str:
    """What names a page in its title: its letters, digits and symbols, whatever their case, spacing and punctuation
    ("Dr. Smith" and "Dr Smith" are ``drsmith``; "C#" is not "C++"). A letter's marks are kept ("मीना" and "मोना",
    Meena and Mona, are two people; "ข่าว" is news, "ขาว" white), an invisible variation selector aside, and so is
    a point, comma, colon or dash between two digits ("Flat 1.2" is not "Flat 12")."""
    text = _INVISIBLE_MARKS.sub("", unicodedata.normalize("NFKC", title).casefold())
    return "".join(ch for i, ch in enumerate(text)
                   if ch.isalnum() or unicodedata.category(ch)[0] in "SM" or ch in "#%&*/@\\"
                   or (ch in ".,:-" and 0 < i < len(text) - 1 and text[i - 1].isdecimal() and text[i + 1].isdecimal()))


def cjk_spaced(text: str, *, letters: bool = False) -> str:
    """``text`` with each run of Chinese, Japanese, Korean, Thai, Lao, Myanmar or Khmer letters written as its
    pairs (see _CJK_RUN, ``letters_of``), and full-width forms folded ("３時" reads "3時"). With ``letters`` (the
    text indexed) each letter is written alone too, so a question of one letter ("猫") finds it; a question's longer
    runs stay pairs, which rank."""
    if _WIDE.search(text):
        text = _WIDE.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)

    def pairs(m: re.Match[str]) -> str:
        run = letters_of(m.group())
        out = " ".join(run[i] + run[i + 1] for i in range(len(run) - 1)) if len(run) > 1 else "".join(run)
        return f" {out} {' '.join(run)} " if letters and len(run) > 1 else f" {out} "

    return _CJK_RUN.sub(pairs, text)


def words(text: str) -> list[str]:
    """The lower-case words of ``text``, in any script (Chinese, Japanese and Korean as pairs of letters)."""
    low = cjk_spaced(text).lower()
    return (_ASCII_WORD if low.isascii() else _WORD).findall(low)  # no marks to keep: the quicker reading


def without_words(text: str, drop: set[str]) -> str:
    """``text`` without the given lower-case words (and their possessive "'s"), any case; ``text`` itself if
    nothing else would be left."""
    if not drop:
        return text
    pattern = r"(?<![^\W_])(?:" + "|".join(re.escape(w) for w in sorted(drop, key=len, reverse=True)) + r")(?:['\u2019]s)?(?![^\W_])"
    left = re.sub(pattern, " ", text, flags=re.I)
    return left if words(left) else text


def query_terms(text: str) -> list[str]:
    """Lower-case word terms of a query, stop words removed (all of them kept if nothing else is left)."""
    found = words(text)
    kept = [w for w in found if w not in _STOP]
    return kept or found


@dataclass(frozen=True)
class Doc:
    """One indexed document: a source or a page of this scope."""

    id: str
    kind: str  # "source" | "page"
    title: str
    body: str
    ts: float
    importance: float | None = None


_MARKS: dict[int, str] = {}


def _pending_mark() -> str:
    """This process's mark in an index's info table while its keyword writes are uncommitted (made for the pid
    asking: a forked child has its own, never its parent's)."""
    pid = os.getpid()
    if pid not in _MARKS:
        _MARKS[pid] = f"keywords_pending:{socket.gethostname()}:{pid}:{_proc_started(pid)!r}"
    return _MARKS[pid]


def _writer_alive(mark: str) -> bool:
    """Whether the process that left a keywords_pending mark still runs (a mark not of that shape: no)."""
    try:
        _, host, pid, started = mark.rsplit(":", 3)
        return _holder_alive(int(pid), float(started), host)
    except ValueError:
        return False


# Re-embedding with another model: documents added meanwhile are embedded in up to LATE_ROUNDS rounds outside the
# index's lock; the last few (at most LATE_UNDER_LOCK, unless an import outran every round) under it, with the swap.
LATE_UNDER_LOCK = 32
LATE_ROUNDS = 8
# What a source's vector reads of the source said just before it (its context): its last 1,000 characters, about
# 250 tokens (no turn of LoCoMo's chats is longer than 434).
CONTEXT_CHARS = 1_000
TYPEAHEAD_WORDS = 12  # typed words a suggestion must hold: more only narrows what already fits
TYPEAHEAD_ROWS = 200  # sources' titles read one by one before SQLite is asked for the ones that differ

def _contexts_of(docs: list[Doc], meta: sqlite3.Connection | None, row: dict[str, int]) -> list[str]:
    """For each source, the text of the source said just before it (same conversation), else "": one of ``docs`` or
    one stored in ``meta`` (an index's, whose documents' rows are ``row``; None for a scope without an index yet)."""
    out = [""] * len(docs)
    order = sorted((n for n, d in enumerate(docs) if d.kind != "page"), key=lambda n: docs[n].ts)
    # Documents being replaced must not be their own context (new ones are not in meta.db yet).
    replaced = [d.id for d in docs if d.id in row][:500]
    marks = ",".join("?" * len(replaced))
    prev: Doc | None = None
    for n in order:
        d = docs[n]
        best: tuple[str, float] | None = (prev.body, prev.ts) if prev is not None else None
        found = None if meta is None else meta.execute(
            f"SELECT body, ts FROM docs WHERE kind!='page' AND ts<=? AND id NOT IN ({marks}) ORDER BY ts DESC, rowid DESC LIMIT 1",
            (d.ts, *replaced),
        ).fetchone()
        if found is not None and (best is None or found[1] > best[1]):
            best = (found[0], found[1])
        if best is not None and d.ts - best[1] <= GAP_S:
            out[n] = best[0]
        prev = d
    return out


# Vectors made ahead of storing (``ScopeIndex.add``): (model name, hash of the text embedded) -> its vector.
Ahead = dict[tuple[str, int], np.ndarray]


class ScopeIndex:
    def __init__(self, folder: Path, embedder: Embedder | None):
        self.folder = folder
        self.embedder = embedder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self.meta = sqlite3.connect(str(folder / "meta.db"), isolation_level=None, check_same_thread=False, timeout=30)
        self.meta_file = os.stat(folder / "meta.db").st_ino  # which meta.db this is (see ``gone``)
        self.meta.execute("PRAGMA journal_mode=WAL")
        self.meta.execute("PRAGMA synchronous=NORMAL")
        self.meta.execute("PRAGMA secure_delete=ON")  # a removed document's text is overwritten, not left behind
        self.meta.executescript(
            """
            CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, title TEXT NOT NULL,
                body TEXT NOT NULL, ts REAL NOT NULL, importance REAL, vec BLOB);
            CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE VIRTUAL TABLE IF NOT EXISTS titles USING fts5(title, id UNINDEXED, kind UNINDEXED,
                prefix='2 3 4', tokenize='unicode61 remove_diacritics 2');
            """
        )
        # Pages' titles again, apart (a few hundred): typeahead suggests pages first, however many sources share
        # the word typed. An index from before them has its pages' titles copied in once.
        if not self.meta.execute("SELECT 1 FROM sqlite_master WHERE name='page_titles'").fetchone():
            self.meta.execute("BEGIN IMMEDIATE")  # another process opening this index at once makes it once
            try:
                if not self.meta.execute("SELECT 1 FROM sqlite_master WHERE name='page_titles'").fetchone():
                    self.meta.execute("CREATE VIRTUAL TABLE page_titles USING fts5(title, id UNINDEXED, "
                                      "prefix='2 3 4', tokenize='unicode61 remove_diacritics 2')")
                    self.meta.execute("INSERT INTO page_titles (title, id) SELECT title, id FROM titles WHERE kind='page'")
                self.meta.execute("COMMIT")
            except BaseException:
                self.meta.execute("ROLLBACK")
                raise
        cols = {r[1] for r in self.meta.execute("PRAGMA table_info(docs)")}
        if "ctx" not in cols:  # indexes written before context: the column is filled by the rebuild below
            self.meta.execute("ALTER TABLE docs ADD COLUMN ctx TEXT NOT NULL DEFAULT ''")
        self.meta.execute("CREATE INDEX IF NOT EXISTS docs_ts ON docs(ts)")
        row = self.meta.execute("SELECT value FROM info WHERE key='schema'").fetchone()
        stale = row is None or row[0] != SCHEMA
        # Made anew here: meta.db was missing, or held nothing (cut to zero bytes by a crash before its data reached
        # the disk). Its documents come back from the catalog (sources) and the wiki folder (pages): ``Memory.index``.
        self.made_anew = row is None
        stale_words = not stale and (self._words_changed() | self._days_changed())
        # Documents stored or removed in meta.db whose keyword index a process that has died since did not
        # commit: the keyword index is rebuilt from meta.db, so none is missing and no removed text stays. A mark
        # of a process still running (another window, a CLI command) is its write under way, left alone.
        marks = [k for (k,) in self.meta.execute("SELECT key FROM info WHERE key LIKE 'keywords_pending:%'")]
        torn = [k for k in marks if not _writer_alive(k)]
        stale_words = stale_words or bool(torn)
        if stale or stale_words:
            shutil.rmtree(folder / "tantivy", ignore_errors=True)
        try:
            self._open_tantivy()
        except ValueError:  # a keyword index whose files are not all there: it is made again from meta.db
            shutil.rmtree(folder / "tantivy", ignore_errors=True)
            self._open_tantivy()
            stale_words = True
        if (not (stale or stale_words) and len(marks) == len(torn) and self.searcher.num_docs == 0
                and self.meta.execute("SELECT 1 FROM docs LIMIT 1").fetchone()):
            # The keyword folder deleted or emptied (by hand, a sync tool) next to a meta.db holding documents, and
            # no other process writing it: made again from meta.db, rather than every keyword search finding nothing.
            stale_words = True
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False
        self._purge = False  # documents were removed since the last commit
        self.purge_held = False  # set by Memory.hold_purges: removals in batches write the keyword index once, at the end
        self._purge_now = False  # a removal not made under the hold: its traces go at once all the same
        self._version = 0
        self._groups: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._adjacent: tuple[int, np.ndarray, np.ndarray] | None = None
        self._pending: list[tuple[str, float, float, np.ndarray | None, bool, str, bool]] = []
        if stale or stale_words:
            self._rebuild_keywords()
            if torn:  # what the dead process removed may be in the title index's segments and the log too (purge)
                self.meta.execute("INSERT INTO titles(titles) VALUES('optimize')")
                self.meta.execute("INSERT INTO page_titles(page_titles) VALUES('optimize')")
                self.meta.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.meta.executemany("DELETE FROM info WHERE key=?", [(k,) for k in torn])
        self._load_vectors(force=stale)

    # ---- setup ---------------------------------------------------------------------------------

    def _words_changed(self) -> bool:
        """Whether this index was built with another reading of words and holds text it reads differently
        (Chinese, Japanese, Korean, Thai, Lao, Myanmar or Khmer letters, full-width forms; of a reading named in
        ``_READ_OTHERWISE``, only what that one read otherwise); an index without any just takes the new mark."""
        row = self.meta.execute("SELECT value FROM info WHERE key='words'").fetchone()
        if row is not None and row[0] == WORDS:
            return False
        other = _READ_OTHERWISE.get(row[0]) if row is not None else None
        for (text,) in self.meta.execute("SELECT title || char(10) || body FROM docs"):
            if (other.search(text) if other is not None else (_CJK_RUN.search(text) or _WIDE.search(text))):
                return True
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('words', ?)", (WORDS,))
        return False

    def _days_changed(self) -> bool:
        """Whether this index holds sources whose days in words were read on another calendar than this machine's
        now (an index from before days were local was built on UTC's; the machine moved to another zone): they are
        indexed again. An index without sources just takes the new mark."""
        row = self.meta.execute("SELECT value FROM info WHERE key='days'").fetchone()
        if (row[0] if row is not None else "utc") == days_mark():
            if row is None:
                self.meta.execute("INSERT OR REPLACE INTO info VALUES ('days', ?)", (days_mark(),))
            return False
        if self.meta.execute("SELECT 1 FROM docs WHERE kind != 'page' LIMIT 1").fetchone():
            return True
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('days', ?)", (days_mark(),))
        return False

    def _open_tantivy(self) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("title", stored=False, tokenizer_name="en_stem")
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        sb.add_text_field("ctx", stored=False, tokenizer_name="en_stem")
        self.schema = sb.build()
        tdir = self.folder / "tantivy"
        tdir.mkdir(exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(tdir), reuse=True)
        self.searcher = self.index.searcher()

    @staticmethod
    def _keyword_doc(doc_id: str, kind: str, title: str, body: str, ts: float, ctx: str) -> tantivy.Document:
        if kind == "page":
            return tantivy.Document(id=doc_id, title=cjk_spaced(title, letters=True), body=cjk_spaced(body, letters=True),
                                    ctx="")
        # A source's title is usually its own first line: indexing it again would count those words twice.
        head = title.rstrip("…").strip()
        own_title = "" if not head or body.lstrip().startswith(head) else title
        return tantivy.Document(id=doc_id, title=cjk_spaced(own_title, letters=True),
                                body=f"{cjk_spaced(body, letters=True)}\n{date_words(ts)}", ctx=cjk_spaced(ctx, letters=True))

    @staticmethod
    def _meaning_text(kind: str, title: str, body: str, ctx: str) -> str:
        if kind == "page":
            return f"{title}\n{body}"
        # Of the source said before, its end (the question a short reply answers): a note stored after a long
        # document was embedded as that document's start, its own words past what a model reads.
        return f"{ctx[-CONTEXT_CHARS:]}\n{body}" if ctx else body

    def _rebuild_keywords(self) -> None:
        """Re-creates the keyword index (and the context of each source) from meta.db."""
        rows = self.meta.execute("SELECT id, kind, title, body, ts FROM docs ORDER BY ts, rowid").fetchall()
        w = self._w()
        prev: tuple[str, float] | None = None
        updates = []
        for doc_id, kind, title, body, ts in rows:
            ctx = ""
            if kind != "page":
                if prev is not None and ts - prev[1] <= GAP_S:
                    ctx = prev[0]
                prev = (body, ts)
                updates.append((ctx, doc_id))
            w.add_document(self._keyword_doc(doc_id, kind, title, body, ts, ctx))
        self.meta.execute("BEGIN")
        self.meta.executemany("UPDATE docs SET ctx=? WHERE id=?", updates)
        self.meta.execute("DELETE FROM titles")
        self.meta.execute("DELETE FROM page_titles")
        self._insert_titles([(cjk_spaced(title), doc_id, kind) for doc_id, kind, title, _b, _t in rows if title])
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('schema', ?)", (SCHEMA,))
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('words', ?)", (WORDS,))
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('days', ?)", (days_mark(),))
        self.meta.execute("COMMIT")
        self._dirty = True
        self.commit()

    def _load_vectors(self, *, force: bool = False) -> None:
        name = self.embedder.name if self.embedder else ""
        row = self.meta.execute("SELECT value FROM info WHERE key='embedder'").fetchone()
        if self.embedder is not None and (force or (row is not None and row[0] != name)):
            # Vectors of another model (or of other text) are meaningless here: recompute them from the stored text
            # (a remote model's are queued instead: opening an index never waits on the network).
            if is_remote(self.embedder):
                self.meta.execute("UPDATE docs SET vec=NULL")
            else:
                self.reembed(lambda done, total: None)
        if self.embedder is not None or row is None or force:  # opened without a model (keywords): its vectors stay its
            self.meta.execute("INSERT OR REPLACE INTO info VALUES ('embedder', ?)", (name,))
        self._load_arrays()
        self._others_seen = self._others_version()

    def _others_version(self) -> int:
        """SQLite's count of what other connections (another Hearth process) committed to meta.db."""
        return int(self.meta.execute("PRAGMA data_version").fetchone()[0])

    def follow_others(self) -> bool:
        """Takes up what another Hearth process committed to this index since it was read (a terminal's folder
        rescan while the window is open): its keyword segments and its documents. Left for later while this
        process has writes of its own under way. Returns whether anything was taken up."""
        with self._lock:
            if self._writer is not None or self._pending:
                return False
            seen = self._others_version()
            if seen == self._others_seen:
                return False
            self.index.reload()
            self.searcher = self.index.searcher()
            self._others_seen = seen
            # Only what changed is read (reading every row again took seconds at 100,000): documents gone, documents
            # new, and pages (rewritten in place under the same id).
            stored = {i: k for i, k in self.meta.execute("SELECT id, kind FROM docs")}
            again = [i for i in self.row if i not in stored or stored[i] == "page"]
            for i in again:
                n = self.row.pop(i)
                if n >= 0:
                    self.alive[n] = False
            if again:
                self._version += 1
            fresh = [i for i in stored if i not in self.row]
            dim = self.vecs.shape[1]
            for at in range(0, len(fresh), 500):
                chunk = fresh[at:at + 500]
                for i, k, b, t, im, v in self.meta.execute(
                        f"SELECT id, kind, body, ts, importance, vec FROM docs WHERE id IN ({','.join('?' * len(chunk))})",
                        chunk):
                    vec = np.frombuffer(v, dtype=np.float32).copy() if dim and v and len(v) == dim * 4 else None
                    src = k != "page"
                    self._pending.append((i, t, -1.0 if im is None else im, vec, src, speaker_of(b) if src else "",
                                          src and asks(b), says_when(b)))
            self._merge_pending()
            self._take_up_filled_vectors()
            return True

    def _take_up_filled_vectors(self) -> None:
        """Vectors another process filled in place (a provider's, queued when the note was stored): the rows this
        one holds blank are read again, so those notes are found by meaning here too."""
        dim = self.vecs.shape[1]
        if not dim:
            if self.embedder is not None and self.meta.execute("SELECT 1 FROM docs WHERE vec IS NOT NULL LIMIT 1").fetchone():
                self._load_arrays()  # the model's size is known now: every row read once
            return
        blank = np.flatnonzero(self.alive & ~self.vecs.any(axis=1))
        ids = [self.ids[n] for n in blank]
        for at in range(0, len(ids), 500):
            chunk = ids[at:at + 500]
            for i, v in self.meta.execute(
                    f"SELECT id, vec FROM docs WHERE vec IS NOT NULL AND id IN ({','.join('?' * len(chunk))})", chunk):
                n = self.row.get(i)
                if n is not None and n >= 0 and len(v) == dim * 4:
                    self.vecs[n] = np.frombuffer(v, dtype=np.float32)

    def reembed(self, progress: Callable[[int, int], None], stop: Callable[[], bool] = lambda: False,
                ids: list[str] | None = None) -> bool:
        """Recomputes every stored vector (or those of ``ids``) with this index's embedder, in chunks (search keeps
        working on the old vectors meanwhile, each chunk swapped in as it is done). False if ``stop`` cut it short."""
        assert self.embedder is not None
        if ids is None:
            ids = [r[0] for r in self.meta.execute("SELECT id FROM docs ORDER BY rowid")]
        total = len(ids)
        progress(0, total)
        for start in range(0, total, 256):
            if stop():
                return False
            chunk = ids[start : start + 256]
            marks = ",".join("?" * len(chunk))
            rows = self.meta.execute(f"SELECT id, kind, title, body, ctx FROM docs WHERE id IN ({marks})", chunk).fetchall()
            vecs = self.embedder.embed([self._meaning_text(k, t, b, c) for _, k, t, b, c in rows])
            with self._lock:
                self.meta.execute("BEGIN")
                self.meta.executemany("UPDATE docs SET vec=? WHERE id=?", [(v.tobytes(), r[0]) for v, r in zip(vecs, rows, strict=True)])
                self.meta.execute("COMMIT")
                if hasattr(self, "vecs") and self.vecs.shape[1] == self.embedder.dim:
                    for v, r in zip(vecs, rows, strict=True):
                        n = self.row.get(r[0])
                        if n is not None and n >= 0:
                            self.vecs[n] = v
            progress(min(total, start + len(chunk)), total)
        return True

    @staticmethod
    def stored_embedder(folder: Path) -> str:
        """The name of the model whose vectors an index folder holds ("" if none or no index yet)."""
        row = ScopeIndex._peek(folder, "SELECT value FROM info WHERE key='embedder'")
        return str(row[0]) if row else ""

    @staticmethod
    def holds_queued(folder: Path) -> bool:
        """Whether an index folder holds a document still waiting for its vector (see ``queued_count``)."""
        return ScopeIndex._peek(folder, "SELECT 1 FROM docs WHERE vec IS NULL LIMIT 1") is not None

    @staticmethod
    def _peek(folder: Path, sql: str) -> tuple[object, ...] | None:
        """The first row ``sql`` reads in an index folder's meta.db without opening the index (None if none, or no
        index yet)."""
        db = folder / "meta.db"
        if not db.is_file():
            return None
        con = sqlite3.connect(str(db), timeout=30)
        try:
            row = con.execute(sql).fetchone()
        except sqlite3.Error:
            row = None
        finally:
            con.close()
        return tuple(row) if row else None

    def switch_embedder(self, new: Embedder, progress: Callable[[int, int], None],
                        stop: Callable[[], bool] = lambda: False,
                        fresh: dict[str, tuple[int, np.ndarray]] | None = None,
                        aside: dict[str, tuple[int, str, str]] | None = None,
                        new_size: Callable[[int, int], bool] | None = None) -> bool:
        """Re-embeds every document with ``new`` while search goes on with the current model's vectors;
        the new vectors (and model) replace the old ones at once when all are done. False if stopped.
        ``fresh`` keeps the vectors computed so far with ``new`` (each with the hash of the text it was made
        from), so a retry after a failed request goes on from there; a document whose text changed meanwhile
        (a page rewritten, the source after a deleted one re-indexed without it) is embedded again.
        A remote model's: ``aside`` gets {id: (hash of its text, what it is, why)} of the documents it refuses one
        by one (``embed_each``): they are found by their words, never sent again while their text is the same,
        and the others are embedded all the same. ``new_size(size answered, size of fresh)``, asked of each answer
        once some vectors are kept: True (the sizes differ) when the vectors kept are another model's (see
        ``Memory._answered_size``), and all is embedded again at the new size; else an answer of another size is
        refused (EmbeddingError)."""
        remote = is_remote(new)
        aside = {} if aside is None else aside
        with self._lock:
            listed = self.meta.execute("SELECT id, rowid FROM docs ORDER BY rowid").fetchall()
        ids = [i for i, _ in listed]
        seen = max((r for _, r in listed), default=0)  # a document added (or replaced) later has a higher rowid
        total = len(ids)
        fresh = {} if fresh is None else fresh
        todo = [i for i in ids if i not in fresh]
        done = total - len(todo)
        progress(done, total)
        for rounds in itertools.count(1):
            at = 0
            while at < len(todo):
                if stop():
                    return False
                chunk = todo[at : at + (batch_size(new) if remote else 128)]  # a remote model's: fewer once it was slow
                at += len(chunk)
                with self._lock:
                    marks = ",".join("?" * len(chunk))
                    rows = self.meta.execute(f"SELECT id, kind, title, body, ctx FROM docs WHERE id IN ({marks})", chunk).fetchall()
                texts = [self._meaning_text(k, t, b, c) for _, k, t, b, c in rows]
                if not remote:
                    fresh.update({r[0]: (hash(t), v) for r, t, v in zip(rows, texts, new.embed(texts), strict=True)})
                else:
                    sent = [(r, t) for r, t in zip(rows, texts, strict=True)
                            if (a := aside.get(r[0])) is None or a[0] != hash(t)]
                    vecs, why = embed_each(new, [t for _, t in sent])
                    for n, reason in why.items():
                        r, t = sent[n]
                        aside[r[0]] = (hash(t), self._what(r[1], r[2], r[3]), reason)
                    sent = [rt for n, rt in enumerate(sent) if n not in why]
                    have = next((v.shape[0] for _, v in fresh.values()), 0)
                    if sent and have and new_size is not None and new_size(vecs.shape[1], have):
                        # The model behind the name changed: what was embedded so far is embedded again, at the new size.
                        redo = list(fresh)
                        fresh.clear()
                        todo.extend(redo)
                        done -= len(redo)
                        have = 0
                    vecs = checked_vectors(new.name, vecs, len(sent), have) if sent else vecs
                    fresh.update({r[0]: (hash(t), v) for (r, t), v in zip(sent, vecs, strict=True)})
                done += len(chunk)
                progress(min(done, total), total)
            if remote:  # documents added meanwhile are queued for the background (see below)
                break
            # Documents added (a folder import, mail) while this ran: embedded here too, in rounds, outside the lock,
            # so search and storing go on meanwhile (embedding thousands under it held every search for seconds).
            # They count in the total: progress never reads done while some wait. A round that finds a few (or
            # the last round, should an import outrun it) leaves them to be embedded under the lock, with the swap.
            with self._lock:
                late = self.meta.execute("SELECT id, rowid FROM docs WHERE rowid > ? ORDER BY rowid", (seen,)).fetchall()
            if not late:
                break
            seen = max(r for _, r in late)
            todo = [i for i, _ in late]
            total += len(todo)
            progress(done, total)
            if len(todo) <= LATE_UNDER_LOCK or rounds >= LATE_ROUNDS:
                break
        with self._lock:
            if stop():  # given up on while its last request was answered (another model chosen): nothing swapped in
                return False
            if self._dirty:
                self.commit()
            # Documents added, or whose text changed, since they were read: embed them now (a remote model's are
            # queued for the background instead). A document deleted meanwhile is not in ``texts``: never written back.
            rows = self.meta.execute("SELECT id, kind, title, body, ctx FROM docs").fetchall()
            texts = {r[0]: self._meaning_text(r[1], r[2], r[3], r[4]) for r in rows}
            vec_of = {i: v for i, (h, v) in fresh.items() if i in texts and h == hash(texts[i])}
            late = [i for i in texts if i not in vec_of]
            if late and not remote:
                vec_of.update(zip(late, new.embed([texts[i] for i in late]), strict=True))
            dim = next((v.shape[0] for v in vec_of.values()), new.dim)
            mat = np.zeros((len(self.ids), dim), dtype=np.float32)  # built first: a bad vector changes nothing
            for n, i in enumerate(self.ids):
                v = vec_of.get(i)
                if v is not None:
                    mat[n] = v
            self.meta.execute("BEGIN")
            self.meta.executemany("UPDATE docs SET vec=? WHERE id=?",
                                  [(vec_of[i].tobytes() if i in vec_of else None, i) for i in texts])
            self.meta.execute("INSERT OR REPLACE INTO info VALUES ('embedder', ?)", (new.name,))
            self.meta.execute("COMMIT")
            self.vecs = mat
            self.embedder = new
        return True

    # ---- vectors queued for a remote model -----------------------------------------------------------

    def queued_count(self) -> int:
        """How many documents wait for their vector (a remote model's, filled in the background)."""
        with self._lock:
            return int(self.meta.execute("SELECT COUNT(*) FROM docs WHERE vec IS NULL").fetchone()[0])

    def queued(self, limit: int, skip: dict[str, tuple[int, str, str]] | None = None) -> list[tuple[str, str, str]]:
        """Up to ``limit`` (id, text to embed, what it is) of documents without a vector, oldest first; not those in
        ``skip`` (set aside, see ``switch_embedder``) while their text is the same."""
        out: list[tuple[str, str, str]] = []
        with self._lock:
            cur = self.meta.execute("SELECT id, kind, title, body, ctx FROM docs WHERE vec IS NULL ORDER BY rowid")
            try:
                for i, k, ti, b, c in cur:
                    text = self._meaning_text(k, ti, b, c)
                    if skip and (a := skip.get(i)) is not None and a[0] == hash(text):
                        continue
                    out.append((i, text, self._what(k, ti, b)))
                    if len(out) >= limit:
                        break
            finally:
                cur.close()
        return out

    def without_vector(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are stored and wait for a vector."""
        with self._lock:
            return {i for at in range(0, len(ids), 500) for (i,) in self.meta.execute(
                f"SELECT id FROM docs WHERE vec IS NULL AND id IN ({','.join('?' * len(ids[at:at + 500]))})",
                ids[at:at + 500])}

    @staticmethod
    def _what(kind: str, title: str, body: str) -> str:
        """A document as a person knows it, in a few words: a page's or a source's title, else its first line."""
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        what = " ".join((title or first).split())
        return f"“{what[:60]}…”" if len(what) > 60 else f"“{what}”"

    def fill(self, ids: list[str], vecs: object, keep: Callable[[], bool] = lambda: True) -> bool:
        """Stores the vectors of queued documents (checked first: a bad answer changes nothing). ``keep``, asked under
        the index's lock: False throws them away (their model is no longer chosen). Returns whether they were stored."""
        assert self.embedder is not None
        with self._lock:
            if not keep():
                return False
            if self._dirty:
                self.commit()
            have = self.vecs.shape[1] if self.vecs.shape[1] and self.meta.execute(
                "SELECT 1 FROM docs WHERE vec IS NOT NULL LIMIT 1").fetchone() else 0
            arr = checked_vectors(self.embedder.name, vecs, len(ids), have)
            self.meta.execute("BEGIN")
            self.meta.executemany("UPDATE docs SET vec=? WHERE id=? AND vec IS NULL",
                                  [(v.tobytes(), i) for v, i in zip(arr, ids, strict=True)])
            self.meta.execute("COMMIT")
            if self.vecs.shape[1] != arr.shape[1]:
                self.vecs = np.zeros((len(self.ids), arr.shape[1]), dtype=np.float32)
            for v, i in zip(arr, ids, strict=True):
                n = self.row.get(i)
                if n is not None and n >= 0:
                    self.vecs[n] = v
        return True

    def _load_arrays(self) -> None:
        ids: list[str] = []
        ts: list[float] = []
        imp: list[float] = []
        blobs: list[bytes] = []
        kinds: list[bool] = []
        spk: list[str] = []
        ask: list[bool] = []
        when: list[bool] = []
        for i, k, b, t, im, v in self.meta.execute("SELECT id, kind, body, ts, importance, vec FROM docs"):
            ids.append(i)
            ts.append(t)
            imp.append(-1.0 if im is None else im)
            blobs.append(v or b"")
            kinds.append(k != "page")
            spk.append(speaker_of(b) if k != "page" else "")
            ask.append(k != "page" and asks(b))
            when.append(says_when(b))
        self.ids = ids
        self.row = {i: n for n, i in enumerate(ids)}
        self.ts = np.asarray(ts, dtype=np.float64)
        self.imp = np.asarray(imp, dtype=np.float32)
        self.alive = np.ones(len(ids), dtype=bool)
        self.is_source = np.asarray(kinds, dtype=bool)
        self.asks = np.asarray(ask, dtype=bool)
        self.says_when = np.asarray(when, dtype=bool)
        self.speakers: dict[str, int] = {}
        self.spk = np.asarray([self._speaker_id(x) for x in spk], dtype=np.int32)
        dim = self.embedder.dim if self.embedder else 0
        if self.embedder is not None and not dim:  # a remote model says its size in its first answer: most have it
            sizes = collections.Counter(len(v) for v in blobs if v)
            dim = sizes.most_common(1)[0][0] // 4 if sizes else 0
        odd: list[int] = []
        if dim:
            mat = np.zeros((len(ids), dim), dtype=np.float32)
            for n, v in enumerate(blobs):
                if len(v) == dim * 4:
                    mat[n] = np.frombuffer(v, dtype=np.float32)
                elif v:
                    odd.append(n)
            self.vecs = mat
        else:
            self.vecs = np.zeros((len(ids), 0), dtype=np.float32)
        if odd and self.embedder is not None:
            self._make_again([ids[n] for n in odd])
        self._pending = []
        self._version += 1

    def _make_again(self, odd: list[str]) -> None:
        """Vectors of another size than this index's model gives: another model's, written by a second Hearth
        process still on it while this index was re-embedded. A remote model's are queued (filled in the background),
        a local model's made now; else those documents could never be found by meaning."""
        assert self.embedder is not None
        if is_remote(self.embedder):
            self.meta.execute("BEGIN")
            self.meta.executemany("UPDATE docs SET vec=NULL WHERE id=?", [(i,) for i in odd])
            self.meta.execute("COMMIT")
        else:
            self.reembed(lambda _done, _total: None, ids=odd)

    def _speaker_id(self, name: str) -> int:
        if not name:
            return -1
        return self.speakers.setdefault(name, len(self.speakers))

    # ---- writing -------------------------------------------------------------------------------

    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            last: Exception | None = None
            for _ in range(100):
                try:
                    self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
                    break
                except ValueError as e:  # another process holds tantivy's writer lock: wait for it
                    last = e
                    time.sleep(0.05)
            else:
                raise RuntimeError(f"The search index in {self.folder} is locked by another process ({last}); try again.")
        assert self._writer is not None
        return self._writer

    def _contexts(self, docs: list[Doc]) -> list[str]:
        """For each source, the text of the source said just before it (same conversation), else ""."""
        return _contexts_of(docs, self.meta, self.row)

    def meaning_texts(self, docs: list[Doc]) -> list[str]:
        """What each of ``docs`` is embedded as if added now: its text with the context this index gives it."""
        with self._lock:
            return [self._meaning_text(d.kind, d.title, d.body, c) for d, c in zip(docs, self._contexts(docs), strict=True)]

    @staticmethod
    def new_meaning_texts(docs: list[Doc]) -> list[str]:
        """``meaning_texts`` for a scope that has no index yet: each source's context is found among ``docs``."""
        return [ScopeIndex._meaning_text(d.kind, d.title, d.body, c) for d, c in zip(docs, _contexts_of(docs, None, {}),
                                                                                    strict=True)]

    def add(self, docs: list[Doc], ahead: Ahead | None = None) -> None:
        """Adds (or replaces) documents. Visible to search after ``commit``. ``ahead``: vectors made before, outside
        the locks (``Memory.vectors_ahead``), by the text they were made of. As in ``switch_embedder``, a document
        whose text is not the one embedded ahead (a source said just before it stored since: another context;
        another model chosen) is embedded here, under the lock."""
        if not docs:
            return
        with self._lock:
            ctxs = self._contexts(docs)
            vecs: list[np.ndarray] | None = None  # a remote model's vectors are queued: storing never waits on the network
            if self.embedder and not is_remote(self.embedder):
                name, ahead = self.embedder.name, ahead or {}
                texts = [self._meaning_text(d.kind, d.title, d.body, c) for d, c in zip(docs, ctxs, strict=True)]
                got = [ahead.get((name, hash(t))) for t in texts]
                late = [n for n, v in enumerate(got) if v is None]
                for n, v in zip(late, self.embedder.embed([texts[n] for n in late]) if late else [], strict=True):
                    got[n] = v
                vecs = [v for v in got if v is not None]
            w = self._w()
            self.meta.execute("BEGIN")
            try:
                rows = []
                titles = []
                self._drop_titles([d.id for d in docs if d.id in self.row])
                for n, d in enumerate(docs):
                    if d.id in self.row:
                        self._remove_locked(w, d.id)
                    w.add_document(self._keyword_doc(d.id, d.kind, d.title, d.body, d.ts, ctxs[n]))
                    v = vecs[n] if vecs is not None else None
                    rows.append((d.id, d.kind, d.title, d.body, d.ts, d.importance, v.tobytes() if v is not None else None, ctxs[n]))
                    if d.title:
                        titles.append((cjk_spaced(d.title), d.id, d.kind))
                    self._pending.append((d.id, d.ts, -1.0 if d.importance is None else d.importance, v, d.kind != "page",
                                          speaker_of(d.body) if d.kind != "page" else "", d.kind != "page" and asks(d.body),
                                          says_when(d.body)))
                    self.row[d.id] = -1  # placeholder until pending rows are merged
                self.meta.executemany(
                    "INSERT OR REPLACE INTO docs (id, kind, title, body, ts, importance, vec, ctx) VALUES (?,?,?,?,?,?,?,?)", rows)
                self._insert_titles(titles)
                self.page_settled([d.id for d in docs if d.kind == "page"])
                self._mark_keywords_pending()
                self.meta.execute("COMMIT")
            except BaseException:
                self.meta.execute("ROLLBACK")
                raise
            self._dirty = True

    def _insert_titles(self, titles: list[tuple[str, str, str]]) -> None:
        """(title, id, kind) rows into the title index, pages' into page_titles too."""
        self.meta.executemany("INSERT INTO titles (title, id, kind) VALUES (?,?,?)", titles)
        self.meta.executemany("INSERT INTO page_titles (title, id) VALUES (?,?)",
                              [(t, i) for t, i, kind in titles if kind == "page"])

    def _drop_titles(self, ids: list[str]) -> None:
        """Title rows of ``ids`` (the titles table holds ids unindexed: each statement reads it all, so in batches)."""
        pages = [i for i in ids if i.startswith("page:")]
        for at in range(0, len(ids), 500):
            chunk = ids[at : at + 500]
            self.meta.execute(f"DELETE FROM titles WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        for at in range(0, len(pages), 500):
            chunk = pages[at : at + 500]
            self.meta.execute(f"DELETE FROM page_titles WHERE id IN ({','.join('?' * len(chunk))})", chunk)

    def _remove_locked(self, w: tantivy.IndexWriter, doc_id: str) -> None:
        """Removes one document but its title row (``_drop_titles``, done once for a batch)."""
        w.delete_documents_by_term("id", doc_id)
        self.meta.execute("DELETE FROM docs WHERE id=?", (doc_id,))
        n = self.row.pop(doc_id, None)
        if n is not None and n >= 0:
            self.alive[n] = False
            self._version += 1  # a deleted source is nobody's neighbour any more
        elif n == -1:
            self._pending = [p for p in self._pending if p[0] != doc_id]

    def remove(self, ids: list[str], *, held: bool = False) -> None:
        """Removes documents. A source said just after a removed one held its words as context (keywords and
        meaning): it is indexed again with the context it has now, so no trace of the removed text stays.
        ``held``: one step of a removal in batches under ``Memory.hold_purges`` (its traces go when the hold ends);
        any other removal's go at the next commit, hold or not."""
        with self._lock:
            present = [i for i in ids if i in self.row]
            if not present:
                self.page_settled([i for i in ids if i.startswith("page:")])
                return
            w = self._w()
            gone: list[tuple[str, float, int]] = []
            self.meta.execute("BEGIN")
            self.page_settled([i for i in ids if i.startswith("page:")])
            self._drop_titles(present)
            for i in present:
                row = self.meta.execute("SELECT body, ts, rowid FROM docs WHERE id=? AND kind!='page'", (i,)).fetchone()
                if row is not None and row[0]:
                    gone.append(row)
                self._remove_locked(w, i)
            self._mark_keywords_pending()
            self.meta.execute("COMMIT")
            self._dirty = self._purge = True
            self._purge_now = self._purge_now or not held
            # The turn that held a removed one's words is the first source left after it in (time, insertion)
            # order; when many were removed at once, one pass over every context finds them all.
            found: dict[str, Doc] = {}
            if len(gone) > 64:
                bodies = {b for b, _, _ in gone}
                ids_left = [i for i, ctx in self.meta.execute("SELECT id, ctx FROM docs WHERE kind!='page'") if ctx in bodies]
                for at in range(0, len(ids_left), 500):
                    chunk = ids_left[at : at + 500]
                    for doc in self.meta.execute("SELECT id, kind, title, body, ts, importance FROM docs WHERE id IN "
                                                 f"({','.join('?' * len(chunk))})", chunk):
                        found[doc[0]] = Doc(*doc)
            for body, ts, rowid in gone if len(gone) <= 64 else ():
                for *doc, ctx in self.meta.execute(
                        "SELECT id, kind, title, body, ts, importance, ctx FROM docs WHERE (ts, rowid) > (?, ?) AND "
                        "kind!='page' ORDER BY ts, rowid LIMIT 2", (ts, rowid)):
                    if ctx == body:
                        found[doc[0]] = Doc(*doc)
            followers = list(found.values())
            if followers:
                self.add(followers)

    # ---- pages owed: a page file changed before its document (``Memory.index`` catches up a killed writer's) ----

    @staticmethod
    def _owed_key(doc_id: str) -> str:
        return f"page_pending|{_pending_mark()}|{doc_id}"

    def owe_page(self, doc_id: str) -> None:
        """Before a page's file is written or deleted: this process owes the index that page's document until it
        adds or removes it (which clears the mark in the same transaction). A process killed in between leaves the
        mark, and the next opening reads the scope's page files again, rather than search finding the old words."""
        with self._lock:
            self.meta.execute("INSERT OR IGNORE INTO info VALUES (?, ?)", (self._owed_key(doc_id), doc_id))

    def page_settled(self, doc_ids: list[str]) -> None:
        """What this process owed for these pages is settled (their documents as their files are)."""
        with self._lock:
            self.meta.executemany("DELETE FROM info WHERE key=?", [(self._owed_key(i),) for i in doc_ids])

    def owed_by_the_dead(self) -> list[str]:
        """Marks of pages a process that has died since owed this index (see ``owe_page``)."""
        marks = self.meta.execute("SELECT key FROM info WHERE key LIKE 'page_pending|%'").fetchall()
        return [k for (k,) in marks if not _writer_alive(k.split("|")[1])]

    def forget_owed(self, keys: list[str]) -> None:
        with self._lock:
            self.meta.executemany("DELETE FROM info WHERE key=?", [(k,) for k in keys])

    def _mark_keywords_pending(self) -> None:
        """Inside meta.db's transaction: this process's keyword index lags behind until ``commit`` (``__init__``)."""
        self.meta.execute("INSERT OR IGNORE INTO info VALUES (?, '1')", (_pending_mark(),))

    def commit(self) -> None:
        """Makes added and removed documents visible to search and releases the index writer."""
        with self._lock:
            if self._writer is not None:
                self._writer.commit()
                self._writer.wait_merging_threads()
                self._writer = None
                self.index.reload()
                self.searcher = self.index.searcher()
                if not (self._purge and self._purge_waits()):  # else lagging until purged: a kill meanwhile rebuilds it
                    self.meta.execute("DELETE FROM info WHERE key=?", (_pending_mark(),))
            self._merge_pending()
            self._dirty = False
            if self._purge:
                self.purge()

    def _purge_waits(self) -> bool:
        return self.purge_held and not self._purge_now

    def purge(self, *, now: bool = False) -> None:
        """Removed or replaced text leaves every place it was kept: the keyword index (written again from meta.db,
        see ``_rewrite_keywords``), the title index's segments (rewritten as one, ~0.3 s at 100,000 titles) and the
        write-ahead log's earlier pages (cut to nothing unless a reader holds it). While ``purge_held``, this waits
        for the hold's end (the index stays marked as lagging, so a process killed meanwhile has it rebuilt), unless
        ``now`` or a removal made outside the hold asks for it."""
        with self._lock:
            if self._purge_waits() and not now:
                self._purge = True
                self._mark_keywords_pending()
                return
            self._purge = self._purge_now = False
            if self._writer is not None:
                self.commit()
            self._rewrite_keywords()
            self.meta.execute("INSERT INTO titles(titles) VALUES('optimize')")
            self.meta.execute("INSERT INTO page_titles(page_titles) VALUES('optimize')")
            self.meta.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._purge = False

    def hold_purge(self, held: bool) -> None:
        """Puts off (``held``) or does now what removals owe ``purge`` (see ``Memory.hold_purges``)."""
        with self._lock:
            self.purge_held = held
            if not held and self._purge:
                self.purge()

    def _rewrite_keywords(self) -> None:
        """tantivy only marks a removed document deleted: its words stay in its segment's term list (read by anyone
        who opens the index) until a merge joins that segment, which may be never. So the keyword index is written
        again from meta.db's documents and the files of its old segments are deleted."""
        # Marked as lagging until written whole: a process killed meanwhile has the next open rebuild it (__init__).
        self.meta.execute("INSERT OR IGNORE INTO info VALUES (?, '1')", (_pending_mark(),))
        w = self._w()
        w.delete_all_documents()
        for doc_id, kind, title, body, ts, ctx in self.meta.execute("SELECT id, kind, title, body, ts, ctx FROM docs"):
            w.add_document(self._keyword_doc(doc_id, kind, title, body, ts, ctx or ""))
        w.commit()
        self.index.reload()
        self.searcher = self.index.searcher()  # the old segments' last reader in this process lets go of them
        w.garbage_collect_files()
        w.wait_merging_threads()
        self._writer = None
        self.meta.execute("DELETE FROM info WHERE key=?", (_pending_mark(),))

    def _merge_pending(self) -> None:
        if not self._pending:
            return
        base = len(self.ids)
        dim = self.vecs.shape[1]
        new_ids = [p[0] for p in self._pending]
        self.ids.extend(new_ids)
        for n, i in enumerate(new_ids):
            self.row[i] = base + n
        self.ts = np.concatenate([self.ts, np.asarray([p[1] for p in self._pending], dtype=np.float64)])
        self.imp = np.concatenate([self.imp, np.asarray([p[2] for p in self._pending], dtype=np.float32)])
        self.alive = np.concatenate([self.alive, np.ones(len(new_ids), dtype=bool)])
        self.is_source = np.concatenate([self.is_source, np.asarray([p[4] for p in self._pending], dtype=bool)])
        self.spk = np.concatenate([self.spk, np.asarray([self._speaker_id(p[5]) for p in self._pending], dtype=np.int32)])
        self.asks = np.concatenate([self.asks, np.asarray([p[6] for p in self._pending], dtype=bool)])
        self.says_when = np.concatenate([self.says_when, np.asarray([p[7] for p in self._pending], dtype=bool)])
        if dim:
            add = np.stack([p[3] if p[3] is not None else np.zeros(dim, np.float32) for p in self._pending])
            self.vecs = np.concatenate([self.vecs, add.astype(np.float32)])
        else:
            self.vecs = np.zeros((len(self.ids), 0), dtype=np.float32)
        self._pending = []
        self._version += 1
        if self.alive.size and self.alive.sum() < 0.7 * self.alive.size:
            self._compact()

    def _compact(self) -> None:
        keep = np.nonzero(self.alive)[0]
        self.ids = [self.ids[k] for k in keep]
        self.row = {i: n for n, i in enumerate(self.ids)}
        self.ts, self.imp, self.vecs = self.ts[keep], self.imp[keep], self.vecs[keep]
        self.is_source, self.spk, self.asks = self.is_source[keep], self.spk[keep], self.asks[keep]
        self.says_when = self.says_when[keep]
        self.alive = np.ones(len(self.ids), dtype=bool)
        self._version += 1

    def clear(self) -> None:
        with self._lock:
            w = self._w()
            w.delete_all_documents()
            self.meta.executescript("DELETE FROM docs; DELETE FROM titles; DELETE FROM page_titles;")
            self._mark_keywords_pending()
            self.ids, self.row = [], {}
            self.ts = np.zeros(0, np.float64)
            self.imp = np.zeros(0, np.float32)
            self.alive = np.zeros(0, bool)
            self.is_source = np.zeros(0, bool)
            self.spk = np.zeros(0, np.int32)
            self.asks = np.zeros(0, bool)
            self.says_when = np.zeros(0, bool)
            self.vecs = np.zeros((0, self.vecs.shape[1]), np.float32)
            self._pending = []
            self._version += 1
            self._dirty = True

    # ---- reading -------------------------------------------------------------------------------

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.meta.execute("SELECT id FROM docs")}

    def count(self) -> int:
        return len(self.row)

    def _keyword_query(self, terms: list[str]) -> tantivy.Query:
        """Any of the terms (OR), each counted once per document, by the field that matches it best: the title
        weighted up, the preceding source's words (context) weighted down. In a run of turns about one thing
        every turn holds its words both in its own text and in its context: a sum would count them twice over a
        lone turn that says them once. And a word is as rare in a context as in the sources it was said in (a
        context is another source's text): counted in the context field alone, over fewer documents (not every
        source has one), a word every source says would look rare there."""
        searcher = self.searcher
        n = max(1, searcher.num_docs)  # raised below past a word's count of documents deleted but not yet merged away

        def idf(df: int) -> float:
            return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

        per_term = []
        seen: set[str] = set()
        for term in terms:
            toks = stems(term)
            if not toks or " ".join(toks) in seen:  # nothing the index holds (a word over 40 letters), or said already
                continue
            seen.add(" ".join(toks))
            if len(toks) > 1:  # written as more than one token (a word with marks the index splits): a phrase
                per_term.append(tantivy.Query.disjunction_max_query([
                    tantivy.Query.boost_query(tantivy.Query.phrase_query(self.schema, field, toks), boost)
                    for field, boost in (("title", 1.5), ("body", 1.0), ("ctx", CONTEXT_BOOST))]))
                continue
            tok = toks[0]
            in_ctx = searcher.doc_freq("ctx", tok)
            said = max(searcher.doc_freq("body", tok), in_ctx)
            n = max(n, said)  # a count that holds deleted documents: never a negative rarity
            per_term.append(tantivy.Query.disjunction_max_query([
                tantivy.Query.boost_query(tantivy.Query.term_query(self.schema, "title", tok), 1.5),
                tantivy.Query.term_query(self.schema, "body", tok),
                tantivy.Query.boost_query(tantivy.Query.term_query(self.schema, "ctx", tok),
                                          CONTEXT_BOOST * (idf(said) / idf(in_ctx) if in_ctx else 1.0))]))
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in per_term])

    def keyword(self, terms: list[str], limit: int, *, pages: bool = False) -> list[tuple[str, float]]:
        """bm25 top ``limit`` (id, score) for any of the terms (OR), title matches weighted up and the
        preceding source's words (context) weighted down. With ``pages``, of pages alone: among a scope's thousands
        of sources, its pages would be past any ``limit`` asked."""
        if not terms:
            return []
        if self._dirty:
            self.commit()
        q = self._keyword_query(terms)
        if pages:
            only = tantivy.Query.const_score_query(tantivy.Query.regex_query(self.schema, "id", "page:.*"), 0.0)
            q = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), (tantivy.Occur.Must, only)])
        searcher = self.searcher
        # never more than it holds: the search engine sets room aside for as many as it is asked for
        res = searcher.search(q, max(1, min(limit, searcher.num_docs)), count=False)
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in res.hits]

    def keyword_for(self, terms: list[str], ids: list[str]) -> list[tuple[str, float]]:
        """The bm25 scores ``keyword`` would give, for just these documents (those that match a term)."""
        if not terms or not ids:
            return []
        if self._dirty:
            self.commit()
        q = self._keyword_query(terms)
        only = tantivy.Query.const_score_query(tantivy.Query.term_set_query(self.schema, "id", ids), 0.0)
        both = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), (tantivy.Occur.Must, only)])
        searcher = self.searcher
        res = searcher.search(both, len(ids), count=False)
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in res.hits]

    def vector(self, qvec: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` (id, cosine) by brute-force dot product over this scope's vectors."""
        sims = self.similarities(qvec)
        if sims is None or not sims.size:
            return []
        limit = min(limit, sims.size)
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top])]
        return [(self.ids[n], float(sims[n])) for n in top if sims[n] > -2.0]

    def similarities(self, qvec: np.ndarray) -> np.ndarray | None:
        """Cosine of every row against ``qvec`` (-2 for deleted rows), or None without vectors."""
        if self._dirty:
            self.commit()
        if not self.vecs.shape[1] or not self.ids or qvec.shape[0] != self.vecs.shape[1]:
            return None
        # einsum, not BLAS: OpenBLAS threads make a small matrix-vector product 100x slower on busy cores.
        sims = np.einsum("ij,j->i", self.vecs, qvec.astype(np.float32))
        if not self.alive.all():
            sims = np.where(self.alive, sims, -2.0)
        return sims

    def _conversations(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Source rows in time order, where each conversation starts in that order, and its length."""
        if self._groups is None or self._groups[0] != self._version:
            rows = np.nonzero(self.is_source & self.alive)[0]
            order = rows[np.argsort(self.ts[rows], kind="stable")]
            if order.size:
                breaks = np.nonzero(np.diff(self.ts[order]) > GAP_S)[0] + 1
                starts = np.concatenate([[0], breaks]).astype(np.int64)
                lengths = np.diff(np.concatenate([starts, [order.size]]))
            else:
                starts = lengths = np.zeros(0, np.int64)
            self._groups = (self._version, order, starts, lengths)
        return self._groups[1], self._groups[2], self._groups[3]

    def conversation_max(self, scores: np.ndarray) -> np.ndarray:
        """For each source row, the best score among the sources of its conversation (sources less than
        ``GAP_S`` apart in time); 0 for pages."""
        order, starts, lengths = self._conversations()
        out = np.zeros_like(scores)
        if order.size:
            best = np.maximum.reduceat(scores[order], starts)
            out[order] = np.repeat(best, lengths)
        return out

    def neighbours(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each source row: the score of the source said just before it in its conversation, the score of
        the one said just after, and whether the one before ended by asking something (0 / False if none)."""
        prev, nxt = self.adjacent()
        before = np.where(prev >= 0, scores[prev], 0.0)  # -1 reads the last row; the mask drops it
        after = np.where(nxt >= 0, scores[nxt], 0.0)
        return before, after, (prev >= 0) & self.asks[prev]

    def adjacent(self) -> tuple[np.ndarray, np.ndarray]:
        """For each row, the row of the source said just before it and just after it in its conversation
        (-1 if none, and for pages)."""
        if self._adjacent is None or self._adjacent[0] != self._version:
            order, starts, _ = self._conversations()
            prev = np.full(len(self.ids), -1, dtype=np.int64)
            nxt = np.full(len(self.ids), -1, dtype=np.int64)
            if order.size > 1:
                same = np.ones(order.size - 1, dtype=bool)
                same[starts[1:] - 1] = False
                prev[order[1:]] = np.where(same, order[:-1], -1)
                nxt[order[:-1]] = np.where(same, order[1:], -1)
            self._adjacent = (self._version, prev, nxt)
        return self._adjacent[1], self._adjacent[2]

    def bodies(self, rows: list[int]) -> dict[int, str]:
        """The stored text of these rows (row -> body)."""
        want = {self.ids[r]: r for r in rows if 0 <= r < len(self.ids)}
        out: dict[int, str] = {}
        keys = list(want)
        for at in range(0, len(keys), 500):
            part = keys[at:at + 500]
            marks = ",".join("?" * len(part))
            for doc_id, body in self.meta.execute(f"SELECT id, body FROM docs WHERE id IN ({marks})", part):
                out[want[doc_id]] = body
        return out

    def doc_freqs(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(number of documents, documents whose text holds each stem) in the keyword index as the search that
        asks saw it (no commit here: that could renumber the rows it holds)."""
        searcher = self.searcher
        return searcher.num_docs, {t: searcher.doc_freq("body", t) for t in terms}

    def speakers_named(self, said: set[str]) -> set[int]:
        """Ids of this scope's speakers whose every name word is among ``said``."""
        return {sid for name, sid in self.speakers.items() if all(w in said for w in words(name))}

    def similarity(self, doc_id: str, qvec: np.ndarray) -> float:
        n = self.row.get(doc_id)
        if n is None or n < 0 or not self.vecs.shape[1]:
            return 0.0
        return float(self.vecs[n] @ qvec)

    def features(self, doc_id: str) -> tuple[float, float]:
        """(ts, importance or -1) of a live document."""
        n = self.row.get(doc_id)
        if n is None or n < 0:
            return 0.0, -1.0
        return float(self.ts[n]), float(self.imp[n])

    def typeahead(self, prefix: str, limit: int) -> list[tuple[str, str, str]]:
        """(id, kind, title) whose title has words starting with the typed words (last one as a prefix), one a title
        (a page's before a source's of that title). Only the last TYPEAHEAD_WORDS count: a long paste costs what a
        few words cost, and still suggests titles."""
        typed = words(prefix)[-TYPEAHEAD_WORDS:]
        if not typed or limit <= 0:
            return []
        expr = " ".join(f'"{w}"' for w in typed[:-1]) + (" " if len(typed) > 1 else "") + f'"{typed[-1]}"*'
        with self._lock:
            # Pages first (their own small index): a page is suggested however many sources share the word. Each
            # title once (``title_key``): a suggestion chosen searches its words, and months of one conversation or
            # a newsletter's mails share one title; read on until ``limit`` titles, or until none is left.
            rows: list[tuple[str, str, str]] = []
            had: set[str] = set()
            seen: set[str] = set()  # titles as held: one repeated is not read again

            def take(r: tuple[str, str, str]) -> bool:
                """Keeps a title not kept yet; whether the list is full."""
                if r[2] not in seen:
                    seen.add(r[2])
                    if title_key(r[2]) not in had:
                        had.add(title_key(r[2]))
                        rows.append(r)
                return len(rows) == limit

            with contextlib.closing(self.meta.execute(
                    "SELECT id, 'page', title FROM page_titles WHERE page_titles MATCH ?", (expr,))) as found:
                any(take(r) for r in found)
            # Sources' titles, as they come: most differ, and the list is full after a few rows. Past TYPEAHEAD_ROWS
            # rows the same titles repeat (20,000 notes of one title took 75 ms row by row): SQLite tells the rest
            # apart (25 ms), then one id is looked up for each title it adds, by its words as a phrase.
            read = 0
            with contextlib.closing(self.meta.execute("SELECT id, kind, title FROM titles WHERE titles MATCH ?",
                                                      (expr,))) as found:
                for r in found if len(rows) < limit else ():
                    read += 1
                    if take(r) or read == TYPEAHEAD_ROWS:
                        break
            wanted: list[str] = []
            if read == TYPEAHEAD_ROWS and len(rows) < limit:
                with contextlib.closing(self.meta.execute("SELECT DISTINCT title FROM titles WHERE titles MATCH ?",
                                                          (expr,))) as found:
                    for (title,) in found:
                        if title_key(title) not in had:
                            had.add(title_key(title))
                            wanted.append(title)
                            if len(rows) + len(wanted) == limit:
                                break
            for title in wanted:
                rows += self.meta.execute("SELECT id, kind, title FROM titles WHERE titles MATCH ? AND title = ? LIMIT 1",
                                          ('"' + title.replace('"', '""') + '"', title)).fetchall()
            # a title with Chinese, Japanese or Korean letters is held as it is searched (pairs): shown as written
            spaced = [r[0] for r in rows if _CJK_RUN.search(r[2])]
            written = dict(self.meta.execute(f"SELECT id, title FROM docs WHERE id IN ({','.join('?' * len(spaced))})",
                                             spaced).fetchall()) if spaced else {}
        return [(r[0], r[1], written.get(r[0], r[2])) for r in rows]

    def docs(self, ids: list[str]) -> dict[str, tuple[str, str, str, float, float | None]]:
        """id -> (kind, title, body, ts, importance) for the given ids."""
        if not ids:
            return {}
        with self._lock:
            marks = ",".join("?" * len(ids))
            rows = self.meta.execute(f"SELECT id, kind, title, body, ts, importance FROM docs WHERE id IN ({marks})", ids)
            return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def gone(self) -> bool:
        """Whether another Hearth process deleted this index (and perhaps made a new one in its folder)."""
        try:
            return os.stat(self.folder / "meta.db").st_ino != self.meta_file
        except OSError:
            return True

    def abandon(self) -> None:
        """Lets go of an index another process deleted, writing nothing: its folder may hold a new index now
        (what this one had not written is in the catalog, which the new one is repaired from)."""
        with self._lock:
            self._writer = None
            self._pending = []
            self.meta.close()

    def close(self) -> None:
        with self._lock:
            self.purge_held = False  # what a hold put off is done now: closing never leaves removed words behind
            try:
                if self._writer is not None or self._pending:
                    self.commit()
                if self._purge:
                    self.purge()
            except (OSError, ValueError) as exc:  # tantivy says "No space left on device" as a ValueError
                # The index stays marked as lagging (see __init__): the next open rebuilds its keywords from meta.db,
                # so nothing is missing and no removed word stays. Closing goes on, and the reason first raised
                # (a full disk, most often) is the one the person reads.
                log.warning("memory's keyword index in %s could not save its last changes (%s); it is rebuilt from "
                            "meta.db when memory opens next", self.folder, exc)
            finally:
                self.meta.close()


def remove_index_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
