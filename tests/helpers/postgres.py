"""A throwaway PostgreSQL server on 127.0.0.1 for tests, run as `nobody` (initdb refuses root)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip())
    return bindir if (bindir / "initdb").exists() and shutil.which("runuser") else None


@contextmanager
def running_postgres() -> Iterator[str]:
    """Starts PostgreSQL in a temp folder; yields a SQLAlchemy URL; stops it and removes the folder."""
    bindir = postgres_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian package `postgresql`)")
    folder = Path(tempfile.mkdtemp(prefix="hpg", dir="/tmp"))
    os.chown(folder, 65534, 65534)
    data = folder / "d"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    as_nobody = ["runuser", "-u", "nobody", "--"]
    subprocess.run(as_nobody + [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "hearth"],
                   check=True, capture_output=True, timeout=60)
    subprocess.run(as_nobody + [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"), "-o",
                                f"-k {folder} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off", "start"],
                   check=True, capture_output=True, timeout=60)
    try:
        yield f"postgresql+psycopg://hearth@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_nobody + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
