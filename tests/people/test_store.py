"""The core with two people, on SQLite and on PostgreSQL: providers, turns, conversations, schedules and
hand-offs belong to one person, work that runs without anyone at the window uses its owner's keys, and
every attempt to reach the other person's things is refused and audited."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from runtime_host.store import StoreError
from tests.helpers.fake_model import Text, ToolCalls
from tests.people.conftest import BOB_KEY, ME_KEY, denials, keys_sent


async def test_provider_add_by_one_person_never_changes_anothers(two, fake_model, script) -> None:
    me, bob = two
    script([Text("ok")], repeat_last=True)
    bob.add_provider("fake", kind="openai-compatible", base_url="http://127.0.0.1:9/v1", model="other")
    assert [(p["name"], p["base_url"], p["model"]) for p in me.list_providers(builtin=False)] == \
        [("fake", fake_model.base_url, "fake-1")]
    assert [(p["name"], p["base_url"]) for p in bob.list_providers(builtin=False)] == [("fake", "http://127.0.0.1:9/v1")]
    r = await asyncio.wait_for(me.chat("helper", "still mine?"), 30)
    assert r.ok, r.error
    assert keys_sent(fake_model, "still mine?") == {f"Bearer {ME_KEY}"}  # Me's key, to Me's address
    # Bob's role models are his own too
    bob.set_role_model("extraction", "fake/other")
    assert me.models()["roles"]["extraction"]["source"] == "default"


async def test_turns_and_conversations_of_one_person_are_refused_to_the_other(two, fake_model, script) -> None:
    me, bob = two
    script([Text("Me's private answer")], repeat_last=True)
    r = await asyncio.wait_for(me.chat("helper", "my diary entry"), 30)
    assert r.ok
    assert [t["id"] for t in me.turns()] == [r.turn_id]
    assert bob.turns() == [] and bob.runs() == []
    attempts = [
        lambda: bob.turns(r.conversation_id),
        lambda: bob.messages(r.conversation_id),
    ]
    for attempt in attempts:
        with pytest.raises(StoreError, match="No conversation"):
            attempt()
    with pytest.raises(StoreError, match="No conversation"):
        await bob.chat("helper", "let me in", conversation_id=r.conversation_id)
    with pytest.raises(StoreError, match="No turn"):
        await bob.stop_turn(r.turn_id)
    assert len(denials(bob)) == 4
    assert all(r.conversation_id in d["summary"] or r.turn_id in d["summary"] for d in denials(bob))
    assert denials(me) == []
    # nothing of it reached Bob's model calls
    assert all("my diary entry" not in q.last_user for q in fake_model.requests if "Bob" in str(q.messages[0]))


async def test_a_schedule_runs_with_its_owners_key_whoever_acted_last(two, fake_model, script) -> None:
    me, bob = two
    script([Text("done")], repeat_last=True)
    mine = me.add_schedule("helper", "* * * * *", "Me's morning briefing")
    his = bob.add_schedule("helper", "* * * * *", "Bob's morning briefing")
    assert [s["prompt"] for s in bob.schedules()] == ["Bob's morning briefing"]
    assert (await asyncio.wait_for(bob.chat("helper", "Bob was here last"), 30)).ok  # Bob acted last
    out = await me.pod.tick(datetime.now(UTC) + timedelta(minutes=1))
    for run in list(me.pod.turn_driver.active.values()):
        await asyncio.wait_for(run.future, 30)
    assert {r["schedule_id"] for r in out["started"]} == {mine["id"], his["id"]}
    assert keys_sent(fake_model, "Me's morning briefing") == {f"Bearer {ME_KEY}"}
    assert keys_sent(fake_model, "Bob's morning briefing") == {f"Bearer {BOB_KEY}"}
    assert {r["prompt"] for r in me.runs()} == {"Me's morning briefing"}
    assert {r["prompt"] for r in bob.runs()} == {"Bob's morning briefing"}


async def test_a_hand_off_runs_with_its_owners_key_and_the_other_cannot_decide_it(two, fake_model, script) -> None:
    me, bob = two
    me.add_agent("writer", provider="fake", system="You write.", toolkits=["clock"])

    def model(req):
        if "You write." in str(req.messages[0]):
            return Text("the draft is written")
        if not req.tool_results:
            return ToolCalls([("hand_off", {"agent": "writer", "title": "Draft the letter", "description": "to Ana"})])
        return Text("handed off")

    fake_model.script = model
    assert (await asyncio.wait_for(me.chat("helper", "get the letter drafted"), 30)).ok
    (task,) = me.list_tasks()
    assert bob.list_tasks() == []
    with pytest.raises(StoreError, match="No task"):
        await bob.decide_task(task["id"], True)
    assert denials(bob) and task["id"] in denials(bob)[0]["summary"]
    assert (await bob.chat("helper", "Bob acts meanwhile")).ok
    out = await me.decide_task(task["id"], True)
    await asyncio.wait_for(me.pod.turn_driver.active[out["turn_id"]].future, 30)
    assert keys_sent(fake_model, "Draft the letter") == {f"Bearer {ME_KEY}"}


async def test_partners_belong_to_the_person_who_added_them(two) -> None:
    me, bob = two
    me.add_partner("acme", "https://agents.acme.example/a2a", "partner-key-me-1234567890")
    assert [p["name"] for p in me.list_partners()] == ["acme"]
    assert bob.list_partners() == []
    with pytest.raises(ValueError, match="no partner named"):
        bob.pod._partner("acme", bob.person_id)
