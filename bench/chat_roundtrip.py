"""Foundation benchmark: worker spawn-to-ready, cold and warm turns against the loopback fake model.

Prints one JSON object as its last line: spawn_ready_ms_p50, spawn_ready_ms_p95 (20 cold spawns),
turn_cold_ms_p50, turn_warm_ms_p50, worker_idle_rss_mb, python_bare_ms_p50 (same run).
"""

from __future__ import annotations

import asyncio
import json
import time

from _common import bench_pod, pct, python_bare_ms_p50, spawn_ready_ms, worker_process

from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402


async def main() -> dict[str, float]:
    fake = FakeModelServer(lambda req: Text("pong")).start()
    pod = bench_pod(fake.base_url)
    try:
        spawn = await spawn_ready_ms(pod, 20)
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
