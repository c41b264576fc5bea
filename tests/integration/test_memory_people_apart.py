"""One person's hung memory model holds no one else's memory run (findings rev85 #3), and a conversation summary a
model wrote is shown to the wiki writer as that, never as the person's own note (rev85 #4).

The hung model is the fake model server on 127.0.0.1 not answering Alice's requests (it holds them open) while it
answers Bob's."""
from __future__ import annotations

import asyncio
import json
import re
import threading
import time

from runtime_host.memory_jobs import SUMMARY_EVERY, SUMMARY_SYSTEM
from tests.helpers.fake_model import FakeModelServer, Text
from tests.integration.test_memory_pod import bob_with_his_own_provider


def _say(pod, who, agent: str, text: str, title: str = "Facts") -> None:
    inst = who.find_agent(agent)[0]
    conv = pod.store.create_conversation(inst.id, title)
    turn = pod.store.create_turn(conv.id, inst.id)
    pod.store.add_message(conv.id, "user", text, turn_id=turn.id)


def _alice_hangs(fake_model, release: threading.Event, asked: list[str]) -> None:
    """Alice's model ("alice-x") holds every request open until ``release``; Bob's keeps every item."""
    def model(req):
        asked.append(req.model)
        if req.model == "alice-x":
            release.wait(60)
        if req.system == SUMMARY_SYSTEM:
            return Text("- Bob rides a green Brompton.")
        n = len([ln for ln in req.last_user.splitlines() if ln.strip() and ln[0].isdigit()])
        return Text(json.dumps([{"n": i + 1, "keep": True, "reason": "a fact"} for i in range(n)]))

    fake_model.script = model


async def _found(who, query: str, seconds: float) -> bool:
    for _ in range(int(seconds * 10)):
        if await who.memory_search(query, mode="keyword"):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_bobs_chat_report_and_own_produce_go_on_while_alices_extraction_model_hangs(pod, fake_model) -> None:
    """The 5-minute run went person by person: with Alice's extraction model hung (120 s a call, 600 s trickling),
    Bob's chat was not kept, his report not sent and his own `memory produce` waited until hers gave up. Now each
    person's part runs beside the others': Bob's chat is kept and his report sent while Alice's model still has not
    answered; his `memory produce` and the next run do not wait for it either (the next run leaves Alice's part,
    still going, to that run)."""
    _, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake")
    pod.set_role_model("extraction", "fake/alice-x")
    as_bob.set_role_model("extraction", "fake/bob-x")
    _say(pod, pod, "helper", "My sister Clara's birthday is on 3 June and she loves orchids.")
    _say(pod, as_bob, "bobs", "My new bike is a green Brompton with a wicker basket.")
    release, asked = threading.Event(), []
    _alice_hangs(fake_model, release, asked)
    reports: list[dict] = []
    pod.subscribe(lambda e: reports.append(e) if e["type"] == "memory.produced" else None)
    run = asyncio.create_task(pod.pod.memory_produce())  # the 5-minute run, for everyone
    try:
        assert await _found(as_bob, "green Brompton bike", 10), "Bob's chat waited on Alice's hung extraction model"
        for _ in range(50):
            if reports:
                break
            await asyncio.sleep(0.1)
        assert [e["person"] for e in reports] == [as_bob.person_id], reports  # his, now; hers not yet
        assert reports[0]["report"]["kept"] == 1 and "error" not in reports[0]["report"]
        assert not run.done()  # Alice's model still has not answered

        _say(pod, as_bob, "bobs", "Bob's allotment is plot 42 at Rosebank gardens.", "Garden")
        mine = await asyncio.wait_for(as_bob.memory_produce(), 10)  # his own `memory produce`
        assert [(r["scope"], r["kept"]) for r in mine] == [(f"private/{as_bob.person_id}", 1)], mine
        assert await as_bob.memory_search("allotment Rosebank", mode="keyword")

        _say(pod, as_bob, "bobs", "Bob's dentist is Dr Silva on Tuesdays.", "Dentist")
        alice_asked = asked.count("alice-x")
        again = await asyncio.wait_for(pod.pod.memory_produce(folders=False), 10)  # the next 5-minute run
        assert [r["scope"] for r in again] == [f"private/{as_bob.person_id}"], again  # Alice's part still going
        assert asked.count("alice-x") == alice_asked  # her items were not asked of her model a second time
        assert await as_bob.memory_search("dentist Silva Tuesdays", mode="keyword")
    finally:
        release.set()
        done = await asyncio.wait_for(run, 60)
    assert {r["scope"]: r["kept"] for r in done}[f"private/{pod.person.id}"] == 1
    assert await pod.memory_search("Clara orchids", mode="keyword")


def _keep_all(req):
    """A model that keeps every item it is shown (and summarises, when asked, in one line)."""
    if req.system == SUMMARY_SYSTEM:
        return Text("- Bob rides a green Brompton.")
    n = len([ln for ln in req.last_user.splitlines() if ln.strip() and ln[0].isdigit()])
    return Text(json.dumps([{"n": i + 1, "keep": True, "reason": "a fact"} for i in range(n)]))


def _bob_on_his_own_server(pod, bobs_server: FakeModelServer):
    """Bob, unlocked, whose provider is a model server of his own; Alice's extraction model is "alice-x" on hers."""
    pod.add_person("Bob")
    as_bob = pod.pod.unlock("Bob")
    as_bob.add_provider("fake", kind="openai-compatible", base_url=bobs_server.base_url, model="bob-x")
    as_bob.add_agent("bobs", provider="fake")
    pod.set_role_model("extraction", "fake/alice-x")
    as_bob.set_role_model("extraction", "fake/bob-x")
    return as_bob


def _alice_holds(fake_model) -> tuple[threading.Event, threading.Event]:
    """Alice's model holds every request until released: (asked, release)."""
    asked, release = threading.Event(), threading.Event()

    def alices(req):
        asked.set()
        release.wait(60)
        return _keep_all(req)

    fake_model.script = alices
    return asked, release


def _bob_and_alice_said_one_thing_each(pod, bobs_server: FakeModelServer):
    """Bob on his own model server (see _bob_on_his_own_server); Alice and Bob each told their agent one thing."""
    as_bob = _bob_on_his_own_server(pod, bobs_server)
    _say(pod, pod, "helper", "My sister Clara's birthday is on 3 June and she loves orchids.")
    _say(pod, as_bob, "bobs", "My new bike is a green Brompton with a wicker basket.")
    return as_bob


async def test_bobs_memory_produce_returns_with_his_part_while_alices_model_hangs_in_it(pod, fake_model) -> None:
    """Bob's `memory produce`, with no run stuck on Alice's model yet, ran her part too and waited for all of it: her
    extraction model hung, and his command did not return (his part long done) until hers answered. Now it returns
    with his report once his part ends; hers goes on in the background and reports to her; his next `memory produce`
    asks her model nothing again; and her own `memory produce` waits for that part of hers."""
    asked, release = _alice_holds(fake_model)
    with FakeModelServer(_keep_all) as bobs_server:
        as_bob = _bob_and_alice_said_one_thing_each(pod, bobs_server)
        reports: list[dict] = []
        pod.subscribe(lambda e: reports.append(e) if e["type"] == "memory.produced" else None)
        hers = None
        try:
            mine = await asyncio.wait_for(as_bob.memory_produce(), 20)  # her model holds its answer for 60 s
            assert [(r["scope"], r["kept"]) for r in mine] == [(f"private/{as_bob.person_id}", 1)], mine
            assert asked.is_set() and not release.is_set()  # her part started, and her model still has not answered
            assert [e["person"] for e in reports] == [as_bob.person_id], reports  # hers not yet
            assert pod.pod.memory_host.job_lock(f"produce:{pod.person.id}").busy()
            assert await as_bob.memory_search("green Brompton bike", mode="keyword")

            _say(pod, as_bob, "bobs", "Bob's allotment is plot 42 at Rosebank gardens.", "Garden")
            sent = len(fake_model.requests)
            again = await asyncio.wait_for(as_bob.memory_produce(), 20)  # his next `memory produce`
            assert [(r["scope"], r["kept"]) for r in again] == [(f"private/{as_bob.person_id}", 1)], again
            assert len(fake_model.requests) == sent  # Alice's model was not asked a second time
            assert await as_bob.memory_search("allotment Rosebank", mode="keyword")

            hers = asyncio.create_task(pod.memory_produce())  # her own `memory produce` waits for her part
            await asyncio.sleep(1)
            assert not hers.done()
        finally:
            release.set()
        assert await asyncio.wait_for(_heard(reports, pod.person.id), 30)  # her report, to her
        done = await asyncio.wait_for(hers, 30)
        assert [r["scope"] for r in done] == [f"private/{pod.person.id}"], done
        assert await pod.memory_search("Clara orchids", mode="keyword")
        assert not pod.pod.memory_host.job_lock(f"produce:{pod.person.id}").busy()


async def _heard(reports: list[dict], person: str) -> dict:
    while True:
        told = [e for e in reports if e["person"] == person]
        if told:
            return told[0]["report"]
        await asyncio.sleep(0.1)


async def test_bobs_memory_produce_in_a_terminal_returns_while_alices_model_hangs(pod, home, fake_model) -> None:
    """`memory produce` in a terminal as Bob printed nothing until Alice's hung extraction model answered. Now it prints
    his report (his alone) and exits once his part is done; hers, cut short as the command exits, is read again by the
    next run, nothing of it lost."""
    from tests.integration.test_cli import cli

    asked, release = _alice_holds(fake_model)
    with FakeModelServer(_keep_all) as bobs_server:
        _bob_and_alice_said_one_thing_each(pod, bobs_server)
        try:
            t0 = time.monotonic()
            r = await asyncio.to_thread(cli, home, "--person", "Bob", "memory", "produce", timeout=50)
            waited = time.monotonic() - t0
            assert r.returncode == 0, r.stderr[-2000:]
            assert r.stderr == "", r.stderr[-2000:]  # hers cut short quietly: nothing of it to him
            assert [(x["scope"], x["kept"]) for x in json.loads(r.stdout)] == [("Me", 1)], r.stdout
            assert asked.is_set() and waited < 30, waited  # her model was asked, and not waited for
        finally:
            release.set()
    fake_model.script = _keep_all
    [rep] = await asyncio.wait_for(pod.memory_produce(), 30)  # the next run: her chat is read again
    assert rep["kept"] == 1 and await pod.memory_search("Clara orchids", mode="keyword")


async def test_bobs_summary_is_written_while_alices_summary_model_hangs(pod, fake_model) -> None:
    """Summaries went person by person too: Alice's hung model held Bob's conversation summary. Now his is written
    while hers has not answered."""
    _, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake")
    pod.set_role_model("extraction", "fake/alice-x")
    as_bob.set_role_model("extraction", "fake/bob-x")
    for who, agent in ((pod, "helper"), (as_bob, "bobs")):
        inst = who.find_agent(agent)[0]
        conv = pod.store.create_conversation(inst.id, "Bikes")
        for i in range(SUMMARY_EVERY // 2):
            turn = pod.store.create_turn(conv.id, inst.id)
            pod.store.add_message(conv.id, "user", f"bike talk {i}", turn_id=turn.id)
            pod.store.add_message(conv.id, "assistant", "Noted.", turn_id=turn.id)
    release, asked = threading.Event(), []
    _alice_hangs(fake_model, release, asked)
    run = asyncio.create_task(pod.pod.memory_summarize())
    try:
        assert await _found(as_bob, "green Brompton", 10), "Bob's summary waited on Alice's hung model"
        assert not run.done()
    finally:
        release.set()
        made = await asyncio.wait_for(run, 60)
    assert made == {f"private/{pod.person.id}": 1, f"private/{as_bob.person_id}": 1}


def _mail_chat(pod, agent_says: str) -> None:
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Mail today")
    for i in range(SUMMARY_EVERY // 2):
        turn = pod.store.create_turn(conv.id, inst.id)
        pod.store.add_message(conv.id, "user", "I booked the dentist for Tuesday at nine." if i == 0 else f"ok {i}",
                              turn_id=turn.id)
        pod.store.add_message(conv.id, "assistant", agent_says if i == 0 else "Noted.", turn_id=turn.id)


def _writer_sees(fake_model, summary: str | None) -> list[str]:
    """The wiki writer's prompts (it writes nothing); the summary model answers ``summary``, and the extraction
    model skips every chat item (so the summary is the only source)."""
    prompts: list[str] = []

    def model(req):
        if req.system == SUMMARY_SYSTEM:
            return Text(summary or "")
        if "Sources:" in req.last_user:
            prompts.append(req.last_user)
            return Text("[]")
        n = len([ln for ln in req.last_user.splitlines() if ln.strip() and ln[0].isdigit()])
        return Text(json.dumps([{"n": i + 1, "keep": False, "reason": "chatter"} for i in range(n)]))

    fake_model.script = model
    return prompts


async def test_the_writer_is_told_a_summary_is_a_models_retelling_not_the_persons_note(pod, fake_model) -> None:
    """A summary retells the agent's words too (what it read in a stranger's mail): the writer was told it was the
    "note of Alice's", so "- Moving to Porto in June" (Ana's news, relayed) read as Alice's own. Now it is labelled
    as a model's summary of her chat with the agent, and the writer's instructions say what that means."""
    from runtime_host.memory_jobs import SYNTH_SYSTEM

    pod.rename("Alice")
    _mail_chat(pod, "Ana Quintero wrote that she is moving to Porto in June.")
    pod.set_role_model("extraction", "fake/x")
    pod.set_role_model("ingest", "fake/writer")
    prompts = _writer_sees(fake_model, "- Moving to Porto in June.")
    await pod.memory_produce()
    await pod.memory_ingest()
    (line,) = [ln for p in prompts for ln in p.splitlines() if "Summary of the conversation" in ln]
    name, agent = "Alice", pod.find_agent("helper")[0].name
    said = f"; summary by a model of {name}'s chat with the agent {agent}, not {name}'s own words, "
    assert re.search(re.escape(said) + r"\w+day \d+ \w+ \d{4}\): ", line), line  # and the day of its last line
    assert f"note of {name}'s" not in line, line
    assert "summary by a model of a chat" in SYNTH_SYSTEM.lower()


async def test_a_summary_hearths_rules_made_of_the_persons_own_lines_stays_their_note(pod, fake_model) -> None:
    """With no capable extraction model, the summary is the person's own statements the rules keep: it stays
    labelled as their note (of "the person who set Hearth up" while they have no name)."""
    _mail_chat(pod, "Ana Quintero wrote that she is moving to Porto in June.")
    pod.set_role_model("ingest", "fake/writer")
    prompts = _writer_sees(fake_model, None)
    await pod.memory_produce()
    await pod.memory_ingest()
    (line,) = [ln for p in prompts for ln in p.splitlines() if "Summary of the conversation" in ln]
    assert re.search(r"; note of the person who set Hearth up, \w+day \d+ \w+ \d{4}\): ", line), line
