"""Every local tool runs with a time and a memory limit (a forked child of the worker): a tool that passes
one ends with a clear result, and the worker goes on."""

from __future__ import annotations

import os
import time

import pytest

from runtime_host.tools import TOOLKITS, ToolInputError, call_tool
from runtime_host.worker.limits import ToolLimitExceeded, ToolRaised, run_limited


def spin() -> str:
    while True:
        pass


def hog() -> str:
    blocks = []
    while True:
        blocks.append(bytearray(64 * 1024 * 1024))


def test_a_tool_that_never_ends_is_stopped_at_its_time_limit() -> None:
    t = time.monotonic()
    with pytest.raises(ToolLimitExceeded) as err:
        run_limited("spin", spin, time_s=0.5, memory_mb=64)
    assert time.monotonic() - t < 3
    assert err.value.limit == "time" and "stopped after 0.5 s, its time limit" in str(err.value)


def test_a_tool_that_eats_memory_is_stopped_at_its_memory_limit() -> None:
    with pytest.raises(ToolLimitExceeded) as err:
        run_limited("hog", hog, time_s=20, memory_mb=128)
    assert err.value.limit == "memory" and "128 MB memory limit" in str(err.value)


def test_answers_input_errors_and_failures_come_back_from_the_child() -> None:
    assert run_limited("pid", lambda: str(os.getpid()), time_s=5, memory_mb=64) != str(os.getpid())
    with pytest.raises(ToolInputError, match="bad input"):
        run_limited("x", lambda: (_ for _ in ()).throw(ToolInputError("bad input")), time_s=5, memory_mb=64,
                    input_error=ToolInputError)
    with pytest.raises(ToolRaised) as err:
        run_limited("x", lambda: str(1 / 0), time_s=5, memory_mb=64)
    assert err.value.kind == "ZeroDivisionError"


def test_the_calculate_bomb_is_refused_at_once_with_the_reason() -> None:
    calc = TOOLKITS["math"]["calculate"]
    t = time.monotonic()
    with pytest.raises(ToolInputError, match="digits"):
        call_tool(calc, {"expression": "((10**999)**999)**999"})
    with pytest.raises(ToolInputError, match="digits"):
        call_tool(calc, {"expression": "(10**999)*(10**999)*(10**999)*(10**999)*(10**999)"})
    assert time.monotonic() - t < 1
    assert call_tool(calc, {"expression": "2**10 * 3"}) == "3072"
