"""The JSON-lines protocol between the Pod and a worker: message kinds and framing. Stdlib only.

One message per line, UTF-8 JSON objects with a "type" key. The pipe itself is the identity:
a worker is bound once, at spawn, to one (person, agent) pair and never names another.

Pod -> worker:  bind, turn.start, ack, pod.result, health.ping, shutdown
Worker -> pod:  hello, ready, event, pod.call, health.pong, error
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
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
    data = valid_text(line).encode("utf-8") + b"\n"  # a lone surrogate travels as U+FFFD, never fails the turn
    if len(data) > MAX_LINE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes exceeds the {MAX_LINE_BYTES}-byte line limit")
    return data


def decode(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} bytes exceeds the {MAX_LINE_BYTES}-byte limit")
    try:
        msg = loads_text(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        preview = line[:80].decode("utf-8", "replace")
        raise ProtocolError(f"not a JSON message: {preview!r} ({exc})") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ProtocolError("a message must be a JSON object with a string 'type'")
    return msg


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (what a "\\ud800" JSON escape or surrogateescape-decoded bytes leave in a
    str) replaced by U+FFFD; no UTF-8 pipe, store or hash can take one. A valid pair becomes its character."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _valid_string(s: str, end: int, strict: bool = True) -> tuple[str, int]:
    text, end = json.decoder.scanstring(s, end, strict)
    return valid_text(text), end


_TEXT_DECODER = json.JSONDecoder(object_pairs_hook=lambda pairs: {valid_text(k): v for k, v in pairs})
_TEXT_DECODER.parse_string = _valid_string  # type: ignore[attr-defined]
_TEXT_DECODER.scan_once = json.scanner.py_make_scanner(_TEXT_DECODER)


def loads_text(raw: str | bytes) -> Any:
    """``json.loads`` for JSON from outside (a model, a worker): a "\\ud800"-style escape of a lone surrogate, which
    no UTF-8 store, pipe or hash can take, comes back as U+FFFD instead of failing whatever writes it next; so does
    each byte of an answer that is not UTF-8 (a server's "caf\\xe9")."""
    try:
        return _loads(raw)
    except UnicodeDecodeError:
        return _loads(raw.decode("utf-8", "replace"))  # type: ignore[union-attr]


def _loads(raw: str | bytes) -> Any:
    if not any(m in raw for m in ((b"\\ud", b"\\uD") if isinstance(raw, bytes) else ("\\ud", "\\uD"))):
        return json.loads(raw)  # only an escape can make a surrogate: without one the fast parser is exact
    text = raw if isinstance(raw, str) else raw.decode("utf-8")
    obj, end = _TEXT_DECODER.raw_decode(text, json.decoder.WHITESPACE.match(text, 0).end())
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data", text, end)
    return obj


def _not_json(value: Any) -> str:
    # Tool results may hold values JSON cannot express (sets, bytes, objects): show them, never crash.
    return repr(value)
