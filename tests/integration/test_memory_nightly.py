"""Memory's nightly pass as the Pod runs it, for two people: whose model holds whom, the contradiction check's page
sources, the pages it asks about again, and what a person is told when it skips one."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.helpers.fake_model import Text
from tests.integration.test_memory_pod import bob_with_his_own_provider, two_dentists

CHECK = "keep a personal wiki consistent"  # the contradiction check's instructions (RECONCILE_SYSTEM) say this


def _bike(req, scope: str) -> Text:
    label = (re.findall(r"\b(S\d+)\b", req.last_user) or ["S1"])[0]
    return Text(json.dumps([{"title": "Bike", "scope": scope, "category": "things", "body": "- code 4412 [1]",
                             "citations": {"1": label}}]))


async def test_a_slow_model_rewriting_bobs_page_at_night_holds_neither_alices_ingest_now_nor_her_check(
        pod, fake_model) -> None:
    """README: one person's hung or slow memory model never holds up another's. Bob's local model takes minutes to
    rewrite his stale page at 03:00; Alice presses Ingest now meanwhile, and her page waits for its contradiction
    check. Both waited on Bob's model (the pass held every person's lock and the whole wiki's lease through it). Now
    Alice's Ingest now is written at once and her page checked while Bob's model still thinks; Bob's own Ingest now
    says at once that the nightly pass is writing his pages."""
    from wiki_engine import Page

    bob, as_bob = bob_with_his_own_provider(pod)
    alice_scope, bob_scope = f"private/{pod.person.id}", f"private/{bob['id']}"
    pod.set_role_model("ingest", "fake/alice-model")
    as_bob.set_role_model("ingest", "fake/bob-slow")

    def seed() -> None:
        keep = pod.memory.add_source("The dentist is Dr Lindqvist.", scope=bob_scope)
        gone = pod.memory.add_source("The check-up is in March.", scope=bob_scope)
        pod.memory.write_page(Page("Dentist", bob_scope, "health", "Dr Lindqvist [1]. March check-up [2].",
                                   {1: keep, 2: gone}), author="agent:wiki-writer")
        pod.memory.delete_source(gone)  # Bob's page is stale: the nightly pass has his model rewrite it
        two_dentists(pod, alice_scope)

    await pod.in_memory_thread(seed)
    asked, go, alice_checked = threading.Event(), threading.Event(), threading.Event()

    def model(req):
        if req.model == "bob-slow":
            asked.set()
            go.wait(90)  # the server holds Bob's answer
            return Text(json.dumps([{"title": "Dentist", "scope": bob_scope, "category": "health",
                                     "body": "Dr Lindqvist [1].", "citations": {"1": "P1-1"}}]))
        if CHECK in req.system:
            alice_checked.set()
            return Text(json.dumps({"changed": True, "body": "- The dentist is Dr Lindqvist [2]", "dropped": {"1": 2},
                                    "why": "newer"}))
        return _bike(req, alice_scope)

    fake_model.script = model
    nightly = asyncio.create_task(pod.pod.memory_nightly())
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        await pod.in_memory_thread(lambda: pod.memory.add_source("My bike lock code is 4412.", scope=alice_scope))
        until = time.monotonic() + 20
        while True:  # told at once while the pass checks her own pages, she presses again a moment later
            try:
                out = await asyncio.wait_for(pod.memory_ingest(), 20)
            except TimeoutError:
                pytest.fail("Alice's Ingest now waited on the nightly pass, which waited on Bob's slow model")
            if "nightly pass is writing your pages" not in (out.get("message") or "") or time.monotonic() > until:
                break
            await asyncio.sleep(0.2)
        assert out["left_in_inbox"] == 0 and not out.get("message"), out
        assert await asyncio.to_thread(alice_checked.wait, 20), "Alice's page waited for Bob's model to be checked"
        bobs = await asyncio.wait_for(as_bob.memory_ingest(), 5)
        from runtime_host.memory_jobs import NIGHTLY_WRITING

        assert bobs["message"] == NIGHTLY_WRITING, bobs
        assert not nightly.done()
    finally:
        go.set()
        done = await asyncio.wait_for(nightly, 60)
    assert f"page:{bob_scope}/dentist" in done["resynthesized"], done
    assert [r.split(":")[0] for r in done["reconciled"]] == [f"{alice_scope}/dentist"], done


async def test_a_slow_contradiction_check_of_one_persons_pages_does_not_queue_anothers(pod, fake_model) -> None:
    """The contradiction check went one scope after another: the first person's slow model (a local one, 120 s a
    request) held the second's check until it answered. Now each person's check runs at once."""
    _bob, as_bob = bob_with_his_own_provider(pod)
    slow, quick = sorted([pod, as_bob], key=lambda p: f"private/{p.person_id}")  # the slow one's scope comes first
    slow.set_role_model("ingest", "fake/slow")
    quick.set_role_model("ingest", "fake/quick")
    for who in (slow, quick):
        await pod.in_memory_thread(lambda who=who: two_dentists(pod, f"private/{who.person_id}"))
    asked, go, quick_asked = threading.Event(), threading.Event(), threading.Event()

    def model(req):
        if req.model == "slow":
            asked.set()
            go.wait(90)
        else:
            quick_asked.set()
        return Text(json.dumps({"changed": False, "why": "consistent"}))

    fake_model.script = model
    nightly = asyncio.create_task(pod.pod.memory_nightly())
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        assert await asyncio.to_thread(quick_asked.wait, 20), "the second person's check waited on the first's model"
    finally:
        go.set()
        await asyncio.wait_for(nightly, 60)


async def test_a_reconciled_page_no_longer_lists_the_dropped_source(pod, fake_model) -> None:
    """The check dropped "The dentist is Dr Okafor [1]" for a newer source; the page's Sources still listed the old
    dentist's note (so the page cited two sources and went back to the model every night). Now it lists the one its
    text still cites, and the next night asks nothing."""
    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: two_dentists(pod, scope))
    before = pod.memory.read_page(scope, "dentist").citations
    pod.set_role_model("ingest", "fake/reconciler")
    asked: list[str] = []

    def model(req):
        asked.append(req.last_user)
        return Text(json.dumps({"changed": True, "body": "- The dentist is Dr Lindqvist [2]", "dropped": {"1": 2},
                                "why": "newer"}))

    fake_model.script = model
    out = await asyncio.wait_for(pod.memory_nightly(), 60)
    assert out["reconciled"], out
    page = pod.memory.read_page(scope, "dentist")
    assert page.body.strip() == "- The dentist is Dr Lindqvist [2]"
    assert page.citations == {2: before[2]}, [pod.memory.get_source(s).text for s in page.citations.values()]
    await asyncio.wait_for(pod.memory_nightly(), 60)
    assert len(asked) == 1


async def test_an_unchanged_page_is_not_sent_to_the_model_again_the_next_night(pod, fake_model, home) -> None:
    """Every night every unverified page citing two or more sources went whole, with its sources, to the person's
    ingest model (a provider's: the whole wiki paid for every night), even when nothing had changed. Now a page the
    check found nothing on is asked about again only once it, or a source it cites, changed: after Hearth restarts
    too (the mark is kept in memory's catalog, which takes its new table when an older one is opened)."""
    from runtime_host.pod import Pod
    from wiki_engine import Page

    scope = f"private/{pod.person.id}"

    def seed() -> None:
        for i in range(5):
            a = pod.memory.add_source(f"Friend {i} likes tea.", scope=scope)
            b = pod.memory.add_source(f"Friend {i} lives in Leeds.", scope=scope)
            pod.memory.write_page(Page(f"Friend {i}", scope, "people", "- Likes tea [1]\n- Lives in Leeds [2]",
                                       {1: a, 2: b}), author="agent:writer")

    await pod.in_memory_thread(seed)
    pod.set_role_model("ingest", "fake/reconciler")
    asked: list[str] = []

    def model(req):
        asked.append(re.search(r"Page “([^”]+)”", req.last_user).group(1))
        return Text(json.dumps({"changed": False, "why": "no contradiction"}))

    fake_model.script = model
    await asyncio.wait_for(pod.memory_nightly(), 60)
    assert sorted(asked) == [f"Friend {i}" for i in range(5)]
    await asyncio.wait_for(pod.memory_nightly(), 60)  # the next night: nothing changed
    assert len(asked) == 5, asked

    def change() -> None:  # one page gets a line
        page = pod.memory.read_page(scope, "friend-1")
        pod.memory.write_page(Page(page.title, scope, "people", page.body + "\n- Has a cat [1]", page.citations),
                              author="agent:writer")

    await pod.in_memory_thread(change)
    await pod.close()
    again = Pod(home).first_person()  # Hearth started again
    try:
        await asyncio.wait_for(again.memory_nightly(), 60)
    finally:
        await again.close()
    assert asked[5:] == ["Friend 1"], asked

    db = sqlite3.connect(home / "memory" / "memory.db")  # a memory.db from before the mark: opens and takes it
    db.executescript("DROP TABLE checked_pages; DELETE FROM schema_migrations WHERE name='0009_checked_pages';")
    db.commit()
    db.close()
    third = Pod(home).first_person()
    try:
        await asyncio.wait_for(third.memory_nightly(), 60)
        assert len(asked) == 11, asked  # nothing marked: every page asked once more, and marked again
        await asyncio.wait_for(third.memory_nightly(), 60)
        assert len(asked) == 11, asked
    finally:
        await third.close()


async def test_a_refused_contradiction_check_tells_its_person_which_page_in_whole_words(pod, fake_model) -> None:
    """At 03:00 the person's model answered the check of one page with a reworded line (refused, rightly). She was
    told "Memory's nightly pass failed / The reconciliation model added or reworded lines …; the page is unchanged (…).
    Pick a s": no page named, cut mid-word. Now the page is named first and the text ends at a word, with "…"."""
    from app.tray import notification_for

    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: two_dentists(pod, scope))
    pod.set_role_model("ingest", "fake/reconciler")

    def model(req):
        if CHECK in req.system:
            return Text(json.dumps({"changed": True, "body": "- The dentist is definitely Dr Lindqvist [2]",
                                    "dropped": {"1": 2}, "why": "newer"}))
        return Text("[]")

    fake_model.script = model
    events: list[dict] = []
    pod.subscribe(lambda ev: events.append(ev) if ev["type"] == "memory.failed" else None)
    pod.pod.ensure_memory_timers()
    three = (datetime.now(UTC) + timedelta(days=1)).replace(hour=3, minute=0, second=5, microsecond=0)
    await asyncio.wait_for(pod.pod.tick(three), 120)
    [told] = [notification_for(ev) for ev in events if ev.get("job") == "memory.nightly"]
    title, body = told
    assert body.startswith("“Dentist” was not checked for contradictions and stays as it was"), body
    assert title == "Memory's nightly pass left some pages as they were"
    assert len(body) <= 200 and body.endswith("…") and body[-2].isalpha(), body
    assert body[:-1] in events[0]["error"] and events[0]["error"][len(body) - 1] in " ,.;:", body
    page = pod.memory.read_page(scope, "dentist")
    assert "Okafor" in page.body and "definitely" not in page.body


async def test_a_claim_wrapped_over_two_lines_is_taken_off_whole_or_not_at_all(pod, fake_model) -> None:
    """A claim wrapped over two lines ("- The dentist is Dr Okafor,\\n  at the Leeds practice [1]"): the check's model
    dropped only its cited line, and the check took that answer, so the page read "- The dentist is Dr Okafor," citing
    nothing above "- The dentist is Dr Lindqvist [2]": the very claim it dropped as contradicted, now unsourced. Now a
    check compares whole claims: an answer keeping part of one is refused (the page stays as it was, and its person is
    told why), and an answer dropping the whole claim takes every line of it off."""
    from wiki_engine import Page

    scope = f"private/{pod.person.id}"
    body = "- The dentist is Dr Okafor,\n  at the Leeds practice [1]\n- The dentist is Dr Lindqvist [2]"

    def seed() -> None:
        old = pod.memory.add_source("The dentist is Dr Okafor at the Leeds practice.", scope=scope,
                                    ts=time.time() - 86400 * 30)
        new = pod.memory.add_source("Correction: the dentist is now Dr Lindqvist.", scope=scope, ts=time.time())
        pod.memory.write_page(Page("Dentist", scope, "health", body, {1: old, 2: new}), author="agent:writer")

    await pod.in_memory_thread(seed)
    pod.set_role_model("ingest", "fake/reconciler")
    fake_model.script = lambda req: Text(json.dumps({
        "changed": True, "body": "- The dentist is Dr Okafor,\n- The dentist is Dr Lindqvist [2]",
        "dropped": {"1": 2}, "why": "newer"}))
    out = await asyncio.wait_for(pod.memory_nightly(), 60)
    page = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "dentist"))
    assert page.body == body and out["reconciled"] == [], (out, page.body)
    [why] = [r["why"] for r in out["rejected"] if r["title"] == "Dentist"]
    assert "kept part of the claim “The dentist is Dr Okafor, at the Leeds practice [1]”" in why, why

    fake_model.script = lambda req: Text(json.dumps({  # the whole claim dropped, as it was wrapped
        "changed": True, "body": "- The dentist is Dr Lindqvist [2]", "dropped": {"1": 2}, "why": "newer"}))
    out = await asyncio.wait_for(pod.memory_nightly(), 60)
    page = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "dentist"))
    assert page.body == "- The dentist is Dr Lindqvist [2]" and out["reconciled"], (out, page.body)


@pytest.mark.parametrize("answer", [
    "- Sure! The dentist is Dr Lindqvist [2]",
    "Sure! Here is the updated page. The dentist is Dr Lindqvist [2]",
])
async def test_a_check_that_opens_with_a_chat_word_drops_the_contradicted_claim(pod, fake_model, answer) -> None:
    """The check's model answered "- Sure! The dentist is Dr Lindqvist [2]": the ingest writer reads that line as
    its claim without the "Sure!", but the check read it as a reworded line and refused the whole answer, so the page
    kept the old dentist beside the new one, night after night. Now the opener is taken off as ingest takes it off."""
    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: two_dentists(pod, scope))
    pod.set_role_model("ingest", "fake/reconciler")
    fake_model.script = lambda req: Text(json.dumps({"changed": True, "body": answer, "dropped": {"1": 2},
                                                     "why": "newer"}))
    out = await asyncio.wait_for(pod.memory_nightly(), 60)
    page = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "dentist"))
    assert page.body == "- The dentist is Dr Lindqvist [2]" and out["reconciled"], (out, page.body)
    assert not out["rejected"], out["rejected"]
