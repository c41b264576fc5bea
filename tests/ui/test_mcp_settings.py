"""Settings → MCP servers: add a real stdio server, see its tools, allow them for an agent."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from app.dialogs import SettingsDialog

SERVER = Path(__file__).resolve().parents[1] / "helpers" / "mcp_prices.py"


def test_add_a_server_and_allow_its_tools(qtbot, qloop, ui_pod) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.mcp
    page.name.setText("prices")
    page.command.setText(f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVER))}")
    page.add.click()
    qloop.wait_until(lambda: page.list.count() == 1, what="the server to be listed")
    assert "lookup_price" in page.list.item(0).text()
    page.list.setCurrentRow(0)
    page.agent.setCurrentIndex(page.agent.findData("helper"))
    page.allow.click()
    assert page.message.text() == "helper may now use: lookup_price."
    inst, profile = ui_pod.find_agent("helper")
    assert ui_pod.allowlist(inst, ui_pod.store.get_instance(inst.id)[1]).allows("mcp:prices", "lookup_price")
