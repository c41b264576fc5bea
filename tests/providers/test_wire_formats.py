"""Each wire format (openai, anthropic, gemini) against the fake server speaking it, through real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime_host.providers import ProviderError, Route, open_provider, supports_tools
from tests.helpers.fake_model import Error, FakeModelServer, Raw, Script, Text, ToolCalls
from tests.providers.conftest import KEY, WEATHER, calls_of, finished, route_for, text_of

# -- answers


def test_plain_answer_without_streaming(run, server: FakeModelServer) -> None:
    events = run([Text("Paris is the capital of France.")], streaming=False)
    assert text_of(events) == "Paris is the capital of France."
    fin = finished(events)
    assert fin.finish_reason == "stop" and fin.model
    assert not server.requests[0].streaming


def test_streamed_answer_arrives_in_pieces(run, server: FakeModelServer) -> None:
    events = run([Text("The quick brown fox jumps over the lazy dog.", chunk_chars=5)])
    deltas = [e for e in events if type(e).__name__ == "TextDelta"]
    assert len(deltas) >= 5
    assert text_of(events) == "The quick brown fox jumps over the lazy dog."
    assert finished(events).finish_reason == "stop"
    assert server.requests[0].streaming


@pytest.mark.parametrize("streaming", [True, False])
def test_lone_surrogate_escapes_arrive_as_replacement_characters(run, streaming: bool) -> None:
    """JSON lets a model write "\\ud800" alone; such a str cannot be written as UTF-8 anywhere after (the pipe, the
    store, a hash). Every wire hands it on as U+FFFD, in text and in tool arguments, and keeps a valid pair."""
    events = run([Text("Red \udcff boat \U0001f600.", chunk_chars=3)], streaming=streaming)
    assert text_of(events) == "Red \ufffd boat \U0001f600."
    events = run([ToolCalls([("get_weather", {"city": "Os\ud800lo", "unit\udcff": "C"})])], tools=[WEATHER],
                 streaming=streaming)
    assert [c.arguments for c in calls_of(events)] == [{"city": "Os\ufffdlo", "unit\ufffd": "C"}]


def test_tool_call_is_assembled_with_its_arguments(run, server: FakeModelServer) -> None:
    events = run([ToolCalls([("get_weather", {"city": "Oslo", "unit": "C"})])], tools=[WEATHER])
    calls = calls_of(events)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo", "unit": "C"})]
    assert calls[0].id
    assert finished(events).finish_reason == "tool_calls"
    body = server.requests[0].body
    if server.wire == "openai":
        assert body["tools"][0]["function"]["parameters"] == WEATHER["parameters"]
    elif server.wire == "anthropic":
        assert body["tools"] == [{"name": "get_weather", "description": WEATHER["description"],
                                  "input_schema": WEATHER["parameters"]}]
    else:
        decl = body["tools"][0]["functionDeclarations"][0]
        assert decl["name"] == "get_weather" and decl["parametersJsonSchema"] == WEATHER["parameters"]


def test_tool_call_without_streaming(run) -> None:
    events = run([ToolCalls([("get_weather", {"city": "Oslo"})], text="Let me look.")], tools=[WEATHER], streaming=False)
    assert text_of(events) == "Let me look."
    assert [(c.name, c.arguments) for c in calls_of(events)] == [("get_weather", {"city": "Oslo"})]


def test_parallel_tool_calls_keep_their_order_and_ids(run) -> None:
    events = run([ToolCalls([("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"}), ("get_time", {})],
                            text="Checking both.")], tools=[WEATHER])
    calls = calls_of(events)
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"}), ("get_time", {})]
    assert len({c.id for c in calls}) == 3
    assert text_of(events) == "Checking both."


def test_tool_results_go_back_in_the_wire_shape(run, server: FakeModelServer) -> None:
    first = run([ToolCalls([("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"})])], tools=[WEATHER])
    a, b = calls_of(first)
    history = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Oslo and Lima?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": a.id, "name": a.name, "arguments": a.arguments},
                                                            {"id": b.id, "name": b.name, "arguments": b.arguments}]},
        {"role": "tool", "tool_call_id": a.id, "name": a.name, "content": "4 °C, snow"},
        {"role": "tool", "tool_call_id": b.id, "name": b.name, "content": "error: the weather service timed out"},
    ]
    events = run([Text("Oslo: 4 °C and snow; Lima is unknown.")], messages=history, tools=[WEATHER])
    assert text_of(events) == "Oslo: 4 °C and snow; Lima is unknown."
    req = server.requests[-1]
    assert req.tool_results == ["4 °C, snow", "error: the weather service timed out"]
    assert req.system == "You are terse."
    if server.wire == "anthropic":
        roles = [m["role"] for m in req.messages]
        assert roles == ["user", "assistant", "user"]  # both results in ONE user message
        results = req.messages[2]["content"]
        assert [r["tool_use_id"] for r in results] == [a.id, b.id]
        assert results[1]["is_error"] is True and "is_error" not in results[0]
        assert [blk["type"] for blk in req.messages[1]["content"]] == ["tool_use", "tool_use"]  # no empty text block
        assert "system" not in roles
    elif server.wire == "gemini":
        assert [c["role"] for c in req.messages] == ["user", "model", "user"]
        fcs = req.messages[1]["parts"]
        assert fcs[0]["thoughtSignature"] == server.signatures[0]  # Gemini 3 signature returned as received
        assert "thoughtSignature" not in fcs[1]
        frs = [p["functionResponse"] for p in req.messages[2]["parts"]]
        assert [f["name"] for f in frs] == ["get_weather", "get_weather"]
        assert frs[0]["response"] == {"output": "4 °C, snow"} and "error" in frs[1]["response"]
        assert req.body["systemInstruction"]["parts"][0]["text"] == "You are terse."
    else:
        assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "tool", "tool"]


def test_the_key_travels_in_a_header_never_in_the_url(run, server: FakeModelServer) -> None:
    run([Text("ok")])
    req = server.requests[0]
    assert KEY not in req.path
    header = {"openai": "authorization", "anthropic": "x-api-key", "gemini": "x-goog-api-key"}[server.wire]
    assert KEY in req.headers[header]
    if server.wire == "anthropic":
        assert req.headers["anthropic-version"] == "2023-06-01"
        assert req.body["max_tokens"] > 0


def test_supports_tools_per_kind(server: FakeModelServer) -> None:
    provider = open_provider(route_for(server))
    assert provider.supports_tools is True and supports_tools(server.wire) is True
    assert supports_tools("embedded") is False


# -- errors: each is one request (an HTTP error answer is never retried) and a message to act on


def test_401_asks_for_a_better_key(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Error(401, "invalid key")])
    assert exc.value.kind == "auth" and exc.value.status == 401
    assert "Settings → Providers" in str(exc.value) and "invalid key" in str(exc.value)
    assert not exc.value.may_fall_back
    assert len(server.requests) == 1


def test_a_wrong_key_is_refused_as_auth(run, server: FakeModelServer) -> None:
    # Google answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), the others with 401.
    with pytest.raises(ProviderError) as exc:
        run([Text("never")], key="sk-wrong")
    assert exc.value.kind == "auth"
    assert exc.value.status == (400 if server.wire == "gemini" else 401)


def test_429_names_the_wait_and_may_fall_back(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Error(429, "Rate limit reached", headers={"Retry-After": "7"})])
    err = exc.value
    assert err.kind == "rate_limit" and err.retry_after == 7.0 and err.may_fall_back
    assert "7 s" in str(err) and "Rate limit reached" in str(err)
    assert len(server.requests) == 1


def test_429_wait_in_the_vendor_s_own_place(run, server: FakeModelServer) -> None:
    # Google puts the wait in the body (google.rpc.RetryInfo retryDelay); the others in Retry-After.
    with pytest.raises(ProviderError) as exc:
        run([Error(429, "Quota exceeded", retry_after_s=37)])
    assert exc.value.retry_after == 37.0 and "37 s" in str(exc.value)


def test_500_is_a_server_error_and_is_not_retried(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Error(500, "boom")])
    assert exc.value.kind == "server" and "HTTP 500" in str(exc.value) and "boom" in str(exc.value)
    assert exc.value.may_fall_back
    assert len(server.requests) == 1


MALFORMED = {
    "openai": b'data: {"choices": [{"delta": {"content": "ok"}}]}\n\ndata: {broken\n\n',
    "anthropic": b'event: message_start\ndata: {"type": "message_start", "message": {"model": "m", "usage": {}}}\n\n'
                 b'event: content_block_delta\ndata: {broken\n\n',
    "gemini": b'data: {"candidates": [{"content": {"parts": [{"text": "ok"}], "role": "model"}}]}\r\n\r\ndata: {broken\r\n\r\n',
}
TRUNCATED = {
    "openai": b'data: {"choices": [{"delta": {"content": "half an ans"}}]}\n\n',
    "anthropic": b'event: message_start\ndata: {"type": "message_start", "message": {"model": "m", "usage": {}}}\n\n'
                 b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}\n\n'
                 b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "half an ans"}}\n\n',
    "gemini": b'data: {"candidates": [{"content": {"parts": [{"text": "half an ans"}], "role": "model"}, "index": 0}]}\r\n\r\n',
}
MID_STREAM_ERROR = {
    "openai": b'data: {"error": {"message": "The server is overloaded", "type": "server_error"}}\n\n',
    "anthropic": b'event: message_start\ndata: {"type": "message_start", "message": {"model": "m", "usage": {}}}\n\n'
                 b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
    "gemini": b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\r\n\r\n',
}


def test_malformed_sse_is_reported_not_swallowed(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Raw(MALFORMED[server.wire])])
    assert exc.value.kind == "malformed" and "malformed" in str(exc.value)


def test_truncated_stream_is_reported(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Raw(TRUNCATED[server.wire])])
    assert exc.value.kind == "malformed" and "truncated" in str(exc.value)


def test_error_inside_a_200_stream(run, server: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as exc:
        run([Raw(MID_STREAM_ERROR[server.wire])])
    assert exc.value.kind == "server" and exc.value.may_fall_back
    assert "overloaded" in str(exc.value).lower()


def test_unreachable_server_gets_one_retry_then_a_clear_message(server: FakeModelServer) -> None:
    route = route_for(server)
    server.stop()
    with pytest.raises(ProviderError) as exc:
        list(open_provider(route).stream([{"role": "user", "content": "hi"}], []))
    assert exc.value.kind == "unreachable" and "also after one retry" in str(exc.value)


# -- vendor-specific details


def test_anthropic_529_overloaded_is_a_server_error() -> None:
    with FakeModelServer(Script([Error(529, "Overloaded")]), wire="anthropic") as srv:
        with pytest.raises(ProviderError) as exc:
            list(open_provider(route_for(srv, key=None)).stream([{"role": "user", "content": "hi"}], []))
    assert exc.value.kind == "server" and exc.value.status == 529 and "Overloaded" in str(exc.value)


def test_anthropic_conversation_starts_with_a_user_turn_and_merges_roles() -> None:
    from runtime_host.providers.anthropic import to_wire

    system, msgs = to_wire([
        {"role": "system", "content": "A"}, {"role": "system", "content": "B"},
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "user", "content": "one"}, {"role": "user", "content": "two"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call|x/1", "name": "t", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "call|x/1", "name": "t", "content": "done"},
    ])
    assert system == "A\n\nB"
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["text"] for b in msgs[2]["content"]] == ["one", "two"]
    # an id from another provider is mapped to Anthropic's allowed characters, the same on both sides
    assert msgs[3]["content"][0]["id"] == msgs[4]["content"][0]["tool_use_id"] == "call_x_1"


def test_gemini_stream_without_alt_sse_is_a_json_array() -> None:
    with FakeModelServer(Script([Text("array form", chunk_chars=3)]), wire="gemini") as srv:
        provider = open_provider(route_for(srv, key=None))
        r = provider.route
        import httpx

        resp = httpx.post(f"{r.base_url}/models/{r.model}:streamGenerateContent", json={"contents": []})
        events = list(provider._from_json(resp.content))
    assert text_of(events) == "array form" and finished(events).finish_reason == "stop"


def test_gemini_model_path_and_blocked_prompt() -> None:
    from runtime_host.providers.gemini import GeminiStreamParser, model_path

    assert model_path("models/gemini-2.5-flash") == model_path("gemini-2.5-flash") == "models/gemini-2.5-flash"
    parser = GeminiStreamParser("google", "gemini-2.5-flash")
    with pytest.raises(ProviderError) as exc:
        parser.feed(json.dumps({"promptFeedback": {"blockReason": "SAFETY"}}))
    assert "refused the prompt (SAFETY)" in str(exc.value)


def test_gemini_placeholder_signature_for_a_call_it_never_made() -> None:
    from runtime_host.providers.gemini import PLACEHOLDER_SIGNATURE, to_wire

    foreign: list[dict[str, Any]] = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "call_from_openai", "name": "t", "arguments": {}}]},
               {"role": "tool", "tool_call_id": "call_from_openai", "name": "t", "content": "ok"}]
    _, contents = to_wire(foreign, "gemini-3-flash-preview")
    assert contents[1]["parts"][0]["thoughtSignature"] == PLACEHOLDER_SIGNATURE
    _, old = to_wire(foreign, "gemini-2.5-flash")
    assert "thoughtSignature" not in old[1]["parts"][0]


def test_missing_key_for_a_cloud_vendor_names_the_provider() -> None:
    for kind, base in (("anthropic", "https://api.anthropic.com/v1"), ("gemini", "https://generativelanguage.googleapis.com/v1beta")):
        with pytest.raises(ProviderError) as exc:
            list(open_provider(Route("work-" + kind, kind, base, "m", None)).stream([{"role": "user", "content": "hi"}], []))
        assert exc.value.kind == "auth" and f"work-{kind}" in str(exc.value) and "Settings → Providers" in str(exc.value)


def test_loopback_only_switch_refuses_real_vendor_addresses() -> None:
    route = Route("openai", "openai", "https://api.openai.com/v1", "gpt-5-mini", "sk-x")
    with pytest.raises(ProviderError) as exc:
        list(open_provider(route).stream([{"role": "user", "content": "hi"}], []))
    assert exc.value.kind == "forbidden" and "HEARTH_LOOPBACK_ONLY" in str(exc.value)


# A whole JSON answer of the wrong shape: one message line for the person, never a Python error from deep inside.
ODD_SHAPES = {
    "openai": [b'{"choices": [{"message": "[]", "finish_reason": "stop"}]}',
               b'{"choices": [{"message": {"role": "assistant", "content": 7}}]}',
               b'{"choices": [{"message": {"role": "assistant", "content": "", "tool_calls": ["x"]}}]}',
               b'{"choices": ["x"]}'],
    "anthropic": [b'{"type": "message", "content": ["x"], "stop_reason": "end_turn"}',
                  b'{"type": "message", "content": 5}',
                  b'{"type": "message", "content": [{"type": "text", "text": 5}]}'],
    "gemini": [b'{"candidates": ["x"]}', b'{"candidates": [{"content": "x"}]}',
               b'{"candidates": [{"content": {"parts": ["x"]}}]}'],
}
# The same answer in each wire with bytes that are not UTF-8 inside its text ("caf\xe9"): read, not a crash.
NOT_UTF8 = {
    "openai": b'{"choices": [{"message": {"role": "assistant", "content": "caf\xe9 ok"}, "finish_reason": "stop"}]}',
    "anthropic": b'{"type": "message", "content": [{"type": "text", "text": "caf\xe9 ok"}], "stop_reason": "end_turn"}',
    "gemini": b'{"candidates": [{"content": {"parts": [{"text": "caf\xe9 ok"}]}, "finishReason": "STOP"}]}',
}


@pytest.mark.parametrize("streaming", [True, False])
def test_a_whole_answer_of_the_wrong_shape_is_a_malformed_answer(run, server: FakeModelServer, streaming: bool) -> None:
    """A server answering 200 with a message that is a string, a number for text or a list of strings for parts
    ended in AttributeError/TypeError deep inside the provider (a traceback in `memory ingest`, "'str' object has no
    attribute 'get'" in the window, and one person's broken model stopped the others' memory runs)."""
    for body in ODD_SHAPES[server.wire]:
        with pytest.raises(ProviderError) as exc:
            run([Raw(body, "application/json")], streaming=streaming)
        assert exc.value.kind == "malformed" and "not a" in str(exc.value), (body, exc.value)


def test_an_answer_with_bytes_that_are_not_utf8_is_read(run, server: FakeModelServer) -> None:
    events = run([Raw(NOT_UTF8[server.wire], "application/json")], streaming=False)
    assert text_of(events) == "caf\ufffd ok"


def test_an_openai_answer_in_content_parts_is_read_as_its_text() -> None:
    """Some OpenAI-compatible servers give the message's content as a list of parts ([{"type": "text", ...}])."""
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": [
        {"type": "text", "text": "Lisbon "}, {"type": "text", "text": "on 4 May."}]}, "finish_reason": "stop"}]})
    with FakeModelServer(Script([Raw(body.encode(), "application/json")]), wire="openai") as srv:
        events = list(open_provider(route_for(srv, key=None)).complete([{"role": "user", "content": "hi"}], []))
    assert text_of(events) == "Lisbon on 4 May."
