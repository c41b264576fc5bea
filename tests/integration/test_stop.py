"""Stopping a turn: at once, from the Pod, the agent's Stop, the CLI (another process) and serve, through the
real worker process and a slow streaming answer from the fake model; the agent is ready right after."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import httpx

from runtime_host.serve import make_app, new_token
from tests.helpers.fake_model import Text

SLOW = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " * 4


async def streaming(pod, text: str = "tell me a long story", **kw):
    """Starts a turn and returns (run, streamed pieces) once a few pieces of the answer have arrived."""
    pieces: list[str] = []
    run = await pod.start_turn("helper", text, **kw)
    pod.subscribe(lambda ev: pieces.append(ev["text"]) if ev["type"] == "delta" and ev["turn_id"] == run.turn_id else None)
    for _ in range(300):
        if len(pieces) >= 3:
            return run, pieces
        await asyncio.sleep(0.05)
    raise AssertionError("the answer never started streaming")


async def test_stop_ends_a_streaming_turn_at_once_and_keeps_what_was_streamed(pod, script, fake_model) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1), Text("ready again")])
    run, pieces = await streaming(pod)
    t0 = time.monotonic()
    out = await pod.stop_turn(run.turn_id)
    assert time.monotonic() - t0 < 1.0
    result = await asyncio.wait_for(run.future, 1)
    assert result.status == "stopped" and out["status"] == "stopped"
    assert result.text and SLOW.startswith(result.text) and len(result.text) < len(SLOW)
    assert "Stopped by you" in (result.error or "")
    # recorded: the turn, its model step, and the partial answer as the agent's message
    turn = pod.turns(result.conversation_id)[0]
    assert turn["status"] == "stopped" and turn["note"].startswith("Stopped: Stopped by you")
    assert [s["status"] for s in turn["steps"]] == ["stopped"]
    msgs = [(m.role, m.content) for m in pod.store.list_messages(result.conversation_id)]
    assert msgs == [("user", "tell me a long story"), ("assistant", result.text)]
    # the agent is ready: the next message is answered, and the model sees what was said before the stop
    nxt = await asyncio.wait_for(pod.chat("helper", "and now?"), 30)
    assert nxt.ok and nxt.text == "ready again", nxt.error
    assert [m["content"] for m in fake_model.requests[-1].messages[1:]] == ["tell me a long story", result.text, "and now?"]
    assert pod.turns(result.conversation_id)[1]["steps"][0]["status"] == "finished"


async def test_stop_on_the_agent_mid_answer_ends_the_turn_and_a_queued_scheduled_run_proceeds(pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1), Text("scheduled work done")])
    run, _pieces = await streaming(pod)
    queued = await pod.start_turn("helper", "the nightly report", origin="schedule", new_conversation=True)
    states: list[str] = []
    pod.subscribe(lambda ev: states.append(ev["new"]) if ev["type"] == "worker.state" else None)
    await asyncio.wait_for(pod.stop_agent("helper"), 15)
    result = await asyncio.wait_for(run.future, 1)
    assert result.status == "stopped" and "Stop on the agent" in (result.error or "")
    assert "stopped" in states
    later = await asyncio.wait_for(queued.future, 30)
    assert later.ok and later.text == "scheduled work done", later.error


async def test_a_turn_waiting_behind_another_can_be_stopped_before_it_starts(pod, script, fake_model) -> None:
    script([Text(SLOW[:120], chunk_chars=4, delay_s=0.05)])
    first, _pieces = await streaming(pod)
    second = await pod.start_turn("helper", "never mind", new_conversation=True)
    out = await pod.stop_turn(second.turn_id)
    assert out["status"] == "stopped" and "before it started" in out["error"]
    assert (await asyncio.wait_for(first.future, 30)).ok
    await asyncio.sleep(0.3)
    assert not any(r.last_user == "never mind" for r in fake_model.requests)


async def test_cli_stop_from_another_process_stops_the_turn_this_process_runs(pod, script, home) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1), Text("after the CLI stop")])
    run, _pieces = await streaming(pod)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime_host", "stop", run.turn_id, env={**os.environ, "HEARTH_HOME": str(home)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert f"Turn {run.turn_id}: stopped" in stdout.decode() and "Stopped by you (CLI)" in stdout.decode()
    assert (await asyncio.wait_for(run.future, 1)).status == "stopped"
    assert (await asyncio.wait_for(pod.chat("helper", "again"), 30)).text == "after the CLI stop"


async def test_an_orphaned_turn_says_so_and_the_cli_stops_it(pod, home) -> None:
    """A turn whose Hearth process died (its lease ran out) is not left pending without a reason."""
    inst, _profile = pod.find_agent("helper")
    conv = pod.store.create_conversation(inst.id)
    turn = pod.store.create_turn(conv.id, inst.id, lease_owner="gone-host:1:dead", lease_s=-5)
    pod.store.add_message(conv.id, "user", "hello?", turn_id=turn.id)
    pod.store.update_turn(turn.id, status="running")
    assert "orphaned" in pod.turns(conv.id)[0]["note"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime_host", "stop", "--agent", "helper",
        env={**os.environ, "HEARTH_HOME": str(home)}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert "no Hearth process was running it" in stdout.decode()
    t = pod.turns(conv.id)[0]
    assert t["status"] == "stopped" and t["note"].startswith("Stopped:")


async def test_serve_cancel_route_stops_a_turn_and_refuses_an_unknown_one(pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1)])
    token = new_token(pod)
    run, _pieces = await streaming(pod)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=make_app(pod)), base_url="http://pod") as c:
        assert (await c.post(f"/v1/turns/{run.turn_id}/cancel")).status_code == 401
        r = await c.post(f"/v1/turns/{run.turn_id}/cancel", headers=auth)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["contract"] == 1 and body["status"] == "stopped" and body["text"] and SLOW.startswith(body["text"])
        missing = await c.post("/v1/turns/nope/cancel", headers=auth)
        assert missing.status_code == 404 and "No turn 'nope'" in missing.json()["error"]
    assert (await asyncio.wait_for(run.future, 1)).status == "stopped"
