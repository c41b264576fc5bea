"""A worker killed at every step boundary of a turn with 1-3 parallel tool calls, or with sub-agents:
the turn resumes, every tool call of every model step gets exactly one result (the fake model
refuses unpaired calls with HTTP 400, as the providers do), and no side effect happens twice."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from runtime_host.supervisor import SupervisorConfig
from runtime_host.worker.loop import INTERRUPTED, SUBAGENT_SYSTEM
from tests.helpers.fake_model import FakeModelServer, Request, Text, ToolCalls

BOUNDARIES = ("step.started", "step.finished")


def kill_workers(pod) -> int:
    """SIGKILLs each live worker: the Python process itself first (in the sandbox it is bubblewrap's child)."""
    n = 0
    for h in pod.supervisor.handles.values():
        if h.proc is None or h.proc.returncode is not None or not h.pid:
            continue
        with contextlib.suppress(psutil.Error):
            outer = psutil.Process(h.pid)
            for p in [*outer.children(recursive=True), outer]:
                with contextlib.suppress(psutil.Error, ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
            n += 1
    return n


def parallel_notes(n: int):
    """The model asks for n notes in one answer, then answers once every call has its result."""

    def model(req: Request) -> Any:
        if not req.tool_results:
            return ToolCalls([("append_note", {"text": f"{req.last_user} / note {k}"}) for k in range(1, n + 1)])
        return Text("all noted")

    return model


def delegating(req: Request) -> Any:
    """Two sub-agents, each writing one note; the lead answers once both returned."""
    if SUBAGENT_SYSTEM in req.system:
        if not req.tool_results:
            return ToolCalls([("append_note", {"text": f"{req.last_user} note"})])
        return Text(f"{req.last_user} done")
    if not req.tool_results:
        return ToolCalls([("delegate", {"task": f"{req.last_user} / sub {k}"}) for k in (1, 2)])
    return Text("both sub-agents done")


@pytest.fixture
async def rig(home: Path):
    from runtime_host.pod import Pod

    fake = FakeModelServer().start()
    pod = Pod(home, supervisor_config=SupervisorConfig(max_restarts=1000, health_interval_s=3600, backoff_base_s=0.01, backoff_max_s=0.05)).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("scribe", provider="fake", toolkits=["notes", "delegate"])
    try:
        yield pod, fake
    finally:
        await asyncio.wait_for(pod.close(), 20)
        fake.stop()


async def run_with_kill(pod, prompt: str, kill_at: int | None) -> tuple[Any, int]:
    """Runs one turn, killing the worker at the `kill_at`-th step boundary of its first attempt."""
    seen = [0]
    killed = [0]

    def on_event(ev: dict[str, Any]) -> None:
        if ev.get("type") not in BOUNDARIES or killed[0]:
            return
        if seen[0] == kill_at:
            killed[0] = kill_workers(pod)
        seen[0] += 1

    unsubscribe = pod.subscribe(on_event)
    try:
        result = await asyncio.wait_for(pod.chat("scribe", prompt, new_conversation=True), 60)
    finally:
        unsubscribe()
    return result, seen[0] if kill_at is None else killed[0]


def notes(pod) -> collections.Counter[str]:
    inst = pod.find_agent("scribe")[0]
    path = pod.home / "agents" / inst.person_id / inst.id / "notes.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return collections.Counter(re.sub(r" <!-- step:\w+ -->$", "", ln)[2:] for ln in text.splitlines() if ln.strip())


@pytest.mark.parametrize("scenario", ["1 call", "2 calls", "3 calls", "2 sub-agents"])
async def test_a_kill_at_every_step_boundary_resumes_with_every_call_paired(rig, scenario: str) -> None:
    pod, fake = rig
    fake.script = delegating if scenario == "2 sub-agents" else parallel_notes(int(scenario[0]))
    first, boundaries = await run_with_kill(pod, "dry run", None)
    assert first.ok, first.error
    assert boundaries >= 6
    for k in range(boundaries):
        prompt = f"kill {k}"
        fake.requests.clear()
        result, killed = await run_with_kill(pod, prompt, k)
        assert killed, f"the worker was not killed at boundary {k}"
        assert result.ok, f"boundary {k}: {result.error}"
        assert fake.pairing_errors == [], f"boundary {k}: the model was sent unpaired calls: {fake.pairing_errors}"
        turn = pod.turns(result.conversation_id)[0]
        assert turn["restarts"] == 1, f"boundary {k}: {turn}"
        # the lead's last request carries one result for each call of its tool-calling answer
        lead = [r for r in fake.requests if SUBAGENT_SYSTEM not in r.system]
        expected = 2 if scenario == "2 sub-agents" else int(scenario[0])
        assert len(lead[-1].tool_results) == expected, f"boundary {k}"
        assert all(r.startswith(("noted:", INTERRUPTED, "kill")) for r in lead[-1].tool_results), lead[-1].tool_results
        # no note written twice; a note is missing only where the model was told its call was interrupted
        written = {n: c for n, c in notes(pod).items() if n.startswith(prompt + " ")}
        assert all(c == 1 for c in written.values()), f"boundary {k}: {written}"
        interrupted = sum(1 for r in fake.requests for t in r.tool_results if t == INTERRUPTED)
        missing = expected - len(written)
        assert missing <= interrupted, f"boundary {k}: {missing} notes lost without telling the model"
        # nothing left looking as if it still ran
        statuses = [s.status for s in pod.store.list_steps(result.turn_id)]
        assert "started" not in statuses, f"boundary {k}: {statuses}"
