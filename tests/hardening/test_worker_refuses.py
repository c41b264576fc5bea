"""A worker refuses to start (a clear reason, a non-zero exit) when its binding gives it no allowlist or no data
folder, rather than running tools with no guard; the Pod turns that refusal into the turn's error."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_host.protocol import ProtocolError, decode, encode


def bind_worker(binding: dict) -> tuple[list[dict], int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(encode({"type": "bind", **binding}), timeout=60)
    return [decode(line) for line in out.splitlines(keepends=True)], proc.returncode, err.decode()


def binding(tmp_path: Path, **changes) -> dict:
    b = {"person": "p", "agent": "a", "scratch": str(tmp_path / "scratch"), "data_dir": str(tmp_path), "routes": [],
         "profile": {"name": "t", "system": "", "toolkits": ["files"], "allowlist": json.dumps({"files": ["read"]})}}
    b.update(changes)
    return b


@pytest.mark.parametrize("change, why", [
    ({"profile": {"name": "t", "system": "", "toolkits": ["files"]}}, "no tool allowlist"),
    ({"profile": {"name": "t", "system": "", "toolkits": [], "allowlist": "[not json"}}, "cannot be read"),
    ({"data_dir": None}, "names no data folder"),
    ({"data_dir": "/nonexistent/hearth-data"}, "data folder /nonexistent/hearth-data is missing"),
])
def test_worker_refuses_a_binding_without_a_guard(tmp_path: Path, change: dict, why: str) -> None:
    msgs, code, err = bind_worker(binding(tmp_path, **change))
    assert code != 0
    assert not any(m["type"] == "ready" for m in msgs)
    refusal = [m for m in msgs if m["type"] == "error"]
    assert refusal and refusal[0]["fatal"] and why in refusal[0]["error"]
    assert "refused to start" in err and why in err


def test_a_complete_binding_still_starts(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(encode({"type": "bind", **binding(tmp_path)}))
        proc.stdin.flush()
        assert decode(proc.stdout.readline())["type"] == "hello"
        assert decode(proc.stdout.readline())["type"] == "ready"
        proc.stdin.write(encode({"type": "shutdown"}))
        proc.stdin.flush()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_the_pod_reports_the_refusal_as_the_turn_error(pod, tmp_path: Path, monkeypatch) -> None:
    real = pod.pod.agent_host._binding

    def without_data_folder(inst, profile):
        return {**real(inst, profile), "data_dir": str(tmp_path / "unmounted")}

    monkeypatch.setattr(pod.pod.agent_host, "_binding", without_data_folder)
    r = await asyncio.wait_for(pod.chat("helper", "hi"), 60)
    assert r.status == "failed"
    assert "refused to start" in (r.error or "") and "unmounted is missing" in (r.error or "")


def test_a_lone_surrogate_on_the_pipe_arrives_as_a_replacement_character() -> None:
    """Either end may hold half a character ("\\ud800" escaped in a model's JSON, or a worker that escapes one on
    purpose): the line still goes and comes as text every store can hold, with U+FFFD in its place."""
    sent = encode({"type": "event", "text": "red \udcff boat \U0001f600"})
    assert decode(sent) == {"type": "event", "text": "red \ufffd boat \U0001f600"}
    hostile = b'{"type": "event", "text\\udcff": ["a\\ud800b", {"k": "\\ud83d\\ude00 \\\\ud800"}]}\n'
    assert decode(hostile) == {"type": "event", "text\ufffd": ["a\ufffdb", {"k": "\U0001f600 \\ud800"}]}
    with pytest.raises(ProtocolError, match="not a JSON message"):
        decode(b'{"type": "event", "text": "\\ud800"} trailing\n')
