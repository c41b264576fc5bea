"""Schedules through the Pod and the CLI, with a given clock: runs once, catches up once, ledger."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from tests.helpers.fake_model import Text, ToolCalls
from tests.integration.test_cli import cli, setup_agent


async def test_a_due_schedule_runs_once_and_is_in_the_ledger(pod, script, fake_model) -> None:
    script([Text("morning briefing: 3 meetings")], repeat_last=True)
    info = pod.add_schedule("helper", "0 9 * * *", "Give me my morning briefing", tz="Europe/Berlin")
    assert info["description"].startswith("every day at 09:00")
    from runtime_host import schedule

    # created "now": make its last check yesterday so today's 09:00 Berlin is due
    with pod.store.engine.begin() as c:
        from sqlalchemy import text

        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"),
                  {"t": datetime(2026, 12, 1, 12, 0, tzinfo=UTC).timestamp()})
    now = datetime(2026, 12, 2, 8, 0, 30, tzinfo=UTC)  # 09:00:30 in Berlin
    out = await pod.tick(now)
    assert len(out["started"]) == 1
    run = next(iter(pod.turn_driver.active.values()))
    result = await run.future
    assert result.ok and result.text == "morning briefing: 3 meetings"
    again = await pod.tick(now)
    assert again["started"] == []
    ledger = pod.schedule_ledger()
    assert [(r["outcome"], r["agent"]) for r in ledger] == [("ran", "helper")]
    assert schedule.list_runs(pod.store.engine)[0].turn_id == result.turn_id


async def test_paused_schedules_do_not_run(pod, script) -> None:
    pod.add_schedule("helper", "* * * * *", "ping", tz="UTC")
    pod.set_schedules_paused(True)
    out = await pod.tick(datetime(2030, 1, 1, 0, 5, tzinfo=UTC))
    assert out["started"] == [] and pod.schedule_ledger()[0]["outcome"] == "skipped"


def test_cli_schedule_add_list_tick(home, fake_model, script) -> None:
    setup_agent(home, fake_model.base_url)
    script([Text("done by the tick")], repeat_last=True)
    bad = cli(home, "schedule", "add", "helper", "61 * * * *", "x")
    assert bad.returncode == 2 and "minute 61 is out of range 0-59" in bad.stderr
    ok = cli(home, "schedule", "add", "helper", "*/15 * * * *", "check the inbox", "--tz", "UTC", "--catch-up", "once")
    assert ok.returncode == 0, ok.stderr
    listed = json.loads(cli(home, "schedule", "list", "--json").stdout)
    assert listed[0]["cron"] == "*/15 * * * *" and len(listed[0]["next_runs"]) == 3
    # three hours later (the machine slept): one catch-up run, not twelve
    later = datetime.fromtimestamp(listed[0]["created_at"] + 3 * 3600, UTC).isoformat()
    t = cli(home, "tick", "--now", later)
    assert t.returncode == 0, t.stderr
    started = json.loads(t.stdout)["started"]
    assert [r["schedule_id"] for r in started].count(listed[0]["id"]) == 1
    # the memory timers run on the same scheduler and ledger

    assert {r["schedule_id"] for r in started} - {listed[0]["id"]}
    runs = json.loads(cli(home, "runs", "--json").stdout)
    sched = [r for r in runs if r.get("ledger")]
    assert [r["outcome"] for r in sched].count("ran") == 1
    assert all(r["outcome"] in ("ran", "missed") for r in sched)
    assert [r for r in runs if not r.get("ledger") and r["origin"] == "schedule"][0]["result"] == "done by the tick"
    assert cli(home, "tick", "--now", "2026-01-01T00:00:00").returncode == 2
    # deleted, it is listed no more; its past runs stay in the ledger
    gone = cli(home, "schedule", "delete", listed[0]["id"])
    assert gone.returncode == 0 and json.loads(cli(home, "schedule", "list", "--json").stdout) == []
    kept = [r for r in json.loads(cli(home, "runs", "--json").stdout) if r.get("ledger")]
    assert [(r["id"], r["outcome"]) for r in kept] == [(r["id"], r["outcome"]) for r in sched]
    assert {r["deleted"] for r in kept} == {True}


async def test_one_persons_slow_memory_model_holds_neither_anothers_schedule_nor_the_next_tick(pod, fake_model) -> None:
    """The 5-minute memory run went first in the scheduler's tick and was waited for: while Alice's extraction
    model thought (a hung server: up to 120 s a call), Bob's own schedule due that minute did not start. Now it
    starts at once; the scheduler's next tick starts the memory run beside the first, leaving Alice's part, still
    going, to it (her model is not asked twice; the others' chat goes on), and the first is recorded as ran when
    it ends."""
    import asyncio
    import threading

    from sqlalchemy import text

    from runtime_host import schedule
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    _, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake")
    as_bob.add_schedule("bobs", "*/5 * * * *", "Check the weather", tz="UTC")
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Notes")
    turn = pod.store.create_turn(conv.id, inst.id)
    pod.store.add_message(conv.id, "user", "My sister Clara's birthday is on 3 June and she loves orchids.",
                          turn_id=turn.id)
    pod.set_role_model("extraction", "fake/alice-slow")
    asked, go = threading.Event(), threading.Event()

    def model(req):
        if req.model == "alice-slow":
            asked.set()
            go.wait(60)  # Alice's model thinks for a long time
            n = len([ln for ln in req.last_user.splitlines() if ln.strip()])
            return Text(json.dumps([{"n": i + 1, "keep": True, "reason": "fact"} for i in range(n)]))
        return Text("Sunny.")

    fake_model.script = model
    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:
        t = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC).timestamp()
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"), {"t": t})
        # the memory timers were made when Hearth first started, before Bob added his schedule: they come first
        c.execute(text("UPDATE schedules SET created_at = :t WHERE person_id = 'pod'"), {"t": t - 86400})
    bobs_run = asyncio.Event()
    pod.subscribe(lambda e: bobs_run.set() if e.get("origin") == "schedule" and e["type"] == "turn.finished" else None)
    tick = asyncio.create_task(pod.tick(datetime(2030, 1, 1, 0, 5, 10, tzinfo=UTC)))
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        try:
            await asyncio.wait_for(bobs_run.wait(), 15)
        except TimeoutError:
            raise AssertionError("Bob's scheduled run waited on Alice's memory model") from None
        asked.clear()
        await asyncio.wait_for(pod.schedule_host.tick(datetime(2030, 1, 1, 0, 10, 10, tzinfo=UTC)), 15)
        runs = [r for r in schedule.list_runs(pod.store.engine) if (r.turn_id or "").startswith("memory.producer")
                or "memory.producer" in (r.error or "")]
        assert sorted(r.outcome for r in runs) == ["ran", "running"], [(r.outcome, r.error) for r in runs]
        assert not asked.is_set()  # Alice's part is the first run's: her model was not asked again
    finally:
        go.set()
        await asyncio.wait_for(tick, 60)
        await asyncio.wait_for(bobs_run.wait(), 60)  # Bob's run has ended before the Pod closes
    outcomes = {(r.turn_id or "").split(":")[0]: r.outcome for r in schedule.list_runs(pod.store.engine) if r.turn_id}
    assert outcomes.get("memory.producer") == "ran"
    assert await pod.memory_search("Clara orchids", mode="keyword")


async def _alice_hangs_beside_bob(pod, bob_model: str):
    """Alice's ingest model ("alice-slow") and Bob's (``bob_model``), and a note each. Gives their scopes, Bob's
    PersonPod, and two events for _alice_hangs: her model was asked, her model may answer."""
    import threading

    from tests.integration.test_memory_pod import bob_with_his_own_provider

    ascope = f"private/{pod.person_id}"
    await pod.in_memory_thread(lambda: pod.memory.add_source("Alice's boiler code is 7731.", scope=ascope))
    pod.set_role_model("ingest", "fake/alice-slow")
    _bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.set_role_model("ingest", f"fake/{bob_model}")
    bscope = f"private/{as_bob.person.id}"
    await pod.in_memory_thread(lambda: pod.memory.add_source("Bob's bike lock code is 4412.", scope=bscope))
    return ascope, bscope, as_bob, threading.Event(), threading.Event()


def _alice_hangs(req, asked, go):
    """Alice's model's answer once it may answer (up to 100 s), or None for Bob's."""
    if req.model != "alice-slow":
        return None
    asked.set()
    go.wait(100)
    return Text("[]")


async def test_the_next_timed_ingest_writes_bobs_new_note_while_alices_model_still_hangs(pod, fake_model) -> None:
    """Alice's ingest model still had not answered when the next 30-minute ingest was due: the scheduler did not
    start it for anyone ("the previous memory.ingest run was still going"), so Bob's note added since waited another
    half hour or more. Now that tick writes Bob's new note at once and skips Alice alone, whose writer is still
    going; her first run is recorded as ran when her model answers."""
    import asyncio

    from runtime_host import schedule

    ascope, bscope, as_bob, asked, go = await _alice_hangs_beside_bob(pod, "fake-1")

    def model(req):
        if (hung := _alice_hangs(req, asked, go)) is not None:  # her model has not answered by the next half hour
            return hung
        label = re.findall(r"\b(S\d+)\b", req.last_user)[0]
        title = "Bike" if "4412" in req.last_user else "Shed"
        return Text(json.dumps([{"title": title, "scope": bscope, "category": "things",
                                 "body": "- noted [1]", "citations": {"1": label}}]))

    fake_model.script = model
    told: list[dict] = []
    pod.subscribe(lambda ev: told.append(ev) if ev["type"] in ("memory.ingested", "memory.failed") else None)
    _ingest_alone_due_at_half_past(pod)
    first = asyncio.create_task(pod.tick(datetime(2030, 1, 1, 0, 30, 10, tzinfo=UTC)))
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        for _ in range(200):
            if as_bob.memory.read_page(bscope, "bike") is not None:
                break
            await asyncio.sleep(0.1)
        assert as_bob.memory.read_page(bscope, "bike") is not None
        await pod.in_memory_thread(lambda: pod.memory.add_source("Bob's shed key is under the blue pot.", scope=bscope))
        await pod.schedule_host.tick(datetime(2030, 1, 1, 1, 0, 10, tzinfo=UTC), wait=False)
        def bobs_ingests() -> int:
            return len([ev for ev in told if ev["type"] == "memory.ingested" and ev["person"] == as_bob.person.id])

        for _ in range(150):  # the page is written, then the run says so
            if as_bob.memory.read_page(bscope, "shed") is not None and bobs_ingests() >= 2:
                break
            await asyncio.sleep(0.1)
        runs = [(r.outcome, r.error) for r in schedule.list_runs(pod.store.engine)
                if (r.turn_id or "").startswith("memory.ingest") or "memory.ingest" in (r.error or "")]
        assert as_bob.memory.read_page(bscope, "shed") is not None, runs
        assert bobs_ingests() == 2
        assert [ev for ev in told if ev["type"] == "memory.failed"] == []  # a slow model is no failure
        assert not first.done()  # Alice's first run still waits on her model, once (not asked twice)
        assert [o for o, _ in runs] == ["ran", "running"], runs  # newest first: this half hour's, the first's
    finally:
        go.set()
        await asyncio.wait_for(first, 60)
    outcomes = [r.outcome for r in schedule.list_runs(pod.store.engine) if (r.turn_id or "").startswith("memory.ingest")]
    assert outcomes == ["ran", "ran"], outcomes


async def test_a_failed_timed_memory_run_keeps_the_persons_words_out_of_the_ledger_and_the_log(pod, fake_model) -> None:
    """The 5-minute run's extraction model answered in prose quoting the person's chat: the failure ("did not answer
    with JSON (it began 'Sure! 1. My locker word is …')") went into the schedule ledger in pod.db and into
    logs/hearth.log, which everyone at this computer shares and the crash dialog shows, and Delete and forget left
    both. Now they say what failed; the person alone is told the quote."""
    import asyncio
    import logging

    from sqlalchemy import text

    from runtime_host import schedule
    from runtime_host.logs import remove_logging, setup_logging
    from tests.integration.test_memory_pod import files_holding

    setup_logging(pod.home)  # as the window and the CLI do
    try:
        def model(req):
            if "json" in (req.system or "").lower():  # a chatty extraction model quoting what it read
                said = next(ln for ln in req.last_user.splitlines() if "heronword" in ln)
                return Text("Sure! " + said[said.index("My locker"):][:200])
            return Text("Noted.")

        fake_model.script = model
        r = await asyncio.wait_for(pod.chat("helper", "My locker word is heronword, keep it safe."), 30)
        assert r.ok
        pod.set_role_model("extraction", "fake/fake-1")
        told = []
        pod.subscribe(lambda ev: told.append(ev) if ev.get("type") == "memory.failed" else None)
        pod.ensure_memory_timers()
        with pod.store.engine.begin() as c:
            t = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC).timestamp()
            c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"), {"t": t})
        await pod.tick(datetime(2030, 1, 1, 0, 5, 10, tzinfo=UTC))
        [failed] = [run for run in schedule.list_runs(pod.store.engine) if run.outcome == "failed"]
        assert "did not answer with JSON" in failed.error  # the ledger still says what went wrong
        [ev] = told  # the person is told what their model said, to fix it
        assert ev["person"] == pod.person_id and "heronword" in ev["error"]
        await pod.delete_conversation_and_forget(r.conversation_id)
        for h in logging.getLogger().handlers:
            h.flush()
        assert files_holding(pod.home, "heronword") == []  # a deleted conversation leaves its words in no file
    finally:
        remove_logging()


async def test_a_nightly_pass_whose_model_fails_tells_its_person_and_not_the_ledger_what_it_said(
        pod, fake_model, monkeypatch) -> None:
    """At 03:00 the ingest model answers every rewrite and every reconciliation in prose quoting the page: the ledger
    said "ran" and nobody heard of it. Now the run is failed in the ledger (saying what failed, quoting nothing) and
    the person is told, with what their model said."""
    from sqlalchemy import text

    from runtime_host import schedule
    from wiki_engine import Page

    scope = f"private/{pod.person_id}"

    def pages() -> None:
        keep = pod.memory.add_source("The dentist is Dr Heronword.", scope=scope)
        gone = pod.memory.add_source("The check-up is in March.", scope=scope)
        pod.memory.write_page(Page("Dentist", scope, "health", "- The dentist is Dr Heronword [1]\n- Check-up in March [2]",
                                   {1: keep, 2: gone}), author="agent:wiki-writer")
        pod.memory.delete_source(gone)  # stale: asked to be rewritten
        a = pod.memory.add_source("The cat is called Felix.", scope=scope)
        b = pod.memory.add_source("The cat is called Tom.", scope=scope)
        pod.memory.write_page(Page("Cat", scope, "pets", "- The cat is called Felix [1]\n- The cat is called Tom [2]",
                                   {1: a, 2: b}), author="agent:wiki-writer")  # two sources: asked to be reconciled

    await pod.in_memory_thread(pages)
    pod.set_role_model("ingest", "fake/fake-1")
    def chatty(req):  # quotes the line of the page it read
        line = next(ln for ln in req.last_user.splitlines() if "Heronword" in ln or "Felix" in ln)
        return Text("Sure! " + re.sub(r"[\[\]{}]", " ", line))

    fake_model.script = chatty
    told = []
    pod.subscribe(lambda ev: told.append(ev) if ev.get("type") == "memory.failed" else None)
    monkeypatch.setattr(schedule, "local_zone", lambda: "UTC")  # the memory timers keep the machine's clock
    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:
        t = datetime(2030, 1, 1, 2, 59, 30, tzinfo=UTC).timestamp()
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"), {"t": t})
        c.execute(text("UPDATE schedules SET paused = 1 WHERE kind != 'memory.nightly'"))
    await pod.tick(datetime(2030, 1, 1, 3, 0, 10, tzinfo=UTC))
    [run] = [r for r in schedule.list_runs(pod.store.engine) if (r.turn_id or "").startswith("memory.nightly")]
    assert run.outcome == "failed" and "did not answer with JSON" in run.error, (run.outcome, run.error)
    assert "Heronword" not in run.error and "Felix" not in run.error
    [ev] = [ev for ev in told if ev["job"] == "memory.nightly"]
    assert ev["person"] == pod.person_id and "Heronword" in ev["error"] and "Felix" in ev["error"]
    assert await pod.in_memory_thread(pod.memory.stale_pages) == [f"page:{scope}/dentist"]  # asked again next night


async def _two_writers_and_a_lost_note(pod, fake_model, lost: str):
    """Alice and Bob each with an ingest model of their own and a note each; a second note of ``lost``'s ("Alice" or
    "Bob") whose file is then lost (a backup restored in part); each writer makes one page of its scope. Gives Bob's
    PersonPod, Alice's and Bob's scopes and the lost file's path."""
    from tests.integration.test_memory_pod import bob_with_his_own_provider
    from wiki_engine import Scope

    _bob, as_bob = bob_with_his_own_provider(pod)
    ascope, bscope = f"private/{pod.person_id}", f"private/{as_bob.person.id}"
    pod.set_role_model("ingest", "fake/alice-model")
    as_bob.set_role_model("ingest", "fake/bob-model")
    owner = ascope if lost == "Alice" else bscope

    def seed() -> object:
        pod.memory.add_source("Alice's dentist is Dr Alvarez on Rua Augusta.", scope=ascope)
        pod.memory.add_source("Bob's allotment is plot 42 at Rosebank.", scope=bscope)
        lock = pod.memory.add_source(f"{lost}'s bike lock code is 3090.", scope=owner)
        return pod.memory.sources.path_for(Scope.parse(owner), pod.memory.get_source(lock).sha)

    path = await pod.in_memory_thread(seed)
    path.chmod(0o644)
    path.unlink()
    titles = {ascope: "Dentist", bscope: "Allotment"}

    def writer(req):
        scope = re.search(r"^- ([a-z]+(?:/\w+)*): ", req.body["messages"][-1]["content"], re.M).group(1)
        return Text(json.dumps([{"title": titles[scope], "scope": scope, "category": "notes",
                                 "body": "- What was said [1]", "citations": {"1": "S1"}}]))

    fake_model.script = writer
    return as_bob, ascope, bscope, path


def _ingest_alone_due_at_half_past(pod) -> None:
    """Memory's timers made, the 30-minute ingest alone left running, next due at 00:30 on 1 January 2030."""
    from sqlalchemy import text

    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"),
                  {"t": datetime(2030, 1, 1, 0, 20, tzinfo=UTC).timestamp()})
        c.execute(text("UPDATE schedules SET paused = 1 WHERE kind != 'memory.ingest'"))


async def test_a_timed_ingest_tells_a_lost_note_file_to_its_person_alone_and_once(pod, fake_model) -> None:
    """One of Bob's note files was lost (a backup restored in part). "memory ingest" and "Ingest now" named it, but
    the ingest that runs by itself every 30 minutes said nothing: the note waited in the inbox for good and Bob never
    learned why. Now the timed ingest tells Bob (the file, and what to do), Alice hears nothing of it, and the next
    runs do not tell him again."""
    import asyncio

    from wiki_engine.sources import FIX

    as_bob, _alice_scope, bob_scope, path = await _two_writers_and_a_lost_note(pod, fake_model, lost="Bob")
    told = []
    pod.subscribe(lambda ev: told.append(ev))
    _ingest_alone_due_at_half_past(pod)
    await asyncio.wait_for(pod.tick(datetime(2030, 1, 1, 0, 30, 10, tzinfo=UTC)), 60)
    [ev] = [ev for ev in told if ev.get("type") == "memory.failed"]
    assert ev["person"] == as_bob.person.id and ev["job"] == "memory.ingest", ev
    assert str(path) in ev["error"] and "is missing from disk" in ev["error"] and FIX in ev["error"], ev["error"]
    assert await pod.in_memory_thread(pod.memory.inbox) != []  # the note waits; Bob's other note became a page
    assert await pod.in_memory_thread(lambda: pod.memory.read_page(bob_scope, "allotment")) is not None
    # Alice (whose window shows her own events and those naming no one) hears nothing of Bob's file
    assert not [e for e in told if e.get("person") in (None, pod.person_id) and str(path) in json.dumps(e)]
    told.clear()
    await asyncio.wait_for(pod.tick(datetime(2030, 1, 1, 1, 0, 10, tzinfo=UTC)), 60)  # the next half hour
    assert [e for e in told if e.get("type") == "memory.failed"] == []  # told once, not every 30 minutes
    from runtime_host import schedule

    runs = [r for r in schedule.list_runs(pod.store.engine) if (r.turn_id or "").startswith("memory.ingest")]
    assert [r.outcome for r in runs] == ["ran", "ran"], runs  # it did run again, and read the note again


async def test_a_timed_ingest_tells_bob_his_models_failure_while_alices_model_still_hangs(pod, fake_model) -> None:
    """Alice's ingest model hangs, Bob's answers 500. The 30-minute run told Bob of his model's failure only once
    every writer had ended, that is once Alice's hung model gave up (up to 600 s). Now Bob is told as soon as his
    writer fails, Alice hears nothing of it, and he is not told a second time when the run ends (the ledger says it
    failed)."""
    import asyncio

    from runtime_host import schedule
    from tests.helpers.fake_model import Error

    ascope, bscope, as_bob, asked, go = await _alice_hangs_beside_bob(pod, "bob-broken")

    def model(req):
        return _alice_hangs(req, asked, go) or Error(500, "bob-model-overloaded")

    fake_model.script = model
    told: list[dict] = []
    bob_told = asyncio.Event()

    def listen(ev: dict) -> None:
        if ev["type"] == "memory.failed":
            told.append(ev)
            if ev["person"] == as_bob.person.id:
                bob_told.set()

    pod.subscribe(listen)
    _ingest_alone_due_at_half_past(pod)
    tick = asyncio.create_task(pod.tick(datetime(2030, 1, 1, 0, 30, 10, tzinfo=UTC)))
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        try:
            await asyncio.wait_for(bob_told.wait(), 60)
        except TimeoutError:
            raise AssertionError("Bob was not told of his model's failure while Alice's model hung") from None
        assert not tick.done()  # Alice's model has not answered yet
        [ev] = told
        assert ev["job"] == "memory.ingest" and "bob-model-overloaded" in ev["error"], ev
    finally:
        go.set()
        await asyncio.wait_for(tick, 60)
    assert [ev["person"] for ev in told] == [as_bob.person.id], told  # once; Alice hears nothing of his failure
    [run] = [r for r in schedule.list_runs(pod.store.engine) if (r.turn_id or "").startswith("memory.ingest")]
    assert run.outcome == "failed" and "bob-model-overloaded" not in (run.error or ""), (run.outcome, run.error)
    assert await pod.in_memory_thread(lambda: pod.memory.inbox_count({bscope})) == 1  # his note waits for his model


async def test_another_process_writing_bobs_pages_holds_back_neither_alices_report_nor_her_lost_note(
        pod, fake_model) -> None:
    """Another Hearth process (Bob's `memory ingest` in a terminal) writes Bob's pages when the 30-minute ingest
    runs. The run's report said the wiki was busy for everyone, and so Alice was not told of her lost note file
    until a later run. Now only Bob's part is skipped: Alice's pages are written and she is told of her lost file at
    once (and once); Bob's notes wait for the next run, which writes them."""
    import asyncio

    from wiki_engine.lease import Lease

    as_bob, ascope, bscope, path = await _two_writers_and_a_lost_note(pod, fake_model, lost="Alice")
    told: list[dict] = []
    pod.subscribe(lambda ev: told.append(ev) if ev.get("type") == "memory.failed" else None)
    _ingest_alone_due_at_half_past(pod)
    other = Lease(pod.memory.catalog, f"ingest:{bscope}")  # held the way another live process holds it
    await pod.in_memory_thread(other.acquire)
    try:
        out = await asyncio.wait_for(pod.pod.memory_ingest(), 60)  # the timer's run, its report as the scheduler gets it
        assert not out.get("message") and out["busy"] == [as_bob.person.id], out
        assert out["written"] == [f"page:{ascope}/dentist"], out
        await asyncio.wait_for(pod.tick(datetime(2030, 1, 1, 0, 30, 10, tzinfo=UTC)), 60)
        [ev] = told
        assert ev["person"] == pod.person_id and str(path) in ev["error"], ev
    finally:
        await pod.in_memory_thread(other.release)
    told.clear()
    await asyncio.wait_for(pod.tick(datetime(2030, 1, 1, 1, 0, 10, tzinfo=UTC)), 60)
    assert as_bob.memory.read_page(bscope, "allotment") is not None
    assert told == []  # Alice was told of her file once


@pytest.mark.parametrize("tz", ["America/Los_Angeles", "Asia/Tokyo"])
async def test_the_nightly_pass_runs_at_night_on_this_machines_clock(pod, monkeypatch, tz) -> None:
    """The memory timers were made on UTC: the "nightly" pass (rewrites, merges, a model call per page) ran at 19:00
    in Los Angeles and at noon in Tokyo. A Pod made before keeps its timer rows (when they last ran too), now on the
    machine's clock."""
    import time
    from zoneinfo import ZoneInfo

    from sqlalchemy import text

    from runtime_host import memory_jobs, schedule

    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:  # as an earlier Hearth made them
        c.execute(text("UPDATE schedules SET tz = 'UTC' WHERE person_id = 'pod'"))
    before = {r.id: r.last_checked for r in schedule.list_schedules(pod.store.engine, "pod")}
    monkeypatch.setenv("TZ", tz)
    time.tzset()
    schedule.local_zone.cache_clear()
    try:
        now = datetime(2025, 1, 15, 12, 0, tzinfo=UTC)
        local = memory_jobs.next_run(pod, "memory.nightly", now=now).astimezone(ZoneInfo(tz))
        assert 0 <= local.hour < 6, f"on a machine in {tz} the nightly pass runs at {local:%H:%M} local time"
        rows = schedule.list_schedules(pod.store.engine, "pod")
        assert {r.id: r.last_checked for r in rows} == before and {r.tz for r in rows} == {tz}
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
        schedule.local_zone.cache_clear()


async def test_memory_taken_from_alices_agent_mid_run_stops_its_remember_at_once_and_not_bobs(pod, fake_model) -> None:
    """Alice sees her agent's 07:00 run (reading her inbox) start; she opens Edit agent and takes the Memory toolkit
    away while it waits on the model. Its worker was bound with Memory allowed, and the Pod used to carry out the
    run's next `remember` (it checked only that it had such a tool), so the fact landed in her memory after she said
    the agent may not write there. Now the model is told no, she finds the refusal in Activity, and Bob's agent,
    whose Memory no one took away, remembers in the same minute."""
    import asyncio
    import threading

    from sqlalchemy import text

    from tests.integration.test_memory_pod import bob_with_his_own_provider

    bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake", system="You help Bob.", toolkits=["memory", "clock"])
    pod.edit_agent("helper", toolkits=["memory", "clock"])
    asked, go = threading.Event(), threading.Event()
    told: dict[str, str] = {}

    def model(req):
        who = "bob" if "Bob's inbox" in req.last_user else "alice"
        if not req.tool_results:
            if who == "alice":
                asked.set()
                go.wait(30)  # her model thinks; meanwhile she takes Memory away
            return ToolCalls([("remember", {"fact": f"The {who} landlord's company is Mallory Ltd.", "scope": "person"})])
        told[who] = req.tool_results[-1]
        return Text("Done.")

    fake_model.script = model
    pod.add_schedule("helper", "0 7 * * *", "Check my inbox and keep what matters", tz="UTC", name="Inbox")
    as_bob.add_schedule("bobs", "0 7 * * *", "Check Bob's inbox and keep what matters", tz="UTC", name="Inbox")
    with pod.store.engine.begin() as c:
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t WHERE person_id != 'pod'"),
                  {"t": datetime(2030, 1, 1, 6, 0, tzinfo=UTC).timestamp()})
    await pod.tick(datetime(2030, 1, 1, 7, 0, 20, tzinfo=UTC))
    assert await asyncio.to_thread(asked.wait, 30)
    assert "memory" not in pod.edit_agent("helper", toolkits=["clock"])["toolkits"]
    go.set()
    for run in list(pod.turn_driver.active.values()):
        await asyncio.wait_for(run.future, 30)

    def stored(person_id: str) -> int:
        return pod.memory.count_sources(f"private/{person_id}")

    assert await pod.in_memory_thread(lambda: stored(pod.person_id)) == 0, told
    assert "remember was not carried out" in told["alice"] and "'memory' is not enabled" in told["alice"], told
    denied = [a for a in pod.audit_log(kind="guard") if a["action"] == "denied"]
    assert [a["summary"].split(":")[0] for a in denied] == ["remember"] and denied[0]["agent"] == "helper"
    assert await pod.in_memory_thread(lambda: stored(bob["id"])) == 1, told  # Bob's agent still may
    assert "remembered" in told["bob"]
    assert not [a for a in as_bob.audit_log(kind="guard") if a["action"] == "denied"]
