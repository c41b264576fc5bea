"""Runtime-host benchmark: how light and fast Hearth's workers are.

Prints one JSON object as its last line: spawn_ready_ms_p50/p95 (30 cold spawns), first_turn_cold_ms_p50,
worker_idle_rss_mb, worker_idle_uss_mb, worker_rss_after_200_turns_mb, warm_workers_in_16gb_budget
(real workers spawned until the default budget for a 16 GB machine starts evicting), python_bare_ms_p50.
"""

from __future__ import annotations

import asyncio
import json
import time

from _common import bench_pod, pct, python_bare_ms_p50, spawn_ready_ms, worker_process

from runtime_host.supervisor import SupervisorConfig, default_memory_budget_mb  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text, ToolCalls  # noqa: E402


def model(req):
    # every other turn uses a tool, so 200 turns exercise the whole loop
    if req.last_user.endswith("tool") and not req.tool_results:
        return ToolCalls([("calculate", {"expression": "17 * 23"})])
    return Text("ok " * 20)


async def main() -> dict[str, float]:
    fake = FakeModelServer(model).start()
    budget = default_memory_budget_mb(16 * 1024**3)
    pod = bench_pod(fake.base_url, supervisor_config=SupervisorConfig(memory_budget_mb=budget, health_interval_s=3600))
    try:
        spawn = await spawn_ready_ms(pod, 30)
        first = []
        for _ in range(15):
            await pod.stop_agent("bench")
            t = time.perf_counter()
            r = await pod.chat("bench", "hello", new_conversation=True)
            assert r.ok, r.error
            first.append((time.perf_counter() - t) * 1000)
        await pod.stop_agent("bench")
        info = await pod.start_agent("bench")
        await asyncio.sleep(1.0)  # let the post-ready preload finish: idle means ready for a turn
        mem = worker_process(info["pid"]).memory_full_info()
        idle_rss, idle_uss = mem.rss / 1048576, mem.uss / 1048576
        for i in range(200):
            r = await pod.chat("bench", f"turn {i} {'tool' if i % 2 else 'text'}", new_conversation=(i % 20 == 0))
            assert r.ok, r.error
        rss_after = worker_process(info["pid"]).memory_info().rss / 1048576

        # How many warm workers the default 16 GB budget holds: spawn until it starts evicting.
        evicted: list[str] = []
        pod.subscribe(lambda e: evicted.append(e["agent"]) if e["type"] == "worker.evicted" else None)
        warm = 0
        for i in range(200):
            pod.add_agent(f"w{i}", provider="fake")
            await pod.start_agent(f"w{i}")
            if evicted:
                break
            warm = sum(1 for h in pod.supervisor.handles.values() if h.state.value in ("ready", "busy"))
    finally:
        await pod.close()
        fake.stop()
    return {
        "spawn_ready_ms_p50": pct(spawn, 0.5),
        "spawn_ready_ms_p95": pct(spawn, 0.95),
        "first_turn_cold_ms_p50": pct(first, 0.5),
        "worker_idle_rss_mb": round(idle_rss, 1),
        "worker_idle_uss_mb": round(idle_uss, 1),
        "worker_rss_after_200_turns_mb": round(rss_after, 1),
        "warm_workers_in_16gb_budget": warm,
        "memory_budget_16gb_mb": round(budget),
        "python_bare_ms_p50": python_bare_ms_p50(),
        "sandboxed": bool(pod.supervisor.handles and next(iter(pod.supervisor.handles.values())).sandboxed),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
