"""The bundle's one executable picks its role from its first argument; each role really runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_host.protocol import decode, encode
from tests.packaging.conftest import ROOT

ENTRY = str(ROOT / "packaging" / "hearth_entry.py")


@pytest.mark.parametrize(("argv", "role", "rest"), [
    ([], "app", []),
    (["--quit-after", "0"], "app", ["--quit-after", "0"]),
    (["--version"], "app", ["--version"]),
    (["--smoke", "--smoke-model-url", "http://127.0.0.1:1/v1"], "app", ["--smoke", "--smoke-model-url", "http://127.0.0.1:1/v1"]),
    (["--worker"], "worker", []),
    (["--pod", "agent", "list"], "pod", ["agent", "list"]),
    (["--pod"], "pod", []),
    (["-m", "runtime_host", "run-turn", "t1"], "pod", ["run-turn", "t1"]),  # cli._detach, frozen
    (["-m", "runtime_host.worker"], "worker", []),
    (["agent", "--worker"], "app", ["agent", "--worker"]),  # only the first argument picks the role
])
def test_dispatch_picks_the_role_from_the_first_argument(entry, argv: list[str], role: str, rest: list[str]) -> None:
    assert entry.dispatch(argv) == (role, rest)


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HEARTH_HOME=str(home), QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    return env


def test_version_prints_the_app_version(tmp_path: Path) -> None:
    from app import __version__

    out = subprocess.run([sys.executable, ENTRY, "--version"], capture_output=True, text=True, timeout=60,
                         env=_env(tmp_path), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"Hearth {__version__}"


def test_pod_role_runs_the_headless_cli(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, ENTRY, "--pod", "agent", "profiles", "--json"], capture_output=True,
                         text=True, timeout=60, env=_env(tmp_path), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    templates = {p["template"] for p in json.loads(out.stdout)}
    assert "assistant" in templates
    usage = subprocess.run([sys.executable, ENTRY, "--pod"], capture_output=True, text=True, timeout=60,
                           env=_env(tmp_path), cwd=ROOT)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_worker_role_speaks_the_protocol_and_loads_no_qt(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, ENTRY, "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(tmp_path), cwd=ROOT)
    try:
        assert proc.stdin and proc.stdout
        hello = decode(proc.stdout.readline())
        assert hello["type"] == "hello" and hello["pid"] == proc.pid
        scratch = tmp_path / "scratch"
        proc.stdin.write(encode({"type": "bind", "person": "p", "agent": "a", "scratch": str(scratch),
                                 "data_dir": str(tmp_path), "routes": [],
                                 "profile": {"name": "t", "system": "", "toolkits": [],
                                             "allowlist": "{}"}}))
        proc.stdin.flush()
        ready = decode(proc.stdout.readline())
        assert ready["type"] == "ready"
        maps = Path(f"/proc/{proc.pid}/maps")
        if maps.exists():
            assert "libQt6" not in maps.read_text(), "the worker role must not load Qt"
        proc.stdin.write(encode({"type": "shutdown"}))
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_worker_role_refuses_arguments(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, ENTRY, "--worker", "--model", "x"], capture_output=True, text=True,
                         timeout=60, env=_env(tmp_path), cwd=ROOT, stdin=subprocess.DEVNULL)
    assert out.returncode == 2
    assert "takes no arguments" in out.stderr and "standard input" in out.stderr


def test_smoke_without_a_model_url_says_what_to_pass(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, ENTRY, "--smoke"], capture_output=True, text=True, timeout=60,
                         env=_env(tmp_path), cwd=ROOT)
    assert out.returncode == 2
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ok"] is False and "--smoke-model-url" in result["error"]


def test_smoke_from_source_completes_a_turn_through_the_window(tmp_path: Path, fake_model) -> None:
    from tests.helpers.fake_model import echo_tools

    fake_model.script = echo_tools  # as packaging/smoke.py's fake model: the household page is read by a tool call
    out = subprocess.run([sys.executable, ENTRY, "--smoke", "--smoke-model-url", fake_model.base_url,
                          "--smoke-timeout", "60"], capture_output=True, text=True, timeout=90,
                         env=_env(tmp_path), cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.returncode == 0, result
    assert result["ok"] is True and result["frozen"] is False and result["worker_frozen"] is False
    assert result["answer"] == "You said: Hello from the Hearth smoke test"
    assert result["deltas"] > 1  # streamed, not delivered whole
    assert result["worker_command"][1:] == ["-m", "runtime_host.worker"]
    # memory: the watched folder's notes found from the Wiki view by a name one holds, and by meaning alone
    assert result["memory"]["model"] == "static-wordllama-l2supercat-256"
    assert result["memory"]["by_keyword"][0] == "boiler.txt" and result["memory"]["by_meaning"][0] == "sourdough.md"
    assert result["household"]["guarded"] is True  # the worker read the household page under memory's guard
    assert len(fake_model.requests) == 3  # the turn; the household read's tool call and its answer
