"""The store and its leases on SQLite and, where PostgreSQL is installed (make test installs it), on a real
PostgreSQL server started on loopback: the same migrations, the same behaviour."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from runtime_host.store import MIGRATIONS, Store
from tests.helpers.fake_model import Text, ToolCalls
from tests.helpers.postgres import postgres_bindir, running_postgres


def test_migrations_and_a_turn_tree_roundtrip(db_url: str) -> None:
    s = Store(db_url)
    assert s.applied_migrations() == sorted(name for name, _ in MIGRATIONS)
    assert Store(db_url).migrate() == []  # nothing applied twice
    person = s.default_person()
    inst = s.add_agent(person.id, "ada", provider=None, model=None, system="")
    conv = s.create_conversation(inst.id)
    turn = s.create_turn(conv.id, inst.id, origin="background", lease_owner="host-a", lease_s=30)
    t0 = time.time()
    s.start_step(turn.id, "m1", kind="model", name="m", parent_id=None, arguments={"a": 1}, call_id=None)
    s.finish_step("m1", "finished", {"text": "hi"})
    step = s.list_steps(turn.id)[0]
    assert step.result == '{"text": "hi"}' and abs(step.started_at - t0) < 5  # times keep their precision
    assert abs(s.get_turn(turn.id).lease_until - (t0 + 30)) < 5
    s.close()


def test_a_lease_is_taken_only_when_it_expired(db_url: str) -> None:
    s = Store(db_url)
    person = s.default_person()
    inst = s.add_agent(person.id, "ada", provider=None, model=None, system="")
    conv = s.create_conversation(inst.id)
    turn = s.create_turn(conv.id, inst.id, lease_owner="host-a", lease_s=30)
    assert not s.claim_turn(turn.id, "host-b", 30)
    assert s.claim_turn(turn.id, "host-a", 30)  # the owner renews
    s.update_turn(turn.id, lease_until=time.time() - 1)
    assert s.claim_turn(turn.id, "host-b", 30)
    assert not s.claim_turn(turn.id, "host-a", 30)
    s.close()


def test_a_due_schedule_runs_once_across_two_hosts(db_url: str) -> None:
    from runtime_host import schedule

    a, b = Store(db_url), Store(db_url)
    person = a.default_person()
    inst = a.add_agent(person.id, "ada", provider=None, model=None, system="")
    schedule.create_schedule(a.engine, person_id=person.id, instance_id=inst.id, cron="*/5 * * * *", prompt="x",
                             now=datetime(2026, 1, 1, 0, 0, tzinfo=UTC))
    started: list[str] = []
    now = datetime(2026, 1, 1, 0, 5, 10, tzinfo=UTC)
    schedule.tick(a.engine, now, lambda row, due: started.append("a") or "turn-a", owner="a")
    schedule.tick(b.engine, now, lambda row, due: started.append("b") or "turn-b", owner="b")
    assert started == ["a"]
    a.close()
    b.close()


HOST = r"""
import asyncio, os, sys
from runtime_host.pod import Pod
async def main():
    pod = Pod()
    pod.start_background()
    await pod.recover()
    await asyncio.sleep(3600)
asyncio.run(main())
"""


@pytest.mark.skipif(postgres_bindir() is None, reason="PostgreSQL is not installed (make test installs it)")
async def test_two_hosts_on_one_postgres_a_killed_host_s_turn_finishes_elsewhere(tmp_path, fake_model) -> None:
    """Host A runs a turn (in its own process group) and is SIGKILLed after its tool step; host B takes the
    turn over when A's lease expires and finishes it. The tool step is not run again."""
    from runtime_host.pod import Pod

    calls: list[str] = []

    def model(req):
        calls.append(f"results={len(req.tool_results)}")
        if not req.tool_results:
            return ToolCalls([("append_note", {"text": "booked the table"})])
        return Text("all done", delay_s=0.3, chunk_chars=1)  # slow: host A dies in the middle of this

    fake_model.script = model
    with running_postgres() as url:
        env = {**os.environ, "HEARTH_DATABASE_URL": url, "HEARTH_LEASE_S": "3", "HEARTH_SANDBOX": "off"}
        os.environ["HEARTH_LEASE_S"] = "3"
        host = Pod(tmp_path / "b")
        host.store = Store(url)
        setup = host.first_person()
        setup.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
        setup.add_agent("helper", provider="fake", toolkits=["notes"])
        turn_id = setup.create_background_run("helper", "book the table")
        await setup.close()
        host_a = subprocess.Popen([sys.executable, "-c", HOST], env={**env, "HEARTH_HOME": str(tmp_path / "a")},
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                if len(calls) >= 2:
                    break
                await asyncio.sleep(0.05)
            assert len(calls) >= 2, "host A never reached its second model call"
            os.killpg(host_a.pid, signal.SIGKILL)  # the whole host dies: pod and worker
        finally:
            host_a.wait(10)
        os.environ["HEARTH_DATABASE_URL"] = url
        try:
            host_b = Pod(tmp_path / "b").first_person()
            try:
                resumed: list[str] = []
                for _ in range(100):  # A's lease runs out within 3 s
                    resumed = await host_b.recover()
                    if resumed:
                        break
                    await asyncio.sleep(0.2)
                assert resumed == [turn_id]
                result = await asyncio.wait_for(host_b.turn_driver.active[turn_id].future, 60)
                assert result.ok and result.text == "all done"
                steps = host_b.turns()[0]["steps"]
                tools = [s for s in steps if s["kind"] == "tool"]
                assert len(tools) == 1 and tools[0]["status"] == "finished"  # not repeated
                assert sum(1 for c in calls if c == "results=0") == 1
            finally:
                await host_b.close()
        finally:
            os.environ.pop("HEARTH_DATABASE_URL", None)
            os.environ.pop("HEARTH_LEASE_S", None)


def test_kept_mail_pages_in_one_order_however_many_arrive_in_one_instant(db_url: str, monkeypatch) -> None:
    """The memory producer reads an inbox's kept mail 500 at a time past its last one. Pages by (received_at, id) give
    every message exactly once, in the order kept, when many arrive in one tick of the clock, on either database."""
    from types import SimpleNamespace

    from runtime_host.mail import ledger
    from runtime_host.mail.parse import parse_message
    from tests.helpers.mailservers import make_mail

    s = Store(db_url)
    acct = ledger.add_account(s.engine, person_id=s.default_person().id, address="a@example.org",
                              imap={"host": "127.0.0.1"}, smtp={"host": "127.0.0.1"}, start_at="all")
    ticks = iter(1_900_000_000.0 + (n // 7) * 0.001 for n in range(10_000))
    monkeypatch.setattr(ledger, "time", SimpleNamespace(time=lambda: next(ticks)))  # seven mails per instant
    with s.engine.begin() as c:
        for uid in range(1, 61):
            ledger.record_message(c, acct.id, "INBOX", 1, uid, parse_message(make_mail(f"n {uid}")), [])
    seen: list[dict] = []
    after = None
    while page := ledger.list_messages(s.engine, acct.id, after, limit=8):
        seen += page
        after = (page[-1]["received_at"], page[-1]["id"])
    assert len(seen) == 60 and len({m["id"] for m in seen}) == 60
    assert [m["uid"] for m in seen] == list(range(1, 61))  # in the order they were kept, none tied
    s.close()


def test_chat_past_a_watermark_is_read_in_one_order_on_every_backend(db_url: str) -> None:
    """The memory producer's read of a person's chat (every conversation at once, past where it stopped in the order
    messages were written, text only, without Hearth's own runs): the same rows in the same order on SQLite and
    PostgreSQL."""
    s = Store(db_url)
    person = s.default_person()
    a = s.add_agent(person.id, "ada", provider=None, model=None, system="")
    b = s.add_agent(person.id, "bea", provider=None, model=None, system="")
    ca, cb = s.create_conversation(a.id), s.create_conversation(b.id)
    sched = s.create_turn(ca.id, a.id, origin="schedule")
    said = []
    for n in range(6):
        said.append(s.add_message((ca, cb)[n % 2].id, "user" if n % 3 else "assistant", f"fact {n}").id)
    s.add_message(ca.id, "assistant", "")  # a tool call's empty text
    s.add_message(cb.id, "assistant", " \n\t")  # or blank
    s.add_message(ca.id, "user", "Hearth's own prompt", turn_id=sched.id)
    s.add_message(cb.id, "tool", "a tool's result")
    rows = s.messages_after([a.id, b.id], None, 4, skip_origins=("schedule",))
    assert [m.id for m, _t, _i in rows] == said[:4] and {i for _m, _t, i in rows} == {a.id, b.id}
    last = rows[-1][0]
    rest = s.messages_after([a.id, b.id], last.seq, 100, skip_origins=("schedule",))
    assert [m.id for m, _t, _i in rest] == said[4:]
    assert s.get_conversation(cb.id).title == "fact 1"  # the first line of its person's first message
    assert rows[0][1] == ""  # a title made from the first message is that message's words: not given with the others
    renamed = s.create_conversation(a.id, "Garden")
    s.add_message(renamed.id, "user", "fact 7")
    assert s.messages_after([a.id], last.seq, 100)[-1][1] == "Garden"  # a title given stays
    s.close()
