"""A one-piece answer (a non-streaming call, embeddings, an error, a model list) is bounded like a stream:
a real server on 127.0.0.1 that never ends its body, or sends more than 32 MB, is cut off with a clear error."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from runtime_host.providers import ProviderError, open_provider
from runtime_host.providers import http as provider_http
from runtime_host.providers.check import check_provider
from runtime_host.providers.embeddings import ProviderEmbedder
from tests.helpers.fake_model import FakeModelServer, Raw, Script
from tests.providers.conftest import KEY, route_for

HELLO = [{"role": "user", "content": "hello"}]


@dataclass
class EndlessBody:
    """A 200 answer whose JSON body never ends: a piece every ``delay_s`` until the client hangs up."""

    status: int = 200
    delay_s: float = 0.05


class BodyServer(FakeModelServer):
    """The fake model, plus answers whose body never ends; the model list can be one of them too."""

    endless_models: EndlessBody | None = None

    def _answer(self, h: Any, req: Any, answer: Any) -> None:
        if not isinstance(answer, EndlessBody):
            return super()._answer(h, req, answer)
        h.send_response(answer.status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            self._chunk(h, b'{"choices": [{"message": {"content": "')
            while self._server is not None:
                self._chunk(h, b"and on " * 100)
                time.sleep(answer.delay_s)
        except OSError:
            pass  # the client hung up: what the test wants

    def _list_models(self, h: Any) -> None:
        if self.endless_models is None:
            return super()._list_models(h)
        return self._answer(h, None, self.endless_models)


@pytest.fixture
def body_server(wire: str):
    srv = BodyServer(Script([]), wire=wire, key=KEY).start()
    try:
        yield srv
    finally:
        srv.stop()


def _huge_valid_body(wire: str, chars: int) -> bytes:
    text = "x" * chars
    if wire == "anthropic":
        obj: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {}}
    elif wire == "gemini":
        obj = {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}]}
    else:
        obj = {"id": "c1", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return json.dumps(obj).encode()


def test_a_non_streaming_answer_that_never_ends_is_cut_off_at_the_time_limit(body_server, monkeypatch) -> None:
    monkeypatch.setattr(provider_http, "MAX_ANSWER_S", 1.0)
    body_server.script = Script([EndlessBody()])
    provider = open_provider(route_for(body_server))
    started = time.monotonic()
    with pytest.raises(ProviderError) as err:
        list(provider.complete(HELLO, []))
    assert time.monotonic() - started < 10
    assert err.value.kind == "too_long"
    assert "for more than 1 s without ending it, so Hearth cut it off" in str(err.value), err.value


def test_a_streaming_call_answered_with_an_endless_json_body_is_cut_off_too(body_server, monkeypatch) -> None:
    """Some servers ignore stream=true and answer with one JSON body: that path has the same bound."""
    monkeypatch.setattr(provider_http, "MAX_ANSWER_S", 1.0)
    body_server.script = Script([EndlessBody()])
    with pytest.raises(ProviderError, match="cut it off"):
        list(open_provider(route_for(body_server)).stream(HELLO, []))


def test_a_huge_but_valid_answer_is_refused_at_32_mb(body_server, wire) -> None:
    body = _huge_valid_body(wire, 33 * 1024 * 1024)
    body_server.script = Script([Raw(body, content_type="application/json")])
    with pytest.raises(ProviderError) as err:
        list(open_provider(route_for(body_server)).complete(HELLO, []))
    assert err.value.kind == "too_long"
    assert "an answer of more than 32 MB without ending it, so Hearth cut it off" in str(err.value), err.value


def test_an_answer_under_the_bound_is_read_whole(body_server, wire) -> None:
    body_server.script = Script([Raw(_huge_valid_body(wire, 2 * 1024 * 1024), content_type="application/json")])
    events = list(open_provider(route_for(body_server)).complete(HELLO, []))
    assert sum(len(getattr(e, "text", "")) for e in events) == 2 * 1024 * 1024


def test_an_error_answer_whose_body_never_ends_still_reports_the_error(body_server, monkeypatch) -> None:
    """Only the start of an error body is read: the error is reported at once, not after the time bound."""
    monkeypatch.setattr(provider_http, "MAX_ANSWER_S", 60.0)
    body_server.script = Script([EndlessBody(status=500, delay_s=0.001)])
    started = time.monotonic()
    with pytest.raises(ProviderError) as err:
        list(open_provider(route_for(body_server)).complete(HELLO, []))
    assert time.monotonic() - started < 10
    assert err.value.kind == "server" and err.value.status == 500


@pytest.mark.parametrize("wire", ["openai", "gemini"])
def test_embeddings_that_never_end_are_cut_off(body_server, monkeypatch) -> None:
    monkeypatch.setattr(provider_http, "MAX_ANSWER_S", 1.0)
    body_server.embed_fault = None
    body_server._embeddings = lambda h, req: body_server._answer(h, req, EndlessBody())  # type: ignore[method-assign]
    embedder = ProviderEmbedder.for_route(route_for(body_server))
    with pytest.raises(ProviderError, match="cut it off"):
        embedder.embed(["one note"], timeout=5)


@pytest.mark.parametrize("wire", ["openai"])
def test_a_provider_check_against_an_endless_model_list_ends(body_server, monkeypatch) -> None:
    from runtime_host.providers import check

    monkeypatch.setattr(check, "BODY_S", 1.0)
    body_server.endless_models = EndlessBody()
    started = time.monotonic()
    with pytest.raises(ProviderError, match="cut it off"):
        check_provider("endless", "openai-compatible", body_server.base_url, KEY)
    assert time.monotonic() - started < 10
