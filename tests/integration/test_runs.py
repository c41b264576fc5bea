"""Background runs and what other processes see: detached runs, runs --json, worker status."""

from __future__ import annotations

import json
import time

from runtime_host.pod import Pod
from tests.helpers.fake_model import Text
from tests.integration.test_cli import cli, setup_agent


def test_a_detached_run_goes_on_after_the_cli_returns(home, fake_model, script) -> None:
    setup_agent(home, fake_model.base_url)
    script([Text("long report done", delay_s=0.05, chunk_chars=2)])
    t = time.monotonic()
    r = cli(home, "run", "helper", "write the long report", "--detach")
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.strip()
    runs = json.loads(cli(home, "runs", "--json").stdout)
    assert [x["id"] for x in runs] == [run_id] and runs[0]["origin"] == "background"
    deadline = time.monotonic() + 60
    while True:
        runs = json.loads(cli(home, "runs", "--json").stdout)
        if runs[0]["status"] == "done" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert runs[0]["status"] == "done", runs
    assert runs[0]["result"] == "long report done" and runs[0]["prompt"] == "write the long report"
    assert time.monotonic() - t < 60
    # a run never shows up as the agent's chat
    chats = json.loads(cli(home, "turns", "--json").stdout)
    assert len(chats) == 1 and chats[0]["id"] == run_id


def test_a_foreground_run_prints_its_result(home, fake_model, script) -> None:
    setup_agent(home, fake_model.base_url)
    script([Text("ran in the foreground")])
    r = cli(home, "run", "helper", "do it now")
    assert r.returncode == 0 and r.stdout.strip() == "ran in the foreground", r.stderr


async def test_agent_list_in_another_process_sees_a_live_worker(home, fake_model) -> None:
    import asyncio

    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    pod.add_agent("helper", provider="fake")
    try:
        info = await pod.start_agent("helper")
        proc = await asyncio.create_subprocess_exec(
            *__import__("sys").executable.split(), "-m", "runtime_host", "agent", "list", "--json",
            stdout=asyncio.subprocess.PIPE, env={**__import__("os").environ, "HEARTH_HOME": str(home)})
        out, _ = await proc.communicate()
        listed = json.loads(out)[0]["worker"]
        assert listed["state"] == "ready" and listed["pid"] == info["pid"]
        assert 5 < listed["rss_mb"] < 200 and listed["uptime_s"] >= 0
    finally:
        await pod.close()


async def test_a_turn_left_running_by_a_dead_process_is_resumed_on_start(home, fake_model, script) -> None:
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    pod.add_agent("helper", provider="fake")
    turn_id = pod.create_background_run("helper", "finish me")
    pod.store.update_turn(turn_id, status="running", lease_owner="gone-host:1:dead", lease_until=time.time() - 1)
    await pod.close()
    script([Text("finished by the next process")])
    pod2 = Pod(home).first_person()
    try:
        assert await pod2.recover() == [turn_id]
        result = await pod2.turn_driver.active[turn_id].future
        assert result.ok and result.text == "finished by the next process"
    finally:
        await pod2.close()


async def test_a_turn_whose_owner_is_alive_is_not_taken(home, fake_model) -> None:
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    pod.add_agent("helper", provider="fake")
    turn_id = pod.create_background_run("helper", "mine")
    pod.store.update_turn(turn_id, status="running", lease_owner="other:2:live", lease_until=time.time() + 30)
    try:
        assert await pod.recover() == []
        assert await pod.resume_turn(turn_id) is None
    finally:
        await pod.close()
