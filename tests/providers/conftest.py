"""Fixtures for provider tests: a fake model server per wire format, and event collection."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime_host.providers import Finished, ProviderEvent, Route, TextDelta, ToolCall, open_provider
from tests.helpers.fake_model import FakeModelServer, Script

WIRES = ("openai", "anthropic", "gemini")
KEY = "sk-test-0123456789"


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def server(wire: str) -> Iterator[FakeModelServer]:
    srv = FakeModelServer(Script([]), wire=wire, key=KEY).start()
    try:
        yield srv
    finally:
        srv.stop()


def route_for(srv: FakeModelServer, model: str = "fake-1", key: str | None = KEY, provider: str | None = None) -> Route:
    return Route(provider or f"fake-{srv.wire}", srv.wire, srv.base_url, model, key)


@pytest.fixture
def run(server: FakeModelServer) -> Callable[..., list[ProviderEvent]]:
    """run(answers, messages=None, tools=None, streaming=True, key=KEY) -> events from the real provider."""

    def go(answers: list[Any], messages: list[dict[str, Any]] | None = None, tools: list[dict[str, Any]] | None = None,
           streaming: bool = True, key: str | None = KEY) -> list[ProviderEvent]:
        server.script = Script(answers)
        provider = open_provider(route_for(server, key=key))
        msgs = messages or [{"role": "user", "content": "hello"}]
        call = provider.stream if streaming else provider.complete
        return list(call(msgs, tools or []))

    return go


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ProviderEvent]) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


def finished(events: list[ProviderEvent]) -> Finished:
    assert events and isinstance(events[-1], Finished), f"last event should be Finished: {events!r}"
    return events[-1]


WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
