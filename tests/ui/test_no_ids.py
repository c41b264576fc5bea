"""The window names agents by name: Activity's guard lines never show an agent's internal id."""

from __future__ import annotations

from app.main_window import MainWindow
from tests.helpers.fake_model import Text, ToolCalls
from tests.ui.test_main_window import send


def test_activity_names_the_agent_in_guard_decisions(qtbot, qloop, ui_pod, script) -> None:
    ui_pod.edit_agent("helper", toolkits=["math"])
    script([ToolCalls([("calculate", {"expression": "2+2"})]), lambda r: Text("Four.")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "2+2?")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    w.pages.setCurrentWidget(w.activity)
    inst, _ = ui_pod.find_agent("helper")
    shown = [w.activity.table.item(i, j).text() for i in range(w.activity.table.rowCount()) for j in range(7)]
    guard = [t for t in shown if t.startswith("calculate:")]
    assert guard and "helper's folders" in guard[0]
    assert not [t for t in shown if inst.id in t or inst.id[:8] in t]
