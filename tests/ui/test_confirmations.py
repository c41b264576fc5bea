"""Destructive actions ask first: Cancel keeps everything, the named action does it."""

from __future__ import annotations

from app.main_window import MainWindow
from tests.helpers.fake_model import Text
from tests.ui.conftest import answer_confirm
from tests.ui.test_main_window import send


def test_delete_agent_asks_then_deletes_its_conversations_and_schedules(qtbot, qloop, ui_pod, script) -> None:
    script([Text("hello")])
    ui_pod.add_agent("spare", provider="fake")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "hi")  # helper gets a conversation
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    ui_pod.add_schedule("helper", "0 8 * * *", "Morning briefing")
    assert w.agent == "helper"
    shown = answer_confirm("Cancel")
    w.delete_agent_button.click()
    assert shown == ["Delete the agent helper?"]
    assert "helper" in [a["name"] for a in ui_pod.list_agents()] and ui_pod.schedules()
    answer_confirm("Delete")
    w.delete_agent_button.click()
    qloop.wait_until(lambda: "Deleted helper" in w.statusBar().currentMessage(), what="the deletion")
    assert [a["name"] for a in ui_pod.list_agents()] == ["spare"]
    assert ui_pod.schedules() == [] and ui_pod.turns() == []
    names = [w.agents.item(i).data(0x0100) for i in range(w.agents.count())]
    assert names == ["spare"] and w.agent == "spare"


def test_delete_schedule_asks_first(qtbot, qloop, ui_pod) -> None:
    ui_pod.add_schedule("helper", "0 8 * * *", "Morning briefing", name="Briefing")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.schedules.refresh()
    w.schedules.table.selectRow(0)
    shown = answer_confirm("Cancel")
    w.schedules.delete.click()
    assert "Briefing" in shown[0] and len(ui_pod.schedules()) == 1
    assert w.schedules.message.text() == "Nothing deleted."
    answer_confirm("Delete")
    w.schedules.delete.click()
    assert ui_pod.schedules() == []


def test_forget_an_agent_asks_first(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.wiki.forget_agent_name.setText("helper")
    shown = answer_confirm("Cancel")
    w.wiki.forget_agent.click()
    assert shown == ["Forget everything helper learned?"]
    assert w.statusBar().currentMessage() == "Nothing forgotten."
    answer_confirm("Forget")
    w.wiki.forget_agent.click()
    qloop.wait_until(lambda: "Forgot" in w.statusBar().currentMessage(), what="forgetting")
