"""Pod events are typed (runtime_host.events) while their wire form stays the dict/JSON it was: every event a
real turn emits parses to its kind's class with the fields the window reads, and gives back the same dict."""

from __future__ import annotations

import json
from dataclasses import fields

from runtime_host import events
from tests.helpers.fake_model import Text, ToolCalls


async def test_every_event_of_a_real_turn_parses_to_its_kind_and_keeps_its_wire_form(pod, script) -> None:
    script([ToolCalls([("calculate", {"expression": "6 * 7"})]), Text("It is 42.")])
    seen: list[dict] = []
    pod.subscribe(seen.append)
    result = await pod.chat("helper", "what is 6 times 7?")
    assert result.ok
    kinds = {ev["type"] for ev in seen}
    assert {"turn.queued", "turn.started", "step.started", "step.finished", "delta", "iteration",
            "turn.finished"} <= kinds
    for ev in seen:
        before = json.dumps(ev, sort_keys=True, default=str)
        e = events.parse(ev)
        assert json.dumps(e.to_wire(), sort_keys=True, default=str) == before  # the wire form is untouched
        if ev["type"] in events.KINDS:
            assert type(e) is events.KINDS[ev["type"]] and type(e) is not events.Event
        for f in fields(e):
            if f.name != "wire" and ev.get(f.name) is not None:
                assert getattr(e, f.name) == ev[f.name], (ev["type"], f.name)
    done = next(events.parse(ev) for ev in seen if ev["type"] == "turn.finished")
    assert isinstance(done, events.TurnFinished) and done.status == "done" and done.text == "It is 42."
    assert done.conversation_id == result.conversation_id and done.origin == "chat"
    tool = next(events.parse(ev) for ev in seen if ev["type"] == "step.started" and ev["kind"] == "tool")
    assert isinstance(tool, events.StepStarted) and tool.name.endswith("calculate")


def test_an_unknown_kind_is_a_plain_event_and_typed_events_are_frozen() -> None:
    import pytest

    e = events.parse({"type": "something.new", "person": "p1", "extra": [1, 2]})
    assert type(e) is events.Event and e.person == "p1" and e.to_wire()["extra"] == [1, 2]
    a = events.parse({"type": "turn.abandoned", "turn_id": "t", "conversation_id": "c", "reason": "lease lost"})
    assert isinstance(a, events.TurnAbandoned) and a.reason == "lease lost"
    with pytest.raises(AttributeError):
        a.reason = "changed"  # type: ignore[misc]
