"""A real `python -m runtime_host serve` process on a free loopback port, for tests that talk HTTP to it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


@contextmanager
def running_serve(home: Path, wait_s: float = 60) -> Iterator[str]:
    """Starts serve on `home` (a token must exist first), waits until /v1/health answers, yields its base URL,
    and stops it afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host", "serve", "--port", str(port)],
                            env={**os.environ, "HEARTH_HOME": str(home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(15)
