"""Serve benchmark: how fast `/v1/health` answers from a real `serve` process, idle and while 1000 requests with
wrong tokens arrive at once from one client (checked off the event loop; 429 after 10 failures a minute).

Prints one JSON object as its last line: health_ms_p50_idle, health_ms_p50_flood, health_ms_p99_flood,
health_checks_flood, health_errors_flood, flood_s, flood_401, flood_429, flood_errors. The machine's load shows in
flood_s (the client's own cost included), so read health_ms_*_flood beside health_ms_p50_idle.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx
from _common import pct

FLOOD = 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def measure(base: str) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=60) as idle_c:
        idle = []
        for _ in range(30):
            t = time.perf_counter()
            (await idle_c.get(f"{base}/v1/health")).raise_for_status()
            idle.append((time.perf_counter() - t) * 1000)
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=60)) as flood_c, \
            httpx.AsyncClient(timeout=60) as health_c:

        async def bad(i: int) -> int:
            try:
                return (await flood_c.get(f"{base}/v1/agents", headers={"Authorization": f"Bearer wrong-{i}"})).status_code
            except httpx.HTTPError:
                return 0  # counted as flood_errors

        t0 = time.perf_counter()
        flood = asyncio.gather(*(bad(i) for i in range(FLOOD)))
        during = []
        health_errors = 0
        while not flood.done():
            t = time.perf_counter()
            try:
                (await health_c.get(f"{base}/v1/health")).raise_for_status()
            except httpx.HTTPError as exc:  # counted, and shown: a health check that got no answer
                health_errors += 1
                print(f"health check failed during the flood (after {len(during)} answered): {exc!r}", file=sys.stderr)
                continue
            during.append((time.perf_counter() - t) * 1000)
            await asyncio.sleep(0.005)
        statuses = await flood
        flood_s = time.perf_counter() - t0
    return {"health_ms_p50_idle": pct(idle, 0.5), "health_ms_p50_flood": pct(during, 0.5),
            "health_ms_p99_flood": pct(during, 0.99), "health_checks_flood": len(during),
            "health_errors_flood": health_errors, "flood_s": round(flood_s, 2), "flood_401": statuses.count(401),
            "flood_429": statuses.count(429), "flood_errors": statuses.count(0)}


def main() -> dict[str, float]:
    home = tempfile.mkdtemp(prefix="hearth-serve-bench-")
    env = {**os.environ, "HEARTH_HOME": home, "HEARTH_SANDBOX": "off"}
    subprocess.run([sys.executable, "-m", "runtime_host", "serve", "--new-token"], env=env, check=True,
                   capture_output=True)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("serve did not come up")
            time.sleep(0.1)
        return asyncio.run(measure(base))
    finally:
        proc.terminate()
        proc.wait(15)


if __name__ == "__main__":
    print(json.dumps(main()))
