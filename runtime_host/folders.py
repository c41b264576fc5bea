"""Watched folders: a person's folder of notes, documents and mail exports, imported into their own private
memory as sources, with one status per file (indexed, skipped or failed, each with its reason).

A scan compares each file's size and modification time with the last scan and reads only what changed;
a changed file whose bytes hash the same is left alone, one whose bytes changed replaces its sources, and a
deleted file's sources are deleted (its claims leave the pages that cited them). Every text passes the
memory's personal-data redaction on the way in; text that tries to give orders is quarantined. Work runs off
the event loop's thread in batches, and each batch emits a ``folders.progress`` event.

The state lives in ``folders.db`` beside ``memory/`` (per host, like the memory it describes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("hearth.folders")

TEXT_TYPES = {".txt", ".text", ".md", ".markdown", ".mdown", ".rst", ".org", ".adoc", ".tex", ".csv", ".tsv",
              ".log", ".json", ".yaml", ".yml", ".toml", ".ini", ".xml"}
HTML_TYPES = {".html", ".htm", ".xhtml"}
MAIL_TYPES = {".eml"}
MBOX_TYPES = {".mbox", ".mbx"}
PDF_TYPES = {".pdf"}
READABLE = "text, Markdown, PDF, HTML, .eml and .mbox files"
MAX_BYTES = int(float(os.environ.get("HEARTH_IMPORT_MAX_MB") or 25) * 1024 * 1024)
# mail exports are read message by message, so they may be much larger than a document
MAX_MBOX_BYTES = int(float(os.environ.get("HEARTH_IMPORT_MAX_MBOX_MB") or 2048) * 1024 * 1024)
CHUNK_CHARS = 4000  # a long document becomes several sources, so search points at the right part
BATCH_FILES = 250  # files read and stored per step (one memory transaction, one progress event)
MAIL_DECIDE_GROUP = 20  # mail items per keep-or-skip request to the import model

INDEXED, SKIPPED, FAILED = "indexed", "skipped", "failed"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS folders (
  id TEXT PRIMARY KEY, person_id TEXT NOT NULL, path TEXT NOT NULL, added_at REAL NOT NULL,
  scanned_at REAL, state TEXT NOT NULL DEFAULT 'new', note TEXT NOT NULL DEFAULT '',
  UNIQUE (person_id, path));
CREATE TABLE IF NOT EXISTS files (
  folder_id TEXT NOT NULL, rel TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
  sha TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  sources TEXT NOT NULL DEFAULT '[]', at REAL NOT NULL, PRIMARY KEY (folder_id, rel));
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
    sources_added: int = 0
    sources_deleted: int = 0
    seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class _Read:
    """One file after reading: what to store (texts with their kind, subject, author), or why not."""

    rel: str
    mtime_ns: int
    size: int
    sha: str = ""
    status: str = INDEXED
    reason: str = ""
    parts: list[dict[str, Any]] = field(default_factory=list)
    unchanged: bool = False


# ---- reading files (no memory, no Qt: plain functions, run on a worker thread) -------------------

def _decode_text(data: bytes) -> tuple[str, str]:
    """Text of a file's bytes and a note on how it was read ("" for plain UTF-8)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "read as UTF-16"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "not UTF-8: read as Windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "not UTF-8: read as Latin-1"


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if not head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return controls > len(head) // 10


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """A long text cut at paragraph (else line, else word) boundaries into pieces of about ``size``."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    out: list[str] = []
    while len(text) > size:
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = text.rfind(sep, size // 2, size)
            if cut > 0:
                break
        if cut <= 0:
            cut = size
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return [c for c in out if c]


def _pdf_text(data: bytes) -> tuple[str, str]:
    try:
        import pypdf
    except ImportError:
        raise _Skip("PDF text needs the pypdf package, which is missing: run `make run` to install it") from None
    import io

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                raise _Skip("the PDF is protected by a password") from None
        pages = [(p.extract_text() or "") for p in reader.pages]
    except _Skip:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        raise _Fail(f"the PDF could not be read ({type(exc).__name__}: {str(exc)[:120]})") from None
    text = "\n\n".join(t.strip() for t in pages if t.strip())
    if not text.strip():
        raise _Skip("the PDF holds no text (scanned pages need text recognition, which Hearth does not do)")
    return text, f"{len(pages)} page(s)"


def _mail_part(raw: bytes) -> dict[str, Any]:
    from runtime_host.mail.parse import parse_message

    mail = parse_message(raw)
    ts = None
    if mail.date:
        from datetime import datetime

        try:
            ts = datetime.fromisoformat(mail.date).timestamp()
        except ValueError:
            ts = None
    body = mail.text.strip()
    return {"text": body, "kind": "mail", "subject": mail.subject, "author": mail.from_addr, "ts": ts}


def _mbox_messages(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Messages of an mbox file, one at a time (split at "From " lines after a blank line)."""
    cur: list[bytes] = []
    blank = True
    for line in lines:
        if line.startswith(b"From ") and blank:
            if b"".join(cur).strip():
                yield b"".join(cur)
            cur = []
            continue
        blank = not line.strip()
        cur.append(line)
    if cur and b"".join(cur).strip():
        yield b"".join(cur)


def _read_mbox(path: Path, r: _Read, known_sha: str) -> None:
    """An mbox export read line by line (it may be far larger than a document): its sha256 and messages."""
    digest = hashlib.sha256()

    def lines() -> Iterator[bytes]:
        with path.open("rb") as fh:
            for line in fh:
                digest.update(line)
                yield line

    msgs = [m for m in (_mail_part(raw) for raw in _mbox_messages(lines())) if m["text"]]
    r.sha = digest.hexdigest()
    if known_sha and r.sha == known_sha:
        r.unchanged = True
        return
    if not msgs:
        raise _Skip("the mail export holds no messages with text")
    r.parts = [dict(m, text=c) for m in msgs for c in chunks(m["text"])]
    r.reason = f"{len(msgs)} message(s)"


class _Skip(Exception):
    pass


class _Fail(Exception):
    pass


def read_file(path: Path, rel: str, mtime_ns: int, size: int, known_sha: str = "") -> _Read:
    """Reads one file into the parts to store, or a skip or failure with its reason. Never raises."""
    r = _Read(rel, mtime_ns, size)
    ext = path.suffix.lower()
    kinds = TEXT_TYPES | HTML_TYPES | MAIL_TYPES | MBOX_TYPES | PDF_TYPES
    if ext not in kinds:
        r.status, r.reason = SKIPPED, f"not a kind Hearth reads ({ext or 'no extension'}); it reads {READABLE}"
        return r
    if ext in MBOX_TYPES and size <= MAX_MBOX_BYTES:
        try:
            _read_mbox(path, r, known_sha)
        except OSError as exc:
            r.status, r.reason = FAILED, f"could not be read: {exc.strerror or exc}"
        except _Skip as exc:
            r.status, r.reason, r.parts = SKIPPED, str(exc), []
        except Exception as exc:  # a parser bug must cost one file, never the scan
            log.exception("import of %s failed", rel)
            r.status, r.reason, r.parts = FAILED, f"could not be read ({type(exc).__name__}: {str(exc)[:120]})", []
        return r
    if ext in MBOX_TYPES:
        r.status, r.reason = SKIPPED, (f"too large ({size / 1048576:.0f} MB; the limit for mail exports is "
                                       f"{MAX_MBOX_BYTES / 1048576:.0f} MB, set HEARTH_IMPORT_MAX_MBOX_MB to change it)")
        return r
    if size > MAX_BYTES:
        r.status, r.reason = SKIPPED, (f"too large ({size / 1048576:.0f} MB; the limit is {MAX_BYTES / 1048576:.0f} MB, "
                                       "set HEARTH_IMPORT_MAX_MB to change it)")
        return r
    try:
        data = path.read_bytes()
    except OSError as exc:
        r.status, r.reason = FAILED, f"could not be read: {exc.strerror or exc}"
        return r
    r.sha = hashlib.sha256(data).hexdigest()
    if known_sha and r.sha == known_sha:
        r.unchanged = True
        return r
    try:
        notes: list[str] = []
        if ext in PDF_TYPES:
            text, note = _pdf_text(data)
            notes.append(note)
            r.parts = [{"text": c, "kind": "note"} for c in chunks(text)]
        elif ext in MAIL_TYPES:
            part = _mail_part(data)
            if not part["text"]:
                raise _Skip("the message has no text")
            r.parts = [dict(part, text=c) for c in chunks(part["text"])]
        else:
            if _looks_binary(data):
                raise _Skip(f"binary content in a {ext} file (not text); the file is left as it is")
            text, note = _decode_text(data)
            if note:
                notes.append(note)
            if ext in HTML_TYPES:
                from runtime_host.mail.parse import html_to_text

                text = html_to_text(text)
            if not text.strip():
                raise _Skip("the file is empty")
            r.parts = [{"text": c, "kind": "note"} for c in chunks(text)]
        r.reason = "; ".join(n for n in notes if n)
    except _Skip as exc:
        r.status, r.reason, r.parts = SKIPPED, str(exc), []
    except _Fail as exc:
        r.status, r.reason, r.parts = FAILED, str(exc), []
    except Exception as exc:  # a parser bug must cost one file, never the scan
        log.exception("import of %s failed", rel)
        r.status, r.reason, r.parts = FAILED, f"could not be read ({type(exc).__name__}: {str(exc)[:120]})", []
    return r


def walk(root: Path) -> list[tuple[str, Path, int, int]]:
    """Files under ``root`` as (relative path, path, mtime_ns, size); hidden files and folders and links are
    left out (a link could lead out of the folder, or round in a loop)."""
    out: list[tuple[str, Path, int, int]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            if not p.is_file() or p.is_symlink():
                continue
            out.append((p.relative_to(root).as_posix(), p, st.st_mtime_ns, st.st_size))
    return out


# ---- the folder registry ---------------------------------------------------------------------------

class FolderDB:
    """The watched folders and each file's last status (SQLite, one file per host)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _key_prefix(folder_id: str, rel: str) -> str:
    """The start of the memory keys of one file's items. A file's name may be personal ("Lease for 221B Baker
    Street.txt") and keys are stored unredacted (source headers, catalog), so the key holds a hash of the path;
    the name itself reaches memory only as the redacted title, and folders.db keeps it for the person's own view."""
    return f"file:{folder_id}:{hashlib.sha256(f'{folder_id}/{rel}'.encode()).hexdigest()[:24]}:"


class WatchedFolders:
    """Watched folders as the Pod runs them. Each person sees and changes only their own folders; their
    imports land in their private memory (``private/<person>``)."""

    def __init__(self, pod: Any):
        self.pod = pod
        self.db = FolderDB(Path(pod.home) / "folders.db")
        self._locks: dict[str, asyncio.Lock] = {}
        self.running: dict[str, dict[str, Any]] = {}  # folder id -> last progress event

    # -- registry
    def _row(self, r: tuple[Any, ...]) -> Folder:
        counts = {s: n for s, n in self.db.q("SELECT status, COUNT(*) FROM files WHERE folder_id=? GROUP BY status",
                                            (r[0],))}
        return Folder(r[0], r[1], r[2], r[3], r[4], r[5], r[6], counts)

    def list_folders(self, person_id: str) -> list[Folder]:
        pid = person_id
        rows = self.db.q("SELECT id, person_id, path, added_at, scanned_at, state, note FROM folders "
                         "WHERE person_id=? ORDER BY path", (pid,))
        return [self._row(r) for r in rows]

    def find(self, ref: str, person_id: str) -> Folder:
        """A folder of this person by id, id prefix or path."""
        mine = self.list_folders(person_id)
        want = str(Path(ref).expanduser().resolve()) if ref else ""
        for f in mine:
            if f.id == ref or f.path == want or (len(ref) >= 4 and f.id.startswith(ref)):
                return f
        if self.db.q("SELECT 1 FROM folders WHERE id=? AND person_id<>?", (ref, person_id)):
            self.pod.audit(person_id=person_id, agent=None, kind="access", action="denied", rule="person.scope",
                           summary=f"tried to reach watched folder {ref} of another person")
        raise FolderError(f"No watched folder {ref!r} of yours. `folder list` shows them.")

    def add(self, path: str | Path, person_id: str) -> Folder:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise FolderError(f"{root} is not a folder on this machine: pick an existing folder.")
        root = root.resolve()
        home = Path(self.pod.home).resolve()
        if root == home or home in root.parents or root in home.parents:
            raise FolderError(f"{root} holds Hearth's own data ({home}); pick a folder of your documents instead.")
        pid = person_id
        for f in self.list_folders(pid):
            other = Path(f.path)
            if other == root:
                raise FolderError(f"{root} is already watched.")
            if other in root.parents or root in other.parents:
                raise FolderError(f"{root} overlaps the watched folder {other}; remove that one first, or pick "
                                  "a folder that is not inside it.")
        fid = uuid.uuid4().hex[:12]
        self.db.q("INSERT INTO folders (id, person_id, path, added_at) VALUES (?,?,?,?)", (fid, pid, str(root), time.time()))
        self.pod.emit({"type": "folders.changed", "person": pid, "folder": fid})
        return self.find(fid, pid)

    async def remove(self, ref: str, person_id: str) -> dict[str, Any]:
        """Stops watching a folder and deletes what it imported (claims leave the pages that cited it)."""
        folder = self.find(ref, person_id)
        async with self._lock(folder.id):
            sids = self._all_sources(folder.id)
            deleted = await self._delete_sources(sids)
            self.db.q("DELETE FROM files WHERE folder_id=?", (folder.id,))
            self.db.q("DELETE FROM folders WHERE id=?", (folder.id,))
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

    def forget_person(self, person_id: str) -> int:
        """After "forget everything about me" (which deleted the sources): the person's folders are no longer
        watched, so nothing is imported again behind their back."""
        ids = [r[0] for r in self.db.q("SELECT id FROM folders WHERE person_id=?", (person_id,))]
        for fid in ids:
            self.db.q("DELETE FROM files WHERE folder_id=?", (fid,))
            self.db.q("DELETE FROM folders WHERE id=?", (fid,))
            self.running.pop(fid, None)
        if ids:
            self.pod.emit({"type": "folders.changed", "person": person_id, "folder": ""})
        return len(ids)

    def _all_sources(self, folder_id: str) -> list[str]:
        return [s for (raw,) in self.db.q("SELECT sources FROM files WHERE folder_id=?", (folder_id,))
                for s in json.loads(raw)]

    def _lock(self, folder_id: str) -> asyncio.Lock:
        lock = self._locks.get(folder_id)
        if lock is None:
            lock = self._locks[folder_id] = asyncio.Lock()
        return lock

    async def _delete_sources(self, sids: list[str]) -> int:
        if not sids:
            return 0
        import wiki_engine

        def work() -> int:
            n = 0
            for sid in sids:
                try:
                    self.pod.memory.delete_source(sid)  # the one delete path: claims leave pages, pages marked
                    n += 1
                except wiki_engine.UnknownSource:
                    pass
            return n

        return int(await self.pod.in_memory_thread(work))

    # -- scanning
    async def rescan_all(self) -> list[dict[str, Any]]:
        """Scans every person's folders (the memory producer calls this on its timer)."""
        rows = self.db.q("SELECT id, person_id FROM folders ORDER BY added_at")
        out = []
        for fid, pid in rows:
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
        async with self._lock(folder.id):
            return await self._scan(folder, on_progress)

    def _progress(self, folder: Folder, phase: str, done: int, total: int, rep: ScanReport,
                  on_progress: Callable[[dict[str, Any]], None] | None) -> None:
        ev = {"type": "folders.progress", "person": folder.person_id, "folder": folder.id, "path": folder.path,
              "phase": phase, "done": done, "total": total, "indexed": rep.indexed, "skipped": rep.skipped,
              "failed": rep.failed, "removed": rep.removed}
        if phase == "done":
            self.running.pop(folder.id, None)
        else:
            self.running[folder.id] = ev
        self.pod.emit(ev)
        if on_progress is not None:
            on_progress(ev)

    async def _scan(self, folder: Folder, on_progress: Callable[[dict[str, Any]], None] | None) -> ScanReport:
        t0 = time.perf_counter()
        rep = ScanReport(folder.id, folder.path)
        root = Path(folder.path)
        self._progress(folder, "listing", 0, 0, rep, on_progress)
        if not root.is_dir():
            rep.note = ("The folder is not there (an unplugged drive, or moved?). What it imported is kept until "
                        "it is back or you remove the folder.")
            self.db.q("UPDATE folders SET state='missing', note=?, scanned_at=? WHERE id=?", (rep.note, time.time(), folder.id))
            self._progress(folder, "done", 0, 0, rep, on_progress)
            return rep
        listing = await asyncio.to_thread(walk, root)
        rep.seen = len(listing)
        known = {r[0]: (r[1], r[2], r[3], r[4], json.loads(r[5])) for r in self.db.q(
            "SELECT rel, mtime_ns, size, sha, status, sources FROM files WHERE folder_id=?", (folder.id,))}
        present = {rel for rel, *_ in listing}
        gone = sorted(set(known) - present)
        if gone:
            rep.sources_deleted += await self._delete_sources([s for rel in gone for s in known[rel][4]])
            self.db.many("DELETE FROM files WHERE folder_id=? AND rel=?", [(folder.id, rel) for rel in gone])
            rep.removed = len(gone)
        todo = [f for f in listing if f[0] not in known or known[f[0]][0] != f[2] or known[f[0]][1] != f[3]]
        rep.unchanged = len(listing) - len(todo)
        total = len(todo)
        self._progress(folder, "importing", 0, total, rep, on_progress)
        decide = self._mail_decider(folder.person_id)
        scope = f"private/{folder.person_id}"
        for start in range(0, total, BATCH_FILES):
            batch = todo[start:start + BATCH_FILES]
            reads = await asyncio.to_thread(self._read_batch, batch, known)
            await self._store(folder, scope, reads, known, decide, rep)
            self._progress(folder, "importing", min(total, start + len(batch)), total, rep, on_progress)
        rep.seconds = round(time.perf_counter() - t0, 3)
        failed = self.db.q("SELECT COUNT(*) FROM files WHERE folder_id=? AND status='failed'", (folder.id,))[0][0]
        note = f"{failed} file(s) could not be read; see their reasons." if failed else ""
        self.db.q("UPDATE folders SET state='watching', note=?, scanned_at=? WHERE id=?", (note, time.time(), folder.id))
        self._progress(folder, "done", total, total, rep, on_progress)
        return rep

    @staticmethod
    def _read_batch(batch: list[tuple[str, Path, int, int]], known: dict[str, tuple[Any, ...]]) -> list[_Read]:
        return [read_file(p, rel, m, s, known[rel][2] if rel in known else "") for rel, p, m, s in batch]

    def _mail_decider(self, person_id: str) -> Callable[[list[Any]], list[Any]]:
        """Keep or skip for messages of mail exports: the import role's model if a capable one is chosen, else
        the general rules (newsletters and advertising stay out). Documents are kept whole: you chose them."""
        from runtime_host.memory_jobs import choose

        choice = choose(self.pod._memory_route(person_id, "import"))  # the folder's person's own model
        self.decided_by = choice.who

        def decide(items: list[Any]) -> list[Any]:
            out: list[Any] = []
            for i in range(0, len(items), MAIL_DECIDE_GROUP):
                out += choice.decide(items[i:i + MAIL_DECIDE_GROUP])
            return out

        return decide

    async def _store(self, folder: Folder, scope: str, reads: list[_Read],
                     known: dict[str, tuple[Any, ...]], decide: Callable[[list[Any]], list[Any]],
                     rep: ScanReport) -> None:
        from wiki_engine import Item

        now = time.time()
        items: list[Any] = []
        owner: list[tuple[int, int]] = []  # (read index, part index) of each item
        for n, r in enumerate(reads):
            if r.status != INDEXED or r.unchanged:
                continue
            many = len(r.parts) > 1
            for k, part in enumerate(r.parts):
                subject = part.get("subject") or (f"{r.rel} (part {k + 1})" if many else r.rel)
                if part.get("kind") == "mail" and part.get("subject"):
                    subject = f"{part['subject']} ({r.rel})"
                items.append(Item(text=part["text"], scope=scope, ts=part.get("ts") or r.mtime_ns / 1e9,
                                  kind=part.get("kind", "note"), key=f"{_key_prefix(folder.id, r.rel)}{r.sha[:16]}#{k}",
                                  author=part.get("author") or "", subject=subject, owner=folder.person_id))
                owner.append((n, k))
        # mail messages in exports: keep or skip (the import role's model, or the rules)
        mail_at = [i for i, it in enumerate(items) if it.kind == "mail"]
        dropped: dict[int, list[str]] = {}
        skip_items: set[int] = set()
        if mail_at:
            try:
                verdicts = await asyncio.to_thread(decide, [items[i] for i in mail_at])
            except Exception as exc:
                verdicts = None
                for i in mail_at:
                    r = reads[owner[i][0]]
                    r.status, r.reason = FAILED, f"the import model failed ({exc}); the next scan tries again"
            if verdicts is not None:
                for i, v in zip(mail_at, verdicts, strict=True):
                    if not v.keep:
                        dropped.setdefault(owner[i][0], []).append(v.reason)
                        skip_items.add(i)
        keep = [i for i in range(len(items)) if reads[owner[i][0]].status == INDEXED and i not in skip_items]
        ids: list[str] = []
        error = ""
        if keep:
            try:
                ids = await self.pod.in_memory_thread(
                    lambda: self.pod.memory.add_items([items[i] for i in keep], skip_refused=True))
            except Exception as exc:  # a disk or index failure: these files are retried on the next scan
                log.exception("storing imported files failed")
                error = f"could not be stored ({type(exc).__name__}: {str(exc)[:120]}); the next scan tries again"
        got: dict[int, list[str]] = {}
        refused: dict[int, int] = {}
        for i, sid in zip(keep, ids, strict=False):
            n = owner[i][0]
            if sid:
                got.setdefault(n, []).append(sid)
            else:
                refused[n] = refused.get(n, 0) + 1
        reasons: dict[str, str] = {}
        if refused:
            held = await self.pod.in_memory_thread(lambda: self.pod.memory.quarantine())
            reasons = {q.item_key: q.reason for q in held}
        rows = []
        old_to_delete: list[str] = []
        for n, r in enumerate(reads):
            prev = known.get(r.rel)
            if r.unchanged:
                rows.append((folder.id, r.rel, r.mtime_ns, r.size, r.sha, prev[3] if prev else INDEXED,
                             self._reason_of(folder.id, r.rel), json.dumps(prev[4] if prev else []), now))
                rep.unchanged += 1
                continue
            sids = got.get(n, [])
            status, reason = r.status, r.reason
            if status == INDEXED and error:
                status, reason = FAILED, error
            if status == INDEXED:
                notes = [reason] if reason else []
                if refused.get(n):
                    why = next((v for k, v in reasons.items() if k.startswith(_key_prefix(folder.id, r.rel))), "")
                    why = why.removeprefix("Quarantined:").strip()
                    notes.append(f"{refused[n]} part(s) held in quarantine: {why}".rstrip(": ") + " (see Activity)")
                    self.pod.audit(person_id=folder.person_id, agent=None, kind="memory", phase="memory_write",
                                   action="quarantined", rule="memory.instruction_filter",
                                   summary=f"an imported file was held back: {r.rel}: {why}", detail={"file": r.rel})
                if dropped.get(n):
                    notes.append(f"{len(dropped[n])} message(s) skipped ({dropped[n][0]})")
                if not sids:
                    status = SKIPPED
                reason = "; ".join(notes)
            if prev is not None:
                old_to_delete += [s for s in prev[4] if s not in sids]
            rows.append((folder.id, r.rel, r.mtime_ns, r.size, r.sha, status, reason, json.dumps(sids), now))
            rep.sources_added += len([s for s in sids if not prev or s not in prev[4]])
            if status == INDEXED:
                rep.indexed += 1
            elif status == SKIPPED:
                rep.skipped += 1
            else:
                rep.failed += 1
        if old_to_delete:
            rep.sources_deleted += await self._delete_sources(old_to_delete)
        self.db.many("INSERT OR REPLACE INTO files (folder_id, rel, mtime_ns, size, sha, status, reason, sources, at) "
                     "VALUES (?,?,?,?,?,?,?,?,?)", rows)

    def _reason_of(self, folder_id: str, rel: str) -> str:
        rows = self.db.q("SELECT reason FROM files WHERE folder_id=? AND rel=?", (folder_id, rel))
        return rows[0][0] if rows else ""

    def close(self) -> None:
        self.db.close()


__all__ = ["FileStatus", "Folder", "FolderError", "ScanReport", "WatchedFolders", "chunks", "read_file", "walk"]
