"""Schedules with an injected clock: cron parsing and words, daylight saving, catch-up, the ledger, pausing,
and two tickers on one SQLite file that must not both run a due schedule."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine

from runtime_host import schedule as sch
from runtime_host.schedule import Cron, CronError, Schedule, describe, due_runs, next_runs

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def _pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def open_engine(path: Path) -> Engine:
    eng = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False})
    event.listen(eng, "connect", _pragmas)
    return eng


def at(zone: ZoneInfo, *args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=zone, fold=fold)  # type: ignore[misc,arg-type]


# ---- parsing and words --------------------------------------------------------------------------

@pytest.mark.parametrize("expr, words", [
    ("0 9 * * 1-5", "every weekday at 09:00"),
    ("0 9 * * MON-FRI", "every weekday at 09:00"),
    ("*/15 * * * *", "every 15 minutes"),
    ("0 * * * *", "every hour, on the hour"),
    ("30 8 * * sun", "every Sunday at 08:30"),
    ("0 9,17 * * *", "every day at 09:00 and 17:00"),
    ("0 0 1 * *", "on day 1 of the month at 00:00"),
    ("@daily", "every day at 00:00"),
    ("@hourly", "every hour, on the hour"),
    ("@weekly", "every Sunday at 00:00"),
    ("@monthly", "on day 1 of the month at 00:00"),
    ("@yearly", "every year on 1 January at 00:00"),
    ("0 8 * JAN,JUL MON-FRI", "every weekday at 08:00 in January and July"),
    ("*/10 * * * SAT,SUN", "every 10 minutes on weekends"),
])
def test_plain_words(expr: str, words: str) -> None:
    assert describe(expr) == words


@pytest.mark.parametrize("expr, message", [
    ("61 * * * *", "minute 61 is out of range 0-59"),
    ("* 24 * * *", "hour 24 is out of range 0-23"),
    ("* * 32 * *", "day of month 32 is out of range 1-31"),
    ("* * * 13 *", "month 13 is out of range 1-12"),
    ("* * * * 8", "day of week 8 is out of range 0-7"),
    ("* * * FOO *", "month 'FOO' is not a number or name (use JAN–DEC or 1–12)"),
    ("*/0 * * * *", "must be a whole number of at least 1"),
    ("5-2 * * * *", "range 5-2 in minute is backwards"),
    ("* * * *", "Expected 5 fields"),
    ("0 0 30 2 *", "day of month 30 never occurs in February"),
    ("@reboot", "@reboot is not supported"),
    ("", "The schedule is empty"),
])
def test_bad_expressions_name_the_field(expr: str, message: str) -> None:
    with pytest.raises(CronError) as err:
        Cron.parse(expr)
    assert message in str(err.value)


def test_ranges_steps_lists_names() -> None:
    c = Cron.parse("5-20/5,45 */6 1,15 JAN-MAR/2 7")
    assert sorted(c.minutes) == [5, 10, 15, 20, 45]
    assert sorted(c.hours) == [0, 6, 12, 18]
    assert sorted(c.days) == [1, 15]
    assert sorted(c.months) == [1, 3]
    assert c.weekdays == {0}


def test_bad_zone_and_policy() -> None:
    with pytest.raises(CronError, match="Unknown time zone 'Mars/Olympus'"):
        Schedule("0 9 * * *", "Mars/Olympus")
    with pytest.raises(CronError, match="Catch-up policy 'twice'"):
        Schedule("0 9 * * *", "UTC", "twice")


def test_day_of_month_or_day_of_week() -> None:
    # both restricted: classic cron runs on either (the 13th, or any Friday)
    runs = next_runs(Schedule("0 12 13 * FRI", "UTC"), datetime(2024, 9, 1, tzinfo=UTC), 4)
    assert [r.day for r in runs] == [6, 13, 20, 27]


def test_next_runs_in_zone() -> None:
    runs = next_runs(Schedule("0 9 * * 1-5", "America/New_York"), datetime(2024, 7, 5, 14, 0, tzinfo=UTC), 3)
    assert [r.isoformat() for r in runs] == ["2024-07-08T09:00:00-04:00", "2024-07-09T09:00:00-04:00",
                                             "2024-07-10T09:00:00-04:00"]


# ---- daylight saving ---------------------------------------------------------------------------

@pytest.mark.parametrize("tz, spring_day", [("Europe/Berlin", (2024, 3, 31)), ("America/New_York", (2024, 3, 10))])
def test_spring_forward_runs_once_shifted_by_the_gap(tz: str, spring_day: tuple[int, int, int]) -> None:
    zone = ZoneInfo(tz)
    s = Schedule("30 2 * * *", tz)
    day = datetime(*spring_day, tzinfo=zone)
    due = due_runs(s, day - timedelta(hours=6), day + timedelta(hours=12))
    assert len(due) == 1
    local = due[0].astimezone(zone)
    assert (local.hour, local.minute) == (3, 30)  # 02:30 does not exist; runs at 03:30 summer time
    # the days around it are untouched
    before = due_runs(s, day - timedelta(days=1, hours=6), day - timedelta(hours=6))
    assert [t.astimezone(zone).hour for t in before] == [2]


@pytest.mark.parametrize("tz, fall_day", [("Europe/Berlin", (2024, 10, 27)), ("America/New_York", (2024, 11, 3))])
def test_fall_back_runs_once_not_twice(tz: str, fall_day: tuple[int, int, int]) -> None:
    zone = ZoneInfo(tz)
    hour = 2 if tz == "Europe/Berlin" else 1  # the repeated hour
    s = Schedule(f"30 {hour} * * *", tz)
    day = datetime(*fall_day, tzinfo=zone)
    due = due_runs(s, day, day + timedelta(hours=12))
    assert len(due) == 1
    assert due[0] == at(zone, *fall_day, hour, 30, fold=0).astimezone(UTC)  # the first 02:30


def test_fall_back_keeps_the_rhythm_of_frequent_schedules() -> None:
    s = Schedule("*/30 * * * *", "Europe/Berlin")
    start = at(BERLIN, 2024, 10, 27, 1, 0).astimezone(UTC)
    due = due_runs(s, start, start + timedelta(hours=4))  # 4 real hours: 8 half-hours
    assert len(due) == 8
    assert all(b - a == timedelta(minutes=30) for a, b in zip(due, due[1:]))


def test_spring_forward_frequent_schedule_has_no_duplicates() -> None:
    s = Schedule("0 * * * *", "America/New_York")
    start = at(NEW_YORK, 2024, 3, 10, 0, 0).astimezone(UTC)
    due = due_runs(s, start, start + timedelta(hours=4))
    assert len(due) == len(set(due)) == 4  # 4 real hours, 02:00 never happens


# ---- the ledger ----------------------------------------------------------------------------------

class Starter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, datetime]] = []

    def __call__(self, row: sch.ScheduleRow, due: datetime) -> str:
        self.calls.append((row.id, due))
        return f"turn-{len(self.calls)}"


def test_tick_runs_a_due_schedule_once(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 8, 59, 30, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * *", prompt="Daily summary",
                              now=t0)
    start = Starter()
    assert not sch.tick(engine, t0 + timedelta(seconds=20), start).started
    res = sch.tick(engine, t0 + timedelta(seconds=40), start)  # 09:00:10
    assert [r.outcome for r in res.started] == ["running"]
    assert start.calls == [(row.id, datetime(2024, 6, 3, 9, 0, tzinfo=UTC))]
    assert not sch.tick(engine, t0 + timedelta(seconds=100), start).started  # never twice
    assert sch.record_turn_finished(engine, "turn-1", ok=True)
    runs = sch.list_runs(engine, row.id)
    assert [(r.outcome, r.turn_id) for r in runs] == [("ran", "turn-1")]
    assert runs[0].finished_at is not None


def test_catch_up_once_after_a_three_hour_gap(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 9, 0, 30, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="*/15 * * * *", prompt="check", now=t0)
    start = Starter()
    res = sch.tick(engine, t0 + timedelta(hours=3), start)  # asleep from 09:00:30 to 12:00:30
    assert len(start.calls) == 1
    assert start.calls[0][1] == datetime(2024, 6, 3, 12, 0, tzinfo=UTC)  # 12:00 is on time: it is the one run
    missed = [r for r in res.recorded if r.outcome == "missed"]
    assert len(missed) == 11  # 09:15 ... 11:45, each in the ledger, none run
    assert all("not running" in (r.error or "") for r in missed)
    assert not sch.tick(engine, t0 + timedelta(hours=3, seconds=30), start).started
    outcomes = sorted(r.outcome for r in sch.list_runs(engine, row.id))
    assert outcomes.count("running") == 1 and outcomes.count("missed") == 11


def test_catch_up_once_when_nothing_is_on_time(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 9, 30, tzinfo=UTC)
    sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 * * * *", prompt="hourly", now=t0)
    start = Starter()
    res = sch.tick(engine, datetime(2024, 6, 3, 12, 30, tzinfo=UTC), start)
    assert [d for _, d in start.calls] == [datetime(2024, 6, 3, 12, 0, tzinfo=UTC)]  # the latest, run once
    assert sorted(r.due_at.hour for r in res.recorded) == [10, 11]
    assert {r.outcome for r in res.recorded} == {"missed"}


def test_catch_up_skip_runs_nothing_late(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 9, 30, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 * * * *", prompt="x", catch_up="skip",
                              now=t0)
    start = Starter()
    res = sch.tick(engine, datetime(2024, 6, 3, 12, 30, tzinfo=UTC), start)
    assert start.calls == []
    assert [r.outcome for r in res.recorded] == ["skipped"] * 3
    assert len(sch.list_runs(engine, row.id)) == 3  # never silently lost
    # back on time: the next hour runs normally
    sch.tick(engine, datetime(2024, 6, 3, 13, 0, 20, tzinfo=UTC), start)
    assert len(start.calls) == 1


def test_long_gap_is_summed_up_not_listed_forever(engine: Engine) -> None:
    t0 = datetime(2024, 6, 1, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="* * * * *", prompt="x", now=t0)
    start = Starter()
    res = sch.tick(engine, t0 + timedelta(days=3), start)
    assert len(start.calls) == 1
    assert len(res.recorded) == sch.MAX_RECORDED_MISSES
    oldest = min(res.recorded, key=lambda r: r.due_at)
    assert "earlier due times" in (oldest.error or "")
    assert len(sch.list_runs(engine, row.id, limit=10_000)) == sch.MAX_RECORDED_MISSES + 1


def test_failed_start_is_recorded_and_not_retried(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 8, 59, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * *", prompt="x", now=t0)

    def broken(_row: sch.ScheduleRow, _due: datetime) -> str:
        raise RuntimeError("no agent named 'helper'")

    res = sch.tick(engine, t0 + timedelta(minutes=1, seconds=5), broken)
    assert res.started[0].outcome == "failed"
    runs = sch.list_runs(engine, row.id)
    assert runs[0].outcome == "failed" and "no agent named 'helper'" in (runs[0].error or "")
    start = Starter()
    sch.tick(engine, t0 + timedelta(minutes=2), start)
    assert start.calls == []


def test_stale_claim_becomes_failed_never_rerun(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 8, 59, tzinfo=UTC)
    row = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * *", prompt="x", now=t0)
    claims, _ = sch.plan_tick(engine, t0 + timedelta(minutes=1, seconds=5))  # the Pod "dies" here
    assert len(claims) == 1
    with engine.begin() as c:  # make the claim old
        c.execute(text("UPDATE schedule_runs SET started_at = started_at - 600"))
    start = Starter()
    sch.tick(engine, t0 + timedelta(minutes=3), start)
    assert start.calls == []
    assert sch.list_runs(engine, row.id)[0].outcome == "failed"


def test_after_the_clock_is_set_back_what_comes_due_runs_and_nothing_runs_twice(engine: Engine, caplog) -> None:
    """The clock ran two hours ahead while Hearth ran, then was corrected: the checkpoint stayed at the time the clock
    had shown, and nothing ran (a person's hourly schedule, memory's 30-minute ingest) until the clock passed it again.
    Now what comes due runs when it comes; a due time that ran while the clock was ahead does not run again."""
    t0 = datetime(2024, 6, 3, 7, 19, tzinfo=UTC)
    hourly = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 * * * *", prompt="news", now=t0)
    ingest = sch.create_schedule(engine, person_id="pod", instance_id="", cron="*/30 * * * *", prompt="",
                                 kind="memory.ingest", now=t0)
    start = Starter()
    sch.tick(engine, t0 + timedelta(hours=2), start)  # the clock shows 09:19: 09:00 runs, earlier ones "missed"
    assert sorted((sid, d.strftime("%H:%M")) for sid, d in start.calls) == sorted([(hourly.id, "09:00"),
                                                                                   (ingest.id, "09:00")])
    start.calls.clear()
    with caplog.at_level("WARNING", logger="hearth.schedule"):
        assert not sch.tick(engine, t0 + timedelta(seconds=30), start).started  # corrected: 07:19:30
    ran = []
    for hm in ("07:30", "08:00", "08:30", "09:00", "09:30", "10:00"):
        h, m = map(int, hm.split(":"))
        sch.tick(engine, datetime(2024, 6, 3, h, m, 20, tzinfo=UTC), start)
        ran.append(sorted("hourly" if sid == hourly.id else "ingest" for sid, _ in start.calls))
        start.calls.clear()
    assert ran == [["ingest"], ["hourly", "ingest"], ["ingest"], [], ["ingest"], ["hourly", "ingest"]]  # 09:00 ran
    assert "The clock was set back" in caplog.text
    for row in (hourly, ingest):  # one row per due time, each run once
        runs = sch.list_runs(engine, row.id)
        assert len(runs) == len({r.due_at for r in runs})
        assert {r.due_at.strftime("%H:%M") for r in runs if r.outcome == "missed"} == set()
    # a clock a minute behind another ticker's (two Hearths on one folder) is not a clock set back
    sch.tick(engine, datetime(2024, 6, 3, 9, 59, 30, tzinfo=UTC), start)
    assert start.calls == [] and sch.get_schedule(engine, ingest.id).last_checked == datetime(
        2024, 6, 3, 10, 0, 20, tzinfo=UTC).timestamp()


def test_pausing_one_schedule_and_all(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 8, 0, 30, tzinfo=UTC)
    a = sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 * * * *", prompt="a", now=t0)
    b = sch.create_schedule(engine, person_id="p", instance_id="b", cron="0 * * * *", prompt="b", now=t0)
    start = Starter()
    sch.set_paused(engine, a.id, True)
    sch.tick(engine, datetime(2024, 6, 3, 9, 0, 10, tzinfo=UTC), start)
    assert [sid for sid, _ in start.calls] == [b.id]
    assert sch.list_runs(engine, a.id)[0].outcome == "skipped"
    assert "this schedule was paused" in (sch.list_runs(engine, a.id)[0].error or "")

    sch.set_global_pause(engine, True)  # the tray's pause-all
    assert sch.is_globally_paused(engine)
    sch.set_paused(engine, a.id, False)
    sch.tick(engine, datetime(2024, 6, 3, 10, 0, 10, tzinfo=UTC), start)
    assert len(start.calls) == 1
    assert {r.error for r in sch.list_runs(engine) if r.due_at.hour == 10} == {"all schedules were paused"}

    sch.set_global_pause(engine, False)  # resuming does not replay the paused hour
    sch.tick(engine, datetime(2024, 6, 3, 11, 0, 10, tzinfo=UTC), start)
    assert sorted(d.hour for _, d in start.calls) == [9, 11, 11]
    with pytest.raises(CronError, match="No schedule"):
        sch.set_paused(engine, "nope", True)


def test_schedule_rows_describe_themselves(engine: Engine) -> None:
    t0 = datetime(2024, 6, 3, 8, 0, tzinfo=UTC)
    sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * 1-5", prompt="standup",
                        tz="Europe/Berlin", now=t0)
    d = sch.list_schedules(engine, "p")[0].to_dict(now=t0)
    assert d["description"] == "every weekday at 09:00"
    assert d["next_runs"][0] == "2024-06-04T09:00:00+02:00"
    with pytest.raises(CronError, match="minute 99"):
        sch.create_schedule(engine, person_id="p", instance_id="a", cron="99 * * * *", prompt="x")


def test_dst_through_the_ledger(engine: Engine) -> None:
    """A daily 02:30 Berlin job across both changes: one run per day, never two, none lost."""
    start_at = at(BERLIN, 2024, 3, 29, 12, 0)
    sch.create_schedule(engine, person_id="p", instance_id="a", cron="30 2 * * *", prompt="x", tz="Europe/Berlin",
                        now=start_at)
    start = Starter()
    t = start_at
    while t < at(BERLIN, 2024, 4, 2, 12, 0):
        t += timedelta(minutes=2)  # a Pod ticking on time (every 2 min keeps the test quick)
        sch.tick(engine, t, start)
    local = [d.astimezone(BERLIN) for _, d in start.calls]
    assert [(x.day, x.hour, x.minute) for x in local] == [(30, 2, 30), (31, 3, 30), (1, 2, 30), (2, 2, 30)]


@pytest.mark.parametrize("tz", ["Australia/Sydney", "Pacific/Auckland", "America/New_York", "Asia/Tokyo"])
def test_minute_ticks_match_the_pure_answer_across_dst(tz: str) -> None:
    """Ticking every minute through both changes of a year gives exactly the instants due_runs lists."""
    for month in (3, 4, 10, 11):  # southern and northern changes fall in these months
        zone = ZoneInfo(tz)
        first_sunday = next(d for d in range(1, 8) if datetime(2024, month, d).weekday() == 6)
        sundays = [datetime(2024, month, d, tzinfo=zone) for d in range(first_sunday, 29, 7)]
        for day in sundays:
            s = Schedule("*/20 1-3 * * *", tz)
            a, b = day.astimezone(UTC), (day + timedelta(hours=5)).astimezone(UTC)
            ticked: list[datetime] = []
            t = a
            while t < b:
                ticked += due_runs(s, t, t + timedelta(minutes=1))
                t += timedelta(minutes=1)
            assert ticked == due_runs(s, a, b), (tz, day)
            assert len(ticked) == len(set(ticked))


# ---- two tickers on one file ----------------------------------------------------------------------

def _ticker_process(db: str, now_iso: str, barrier: Any, out_q: Any) -> None:
    eng = open_engine(Path(db))
    started: list[str] = []

    def start_run(row: sch.ScheduleRow, due: datetime) -> str:
        started.append(row.id)
        return f"turn-{row.id}"

    barrier.wait()
    now = datetime.fromisoformat(now_iso)
    for k in range(5):  # tick repeatedly at the same instant, as two Pods with 60 s timers would
        sch.tick(eng, now + timedelta(seconds=k), start_run)
    out_q.put(started)
    eng.dispose()


def test_two_pods_on_one_data_dir_do_not_both_run(engine: Engine, tmp_path: Path) -> None:
    t0 = datetime(2024, 6, 3, 8, 59, 50, tzinfo=UTC)
    ids = {sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * *", prompt=f"job {i}",
                               now=t0).id for i in range(40)}
    engine.dispose()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    q = ctx.Queue()
    now = (t0 + timedelta(seconds=15)).isoformat()
    procs = [ctx.Process(target=_ticker_process, args=(str(tmp_path / "pod.db"), now, barrier, q)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    everything = results[0] + results[1]
    assert sorted(everything) == sorted(ids)  # each schedule ran exactly once, across both Pods
    assert len(sch.list_runs(engine, limit=1000)) == 40


def test_two_threads_racing_on_one_file(engine: Engine, tmp_path: Path) -> None:
    import threading

    t0 = datetime(2024, 6, 3, 8, 59, 50, tzinfo=UTC)
    for i in range(30):
        sch.create_schedule(engine, person_id="p", instance_id="a", cron="0 9 * * *", prompt=f"j{i}", now=t0)
    started: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(3)

    def run(row: sch.ScheduleRow, _due: datetime) -> str:
        with lock:
            started.append(row.id)
        return "t"

    def worker() -> None:
        eng = open_engine(tmp_path / "pod.db")
        go.wait()
        for k in range(3):
            sch.tick(eng, t0 + timedelta(seconds=15 + k), run)
        eng.dispose()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert len(started) == 30 and len(set(started)) == 30
