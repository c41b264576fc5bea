"""Worker lifecycle states and the transitions allowed between them. Stdlib only."""

from __future__ import annotations

from enum import Enum


class WorkerState(str, Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPING = "stopping"
    BACKOFF = "backoff"
    FATAL = "fatal"


S = WorkerState
TRANSITIONS: dict[WorkerState, frozenset[WorkerState]] = {
    S.STOPPED: frozenset({S.STARTING}),
    S.STARTING: frozenset({S.READY, S.BACKOFF, S.FATAL, S.STOPPING}),
    S.READY: frozenset({S.BUSY, S.STOPPING, S.BACKOFF}),
    S.BUSY: frozenset({S.READY, S.STOPPING, S.BACKOFF}),
    S.STOPPING: frozenset({S.STOPPED}),
    S.BACKOFF: frozenset({S.STARTING, S.FATAL, S.STOPPED}),
    S.FATAL: frozenset({S.STARTING, S.STOPPED}),  # a person may reset a fatal worker
}
RUNNING_STATES = frozenset({S.READY, S.BUSY})
LIVE_STATES = frozenset({S.STARTING, S.READY, S.BUSY, S.STOPPING})


class InvalidTransition(Exception):
    pass


def check_transition(old: WorkerState, new: WorkerState) -> None:
    if new not in TRANSITIONS[old]:
        raise InvalidTransition(f"worker cannot go from {old.value} to {new.value}")
