"""Bounds a hostile model cannot pass, through the real worker: tool calls per answer, model calls per turn
(sub-agents included), concurrent sub-agents, and the size of what a refused call leaves in the record."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import psutil
import pytest

from runtime_host.worker.loop import (
    KEPT_TOOL_CALLS_PER_STEP,
    MAX_CONCURRENT_SUBAGENTS,
    MAX_TOOL_CALLS_PER_STEP,
    MODEL_CALL_BUDGET,
    SUBAGENT_SYSTEM,
)
from tests.helpers.fake_model import Endless, Hang, Request, Text, ToolCalls


@pytest.fixture
async def agent(pod):
    pod.add_agent("busy", provider="fake", toolkits=["clock", "delegate"])
    return pod


async def test_an_answer_with_5000_tool_calls_runs_16_and_refuses_the_rest_briefly(agent, fake_model) -> None:
    huge = "x" * 200_000

    def model(req: Request) -> Any:
        if not req.tool_results:
            calls = [("current_time", {"timezone": "UTC"}) for _ in range(4998)]
            return ToolCalls(calls + [("current_time", {"timezone": huge}), ("current_time", {"timezone": huge})])
        return Text("done")

    fake_model.script = model
    r = await asyncio.wait_for(agent.chat("busy", "what time is it, 5000 times?"), 60)
    assert r.ok, r.error
    steps = agent.store.list_steps(r.turn_id)
    tools = [s for s in steps if s.kind == "tool"]
    assert len(tools) == MAX_TOOL_CALLS_PER_STEP
    results = fake_model.requests[-1].tool_results
    assert len(results) == KEPT_TOOL_CALLS_PER_STEP  # each kept call has its one result
    refused = results[MAX_TOOL_CALLS_PER_STEP:]
    assert all(t.startswith("refused: not run") and "asked for 5000" in t for t in refused)
    assert "at most 16 tool calls of one answer" in refused[0]
    # the record keeps a short summary of refused calls, never their 200k arguments
    model_step = next(s for s in steps if s.kind == "model")
    assert len(json.dumps(model_step.result)) < 60_000
    assert huge not in json.dumps([s.arguments for s in steps])


async def test_30_delegates_that_never_finish_stop_at_the_turns_model_call_budget(agent, fake_model) -> None:
    def model(req: Request) -> Any:
        if SUBAGENT_SYSTEM in req.system:
            return ToolCalls([("current_time", {})])  # a sub-agent that never answers
        if not req.tool_results:
            return ToolCalls([("delegate", {"task": f"part {i}"}) for i in range(30)])
        return ToolCalls([("delegate", {"task": "more"})])

    fake_model.script = model
    counts: list[dict[str, Any]] = []
    unsubscribe = agent.subscribe(lambda ev: counts.append(ev) if ev.get("type") == "model_calls" else None)
    r = await asyncio.wait_for(agent.chat("busy", "split this into 30 parts"), 120)
    unsubscribe()
    assert r.status == "failed" and r.error_kind == "budget"
    assert f"all {MODEL_CALL_BUDGET} of its model calls" in r.error and "sub-agents included" in r.error
    assert len(fake_model.requests) == MODEL_CALL_BUDGET
    assert counts[-1]["n"] == MODEL_CALL_BUDGET and counts[-1]["max"] == MODEL_CALL_BUDGET
    # the conversation is not wedged: the next message is answered
    fake_model.script = lambda req: Text("back to normal")
    again = await asyncio.wait_for(agent.chat("busy", "hello?"), 30)
    assert again.ok and again.text == "back to normal"


async def test_2000_delegates_run_at_most_3_sub_agents_at_once_on_a_few_threads(agent, fake_model) -> None:
    live = [0]
    peak = [0]
    lock = threading.Lock()
    threads: list[int] = []

    def slow_sub(req: Request) -> Any:
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        worker = next((c for c in psutil.Process().children(recursive=True)
                       if "runtime_host.worker" in " ".join(c.cmdline())), None)
        if worker is not None:
            threads.append(worker.num_threads())
        time.sleep(0.2)
        with lock:
            live[0] -= 1
        return Text(f"{req.last_user}: done")

    def model(req: Request) -> Any:
        if SUBAGENT_SYSTEM in req.system:
            return slow_sub(req)
        if not req.tool_results:
            return ToolCalls([("delegate", {"task": f"part {i}"}) for i in range(2000)])
        return Text("gathered")

    fake_model.script = model
    r = await asyncio.wait_for(agent.chat("busy", "2000 parts please"), 60)
    assert r.ok, r.error
    subs = [q for q in fake_model.requests if SUBAGENT_SYSTEM in q.system]
    assert len(subs) == MAX_TOOL_CALLS_PER_STEP
    assert peak[0] <= MAX_CONCURRENT_SUBAGENTS
    assert threads and max(threads) < 20, threads


async def test_the_calculate_bomb_ends_quickly_with_a_clear_result_to_the_model(agent, fake_model) -> None:
    pod = agent
    pod.edit_agent("busy", toolkits=["math"])

    def model(req: Request) -> Any:
        if not req.tool_results:
            return ToolCalls([("calculate", {"expression": "((10**999)**999)**999"})])
        return Text(f"the tool said: {req.tool_results[-1]}")

    fake_model.script = model
    r = await asyncio.wait_for(pod.chat("busy", "how big is it?"), 30)
    assert r.ok, r.error
    assert r.text.startswith("the tool said: error:") and "digits" in r.text


async def test_a_model_that_never_stops_streaming_is_cut_off_and_the_conversation_goes_on(agent, fake_model) -> None:
    fake_model.script = lambda req: Endless("and on " * 3000)
    r = await asyncio.wait_for(agent.chat("busy", "tell me everything"), 90)
    assert r.ok, r.error
    assert "cut off by Hearth" in r.text[-300:]
    fake_model.script = lambda req: Text("short answer")
    again = await asyncio.wait_for(agent.chat("busy", "in one line?"), 30)
    assert again.ok and again.text == "short answer"


async def test_a_turn_ends_at_its_time_limit_while_the_model_trickles(agent, fake_model, monkeypatch) -> None:
    import runtime_host.turns as turns_module

    monkeypatch.setattr(turns_module, "TURN_TIME_LIMIT_S", 2.0)
    monkeypatch.setattr(turns_module, "TURN_STOP_GRACE_S", 5.0)  # the worker ends it, not the Pod's backstop
    fake_model.script = lambda req: Endless("drip ", delay_s=0.05)
    t = time.monotonic()
    r = await asyncio.wait_for(agent.chat("busy", "slowly please"), 30)
    assert time.monotonic() - t < 10
    assert r.status == "failed" and r.error_kind == "time_limit"
    assert "ran for its limit of 2 s without finishing" in r.error


async def test_a_worker_stuck_past_the_time_limit_is_stopped_by_the_pod(agent, fake_model, monkeypatch) -> None:
    import runtime_host.turns as turns_module

    monkeypatch.setattr(turns_module, "TURN_TIME_LIMIT_S", 1.0)
    monkeypatch.setattr(turns_module, "TURN_STOP_GRACE_S", 1.0)
    fake_model.script = lambda req: Hang(20)  # no byte at all: the worker waits inside one read
    r = await asyncio.wait_for(agent.chat("busy", "anyone?"), 15)
    assert r.status == "stopped" and "passed its limit of 1 s" in (r.error or "")
    monkeypatch.setattr(turns_module, "TURN_TIME_LIMIT_S", 1800.0)
    fake_model.script = lambda req: Text("awake")
    again = await asyncio.wait_for(agent.chat("busy", "now?"), 30)
    assert again.ok and again.text == "awake"


async def test_a_refused_call_keeps_a_short_summary_of_its_200k_arguments(agent, fake_model) -> None:
    huge = "y" * 200_000

    def model(req: Request) -> Any:
        if not req.tool_results:
            return ToolCalls([("no_such_tool", {"blob": huge}), ("read_file", {"path": huge})])
        return Text("ok")

    fake_model.script = model
    r = await asyncio.wait_for(agent.chat("busy", "try these"), 30)
    assert r.ok, r.error
    results = fake_model.requests[-1].tool_results
    assert results[0].startswith("error: there is no tool named 'no_such_tool'")
    tools = [s for s in agent.store.list_steps(r.turn_id) if s.kind == "tool"]
    assert len(tools) == 2 and all(s.status == "failed" for s in tools)
    assert all(len(json.dumps(s.arguments)) < 1000 for s in tools)
