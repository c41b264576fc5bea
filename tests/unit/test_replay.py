"""Resuming a turn: finished steps are replayed, never re-run; an interrupted side effect is recovered."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

from runtime_host.tools import write_note
from runtime_host.worker.channel import Channel
from runtime_host.worker.loop import INTERRUPTED, TurnContext, _replay


class AckingOut(io.RawIOBase):
    """Collects what the worker writes and acknowledges each message at once, like the Pod."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.channel: Channel | None = None

    def write(self, b) -> int:  # type: ignore[override]
        msg = json.loads(bytes(b))
        self.sent.append(msg)
        if "seq" in msg and self.channel:
            threading.Timer(0, self.channel.resolve, (msg["seq"],)).start()
        return len(b)

    def flush(self) -> None:
        pass


def make_ctx() -> tuple[TurnContext, AckingOut]:
    out = AckingOut()
    ch = Channel(out)  # type: ignore[arg-type]
    out.channel = ch
    binding = {"profile": {"toolkits": ["notes", "clock"]}, "routes": [], "_guard": None}  # replay runs no tool
    return TurnContext(ch, binding, {"turn_id": "t1"}, threading.Event()), out


def test_interrupted_note_that_took_effect_is_recovered_not_rerun(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    # the note was written for step s2 (by the Pod) just before the worker died (its finish was never written)
    write_note(".", "buy milk", "s2")
    steps = [
        {"id": "s1", "kind": "model", "name": "m", "status": "finished", "parent_id": None,
         "result": {"text": "", "tool_calls": [{"id": "c1", "name": "append_note", "arguments": {"text": "buy milk"}},
                                               {"id": "c2", "name": "current_time", "arguments": {}}]}},
        {"id": "s2", "kind": "tool", "name": "append_note", "status": "started", "call_id": "c1", "parent_id": None},
        {"id": "s3", "kind": "tool", "name": "current_time", "status": "started", "call_id": "c2", "parent_id": None},
    ]
    ctx, out = make_ctx()
    messages: list[dict] = []
    assert _replay(ctx, steps, messages) == (1, [])
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "name": "append_note", "content": "noted: buy milk"}
    assert messages[2]["content"] == INTERRUPTED
    finishes = {m["event"]["step_id"]: m["event"]["status"] for m in out.sent if m["event"]["type"] == "step.finished"}
    assert finishes == {"s2": "finished", "s3": "interrupted"}
    assert Path("notes.md").read_text().count("buy milk") == 1  # not written a second time
    assert os.path.exists("notes.md")
