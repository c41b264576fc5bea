"""Fallback chains through the agent loop's real `_call_model`: a rate limit or an unreachable model
moves the turn to the next route (on another wire format), while an error answer is never retried."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from runtime_host.providers import ProviderError, Route
from runtime_host.worker import loop
from tests.helpers.fake_model import Error, FakeModelServer, Script, Text, ToolCalls
from tests.providers.conftest import KEY, route_for


class StepLog:
    """Stands in for the worker's TurnContext: the routes, and the steps and events it would send the Pod."""

    def __init__(self, routes: list[Route]):
        self.routes = routes
        self.tools: dict[str, Any] = {}
        self.cancel = threading.Event()
        self.steps: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.budget = loop.ModelBudget(loop.MODEL_CALL_BUDGET)

    def out_of_time(self) -> bool:
        return False

    def start_step(self, kind: str, name: str, **kw: Any) -> str:
        self.steps.append({"id": str(len(self.steps)), "kind": kind, "name": name, "status": "started", **kw})
        return self.steps[-1]["id"]

    def finish_step(self, step_id: str, status: str, result: Any) -> None:
        self.steps[int(step_id)].update(status=status, result=result)

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def _call_model(ctx: StepLog, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The loop's own route walk (its signature gained a `tools` argument; both forms are accepted)."""
    import inspect

    extra: dict[str, Any] = {"tools": {}} if "tools" in inspect.signature(loop._call_model).parameters else {}
    return loop._call_model(ctx, messages, parent_id=None, **extra)  # type: ignore[arg-type]


MESSAGES = [{"role": "user", "content": "Summarise my day"}]


@pytest.fixture
def pair():
    primary = FakeModelServer(Script([]), wire="anthropic", key=KEY).start()
    backup = FakeModelServer(Script([]), wire="gemini", key=KEY).start()
    try:
        yield primary, backup
    finally:
        primary.stop()
        backup.stop()


def test_rate_limit_moves_the_turn_to_the_next_model(pair) -> None:
    primary, backup = pair
    primary.script = Script([Error(429, "Rate limited", headers={"retry-after": "30"})])
    backup.script = Script([Text("Here is your day.")])
    ctx = StepLog([route_for(primary, "claude-a", provider="anthropic"), route_for(backup, "gemini-b", provider="google")])
    result = _call_model(ctx, MESSAGES)
    assert result["text"] == "Here is your day."
    assert result["provider"] == "google" and result["model"] == "gemini-b"  # the turn records who answered
    assert [s["status"] for s in ctx.steps] == ["failed", "finished"]
    assert ctx.steps[0]["result"]["error_kind"] == "rate_limit" and ctx.steps[0]["result"]["status"] == 429
    assert len(primary.requests) == 1 and len(backup.requests) == 1  # the 429 was not retried on the same model
    assert "".join(e["text"] for e in ctx.events if e["type"] == "delta") == "Here is your day."


def test_unreachable_primary_falls_back_after_one_connection_retry(pair) -> None:
    primary, backup = pair
    dead = route_for(primary, "claude-a", provider="anthropic")
    primary.stop()
    backup.script = Script([ToolCalls([("get_weather", {"city": "Oslo"})])])
    ctx = StepLog([dead, route_for(backup, "gemini-b", provider="google")])
    result = _call_model(ctx, MESSAGES)
    assert result["tool_calls"][0]["name"] == "get_weather" and result["provider"] == "google"
    assert ctx.steps[0]["result"]["error_kind"] == "unreachable"


def test_server_error_falls_back_too(pair) -> None:
    primary, backup = pair
    primary.script = Script([Error(529, "Overloaded")])
    backup.script = Script([Text("ok")])
    ctx = StepLog([route_for(primary, provider="anthropic"), route_for(backup, provider="google")])
    assert _call_model(ctx, MESSAGES)["text"] == "ok"
    assert len(primary.requests) == 1


def test_a_refused_key_does_not_fall_back(pair) -> None:
    primary, backup = pair
    primary.script = Script([Error(401, "invalid x-api-key")])
    backup.script = Script([Text("should not be asked")])
    ctx = StepLog([route_for(primary, provider="anthropic"), route_for(backup, provider="google")])
    with pytest.raises(ProviderError) as exc:
        _call_model(ctx, MESSAGES)
    assert exc.value.kind == "auth" and backup.requests == []


def test_the_last_route_s_error_is_the_turn_s_error(pair) -> None:
    primary, backup = pair
    primary.script = Script([Error(429, "slow down")])
    backup.script = Script([Error(503, "The model is overloaded.")])
    ctx = StepLog([route_for(primary, provider="anthropic"), route_for(backup, provider="google")])
    with pytest.raises(ProviderError) as exc:
        _call_model(ctx, MESSAGES)
    assert exc.value.kind == "server" and exc.value.status == 503
    assert [s["status"] for s in ctx.steps] == ["failed", "failed"]


def test_offline_model_catches_the_turn_when_the_cloud_is_unreachable(pair) -> None:
    primary, _ = pair
    dead = route_for(primary, provider="anthropic")
    primary.stop()
    ctx = StepLog([dead, Route("embedded", "embedded", "", "smollm2-135m-instruct")])
    result = _call_model(ctx, [{"role": "user", "content": "Say hello in one short sentence."}])
    assert result["provider"] == "embedded" and result["text"].strip()


# -- the one fallback rule (README): another model takes the turn only if the first failed before it answered
def test_server_error_moves_the_turn_and_the_step_says_where_and_why(pair) -> None:
    primary, backup = pair
    primary.script = Script([Error(500, "Internal error")])
    backup.script = Script([Text("answered by the backup")])
    ctx = StepLog([route_for(primary, "claude-a", provider="anthropic"), route_for(backup, "gemini-b", provider="google")])
    result = _call_model(ctx, MESSAGES)
    assert result["text"] == "answered by the backup" and result["model"] == "gemini-b"
    moved = ctx.steps[0]["result"]
    assert moved["moved_to"] == "google/gemini-b" and moved["why"].startswith("server:") and "500" in moved["why"]
    assert len(primary.requests) == 1  # an HTTP error answer is never sent again to the same model


def test_a_stream_that_stalls_after_it_began_is_not_glued_to_another_model_s_answer(pair, monkeypatch) -> None:
    import httpx

    from runtime_host.providers import http

    monkeypatch.setattr(http, "_clients", {True: httpx.Client(timeout=httpx.Timeout(5.0, read=0.5))})
    primary, backup = pair
    primary.script = Script([Text("The first half of an answer that then stalls", chunk_chars=12, delay_s=3.0)])
    backup.script = Script([Text("a different answer")])
    ctx = StepLog([route_for(primary, "claude-a", provider="anthropic"), route_for(backup, "gemini-b", provider="google")])
    with pytest.raises(ProviderError) as exc:
        _call_model(ctx, MESSAGES)
    assert exc.value.kind == "timeout" and "had already begun answering" in str(exc.value)
    assert backup.requests == []
    streamed = "".join(e["text"] for e in ctx.events if e["type"] == "delta")
    assert streamed and "The first half of an answer".startswith(streamed[:20]) and "different" not in streamed
    assert ctx.steps[0]["status"] == "failed" and ctx.steps[0]["result"]["text"] == streamed
    assert len(ctx.steps) == 1
