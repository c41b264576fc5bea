"""While a person's removal finishes (begun, cut short by a kill, or still running), no memory job sends anything of
theirs to a model: the producer, the summaries, the 30-minute ingest and the nightly pass all act for the people
whose removal has not begun (``Store.list_people(active=True)``)."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.helpers.fake_model import FakeModelServer, Text


async def _bobs_plan_kept(alice: Any, bob: Any, fake_model: FakeModelServer) -> None:
    """Bob's chat, kept by his extraction model into his memory inbox (and Alice's, kept into hers)."""
    pod = alice.pod
    for who, plan in ((alice, "My plan: paint the shed with wombat blue."),
                      (bob, "My plan: sell the red bicycle to the quokka club.")):
        who.set_role_model("extraction", "fake/fake-1")
        who.set_role_model("ingest", "fake/fake-1")
        inst = who.find_agent("helper")[0]
        conv = pod.store.create_conversation(inst.id, "Plans")
        turn = pod.store.create_turn(conv.id, inst.id, text=plan)
        pod.store.add_message(conv.id, "assistant", "Noted.", turn_id=turn.id)
    fake_model.script = lambda req: Text('[{"n": 1, "keep": true, "reason": "a plan"}]')
    await pod.memory_produce()
    assert await pod.in_memory_thread(lambda: pod.memory.person_source_count(bob.person_id)) >= 1


def _writer(req: Any) -> Text:
    """A wiki writer that writes one page of the scope it is shown (a person's private notes)."""
    scope = re.search(r"private/[0-9a-f-]{8,}", str(req.body))
    if scope is None:
        return Text("[]")
    return Text(json.dumps([{"title": "Plans", "scope": scope.group(0), "category": "plans",
                             "body": "- A plan [1]", "citations": {"1": "S1"}}]))


def _sent(fake_model: FakeModelServer, since: int, word: str) -> int:
    return len([r for r in fake_model.requests[since:] if word in str(r.body)])


async def test_the_timed_ingest_leaves_out_a_person_being_removed(two: Any, fake_model: FakeModelServer) -> None:
    alice, bob = two
    pod = alice.pod
    await _bobs_plan_kept(alice, bob, fake_model)
    pod.store.mark_removing(bob.person_id)  # his removal began (a kill right after leaves it so until the next start)
    before = len(fake_model.requests)
    fake_model.script = _writer
    rep = await pod.memory_ingest()  # the 30-minute timer
    assert _sent(fake_model, before, "quokka") == 0, "Bob's words went to a model while he was being removed"
    assert bob.person_id not in rep.get("ran", []) and alice.person_id in rep.get("ran", [])
    assert _sent(fake_model, before, "wombat") >= 1  # Alice's pages are written as before


async def test_the_nightly_pass_leaves_out_a_person_being_removed(two: Any, fake_model: FakeModelServer) -> None:
    """Bob's page cites two of his notes that disagree: the nightly pass checks it for contradictions with his model.
    Once his removal began, it does not (Alice's page is checked as before)."""
    alice, bob = two
    pod = alice.pod
    for who, word in ((alice, "wombat"), (bob, "quokka")):
        who.set_role_model("ingest", "fake/fake-1")
        scope = f"private/{who.person_id}"
        for said in (f"The {word} club meets on Mondays.", f"The {word} club moved to Tuesdays."):
            await pod.in_memory_thread(lambda t=said, sc=scope: pod.memory.add_source(t, scope=sc))
        fake_model.script = lambda req, scope=scope: Text(json.dumps([{
            "title": "Club", "scope": scope, "category": "plans", "body": "- The club meets [1] [2]",
            "citations": {"1": "S1", "2": "S2"}}]))
        assert (await pod.memory_ingest(who.person_id))["written"]
    pod.store.mark_removing(bob.person_id)
    fake_model.script = lambda req: Text('{"changed": false}')  # the check found nothing to change
    before = len(fake_model.requests)
    await pod.memory_nightly()
    assert _sent(fake_model, before, "quokka") == 0, "Bob's pages went to a model while he was being removed"
    assert _sent(fake_model, before, "wombat") >= 1
