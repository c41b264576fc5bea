"""The fake model refuses unpaired tool calls and results with HTTP 400 on every wire, as the providers do,
and accepts the same conversation once each call has exactly one result."""

from __future__ import annotations

import pytest

from runtime_host.providers import ProviderError
from tests.helpers.fake_model import Text
from tests.providers.conftest import text_of

CALLS = [{"id": "call_a", "name": "current_time", "arguments": {}},
         {"id": "call_b", "name": "current_time", "arguments": {"timezone": "Europe/Paris"}}]
ASKED = [{"role": "user", "content": "what time is it?"}, {"role": "assistant", "content": "", "tool_calls": CALLS}]


def result(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": "current_time", "content": "12:00"}


def test_each_call_with_its_result_is_accepted(run) -> None:
    events = run([Text("noon")], messages=[*ASKED, result("call_a"), result("call_b")])
    assert text_of(events) == "noon"


@pytest.mark.parametrize("tail", [[result("call_a")], [], [result("call_a"), result("call_b"), result("call_c")]],
                         ids=["a call without result", "no results", "a result without call"])
def test_unpaired_calls_are_refused_with_http_400(run, server, tail) -> None:
    with pytest.raises(ProviderError) as err:
        run([Text("never")], messages=[*ASKED, *tail, {"role": "user", "content": "and now?"}])
    assert err.value.status == 400
    assert server.pairing_errors and server.requests == []
