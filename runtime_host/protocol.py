"""The JSON-lines protocol between the Pod and a worker: message kinds and framing. Stdlib only.

One message per line, UTF-8 JSON objects with a "type" key. The pipe itself is the identity:
a worker is bound once, at spawn, to one (person, agent) pair and never names another.

Pod -> worker:  bind, turn.start, ack, pod.result, health.ping, shutdown
Worker -> pod:  hello, ready, event, pod.call, health.pong, error
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1
# A line longer than this is a protocol violation: the Pod treats the worker as broken.
MAX_LINE_BYTES = 8 * 1024 * 1024

# Event kinds a worker streams during a turn (inside {"type": "event", "event": {...}}).
EVENT_KINDS = frozenset(
    {
        "iteration",
        "delta",
        "step.started",
        "step.finished",
        "subagent.started",
        "subagent.finished",
        "approval.requested",
        "turn.finished",
    }
)
# Events the Pod must write before the worker may go on (the worker waits for an ack).
ACKED_EVENTS = frozenset({"step.started", "step.finished", "turn.finished"})


class ProtocolError(Exception):
    """A line on the pipe that is not a valid protocol message."""


def encode(msg: dict[str, Any]) -> bytes:
    line = json.dumps(msg, ensure_ascii=False, separators=(",", ":"), default=_not_json)
    data = line.encode("utf-8") + b"\n"
    if len(data) > MAX_LINE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes exceeds the {MAX_LINE_BYTES}-byte line limit")
    return data


def decode(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} bytes exceeds the {MAX_LINE_BYTES}-byte limit")
    try:
        msg = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        preview = line[:80].decode("utf-8", "replace")
        raise ProtocolError(f"not a JSON message: {preview!r} ({exc})") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ProtocolError("a message must be a JSON object with a string 'type'")
    return msg


def _not_json(value: Any) -> str:
    # Tool results may hold values JSON cannot express (sets, bytes, objects): show them, never crash.
    return repr(value)
