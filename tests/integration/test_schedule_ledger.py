"""The Run ledger (Schedules page, `runs`) tells each person the truth about their own scheduled runs, with a second
person on the same Hearth: their runs are chosen before the window's limit (everyone else's runs and the memory
timers' push none of them out), a deleted schedule's past runs stay (as the delete dialog says), and a run whose
Hearth process died and that the person then stops is closed, not "running" for ever. Found by rev110."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from runtime_host.store import StoreError
from tests.helpers.fake_model import Hang, Text
from tests.integration.test_memory_pod import bob_with_his_own_provider


def _checked_from(pod, t: datetime) -> None:
    """Every schedule made "now" is checked from `t` on (so what is due after `t` runs at the given clock)."""
    with pod.store.engine.begin() as c:
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"), {"t": t.timestamp()})


async def _tick_and_finish(pod, now: datetime) -> dict:
    out = await pod.tick(now)
    for run in list(pod.turn_driver.active.values()):
        await asyncio.wait_for(run.future, 30)
    return out


def _bob(pod):
    _, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake")
    return as_bob


async def test_a_deleted_schedules_past_runs_stay_in_its_persons_ledger_and_go_with_the_person(pod, script) -> None:
    """"It will not run again; its past runs stay in the ledger", says the delete dialog: the runs were deleted with
    the schedule. Now they stay (under the schedule's name, their conversation still opens), it never runs again and
    is listed no more; Bob never sees them; and Bob's removal still takes every schedule and run of his."""
    script([Text("briefing: 3 meetings")], repeat_last=True)
    bob = _bob(pod)
    info = pod.add_schedule("helper", "0 9 * * *", "Give me my morning briefing", tz="UTC", name="Briefing")
    bobs = bob.add_schedule("bobs", "0 9 * * *", "The weather today", tz="UTC", name="Weather")
    _checked_from(pod, datetime(2030, 1, 1, 8, 0, tzinfo=UTC))
    await _tick_and_finish(pod, datetime(2030, 1, 1, 9, 0, 20, tzinfo=UTC))
    [ran] = pod.schedule_ledger()
    assert (ran["outcome"], ran["name"]) == ("ran", "Briefing")

    with pytest.raises(StoreError, match="does not exist"):
        bob.delete_schedule(info["id"])  # not his
    pod.delete_schedule(info["id"])
    assert pod.schedules() == []
    with pytest.raises(StoreError, match="does not exist"):
        pod.delete_schedule(info["id"])  # deleted already
    await _tick_and_finish(pod, datetime(2030, 1, 2, 9, 0, 20, tzinfo=UTC))  # the next morning: it does not run
    assert [r["id"] for r in pod.schedule_ledger()] == [ran["id"]], "its past run is gone from the ledger"
    [kept] = pod.schedule_ledger()
    assert (kept["id"], kept["outcome"], kept["agent"], kept["name"], kept["deleted"]) == (
        ran["id"], "ran", "helper", "Briefing", True)
    assert kept["conversation_id"] == ran["conversation_id"] is not None  # double-click still opens the run
    assert [c["schedule"] for c in pod.list_conversations("helper") if c["schedule_id"]] == ["Briefing"]
    assert [(r["name"], r["outcome"]) for r in bob.schedule_ledger()] == [("Weather", "ran"), ("Weather", "ran")]

    bob.delete_schedule(bobs["id"])
    assert [r["deleted"] for r in bob.schedule_ledger()] == [True, True]
    await pod.remove_person("Bob", "Bob")
    with pod.store.engine.connect() as c:
        left = c.execute(text("SELECT COUNT(*) FROM schedules WHERE person_id = :p"), {"p": bob.person_id}).scalar()
        runs = c.execute(text("SELECT COUNT(*) FROM schedule_runs WHERE schedule_id = :s"), {"s": bobs["id"]}).scalar()
    assert (left, runs) == (0, 0)
    assert [r["id"] for r in pod.schedule_ledger()] == [ran["id"]]  # Alice's stay


async def test_alices_morning_run_stays_in_her_ledger_while_bobs_schedule_and_the_memory_timers_tick(
        pod, script) -> None:
    """The window asks for a person's newest 100 ledger rows; the newest 100 rows of everyone's schedules and the
    memory timers were read, then hers kept: the producer and ingest alone write 14 rows an hour (Bob's schedule
    every quarter hour 4 more), so Alice's 09:00 run was gone from her ledger by the afternoon. Hers are now chosen
    before the limit."""
    script([Text("ok")], repeat_last=True)
    bob = _bob(pod)
    pod.add_schedule("helper", "0 9 * * *", "Morning briefing", tz="UTC", name="Briefing")
    bob.add_schedule("bobs", "*/15 * * * *", "Anything new in the shop?", tz="UTC", name="Shop")
    pod.ensure_memory_timers()
    _checked_from(pod, datetime(2030, 1, 1, 8, 59, 30, tzinfo=UTC))
    await _tick_and_finish(pod, datetime(2030, 1, 1, 9, 0, 20, tzinfo=UTC))
    assert [r["outcome"] for r in pod.schedule_ledger(100)] == ["ran"]
    t = datetime(2030, 1, 1, 9, 5, 20, tzinfo=UTC)
    while t < datetime(2030, 1, 1, 15, 0, tzinfo=UTC):  # the Pod runs on: its scheduler ticks every 5 minutes here
        await _tick_and_finish(pod, t)
        t += timedelta(minutes=5)
    from runtime_host import schedule

    assert len(schedule.list_runs(pod.store.engine, limit=1000)) > 100  # her run is not among the newest 100
    assert [(r["name"], r["outcome"]) for r in pod.schedule_ledger(100)] == [("Briefing", "ran")]
    shop = bob.schedule_ledger(100)
    assert len(shop) == 24 and {r["name"] for r in shop} == {"Shop"}  # 09:00 to 14:45, his alone
    assert len(bob.schedule_ledger(10)) == 10


async def test_stopping_a_scheduled_run_whose_process_died_closes_its_ledger_row(pod, fake_model, home) -> None:
    """Alice runs her schedules from a systemd timer (`python -m runtime_host tick`). The machine loses power while
    the 7:00 run waits for its model; back at the computer she stops that run. The turn was stopped with no
    turn.finished event, which alone closed ledger rows: the Run ledger said "running" for ever. Now it says the run
    failed, and why."""
    fake_model.script = lambda req: Hang(120)
    bob = _bob(pod)
    bob.add_schedule("bobs", "0 8 * * *", "The weather today", tz="UTC", name="Weather")  # not due at 7
    pod.add_schedule("helper", "0 7 * * *", "Morning briefing", tz="UTC", name="Briefing")
    _checked_from(pod, datetime(2030, 1, 1, 6, 0, tzinfo=UTC))
    env = {**os.environ, "HEARTH_HOME": str(home), "HEARTH_LEASE_S": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host", "tick", "--now", "2030-01-01T07:00:20+00:00"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not fake_model.requests and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert fake_model.requests, "the scheduled run never asked its model"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the power cut
        proc.wait(10)
    await asyncio.sleep(3)  # its lease (2 s) has run out
    [row] = pod.schedule_ledger()
    assert row["outcome"] == "running"
    out = await pod.stop_turn(row["turn_id"])
    assert out["status"] == "stopped", out
    [row] = pod.schedule_ledger()
    assert row["outcome"] == "failed", row
    assert row["error"] == "Stopped by you (no Hearth process was running it)."
    assert bob.schedule_ledger() == []
