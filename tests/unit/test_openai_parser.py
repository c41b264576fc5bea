from __future__ import annotations

import json

import pytest

from runtime_host.providers import Finished, ProviderError, TextDelta, ToolCall
from runtime_host.providers.openai_compat import OpenAIStreamParser
from runtime_host.providers.sse import iter_sse


def chunk(delta: dict, finish: str | None = None) -> str:
    return json.dumps({"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_text_and_fragmented_parallel_tool_calls_assemble() -> None:
    p = OpenAIStreamParser("prov", "m")
    events = []
    events += p.feed(chunk({"content": "Hel"}))
    events += p.feed(chunk({"content": "lo"}))
    events += p.feed(chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x":'}}]}))
    events += p.feed(chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}))
    events += p.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}, "tool_calls"))
    events += p.feed("[DONE]")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "f", {"x": 1}), ("b", "g", {})]
    assert isinstance(events[-1], Finished) and events[-1].finish_reason == "tool_calls"


def test_malformed_chunk_is_a_clear_error() -> None:
    p = OpenAIStreamParser("prov", "m")
    with pytest.raises(ProviderError) as e:
        p.feed("{not json")
    assert e.value.kind == "malformed" and "prov" in str(e.value)


def test_truncated_stream_is_detected() -> None:
    p = OpenAIStreamParser("prov", "m")
    p.feed(chunk({"content": "partial"}))
    with pytest.raises(ProviderError, match="truncated"):
        p.close()


def test_sse_joins_multiline_data_and_skips_comments() -> None:
    lines = [": keepalive", "event: x", "data: a", "data: b", "", "data: c", ""]
    assert list(iter_sse(lines)) == [("x", "a\nb"), ("message", "c")]
