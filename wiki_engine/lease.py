"""A named single-writer lease in the catalog database that survives a crash of its holder.

The lease row records the holder's pid (and that process's start time, so a reused pid is not
mistaken for the holder) and an expiry that a live holder renews. A lease whose process is gone,
or whose expiry passed, is stale and may be taken over.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from pathlib import Path
from types import TracebackType

import psutil

from .catalog import Catalog


class LeaseBusy(RuntimeError):
    """Another live process holds the lease. ``moment``: its holder took it for a moment's work (one scope's ingest
    reading its batch or writing its pages) and lets go soon; otherwise for a whole run (a nightly pass)."""

    def __init__(self, message: str, *, moment: bool = False):
        super().__init__(message)
        self.moment = moment


_MOMENT = "moment-"  # how a holder token says the lease is held for a moment's work


def _proc_started(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return -1.0


_TEMP = re.compile(r"\.tmp(\d+)$")


def remove_dead_temps(*roots: Path) -> int:
    """Deletes the temporary files (``<name>.tmp<pid>``) that writers killed before their rename left under
    ``roots``: each holds a page's or a source's text (perhaps of a source deleted since) that no other file of
    memory holds or ever will. A running writer's file is left alone: its process is alive and started before
    the file was written (a pid used again by a later process is not taken for it). Returns how many went."""
    gone = 0
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                m = _TEMP.search(name)
                if m is None:
                    continue
                path = Path(folder) / name
                try:
                    written = path.stat().st_mtime
                    started = _proc_started(int(m.group(1)))
                    if 0 <= started <= written + 1.0:
                        continue  # its writer may still be at it
                    path.unlink()
                    gone += 1
                except OSError:
                    continue
    return gone


def _holder_alive(pid: int, started: float, host: str) -> bool:
    if host != socket.gethostname():
        return True  # cannot check another machine: rely on the expiry
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(float(proc.create_time()) - started) < 1.0
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True


class Lease:
    """``with Lease(catalog, "ingest", ttl=...)``: holds the named lease or raises LeaseBusy. ``excludes`` (SQL LIKE
    patterns of other leases' names) are leases that must not be held either: the whole-wiki writer's ``ingest``
    is not taken while one scope's ingest (``ingest:<scope>``) has its batch out with a model. ``moment`` says the
    lease is taken for a moment's work: whoever finds it busy may try again shortly (LeaseBusy.moment) rather than
    give up. Never waits: a caller that waits does so without holding its thread (see ``pipeline.Wait``)."""

    def __init__(self, catalog: Catalog, name: str, *, ttl: float = 600.0, excludes: tuple[str, ...] = (),
                 moment: bool = False):
        self.catalog = catalog
        self.name = name
        self.ttl = ttl
        self.excludes = excludes
        self.token = (_MOMENT if moment else "") + uuid.uuid4().hex
        self.held = False

    def acquire(self) -> None:
        if not self.held:
            self._acquire()

    def _acquire(self) -> None:
        pid = os.getpid()
        host = socket.gethostname()
        now = time.time()
        with self.catalog.tx(immediate=True) as db:
            rows = [db.execute("SELECT * FROM leases WHERE name = ?", (self.name,)).fetchone()]
            rows += [r for pattern in self.excludes
                     for r in db.execute("SELECT * FROM leases WHERE name LIKE ?", (pattern,)).fetchall()]
            for row in rows:
                if row is None or row["holder"] == self.token:
                    continue
                stale = row["expires_at"] < now or not _holder_alive(row["pid"], row["pid_started"], row["host"])
                if not stale:
                    raise LeaseBusy(
                        f"The memory {row['name'].partition(':')[0]} is already running in process {row['pid']} on "
                        f"{row['host']}; this run was skipped. It will run again at the next interval (the lease "
                        f"expires at {time.strftime('%H:%M:%S', time.localtime(row['expires_at']))} if that process "
                        "hangs).", moment=str(row["holder"]).startswith(_MOMENT)
                    )
            db.execute(
                "INSERT OR REPLACE INTO leases (name, holder, pid, pid_started, host, expires_at) VALUES (?,?,?,?,?,?)",
                (self.name, self.token, pid, _proc_started(pid), host, now + self.ttl),
            )
        self.held = True

    def renew(self) -> None:
        """Extends the expiry; raises LeaseBusy if the lease was lost (e.g. expired and taken over)."""
        with self.catalog.tx(immediate=True) as db:
            cur = db.execute(
                "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ?",
                (time.time() + self.ttl, self.name, self.token),
            )
            if cur.rowcount != 1:
                self.held = False
                raise LeaseBusy(f"The memory {self.name} lease was lost to another process; stopping this run.")

    def release(self) -> None:
        if self.held:
            with self.catalog.tx(immediate=True) as db:
                db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (self.name, self.token))
            self.held = False

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
