"""Pod events, typed. The Pod (and a worker, through it) emits each event as a dict with a "type"; that wire form
(and its JSON) stays exactly as it is, so subscribers and the `serve` side keep working. A reader turns it into
one of these frozen dataclasses with `parse` and reacts per class; `to_wire` gives the dict back unchanged.

Only the kinds the window reacts to have their own class; any other kind parses to a plain `Event`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Event:
    type: str = ""
    person: str | None = None
    agent: str | None = None
    origin: str = "chat"
    conversation_id: str | None = None
    turn_id: str | None = None
    wire: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # as emitted, all fields

    def to_wire(self) -> dict[str, Any]:
        return dict(self.wire)


@dataclass(frozen=True)
class TurnQueued(Event):
    pass


@dataclass(frozen=True)
class TurnStarted(Event):
    pass


@dataclass(frozen=True)
class Delta(Event):
    text: str = ""
    step_id: str | None = None
    parent_id: str | None = None


@dataclass(frozen=True)
class Progress(Event):
    """`iteration` (the lead's steps) or `model_calls` (the turn's model calls, sub-agents included)."""
    n: int = 0
    max: int = 0


@dataclass(frozen=True)
class StepStarted(Event):
    step_id: str = ""
    parent_id: str | None = None
    kind: str = ""
    name: str = ""
    arguments: Any = None
    started_at: float | None = None


@dataclass(frozen=True)
class StepFinished(Event):
    step_id: str = ""
    status: str = ""
    result: Any = None
    finished_at: float | None = None


@dataclass(frozen=True)
class TurnResuming(Event):
    reason: str | None = None


@dataclass(frozen=True)
class TurnFinished(Event):
    status: str = ""
    text: str | None = None
    error: str | None = None
    model: str | None = None
    iterations: int | None = None
    message_id: str | None = None


@dataclass(frozen=True)
class TurnAbandoned(Event):
    """Another Hearth host holds the turn now: it stopped here and finishes there."""
    reason: str | None = None


@dataclass(frozen=True)
class WorkerState(Event):
    old: str | None = None
    new: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class CardChanged(Event):
    """card.created or card.decided."""
    card_id: str | None = None


@dataclass(frozen=True)
class ConversationChanged(Event):
    """conversation.changed or conversation.deleted."""


@dataclass(frozen=True)
class TaskChanged(Event):
    """task.proposed or task.changed."""
    task_id: str | None = None


@dataclass(frozen=True)
class Audit(Event):
    pass


@dataclass(frozen=True)
class ChannelsFailed(Event):
    error: str | None = None


KINDS: dict[str, type[Event]] = {
    "turn.queued": TurnQueued, "turn.started": TurnStarted, "delta": Delta, "iteration": Progress,
    "model_calls": Progress, "step.started": StepStarted, "step.finished": StepFinished,
    "turn.resuming": TurnResuming, "turn.finished": TurnFinished, "turn.abandoned": TurnAbandoned,
    "worker.state": WorkerState, "card.created": CardChanged, "card.decided": CardChanged,
    "conversation.changed": ConversationChanged, "conversation.deleted": ConversationChanged,
    "task.proposed": TaskChanged, "task.changed": TaskChanged, "audit": Audit, "channels.failed": ChannelsFailed,
}
_FIELDS: dict[type[Event], tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls) if f.name != "wire") for cls in {Event, *KINDS.values()}}


def parse(wire: dict[str, Any]) -> Event:
    """The typed event for a wire dict (fields it does not know stay in `wire`)."""
    cls = KINDS.get(str(wire.get("type") or ""), Event)
    known = {k: wire[k] for k in _FIELDS[cls] if wire.get(k) is not None}
    return cls(**known, wire=dict(wire))
