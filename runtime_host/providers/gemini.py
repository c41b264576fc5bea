"""Google Gemini API: generateContent / streamGenerateContent?alt=sse, to and from the internal form.

Request: POST {base_url}/models/{model}:streamGenerateContent?alt=sse (or :generateContent), key in
the `x-goog-api-key` header (never in the URL, so it cannot leak into logs). `contents` alternate
roles "user" and "model" and hold parts: text, functionCall {name, args, id?} in model turns,
functionResponse {name, response, id?} in user turns; the system prompt is `systemInstruction`;
tools are `tools: [{functionDeclarations: [{name, description, parametersJsonSchema}]}]`.
Stream: SSE `data: {GenerateContentResponse}` chunks with candidates[0].content.parts, a
finishReason on the last one, and no [DONE] marker. Function calls arrive whole, not in fragments.

Thought signatures: Gemini 3 models attach a `thoughtSignature` to function-call parts and refuse
(HTTP 400) a history that drops it. The internal form keeps only {id, name, arguments}, so this
module remembers signatures per call id for the life of the worker process, and for a call whose
signature it does not know (another provider's call after a fallback, or a worker restart) sends
the placeholder value Google documents for injected calls.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

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
from runtime_host.providers.anthropic import is_error_result
from runtime_host.providers.http import bounded_body, bounded_lines, open_stream, stream_error
from runtime_host.providers.sse import iter_sse

# Documented by Google for function calls that no Gemini model produced (e.g. from another model).
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}


class _CallMemory:
    """Call id -> (Gemini's own id or None, thought signature or None), bounded, thread-safe."""

    def __init__(self, limit: int = 4096):
        self._d: OrderedDict[str, tuple[str | None, str | None]] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def put(self, call_id: str, wire_id: str | None, signature: str | None) -> None:
        with self._lock:
            self._d[call_id] = (wire_id, signature)
            self._d.move_to_end(call_id)
            while len(self._d) > self._limit:
                self._d.popitem(last=False)

    def get(self, call_id: str) -> tuple[str | None, str | None] | None:
        with self._lock:
            return self._d.get(call_id)


CALLS = _CallMemory()


def model_path(model: str) -> str:
    """'gemini-2.5-flash' or 'models/gemini-2.5-flash' -> 'models/gemini-2.5-flash' (URL-quoted)."""
    name = model.strip()
    if name.startswith("models/"):
        name = name[len("models/"):]
    if not name:
        raise ProviderError("bad_request", "No Gemini model chosen: pick one in Settings → Providers (e.g. gemini-2.5-flash).")
    return "models/" + quote(name, safe="-._")


def _needs_signature(model: str) -> bool:
    """Gemini 1.x/2.x never validated signatures; newer models do."""
    name = model.split("/")[-1]
    return not name.startswith(("gemini-1", "gemini-2"))


def to_wire(messages: list[dict[str, Any]], model: str = "") -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Internal messages -> (systemInstruction or None, contents with merged same-role turns)."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    strict = _needs_signature(model)

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role == "system":
            if content:
                system.append(content)
        elif role == "user":
            add("user", [{"text": content}] if content else [])
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            if content:
                parts.append({"text": content})
            for i, tc in enumerate(m.get("tool_calls") or []):
                names[tc["id"]] = tc["name"]
                known = CALLS.get(tc["id"])
                wire_id, signature = known if known else (None, None)
                fc: dict[str, Any] = {"name": tc["name"], "args": tc.get("arguments") or {}}
                if wire_id:
                    fc["id"] = wire_id
                part: dict[str, Any] = {"functionCall": fc}
                if signature:
                    part["thoughtSignature"] = signature
                elif i == 0 and strict and known is None:
                    part["thoughtSignature"] = PLACEHOLDER_SIGNATURE
                parts.append(part)
            add("model", parts)
        elif role == "tool":
            call_id = m.get("tool_call_id") or ""
            known = CALLS.get(call_id)
            fr: dict[str, Any] = {
                "name": m.get("name") or names.get(call_id) or "tool",
                "response": {"error": content} if is_error_result(content) else {"output": content},
            }
            if known and known[0]:
                fr["id"] = known[0]
            add("user", [{"functionResponse": fr}])
    instruction = {"parts": [{"text": "\n\n".join(system)}]} if system else None
    return instruction, contents


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    decls = [
        {"name": t["name"], "description": t.get("description", ""), "parametersJsonSchema": t.get("parameters") or {"type": "object"}}
        for t in tools
    ]
    return [{"functionDeclarations": decls}]


class GeminiStreamParser:
    """Feeds SSE data payloads (each a GenerateContentResponse); returns internal events."""

    def __init__(self, provider: str, model: str):
        self.provider = provider
        self.model = model
        self._finish: str | None = None
        self._usage: dict[str, Any] = {}
        self._calls = 0
        self.done = False

    def feed(self, data: str) -> list[ProviderEvent]:
        try:
            obj = loads_text(data)
        except json.JSONDecodeError:
            raise ProviderError(
                "malformed",
                f"Provider {self.provider!r} sent a malformed stream chunk: {data[:80]!r}. Try again, or pick another model.",
            ) from None
        if not isinstance(obj, dict):
            raise ProviderError("malformed", f"Provider {self.provider!r} sent a stream chunk that is not an object.")
        return self._response(obj)

    def _response(self, obj: dict[str, Any]) -> list[ProviderEvent]:
        with wire_shape(self.provider, "a response that is not a Gemini response"):
            return self._read(obj)

    def _read(self, obj: dict[str, Any]) -> list[ProviderEvent]:
        if "error" in obj:
            raise stream_error(self.provider, obj["error"])
        if obj.get("usageMetadata"):
            self._usage = obj["usageMetadata"]
        self.model = obj.get("modelVersion") or self.model
        candidates = obj.get("candidates") or []
        if not candidates:
            block = (obj.get("promptFeedback") or {}).get("blockReason")
            if block:
                raise ProviderError(
                    "bad_request",
                    f"Provider {self.provider!r} refused the prompt ({block}). Rephrase the message, or pick another model.",
                )
            return []
        cand = candidates[0]
        events: list[ProviderEvent] = []
        for part in (cand.get("content") or {}).get("parts") or []:
            if part.get("thought"):
                continue  # thought summaries, only sent when asked for
            text = text_part(part.get("text"))
            if text:
                events.append(TextDelta(text))
            fc = part.get("functionCall")
            if fc:
                self._calls += 1
                wire_id = fc.get("id") or None
                call_id = wire_id or f"call_{uuid.uuid4().hex[:24]}"
                CALLS.put(call_id, wire_id, part.get("thoughtSignature"))
                args = fc.get("args")
                events.append(ToolCall(call_id, fc.get("name") or "", args if isinstance(args, dict) else {}))
        reason = cand.get("finishReason")
        if reason:
            if reason in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"):
                raise ProviderError(
                    "malformed",
                    f"Provider {self.provider!r} produced a tool call it could not complete ({reason}). Try again, or pick another model.",
                )
            self._finish = reason
        return events

    def close(self) -> list[ProviderEvent]:
        """End of the byte stream. Gemini sends no end marker: a finishReason must have arrived."""
        if self.done:
            return []
        if self._finish is None:
            raise truncated(self.provider)
        self.done = True
        reason = _FINISH.get(self._finish, self._finish.lower())
        if reason == "stop" and self._calls:
            reason = "tool_calls"
        return [Finished(reason, self.model, self._usage)]


class GeminiProvider:
    supports_tools = True

    def __init__(self, route: Route):
        self.route = route

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stream: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
        r = self.route
        if not r.key and "googleapis.com" in r.base_url:
            raise ProviderError(
                "auth",
                f"No key for {r.provider!r}: add a Google AI Studio key in Settings → Providers "
                f"(or `python -m runtime_host provider add {r.provider} --key-from-stdin`).",
            )
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = f"{r.base_url.rstrip('/')}/{model_path(r.model)}:{method}"
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json"}
        if r.key:
            headers["x-goog-api-key"] = r.key
        instruction, contents = to_wire(messages, r.model)
        body: dict[str, Any] = {"contents": contents}
        if instruction:
            body["systemInstruction"] = instruction
        if tools:
            body["tools"] = to_wire_tools(tools)
        return url, headers, body

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        """generateContent: the whole answer as one GenerateContentResponse."""
        r = self.route
        url, headers, body = self._request(messages, tools, stream=False)
        with open_stream(r, url, headers, body) as resp:
            raw = bounded_body(resp, r)
        yield from self._from_json(raw)

    def _from_json(self, raw: bytes) -> Iterator[ProviderEvent]:
        parser = GeminiStreamParser(self.route.provider, self.route.model)
        try:
            obj = loads_text(raw)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, list):  # a stream requested without alt=sse comes back as a JSON array
            chunks = obj
        elif isinstance(obj, dict):
            chunks = [obj]
        else:
            raise ProviderError(
                "malformed", f"Provider {self.route.provider!r} answered with a body that is not a Gemini response."
            )
        for chunk in chunks:
            if not isinstance(chunk, dict):
                raise ProviderError("malformed", f"Provider {self.route.provider!r} sent a response that is not an object.")
            yield from parser._response(chunk)
        yield from parser.close()

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        r = self.route
        url, headers, body = self._request(messages, tools, stream=True)
        parser = GeminiStreamParser(r.provider, r.model)
        with open_stream(r, url, headers, body) as resp:
            if "text/event-stream" not in resp.headers.get("content-type", ""):
                yield from self._from_json(bounded_body(resp, r))
                return
            for _event, data in iter_sse(bounded_lines(resp, self.route)):
                yield from parser.feed(data)
        yield from parser.close()
