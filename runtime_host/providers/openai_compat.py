"""OpenAI-compatible chat completions (OpenAI, and every server that copies its wire format).

Request: POST {base_url}/chat/completions with messages, tools and stream=true.
Stream: SSE `data: {chunk}` lines, ending with `data: [DONE]`; tool calls arrive in fragments keyed
by index and are assembled here.
"""

from __future__ import annotations

import json
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
from runtime_host.providers.sse import iter_sse


def to_wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "assistant" and m.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": m.get("content") or None,
                    "tool_calls": [
                        {
                            "id": tc["id"],
                            "type": "function",
                            "function": {"name": tc["name"], "arguments": json.dumps(tc["arguments"])},
                        }
                        for tc in m["tool_calls"]
                    ],
                }
            )
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append({"role": role, "content": m.get("content") or ""})
    return out


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["parameters"]},
        }
        for t in tools
    ]


class OpenAIStreamParser:
    """Feeds SSE data payloads; yields internal events. Raises ProviderError on malformed input."""

    def __init__(self, provider: str, model: str):
        self.provider = provider
        self.model = model
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] = {}
        self.done = False

    def feed(self, data: str) -> list[ProviderEvent]:
        if data.strip() == "[DONE]":
            self.done = True
            return self._finish_events()
        try:
            chunk = loads_text(data)
        except json.JSONDecodeError:
            raise ProviderError(
                "malformed",
                f"Provider {self.provider!r} sent a malformed stream chunk: {data[:80]!r}. Try again, or pick another model.",
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderError("malformed", f"Provider {self.provider!r} sent a stream chunk that is not an object.")
        if "error" in chunk:
            raise stream_error(self.provider, chunk["error"])
        with wire_shape(self.provider, "a stream chunk that is not a chat completion chunk"):
            return self._chunk(chunk)

    def _chunk(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        events: list[ProviderEvent] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = content_text(delta.get("content"))
            if text:
                events.append(TextDelta(text))
            for frag in delta.get("tool_calls") or []:
                idx = frag.get("index", 0)
                call = self._calls.setdefault(idx, {"id": "", "name": "", "arguments": ""})
                if frag.get("id"):
                    call["id"] = frag["id"]
                fn = frag.get("function") or {}
                if fn.get("name"):
                    call["name"] += fn["name"]
                if fn.get("arguments"):
                    call["arguments"] += fn["arguments"]
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return events

    def _finish_events(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        for idx in sorted(self._calls):
            call = self._calls[idx]
            events.append(ToolCall(call["id"] or f"call_{idx}", call["name"], parse_arguments(self.provider, call)))
        events.append(Finished(self._finish or ("tool_calls" if self._calls else "stop"), self.model, self._usage))
        return events

    def close(self) -> list[ProviderEvent]:
        """End of the byte stream. Without [DONE] or a finish reason the answer was cut off."""
        if self.done:
            return []
        if self._finish is None:
            raise truncated(self.provider)
        self.done = True
        return self._finish_events()


def content_text(content: Any) -> str:
    """A message's (or delta's) content: a string, or the text of its parts ([{"type": "text", "text": ...}], as
    some compatible servers send it). Anything else is not an answer (TypeError)."""
    if isinstance(content, list):
        return "".join(text_part(p.get("text")) for p in content if p.get("type") in ("text", "output_text"))
    return text_part(content)


def parse_arguments(provider: str, call: dict[str, Any]) -> dict[str, Any]:
    raw = call["arguments"] or "{}"
    if isinstance(raw, dict):  # some compatible servers send the arguments as an object, not as its JSON text
        return raw
    try:
        args = loads_text(raw)
    except json.JSONDecodeError:
        # Returned to the model as a tool error by the loop, not a crash.
        return {"__invalid_json__": raw}
    return args if isinstance(args, dict) else {"__invalid_json__": raw}


class OpenAICompatProvider:
    supports_tools = True

    def __init__(self, route: Route):
        self.route = route

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stream: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
        r = self.route
        url = r.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json"}
        if r.key:
            headers["Authorization"] = f"Bearer {r.key}"
        body: dict[str, Any] = {"model": r.model, "messages": to_wire_messages(messages), "stream": stream}
        if tools:
            body["tools"] = to_wire_tools(tools)
        return url, headers, body

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        """One call without streaming: the whole answer arrives as one JSON body."""
        r = self.route
        url, headers, body = self._request(messages, tools, stream=False)
        with open_stream(r, url, headers, body) as resp:
            raw = bounded_body(resp, r)
        yield from self._from_json(raw)

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        r = self.route
        url, headers, body = self._request(messages, tools, stream=True)
        parser = OpenAIStreamParser(r.provider, r.model)
        with open_stream(r, url, headers, body) as resp:
            ctype = resp.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                # Some servers ignore stream=true and answer with one JSON body.
                yield from self._from_json(bounded_body(resp, r))
                return
            for _event, data in iter_sse(bounded_lines(resp, self.route)):
                yield from parser.feed(data)
                if parser.done:
                    return
        yield from parser.close()

    def _from_json(self, raw: bytes) -> Iterator[ProviderEvent]:
        events: list[ProviderEvent] = []
        try:
            obj = loads_text(raw)
        except json.JSONDecodeError:
            obj = None
        with wire_shape(self.route.provider, "a body that is not a chat completion"):
            msg = obj["choices"][0]["message"]  # type: ignore[index]
            text = content_text(msg["content"] if "content" in msg else None)
            if text:
                events.append(TextDelta(text))
            for i, tc in enumerate(msg.get("tool_calls") or []):
                fn = tc.get("function") or {}
                call = {"id": tc.get("id") or f"call_{i}", "name": text_part(fn.get("name")),
                        "arguments": fn.get("arguments", "")}
                events.append(ToolCall(call["id"], call["name"], parse_arguments(self.route.provider, call)))
            finish = obj["choices"][0].get("finish_reason") or "stop"  # type: ignore[index]
            events.append(Finished(finish, obj.get("model") or self.route.model, obj.get("usage") or {}))  # type: ignore[union-attr]
        yield from events
