"""Anthropic Messages API: POST {base_url}/messages, translated to and from Hearth's internal form.

Request: `system` is a top-level field, not a message; `messages` alternate user/assistant and hold
content blocks (text, tool_use in assistant turns, tool_result in user turns); tools carry an
`input_schema`; `max_tokens` is required. Auth is the `x-api-key` header plus `anthropic-version`.
Stream: SSE events message_start, content_block_start, content_block_delta (text_delta,
input_json_delta), content_block_stop, message_delta (stop_reason, usage), message_stop; `ping` and
unknown events are ignored; `error` ends the answer. The parser is separate from HTTP so its cost can
be measured on its own (bench/providers.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from runtime_host.protocol import loads_text
from runtime_host.providers import (
    Finished,
    ProviderError,
    ProviderEvent,
    Route,
    TextDelta,
    ToolCall,
    text_part,
    truncated,
    wire_shape,
)
from runtime_host.providers.http import bounded_body, bounded_lines, open_stream, stream_error
from runtime_host.providers.openai_compat import parse_arguments
from runtime_host.providers.sse import iter_sse

API_VERSION = "2023-06-01"
MAX_TOKENS = 8192  # required by the API; every current Claude model allows at least this many

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")


def wire_tool_id(call_id: str) -> str:
    """Anthropic accepts tool ids matching ^[A-Za-z0-9_-]+$; ids from other providers are mapped."""
    clean = _ID_BAD.sub("_", call_id or "")[:200]
    return clean or "toolu_hearth"


def is_error_result(content: str) -> bool:
    """The agent loop writes failed tool calls as 'error: ...' (see worker/loop.py)."""
    return content.startswith("error:")


def to_wire(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Internal messages -> (system text, Anthropic messages with merged same-role turns)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role == "system":
            if content:
                system.append(content)
        elif role == "user":
            add("user", [{"type": "text", "text": content}] if content.strip() else [])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if content.strip():  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": content})
            for tc in m.get("tool_calls") or []:
                blocks.append(
                    {"type": "tool_use", "id": wire_tool_id(tc["id"]), "name": tc["name"], "input": tc.get("arguments") or {}}
                )
            add("assistant", blocks)
        elif role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": wire_tool_id(m["tool_call_id"]),
                "content": content or "(no output)",
            }
            if is_error_result(content):
                block["is_error"] = True
            # All results for one assistant turn go in the next user message, before any text.
            add("user", [block])
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continuing an earlier conversation)"}]})
    return "\n\n".join(system), out


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("parameters") or {"type": "object"}}
        for t in tools
    ]


class AnthropicStreamParser:
    """Feeds SSE data payloads of a Messages stream; returns internal events. Raises ProviderError."""

    def __init__(self, provider: str, model: str):
        self.provider = provider
        self.model = model
        self._blocks: dict[int, dict[str, Any]] = {}
        self._stop: str | None = None
        self._usage: dict[str, Any] = {}
        self._calls = 0
        self.done = False

    def feed(self, data: str) -> list[ProviderEvent]:
        try:
            ev = loads_text(data)
        except json.JSONDecodeError:
            raise ProviderError(
                "malformed",
                f"Provider {self.provider!r} sent a malformed stream event: {data[:80]!r}. Try again, or pick another model.",
            ) from None
        if not isinstance(ev, dict):
            raise ProviderError("malformed", f"Provider {self.provider!r} sent a stream event that is not an object.")
        with wire_shape(self.provider, "a stream event that is not a Messages API event"):
            return self._event(ev)

    def _event(self, ev: dict[str, Any]) -> list[ProviderEvent]:
        t = ev.get("type")
        if t == "content_block_delta":
            delta = ev.get("delta") or {}
            dt = delta.get("type")
            if dt == "text_delta":
                text = text_part(delta.get("text"))
                return [TextDelta(text)] if text else []
            if dt == "input_json_delta":
                block = self._blocks.get(ev.get("index", 0))
                if block is None:
                    raise ProviderError(
                        "malformed", f"Provider {self.provider!r} sent tool input for a block it never started. Try again."
                    )
                block["json"].append(delta.get("partial_json") or "")
            return []  # thinking_delta, signature_delta, citations_delta: not shown
        if t == "content_block_start":
            block = ev.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._blocks[ev.get("index", 0)] = {
                    "id": block.get("id") or "", "name": block.get("name") or "", "json": [], "input": block.get("input"),
                }
            elif block.get("type") == "text" and block.get("text"):
                return [TextDelta(text_part(block["text"]))]
            return []
        if t == "content_block_stop":
            block = self._blocks.pop(ev.get("index", 0), None)
            return [self._tool_call(block)] if block is not None else []
        if t == "message_start":
            msg = ev.get("message") or {}
            self.model = msg.get("model") or self.model
            self._usage.update(msg.get("usage") or {})
            return []
        if t == "message_delta":
            delta = ev.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop = delta["stop_reason"]
            self._usage.update(ev.get("usage") or {})
            return []
        if t == "message_stop":
            return self._finish()
        if t == "error":
            raise stream_error(self.provider, ev.get("error") or {})
        return []  # ping, and event types added after this was written

    def _tool_call(self, block: dict[str, Any]) -> ToolCall:
        self._calls += 1
        raw = "".join(block["json"])
        if not raw and isinstance(block.get("input"), dict) and block["input"]:
            raw = json.dumps(block["input"])
        call = {"id": block["id"], "name": block["name"], "arguments": raw}
        return ToolCall(block["id"] or f"toolu_{self._calls}", block["name"], parse_arguments(self.provider, call))

    def _finish(self) -> list[ProviderEvent]:
        self.done = True
        events: list[ProviderEvent] = [self._tool_call(b) for _, b in sorted(self._blocks.items())]
        self._blocks.clear()
        reason = _STOP_REASONS.get(self._stop or "", self._stop or ("tool_calls" if self._calls else "stop"))
        events.append(Finished(reason, self.model, self._usage))
        return events

    def close(self) -> list[ProviderEvent]:
        """End of the byte stream: without message_stop (or at least a stop_reason) the answer was cut off."""
        if self.done:
            return []
        if self._stop is None:
            raise truncated(self.provider)
        return self._finish()


def events_from_message(provider: str, model: str, raw: bytes) -> Iterator[ProviderEvent]:
    """A non-streamed Messages answer ({"type": "message", "content": [...]}) as internal events."""
    try:
        obj = loads_text(raw)
    except json.JSONDecodeError:
        obj = None
    events: list[ProviderEvent] = []
    with wire_shape(provider, "a body that is not a Messages API message"):
        blocks = obj["content"]  # type: ignore[index]
        if obj.get("type") == "error":  # type: ignore[union-attr]
            raise KeyError("error")
        calls = 0
        for b in blocks or []:
            if b.get("type") == "text" and b.get("text"):
                events.append(TextDelta(text_part(b["text"])))
            elif b.get("type") == "tool_use":
                calls += 1
                args = b.get("input")
                events.append(ToolCall(b.get("id") or f"toolu_{calls}", text_part(b.get("name")),
                                       args if isinstance(args, dict) else {}))
        stop = obj.get("stop_reason") or ""  # type: ignore[union-attr]
        events.append(Finished(_STOP_REASONS.get(stop, stop or "stop"), obj.get("model") or model,  # type: ignore[union-attr]
                               obj.get("usage") or {}))  # type: ignore[union-attr]
    yield from events


class AnthropicProvider:
    supports_tools = True

    def __init__(self, route: Route):
        self.route = route

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stream: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
        r = self.route
        if not r.key and "api.anthropic.com" in r.base_url:
            raise ProviderError(
                "auth",
                f"No key for {r.provider!r}: add an Anthropic key in Settings → Providers "
                f"(or `python -m runtime_host provider add {r.provider} --key-from-stdin`).",
            )
        url = r.base_url.rstrip("/") + "/messages"
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            "anthropic-version": API_VERSION,
        }
        if r.key:
            headers["x-api-key"] = r.key
        system, wire = to_wire(messages)
        body: dict[str, Any] = {"model": r.model, "max_tokens": MAX_TOKENS, "messages": wire, "stream": stream}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_wire_tools(tools)
        return url, headers, body

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        """One call without streaming: the whole message arrives as one JSON body."""
        url, headers, body = self._request(messages, tools, stream=False)
        with open_stream(self.route, url, headers, body) as resp:
            raw = bounded_body(resp, self.route)
        yield from events_from_message(self.route.provider, self.route.model, raw)

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        r = self.route
        url, headers, body = self._request(messages, tools, stream=True)
        parser = AnthropicStreamParser(r.provider, r.model)
        with open_stream(r, url, headers, body) as resp:
            if "text/event-stream" not in resp.headers.get("content-type", ""):
                yield from events_from_message(r.provider, r.model, bounded_body(resp, r))
                return
            for _event, data in iter_sse(bounded_lines(resp, self.route)):
                yield from parser.feed(data)
                if parser.done:
                    return
        yield from parser.close()
