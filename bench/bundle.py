"""Benchmark of the double-click app: bundle size, build time, start to window (frozen vs source), and
how fast a frozen worker becomes ready. The last line printed is JSON:

    {"bundle_mb", "build_s", "frozen_start_ms", "source_start_ms", "frozen_worker_ready_ms", ...}

- bundle_mb: dist/hearth on disk, MiB (files, symlinks not followed).
- build_s: the PyInstaller build (`make bundle`'s command), or null with --reuse.
- frozen_start_ms / source_start_ms: from launching `dist/hearth/hearth --quit-after 0` (resp.
  `python -m app --quit-after 0`) to its "is running" line, printed right after the window is shown;
  median of --runs starts each, alternated in the same run, offscreen, on a data folder made by one
  unmeasured first start (so both load an existing pod, as every start but the first does).
- frozen_worker_ready_ms: the supervisor's spawn → ready for a worker spawned as `hearth --worker`, from
  the bundle's own --smoke (median of --runs); source_worker_ready_ms is the same from source.

    .venv/bin/python bench/bundle.py [--reuse] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUNDLE = ROOT / "dist" / "hearth" / "hearth"
BUILD_CMD = [sys.executable, "-m", "PyInstaller", "packaging/hearth.spec", "--noconfirm", "--distpath", "dist",
             "--workpath", "build/pyinstaller", "--log-level", "WARN"]


def tree_mib(folder: Path) -> float:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink():
                total += p.stat().st_size
    return round(total / 1048576, 1)


def build() -> float:
    t = time.perf_counter()
    out = subprocess.run(BUILD_CMD, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"The bundle build failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    return round(time.perf_counter() - t, 1)


def start_to_window_ms(cmd: list[str], env: dict[str, str], timeout_s: float = 120.0) -> float:
    """Launch → the "is running" line (printed right after window.show()); then lets it quit."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    shown: float | None = None
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if sel.select(timeout=0.5):
                line = proc.stdout.readline()
                if not line:
                    break
                if "is running" in line:
                    shown = (time.perf_counter() - t) * 1000
                    break
        if shown is None:
            raise RuntimeError(f"{cmd[0]} did not show its window within {timeout_s:g} s (exit {proc.poll()})")
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return round(shown, 1)


def smoke_worker_ready_ms(cmd: list[str], url: str, env: dict[str, str]) -> float:
    out = subprocess.run([*cmd, "--smoke", "--smoke-model-url", url], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=180, stdin=subprocess.DEVNULL)
    lines = out.stdout.strip().splitlines()
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if not result.get("ok") or "worker_ready_ms" not in result:
        raise RuntimeError(f"{cmd[0]} --smoke failed: {result.get('error') or out.stderr[-2000:]}")
    return float(result["worker_ready_ms"])


def _load_smoke_script() -> Any:
    """packaging/smoke.py (packaging/ is not a package: it would shadow PyPI's `packaging`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hearth_packaging_smoke", ROOT / "packaging" / "smoke.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description="Bundle size, build time, start-up and frozen worker readiness.")
    ap.add_argument("--reuse", action="store_true", help="measure the existing dist/hearth instead of building")
    ap.add_argument("--runs", type=int, default=5, help="starts (and smoke runs) per variant; medians are reported")
    args = ap.parse_args()

    build_s: float | None = None
    if args.reuse and BUNDLE.is_file():
        print(f"reusing {BUNDLE}", file=sys.stderr)
    else:
        print("building the bundle …", file=sys.stderr)
        build_s = build()
    size = tree_mib(BUNDLE.parent)

    smoke = _load_smoke_script()
    start_fake_model, stop = smoke.start_fake_model, smoke.stop

    tmp = Path(tempfile.mkdtemp(prefix="hearth-bench-bundle-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="offscreen", HEARTH_LOOPBACK_ONLY="1", XDG_CONFIG_HOME=str(tmp / "config"))
    variants = {"frozen": [str(BUNDLE)], "source": [sys.executable, "-m", "app"]}
    starts: dict[str, list[float]] = {k: [] for k in variants}
    ready: dict[str, list[float]] = {k: [] for k in variants}
    server, url = start_fake_model()
    try:
        for name, cmd in variants.items():  # one unmeasured first start each makes its data folder
            start_to_window_ms([*cmd, "--quit-after", "0"], {**env, "HEARTH_HOME": str(tmp / name)})
        for _ in range(args.runs):
            for name, cmd in variants.items():
                starts[name].append(start_to_window_ms([*cmd, "--quit-after", "0"], {**env, "HEARTH_HOME": str(tmp / name)}))
                ready[name].append(smoke_worker_ready_ms(cmd, url, env))
    finally:
        stop(server)
        shutil.rmtree(tmp, ignore_errors=True)

    result = {
        "bundle_mb": size,
        "build_s": build_s,
        "frozen_start_ms": round(statistics.median(starts["frozen"]), 1),
        "source_start_ms": round(statistics.median(starts["source"]), 1),
        "frozen_worker_ready_ms": round(statistics.median(ready["frozen"]), 1),
        "source_worker_ready_ms": round(statistics.median(ready["source"]), 1),
        "runs": args.runs,
        "reused": build_s is None,
        "speech_included": (BUNDLE.parent / "_internal" / "ctranslate2").is_dir(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
