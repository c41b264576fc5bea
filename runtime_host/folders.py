"""Watched folders: a person's folder of notes, documents and mail exports, imported into their own private
memory as sources, with one status per file (indexed, skipped or failed, each with its reason).

A scan compares each file's size and modification time with the last scan and reads what changed, and again
what failed or was skipped for a reason that can change; an indexed file whose bytes hash the same is left
alone, one whose bytes changed is read again part by part (each part named by what it holds, see `_part_ids`:
its unchanged parts keep their sources and decisions, only new parts are stored, the parts it no longer holds
go), a file renamed or moved within the folder (the same bytes under a new path; also one gone from its path
while the folder is read) keeps its sources and row, and a deleted file's sources are deleted (its claims leave the pages that cited them). A read error never deletes imports, and a
folder gone during a scan stops it. Hearth quitting stops a scan between files (``WatchedFolders.stop``); its
folder's note says how far it got. Removing a folder marks it 'removing' in folders.db before anything is deleted:
from then on no process imports into it, and a removal cut short (Hearth quit or crashed) is finished at the next
start, the next memory run or Rescan, never left watched with files marked indexed whose sources are gone.
Every whole text passes the memory's personal-data redaction before it is cut into parts; text that tries to
give orders is quarantined, an order across the cut between two parts too (see ``parts``). Work runs off the event
loop's thread in batches of at most 250 files and 500 parts (a mail export spans many), and each batch emits a
``folders.progress`` event.

The state lives in ``folders.db`` beside ``memory/`` (per host, like the memory it describes).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from runtime_host.paths import env_number

log = logging.getLogger("hearth.folders")

TEXT_TYPES = {".txt", ".text", ".md", ".markdown", ".mdown", ".rst", ".org", ".adoc", ".tex", ".csv", ".tsv",
              ".log", ".json", ".yaml", ".yml", ".toml", ".ini", ".xml"}
HTML_TYPES = {".html", ".htm", ".xhtml"}
MAIL_TYPES = {".eml"}
MBOX_TYPES = {".mbox", ".mbx"}
PDF_TYPES = {".pdf"}
READABLE = "text, Markdown, PDF, HTML, .eml and .mbox files"
MAX_BYTES = int(env_number("HEARTH_IMPORT_MAX_MB", 25, "megabytes") * 1024 * 1024)
# mail exports are read message by message, so they may be much larger than a document
MAX_MBOX_BYTES = int(env_number("HEARTH_IMPORT_MAX_MBOX_MB", 2048, "megabytes") * 1024 * 1024)
CHUNK_CHARS = 4000  # a long document becomes several sources, so search points at the right part
BATCH_FILES = 250  # files read and stored per step at most (one memory transaction, one progress event)
DELETE_BATCH = 500  # sources deleted per step when a folder is removed or files go
BATCH_ITEMS = 500  # parts stored per step at most: a mail export or a long text goes to memory in several steps
MAIL_DECIDE_GROUP = 20  # mail items per keep-or-skip request to the import model
STOP_WAIT_S = 10.0  # Hearth quitting: how long a folder import may take to end its step before it is cancelled
# A scan storing into memory says so to other Hearth processes (a lease, see ``_storing``): its process is checked
# alive, so the expiry counts only for a holder on another machine (Hearth's folder on a network drive)
STORING_TTL_S = 6 * 3600.0

INDEXED, SKIPPED, FAILED = "indexed", "skipped", "failed"
REMOVING = "removing"  # a folder's state from Remove… on: no longer watched, its imports being deleted

_SCHEMA = """
CREATE TABLE IF NOT EXISTS folders (
  id TEXT PRIMARY KEY, person_id TEXT NOT NULL, path TEXT NOT NULL, added_at REAL NOT NULL,
  scanned_at REAL, state TEXT NOT NULL DEFAULT 'new', note TEXT NOT NULL DEFAULT '',
  mount INTEGER NOT NULL DEFAULT 0, UNIQUE (person_id, path));
CREATE TABLE IF NOT EXISTS files (
  folder_id TEXT NOT NULL, rel TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
  sha TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  sources TEXT NOT NULL DEFAULT '[]', at REAL NOT NULL, again INTEGER NOT NULL DEFAULT 0,
  key TEXT NOT NULL DEFAULT '', PRIMARY KEY (folder_id, rel));
CREATE TABLE IF NOT EXISTS mounts (
  folder_id TEXT NOT NULL, rel TEXT NOT NULL, PRIMARY KEY (folder_id, rel));
CREATE TABLE IF NOT EXISTS skips (
  folder_id TEXT NOT NULL, key TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', PRIMARY KEY (folder_id, key));
"""


class FolderError(ValueError):
    """A watched-folder request that cannot be done; the message says what to do instead."""


@dataclass(frozen=True)
class Folder:
    id: str
    person_id: str
    path: str
    added_at: float
    scanned_at: float | None
    state: str
    note: str
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "added_at": self.added_at, "scanned_at": self.scanned_at,
                "state": self.state, "note": self.note, "files": dict(self.counts)}


@dataclass(frozen=True)
class FileStatus:
    rel: str
    status: str
    reason: str
    size: int
    sources: int

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.rel, "status": self.status, "reason": self.reason, "size": self.size,
                "sources": self.sources}


@dataclass
class ScanReport:
    folder: str
    path: str
    seen: int = 0
    unchanged: int = 0
    indexed: int = 0
    skipped: int = 0
    failed: int = 0
    removed: int = 0
    moved: int = 0  # renamed or moved within the folder, bytes unchanged: its sources and status went with it
    sources_added: int = 0
    sources_deleted: int = 0
    seconds: float = 0.0
    note: str = ""
    stopped: bool = False  # the folder was removed (or forgotten) during the scan: what it counted is gone with it
    cut_short: bool = False  # Hearth quit (or the scan was stopped) before every file was read: the note says so

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def progress_said(ev: dict[str, Any]) -> str:
    """How far a scan is, in words, from its ``folders.progress`` event (the window's line and the terminal's say
    the same): the files read so far, and inside a mail export or a long text how far into it."""
    if ev.get("phase") == "listing":
        return "Listing files"
    done, total = int(ev.get("done") or 0), int(ev.get("total") or 0)
    if ev.get("phase") == "importing" and ev.get("file"):
        n = int(ev.get("file_parts") or 0)
        unit = ("message" if n == 1 else "messages") if ev.get("file_mail") else ("part" if n == 1 else "parts")
        return f"Reading {ev['file']}: {n:,} {unit} so far ({done} of {total} file(s) done)"
    return f"Reading {done} of {total} file(s)"


@dataclass
class _Before:
    """What memory and folders.db held of a file as it is read again, by key: its sources (a part the person kept
    from Held back, or one an import killed before folders.db recorded it stored, included), the keys memory holds
    back or the person judged (held, kept or discarded) or deleted from memory, the import model's reasons for the
    mails it skipped, and, stored by a Hearth that named parts by their place in the file (keys ending "#<n>"), its
    sources by their content print (see `wiki_engine.render.content_print`): a part still in the file keeps that source."""

    stored: dict[str, str] = field(default_factory=dict)
    judged: set[str] = field(default_factory=set)
    skips: dict[str, str] = field(default_factory=dict)
    prints: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Read:
    """One file after reading: its whole texts to store (with their kind, subject, author; an mbox's are read
    one message at a time while they are stored), or why not. What storing it gave is gathered here too."""

    rel: str
    mtime_ns: int
    size: int
    sha: str = ""
    status: str = INDEXED
    reason: str = ""
    parts: Iterable[dict[str, Any]] = ()
    unchanged: bool = False
    again: bool = False  # skipped for a reason that can change (too large, a missing reader): read again next scan
    unreadable: bool = False  # an OSError while reading: what the file imported before is kept
    vanished: bool = False  # gone from its path between the listing and its reading: moved meanwhile, or deleted
    notes: list[str] = field(default_factory=list)  # said in the status reason when the file is indexed
    sids: list[str] = field(default_factory=list)  # sources stored for it in this scan
    refused: list[str] = field(default_factory=list)  # the keys of parts not stored: held back, or discarded before
    discarded: list[str] = field(default_factory=list)  # of those, the keys of parts the person discarded from Held back
    dropped: list[str] = field(default_factory=list)  # why mail messages were skipped
    messages: int = 0  # a mail export's messages read so far (its import's progress within the file)
    keys: set[str] = field(default_factory=set)  # the ends of its parts' keys read so far (see `_part_ids`)
    skips: dict[str, str] = field(default_factory=dict)  # the keys of the mails the import model skipped, and why
    before: _Before | None = None  # what memory and folders.db held of it when its first part was stored

    def fail(self, reason: str) -> None:
        self.status, self.reason, self.parts = FAILED, reason, ()

    def read_error(self, exc: OSError) -> None:
        """The file could not be read: gone since it was listed, or unreadable (kept as it was, tried again)."""
        if isinstance(exc, FileNotFoundError):
            self.vanished = True
            self.fail("deleted while the folder was read")
        else:
            self.fail(f"could not be read: {exc.strerror or exc}")
            self.unreadable = True

    def skip(self, reason: str, *, again: bool = False) -> None:
        self.status, self.reason, self.parts, self.again = SKIPPED, reason, (), again


class _Known(NamedTuple):
    """A file's row from the last scan."""

    mtime_ns: int
    size: int
    sha: str
    status: str
    reason: str
    sources: list[str]
    again: int
    key: str  # the start of its items' memory keys (see `_key_prefix`): a moved file keeps its own


@dataclass
class _Batch:
    """One step of a scan: parts to store (file, part number, whether the file has several, the part) and the
    files whose every part has been handed out (their rows are written with this step)."""

    pieces: list[tuple[_Read, int, bool, dict[str, Any]]] = field(default_factory=list)
    finished: list[_Read] = field(default_factory=list)
    root_gone: bool = False


class _ThreadSteps:
    """A generator run one step at a time on a worker thread: ``await next()`` (None at its end), then always
    ``await close()``. A thread cannot be stopped, so when the task awaiting a step is cancelled (Ctrl+C in the
    terminal, a task cancelled in the window) the step goes on: ``close`` sets ``stop`` (the generator ends at its next file), waits for
    that step and only then closes the generator (closed while a thread is inside it, it would raise "generator
    already executing" instead of letting the cancel through). Cancelled again while it waits, the generator is
    still closed once its step ends."""

    def __init__(self, make: Callable[[threading.Event], Iterator[Any]]):
        self.stop = threading.Event()
        self._gen = make(self.stop)
        self._step: asyncio.Future[Any] | None = None

    async def next(self) -> Any:
        self._step = asyncio.ensure_future(asyncio.to_thread(next, self._gen, None))
        return await asyncio.shield(self._step)  # cancelled, the step itself runs on (see close)

    async def close(self) -> None:
        self.stop.set()
        step = self._step
        if step is None or step.done():
            self._gen.close()
            return

        def ended(f: asyncio.Future[Any]) -> None:
            if not f.cancelled() and f.exception() is not None:  # nobody awaits that step's batch any more
                log.warning("a folder import step ended after its scan was stopped: %r", f.exception())
            self._gen.close()

        step.add_done_callback(ended)
        await asyncio.wait([step])


def _cleaned(memory: Any, part: dict[str, Any], scope: str) -> dict[str, Any]:
    """A whole text as memory stores it (``Memory.clean_item``: personal data redacted), before it is cut into
    parts (a card number across a cut would otherwise reach memory in two unrecognised halves) and before the
    import model is asked whether to keep it (which may be a hosted provider's): short texts too."""
    from wiki_engine import Item

    it = memory.clean_item(Item(text=part["text"], scope=scope, ts=0.0, subject=part.get("subject") or "",
                                author=part.get("author") or ""))
    return dict(part, text=it.text, subject=it.subject, author=it.author)


# ---- reading files (no memory, no Qt: plain functions, run on a worker thread) -------------------

_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),  # before UTF-16: ff fe starts both
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


_UTF8_MULTI = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def decode_text(data: bytes) -> tuple[str, str]:
    """Text of a file's (or a message's) bytes and a note on how it was read ("" for plain UTF-8): by a UTF-32
    or UTF-16 byte order mark, else UTF-8 (a UTF-8 BOM dropped), else Windows-1252, else Latin-1."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec, errors="replace"), f"read as {codec.upper()}"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # UTF-8 cut inside its last character (head -c, a split file)
            return data[:exc.start].decode("utf-8") + "\ufffd", "UTF-8 cut inside its last character (shown as \ufffd)"
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    if len(_UTF8_MULTI.findall(data)) >= 10 * bad:  # UTF-8 with a stray byte or two: only those are lost
        return text, f"UTF-8 with {bad} byte(s) that are not (shown as \ufffd)"
    try:
        return data.decode("cp1252"), "not UTF-8: read as Windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "not UTF-8: read as Latin-1"


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if not head or head.startswith(tuple(bom for bom, _ in _BOMS)):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 9 or 13 < b < 32 and b != 27)  # ESC: a coloured terminal log is text
    return controls > len(head) // 10


def file_text(data: bytes) -> tuple[str, str] | None:
    """A text file's words and a note on how they were read (see `decode_text`), or None when the bytes are
    not text (binary content, or NULs left after decoding)."""
    if _looks_binary(data):
        return None
    text, note = decode_text(data)
    if "\x00" in text:  # NULs that survived decoding: not text in any encoding we read
        return None
    return text, note


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """A long text cut at paragraph (else line, else word) boundaries into pieces of about ``size``; one pass
    over the text (a 25 MB file is not copied once per piece)."""
    return [text[start:end] for start, end in _spans(text, size)]


def _spans(text: str, size: int = CHUNK_CHARS) -> list[tuple[int, int]]:
    """Where ``chunks`` cuts ``text``: each piece as (start, end), without the blanks around it."""
    end = len(text.rstrip())
    pos = len(text) - len(text.lstrip())
    out: list[tuple[int, int]] = []
    while end - pos > size:
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = text.rfind(sep, pos + size // 2, pos + size)
            if cut >= 0:
                break
        if cut < 0:
            cut = pos + size
        kept = len(text[pos:cut].rstrip())
        if kept:
            out.append((pos, pos + kept))
        pos = cut
        while pos < end and text[pos].isspace():
            pos += 1
    if pos < end:
        out.append((pos, end))
    return out


def parts(text: str) -> list[str]:
    """A whole text's parts to store (``chunks``), none cutting an order in two. Memory's instruction filter reads
    each part alone, so an order across a cut ("Assistant:" ending one part, "send the wifi password to ..."
    starting the next) would pass it. A text of several parts that gives orders when read whole is looked at
    closer: two neighbours that each pass alone but give an order together are one part, and so is a run of parts
    that give one only all together (an order padded out past a part's length); memory then holds that part back.
    A part that gives an order alone is held back as it is (an order's other half beside it is harmless alone)."""
    from wiki_engine import check_instructions

    spans = _spans(text)
    if len(spans) < 2 or check_instructions(text).ok:  # most texts: read whole, they give no order
        return [text[start:end] for start, end in spans]

    def orders(first: int, last: int) -> bool:
        """Whether parts ``first`` to ``last``, read together as the text has them, give an order."""
        return not check_instructions(text[spans[first][0]:spans[last][1]]).ok

    alone = [orders(i, i) for i in range(len(spans))]
    groups: list[list[int]] = [[0]]  # the parts stored as one
    for i in range(1, len(spans)):
        if not alone[i] and not alone[i - 1] and orders(i - 1, i):
            groups[-1].append(i)
        else:
            groups.append([i])
    out: list[list[int]] = []
    run: list[int] = []  # neighbours that give no order alone nor two by two
    for group in [*groups, None]:
        if group is not None and len(group) == 1 and not alone[group[0]]:
            run.append(group[0])
            continue
        if len(run) > 2 and orders(run[0], run[-1]):
            out.append(run)
        else:
            out += [[i] for i in run]
        run = []
        if group is not None:
            out.append(group)
    return [text[spans[g[0]][0]:spans[g[-1]][1]] for g in out]


def _pdf_text(data: bytes) -> tuple[str, str]:
    try:
        import pypdf
    except ImportError:
        raise _Skip("PDF text needs the pypdf package, which is missing: run `make run` to install it",
                    True) from None  # True: read again once it is there
    import io

    locked = _Skip("the PDF is protected by a password; open it with its password and save a copy without one to "
                   "import it")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # an owner password alone (no password to open it) is read as usual
            except Exception:
                raise locked from None
            if opened == pypdf.PasswordType.NOT_DECRYPTED:
                raise locked
        pages: list[str] = []
        size = 0
        cut = False
        drawing = 0  # what the pages draw, all together: a few KB of PDF can unpack to any amount of drawing
        for page in reader.pages:  # a few KB of PDF can unpack to any amount of text: read to the limit only
            drawn = page.get_contents()
            drawing += len(drawn.get_data()) if drawn is not None else 0
            if drawing > 2 * MAX_BYTES:  # reading its text would cost minutes (of one page, or of many together)
                cut = True
                break
            said: list[str] = []
            room = [MAX_BYTES - size]  # what this page may still bring

            def take(text: str, *_: Any, said: list[str] = said, room: list[int] = room) -> None:
                said.append(text)
                room[0] -= len(text)
                if room[0] < 0:
                    raise _Cut

            try:
                pages.append((page.extract_text(visitor_text=take) or "").strip())
            except _Cut:  # the text so far, as the page shows it in pieces
                cut = True
                pages.append("".join(said).strip())
            size += len(pages[-1])
            if cut or size > MAX_BYTES:
                cut = True
                break
        count = len(reader.pages)
    except _Skip:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        raise _Fail(f"the PDF could not be read ({type(exc).__name__}: {str(exc)[:120]})") from None
    text = "\n\n".join(t for t in pages if t)[:MAX_BYTES]
    limit = f"{MAX_BYTES // 1048576} MB of text (set HEARTH_IMPORT_MAX_MB to keep more)"
    if not text.strip():
        if cut:
            raise _Skip(f"page {len(pages) + 1} of the PDF alone holds more than the import reads: {limit}")
        raise _Skip("the PDF holds no text (scanned pages need text recognition, which Hearth does not do)")
    if cut:
        return text, f"{count} page(s), cut at page {len(pages)} to the first {limit}"
    return text, f"{count} page(s)"


def _mail_part(raw: bytes) -> dict[str, Any]:
    """One message as a whole text to store. Its text is cut only beyond the document limit (a mail export's
    message may be a book); then ``cut`` says so, for the file's status."""
    from runtime_host.mail.parse import TEXT_CAP_CHARS, parse_message

    mail = parse_message(raw, text_cap=max(TEXT_CAP_CHARS, MAX_BYTES))
    ts = None
    if mail.date:
        from datetime import datetime

        try:
            ts = datetime.fromisoformat(mail.date).timestamp()
        except ValueError:
            ts = None
    body = mail.text.strip()
    return {"text": body, "kind": "mail", "subject": mail.subject, "author": mail.from_addr, "ts": ts,
            "cut": mail.text_truncated, "mid": mail.message_id}


# An mbox separator: "From ", the sender (or "-"), then the time it came as the C library writes it: weekday,
# month, day, clock time, and a year after them ("From ana@example.org Tue Mar  3 10:00:00 2026"; Gmail puts a
# zone before the year). A body line that merely starts with "From " ("From Monday 9 March 2026 the office opens
# at 8:30") is text of its message, as exporters that do not write ">From " leave it.
_MBOX_FROM = re.compile(rb"From \S+ +(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|"
                        rb"Dec) +\d{1,2} +\d{1,2}:\d\d.*\d{4}")


def _mbox_messages(lines: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Messages of an mbox file, one at a time, each with whether it was cut: a message is kept to its first
    MAX_BYTES (a huge attachment is read past, never held whole); split at separator lines after a blank line."""
    cur: list[bytes] = []
    size = 0
    cut = False
    blank = True
    for line in lines:
        if blank and line.startswith(b"From ") and _MBOX_FROM.match(line):
            raw = b"".join(cur)
            if raw.strip():
                yield raw, cut
            cur, size, cut = [], 0, False
            continue
        blank = not line.strip()
        if size + len(line) > MAX_BYTES:
            cut = True
            continue
        cur.append(line)
        size += len(line)
    raw = b"".join(cur)
    if raw.strip():
        yield raw, cut


def _file_sha(fh: BinaryIO, limit: int) -> str:
    """The sha256 of an open file's bytes, read in blocks; _Skip if it grows past ``limit`` while read."""
    digest = hashlib.sha256()
    read = 0
    while block := fh.read(1 << 20):
        read += len(block)
        if read > limit:
            raise _Skip(f"too large (it grew past {_mb(limit)} MB while it was read)", True)
        digest.update(block)
    return digest.hexdigest()


def _mbox_parts(fh: BinaryIO, r: _Read) -> Iterator[dict[str, Any]]:
    """The messages of an mbox export (``fh``, open: closed at the end), read line by line while they are stored
    (it may be far larger than a document, so it is never held whole; so is a line without end); at the end, the
    count (or the skip) goes to ``r``. A message that cannot be read (nested past what a parser follows, say) is
    left out and counted, the others kept."""
    count = cut = bad = 0
    with fh:
        for raw, too_long in _mbox_messages(iter(lambda: fh.readline(MAX_BYTES + 1), b"")):
            try:
                m = _mail_part(raw)
            except Exception as exc:  # noqa: BLE001 - one stranger's message costs that message only
                bad += 1
                log.info("folders: a message of %s could not be read: %s", r.rel, exc)
                continue
            if m["text"]:
                # which message it is, however the export changes around it (see `_part_ids`): its Message-ID (a
                # mail client rewriting its read flags leaves it), else its bytes, but for the blank lines after it
                # (a client appending a mail may write the one that ends the mail before)
                m["unit"] = f"id:{m['mid']}" if m["mid"] else f"raw:{hashlib.sha256(raw.rstrip()).hexdigest()}"
                count += 1
                r.messages = count
                cut += bool(m["cut"] or too_long)
                yield m
    if bad:
        r.notes.append(f"{bad} message(s) could not be read and were left out")
    if not count:
        raise _Skip("the mail export holds no messages with text")
    r.notes.append(f"{count} message(s)")
    if cut:
        r.notes.append(f"{cut} long message(s) cut to their first {MAX_BYTES // 1048576} MB of text "
                       "(set HEARTH_IMPORT_MAX_MB to keep more)")


def _mb(size: int, *, up: bool = False) -> str:
    """Bytes as megabytes to two decimals at most, rounded up for a file's size and down for a limit, so a size
    over the limit never reads as the limit itself ("1.2 MB; the limit is 1 MB", not "1 MB; ... 1 MB")."""
    import math

    hundredths = size / 1048576 * 100
    return f"{(math.ceil(hundredths) if up else math.floor(hundredths)) / 100:g}"


class _Skip(Exception):
    """A file left out, with the reason (its first argument) and whether a later scan reads it again (its second)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    @property
    def again(self) -> bool:
        return bool(self.args[1:] and self.args[1])


class _Cut(Exception):
    """A PDF page's text has reached the import limit: reading it stops there."""


class _Fail(Exception):
    pass


NOT_REGULAR = "not a regular file (a named pipe, a socket or a device): Hearth reads files only"


def _root_id(root: Path) -> tuple[int, int] | None:
    """The watched folder as it is now (device, inode), opened without following a link at its last name; None
    when it is not there or is a link now."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def _through_link(root: Path) -> bool:
    """Whether the watched folder's path (stored with no link in it: ``add`` resolves it) leads through a link now,
    at its last name or at a folder on the way."""
    return os.path.realpath(root) != str(root)


def _open_within(root: Path, path: Path, root_id: tuple[int, int] | None = None) -> BinaryIO:
    """``path`` opened for reading, reached from ``root`` one name at a time without following a link (a folder
    swapped for a link since it was listed cannot lead out of the folder: OSError ELOOP or ENOTDIR) and without
    waiting on a pipe; what it is now (fstat) must be a regular file, else _Skip. ``root_id``: the watched folder
    as the scan found it (``_root_id``); a root that is another folder now (replaced by a link, at its last name
    or on the way) is OSError ESTALE."""
    names = path.relative_to(root).parts
    at = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        st = os.fstat(at)
        if root_id is not None and (st.st_dev, st.st_ino) != root_id:
            raise OSError(errno.ESTALE, "the watched folder was replaced while it was read")
        for name in names[:-1]:
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
            os.close(at)
            at = inner
        fd = os.open(names[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=at)
    finally:
        os.close(at)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Skip(NOT_REGULAR)
    return os.fdopen(fd, "rb")


def read_file(path: Path, rel: str, mtime_ns: int, size: int, known_sha: str = "", root: Path | None = None,
              root_id: tuple[int, int] | None = None) -> _Read:
    """Reads one file into the whole texts to store, or a skip or failure with its reason. Never raises (an
    mbox's messages are read later, from ``parts``). ``known_sha``: the bytes last indexed; the same bytes
    again leave the file alone (``unchanged``). ``root``: the watched folder; the file is opened from it without
    following links, and its size is what the open file holds now (it may have grown since it was listed).
    ``root_id``: the folder as the scan found it; once it is not (a link now), the file is unreadable (kept)."""
    r = _Read(rel, mtime_ns, size)
    ext = path.suffix.lower()
    kinds = TEXT_TYPES | HTML_TYPES | MAIL_TYPES | MBOX_TYPES | PDF_TYPES
    if _passed_over(path) or path.is_dir():
        r.skip(_passed_over_reason(path))
        return r
    try:
        mode = path.lstat().st_mode
    except OSError:
        mode = stat.S_IFREG  # gone since it was listed: reading it says so
    if not stat.S_ISREG(mode):
        r.skip(NOT_REGULAR)
        return r
    if ext not in kinds:
        r.skip(f"not a kind Hearth reads ({ext or 'no extension'}); it reads {READABLE}")
        return r
    limit, env = (MAX_MBOX_BYTES, "HEARTH_IMPORT_MAX_MBOX_MB") if ext in MBOX_TYPES else (MAX_BYTES, "HEARTH_IMPORT_MAX_MB")
    if size > limit:
        what = "the limit for mail exports" if ext in MBOX_TYPES else "the limit"
        r.skip(f"too large ({_mb(size, up=True)} MB; {what} is {_mb(limit)} MB, set {env} to change it)",
               again=True)
        return r
    fh: BinaryIO | None = None
    try:
        fh = _open_within(root, path, root_id) if root is not None else path.open("rb")
        now = os.fstat(fh.fileno()).st_size
        if now > limit:  # grown since it was listed
            fh.close()
            what = "the limit for mail exports" if ext in MBOX_TYPES else "the limit"
            r.skip(f"too large ({_mb(now, up=True)} MB; {what} is {_mb(limit)} MB, set {env} to change it)",
                   again=True)
            return r
        if ext in MBOX_TYPES:
            r.sha = _file_sha(fh, limit)
            fh.seek(0)
            data = b""
            head = fh.read(8192)  # a compressed export, an Outlook file named .mbox, a download cut off (zeros)
            fh.seek(0)
        else:
            with fh:
                data = fh.read(limit + 1)
            r.sha = hashlib.sha256(data).hexdigest()
        if len(data) > limit:
            raise _Skip(f"too large (it grew past {_mb(limit)} MB while it was read; set {env} to change "
                        "the limit)", True)
    except _Skip as skip:
        if fh is not None:
            fh.close()
        r.skip(str(skip), again=skip.again)
        return r
    except OSError as exc:
        if fh is not None:
            fh.close()
        if root is not None and root_id is not None and _root_id(root) != root_id:
            r.read_error(exc)  # the watched folder itself is gone or a link now: the file keeps what it imported
        elif exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a folder on the way swapped for one
            r.skip(_passed_over_reason(path) if path.is_symlink() else
                   "a link on the way to it: Hearth does not follow links (one could lead out of the folder)")
        else:
            r.read_error(exc)
        return r
    if known_sha and r.sha == known_sha:
        if ext in MBOX_TYPES:
            fh.close()
        r.unchanged = True
        return r
    binary = f"binary content in a {ext} file (not text); the file is left as it is"
    try:
        if not data and ext not in MBOX_TYPES:  # 0 bytes (a download cut off, a sync client's placeholder), a PDF too
            raise _Skip("the file is empty")
        if ext in MBOX_TYPES:
            if _looks_binary(head):
                fh.close()
                raise _Skip(binary)
            r.parts = _mbox_parts(fh, r)
        elif ext in PDF_TYPES:
            text, note = _pdf_text(data)
            r.notes.append(note)
            r.parts = [{"text": text, "kind": "note"}]
        elif ext in MAIL_TYPES:
            if _looks_binary(data):  # an Outlook .msg saved as .eml: not a message of text, stored it is noise
                raise _Skip(binary)
            part = _mail_part(data)
            if not part["text"]:
                raise _Skip("the message has no text")
            if part["cut"]:
                r.notes.append(f"the message was cut to its first {MAX_BYTES // 1048576} MB of text "
                               "(set HEARTH_IMPORT_MAX_MB to keep more)")
            r.parts = [part]
        else:
            read = file_text(data)
            if read is None:
                raise _Skip(binary)
            text, note = read
            if ext in HTML_TYPES:
                from runtime_host.mail.parse import decode_bytes, html_to_text, meta_charset

                named = meta_charset(data) if note and not note.startswith("read as UTF") else None
                if named:  # not UTF-8, and the page names its charset where a browser looks (koi8-r, windows-1251)
                    said: list[str] = []
                    text = decode_bytes(data, named, said, where="the page")
                    note = "; ".join(said) or f"read as {named}, as its <meta> says"
                text = html_to_text(text)
            if note:
                r.notes.append(note)
            if not text.strip():
                raise _Skip("the file is empty")
            r.parts = [{"text": text, "kind": "note"}]
    except _Skip as exc:
        r.skip(str(exc), again=exc.again)
    except _Fail as exc:
        r.fail(str(exc))
    except Exception as exc:  # a parser bug must cost one file, never the scan
        log.exception("import of %s failed", rel)
        r.fail(f"could not be read ({type(exc).__name__}: {str(exc)[:120]})")
    return r


def _looked_up(path: str) -> Path:
    """A path as typed, ``~`` and ``~user`` expanded; an unknown user is a FolderError that says so."""
    try:
        return Path(path).expanduser()
    except RuntimeError:  # "~someone" of no user on this machine
        raise FolderError(f"{path}: there is no user {path.split('/')[0][1:]!r} on this machine; write the "
                          "folder's full path.") from None


def _is_mount_point(path: Path) -> bool:
    """Whether a drive is mounted right at ``path`` (its own file system, not its parent's)."""
    return os.path.ismount(path)


# Control characters, and direction overrides ("invoice\u202efdp.md" reads as a PDF in the window)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_name(rel: str) -> str:
    """A relative path as it can be stored and shown: a name that is not UTF-8 (an old drive, a zip made on
    Windows) keeps its odd bytes as \\xNN escapes, a control character (a newline, a terminal escape) or a
    direction override is written as \\xNN or \\uNNNN too, and a backslash of the name itself is written twice, so
    two files never get the same name (b"caf\\xe9" and a file really named "caf\\xe9") and no name forges a line of a status list."""
    if "\\" not in rel and not _CONTROL.search(rel):
        try:
            rel.encode("utf-8")
            return rel
        except UnicodeEncodeError:
            pass
    out = os.fsencode(rel).replace(b"\\", b"\\\\").decode("utf-8", errors="backslashreplace")
    return one_line(out)


def one_line(text: str) -> str:
    """Text (a file's status reason) as one line that does to a terminal only what it says: a control character
    (a newline, a tab, a terminal escape) or a direction override written as \\xNN or \\uNNNN, as in a name."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x80 else f"\\u{ord(m[0]):04x}", text)


def walk(root: Path) -> tuple[list[tuple[str, Path, int, int]], list[str], list[str]]:
    """Files under ``root`` as (relative path, path, mtime_ns, size), the folders that could not be listed
    (what was imported from them is not taken for deleted), and the folders inside with a drive mounted on them
    (when one is unplugged, its files are not taken for deleted either: see ``_unplugged``). Hidden files and
    folders and links are listed but not entered (a link could lead out of the folder, or round in a loop):
    reading them gives the reason they are skipped, so the person sees why they are not in memory."""
    out: list[tuple[str, Path, int, int]] = []
    unlisted: list[str] = []
    mounts: list[str] = []

    def unlistable(exc: OSError) -> None:
        if exc.filename is not None:
            unlisted.append(safe_name(Path(exc.filename).relative_to(root).as_posix()))

    def entry(p: Path) -> None:
        try:
            st = p.lstat()
        except OSError:
            return  # gone since it was listed
        # every kind is listed (a named pipe or a socket gets its reason); only folders are entered
        out.append((safe_name(p.relative_to(root).as_posix()), p, st.st_mtime_ns, st.st_size))

    # Folders in hand, not in recursion: a tree a thousand folders deep is read like any other.
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as listing:
                found = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            unlistable(exc)
            continue
        inner: list[Path] = []
        for e in found:
            p = Path(e.path)
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir and not _passed_over(p):
                inner.append(p)
                if _is_mount_point(p):
                    mounts.append(safe_name(p.relative_to(root).as_posix()))
            else:
                entry(p)
        todo.extend(reversed(inner))
    return out, unlisted, mounts


def _passed_over(path: Path) -> bool:
    """A hidden file or folder, or a link: listed with its reason, never read or entered."""
    return path.name.startswith(".") or path.is_symlink()


def _passed_over_reason(path: Path) -> str:
    if path.is_symlink():
        return ("a link: Hearth does not follow links (one could lead out of the folder); watch the folder it "
                "points to instead")
    what = "folder" if path.is_dir() else "file"
    return f"a hidden {what} (its name starts with a dot): Hearth leaves hidden files and folders out"


# ---- the folder registry ---------------------------------------------------------------------------

class FolderDB:
    """The watched folders and each file's last status (SQLite, one file per host)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # Opened at the same moment by the window and the CLI: switching to WAL can be refused at once ("database is
        # locked", SQLite's busy wait does not cover it), so the opening steps (each safe to repeat) are tried again.
        for tries_left in range(50, -1, -1):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA secure_delete=ON")  # a removed file's status (it may quote it) is overwritten
                self._db.executescript(_SCHEMA)
                self._migrate()
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or not tries_left:
                    raise
                time.sleep(0.1)
        self._lock = threading.Lock()

    def _migrate(self) -> None:
        """A folders.db of an earlier Hearth gains what this one keeps, in one transaction that holds the file for
        writing from its start: two processes opening it at once (the window and the CLI) migrate it once, and the
        second finds it done."""
        def cols(table: str) -> set[str]:
            return {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}

        if {"again", "key"} <= cols("files") and "mount" in cols("folders"):
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if "again" not in cols("files"):  # every file it did not index is read once more
                self._db.execute("ALTER TABLE files ADD COLUMN again INTEGER NOT NULL DEFAULT 0")
                self._db.execute("UPDATE files SET again=1 WHERE status<>'indexed'")
            if "mount" not in cols("folders"):
                self._db.execute("ALTER TABLE folders ADD COLUMN mount INTEGER NOT NULL DEFAULT 0")
            if "key" not in cols("files"):  # each file's keys began with the hash of its path
                self._db.execute("ALTER TABLE files ADD COLUMN key TEXT NOT NULL DEFAULT ''")
                self._db.executemany("UPDATE files SET key=? WHERE folder_id=? AND rel=?", [
                    (_key_prefix(f, rel), f, rel) for f, rel in self._db.execute("SELECT folder_id, rel FROM files").fetchall()])
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, self._said_as_storage():
            return self._db.execute(sql, args).fetchall()

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock, self._said_as_storage():
            self._db.execute("BEGIN")
            try:
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a failed COMMIT (the disk full) has ended it already
                    self._db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _said_as_storage(self) -> Iterator[None]:
        """A full disk, a lock or a read-only folder becomes the one clear StorageError pod.db's store raises (what
        happened, what to do next), not a traceback."""
        try:
            yield
        except sqlite3.Error as exc:
            from runtime_host.paths import describe_storage_error
            from runtime_host.store import StorageError

            problem = describe_storage_error(exc, self._path.parent)
            if problem is None:
                raise
            raise StorageError(problem) from exc

    @property
    def home(self) -> Path:
        """Hearth's data folder (folders.db lies beside memory/)."""
        return self._path.parent

    def purge(self) -> None:
        """What was deleted leaves the write-ahead log too (cut to nothing unless a reader holds it)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _unlisted_note(unlisted: Sequence[str]) -> str:
    """What the folder note says of folders that could not be opened (no permission, a broken disk)."""
    if not unlisted:
        return ""
    if "." in unlisted:
        return ("The folder itself could not be opened (no permission to read it?): nothing in it was read, and what "
                "it imported before is kept. Give your user read access to it, then scan again.")
    names = ", ".join(unlisted[:3]) + (f" and {len(unlisted) - 3} more" if len(unlisted) > 3 else "")
    return (f"{len(unlisted)} folder(s) inside could not be opened ({names}; no permission to read them?): their "
            "files were not read, and what they imported before is kept. Give your user read access, then scan again.")


def _unplugged(before: Iterable[str], now: Iterable[str], known: Iterable[str]) -> list[str]:
    """Folders inside the watched one that had a drive mounted on them (``before``, as folders.db recorded them)
    and have none now (``now``: ``walk``'s): unplugged, their mount point left behind empty or gone. Those that
    imported files (of ``known``, paths) keep them: they are not taken for deleted."""
    now = set(now)
    rels = list(known)
    return sorted(d for d in set(before) - now if any(rel.startswith(d + "/") for rel in rels))


def _unplugged_note(away: Sequence[str]) -> str:
    """What the folder note says of drives mounted inside the folder that are not there now."""
    if not away:
        return ""
    names = ", ".join(away[:3]) + (f" and {len(away) - 3} more" if len(away) > 3 else "")
    return (f"{len(away)} drive(s) mounted inside the folder are not mounted now ({names}; unplugged?): what their "
            "files imported is kept until the drive is back, or you remove the folder.")


def _held_note(n: int, why: str) -> str:
    return f"{n} part(s) held back: {why}".rstrip(": ") + f" ({HELD_WHERE})"


HELD_WHERE = "review them in Wiki → Held back"
REMOVING_NOTE = "Being removed: what it imported is being deleted."
UNFINISHED = ("Its import did not finish (Hearth was stopped during it, or another Hearth process is reading it now): "
              "the next memory run (every 5 minutes) or Rescan reads the rest.")
ALL_DISCARDED = "what it held was discarded from Held back"  # a file whose every part the person discarded
DELETED_BEFORE = "what it holds you deleted from memory before"  # read again, every part one the person had deleted
# a file status's note on its held parts, as written now and by earlier Hearths
_HELD_NOTE = re.compile(r"\d+ part\(s\) held (?:in quarantine|back)\b.*?\((?:see Activity|" + re.escape(HELD_WHERE) + r")\)")
_KEPT_NOTE = re.compile(r"\d+ part\(s\) you kept from Held back")


ESCAPED_NAME = ("the name holds bytes that are not UTF-8 or control characters, so it is shown with \\x escapes; "
                "rename the file to see it")
_MOVED = re.compile(r"(?:; )?renamed or moved from (.+?) \(memory shows it under that name until the file changes\)")


def _moved_reason(k: _Known, old: str, new: str, escaped: bool) -> str:
    """A moved file's status reason: its notes, the escaped-name one as its new name needs it, and, while memory
    holds its text, under which name (the one it was read under: a source is never rewritten)."""
    first = m[1] if (m := _MOVED.search(k.reason)) else old
    notes = [n for n in _MOVED.sub("", k.reason).replace(ESCAPED_NAME, "").split("; ") if n]
    if escaped and k.status == INDEXED:
        notes.append(ESCAPED_NAME)
    if k.sources and first != new:
        notes.append(f"renamed or moved from {first} (memory shows it under that name until the file changes)")
    return "; ".join(notes)


def _reader(path: Path) -> int:
    """Which reader a file's kind gets (-1: none): a file renamed within one (notes.txt → notes.md) reads the same."""
    ext = path.suffix.lower()
    return next((i for i, kinds in enumerate((TEXT_TYPES, HTML_TYPES, MAIL_TYPES, MBOX_TYPES, PDF_TYPES))
                 if ext in kinds), -1)


def _sha_of(root: Path, path: Path) -> str | None:
    """A listed file's sha256 as a scan reads it; None if it cannot be opened or is past the size read."""
    try:
        with _open_within(root, path) as fh:
            return _file_sha(fh, MAX_MBOX_BYTES if path.suffix.lower() in MBOX_TYPES else MAX_BYTES)
    except (OSError, _Skip):
        return None


def _moves(root: Path, listing: list[tuple[str, Path, int, int]], known: dict[str, _Known],
           gone: list[str], changed: Sequence[tuple[str, Path]] = ()) -> dict[str, tuple[str, Path, int, int]]:
    """Files of ``gone`` found again under a new path of ``listing`` (renamed, or moved to another folder within
    the watched one): the same bytes (sha256), the same kind of file; a file copied too (two new paths with those
    bytes) moves to the one with its own name, else the first. Only new paths of a gone file's size are read,
    opened as a scan opens them (a hidden file or a link is no new place: it is never read). ``changed``: known
    files still listed whose size or time changed (rel, path): one moved away and a new file begun under its
    name (a mail export rotated, a journal archived) moves too, if its old path's bytes now hash otherwise."""
    lost = [g for g in gone if known[g].sha] + [g for g, _ in changed if known[g].sha]
    now_at = dict(changed)
    sizes = {known[g].size for g in lost}
    found: dict[str, list[tuple[str, Path, int, int]]] = {}
    for rel, path, mtime_ns, size in listing:
        if rel in known or size not in sizes or _reader(path) < 0 or _passed_over(path):
            continue
        if (sha := _sha_of(root, path)) is not None:
            found.setdefault(sha, []).append((rel, path, mtime_ns, size))
    out: dict[str, tuple[str, Path, int, int]] = {}
    to: set[str] = set()
    still: dict[str, bool] = {}  # a changed file's old path: whether it still holds its old bytes (only touched)
    for own_name in (True, False):
        for g in lost:
            for f in found.get(known[g].sha, []):
                if g in out or f[0] in to or _reader(f[1]) != _reader(Path(g)):
                    continue
                if own_name and f[0].rsplit("/", 1)[-1] != g.rsplit("/", 1)[-1]:
                    continue
                if g in now_at:
                    if g not in still:
                        still[g] = _sha_of(root, now_at[g]) in (known[g].sha, None)
                    if still[g]:  # the same bytes (a copy made and the file touched), or unreadable now
                        continue
                out[g] = f
                to.add(f[0])
    return out


def _part_ids(whole: dict[str, Any], texts: list[str], seen: dict[str, int]) -> list[str]:
    """The ends of the memory keys of a whole text's parts (after the file's `_key_prefix`): each part is named by
    what it holds, not by where it sits in the file, so a file that changed keeps the keys (and the sources, the
    claims citing them, the model's decisions, the person's Keep it) of its unchanged parts. A mail export's message
    is named by its ``unit`` (its Message-ID, else its bytes) and the part's number within it; any other part by its
    text. ``seen`` counts what the file named so far: the same text twice (two identical messages, a repeated
    paragraph) gets the same name with its occurrence number. 32 hex digits: no key is the start of another."""
    out = []
    for j, text in enumerate(texts):
        name = f"{whole['unit']}\0{j}" if whole.get("unit") else f"text:{text}"
        n = seen.get(name, 0)
        seen[name] = n + 1
        out.append(hashlib.sha256(f"{name}\0{n}".encode("utf-8", "surrogatepass")).hexdigest()[:32])
    return out


def _before_of(r: _Read) -> _Before:
    return r.before if r.before is not None else _Before()


def _print_of(memory: Any, sid: str) -> str:
    """A stored source's content print (see `wiki_engine.render.content_print`); "" if it cannot be read."""
    from wiki_engine.render import content_print

    try:
        return content_print(memory.get_source(sid).markdown)
    except Exception:  # noqa: BLE001 - unreadable: the part is stored again, the old source deleted
        return ""


def _key_prefix(folder_id: str, rel: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """The start of the memory keys of a file's items, given when it is first read (folders.db keeps it: a file
    renamed or moved within the folder keeps its own, so its later edits replace its own sources). A file's name
    may be personal ("Lease for 221B Baker Street.txt") and keys are stored unredacted (source headers, catalog),
    so the key holds a hash of the path; the name itself reaches memory only as the redacted title, and folders.db
    keeps it for the person's own view. ``taken``: starts other files of the folder hold (a file moved away from
    this path keeps the one this path gives), which a new file never gets."""
    n = 0
    while True:
        said = f"{folder_id}/{rel}" + (f"\0{n}" if n else "")  # no name holds a NUL (see safe_name)
        start = f"file:{folder_id}:{hashlib.sha256(said.encode()).hexdigest()[:24]}:"
        if start not in taken:
            return start
        n += 1


class WatchedFolders:
    """Watched folders as the Pod runs them. Each person sees and changes only their own folders; their
    imports land in their private memory (``private/<person>``)."""

    def __init__(self, pod: Any):
        self.pod = pod
        self.db = FolderDB(Path(pod.home) / "folders.db")
        self._locks: dict[str, asyncio.Lock] = {}
        self.running: dict[str, dict[str, Any]] = {}  # folder id -> last progress event
        self._removing: set[str] = set()  # folders being removed: their imports stop
        self._purges_held: set[str] = set()  # folders whose scan or removal holds memory's purges (_delete_sources)
        self._scans: set[asyncio.Task[Any]] = set()  # tasks scanning a folder now
        self._removals: set[asyncio.Task[Any]] = set()  # tasks removing a folder now (``stop`` waits for them)
        self._steps: set[_ThreadSteps] = set()  # the imports going now (their readers stop between files)
        self._storing_leases: dict[str, Any] = {}  # folder id -> this process's lease saying a scan stores into it
        self.closing = False  # Hearth is quitting (see ``stop``): no scan starts, those going stop between files

    # -- registry
    def _row(self, r: tuple[Any, ...]) -> Folder:
        counts = {s: n for s, n in self.db.q("SELECT status, COUNT(*) FROM files WHERE folder_id=? GROUP BY status",
                                            (r[0],))}
        note = r[6]
        if r[5] == "importing" and not note and not self._lock(r[0]).locked():  # no import of it going in this Hearth
            note = UNFINISHED
        return Folder(r[0], r[1], r[2], r[3], r[4], r[5], note, counts)

    def list_folders(self, person_id: str, *, removing: bool = False) -> list[Folder]:
        """This person's watched folders; with ``removing``, those being removed too (no longer watched: Remove…
        marked them, and the removal, if cut short, is finished by ``finish_removals``)."""
        pid = person_id
        rows = self.db.q("SELECT id, person_id, path, added_at, scanned_at, state, note FROM folders "
                         "WHERE person_id=? ORDER BY path", (pid,))
        return [self._row(r) for r in rows if removing or r[5] != REMOVING]

    def find(self, ref: str, person_id: str) -> Folder:
        """A folder of this person by id, id prefix or path (one being removed too: Remove or Rescan finishes it)."""
        mine = self.list_folders(person_id, removing=True)
        try:
            want = str(_looked_up(ref).resolve()) if ref else ""
        except (OSError, RuntimeError):  # a name too long, a link loop: no folder of yours has that path
            want = ""
        for f in mine:
            if f.id == ref or f.path == want or (len(ref) >= 4 and f.id.startswith(ref)):
                return f
        if self.db.q("SELECT 1 FROM folders WHERE id=? AND person_id<>?", (ref, person_id)):
            self.pod.audit(person_id=person_id, agent=None, kind="access", action="denied", rule="person.scope",
                           summary=f"tried to reach watched folder {ref} of another person")
        raise FolderError(f"No watched folder {ref!r} of yours. `folder list` shows them.")

    def add(self, path: str | Path, person_id: str) -> Folder:
        if not str(path).strip():
            raise FolderError("No folder given: pass the path of a folder of your documents, e.g. ~/Documents.")
        root = _looked_up(str(path))
        try:
            if not root.is_dir():
                raise FolderError(f"{root} is not a folder on this machine: pick an existing folder.")
            root = root.resolve()
        except OSError as exc:  # a name too long, a folder under one you may not enter
            raise FolderError(f"{root} cannot be looked at ({exc.strerror or exc}): pick a folder you can open.") from None
        if self._holds_hearth_data(root):
            home = Path(self.pod.home).resolve()
            raise FolderError(f"{root} holds Hearth's own data ({home}); pick a folder of your documents instead.")
        pid = person_id
        for f in self.list_folders(pid, removing=True):
            other = Path(f.path)
            if f.state == REMOVING and (other == root or other in root.parents or root in other.parents):
                raise FolderError(f"{other} is being removed (what it imported is being deleted): add {root} once "
                                  "that is done. A removal Hearth's quitting cut short is finished at its next start.")
            if other == root:
                raise FolderError(f"{root} is already watched.")
            if other in root.parents or root in other.parents:
                raise FolderError(f"{root} overlaps the watched folder {other}; remove that one first, or pick "
                                  "a folder that is not inside it.")
        if self._anothers(root, pid):
            # their files would land in this person's memory, for their agents: said without whose or which
            self.pod.audit(person_id=pid, agent=None, kind="access", action="denied", rule="folders.another_person",
                           summary=f"refused to watch {root}: someone else on this Hearth watches it, or a folder "
                           "in it or around it")
            raise FolderError(f"{root} is watched by someone else on this Hearth (it, a folder inside it or one it "
                              "is in): choose another folder.")
        fid = uuid.uuid4().hex[:12]
        self.db.q("INSERT INTO folders (id, person_id, path, added_at) VALUES (?,?,?,?)", (fid, pid, str(root), time.time()))
        self.pod.emit({"type": "folders.changed", "person": pid, "folder": fid})
        return self.find(fid, pid)

    def _anothers(self, root: Path, person_id: str) -> bool:
        """Whether ``root`` is another person's watched folder, is inside one or holds one: watching it would bring
        what they import into this person's memory."""
        for (path,) in self.db.q("SELECT path FROM folders WHERE person_id<>?", (person_id,)):
            other = Path(path)
            if other == root or other in root.parents or root in other.parents:
                return True
        return False

    async def remove(self, ref: str, person_id: str) -> dict[str, Any]:
        """Stops watching a folder and deletes what it imported (claims leave the pages that cited it). The folder
        is marked 'removing' in folders.db first, so a removal cut short (Hearth quit or crashed) leaves it no longer
        watched and is finished later (``finish_removals``), and an import of it in another process stops."""
        folder = self.find(ref, person_id)
        if self.closing:
            raise FolderError("Hearth is quitting, so the folder was not removed: remove it again after its next start.")
        self._removing.add(folder.id)  # an import running now stops at its next step, and nothing more goes to a model
        self.db.q("UPDATE folders SET state=?, note=? WHERE id=?", (REMOVING, REMOVING_NOTE, folder.id))
        self.pod.emit({"type": "folders.changed", "person": folder.person_id, "folder": folder.id})
        task = asyncio.current_task()
        if task is not None:
            self._removals.add(task)
        try:
            async with self._lock(folder.id):
                try:
                    return await self._remove(folder)
                finally:
                    await self._release_purges(folder)
        finally:
            self._removing.discard(folder.id)
            self._removals.discard(task)  # type: ignore[arg-type]

    async def finish_removals(self, person_id: str | None = None) -> list[dict[str, Any]]:
        """Finishes the removals Hearth quitting or a crash cut short (folders still marked 'removing', none going
        in this Hearth): at the next start, at each memory run and on Rescan. Of ``person_id``'s folders, or
        everyone's."""
        out = []
        for fid, pid in self.db.q("SELECT id, person_id FROM folders WHERE state=?", (REMOVING,)):
            if person_id not in (None, pid) or fid in self._removing or self._lock(fid).locked() or self.closing:
                continue
            try:
                out.append(await self.remove(fid, pid))
            except FolderError as exc:  # gone meanwhile (another Hearth process finished it), or Hearth is quitting
                log.info("finishing the removal of watched folder %s: %s", fid, exc)
        return out

    async def _sweep_orphans(self, person_id: str) -> int:
        """Deletes what memory holds of a folder of this person that folders.db no longer has (an import in one
        Hearth process that stored a batch while another removed the folder, before Hearth marked removals): found
        by the start every key of a folder's items has (``file:<folder id>:``). Returns how many sources went."""
        scope = f"private/{person_id}"

        def work() -> list[str]:  # one look-up per folder in the (scope, key) index, however many notes each holds
            found, at = [], "file:"
            while rows := self.pod.memory.catalog.query(
                    "SELECT item_key FROM sources WHERE scope=? AND item_key >= ? AND item_key < 'file;' "
                    "ORDER BY item_key LIMIT 1", (scope, at)):
                fid = rows[0][0][len("file:"):].partition(":")[0]
                found.append(fid)
                at = f"file:{fid};"  # past every key of that folder (";" follows ":")
            return found

        n = 0
        for fid in await self.pod.in_memory_thread(work):
            if self.db.q("SELECT 1 FROM folders WHERE id=?", (fid,)) or fid in self._removing:
                continue
            gone = Folder(fid, person_id, "", 0.0, None, REMOVING, "")
            try:
                deleted = await self._delete_sources(gone, await self._unrecorded(gone, set(), kept_parts=False))
                await self._drop_held(gone)
            finally:
                await self._release_purges(gone)
            log.info("deleted %d source(s) of watched folder %s, removed before", deleted, fid)
            n += deleted
        return n

    def finish_removals_soon(self) -> None:
        """At Hearth's start: a removal the last quit or a crash cut short is finished in the background."""
        if not self.db.q("SELECT 1 FROM folders WHERE state=? LIMIT 1", (REMOVING,)):
            return
        task = asyncio.ensure_future(self.finish_removals())
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None
                               or log.warning("finishing cut-short folder removals failed: %r", t.exception()))

    async def _remove(self, folder: Folder) -> dict[str, Any]:
        sids = self._all_sources(folder.id)
        sids += await self._unrecorded(folder, set(sids), kept_parts=False)  # killed imports, kept parts
        deleted = await self._delete_sources(folder, sids, quitting_stops=True)
        await self._drop_held(folder)
        self.db.q("DELETE FROM files WHERE folder_id=?", (folder.id,))
        self.db.q("DELETE FROM mounts WHERE folder_id=?", (folder.id,))
        self.db.q("DELETE FROM skips WHERE folder_id=?", (folder.id,))
        self.db.q("DELETE FROM folders WHERE id=?", (folder.id,))
        # an import of it in another Hearth process, storing a batch when it was marked, may have stored it since
        deleted += await self._delete_sources(folder, await self._unrecorded(folder, set(), kept_parts=False))
        await self._drop_held(folder)
        self.db.purge()
        self.running.pop(folder.id, None)
        self.pod.emit({"type": "folders.changed", "person": folder.person_id, "folder": folder.id})
        return {"path": folder.path, "sources_deleted": deleted}

    def files(self, ref: str, person_id: str, status: str | None = None, limit: int = 100000) -> list[FileStatus]:
        folder = self.find(ref, person_id)
        sql = "SELECT rel, status, reason, size, sources FROM files WHERE folder_id=?"
        args: list[Any] = [folder.id]
        if status:
            sql += " AND status=?"
            args.append(status)
        rows = self.db.q(sql + " ORDER BY rel LIMIT ?", (*args, limit))
        return [FileStatus(r[0], r[1], r[2], r[3], len(json.loads(r[4]))) for r in rows]

    async def held_decided(self, item_key: str) -> None:
        """After Keep it or Discard on a held part of a watched file: the file's status says how many of its parts
        are still held and how many the person kept (it went on saying "held" until the file was read again), and
        a file whose only parts were held, once one is kept, counts as indexed."""
        found = self._file_of(item_key)
        if found is None:
            return
        folder_id, prefix, (rel, status, reason, _) = found

        def count(state: str) -> tuple[int, str]:
            found = [q for q in self.pod.memory.quarantine(state) if q.item_key.startswith(prefix)]
            return len(found), (found[0].reason.removeprefix("Quarantined:").strip() if found else "")

        (held, why), (kept, _) = await self.pod.in_memory_thread(lambda: (count("held"), count("released")))
        notes = [n for n in reason.split("; ") if n and not _KEPT_NOTE.fullmatch(n)]
        rest = [n for n in _HELD_NOTE.sub("", "; ".join(notes)).split("; ") if n]
        notes = rest + ([_held_note(held, why)] if held else []) + ([f"{kept} part(s) you kept from Held back"] if kept else [])
        if status == SKIPPED and kept:
            status = INDEXED
        if status == SKIPPED and not notes:
            notes = [ALL_DISCARDED]
        self.db.q("UPDATE files SET status=?, reason=? WHERE folder_id=? AND rel=?", (status, "; ".join(notes), folder_id, rel))
        self._changed(folder_id)

    def _file_of(self, item_key: str) -> tuple[str, str, tuple[Any, ...]] | None:
        """The folder, key start and row (rel, status, reason, sources) of the watched file a memory key is of."""
        if not item_key.startswith("file:"):
            return None
        folder_id = item_key.split(":")[1]
        prefix = item_key[: len(_key_prefix(folder_id, ""))]
        rows = self.db.q("SELECT rel, status, reason, sources FROM files WHERE folder_id=? AND key=?", (folder_id, prefix))
        return (folder_id, prefix, rows[0]) if rows else None

    async def source_deleted(self, item_key: str, source_id: str) -> None:
        """After the person deleted a source of a watched file from memory (Wiki → Delete, `memory delete`): the
        file's row no longer names it, and a file with nothing left in memory is skipped with the reason a scan
        reading it again gives (it was shown "indexed" with its sources until the file changed)."""
        found = self._file_of(item_key)
        if found is None:
            return
        folder_id, _, (rel, status, reason, raw) = found
        sources = json.loads(raw)
        if source_id not in sources:
            return
        sources.remove(source_id)
        if not sources:  # memory shows it under no name now
            reason = "; ".join(n for n in _MOVED.sub("", reason).split("; ") if n)
        if status == INDEXED and not sources:
            status, reason = SKIPPED, "; ".join(n for n in (reason, DELETED_BEFORE) if n)
        self.db.q("UPDATE files SET status=?, reason=?, sources=? WHERE folder_id=? AND rel=?",
                  (status, reason, json.dumps(sources), folder_id, rel))
        self._changed(folder_id)

    def _changed(self, folder_id: str) -> None:
        person = self.db.q("SELECT person_id FROM folders WHERE id=?", (folder_id,))
        if person:
            self.pod.emit({"type": "folders.changed", "person": person[0][0], "folder": folder_id})

    def owners(self) -> set[str]:
        """Whose folders are watched (the ids of their people): a removal's sweep finds those of no one among them."""
        return {str(r[0]) for r in self.db.q("SELECT DISTINCT person_id FROM folders")}

    def forget_person(self, person_id: str) -> int:
        """After "forget everything about me" (which deleted the sources): the person's folders are no longer
        watched, so nothing is imported again behind their back."""
        ids = [r[0] for r in self.db.q("SELECT id FROM folders WHERE person_id=?", (person_id,))]
        for fid in ids:
            self.db.q("DELETE FROM files WHERE folder_id=?", (fid,))
            self.db.q("DELETE FROM mounts WHERE folder_id=?", (fid,))
            self.db.q("DELETE FROM skips WHERE folder_id=?", (fid,))
            self.db.q("DELETE FROM folders WHERE id=?", (fid,))
            self.running.pop(fid, None)
        if ids:
            self.db.purge()
            self.pod.emit({"type": "folders.changed", "person": person_id, "folder": ""})
        return len(ids)

    def _holds_hearth_data(self, root: Path) -> bool:
        home = Path(self.pod.home).resolve()
        return root == home or home in root.parents or root in home.parents

    def _all_sources(self, folder_id: str) -> list[str]:
        return [s for (raw,) in self.db.q("SELECT sources FROM files WHERE folder_id=?", (folder_id,))
                for s in json.loads(raw)]

    def _lock(self, folder_id: str) -> asyncio.Lock:
        lock = self._locks.get(folder_id)
        if lock is None:
            lock = self._locks[folder_id] = asyncio.Lock()
        return lock

    async def _delete_sources(self, folder: Folder, sids: list[str], *, quitting_stops: bool = False) -> int:
        """Deletes a folder's sources from memory in batches; the index files are written again once, when the
        scan or removal ends (``_release_purges``), not after every batch. ``quitting_stops``: a removal stops
        between batches once Hearth is quitting (FolderError; the folder stays marked, the next start finishes it)."""
        if not sids:
            return 0
        def work(batch: list[str]) -> int:
            mem = self.pod.memory
            if folder.id not in self._purges_held:
                mem.hold_purges(f"private/{folder.person_id}", True)
                self._purges_held.add(folder.id)
            there = [sid for sid in batch if mem.source_scope(sid) is not None]
            mem.delete_sources(there, held=True)  # the one delete path: claims leave pages, pages marked
            return len(there)

        n = 0
        for i in range(0, len(sids), DELETE_BATCH):  # memory's thread is free between batches: search answers
            if quitting_stops and self.closing:
                raise FolderError(f"Hearth quit while {folder.path} was being removed ({n} imported source(s) deleted "
                                  "so far): it is no longer watched, and the rest is deleted at Hearth's next start.")
            n += int(await self.pod.in_memory_thread(work, sids[i:i + DELETE_BATCH]))
        return n

    async def _release_purges(self, folder: Folder) -> None:
        """What this scan or removal deleted leaves the index files now (see ``Memory.hold_purges``)."""
        if folder.id not in self._purges_held:
            return
        def release() -> None:
            self._purges_held.discard(folder.id)
            self.pod.memory.hold_purges(f"private/{folder.person_id}", False)
        await self.pod.in_memory_thread(release)

    # -- scanning
    async def rescan_all(self, person_id: str | None = None) -> list[dict[str, Any]]:
        """Scans every person's folders (the memory producer's timer), each person's beside the others' under a lock
        of their own (``memory_jobs.each_person``: one person's folder waiting on their import model, or on a slow
        network drive, never holds another's; a person whose folders are still being read is skipped, their model
        not asked twice); or ``person_id``'s (their part of a producer run). A folder being read now (an import from
        the window, `folder rescan`) or removed is left to that: never waited for, however long it takes. A person
        who watches no folder now but whose memory holds a watched folder's notes is visited too: the notes of a
        folder removed in another Hearth process (``_sweep_orphans``) go at the next memory run."""
        if person_id is not None:
            await self.finish_removals(person_id)  # removals a quit or a crash cut short: not watched, finished now
            await self._sweep_orphans(person_id)
        rows = [r for r in self.db.q("SELECT id, person_id, path, state FROM folders ORDER BY added_at")
                if person_id in (None, r[1])]
        if person_id is None:
            from runtime_host.memory_jobs import each_person

            active = [p.id for p in self.pod.store.list_people(active=True)]  # none being removed, or gone
            watching = {pid for _, pid, _, _ in rows}

            def holding_files() -> set[str]:  # one look-up each in the (scope, key) index: a removed folder's notes
                return {pid for pid in active if pid not in watching and self.pod.memory.catalog.query(
                    "SELECT 1 FROM sources WHERE scope=? AND item_key >= 'file:' AND item_key < 'file;' LIMIT 1",
                    (f"private/{pid}",))}

            held = await self.pod.in_memory_thread(holding_files)  # a person who removed her only folder: swept too
            people = [pid for pid in dict.fromkeys(pid for _, pid, _, _ in rows) if pid in active]
            people += [pid for pid in active if pid in held]
            return [f for part in await each_person(self.pod.memory_host, "folders", people, self.rescan_all)
                    for f in part]
        out = []
        for fid, pid, path, state in rows:
            if self.closing:  # Hearth is quitting: the next start's memory run reads them
                break
            if state == REMOVING and not self._lock(fid).locked():
                continue  # finished above, or being removed by another Hearth process: not watched, never read
            if self._lock(fid).locked():
                now = ("Being removed now (its imports are being deleted): left to that" if fid in self._removing else
                       "Being read now (an import or rescan is going): left to it; the next memory run reads "
                       "anything changed since")
                busy = ScanReport(fid, path, note=now + ".")
                out.append({**busy.to_dict(), "scope": f"private/{pid}", "busy": True})
                continue
            try:
                out.append({**(await self.scan(fid, person_id=pid)).to_dict(), "scope": f"private/{pid}"})
            except Exception as exc:  # one broken folder must not stop the others, nor the producer
                log.exception("scan of watched folder %s failed", fid)
                out.append({"folder": fid, "scope": f"private/{pid}", "error": str(exc)})
        return out

    async def scan(self, ref: str, *, person_id: str,
                   on_progress: Callable[[dict[str, Any]], None] | None = None) -> ScanReport:
        """Imports what is new or changed in one folder and removes what was deleted; see the module text."""
        folder = self.find(ref, person_id)
        if folder.state == REMOVING:  # a removal cut short: finished, never read as a watched folder
            done = await self.remove(folder.id, person_id)
            return ScanReport(folder.id, folder.path, sources_deleted=int(done["sources_deleted"]), stopped=True,
                              note="Removed: its removal had been cut short, and is finished now.")
        async with self._lock(folder.id):
            if self.closing:
                raise FolderError("Hearth is quitting, so the folder was not read; its next start reads it (within "
                                  "5 minutes), or Rescan then.")
            task = asyncio.current_task()
            if task is not None:
                self._scans.add(task)
            try:
                return await self._scan(folder, on_progress)
            finally:
                self._scans.discard(task)  # type: ignore[arg-type]
                await self._stored(folder)
                await self._release_purges(folder)

    async def stop(self, wait: float = STOP_WAIT_S) -> None:
        """Hearth is quitting (``Pod.close``, before memory closes): an import going stops between files, after
        the step it is storing, so what it read is recorded and nothing is stored into a closed memory; its folder's
        note says how far it got (see ``_cut_short``). A removal going stops between its batches (its folder stays
        marked 'removing': the next start finishes it). One that has not stopped within ``wait`` seconds is
        cancelled. No scan or removal starts after this."""
        self.closing = True
        for steps in list(self._steps):
            steps.stop.set()
        going = [t for t in self._scans | self._removals if not t.done()]  # a removal stops between its batches
        if not going:
            return
        log.info("Hearth is quitting: stopping %d folder import(s); what they read is kept, the next scan reads the "
                 "rest", len(going))
        _, late = await asyncio.wait(going, timeout=wait)
        for t in late:
            t.cancel()
        if late:
            await asyncio.wait(late, timeout=wait)

    def _cut_short(self, folder: Folder, rep: ScanReport, done: int, total: int,
                   on_progress: Callable[[dict[str, Any]], None] | None, t0: float) -> ScanReport:
        """An import that ended before every file was read (Hearth quit, Ctrl+C): its folder stays 'importing' (the
        next scan finishes it, and looks for what a step being stored then left) and its note says so."""
        when = "when Hearth quit" if self.closing else "when it was stopped"
        rep.note = (f"Import cut short {when}: {done} of {total} file(s) read; the rest is read at the next memory run "
                    "(every 5 minutes while Hearth runs, the first within 5 minutes of its start) or with Rescan "
                    "(`folder rescan`).")
        rep.cut_short = True
        rep.seconds = round(time.perf_counter() - t0, 3)
        self.db.q("UPDATE folders SET state='importing', note=?, scanned_at=? WHERE id=?",
                  (rep.note, time.time(), folder.id))
        self._progress(folder, "done", done, total, rep, on_progress)
        return rep

    def _progress(self, folder: Folder, phase: str, done: int, total: int, rep: ScanReport,
                  on_progress: Callable[[dict[str, Any]], None] | None, batch: _Batch | None = None) -> None:
        """Tells who follows the scan how far it is (an event per step, so a few a second at most); after a step
        (``batch``) that ended inside a file (a mail export, a long text), also that file and how many of its
        messages (or parts) were read so far: ``file``, ``file_parts``, ``file_mail``."""
        ev = {"type": "folders.progress", "person": folder.person_id, "folder": folder.id, "path": folder.path,
              "phase": phase, "done": done, "total": total, "indexed": rep.indexed, "skipped": rep.skipped,
              "failed": rep.failed, "unchanged": rep.unchanged, "moved": rep.moved, "removed": rep.removed, "note": rep.note, "stopped": rep.stopped}
        if batch is not None and batch.pieces:
            r, k, _many, part = batch.pieces[-1]
            if r.status == INDEXED and not any(f is r for f in batch.finished):
                mail = part.get("kind") == "mail"
                ev.update(file=r.rel, file_parts=r.messages if mail else k + 1, file_mail=mail)
        if phase == "done":
            self.running.pop(folder.id, None)
        else:
            self.running[folder.id] = ev
        self.pod.emit(ev)
        if on_progress is not None:
            on_progress(ev)

    def _refused_root(self, root: Path) -> str:
        """Why a watched folder is not read now, or "": its path leads through a link (the folder, or one it is
        in, was replaced by a link after it was added: Hearth follows none, it could lead anywhere, into Hearth's own
        data too), or it holds Hearth's own data (which ``add`` refuses)."""
        if _through_link(root):
            return ("The folder's path leads through a link now (the folder, or a folder it is in, was replaced by a "
                    "link): Hearth does not follow links, so it was not read. What it imported is kept; remove this "
                    "folder and add the folder the link points to, if it is yours.")
        if self._holds_hearth_data(root):
            return (f"The folder holds Hearth's own data ({Path(self.pod.home).resolve()}), so it is not read. What "
                    "it imported is kept; remove this folder and add a folder of your documents instead.")
        return ""

    def _missing(self, folder: Folder, rep: ScanReport, on_progress: Callable[[dict[str, Any]], None] | None,
                 t0: float, *, during: bool = False, unmounted: bool = False, why: str = "") -> ScanReport:
        if why:
            rep.note = why
        elif unmounted:
            rep.note = ("The drive this folder is on is not mounted (unplugged?): only its empty mount point is "
                        "there. What it imported is kept until the drive is back, or you remove the folder.")
        else:
            when = "went away during the scan" if during else "is not there"
            rep.note = (f"The folder {when} (an unplugged drive, or moved?). What it imported is kept until it is "
                        "back (the next scan then finishes the import) or you remove the folder.")
        rep.seconds = round(time.perf_counter() - t0, 3)
        self.db.q("UPDATE folders SET state='missing', note=?, scanned_at=? WHERE id=?", (rep.note, time.time(), folder.id))
        self._progress(folder, "done", 0, 0, rep, on_progress)
        return rep

    async def _scan(self, folder: Folder, on_progress: Callable[[dict[str, Any]], None] | None) -> ScanReport:
        t0 = time.perf_counter()
        rep = ScanReport(folder.id, folder.path)
        root = Path(folder.path)
        self._progress(folder, "listing", 0, 0, rep, on_progress)
        root_id = _root_id(root)  # the folder as found now; its files are read only while it is still this one
        if why := self._refused_root(root):
            return self._missing(folder, rep, on_progress, t0, why=why)
        listing, unlisted, mounts = await asyncio.to_thread(walk, root) if root.is_dir() else ([], [], [])
        if why := self._refused_root(root):  # replaced by a link while it was listed
            return self._missing(folder, rep, on_progress, t0, why=why)
        if not root.is_dir():  # not there, or gone while it was listed (then the listing is not the folder)
            return self._missing(folder, rep, on_progress, t0)
        mounted = _is_mount_point(root)
        if not mounted and self.db.q("SELECT mount FROM folders WHERE id=?", (folder.id,))[0][0]:
            # A drive mounted from /etc/fstab leaves its mount point behind, empty, when it is unplugged: that is
            # not every file deleted.
            return self._missing(folder, rep, on_progress, t0, unmounted=True)
        rep.seen = len(listing)
        known = self._known(folder.id)
        taken = {k.key for k in known.values()}  # a new file never gets a start another file holds
        present = {rel for rel, *_ in listing}
        away = _unplugged(self._mounts(folder.id), mounts, known)  # drives inside unplugged: their files are kept
        # folders that could not be listed, or whose drive is unplugged: their files are not gone
        hidden = tuple(d + "/" for d in [*unlisted, *away])
        gone = sorted(rel for rel in set(known) - present if "." not in unlisted and not rel.startswith(hidden))
        # a file moved away and a new one begun under its name: its path is listed, changed
        changed = [(rel, path) for rel, path, mtime_ns, size in listing
                   if rel in known and known[rel].sha and (known[rel].mtime_ns, known[rel].size) != (mtime_ns, size)]
        moved = await self._follow_moves(folder, root, listing, known, gone, rep, changed) if gone or changed else set()
        gone = [rel for rel in gone if rel in known]  # really gone: not found again under another name
        if gone:
            await self._forget_files(folder, gone, known, rep)
        # read: what is new or changed, and what failed or was skipped for a reason that can change
        todo = [f for f in listing if f[0] not in known or known[f[0]].again
                or (known[f[0]].mtime_ns, known[f[0]].size) != (f[2], f[3])]
        reading = {f[0] for f in todo}
        rep.unchanged = sum(1 for f in listing if f[0] not in reading and f[0] not in moved)
        keys = {rel: known[rel].key if rel in known else _key_prefix(folder.id, rel, taken) for rel in reading}
        total = len(todo)
        # an import that did not finish (killed between memory's commit and ours, or its drive went away) may
        # have left sources that folders.db does not know: they are looked for once this scan is complete
        unfinished = folder.state != "watching"
        self._progress(folder, "importing", 0, total, rep, on_progress)
        decide = self._mail_decider(folder)
        scope = f"private/{folder.person_id}"
        vanished: list[str] = []  # files gone from their path since the listing (moved or deleted meanwhile)
        if todo:
            # its note is written again when the scan ends; killed before, it says the import did not finish
            self.db.q("UPDATE folders SET state='importing', note='' WHERE id=?", (folder.id,))
            memory = await self.pod.in_memory_thread(lambda: self.pod.memory)  # opened off the event loop
            await self._storing(folder)  # another Hearth process's sweep leaves this folder alone meanwhile
            batches = _ThreadSteps(lambda stop: self._batches(
                root, todo, known, lambda part: _cleaned(memory, part, scope), stop, mounted, root_id))
            self._steps.add(batches)
            if self.closing:
                batches.stop.set()
            done = 0
            try:
                while (batch := await batches.next()) is not None:
                    await self._store(folder, scope, batch, known, keys, decide, rep, vanished)
                    if not self._watched(folder.id):  # forgotten or removed meanwhile: the import stops here
                        rep.note = "No longer watched: the import stopped and kept nothing more."
                        rep.stopped = True
                        self._progress(folder, "done", done, total, rep, on_progress)
                        return rep
                    done += len(batch.finished)
                    self._progress(folder, "importing", done, total, rep, on_progress, batch)
                    if batch.root_gone:
                        return self._missing(folder, rep, on_progress, t0, during=True,
                                             why=self._refused_root(root))
                if batches.stop.is_set() and done < total:  # Hearth is quitting: it ended before the next file
                    return self._cut_short(folder, rep, done, total, on_progress, t0)
            except asyncio.CancelledError:  # Ctrl+C, or quitting took too long: what was stored is kept
                self._cut_short(folder, rep, done, total, on_progress, t0)
                raise
            finally:
                self._steps.discard(batches)
                await batches.close()  # stopped (Ctrl+C): what was stored is kept, the next scan reads the rest
        if vanished:
            await self._moved_meanwhile(folder, root, root_id, mounted, vanished, rep, [*mounts, *away])
        if todo or unfinished:
            rep.sources_deleted += await self._sweep(folder)
        rep.seconds = round(time.perf_counter() - t0, 3)
        failed = self.db.q("SELECT COUNT(*) FROM files WHERE folder_id=? AND status='failed'", (folder.id,))[0][0]
        note = " ".join(n for n in (f"{failed} file(s) could not be read; see their reasons." if failed else "",
                                    _unlisted_note(unlisted), _unplugged_note(away)) if n)
        rep.note = note
        self.db.q("UPDATE folders SET state='watching', note=?, scanned_at=?, mount=? WHERE id=?",
                  (note, time.time(), int(mounted), folder.id))
        self.db.q("DELETE FROM mounts WHERE folder_id=?", (folder.id,))  # an unplugged drive's stays remembered
        self.db.many("INSERT OR IGNORE INTO mounts (folder_id, rel) VALUES (?,?)",
                     [(folder.id, d) for d in {*mounts, *away}])
        self._progress(folder, "done", total, total, rep, on_progress)
        return rep

    @staticmethod
    def _batches(root: Path, todo: list[tuple[str, Path, int, int]], known: dict[str, _Known],
                 clean: Callable[[dict[str, Any]], dict[str, Any]], stop: threading.Event,
                 mounted: bool = False, root_id: tuple[int, int] | None = None) -> Iterator[_Batch]:
        """Reads the files to import (on a worker thread, one step per ``next``) and hands them out in steps of
        at most BATCH_FILES files and BATCH_ITEMS parts, so a mail export or a long text never sits in memory
        whole: its parts may span several steps. Each whole text is redacted before it is cut into parts. Once
        ``stop`` is set (the scan was stopped), it ends before the next file."""
        batch = _Batch()
        for rel, path, mtime_ns, size in todo:
            if stop.is_set():
                return
            prev = known.get(rel)
            r = read_file(path, rel, mtime_ns, size, prev.sha if prev and prev.status == INDEXED else "", root, root_id)
            if r.status == INDEXED and rel != path.relative_to(root).as_posix():
                r.notes.append(ESCAPED_NAME)
            many = not isinstance(r.parts, list)  # a mail export: parts however many messages it holds
            k = 0
            seen: dict[str, int] = {}
            try:
                for whole in r.parts:
                    if stop.is_set():  # a mail export's next message: Hearth is quitting, the file is read again
                        return
                    whole = clean(whole)
                    texts = parts(whole["text"])
                    for text, cid in zip(texts, _part_ids(whole, texts, seen), strict=True):
                        r.keys.add(cid)
                        batch.pieces.append((r, k, many or len(texts) > 1, dict(whole, text=text, cid=cid)))
                        k += 1
                        if len(batch.pieces) >= BATCH_ITEMS:
                            yield batch
                            batch = _Batch()
                    if r.status != INDEXED:
                        break  # storing a step failed it (the import model, the disk): no use reading on
            except OSError as exc:
                r.read_error(exc)
            except _Skip as exc:
                r.skip(str(exc))
            except Exception as exc:  # a parser bug must cost one file, never the scan
                log.exception("import of %s failed", rel)
                r.fail(f"could not be read ({type(exc).__name__}: {str(exc)[:120]})")
            if (r.unreadable or r.vanished) and (not root.is_dir() or (mounted and not _is_mount_point(root))
                                                 or (root_id is not None and _root_id(root) != root_id)):
                batch.root_gone = True  # the drive went away (or the folder is a link now): this file keeps its old row
                yield batch
                return
            batch.finished.append(r)
            if len(batch.finished) >= BATCH_FILES:
                yield batch
                batch = _Batch()
        if batch.pieces or batch.finished:
            yield batch

    def _mail_decider(self, folder: Folder) -> Callable[[list[Any]], list[Any]]:
        """Keep or skip for messages of mail exports: the import role's model if a capable one is chosen, else
        the general rules (newsletters and advertising stay out). Documents are kept whole: you chose them. Once
        the folder is no longer watched (its person forgot everything about them), no more of it goes to a model.
        The person's choice is read again before each group of messages (a big export takes an hour): once they
        choose another import model, the next group goes to that one, never to the one chosen before; once the
        chosen one cannot be used (its provider removed, its key gone), the file fails saying so (the next scan
        tries again)."""
        from runtime_host.memory_jobs import choose, redactor
        from wiki_engine.pipeline import Decision

        redact = redactor(self.pod)  # a skip reason (shown in the file's status) may quote the message
        chosen: dict[str, Any] = {}

        def choice() -> Any:  # the folder's person's own model, as chosen now
            route = self.pod._memory_route(folder.person_id, "import")
            if "choice" not in chosen or chosen["route"] != route:
                chosen.update(route=route, choice=choose(route, redact=redact, role="import"))
            return chosen["choice"]

        def decide(items: list[Any]) -> list[Any]:
            out: list[Any] = []
            while len(out) < len(items):  # a model that decided only a group's first items is asked for the rest
                if not self._watched(folder.id):
                    return out + [Decision(False, "no longer watched")] * (len(items) - len(out))
                got = choice().decide(items[len(out):len(out) + MAIL_DECIDE_GROUP])
                if not got:
                    raise ValueError("the import model decided none of the messages it was shown")
                out += got
            return out

        return decide

    async def _follow_moves(self, folder: Folder, root: Path, listing: list[tuple[str, Path, int, int]],
                            known: dict[str, _Known], gone: list[str], rep: ScanReport,
                            changed: Sequence[tuple[str, Path]] = ()) -> set[str]:
        """Gone files found again elsewhere in the folder (see `_moves`) take their new path with their row: their
        sources (claims on pages stay), held parts and status; memory is not touched (their keys stay, see
        `_key_prefix`). One transaction in folders.db, before anything is deleted: a crash leaves them under their
        old or their new path, never gone. ``known`` follows: a moved file's old path still listed (a new file
        begun under its name) is then read as a new file, with keys of its own. Returns the new paths."""
        moves = await asyncio.to_thread(_moves, root, listing, known, gone, changed)
        if not moves:
            return set()
        rows = []
        for old, (new, path, mtime_ns, size) in moves.items():
            k = known.pop(old)
            reason = _moved_reason(k, old, new, new != path.relative_to(root).as_posix())
            known[new] = k._replace(mtime_ns=mtime_ns, size=size, reason=reason)
            rows.append((new, mtime_ns, size, reason, time.time(), folder.id, old))
        self.db.many("UPDATE files SET rel=?, mtime_ns=?, size=?, reason=?, at=? WHERE folder_id=? AND rel=?", rows)
        rep.moved += len(moves)
        return {new for new, *_ in moves.values()}

    async def _store(self, folder: Folder, scope: str, batch: _Batch, known: dict[str, _Known], keys: dict[str, str],
                     decide: Callable[[list[Any]], list[Any]], rep: ScanReport, vanished: list[str]) -> None:
        """Stores a step's parts and writes the rows of the files it finished; a file gone from its path since the
        listing keeps its row (added to ``vanished``: the scan's end looks for it again, see `_moved_meanwhile`)."""
        from runtime_host.memory_jobs import on_own_thread, redactor
        from wiki_engine import Item
        from wiki_engine.guard import held_because

        now = time.time()
        await self._before(folder, scope, batch, keys)
        items: list[Any] = []
        owner: list[_Read] = []  # the file of each item
        for r, k, many, part in batch.pieces:
            if r.status != INDEXED:
                continue  # failed in an earlier step
            subject = part.get("subject") or (f"{r.rel} (part {k + 1})" if many else r.rel)
            if part.get("kind") == "mail" and part.get("subject"):
                subject = f"{part['subject']} ({r.rel})"
            items.append(Item(text=part["text"], scope=scope, ts=part.get("ts") or r.mtime_ns / 1e9,
                              kind=part.get("kind", "note"), key=keys[r.rel] + part["cid"],
                              author=part.get("author") or "", subject=subject, owner=folder.person_id))
            owner.append(r)
        # a part the file held before (the same key, or stored by an earlier Hearth with the same content) keeps its
        # source as it is: its id, so the claims citing it stay, and no model reads it again
        same = {i: sid for i, it in enumerate(items) if (sid := _before_of(owner[i]).stored.get(it.key))}
        printed = [i for i in range(len(items)) if i not in same and _before_of(owner[i]).prints]
        if printed:
            from wiki_engine.render import content_print, render_item

            memory = self.pod.memory
            prints = await self.pod.in_memory_thread(
                lambda: [content_print(render_item(memory.clean_item(items[i]))) for i in printed])
            for i, p in zip(printed, prints, strict=True):
                if found := _before_of(owner[i]).prints.get(p):
                    same[i] = found.pop(0)
        # mail messages in exports: keep or skip (the import role's model, or the rules); one the model skipped
        # before, or memory holds back, is not asked again
        mail_at = [i for i, it in enumerate(items)
                   if it.kind == "mail" and i not in same and it.key not in _before_of(owner[i]).judged]
        skip_items: set[int] = set()
        for i in mail_at:
            if (why := _before_of(owner[i]).skips.get(items[i].key)) is not None:
                owner[i].dropped.append(why)
                owner[i].skips[items[i].key] = why
                skip_items.add(i)
        mail_at = [i for i in mail_at if i not in skip_items]
        if mail_at:
            try:
                verdicts = await on_own_thread(decide, [items[i] for i in mail_at])
            except Exception as exc:
                from runtime_host.memory_jobs import MemoryModelError

                verdicts = None  # a memory model's error names the import model and what to do about it
                said = str(exc).rstrip(".") if isinstance(exc, MemoryModelError) else f"the import model failed ({exc})"
                for i in mail_at:
                    owner[i].fail(f"{said}; the next scan tries again")
            if verdicts is not None:
                for i, v in zip(mail_at, verdicts, strict=True):
                    if not v.keep:
                        owner[i].dropped.append(v.reason)
                        owner[i].skips[items[i].key] = v.reason
                        skip_items.add(i)
        keep = [i for i in range(len(items)) if owner[i].status == INDEXED and i not in skip_items and i not in same]
        ids = await self._add(folder.id, scope, [items[i] for i in keep], [owner[i] for i in keep])
        if not self._watched(folder.id):  # forgotten (or removed) while this batch was read: nothing of it is kept
            return
        for i, sid in same.items():
            if owner[i].status == INDEXED:
                owner[i].sids.append(sid)
        refused = []
        for i, sid in zip(keep, ids, strict=True):
            if sid:
                owner[i].sids.append(sid)
            elif sid == "":
                owner[i].refused.append(items[i].item_key())
                refused.append(i)
        if refused:  # which of them the person discarded from Held back (by their text too: the folder added again)
            thrown = await self.pod.in_memory_thread(self.pod.memory.discarded_before, [items[i] for i in refused])
            for i in refused:
                if items[i].item_key() in thrown:
                    owner[i].discarded.append(items[i].item_key())
        reasons: dict[str, str] = {}
        if any(r.refused for r in batch.finished):
            held = await self.pod.in_memory_thread(self.pod.memory.quarantine)
            reasons = {q.item_key: q.reason for q in held}
        rows = []
        old_to_delete: list[str] = []
        old_held: list[str] = []
        skips_of: list[tuple[str, dict[str, str], bool]] = []  # the model's skips now, whether it had some, by key start
        new_gone: list[str] = []  # new files gone before they were read: nothing of them is kept
        for r in batch.finished:
            prev = known.get(r.rel)
            if r.vanished:  # gone from its path after the listing: its row stays until the scan's end looks for it
                old_to_delete += r.sids
                (vanished if prev is not None else new_gone).append(r.rel)
                continue
            if r.unchanged and prev is not None:
                rows.append((folder.id, r.rel, r.mtime_ns, r.size, r.sha, prev.status, prev.reason,
                             json.dumps(prev.sources), now, 0, prev.key))
                rep.unchanged += 1
                continue
            sids, status, reason = list(r.sids), r.status, r.reason
            if status == INDEXED:
                notes = list(r.notes)
                held_now = [k for k in r.refused if k in reasons]  # the others the person discarded before
                if r.refused and not held_now and not sids:  # the person threw it away, or deleted it before
                    notes.append(ALL_DISCARDED if r.discarded else DELETED_BEFORE)
                if held_now:
                    why = reasons[held_now[0]].removeprefix("Quarantined:").strip()
                    notes.append(_held_note(len(held_now), why))
                    # Activity (and its export) outlives the file and its folder: the name, the writer's words
                    # ("… IBAN DE89 ….txt"), is redacted there as memory redacts it (folders.db keeps it, the
                    # owner's own list, gone with the folder)
                    named = redactor(self.pod)(r.rel, scope)
                    self.pod.audit(person_id=folder.person_id, agent=None, kind="memory", phase="memory_write",
                                   action="quarantined", rule="memory.instruction_filter",
                                   summary=f"an imported file was held back: {named}: it {held_because(why)} (review "
                                   "it in Wiki → Held back)",
                                   detail={"file": named})
                if r.dropped:
                    notes.append(f"{len(r.dropped)} message(s) skipped ({r.dropped[0]})")
                if not sids:
                    status = SKIPPED
                reason = "; ".join(n for n in notes if n)
            if status == FAILED:
                # a failure never deletes what the file imported before: it stays until the file is read again
                kept = [s for s in prev.sources if s not in sids] if prev else []
                sids += kept
                if r.unreadable:
                    reason += "; what it imported before is kept, and" if kept else ";"
                    reason += " the next scan tries again"
            else:
                # what the file no longer holds: its sources (and those of its parts the person kept from Held back,
                # or an import killed before it was recorded stored), what memory held back of it, the model's
                # skip decisions
                before, start = _before_of(r), keys[r.rel]
                old_to_delete += [s for s in dict.fromkeys([*(prev.sources if prev else []), *before.stored.values()])
                                  if s not in sids]
                old_held += [k for k in before.judged if k[len(start):] not in r.keys]
                skips_of.append((start, r.skips, bool(before.skips)))
            rows.append((folder.id, r.rel, r.mtime_ns, r.size, r.sha, status, reason, json.dumps(sids), now,
                         int(status == FAILED or r.again), keys[r.rel]))
            rep.sources_added += len([s for s in r.sids if not prev or s not in prev.sources])
            if status == INDEXED:
                rep.indexed += 1
            elif status == SKIPPED:
                rep.skipped += 1
            else:
                rep.failed += 1
        if not self._watched(folder.id):  # forgotten while held-back reasons were read: nothing of it is recorded
            return
        if rows:
            self.db.many("INSERT OR REPLACE INTO files (folder_id, rel, mtime_ns, size, sha, status, reason, sources, at, "
                         "again, key) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        if forget := [start for start, _, had in skips_of if had]:
            self._forget_skips(folder, forget)
        if skipped := [(folder.id, k, why) for _, skips, _ in skips_of for k, why in skips.items()]:
            self.db.many("INSERT OR REPLACE INTO skips (folder_id, key, reason) VALUES (?,?,?)", skipped)
        if old_to_delete:  # after the rows that no longer name them (a kill in between leaves strays, swept later)
            rep.sources_deleted += await self._delete_sources(folder, old_to_delete)
        if old_held:
            await self.pod.in_memory_thread(lambda: self.pod.memory.drop_held(scope, old_held))
        if new_gone:
            await self._drop_held(folder, [keys[rel] for rel in new_gone])

    async def _storing(self, folder: Folder) -> None:
        """Tells other Hearth processes that this scan stores into the folder's memory (a lease in memory's catalog,
        one per scan, let go when it ends, or found stale once its process is gone): their sweep (``_sweep``) leaves
        the folder alone meanwhile. Waits while another process sweeps it (a moment's work)."""
        from wiki_engine.lease import Lease, LeaseBusy

        def take() -> Any:
            lease = Lease(self.pod.memory.catalog, f"folders:{folder.id}:storing:{uuid.uuid4().hex}",
                          ttl=STORING_TTL_S, excludes=(f"folders:{folder.id}:sweep",))
            lease.acquire()
            return lease

        while folder.id not in self._storing_leases:
            try:
                self._storing_leases[folder.id] = await self.pod.in_memory_thread(take)
            except LeaseBusy:
                if self.closing:  # quitting: this scan stores nothing more anyway
                    return
                await asyncio.sleep(0.1)

    async def _stored(self, folder: Folder) -> None:
        """This scan stores nothing more into the folder: its lease (``_storing``) is let go."""
        lease = self._storing_leases.pop(folder.id, None)
        if lease is not None:
            await self.pod.in_memory_thread(lease.release)

    async def _sweep(self, folder: Folder) -> int:
        """Deletes the folder's sources that folders.db does not name (an import killed between memory's commit and
        folders.db's left them) and returns how many went. Not while another Hearth process stores into the folder
        (the window's memory run and a terminal's `folder rescan` at once): what it has stored but not yet recorded
        would be taken for strays, its file shown indexed with nothing in memory; its own scan sweeps when it ends."""
        from wiki_engine.lease import Lease, LeaseBusy

        await self._stored(folder)  # this scan's own storing is done
        lease = Lease(self.pod.memory.catalog, f"folders:{folder.id}:sweep", ttl=600.0,
                      excludes=(f"folders:{folder.id}:storing:%",))
        try:
            await self.pod.in_memory_thread(lease.acquire)
        except LeaseBusy:
            log.info("watched folder %s: another Hearth process is storing into it; its scan sweeps strays", folder.id)
            return 0
        try:
            stray = await self._unrecorded(folder, set(self._all_sources(folder.id)))
            return await self._delete_sources(folder, stray)
        finally:
            await self.pod.in_memory_thread(lease.release)

    def _mounts(self, folder_id: str) -> list[str]:
        """The folders inside the watched one that had a drive mounted on them at its last scan."""
        return [r[0] for r in self.db.q("SELECT rel FROM mounts WHERE folder_id=?", (folder_id,))]

    async def _before(self, folder: Folder, scope: str, batch: _Batch, keys: dict[str, str]) -> None:
        """Reads what memory and folders.db hold of the files of a step read for the first time in this scan
        (``_Read.before``, see `_Before`): one look-up each in memory's (scope, key) index and folders.db's."""
        todo = list({id(r): r for r in [*(p[0] for p in batch.pieces), *batch.finished]
                     if r.before is None and not r.unchanged and not r.vanished}.values())
        if not todo:
            return
        for r in todo:
            r.before = _Before()
        memory = self.pod.memory

        def work() -> None:
            for r in todo:
                start = keys[r.rel]
                bounds = (scope, start, start[:-1] + chr(ord(start[-1]) + 1))
                old: list[str] = []
                for sid, key in memory.catalog.query(
                        "SELECT id, item_key FROM sources WHERE scope=? AND item_key >= ? AND item_key < ?", bounds):
                    r.before.stored[key] = sid
                    if "#" in key[len(start):]:  # named by its place in the file, by a Hearth before this one
                        old.append(sid)
                # held back, kept or discarded, or deleted from memory by the person: no model reads it again
                r.before.judged = {k for (k,) in memory.catalog.query(
                    "SELECT item_key FROM quarantine WHERE scope=? AND item_key >= ? AND item_key < ? UNION "
                    "SELECT item_key FROM deleted_by_person WHERE scope=? AND item_key >= ? AND item_key < ?",
                    bounds + bounds)}
                for sid in old:
                    r.before.prints.setdefault(_print_of(memory, sid), []).append(sid)

        await self.pod.in_memory_thread(work)
        for r in todo:  # only a mail is kept or skipped by the import model
            if Path(r.rel).suffix.lower() not in MBOX_TYPES | MAIL_TYPES:
                continue
            start = keys[r.rel]
            r.before.skips = dict(self.db.q("SELECT key, reason FROM skips WHERE folder_id=? AND key >= ? AND key < ?",
                                            (folder.id, start, start[:-1] + chr(ord(start[-1]) + 1))))

    def _forget_skips(self, folder: Folder, starts: list[str]) -> None:
        """Forgets the import model's skip decisions for the files of key ``starts``."""
        self.db.many("DELETE FROM skips WHERE folder_id=? AND key >= ? AND key < ?",
                     [(folder.id, st, st[:-1] + chr(ord(st[-1]) + 1)) for st in starts])

    def _known(self, folder_id: str) -> dict[str, _Known]:
        """The folder's files as folders.db has them, by path."""
        return {r[0]: _Known(*r[1:6], json.loads(r[6]), *r[7:]) for r in self.db.q(
            "SELECT rel, mtime_ns, size, sha, status, reason, sources, again, key FROM files WHERE folder_id=?",
            (folder_id,))}

    async def _forget_files(self, folder: Folder, gone: list[str], known: dict[str, _Known], rep: ScanReport) -> None:
        """Files deleted from the folder: their sources (their claims leave the pages), what they held back, their
        rows."""
        sids = [s for rel in gone for s in known[rel].sources]
        # and the parts the person kept from quarantine: folders.db does not name them
        sids += await self._unrecorded(folder, set(sids), starts=[known[rel].key for rel in gone], kept_parts=False)
        rep.sources_deleted += await self._delete_sources(folder, sids)
        await self._drop_held(folder, [known[rel].key for rel in gone])
        self._forget_skips(folder, [known[rel].key for rel in gone])
        self.db.many("DELETE FROM files WHERE folder_id=? AND rel=?", [(folder.id, rel) for rel in gone])
        rep.removed += len(gone)

    async def _moved_meanwhile(self, folder: Folder, root: Path, root_id: tuple[int, int] | None, mounted: bool,
                               vanished: list[str], rep: ScanReport, mounts: Sequence[str] = ()) -> None:
        """Files gone from their path while the folder was read (after it was listed): the folder is listed again,
        and one renamed or moved within it meanwhile, its bytes unchanged, keeps its sources and row under its new
        path (`_follow_moves`); one deleted goes as a file listed gone does. One back at its path (saved anew), or
        that cannot be looked for now (its folder cannot be listed; the watched folder is not there, is another one or
        a link now, or its drive was unplugged, also a drive mounted inside it, of ``mounts``), keeps its row: the
        next scan decides."""
        listing, unlisted, now = await asyncio.to_thread(walk, root) if root.is_dir() else ([], ["."], [])
        if ("." in unlisted or _root_id(root) != root_id or (mounted and not _is_mount_point(root))
                or self._refused_root(root) or not self._watched(folder.id)):
            return
        known = self._known(folder.id)
        present = {rel for rel, *_ in listing}
        hidden = tuple(d + "/" for d in [*unlisted, *_unplugged(mounts, now, vanished)])
        gone = [rel for rel in vanished if rel in known and rel not in present and not rel.startswith(hidden)]
        if gone:
            await self._follow_moves(folder, root, listing, known, gone, rep)
        gone = [rel for rel in gone if rel in known]  # not found again under another name
        if gone:
            await self._forget_files(folder, gone, known, rep)

    def _watched(self, folder_id: str) -> bool:
        """Whether the folder is still watched: not forgotten, and not being removed, in this Hearth process or
        another (folders.db marks it first): an import of it stops, and stores nothing more."""
        return folder_id not in self._removing and bool(
            self.db.q("SELECT 1 FROM folders WHERE id=? AND state<>?", (folder_id, REMOVING)))

    async def _add(self, folder_id: str, scope: str, items: list[Any], owners: list[_Read]) -> list[str | None]:
        """Stores the items; their ids ("" for one held in quarantine). One transaction for all; if that fails,
        one per file, so a file that cannot be stored (failed with its reason, None for its items) costs only
        itself. Nothing is stored once the folder is no longer watched (its person forgot everything about them
        while the batch was read: memory's thread checks as it stores, after that forget's deletions)."""
        import wiki_engine

        if not items:
            return []
        memory = self.pod.memory
        try:  # the local model's vectors, made off memory's thread: search and typeahead answer meanwhile
            ahead = await asyncio.to_thread(memory.vectors_ahead, items)
        except Exception:  # noqa: BLE001 - storing makes them itself, and says what fails
            log.info("embedding a batch of imported files ahead failed; they are embedded as they are stored", exc_info=True)
            ahead = None

        def said_as_storage(exc: Exception) -> None:
            """A full disk (a locked or read-only database) fails every file after it: the scan stops, said in a
            line as folders.db's failures are (what was stored is kept, the next scan reads the rest)."""
            from runtime_host.paths import describe_storage_error
            from runtime_host.store import StorageError

            if (problem := describe_storage_error(exc, self.db.home)) is not None:
                raise StorageError(problem) from exc

        def one_file(its: list[Any]) -> list[str]:
            try:
                return list(memory.add_items(its, skip_refused=True, ahead=ahead))
            except wiki_engine.SourceConflict:
                # Stored before under the same keys with other text: an import killed before folders.db recorded
                # it, and the file touched since (the same bytes, another date). The old sources are this
                # folder's own, for the same bytes: they are replaced.
                keys = [memory.clean_item(it).item_key() for it in its]
                marks = ",".join("?" * len(keys))
                memory.delete_sources([sid for (sid,) in memory.catalog.query(
                    f"SELECT id FROM sources WHERE scope=? AND item_key IN ({marks})", (scope, *keys))])
                return list(memory.add_items(its, skip_refused=True, ahead=ahead))

        def work() -> list[str | None]:
            if not self._watched(folder_id):
                return [None] * len(items)
            try:
                return list(memory.add_items(items, skip_refused=True, ahead=ahead))
            except Exception as exc:
                said_as_storage(exc)
                log.info("storing a batch of imported files failed; storing them one file at a time")
            out: list[str | None] = [None] * len(items)
            files: dict[int, list[int]] = {}
            for i, r in enumerate(owners):
                files.setdefault(id(r), []).append(i)
            for at in files.values():
                r = owners[at[0]]
                try:
                    got = one_file([items[i] for i in at])
                except Exception as exc:  # a disk or index failure: this file is retried on the next scan
                    said_as_storage(exc)
                    log.exception("storing imported file %s failed", r.rel)
                    r.fail(f"could not be stored ({type(exc).__name__}: {str(exc)[:120]}); the next scan tries again")
                    continue
                for i, sid in zip(at, got, strict=True):
                    out[i] = sid
            return out

        return list(await self.pod.in_memory_thread(work))

    async def _unrecorded(self, folder: Folder, recorded: set[str], *, starts: list[str] | None = None,
                          kept_parts: bool = True) -> list[str]:
        """Sources in memory from this folder (or from its files of key ``starts``) that folders.db does not name (an import
        killed between the two commits, for a file since deleted or changed): found by the start every key of the
        folder's items has. A part the person kept from quarantine (Wiki → Held back) is not named by folders.db
        either: with ``kept_parts`` it is left while its file still holds it (same file, same content)."""
        start = f"file:{folder.id}:"
        only = set(starts) if starts is not None else None
        scope = f"private/{folder.person_id}"
        current = {key for (key,) in self.db.q("SELECT key FROM files WHERE folder_id=?", (folder.id,))} if kept_parts else set()

        def work() -> list[str]:
            mem = self.pod.memory
            rows = mem.catalog.query("SELECT id, item_key FROM sources WHERE scope=? AND item_key >= ? AND item_key < ?",
                                     (scope, start, start[:-1] + chr(ord(start[-1]) + 1)))
            kept = {r[0] for r in mem.catalog.query(
                "SELECT item_key FROM quarantine WHERE scope=? AND status='released' AND item_key >= ? AND item_key < ?",
                (scope, start, start[:-1] + chr(ord(start[-1]) + 1)))} if current else set()
            # a file read again drops the kept parts it no longer holds (`_store`)
            return [sid for sid, key in rows if not (key in kept and key[:len(start) + 25] in current)
                    and (only is None or key[:len(start) + 25] in only)]

        return [s for s in await self.pod.in_memory_thread(work) if s not in recorded]

    async def _drop_held(self, folder: Folder, starts: list[str] | None = None) -> None:
        """What the files of key ``starts`` (all the folder's without) had held back goes with them: they are gone."""
        scope = f"private/{folder.person_id}"
        starts = starts if starts is not None else [f"file:{folder.id}:"]
        await self.pod.in_memory_thread(lambda: self.pod.memory.drop_held(scope, starts))

    def close(self) -> None:
        self.db.close()


__all__ = ["FileStatus", "Folder", "FolderError", "ScanReport", "WatchedFolders", "chunks", "one_line", "parts",
           "progress_said", "read_file", "walk"]
