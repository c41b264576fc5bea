"""A second launch brings the running Hearth's window forward instead of starting another one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HEARTH_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    env.pop("DISPLAY", None)
    return env


def _wait_for(proc: subprocess.Popen[str], text: str, timeout: float = 90) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"no {text!r} in the output: {''.join(seen)}")


def test_a_second_launch_brings_the_first_window_forward_and_exits(home) -> None:
    first = subprocess.Popen([sys.executable, "-m", "app", "--quit-after", "60"], env=_env(home),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(first, "is running")
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "app"], env=_env(home), capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 0, second.stderr
        assert "already running" in second.stdout
        assert time.monotonic() - started < 20  # it did not start a pod of its own
        _wait_for(first, "brought it forward", timeout=10)
        assert first.poll() is None  # the first Hearth is still the one running
    finally:
        first.terminate()
        first.wait(30)

