"""Hand-offs between agents: proposed -> approved -> active -> done, rejection, timeout, one level,
and the lead waiting on the row without model calls."""

from __future__ import annotations

import asyncio
import time

import pytest

from runtime_host.store import StoreError
from tests.helpers.fake_model import Text, ToolCalls


@pytest.fixture
def two_agents(pod):
    pod.edit_agent("helper", toolkits=["tasks"])
    pod.add_agent("researcher", provider="fake", system="You research.", toolkits=["tasks", "math"])
    return pod


def lead_script(fake_model):
    """The lead hands off, then waits; the researcher answers. Counts model calls by agent."""
    calls = {"lead": 0, "researcher": 0}

    def model(req):
        system = req.messages[0]["content"]
        if "You research" in system:
            calls["researcher"] += 1
            if any("hand" in t.get("function", {}).get("name", "") for t in req.body.get("tools", [])) and "again" in req.last_user:
                return ToolCalls([("hand_off", {"agent": "helper", "title": "bounce", "description": "x"})]) \
                    if not req.tool_results else Text(req.tool_results[-1])
            return Text("Findings: the answer is 42.")
        calls["lead"] += 1
        results = req.tool_results
        if not results:
            return ToolCalls([("hand_off", {"agent": "researcher", "title": "Find the answer",
                                            "description": "Find the answer to everything." + (" again" if "again" in req.last_user else "")})])
        if len(results) == 1:
            task_id = results[0].split()[1]
            return ToolCalls([("wait_for_task", {"task_id": task_id, "timeout_s": 60})])
        return Text("Lead says: " + results[-1])

    fake_model.script = model
    return calls


async def lead_proposes(pod, message: str):
    """The lead starts a turn and proposes a hand-off; returns its run and the proposed task row."""
    proposed = asyncio.Event()
    pod.subscribe(lambda e: proposed.set() if e["type"] == "task.proposed" else None)
    run = await pod.start_turn("helper", message)
    await asyncio.wait_for(proposed.wait(), 30)
    (t,) = pod.list_tasks()
    return run, t


async def test_proposed_approved_active_done_with_the_result_on_the_row(two_agents, fake_model) -> None:
    pod = two_agents
    calls = lead_script(fake_model)
    run, t = await lead_proposes(pod, "please find the answer")
    assert t["state"] == "proposed" and t["owner"] == "researcher" and t["creator"] == "helper"
    await asyncio.sleep(1.0)
    lead_calls_while_waiting = calls["lead"]
    assert calls["researcher"] == 0  # nothing runs before the person's allow
    out = await pod.decide_task(t["id"], True)
    assert out["state"] == "active" and out["conversation_id"]
    result = await asyncio.wait_for(run.future, 60)
    assert result.ok and result.text == "Lead says: task done. Result:\nFindings: the answer is 42."
    assert calls["lead"] == lead_calls_while_waiting + 1  # the lead spent no model calls waiting
    done = pod.list_tasks()[0]
    assert done["state"] == "done" and done["result"] == "Findings: the answer is 42."
    timeline = [e["kind"] for e in pod.task_timeline(t["id"])]  # what the window's Tasks page shows
    assert timeline == ["proposed", "active", "done"]
    pod.add_person("Bob")
    with pytest.raises(StoreError, match="does not exist"):
        pod.unlock("Bob").task_timeline(t["id"])  # another person's task is not theirs to read
    # what moved: the task text only; the researcher's conversation is its own
    msgs = pod.store.list_messages(done["conversation_id"])
    assert msgs[0].content.startswith("Task: Find the answer") and "please find the answer" not in msgs[0].content


async def test_a_rejected_hand_off_never_runs(two_agents, fake_model) -> None:
    pod = two_agents
    calls = lead_script(fake_model)
    run, t = await lead_proposes(pod, "please find the answer")
    assert (await pod.decide_task(t["id"], False))["state"] == "rejected"
    result = await asyncio.wait_for(run.future, 60)
    assert "task rejected" in result.text and calls["researcher"] == 0
    with pytest.raises(StoreError):
        await pod.decide_task(t["id"], True)


async def test_a_stuck_task_times_out_with_a_reason(two_agents, fake_model) -> None:
    pod = two_agents
    lead_script(fake_model)
    run, t = await lead_proposes(pod, "please find the answer")
    with pod.store.engine.begin() as c:
        from sqlalchemy import text

        c.execute(text("UPDATE tasks SET created_at = :t"), {"t": time.time() - 3600})
    assert pod.expire_tasks() == [t["id"]]
    result = await asyncio.wait_for(run.future, 60)
    assert "timed_out" in result.text and "no decision within 15 minutes" in result.text


async def test_delegation_is_one_level_deep(two_agents, fake_model) -> None:
    pod = two_agents
    lead_script(fake_model)
    run, t = await lead_proposes(pod, "please find the answer again")
    await pod.decide_task(t["id"], True)
    result = await asyncio.wait_for(run.future, 60)
    assert "one level deep" in result.text
    assert len(pod.list_tasks()) == 1
