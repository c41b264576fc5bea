"""Schedules: cron expressions, their next runs in a time zone, and a run ledger that runs each due time once.

Pure parts (no database): `Cron.parse` validates a 5-field expression or an @macro, `Cron.describe`
says it in plain words, `next_runs` previews, `due_runs(schedule, last_checked, now)` lists the due
instants in (last_checked, now]. Stored parts: `SCHEDULES_MIGRATION` (plain SQL for SQLite and
PostgreSQL) and helpers over a SQLAlchemy Engine; `tick(engine, now, start_run)` runs what is due.

Daylight saving (wall-clock semantics, chosen on purpose):
- A wall time that does not exist (spring forward, e.g. 02:30 in Europe/Berlin on the last Sunday of
  March) runs once, shifted forward by the length of the gap: 02:30 becomes 03:30 summer time. A run
  that lands on an instant another wall time also maps to (02:00 → 03:00) runs once.
- A wall time that occurs twice (fall back, 02:30 happens in summer time and again in winter time)
  runs once, at its first occurrence. Exception: a schedule whose hour field is `*` (every hour)
  also runs in the repeated hour, so "every 15 minutes" keeps its rhythm (as Vixie cron does).

Exactly once: every due instant is claimed by INSERTing its ledger row; `schedule_runs` has
UNIQUE(schedule_id, due_at), so a second Pod (or `hearth tick` from the OS scheduler) that sees the
same due instant loses the insert and does not run it. A clock set back (it ran ahead, then was corrected)
moves the checkpoint back to the time now: what is due from then runs when it comes, except what already ran.
"""

from __future__ import annotations

import calendar
import contextlib
import functools
import heapq
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger("hearth.schedule")

# ---- cron expressions --------------------------------------------------------------------------


class CronError(ValueError):
    """A cron expression (or time zone, or catch-up policy) a person typed that cannot be used; says why."""


MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_MONTH_WORDS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December"]
_DAY_WORDS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    lo: int
    hi: int
    names: list[str] | None = None
    name_base: int = 0  # value of names[0]


_FIELDS = [
    _FieldSpec("minute", 0, 59),
    _FieldSpec("hour", 0, 23),
    _FieldSpec("day of month", 1, 31),
    _FieldSpec("month", 1, 12, MONTH_NAMES, 1),
    _FieldSpec("day of week", 0, 7, DAY_NAMES, 0),
]


def _value(spec: _FieldSpec, token: str, whole: str) -> int:
    t = token.strip().upper()
    if spec.names and t in spec.names:
        return spec.names.index(t) + spec.name_base
    if not t.isdigit():
        hint = ""
        if spec.names:
            hint = f" (use {spec.names[0]}–{spec.names[-1]} or {spec.lo}–{spec.hi})"
        where = "" if token == whole else f" in {whole!r}"
        raise CronError(f"{spec.name} {token!r}{where} is not a number{' or name' if spec.names else ''}{hint}")
    v = int(t)
    if not spec.lo <= v <= spec.hi:
        raise CronError(f"{spec.name} {v} is out of range {spec.lo}-{spec.hi}")
    return v


def _parse_field(spec: _FieldSpec, raw: str) -> frozenset[int]:
    if raw == "":
        raise CronError(f"{spec.name} is empty")
    out: set[int] = set()
    for part in raw.split(","):
        if part == "":
            raise CronError(f"{spec.name} {raw!r} has an empty item between commas")
        rng, _, step_s = part.partition("/")
        step = 1
        if _:
            if not step_s.isdigit() or int(step_s) < 1:
                raise CronError(f"step {step_s!r} in {spec.name} {part!r} must be a whole number of at least 1")
            step = int(step_s)
        if rng == "*":
            lo, hi = spec.lo, spec.hi
            if spec.name == "day of week":
                hi = 6
        elif "-" in rng:
            a, _dash, b = rng.partition("-")
            lo, hi = _value(spec, a, part), _value(spec, b, part)
            if lo > hi:
                raise CronError(f"range {rng} in {spec.name} is backwards: write the smaller value first")
        else:
            lo = _value(spec, rng, part)
            hi = spec.hi if _ else lo  # "5/15" means 5, 20, 35, 50
        out.update(range(lo, hi + 1, step))
    if spec.name == "day of week" and 7 in out:
        out.discard(7)
        out.add(0)  # 7 is Sunday too
    return frozenset(out)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression: the allowed values of each field, and the text it came from."""

    expr: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    raw: tuple[str, str, str, str, str]

    @property
    def dom_any(self) -> bool:
        return self.raw[2].startswith("*")

    @property
    def dow_any(self) -> bool:
        return self.raw[4].startswith("*")

    @classmethod
    def parse(cls, expr: str) -> Cron:
        original = expr
        text_ = " ".join(expr.split())
        if not text_:
            raise CronError("The schedule is empty: write five fields (minute hour day-of-month month "
                            "day-of-week), e.g. '0 9 * * MON-FRI', or @hourly/@daily/@weekly/@monthly/@yearly.")
        if text_.startswith("@"):
            macro = text_.lower()
            if macro == "@reboot":
                raise CronError("@reboot is not supported: Hearth schedules run at clock times.")
            if macro not in MACROS:
                raise CronError(f"Unknown shortcut {text_!r}: use one of {', '.join(sorted(set(MACROS)))}.")
            text_ = MACROS[macro]
        parts = text_.split(" ")
        if len(parts) != 5:
            raise CronError(f"Expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)} "
                            f"in {original!r}.")
        sets = [_parse_field(spec, p) for spec, p in zip(_FIELDS, parts)]
        raw = (parts[0], parts[1], parts[2], parts[3], parts[4])
        cron = cls(original.strip(), sets[0], sets[1], sets[2], sets[3], sets[4], raw=raw)
        cron._check_possible()
        return cron

    def _check_possible(self) -> None:
        if self.dom_any or not self.dow_any:
            return  # every day of month allowed, or weekdays can match
        longest = max(calendar.monthrange(2024, m)[1] for m in self.months)  # 2024: February has 29
        if min(self.days) > longest:
            months = ", ".join(_MONTH_WORDS[m - 1] for m in sorted(self.months))
            raise CronError(f"day of month {min(self.days)} never occurs in {months}: this schedule would never run.")

    def day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom_ok = d.day in self.days
        dow_ok = (d.isoweekday() % 7) in self.weekdays
        if self.dom_any and self.dow_any:
            return True
        if self.dom_any:
            return dow_ok
        if self.dow_any:
            return dom_ok
        return dom_ok or dow_ok  # both restricted: classic cron matches either

    def wall_times(self, start: datetime) -> Iterator[datetime]:
        """Matching naive wall-clock times at or after `start` (naive), in order; stops after 8 empty years."""
        start = start.replace(second=0, microsecond=0)
        d = start.date()
        hours = sorted(self.hours)
        minutes = sorted(self.minutes)
        empty_days = 0
        while empty_days <= 366 * 8:  # Feb 29 on a given weekday can take years; only impossible combos end
            if self.day_matches(d):
                empty_days = 0
                for h in hours:
                    if d == start.date() and h < start.hour:
                        continue
                    for m in minutes:
                        t = datetime(d.year, d.month, d.day, h, m)
                        if t >= start:
                            yield t
            else:
                empty_days += 1
            d += timedelta(days=1)

    def describe(self) -> str:
        """The expression in plain words, e.g. 'every weekday at 09:00'."""
        when = self._time_words()
        months = self._month_words()
        if (when.startswith("at ") and len(self.months) == 1 and len(self.days) == 1 and self.dow_any
                and not self.dom_any):
            return f"every year on {min(self.days)} {_MONTH_WORDS[min(self.months) - 1]} {when}"
        if when.startswith("at "):  # fixed times: "every weekday at 09:00"
            return f"{self._day_words(lead=True)} {when}{months}"
        days = self._day_words(lead=False)
        return f"{when}{' ' + days if days else ''}{months}"

    # -- plain words
    def _time_words(self) -> str:
        mins, hrs = sorted(self.minutes), sorted(self.hours)
        m_raw, h_raw = self.raw[0], self.raw[1]
        all_h = len(hrs) == 24
        if len(mins) == 60 and all_h:
            return "every minute"
        if all_h and m_raw.startswith("*/"):
            n = int(m_raw[2:])
            return "every minute" if n == 1 else f"every {n} minutes"
        if all_h:
            if mins == [0]:
                return "every hour, on the hour"
            return f"every hour at {_join([f'minute {m}' for m in mins])}"
        if len(mins) == 60:
            return f"every minute during {_join([f'{h:02d}:00–{h:02d}:59' for h in hrs])}"
        if len(mins) * len(hrs) <= 6:
            return "at " + _join([f"{h:02d}:{m:02d}" for h in hrs for m in mins])
        if h_raw.startswith("*/") and len(mins) == 1:
            return f"every {int(h_raw[2:])} hours at minute {mins[0]}"
        return f"at minute {_join([str(m) for m in mins])} past hour {_join([str(h) for h in hrs])}"

    def _day_words(self, lead: bool) -> str:
        """Days as a lead ("every weekday", "every day") or a tail ("on weekdays", "" for every day)."""
        wd = sorted(self.weekdays)
        if self.dom_any and self.dow_any:
            return "every day" if lead else ""
        dow = ""
        if not self.dow_any:
            if wd == [1, 2, 3, 4, 5]:
                dow = "every weekday" if lead else "on weekdays"
            elif wd == [0, 6]:
                dow = "every weekend day" if lead else "on weekends"
            elif lead:
                dow = "every " + _join([_DAY_WORDS[d] for d in wd])
            else:
                dow = "on " + _join([_DAY_WORDS[d] + "s" for d in wd])
        dom = ""
        if not self.dom_any:
            dom = "on day " + _join([str(d) for d in sorted(self.days)]) + " of the month"
        if dow and dom:
            return f"{dom} and {dow if dow.startswith('on ') else 'on ' + dow.removeprefix('every ')}"
        return dow or dom

    def _month_words(self) -> str:
        if len(self.months) == 12:
            return ""
        return " in " + _join([_MONTH_WORDS[m - 1] for m in sorted(self.months)])


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def describe(expr: str) -> str:
    """Plain words for a cron expression; raises CronError for a bad one."""
    return Cron.parse(expr).describe()


# ---- schedules in a time zone ------------------------------------------------------------------

CATCH_UP_POLICIES = ("once", "skip")
ON_TIME_GRACE = timedelta(seconds=150)  # a due instant this close to "now" is on time (ticks come every 60 s)
CLOCK_SET_BACK = timedelta(minutes=5)  # "now" this far behind a checkpoint: the clock was set back, not two clocks


@functools.lru_cache(maxsize=512)
def local_zone() -> str:
    """This machine's IANA time zone name (TZ, or the /etc/localtime link), UTC when unknown."""
    import os

    tz = os.environ.get("TZ")
    if tz:
        return tz
    try:
        link = os.path.realpath("/etc/localtime")
    except OSError:
        return "UTC"
    return link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "UTC"


def zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"Unknown time zone {tz!r}: use a name like 'Europe/Berlin', 'America/New_York' or 'UTC'.") from exc


@dataclass(frozen=True)
class Schedule:
    """The timing part of a schedule: what `due_runs` and `next_runs` need."""

    cron: str
    tz: str = "UTC"
    catch_up: str = "once"

    def __post_init__(self) -> None:
        _parse_cached(self.cron)
        zone(self.tz)
        if self.catch_up not in CATCH_UP_POLICIES:
            raise CronError(f"Catch-up policy {self.catch_up!r} is not one of: once (run once after a gap), "
                            "skip (never run late).")

    @property
    def parsed(self) -> Cron:
        return _parse_cached(self.cron)


_CRON_CACHE: dict[str, Cron] = {}


def _parse_cached(expr: str) -> Cron:
    c = _CRON_CACHE.get(expr)
    if c is None:
        c = Cron.parse(expr)
        if len(_CRON_CACHE) < 10_000:
            _CRON_CACHE[expr] = c
    return c


def _instants(cron: Cron, tz: ZoneInfo, wall: datetime) -> list[datetime]:
    """The UTC instants at which a matching wall time fires (see the module docstring for DST)."""
    a0 = wall.replace(tzinfo=tz, fold=0)
    a1 = wall.replace(tzinfo=tz, fold=1)
    off0, off1 = a0.utcoffset(), a1.utcoffset()
    u0 = a0.astimezone(UTC)
    if off0 == off1:
        return [u0]
    exists = u0.astimezone(tz).replace(tzinfo=None) == wall
    if not exists:
        return [u0]  # in the gap: fold=0 uses the offset from before the change, i.e. shifted forward
    if len(cron.hours) == 24:
        return [u0, a1.astimezone(UTC)]  # repeated hour, hourly-or-finer schedule: both passes
    return [u0]


def _iter_instants(cron: Cron, tz: ZoneInfo, after_utc: datetime) -> Iterator[datetime]:
    """Fire instants strictly after `after_utc`, ascending, without duplicates."""
    slack = timedelta(hours=4)  # larger than any daylight-saving shift
    start_wall = (after_utc.astimezone(tz).replace(tzinfo=None) - slack).replace(second=0, microsecond=0)
    heap: list[datetime] = []
    last: datetime | None = None
    for wall in cron.wall_times(start_wall):
        for inst in _instants(cron, tz, wall):
            if inst > after_utc:
                heapq.heappush(heap, inst)
        # every instant from later wall times is after (wall - slack) in UTC terms
        bound = wall.replace(tzinfo=tz).astimezone(UTC) - slack
        while heap and heap[0] < bound:
            inst = heapq.heappop(heap)
            if inst != last:
                last = inst
                yield inst
    while heap:
        inst = heapq.heappop(heap)
        if inst != last:
            last = inst
            yield inst


def _utc(t: datetime) -> datetime:
    if t.tzinfo is None:
        raise ValueError("Times passed to the scheduler must carry a time zone (e.g. datetime.now(UTC)).")
    return t.astimezone(UTC)


def next_runs(schedule: Schedule, after: datetime, n: int = 5) -> list[datetime]:
    """The next `n` run instants strictly after `after`, as aware datetimes in the schedule's zone."""
    tz = zone(schedule.tz)
    out: list[datetime] = []
    for inst in _iter_instants(schedule.parsed, tz, _utc(after)):
        out.append(inst.astimezone(tz))
        if len(out) >= n:
            break
    return out


def due_runs(schedule: Schedule, last_checked: datetime, now: datetime, limit: int | None = None) -> list[datetime]:
    """Every instant in (last_checked, now] at which the schedule fires, ascending, in UTC.

    Pure. With `limit`, only the last `limit` of them (older ones are counted by `count_due`)."""
    lc, nw = _utc(last_checked), _utc(now)
    if nw <= lc:
        return []
    tz = zone(schedule.tz)
    cron = schedule.parsed
    slack = timedelta(hours=4)
    off = (lc - slack).astimezone(tz).utcoffset()
    if nw - lc < timedelta(days=2) and off == (nw + slack).astimezone(tz).utcoffset():
        # no offset change anywhere near the window: wall time and instants map one to one
        assert off is not None
        fast: list[datetime] = []
        end_wall = nw.replace(tzinfo=None) + off
        for wall in cron.wall_times(lc.replace(tzinfo=None) + off):
            if wall > end_wall:
                break
            inst = (wall - off).replace(tzinfo=UTC)
            if inst > lc:
                fast.append(inst)
        return fast[-limit:] if limit is not None else fast
    out: list[datetime] = []
    for inst in _iter_instants(cron, tz, lc):
        if inst > nw:
            break
        out.append(inst)
        if limit is not None and len(out) > limit * 2:
            del out[: len(out) - limit]
    if limit is not None:
        out = out[-limit:]
    return out


# ---- the run ledger (plain SQL: SQLite and PostgreSQL) -----------------------------------------

SCHEDULES_MIGRATION: tuple[str, list[str]] = (
    "0004_schedules",
    [
        """CREATE TABLE schedules (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, instance_id TEXT NOT NULL,
            cron TEXT NOT NULL, tz TEXT NOT NULL DEFAULT 'UTC', prompt TEXT NOT NULL,
            catch_up TEXT NOT NULL DEFAULT 'once', paused BOOLEAN NOT NULL DEFAULT FALSE,
            created_at DOUBLE PRECISION NOT NULL, last_checked DOUBLE PRECISION NOT NULL,
            name TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'agent')""",
        "CREATE INDEX ix_schedules_person ON schedules (person_id, instance_id)",
        """CREATE TABLE schedule_runs (id TEXT PRIMARY KEY, schedule_id TEXT NOT NULL REFERENCES schedules(id)
            ON DELETE CASCADE, due_at BIGINT NOT NULL, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION,
            outcome TEXT NOT NULL, turn_id TEXT, error TEXT, claimed_by TEXT,
            UNIQUE (schedule_id, due_at))""",
        "CREATE INDEX ix_schedule_runs_turn ON schedule_runs (turn_id)",
        "CREATE INDEX ix_schedule_runs_outcome ON schedule_runs (outcome, started_at)",
        "CREATE TABLE scheduler_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
)
"""Append to store.MIGRATIONS. `kind` is 'agent' (a turn with `prompt`) or a built-in job name such as
'memory.producer' for the memory timers; `name` is a label for people. Outcomes: running (claimed and
started, turn not finished), ran, failed, skipped (policy or pause said no), missed (folded into one
catch-up run)."""

SCHEDULES_KEPT_RUNS_MIGRATION: tuple[str, list[str]] = (
    "0025_schedule_deleted_at",
    ["ALTER TABLE schedules ADD COLUMN deleted_at DOUBLE PRECISION"],
)
"""A schedule the person deletes is kept, marked deleted (it never runs and is not listed again), so its past runs
stay in their ledger under its name; `forget_schedules` takes it with its runs (a person's removal, an agent's)."""

OUTCOMES = ("running", "ran", "failed", "skipped", "missed")
MAX_RECORDED_MISSES = 100  # per schedule per tick; older ones are summed up in the oldest row's note
STALE_CLAIM_S = 300.0  # a claim with no turn after this long belonged to a Pod that stopped


@dataclass
class ScheduleRow:
    id: str
    person_id: str
    instance_id: str
    cron: str
    tz: str
    prompt: str
    catch_up: str
    paused: bool
    created_at: float
    last_checked: float
    name: str = ""
    kind: str = "agent"
    deleted_at: float | None = None  # the person deleted it: it never runs again; its past runs stay in the ledger

    @property
    def schedule(self) -> Schedule:
        return Schedule(self.cron, self.tz, self.catch_up)

    def to_dict(self, now: datetime | None = None, previews: int = 3) -> dict[str, Any]:
        d = asdict(self)
        d["description"] = describe(self.cron)
        after = now or datetime.now(UTC)
        d["next_runs"] = [t.isoformat() for t in next_runs(self.schedule, after, previews)]
        return d


@dataclass
class RunRecord:
    id: str
    schedule_id: str
    due_at: datetime
    outcome: str
    started_at: float | None = None
    finished_at: float | None = None
    turn_id: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["due_at"] = self.due_at.isoformat()
        return d


@dataclass
class Claim:
    """A due run this ticker won: start it, then `complete_claim` with the turn id or the error."""

    run_id: str
    schedule: ScheduleRow
    due_at: datetime
    late: bool
    note: str | None = None


def _conn(bind: Engine | Connection) -> Any:
    """A transaction on an Engine, or the caller's own Connection (the caller commits)."""
    return bind.begin() if isinstance(bind, Engine) else contextlib.nullcontext(bind)


def _row(r: Any) -> ScheduleRow:
    m = r._mapping
    return ScheduleRow(id=m["id"], person_id=m["person_id"], instance_id=m["instance_id"], cron=m["cron"],
                       tz=m["tz"], prompt=m["prompt"], catch_up=m["catch_up"], paused=bool(m["paused"]),
                       created_at=float(m["created_at"]), last_checked=float(m["last_checked"]),
                       name=m["name"], kind=m["kind"], deleted_at=m["deleted_at"])


def create_schedule(bind: Engine | Connection, *, person_id: str, instance_id: str, cron: str, prompt: str,
                    tz: str = "UTC", catch_up: str = "once", name: str = "", kind: str = "agent",
                    now: datetime | None = None) -> ScheduleRow:
    """Validates and stores a schedule; it fires only for due times after its creation."""
    Schedule(cron, tz, catch_up)  # raises CronError with a reason a person can act on
    if kind == "agent" and not prompt.strip():
        raise CronError("A schedule needs a prompt: what should the agent do each time?")
    created = _utc(now).timestamp() if now else time.time()
    row = ScheduleRow(id=uuid.uuid4().hex, person_id=person_id, instance_id=instance_id, cron=cron.strip(), tz=tz,
                      prompt=prompt, catch_up=catch_up, paused=False, created_at=created, last_checked=created,
                      name=name, kind=kind)
    with _conn(bind) as c:
        c.execute(text("INSERT INTO schedules (id, person_id, instance_id, cron, tz, prompt, catch_up, paused, "
                       "created_at, last_checked, name, kind) VALUES (:id, :person_id, :instance_id, :cron, :tz, "
                       ":prompt, :catch_up, :paused, :created_at, :last_checked, :name, :kind)"), asdict(row))
    return row


def get_schedule(bind: Engine | Connection, schedule_id: str) -> ScheduleRow | None:
    """The schedule, None if there is none or it was deleted."""
    with _conn(bind) as c:
        r = c.execute(text("SELECT * FROM schedules WHERE id = :id AND deleted_at IS NULL"), {"id": schedule_id}).first()
    return _row(r) if r else None


def list_schedules(bind: Engine | Connection, person_id: str | None = None, *,
                   deleted: bool = False) -> list[ScheduleRow]:
    """The schedules (of one person), oldest first; `deleted`: those the person deleted too (for their ledger)."""
    where = [w for w, on in (("person_id = :p", person_id), ("deleted_at IS NULL", not deleted)) if on]
    q = "SELECT * FROM schedules" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY created_at, id"
    with _conn(bind) as c:
        return [_row(r) for r in c.execute(text(q), {"p": person_id})]


def delete_schedule(bind: Engine | Connection, schedule_id: str) -> bool:
    """The person deletes a schedule: it never runs again and is listed no more; its past runs stay in the ledger,
    under its name. False if there was no such schedule (or it was deleted already)."""
    with _conn(bind) as c:
        return bool(c.execute(text("UPDATE schedules SET deleted_at = :t WHERE id = :id AND deleted_at IS NULL"),
                              {"t": time.time(), "id": schedule_id}).rowcount)


def forget_schedules(bind: Engine | Connection, person_id: str, instance_id: str | None = None) -> int:
    """Deletes every schedule of a person (or of one agent of theirs), those deleted before too, with all their runs:
    nothing of them stays in the ledger (a person's removal, an agent's deletion). Returns how many schedules."""
    p = {"p": person_id, "i": instance_id}
    mine = "person_id = :p" + (" AND instance_id = :i" if instance_id is not None else "")
    with _conn(bind) as c:
        c.execute(text(f"DELETE FROM schedule_runs WHERE schedule_id IN (SELECT id FROM schedules WHERE {mine})"),  # noqa: S608
                  p)
        return c.execute(text(f"DELETE FROM schedules WHERE {mine}"), p).rowcount  # noqa: S608 - our own SQL


def set_paused(bind: Engine | Connection, schedule_id: str, paused: bool) -> None:
    """Pauses or resumes one schedule. Due times while paused are recorded as skipped, not caught up."""
    with _conn(bind) as c:
        if not c.execute(text("UPDATE schedules SET paused = :p WHERE id = :id"),
                         {"p": bool(paused), "id": schedule_id}).rowcount:
            raise CronError(f"No schedule {schedule_id!r}.")


def set_global_pause(bind: Engine | Connection, paused: bool) -> None:
    """The tray's pause-all switch: while set, every due time is recorded as skipped."""
    with _conn(bind) as c:
        c.execute(text("INSERT INTO scheduler_state (key, value) VALUES ('paused', :v) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value"), {"v": json.dumps(bool(paused))})


def is_globally_paused(bind: Engine | Connection) -> bool:
    with _conn(bind) as c:
        r = c.execute(text("SELECT value FROM scheduler_state WHERE key = 'paused'")).first()
    return bool(json.loads(r[0])) if r else False


def list_runs(bind: Engine | Connection, schedule_id: str | None = None, limit: int = 200, *,
              person_id: str | None = None) -> list[RunRecord]:
    """The newest `limit` ledger rows (of one schedule; of one person's schedules, deleted ones too), newest first."""
    where = [w for w, on in (("r.schedule_id = :s", schedule_id), ("s.person_id = :p", person_id)) if on]
    q = ("SELECT r.* FROM schedule_runs r" + (" JOIN schedules s ON s.id = r.schedule_id" if person_id else "")
         + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.due_at DESC, r.id LIMIT :lim")
    with _conn(bind) as c:
        rows = c.execute(text(q), {"s": schedule_id, "p": person_id, "lim": limit}).all()
    return [RunRecord(id=m["id"], schedule_id=m["schedule_id"], due_at=datetime.fromtimestamp(m["due_at"], UTC),
                      outcome=m["outcome"], started_at=m["started_at"], finished_at=m["finished_at"],
                      turn_id=m["turn_id"], error=m["error"]) for m in (r._mapping for r in rows)]


def _insert_run(c: Connection, schedule_id: str, due: datetime, outcome: str, at: float, *,
                error: str | None = None, claimed_by: str | None = None) -> str | None:
    """INSERTs one ledger row; None if another ticker already has a row for this due time."""
    run_id = uuid.uuid4().hex
    res = c.execute(text("INSERT INTO schedule_runs (id, schedule_id, due_at, started_at, finished_at, outcome, error, "
                         "claimed_by) VALUES (:id, :s, :d, :st, :fin, :o, :e, :by) "
                         "ON CONFLICT (schedule_id, due_at) DO NOTHING"),
                    {"id": run_id, "s": schedule_id, "d": int(due.timestamp()),
                     "st": at if outcome == "running" else None,
                     "fin": None if outcome == "running" else at, "o": outcome, "e": error, "by": claimed_by})
    return run_id if res.rowcount else None


def _fmt(t: datetime, tz: str) -> str:
    return t.astimezone(zone(tz)).strftime("%Y-%m-%d %H:%M %Z")


def plan_tick(engine: Engine, now: datetime, *, owner: str = "") -> tuple[list[Claim], list[RunRecord]]:
    """Claims what is due at `now` (one transaction per schedule) and records misses and skips.

    Returns (claims to start, ledger rows written without a run). Claims are already in the ledger
    as 'running'; the caller starts each and calls `complete_claim`."""
    now_u = _utc(now)
    now_ts = now_u.timestamp()
    claims: list[Claim] = []
    recorded: list[RunRecord] = []
    global_pause = is_globally_paused(engine)
    for s in list_schedules(engine):
        last = datetime.fromtimestamp(s.last_checked, UTC)
        if now_u < last - CLOCK_SET_BACK:
            if (back := _clock_set_back(engine, s, now_u)) is None:
                continue
            s, last = back
        if now_u <= last:
            continue
        sched = s.schedule
        due = due_runs(sched, last, now_u, limit=MAX_RECORDED_MISSES + 1)
        if not due:
            continue  # nothing due: the checkpoint stays (the next window still starts there)
        total = _count_due(sched, last, now_u) if len(due) > MAX_RECORDED_MISSES else len(due)
        with engine.begin() as c:
            # advance the checkpoint first and only forward: a ticker that lost the race sees rowcount 0
            res = c.execute(text("UPDATE schedules SET last_checked = :n WHERE id = :id AND last_checked = :old "
                                 "AND deleted_at IS NULL"),  # nor one the person deleted since it was read
                            {"n": now_ts, "id": s.id, "old": s.last_checked})
            if not res.rowcount:
                continue
            to_run: list[datetime] = []
            rest: list[tuple[datetime, str, str]] = []
            on_time = [d for d in due if now_u - d <= ON_TIME_GRACE]
            late = [d for d in due if now_u - d > ON_TIME_GRACE]
            if global_pause or s.paused:
                why = "all schedules were paused" if global_pause else "this schedule was paused"
                rest = [(d, "skipped", why) for d in due]
            elif not late:
                to_run = on_time  # a normal tick: everything due is on time
            elif s.catch_up == "once":  # a gap: exactly one run, for the latest due time
                to_run = [due[-1]]
                rest = [(d, "missed", f"due while Hearth was not running; caught up once at {_fmt(now_u, s.tz)} "
                         f"(the run for {_fmt(due[-1], s.tz)})") for d in due[:-1]]
            else:  # a gap, policy skip: only a due time that is still on time runs
                to_run = on_time[-1:]
                rest = [(d, "skipped", "due while Hearth was not running; catch-up policy is skip")
                        for d in due if d not in to_run]
            if total > len(due) and rest:
                d0, o0, e0 = rest[0]
                rest[0] = (d0, o0, f"{e0}; {total - len(due)} earlier due times since {_fmt(last, s.tz)} "
                           "were not listed one by one")
            for d in to_run:
                run_id = _insert_run(c, s.id, d, "running", now_ts, claimed_by=owner or None)
                if run_id:
                    claims.append(Claim(run_id, s, d, late=d in late,
                                        note="catch-up run after a gap" if d in late else None))
            for d, outcome, why in rest:
                run_id = _insert_run(c, s.id, d, outcome, now_ts, error=why)
                if run_id:
                    recorded.append(RunRecord(run_id, s.id, d, outcome, finished_at=now_ts, error=why))
    return claims, recorded


def _clock_set_back(engine: Engine, s: ScheduleRow, now: datetime) -> tuple[ScheduleRow, datetime] | None:
    """The machine's clock was set back (it ran ahead, then was corrected): the checkpoint, which only moves forward,
    stood at a time that has not come yet, so nothing ran until the clock passed it again (days, after a big
    correction). It goes back to just before ``now``, and the due times after it that the clock running ahead
    recorded as missed or skipped are struck off the ledger: they have not come yet and run when they do. A due
    time that ran then keeps its row, so it never runs twice. None when another ticker moved the checkpoint first."""
    back = now - ON_TIME_GRACE  # what is due now is on time, as in any tick
    with engine.begin() as c:
        if not c.execute(text("UPDATE schedules SET last_checked = :n WHERE id = :id AND last_checked = :old"),
                         {"n": back.timestamp(), "id": s.id, "old": s.last_checked}).rowcount:
            return None
        c.execute(text("DELETE FROM schedule_runs WHERE schedule_id = :id AND due_at > :after "
                       "AND outcome IN ('missed', 'skipped')"), {"id": s.id, "after": int(back.timestamp())})
    log.warning("The clock was set back (schedule %s last checked at %s, the time now is %s): its next due times "
                "run when they come.", s.name or s.kind, _fmt(datetime.fromtimestamp(s.last_checked, UTC), s.tz),
                _fmt(now, s.tz))
    return replace(s, last_checked=back.timestamp()), back


def _count_due(sched: Schedule, last: datetime, now: datetime) -> int:
    n = 0
    for inst in _iter_instants(sched.parsed, zone(sched.tz), last):
        if inst > now:
            break
        n += 1
    return n


def complete_claim(engine: Engine, claim: Claim, *, turn_id: str | None = None, error: str | None = None) -> RunRecord:
    """Records that a claimed run started a turn (outcome stays 'running' until `record_turn_finished`),
    or failed to start (outcome 'failed' with the reason)."""
    with engine.begin() as c:
        if error is not None or turn_id is None:
            c.execute(text("UPDATE schedule_runs SET outcome = 'failed', error = :e, finished_at = :f WHERE id = :id"),
                      {"e": error or "the run did not start", "f": time.time(), "id": claim.run_id})
            return RunRecord(claim.run_id, claim.schedule.id, claim.due_at, "failed", error=error)
        c.execute(text("UPDATE schedule_runs SET turn_id = :t WHERE id = :id"), {"t": turn_id, "id": claim.run_id})
    return RunRecord(claim.run_id, claim.schedule.id, claim.due_at, "running", turn_id=turn_id, started_at=time.time())


def record_turn_finished(bind: Engine | Connection, turn_id: str, *, ok: bool, error: str | None = None,
                         at: float | None = None) -> bool:
    """Closes the ledger row of the run that started `turn_id`: 'ran' or 'failed'. False if no such run."""
    with _conn(bind) as c:
        return bool(c.execute(
            text("UPDATE schedule_runs SET outcome = :o, error = :e, finished_at = :f WHERE turn_id = :t "
                 "AND outcome = 'running'"),
            {"o": "ran" if ok else "failed", "e": None if ok else (error or "the run failed"),
             "f": at or time.time(), "t": turn_id}).rowcount)


def recover_stale_claims(bind: Engine | Connection, now: datetime, stale_s: float = STALE_CLAIM_S) -> int:
    """Claims that never got a turn (the Pod stopped between claim and start) become 'failed'; never re-run."""
    with _conn(bind) as c:
        return c.execute(
            text("UPDATE schedule_runs SET outcome = 'failed', finished_at = :n, error = :e WHERE outcome = 'running' "
                 "AND turn_id IS NULL AND started_at < :cut"),
            {"n": _utc(now).timestamp(), "cut": _utc(now).timestamp() - stale_s,
             "e": "Hearth stopped before this run could start; it was not retried so it cannot run twice."}).rowcount


StartRun = Callable[[ScheduleRow, datetime], str]


@dataclass
class TickResult:
    started: list[RunRecord] = field(default_factory=list)
    recorded: list[RunRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"started": [r.to_dict() for r in self.started], "recorded": [r.to_dict() for r in self.recorded]}


def tick(engine: Engine, now: datetime, start_run: StartRun, *, owner: str = "") -> TickResult:
    """Runs what is due at `now` exactly once across every ticker sharing this database.

    `start_run(schedule, due_at)` must start the work and return its turn id quickly (it should not
    wait for the turn to finish); an exception from it marks the run failed with its message."""
    recover_stale_claims(engine, now)
    claims, recorded = plan_tick(engine, now, owner=owner)
    result = TickResult(recorded=recorded)
    for cl in claims:
        try:
            turn_id = start_run(cl.schedule, cl.due_at)
        except Exception as exc:  # noqa: BLE001 - a failed start is a ledger outcome, not a crash
            result.started.append(complete_claim(engine, cl, error=f"{type(exc).__name__}: {exc}"))
            continue
        result.started.append(complete_claim(engine, cl, turn_id=turn_id))
    return result


async def atick(engine: Engine, now: datetime, start_run: Callable[[ScheduleRow, datetime], Awaitable[str]], *,
                owner: str = "") -> TickResult:
    """`tick` for an asyncio host whose start_run is a coroutine (e.g. wrapping Pod.start_turn)."""
    import asyncio

    await asyncio.to_thread(recover_stale_claims, engine, now)
    claims, recorded = await asyncio.to_thread(plan_tick, engine, now, owner=owner)
    result = TickResult(recorded=recorded)
    for cl in claims:
        try:
            turn_id = await start_run(cl.schedule, cl.due_at)
        except Exception as exc:  # noqa: BLE001
            result.started.append(complete_claim(engine, cl, error=f"{type(exc).__name__}: {exc}"))
            continue
        result.started.append(complete_claim(engine, cl, turn_id=turn_id))
    return result


def create_tables(engine: Engine) -> None:
    """Applies SCHEDULES_MIGRATION directly (for tests and benchmarks without the Store)."""
    with engine.begin() as c:
        for stmt in SCHEDULES_MIGRATION[1] + SCHEDULES_KEPT_RUNS_MIGRATION[1]:
            c.execute(text(stmt))
