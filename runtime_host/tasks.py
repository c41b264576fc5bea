"""The task ledger between agents: one row per hand-off that is at once the queue item, the link to
its parent and the result, with a timeline of events. SQL works on SQLite and PostgreSQL.

States: proposed -> active -> done | failed | timed_out; proposed -> rejected.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

TASKS_MIGRATION: tuple[str, list[str]] = (
    "0010_tasks",
    [
        """CREATE TABLE tasks (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, title TEXT NOT NULL,
            description TEXT NOT NULL, size TEXT NOT NULL DEFAULT 'small', parent_id TEXT,
            owner_instance TEXT NOT NULL, creator_instance TEXT NOT NULL, creator_turn TEXT, state TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
            deadline_s DOUBLE PRECISION NOT NULL, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION,
            conversation_id TEXT, turn_id TEXT, result TEXT, error TEXT)""",
        "CREATE INDEX ix_tasks_person_state ON tasks (person_id, state, created_at)",
        """CREATE TABLE task_events (id TEXT PRIMARY KEY, task_id TEXT NOT NULL, ts DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL, detail TEXT NOT NULL)""",
        "CREATE INDEX ix_task_events_task ON task_events (task_id, ts)",
    ],
)
STATES = ("proposed", "active", "done", "failed", "rejected", "timed_out")
OPEN_STATES = ("proposed", "active")
SIZES = ("small", "medium", "large")
DEFAULT_DEADLINE_S = {"small": 15 * 60.0, "medium": 60 * 60.0, "large": 4 * 3600.0}


class TaskError(ValueError):
    """A task operation that cannot be done; the message says why."""


@dataclass
class Task:
    id: str
    person_id: str
    title: str
    description: str
    size: str
    parent_id: str | None
    owner_instance: str
    creator_instance: str
    creator_turn: str | None
    state: str
    created_at: float
    updated_at: float
    deadline_s: float
    started_at: float | None = None
    finished_at: float | None = None
    conversation_id: str | None = None
    turn_id: str | None = None
    result: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _task(m: Any) -> Task:
    return Task(**{k: m[k] for k in Task.__dataclass_fields__})


def add_event(engine: Engine, task_id: str, kind: str, detail: dict[str, Any]) -> None:
    with engine.begin() as c:
        c.execute(text("INSERT INTO task_events (id, task_id, ts, kind, detail) VALUES (:i, :t, :ts, :k, :d)"),
                  {"i": uuid.uuid4().hex, "t": task_id, "ts": time.time(), "k": kind, "d": json.dumps(detail, default=str)})


def create(engine: Engine, *, person_id: str, title: str, description: str, size: str, owner_instance: str,
           creator_instance: str, creator_turn: str | None, parent_id: str | None) -> Task:
    if size not in SIZES:
        raise TaskError(f"size must be one of {', '.join(SIZES)}")
    if not title.strip():
        raise TaskError("a task needs a title")
    now = time.time()
    t = Task(uuid.uuid4().hex, person_id, title.strip()[:200], description, size, parent_id, owner_instance,
             creator_instance, creator_turn, "proposed", now, now, DEFAULT_DEADLINE_S[size])
    with engine.begin() as c:
        c.execute(text("INSERT INTO tasks (id, person_id, title, description, size, parent_id, owner_instance, "
                       "creator_instance, creator_turn, state, created_at, updated_at, deadline_s) VALUES (:id, :person_id, "
                       ":title, :description, :size, :parent_id, :owner_instance, :creator_instance, :creator_turn, :state, "
                       ":created_at, :updated_at, :deadline_s)"), t.to_dict())
    add_event(engine, t.id, "proposed", {"by": creator_instance, "to": owner_instance})
    if parent_id:
        add_event(engine, parent_id, "handed_off", {"task": t.id, "to": owner_instance, "title": t.title})
    return t


def get(engine: Engine, task_id: str) -> Task | None:
    with engine.connect() as c:
        r = c.execute(text("SELECT * FROM tasks WHERE id = :i"), {"i": task_id}).first()
    return _task(r._mapping) if r else None


def find_by_turn(engine: Engine, turn_id: str) -> Task | None:
    with engine.connect() as c:
        r = c.execute(text("SELECT * FROM tasks WHERE turn_id = :t"), {"t": turn_id}).first()
    return _task(r._mapping) if r else None


def list_tasks(engine: Engine, person_id: str, state: str | None = None, limit: int = 10000) -> list[Task]:
    q = "SELECT * FROM tasks WHERE person_id = :p" + (" AND state = :s" if state else "") + " ORDER BY created_at DESC LIMIT :n"
    with engine.connect() as c:
        return [_task(r._mapping) for r in c.execute(text(q), {"p": person_id, "s": state, "n": limit})]


def events(engine: Engine, task_id: str) -> list[dict[str, Any]]:
    with engine.connect() as c:
        rows = c.execute(text("SELECT ts, kind, detail FROM task_events WHERE task_id = :t ORDER BY ts, id"),
                         {"t": task_id}).all()
    return [{"ts": r[0], "kind": r[1], **json.loads(r[2])} for r in rows]


def transition(engine: Engine, task_id: str, old: tuple[str, ...], new: str, **fields: Any) -> bool:
    """Compare-and-set: moves the task from one of `old` to `new`; False if it was elsewhere already.
    `decided_by` goes to the timeline only; other keyword arguments are columns."""
    decided_by = fields.pop("decided_by", None)
    sets = ", ".join(f"{k} = :{k}" for k in fields)
    with engine.begin() as c:
        res = c.execute(text(f"UPDATE tasks SET state = :new, updated_at = :now{', ' + sets if sets else ''} "
                             f"WHERE id = :id AND state IN :old").bindparams(
                                 __import__("sqlalchemy").bindparam("old", expanding=True)),
                        {"new": new, "now": time.time(), "id": task_id, "old": list(old), **fields})
    if res.rowcount:
        detail = {k: v for k, v in fields.items() if k == "error"}
        if decided_by:
            detail["decided_by"] = decided_by
        add_event(engine, task_id, new, detail)
    return bool(res.rowcount)
