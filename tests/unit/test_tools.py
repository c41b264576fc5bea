from __future__ import annotations

import pytest

from runtime_host.tools import TOOLKITS, ToolInputError, call_tool, tool


@pytest.fixture(autouse=True)
def _forget_test_tools():
    yield
    TOOLKITS.pop("testkit", None)  # the registry is global: leave it as the product has it


def test_schema_is_derived_from_signature_and_docstring() -> None:
    @tool("testkit")
    def greet(name: str, times: int = 1, loud: bool | None = None) -> str:
        """Greets someone.

        Args:
            name: who to greet.
            times: how many times.
        """
        return ("hi " + name + " ") * times

    t = TOOLKITS["testkit"]["greet"]
    assert t.description == "Greets someone."
    props = t.parameters["properties"]
    assert props["name"] == {"type": "string", "description": "who to greet."}
    assert props["times"]["type"] == "integer" and props["times"]["default"] == 1
    assert props["loud"]["type"] == "boolean"
    assert t.parameters["required"] == ["name"]
    assert call_tool(t, {"name": "bo", "times": 2}) == "hi bo hi bo "
    with pytest.raises(ToolInputError, match="missing required"):
        call_tool(t, {})
    with pytest.raises(ToolInputError, match="unknown argument"):
        call_tool(t, {"name": "x", "tenant_id": "other"})


def test_calculator_is_exact_and_refuses_code() -> None:
    calc = TOOLKITS["math"]["calculate"]
    assert call_tool(calc, {"expression": "(12.5 * 4) / 2"}) == "25.0"
    with pytest.raises(ToolInputError):
        call_tool(calc, {"expression": "__import__('os').system('true')"})
    with pytest.raises(ToolInputError, match="division by zero"):
        call_tool(calc, {"expression": "1/0"})


def test_non_json_results_become_text() -> None:
    @tool("testkit")
    def odd() -> object:
        """Returns a set."""
        return {"values": {1, 2}}

    out = call_tool(TOOLKITS["testkit"]["odd"], {})
    assert "values" in out and "{1, 2}" in out
