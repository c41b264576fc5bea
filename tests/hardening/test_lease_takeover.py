"""Two real host processes share one database. The host that owns a turn is SIGKILLed mid-turn (after its tool
step); the other host, already running, takes the turn over once the lease runs out and finishes it without
running the tool again. A host that loses a lease stops the turn on its side and says why."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.fake_model import Text, ToolCalls

HOST = r"""
import asyncio
from runtime_host.pod import Pod
async def main():
    pod = Pod()
    pod.start_background()
    await pod.recover()
    print("up", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""
LEASE_S = "2"


def start_host(home: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOST], env={**env, "HEARTH_HOME": str(home)},
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def kill_host(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole host: pod and its workers
    proc.wait(10)


async def test_a_running_host_takes_over_a_killed_host_s_turn_without_repeating_its_tool(tmp_path, fake_model,
                                                                                         monkeypatch) -> None:
    from runtime_host.pod import Pod

    calls: list[int] = []
    b_is_up = threading.Event()

    def model(req):
        calls.append(len(req.tool_results))
        if not req.tool_results:
            return ToolCalls([("append_note", {"text": "booked the table"})])
        b_is_up.wait(60)  # the second call goes on once host b runs; the owner dies in the middle of it
        return Text("all done", delay_s=0.3, chunk_chars=1)

    fake_model.script = model
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    monkeypatch.setenv("HEARTH_DATABASE_URL", url)
    env = {**os.environ, "HEARTH_LEASE_S": LEASE_S, "HEARTH_SANDBOX": "off"}
    setup = Pod(tmp_path / "setup").first_person()
    setup.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    setup.add_agent("helper", provider="fake", toolkits=["notes"])
    await setup.close()
    watcher = Pod(tmp_path / "watcher").first_person()  # reads the shared database only; runs nothing
    turn_id = watcher.create_background_run("helper", "book the table")
    hosts = {"a": start_host(tmp_path / "a", env)}  # a picks the turn up as it starts
    try:
        owner = None
        for _ in range(600):
            t = watcher.store.get_turn(turn_id)
            if t is not None and t.lease_owner and t.status == "running":
                owner = t.lease_owner
                break
            await asyncio.sleep(0.05)
        assert owner is not None and int(owner.split(":")[1]) == hosts["a"].pid, "host a never took the turn"
        hosts["b"] = start_host(tmp_path / "b", env)  # b starts while a holds the lease: it leaves the turn alone
        line = await asyncio.to_thread(hosts["b"].stdout.readline)
        assert line.strip() == "up", "host b did not start"
        b_is_up.set()
        for _ in range(600):
            if len(calls) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(calls) >= 2, "host a never reached its second model call"
        await asyncio.sleep(0.5)
        assert hosts["b"].poll() is None
        t = watcher.store.get_turn(turn_id)
        assert t is not None and t.lease_owner == owner, "host b took a turn whose owner was alive"
        dead, alive = "a", "b"
        kill_host(hosts[dead])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            t = watcher.store.get_turn(turn_id)
            if t is not None and t.status not in ("pending", "running"):
                break
            await asyncio.sleep(0.1)
        t = watcher.store.get_turn(turn_id)
        assert t is not None and t.status == "done", (t.status, t.error) if t else None
        assert hosts[alive].poll() is None, "the surviving host was restarted, not running"
        assert t.lease_owner and int(t.lease_owner.split(":")[1]) == hosts[alive].pid
        steps = watcher.turns()[0]["steps"]
        tools = [s for s in steps if s["kind"] == "tool"]
        assert len(tools) == 1 and tools[0]["status"] == "finished"  # the tool ran once, on the dead host
        assert calls.count(0) == 1
        answer = [m.content for m in watcher.store.list_messages(t.conversation_id) if m.role == "assistant"]
        assert answer == ["all done"]
    finally:
        for p in hosts.values():
            kill_host(p)
        await watcher.close()


async def test_a_host_that_lost_its_lease_stops_the_turn_and_says_why(pod, script, caplog) -> None:
    from tests.helpers.fake_model import Hang

    script([Hang(30)])
    events: list[dict] = []
    pod.subscribe(events.append)
    run = await pod.start_turn("helper", "take your time")
    for _ in range(200):
        if run.started and run.handle is not None:
            break
        await asyncio.sleep(0.02)
    # another host claims the turn after this host's lease "ran out"
    pod.store.update_turn(run.turn_id, lease_until=0)
    assert pod.store.claim_turn(run.turn_id, "other-host:1:x", 30)
    assert pod.renew_leases_once() == [run.turn_id]
    result = await asyncio.wait_for(run.future, 10)
    assert result.status == "abandoned" and "another Hearth host took it over" in (result.error or "")
    assert any(e["type"] == "turn.abandoned" and e["turn_id"] == run.turn_id for e in events)
    assert "stopped on this host" in caplog.text
    t = pod.store.get_turn(run.turn_id)
    assert t.lease_owner == "other-host:1:x" and t.status == "running"  # nothing written over the new owner's turn


async def test_a_lease_renewal_that_keeps_failing_stops_the_turn(pod, script, caplog, monkeypatch) -> None:
    from tests.helpers.fake_model import Hang

    script([Hang(30)])
    run = await pod.start_turn("helper", "take your time")
    for _ in range(200):
        if run.started:
            break
        await asyncio.sleep(0.02)

    def broken(*_a, **_k):
        raise OSError("the database server went away")

    monkeypatch.setattr(pod.store, "renew_leases", broken)
    pod.turn_driver.lease_ok_at = time.monotonic()
    assert pod.renew_leases_once() == []  # the first failure is logged; the lease still holds
    assert "trying again" in caplog.text and not run.future.done()
    pod.turn_driver.lease_ok_at = time.monotonic() - 1000  # ... and when the lease would run out before the next try
    assert pod.renew_leases_once() == [run.turn_id]
    result = await asyncio.wait_for(run.future, 10)
    assert result.status == "abandoned" and "could not be renewed" in (result.error or "")
    assert "before they run out" in caplog.text


pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
