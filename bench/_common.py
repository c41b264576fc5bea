"""Helpers shared by the benchmarks: percentiles, bare Python start-up, a pod on a fake model."""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ["HEARTH_LOOPBACK_ONLY"] = "1"


# LoCoMo, data we did not write: ../shared/memory-eval beside the checkout (or beside a worktree's parent).
LOCOMO_DEV = next((p for p in (ROOT.parent / "shared" / "memory-eval" / "locomo-dev.json",
                               ROOT.parent.parent / "shared" / "memory-eval" / "locomo-dev.json") if p.is_file()),
                  ROOT.parent / "shared" / "memory-eval" / "locomo-dev.json")


def load_locomo_scorer(data: Path) -> Any:
    """LoCoMo's scorer (locomo_retrieval.py), shipped next to the data set."""
    path = data.parent / "locomo_retrieval.py"
    if not path.is_file():
        raise SystemExit(f"LoCoMo's scorer {path} is missing: put locomo_retrieval.py next to the data set.")
    spec = importlib.util.spec_from_file_location("locomo_retrieval", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 1)


def python_bare_ms_p50(n: int = 20) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        out.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(out), 1)


def worker_process(pid: int):  # type: ignore[no-untyped-def]
    """The Python worker behind a spawned pid (in the sandbox the spawned process is bubblewrap)."""
    import psutil

    proc = psutil.Process(pid)
    for p in [proc, *proc.children(recursive=True)]:
        if p.name().startswith("python") or "runtime_host.worker" in " ".join(p.cmdline()[:1]):
            return p
    return proc


def bench_pod(base_url: str, **pod_kw):  # type: ignore[no-untyped-def]
    """A pod in a fresh temp folder with one agent, "bench", on the fake model at `base_url`."""
    import tempfile

    from runtime_host.pod import Pod

    pod = Pod(Path(tempfile.mkdtemp(prefix="hearth-bench-")), **pod_kw).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=base_url, model="fake-1")
    pod.add_agent("bench", provider="fake")
    return pod


async def spawn_ready_ms(pod, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Cold spawn to ready, n times (the worker is stopped after each)."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await pod.start_agent("bench")
        out.append((time.perf_counter() - t) * 1000)
        await pod.stop_agent("bench")
    return out
