"""No error is swallowed: when a crashed worker cannot be brought back, the turn fails with the reason and
the host's log says so; a running host's own source has no `except ...: pass` in the supervision paths."""

from __future__ import annotations

import ast
import asyncio
import logging
import os
import signal
from pathlib import Path

from runtime_host.states import WorkerState
from tests.helpers.fake_model import Hang

ROOT = Path(__file__).resolve().parents[2]


async def test_a_worker_that_cannot_come_back_fails_the_turn_with_a_log_line(pod, script, caplog, tmp_path,
                                                                             monkeypatch) -> None:
    script([Hang(30)])
    run = await pod.start_turn("helper", "take your time")
    h = None
    for _ in range(500):
        h = next(iter(pod.supervisor.handles.values()), None)
        if h is not None and h.state == WorkerState.BUSY:
            break
        await asyncio.sleep(0.02)
    assert h is not None and h.pid
    real = pod.pod.agent_host._binding
    monkeypatch.setattr(pod.pod.agent_host, "_binding", lambda inst, profile: {**real(inst, profile),
                                                                "data_dir": str(tmp_path / "gone")})
    with caplog.at_level(logging.WARNING, logger="hearth"):
        os.kill(h.pid, signal.SIGKILL)
        result = await asyncio.wait_for(run.future, 60)
    assert result.status == "failed" and "could not be restarted" in (result.error or "")
    assert "refused to start" in (result.error or "")
    assert f"turn {run.turn_id} could not resume" in caplog.text


def test_the_supervision_paths_swallow_nothing() -> None:
    """`except ...: pass` (or a bare `suppress(Exception)`) hides a failure from the person and the log."""
    paths = ["runtime_host/pod.py", "runtime_host/supervisor.py", "runtime_host/serve.py", "runtime_host/turnstop.py",
             "runtime_host/store.py", "runtime_host/worker/__main__.py", "runtime_host/worker/channel.py"]
    found = []
    for rel in paths:
        tree = ast.parse((ROOT / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and all(isinstance(b, ast.Pass) for b in node.body):
                caught = ast.unparse(node.type) if node.type else "everything"
                if "Exception" in caught or caught == "everything":
                    found.append(f"{rel}:{node.lineno} except {caught}: pass")
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("suppress") and any(
                    ast.unparse(a) in ("Exception", "BaseException") for a in node.args):
                found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    assert found == []


async def test_a_phone_channel_that_cannot_start_is_logged_and_announced(pod, caplog, monkeypatch) -> None:
    import runtime_host.channelhost
    from vault import VaultUnavailable

    def locked(*_a, **_k):
        raise VaultUnavailable("No secure keyring is available on this machine; set a passphrase.")

    monkeypatch.setattr(runtime_host.channelhost, "load_bot_token", locked)
    events: list[dict] = []
    pod.subscribe(events.append)
    with caplog.at_level(logging.ERROR, logger="hearth"):
        pod.start_background()
        for _ in range(100):
            if any(e["type"] == "channels.failed" for e in events):
                break
            await asyncio.sleep(0.02)
    failed = [e for e in events if e["type"] == "channels.failed"]
    assert failed and "No secure keyring" in failed[0]["error"]
    assert "did not start" in caplog.text
