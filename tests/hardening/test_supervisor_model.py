"""Supervision as a state machine: the `transition()` tick moves BACKOFF to STARTING only after a delay that
grows with each crash; `reset()` (a person's Restart) clears the crash history; and only the supervisor
module changes a worker handle's fields."""

from __future__ import annotations

import ast
import asyncio
import os
import signal
import time
from pathlib import Path

from runtime_host.states import WorkerState
from tests.integration.test_supervision import make_pod, states_of

ROOT = Path(__file__).resolve().parents[2]


async def _wait_state(h, *states: WorkerState, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while h.state not in states:
        assert time.monotonic() < deadline, f"worker stayed {h.state.value}, wanted {[s.value for s in states]}"
        await asyncio.sleep(0.02)


async def test_a_tick_moves_backoff_to_starting_only_after_a_growing_delay(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, backoff_base_s=2.0)  # wide enough that a loaded machine stays inside it
    events: list[dict] = []
    pod.subscribe(events.append)
    try:
        info = await pod.start_agent("helper")
        h = next(iter(pod.supervisor.handles.values()))
        os.kill(info["pid"], signal.SIGKILL)
        await _wait_state(h, WorkerState.BACKOFF)
        first = h.backoff_delay()
        assert pod.supervisor.transition() == []  # nobody wants it yet: it stays in BACKOFF
        wanted = asyncio.create_task(pod.start_agent("helper"))
        await asyncio.sleep(0.05)
        events.clear()
        assert pod.supervisor.transition(now=h.backoff_until - 0.01) == [] and h.state == WorkerState.BACKOFF
        assert states_of(events) == []
        assert pod.supervisor.transition(now=h.backoff_until) == [h]
        assert states_of(events)[0] == ("backoff", "starting")
        info = await asyncio.wait_for(wanted, 60)
        assert info["state"] == "ready" and info["restarts"] == 1
        # a second crash in the window waits twice as long
        os.kill(info["pid"], signal.SIGKILL)
        await _wait_state(h, WorkerState.BACKOFF)
        assert h.backoff_delay() == 2 * first
    finally:
        await pod.close()


async def test_a_worker_killed_mid_turn_is_restarted_after_its_backoff_not_at_once(home, fake_model, script) -> None:
    from tests.helpers.fake_model import Hang, Text

    pod = make_pod(home, fake_model.base_url, backoff_base_s=0.5)
    stamps: dict[str, float] = {}

    def on_event(e: dict) -> None:
        if e["type"] == "worker.state" and e["new"] == "backoff":
            stamps.setdefault("backoff", time.monotonic())
        elif e["type"] == "worker.state" and e["new"] == "starting" and "backoff" in stamps:
            stamps.setdefault("restart", time.monotonic())

    pod.subscribe(on_event)
    try:
        script([Hang(60), Text("done after a restart")])  # the first call waits until the worker is killed
        run = await pod.start_turn("helper", "hi")
        h = None
        for _ in range(500):
            h = pod.supervisor.handles.get(next(iter(pod.supervisor.handles), None))
            if h is not None and h.state == WorkerState.BUSY and fake_model.requests:
                break  # the worker is inside its first model call
            await asyncio.sleep(0.02)
        assert h is not None and h.pid and fake_model.requests
        os.kill(h.pid, signal.SIGKILL)
        result = await asyncio.wait_for(run.future, 60)
        assert result.ok, result.error
        # 0.5 s from entering BACKOFF; the stamp is taken after the state is written to the store, hence 0.4
        assert stamps["restart"] - stamps["backoff"] >= 0.4, "the worker was respawned with no backoff delay"
    finally:
        await pod.close()


async def test_restart_clears_the_crash_history_of_a_fatal_worker(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, max_restarts=1, backoff_base_s=0.05)
    try:
        h = None
        for _ in range(2):
            info = await pod.start_agent("helper")
            h = next(iter(pod.supervisor.handles.values()))
            os.kill(info["pid"], signal.SIGKILL)
            await _wait_state(h, WorkerState.BACKOFF, WorkerState.FATAL)
        assert h is not None and h.state == WorkerState.FATAL
        info = await pod.restart_agent("helper")
        assert info["state"] == "ready" and info["restarts"] == 0
        os.kill(info["pid"], signal.SIGKILL)  # one crash after Restart: a first crash, not fatal again
        await _wait_state(h, WorkerState.BACKOFF, WorkerState.FATAL)
        assert h.state == WorkerState.BACKOFF, h.reason
        assert (await pod.chat("helper", "still there?")).ok
    finally:
        await pod.close()


HANDLE_FIELDS = {"state", "proc", "pid", "started_at", "last_used", "rss", "crashes", "restarts", "reason",
                 "active_turn", "sandboxed", "epoch", "backoff_until", "binding"}


def test_only_the_supervisor_changes_a_worker_handle() -> None:
    offenders = []
    for path in [*ROOT.glob("runtime_host/**/*.py"), *ROOT.glob("app/**/*.py")]:
        if path.name == "supervisor.py" and path.parent.name == "runtime_host":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for t in targets:
                if (isinstance(t, ast.Attribute) and t.attr in HANDLE_FIELDS and isinstance(t.value, ast.Name)
                        and t.value.id in ("h", "handle", "worker", "old")):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} sets {t.value.id}.{t.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr == "change_state" or (node.func.attr in ("clear", "append", "popleft")
                                                         and isinstance(node.func.value, ast.Attribute)
                                                         and node.func.value.attr == "crashes")):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {ast.unparse(node.func)}")
    assert not offenders, offenders
