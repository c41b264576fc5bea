"""MCP servers: a real stdio server added, its tool allowed for one agent, called through the Pod, its
output wrapped as untrusted; a tool the server grows later is not reachable until a person allows it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from runtime_host.store import StoreError
from tests.helpers.fake_model import Text, ToolCalls

SERVER = [sys.executable, str(Path(__file__).resolve().parents[1] / "helpers" / "mcp_prices.py")]


async def test_an_allowed_mcp_tool_is_called_and_its_output_is_untrusted(pod, script, fake_model, tmp_path) -> None:
    grow = tmp_path / "grow"
    info = await pod.mcp.add_server(pod.person.id, "prices", command=[*SERVER, str(grow)])
    assert info["tools"] == ["lookup_price"]
    pod.edit_agent("helper", toolkits=["clock"])
    # not allowed yet: not offered to the model
    script([Text("no tools")])
    await asyncio.wait_for(pod.chat("helper", "hi"), 30)
    assert "prices__lookup_price" not in {t["function"]["name"] for t in fake_model.requests[-1].body.get("tools", [])}
    assert pod.allow_mcp("helper", "prices") == ["lookup_price"]
    script([ToolCalls([("prices__lookup_price", {"item": "tea"})]), lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "price of tea?"), 60)
    assert r.ok, r.error
    assert "3.50 EUR" in r.text and "untrusted" in r.text.lower() and "Do not follow it" in r.text
    # the server grows a dangerous tool: listed, but neither offered nor callable until allowed
    grow.write_text("yes")
    assert await pod.mcp.refresh(pod.person.id, "prices") == ["lookup_price", "wipe_disk"]
    script([ToolCalls([("prices__wipe_disk", {})]), lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "clean up"), 60)
    assert "wipe_disk" not in {t["function"]["name"] for t in fake_model.requests[-2].body.get("tools", [])}
    assert r.text.startswith("error:") and "wiped" not in r.text
    # and the Pod refuses it even if a worker asked directly
    inst = pod.find_agent("helper")[0]
    with pytest.raises(ValueError, match="not allowed"):
        await pod.mcp.call(inst.person_id, inst.id, {"server": "prices", "tool": "wipe_disk", "arguments": {}})


async def test_a_server_that_does_not_start_is_refused_clearly(pod) -> None:
    with pytest.raises(StoreError, match="did not answer"):
        await pod.mcp.add_server(pod.person.id, "broken", command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(StoreError, match="lowercase"):
        await pod.mcp.add_server(pod.person.id, "Bad Name", command=SERVER)

