"""The memory catalog: one SQLite file (WAL) with the source registry, inbox, watermarks, skip log,
quarantine, page proposals, pages awaiting re-synthesis and the single-writer lease.

It holds no search index: each scope's index lives in its own folder (see ``index``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_catalog",
        """
        CREATE TABLE sources (
            id TEXT PRIMARY KEY,
            sha TEXT NOT NULL,
            scope TEXT NOT NULL,
            kind TEXT NOT NULL,
            ts REAL NOT NULL,
            importance REAL,
            owner TEXT,
            agent TEXT,
            item_key TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX sources_scope_key ON sources(scope, item_key);
        CREATE INDEX sources_scope ON sources(scope);
        CREATE INDEX sources_owner ON sources(owner);
        CREATE TABLE inbox (source_id TEXT PRIMARY KEY, scope TEXT NOT NULL, added_at REAL NOT NULL);
        CREATE TABLE watermarks (scope TEXT NOT NULL, origin TEXT NOT NULL, ts REAL NOT NULL,
                                 item_key TEXT NOT NULL, PRIMARY KEY (scope, origin));
        CREATE TABLE skips (id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, item_key TEXT NOT NULL,
                            reason TEXT NOT NULL, at REAL NOT NULL);
        CREATE TABLE quarantine (id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, item_key TEXT NOT NULL,
                                 kind TEXT NOT NULL, ts REAL NOT NULL, rule TEXT NOT NULL, reason TEXT NOT NULL,
                                 text TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'held', at REAL NOT NULL);
        CREATE TABLE proposals (id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, slug TEXT NOT NULL,
                                base_text TEXT NOT NULL, proposed_text TEXT NOT NULL, diff TEXT NOT NULL,
                                author TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open',
                                created_at REAL NOT NULL, decided_at REAL);
        CREATE TABLE stale_pages (scope TEXT NOT NULL, slug TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL,
                                  PRIMARY KEY (scope, slug));
        CREATE TABLE citations (scope TEXT NOT NULL, slug TEXT NOT NULL, source_id TEXT NOT NULL,
                                PRIMARY KEY (scope, slug, source_id));
        CREATE INDEX citations_source ON citations(source_id);
        CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, pid INTEGER NOT NULL,
                             pid_started REAL NOT NULL, host TEXT NOT NULL, expires_at REAL NOT NULL);
        """,
    ),
    (
        "0002_forgotten",
        """
        CREATE TABLE forgotten (scope TEXT PRIMARY KEY, at REAL NOT NULL);
        CREATE TABLE deleted_ids (id TEXT PRIMARY KEY, at REAL NOT NULL);
        """,
    ),
    (
        "0003_quarantine_owner",
        # Whose a held item is: forgetting a person or an agent deletes what it held in any scope, and only its
        # owner reviews it. Rows from before take their owner (and agent) from their scope; a shared one, whose
        # owner cannot be known (no one could review it, and forget-me could not find it), is discarded.
        """
        ALTER TABLE quarantine ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        ALTER TABLE quarantine ADD COLUMN agent TEXT NOT NULL DEFAULT '';
        UPDATE quarantine SET owner = substr(scope, 9) WHERE scope LIKE 'private/%';
        UPDATE quarantine SET owner = substr(scope, 7, instr(substr(scope, 7), '/') - 1),
                              agent = substr(substr(scope, 7), instr(substr(scope, 7), '/') + 1)
            WHERE scope LIKE 'agent/%/%';
        UPDATE quarantine SET status = 'discarded', text = '', reason = '' WHERE owner = '';
        CREATE INDEX quarantine_owner ON quarantine(owner, status);
        CREATE INDEX quarantine_key ON quarantine(scope, item_key)
        """,
    ),
    (
        "0004_forgotten_keys",
        # The origins a person asked to forget (a deleted conversation's messages and summaries), as ranges of
        # item keys: a run that read them before the forget, and stores after it, stores nothing of them.
        """
        CREATE TABLE forgotten_keys (scope TEXT NOT NULL, key_start TEXT NOT NULL, key_end TEXT NOT NULL,
                                     at REAL NOT NULL, PRIMARY KEY (scope, key_start, key_end))
        """,
    ),
    (
        "0005_deleted_by_person",
        # The sources a person deleted one by one ("Delete this source"), by origin key and by a print of their
        # text without that key: a summary never reads the message again, and a mail export read again when it
        # grows (its messages' keys carry the file's version) does not bring the deleted mail back. Hashes and
        # opaque keys only: no word of the source.
        """
        CREATE TABLE deleted_by_person (scope TEXT NOT NULL, print TEXT NOT NULL, item_key TEXT NOT NULL,
                                        at REAL NOT NULL, PRIMARY KEY (scope, print));
        CREATE INDEX deleted_by_person_key ON deleted_by_person(scope, item_key)
        """,
    ),
    (
        "0006_quarantine_head",
        # A held item's header (who wrote it, its subject, participants, ...: JSON, redacted like its text): shown
        # while the person judges it, and kept when they keep it. Emptied with the text when they decide.
        """
        ALTER TABLE quarantine ADD COLUMN head TEXT NOT NULL DEFAULT ''
        """,
    ),
    (
        "0007_files_to_delete",
        # Source files whose rows a deletion removed: their files go once it has committed (a process killed before
        # the commit leaves every source whole), and the next open deletes those a kill left behind.
        """
        CREATE TABLE files_to_delete (scope TEXT NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (scope, sha));
        CREATE INDEX sources_sha ON sources(sha)
        """,
    ),
    (
        "0008_deletions_cut_short",
        # What a deletion still owes the pages, written with it and cleared as each page is done, so the next ingest
        # or nightly finishes one a kill cut short: the sources whose claims each page must lose (a summary deleted
        # to be made again under the same id is in no deleted_ids), and the pages that go (titled by a deleted
        # source; a verified one ``once`` its copy under its category's name is written). Ids and slugs only.
        """
        CREATE TABLE claims_to_drop (scope TEXT NOT NULL, slug TEXT NOT NULL, source_id TEXT NOT NULL,
                                     PRIMARY KEY (scope, slug, source_id));
        CREATE TABLE pages_to_delete (scope TEXT NOT NULL, slug TEXT NOT NULL, once TEXT NOT NULL DEFAULT '',
                                      PRIMARY KEY (scope, slug))
        """,
    ),
    (
        "0009_checked_pages",
        # The pages the nightly contradiction check found nothing on, as a digest of each page's text and of the
        # sources it cites (no word of either): a page not changed since is not sent to the model again.
        """
        CREATE TABLE IF NOT EXISTS checked_pages (scope TEXT NOT NULL, digest TEXT NOT NULL, at REAL NOT NULL,
                                                  PRIMARY KEY (scope, digest))
        """,
    ),
    (
        "0010_inbox_no_page",
        # How many times an ingest model answered no page at all for a batch holding the note: it waits for a
        # later (or stronger) model, and leaves the inbox unwritten after NO_PAGE_TRIES (see pipeline._no_page): its
        # row stays, read by no ingest, till its person chooses another ingest model (Memory.unwritten_again).
        """
        ALTER TABLE inbox ADD COLUMN no_page INTEGER NOT NULL DEFAULT 0
        """,
    ),
    (
        "0011_watermark_seq",
        # Where an origin that numbers its items in the order they were written (chat, mail) was pulled up to: its
        # number. NULL for a watermark kept before (its origin carries it over from ts and item_key) and for an
        # origin that goes by time.
        """
        ALTER TABLE watermarks ADD COLUMN seq INTEGER
        """,
    ),
    (
        "0012_forgotten_upto",
        # Where each numbered origin stood when the scope was forgotten ({"chat": 812, "mail": 40}, see
        # Memory.positions): what was written before is forgotten by its number, not by the clock. '{}' for a
        # forget kept before: it goes by its time.
        """
        ALTER TABLE forgotten ADD COLUMN upto TEXT NOT NULL DEFAULT '{}'
        """,
    ),
    (
        "0013_discarded_by_person",
        # Which of the items a person threw away they discarded from Held back (1), not deleted as a source (0): a
        # watched file read again (its folder added again) says which, though the held row went with the folder.
        # Rows from before: discarded where a discarded held row of that key is still there.
        """
        ALTER TABLE deleted_by_person ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0;
        UPDATE deleted_by_person SET discarded = 1 WHERE EXISTS (SELECT 1 FROM quarantine q WHERE
            q.scope = deleted_by_person.scope AND q.item_key = deleted_by_person.item_key AND q.status = 'discarded')
        """,
    ),
    (
        "0014_deleted_by_person_owner",
        # Whose deletion or discard each is: the owner of the source deleted (a household note's, its owner alone
        # may delete it) or of the held item discarded (its owner alone reviews it). In the household's scope, where
        # everyone's agents remember into one place, it keeps out only its owner's items (Bob's deleted note does
        # not stop Alice's agent remembering the same fact), and removing the person takes it away. Rows from
        # before: a discard takes its owner from the discarded held row of that key, where one person's alone is
        # there; a deletion cannot be told (its source is gone) and keeps ``''``, which keeps the item out for
        # everyone, as before.
        """
        ALTER TABLE deleted_by_person ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        UPDATE deleted_by_person SET owner = (SELECT MIN(q.owner) FROM quarantine q WHERE q.scope = deleted_by_person.scope
            AND q.item_key = deleted_by_person.item_key AND q.status = 'discarded')
            WHERE discarded = 1 AND (SELECT COUNT(DISTINCT q.owner) FROM quarantine q WHERE q.scope = deleted_by_person.scope
                AND q.item_key = deleted_by_person.item_key AND q.status = 'discarded') = 1
        """,
    ),
]


class CatalogDamaged(sqlite3.DatabaseError):
    """memory.db cannot be read as a database (a disk error, a file written over), or is empty while memory's folder
    holds what it lists: said in words, nothing written."""

    def __init__(self, path: Path, cause: Exception | str, *, at_open: bool = True):
        what = cause if isinstance(cause, str) else f"is damaged ({cause})"
        then = (", so memory cannot be opened; nothing was changed" if at_open else
                ": memory found it while using it, and stopped what it was doing without saving it")
        super().__init__(
            f"Memory's catalog {path} {what}{then}. Restore "
            f"memory.db from a backup (quit Hearth first). Your notes' files in {path.parent / 'sources'} and your "
            f"pages in {path.parent / 'wiki'} are untouched. Without a backup, quit Hearth and move the folder "
            f"{path.parent} elsewhere: memory starts empty, and what it held stays in the folder you moved.")


def _held_without_catalog(root: Path) -> str:
    """What memory's folder holds that a catalog would list ("" if nothing): "3 notes and 1 page"."""
    def files(folder: Path, pattern: str) -> int:
        try:
            return sum(1 for f in folder.rglob(pattern) if f.is_file())  # never opened (a named pipe is no file)
        except OSError:
            return 0

    notes, pages = files(root / "sources", "*.md"), files(root / "wiki", "*.md")
    indexed = 0
    if not notes:  # the notes' files lost too: their text may still be in a search index
        for meta in (root / "index").rglob("meta.db") if (root / "index").is_dir() else ():
            try:
                con = sqlite3.connect(f"file:{meta}?mode=ro", uri=True)
                try:
                    indexed += con.execute("SELECT count(*) FROM docs WHERE kind!='page'").fetchone()[0]
                finally:
                    con.close()
            except sqlite3.Error:
                continue  # a damaged index holds nothing to keep
    held = [f"{n} {word}{'' if n == 1 else 's'}" for n, word in
            ((notes, "note"), (indexed, "indexed note"), (pages, "page")) if n]
    return " and ".join(filter(None, [", ".join(held[:-1]), held[-1]])) if held else ""


class Catalog:
    """A thread-safe wrapper around the catalog database. Use ``tx()`` for atomic groups of writes."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self.before_commit: list[Callable[[], None]] = []
        existed = path.exists()
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        try:
            if not self.db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
                # A new catalog, or one cut to nothing (a crash before its data reached the disk, a sync tool's empty
                # copy): opening it as a new memory would forget every note and page the folder holds.
                held = _held_without_catalog(path.parent)
                if held:
                    raise CatalogDamaged(path, f"is {'empty' if existed else 'missing'} while memory's folder holds "
                                               f"{held} (it was cut short, deleted or replaced by an empty copy)")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=30000")
            self.db.execute("PRAGMA secure_delete=ON")  # a deleted row's text is overwritten, not left in a free page
            self._migrate()
        except CatalogDamaged:
            self.db.close()
            if not existed and path.exists() and path.stat().st_size == 0:
                path.unlink()  # nothing written: the empty file opening it made goes too
            raise
        except sqlite3.OperationalError:
            self.db.close()
            raise  # locked by another process, the disk full, ...: the file is not damaged
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise CatalogDamaged(path, exc) from None

    def _migrate(self) -> None:
        with self.tx(immediate=True) as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {r[0] for r in db.execute("SELECT name FROM schema_migrations")}
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                for stmt in [s for s in sql.split(";") if s.strip()]:
                    db.execute(stmt)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))

    @contextmanager
    def _said_damaged(self) -> Iterator[None]:
        """A page of memory.db found damaged by a later read or write (its header and schema whole, so it opened):
        said in words like damage found at open (``CatalogDamaged``), not as sqlite's "database disk image is
        malformed". Constraint, lock, full-disk and other errors stay as they are."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:  # IntegrityError, OperationalError, CatalogDamaged, ...
                raise
            raise CatalogDamaged(self.path, exc, at_open=False) from exc

    @contextmanager
    def tx(self, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self._lock, self._said_damaged():
            self.db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield self.db
            except BaseException:
                self._rollback()
                raise
            else:
                try:
                    for hook in self.before_commit:
                        hook()
                except BaseException:
                    self._rollback()
                    raise
                self.db.execute("COMMIT")

    def _rollback(self) -> None:
        """Rolls back the transaction SQLite has not already ended itself (it does on a full disk, say): the error
        that ended it is the one raised, not "cannot rollback - no transaction is active"."""
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def query(self, sql: str, args: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        with self._lock, self._said_damaged():
            return list(self.db.execute(sql, args))

    def purge(self) -> None:
        """After a deletion: the write-ahead log, which still holds the deleted rows' earlier pages, is written
        back and cut to nothing (if a reader holds it, that waits for the next purge or close)."""
        with self._lock:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self._lock:
            self.db.close()
