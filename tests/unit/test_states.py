from __future__ import annotations

import pytest

from runtime_host.states import TRANSITIONS, InvalidTransition, WorkerState, check_transition


def test_every_declared_transition_is_allowed_and_nothing_else() -> None:
    for old in WorkerState:
        for new in WorkerState:
            if new in TRANSITIONS[old]:
                check_transition(old, new)
            else:
                with pytest.raises(InvalidTransition):
                    check_transition(old, new)


def test_no_state_is_a_dead_end_except_by_design() -> None:
    # every state can eventually get back to stopped (a person can always reset an agent)
    for start in WorkerState:
        seen, frontier = {start}, [start]
        while frontier:
            for nxt in TRANSITIONS[frontier.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert WorkerState.STOPPED in seen or start == WorkerState.STOPPED
