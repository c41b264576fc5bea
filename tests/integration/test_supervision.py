"""The supervisor with real processes: states, restarts, the cap, reaping, the memory budget,
health pings, and workers that misbehave."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from runtime_host.pod import Pod
from runtime_host.states import WorkerState
from runtime_host.supervisor import SupervisorConfig
from tests.helpers.fake_model import Text, ToolCalls

BAD_WORKER = str(Path(__file__).resolve().parent.parent / "helpers" / "bad_worker.py")


def make_pod(home: Path, base_url: str, **config) -> Pod:
    cmd = config.pop("command", None)
    if cmd is not None:
        config.setdefault("sandbox", False)  # the misbehaving test workers live outside what a sandbox shows
    pod = Pod(home, supervisor_config=SupervisorConfig(**config), worker_command=cmd).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=base_url, model="fake-1")
    pod.add_agent("helper", provider="fake")
    return pod


def states_of(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["old"], e["new"]) for e in events if e["type"] == "worker.state"]


async def test_a_turn_walks_the_states_and_each_change_is_one_event(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url)
    events: list[dict] = []
    pod.subscribe(events.append)
    try:
        assert (await pod.chat("helper", "hi")).ok
        await pod.stop_agent("helper")
    finally:
        await pod.close()
    assert states_of(events) == [("stopped", "starting"), ("starting", "ready"), ("ready", "busy"),
                                 ("busy", "ready"), ("ready", "stopping"), ("stopping", "stopped")]
    # the last state is written for other processes (the CLI) to read
    assert Pod(home).store.worker_statuses()[pod.find_agent("helper")[0].id].state == "stopped"


async def test_crashes_past_the_cap_make_the_worker_fatal_with_a_reason(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, max_restarts=2)
    try:
        for _ in range(3):
            info = await pod.start_agent("helper")
            os.kill(info["pid"], signal.SIGKILL)
            h = next(iter(pod.supervisor.handles.values()))
            for _ in range(200):
                if h.state in (WorkerState.BACKOFF, WorkerState.FATAL):
                    break
                await asyncio.sleep(0.02)
        assert h.state == WorkerState.FATAL
        assert "crashed 3 times within an hour" in (h.reason or "")
        assert h.restarts == 2
        result = await pod.chat("helper", "are you there?")
        assert result.status == "failed" and "crashed 3 times" in result.error
        listed = pod.list_agents()[0]["worker"]
        assert listed["state"] == "fatal" and "crashed" in listed["reason"]
    finally:
        await pod.close()


async def test_idle_workers_are_reaped_and_busy_ones_are_not(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, idle_reap_s=0.3)
    try:
        info = await pod.start_agent("helper")
        await pod.supervisor.tick()
        assert pod.list_agents()[0]["worker"]["state"] == "ready"  # not idle long enough yet
        await asyncio.sleep(0.4)
        await pod.supervisor.tick()
        assert pod.list_agents()[0]["worker"]["state"] == "stopped"
        assert not psutil.pid_exists(info["pid"]) or psutil.Process(info["pid"]).status() == psutil.STATUS_ZOMBIE
        # the next message spawns it again, lazily
        assert (await pod.chat("helper", "back?")).ok
    finally:
        await pod.close()


async def test_the_memory_budget_stops_the_least_recently_used_idle_worker(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, memory_budget_mb=90, expected_worker_mb=40)
    pod.add_agent("second", provider="fake")
    pod.add_agent("third", provider="fake")
    evicted: list[str] = []
    pod.subscribe(lambda e: evicted.append(e["agent"]) if e["type"] == "worker.evicted" else None)
    try:
        await pod.start_agent("helper")
        await pod.start_agent("second")
        assert (await pod.chat("helper", "touch")).ok  # helper is now the most recently used
        await pod.start_agent("third")
        states = {a["name"]: a["worker"]["state"] for a in pod.list_agents()}
        assert evicted == ["second"]
        assert states == {"helper": "ready", "second": "stopped", "third": "ready"}
    finally:
        await pod.close()


async def test_a_worker_that_stops_answering_pings_is_treated_as_crashed(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, health_timeout_s=0.5)
    try:
        info = await pod.start_agent("helper")
        for proc in [psutil.Process(info["pid"]), *psutil.Process(info["pid"]).children(recursive=True)]:
            proc.send_signal(signal.SIGSTOP)  # the worker (and, when sandboxed, bubblewrap around it)
        await pod.supervisor.tick()
        h = next(iter(pod.supervisor.handles.values()))
        for _ in range(100):
            if h.state == WorkerState.BACKOFF:
                break
            await asyncio.sleep(0.02)
        assert h.state == WorkerState.BACKOFF and "health pings" in h.reason
        assert (await pod.chat("helper", "hello again")).ok  # restarted on next need
        assert h.pid != info["pid"] and h.restarts == 1
    finally:
        await pod.close()


async def test_a_worker_that_never_becomes_ready_times_out_clearly(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, ready_timeout_s=0.5, command=[sys.executable, BAD_WORKER, "never-ready"])
    try:
        r = await asyncio.wait_for(pod.chat("helper", "hi"), 20)
        assert r.status == "failed" and "did not become ready within 0.5 s" in r.error
        assert "worker.log" in r.error
    finally:
        await pod.close()


@pytest.mark.parametrize("mode,why", [("garbage", "not protocol messages"), ("oversized", "longer than"),
                                      ("exit-on-turn", "code 3")])
async def test_a_broken_worker_ends_the_turn_with_the_reason(home, fake_model, mode, why) -> None:
    pod = make_pod(home, fake_model.base_url, command=[sys.executable, BAD_WORKER, mode])
    try:
        r = await asyncio.wait_for(pod.chat("helper", "hi"), 60)
        assert r.status == "failed" and r.error_kind == "worker_crash"
        assert why in r.error
        assert pod.store.list_messages(r.conversation_id)[0].content == "hi"  # nothing written is lost
    finally:
        await pod.close()


async def test_a_worker_ignoring_sigterm_is_killed_after_the_grace(home, fake_model) -> None:
    pod = make_pod(home, fake_model.base_url, stop_grace_s=0.3, command=[sys.executable, BAD_WORKER, "ignore-term"])
    try:
        info = await pod.start_agent("helper")
        t = time.monotonic()
        await asyncio.wait_for(pod.stop_agent("helper"), 10)
        assert time.monotonic() - t < 5
        assert pod.list_agents()[0]["worker"]["state"] == "stopped"
        assert not psutil.pid_exists(info["pid"])
    finally:
        await pod.close()


async def test_a_model_that_never_stops_calling_tools_hits_the_90_step_ceiling(pod, script, fake_model) -> None:
    script([ToolCalls([("current_time", {})])], repeat_last=True)
    iterations: list[int] = []
    pod.subscribe(lambda e: iterations.append(e["n"]) if e["type"] == "iteration" else None)
    r = await asyncio.wait_for(pod.chat("helper", "loop forever"), 90)
    assert r.status == "failed" and r.error_kind == "iteration_limit" and "90 steps" in r.error
    assert iterations == list(range(1, 91))
    assert len(fake_model.requests) == 90
    turn = pod.turns(r.conversation_id)[0]
    assert turn["iterations"] == 90
    assert sum(1 for s in turn["steps"] if s["kind"] == "model") == 90


async def test_sub_agents_nest_under_their_delegate_call_and_at_most_three_run_at_once(home, fake_model) -> None:
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    pod.add_agent("lead", provider="fake", profile="research")
    lock = threading.Lock()
    running = [0, 0]  # now, max

    def model(req):
        system = req.messages[0]["content"]
        if system.startswith("You are a sub-agent"):
            task = req.last_user
            if not req.tool_results:
                return ToolCalls([("calculate", {"expression": task.split(":")[1]})])
            with lock:
                running[0] += 1
                running[1] = max(running[1], running[0])
            time.sleep(0.3)
            with lock:
                running[0] -= 1
            return Text(f"result {req.tool_results[-1]}")
        if not req.tool_results:
            return ToolCalls([("delegate", {"task": f"compute:{i}*10"}) for i in range(1, 6)])
        return Text("sum of parts: " + ", ".join(req.tool_results))

    fake_model.script = model
    try:
        r = await asyncio.wait_for(pod.chat("lead", "split it up"), 60)
        assert r.ok, r.error
        assert r.text == "sum of parts: result 10, result 20, result 30, result 40, result 50"
        assert running[1] == 3
        steps = pod.turns(r.conversation_id)[0]["steps"]
        delegates = [s for s in steps if s["name"] == "delegate"]
        assert len(delegates) == 5 and all(s["status"] == "finished" for s in delegates)
        for d in delegates:
            kinds = [(c["kind"], c["name"]) for c in d["children"]]
            assert kinds == [("model", "fake-1"), ("tool", "calculate"), ("model", "fake-1")]
            assert all(not c["children"] for c in d["children"])  # one level deep
        # sub-agents cannot delegate further: the tool is not offered to them
        sub_requests = [q for q in fake_model.requests if q.messages[0]["content"].startswith("You are a sub-agent")]
        assert sub_requests and all("delegate" not in {t["function"]["name"] for t in q.body["tools"]} for q in sub_requests)
    finally:
        await pod.close()


async def test_profiles_and_edits_reach_the_worker(home, fake_model) -> None:
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    try:
        info = pod.add_agent("sched", profile="scheduling")
        assert set(info["toolkits"]) == {"memory", "clock", "math", "notes"} and "time" in info["system"]
        assert (await pod.chat("sched", "hi")).ok
        assert "plan their time" in fake_model.requests[-1].messages[0]["content"]
        pod.edit_agent("sched", system="You are terse.", toolkits=["clock"])
        assert (await pod.chat("sched", "again")).ok
        req = fake_model.requests[-1]
        assert req.messages[0]["content"] == "You are terse."
        assert [t["function"]["name"] for t in req.body["tools"]] == ["current_time"]
        assert {p for p in pod.profiles()} >= {"assistant", "inbox", "research", "scheduling"}
    finally:
        await pod.close()
