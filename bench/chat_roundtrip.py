"""Foundation benchmark: worker spawn-to-ready, cold and warm turns against the loopback fake model.

Prints one JSON object as its last line: spawn_ready_ms_p50, spawn_ready_ms_p95 (20 cold spawns),
turn_cold_ms_p50, turn_warm_ms_p50, worker_idle_rss_mb, python_bare_ms_p50 (same run).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

from _common import pct, python_bare_ms_p50, worker_process

from runtime_host.pod import Pod  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402


async def main() -> dict[str, float]:
    fake = FakeModelServer(lambda req: Text("pong")).start()
    home = Path(tempfile.mkdtemp(prefix="hearth-bench-"))
    pod = Pod(home)
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("bench", provider="fake")
    try:
        spawn = []
        for _ in range(20):
            t = time.perf_counter()
            await pod.start_agent("bench")
            spawn.append((time.perf_counter() - t) * 1000)
            await pod.stop_agent("bench")
        cold = []
        for _ in range(10):
            await pod.stop_agent("bench")
            t = time.perf_counter()
            r = await pod.chat("bench", "ping")
            assert r.ok, r.error
            cold.append((time.perf_counter() - t) * 1000)
        warm = []
        for _ in range(30):
            t = time.perf_counter()
            r = await pod.chat("bench", "ping")
            assert r.ok, r.error
            warm.append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.5)
        handle = next(iter(pod.supervisor.handles.values()))
        rss_mb = worker_process(handle.pid).memory_info().rss / 1048576
    finally:
        await pod.close()
        fake.stop()
    return {
        "spawn_ready_ms_p50": pct(spawn, 0.5),
        "spawn_ready_ms_p95": pct(spawn, 0.95),
        "turn_cold_ms_p50": pct(cold, 0.5),
        "turn_warm_ms_p50": pct(warm, 0.5),
        "worker_idle_rss_mb": round(rss_mb, 1),
        "python_bare_ms_p50": python_bare_ms_p50(),
        "sandboxed": bool(pod.supervisor.handles and next(iter(pod.supervisor.handles.values())).sandboxed),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
