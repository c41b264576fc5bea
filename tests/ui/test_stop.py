"""Stopping an answer in the window: the Stop button beside the composer, Esc, and the agent's Stop; and the
status a message with no answer shows when the conversation is opened again (e.g. after a restart)."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt

from app.main_window import MainWindow
from tests.helpers.fake_model import Text
from tests.ui.test_main_window import send

SLOW = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma " * 4


def start_slow_answer(qtbot, qloop, w: MainWindow, text: str = "a long story please") -> None:
    w.show_chat()  # the person writes on the Chat page (the window may open on the page it was left on)
    send(qtbot, w, text)
    qloop.wait_until(lambda: "alpha beta" in w.chat.toPlainText(), what="the answer to start streaming")
    assert "working" in w.header.text() and w.stop_turn_button.isEnabled()


def test_stop_button_beside_the_composer_stops_the_answer_and_the_agent_is_ready(qtbot, qloop, ui_pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1), Text("fresh answer")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    assert not w.stop_turn_button.isEnabled()  # nothing to stop yet
    start_slow_answer(qtbot, qloop, w)
    qtbot.mouseClick(w.stop_turn_button, Qt.MouseButton.LeftButton)
    qloop.wait_until(lambda: w.header.text().endswith("stopped"), timeout=3, what="the stop")
    text = w.chat.toPlainText()
    assert "alpha beta" in text and "Stopped: Stopped by you" in text
    assert not w.stop_turn_button.isEnabled()
    send(qtbot, w, "shorter please")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the next answer")
    assert "fresh answer" in w.chat.toPlainText()


def test_escape_stops_the_answer(qtbot, qloop, ui_pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.activateWindow()
    start_slow_answer(qtbot, qloop, w)
    qtbot.keyClick(w.composer, Qt.Key.Key_Escape)
    qloop.wait_until(lambda: w.header.text().endswith("stopped"), timeout=3, what="Esc to stop the answer")
    assert ui_pod.turns(w.conversation_id)[-1]["status"] == "stopped"


def test_escape_on_another_page_does_not_stop_the_chat_answer_being_written(qtbot, qloop, ui_pod, script) -> None:
    """An agent is writing a long answer in the Chat. The person goes to the Wiki page, types in the search box
    and presses Esc (to drop what they typed, or a suggestion): the chat answer, out of sight, was stopped. Now
    it goes on; back on the Chat page, Esc stops it."""
    script([Text(SLOW, chunk_chars=4, delay_s=0.1)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.activateWindow()
    start_slow_answer(qtbot, qloop, w)
    conv = w.conversation_id
    w.show_wiki()
    w.wiki.search.setFocus()
    qtbot.keyClicks(w.wiki.search, "zz")
    qtbot.keyClick(w.wiki.search, Qt.Key.Key_Escape)
    qloop.run(asyncio.sleep(1.0))
    assert ui_pod.turns(conv)[-1]["status"] == "running", "Esc in the Wiki's search box stopped the chat's answer"
    assert "stopping" not in w.header.text()
    w.show_chat()
    qtbot.keyClick(w.composer, Qt.Key.Key_Escape)
    qloop.wait_until(lambda: w.header.text().endswith("stopped"), timeout=3, what="Esc to stop the answer")
    assert ui_pod.turns(conv)[-1]["status"] == "stopped"


def test_stop_on_the_agent_mid_answer_leaves_a_visible_status_not_working(qtbot, qloop, ui_pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1), Text("back again")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    start_slow_answer(qtbot, qloop, w)
    qtbot.mouseClick(w.stop_button, Qt.MouseButton.LeftButton)
    qloop.wait_until(lambda: "working" not in w.header.text(), timeout=10, what="the header to leave 'working'")
    assert w.header.text().endswith("stopped") and "Stop on the agent" in w.chat.toPlainText()
    send(qtbot, w, "still there?")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the next answer")
    assert "back again" in w.chat.toPlainText()


def test_reopened_conversation_gives_every_unanswered_message_a_status(qtbot, qloop, ui_pod, script) -> None:
    """As after an app restart: a stopped turn, a failed one, and one whose Hearth process died."""
    pod = ui_pod
    inst, _profile = pod.find_agent("helper")
    conv = pod.store.create_conversation(inst.id)
    for prompt, status, error, lease in (("first", "stopped", "Stopped by you after 2.0 s.", None),
                                         ("second", "failed", "HTTP 500 from fake.", None),
                                         ("third", "running", None, -5.0)):
        t = pod.store.create_turn(conv.id, inst.id, lease_owner="old-process" if lease else None, lease_s=lease or 0)
        pod.store.add_message(conv.id, "user", prompt, turn_id=t.id)
        pod.store.update_turn(t.id, status=status, error=error)
    w = MainWindow(pod)
    qtbot.addWidget(w)
    w.load_conversation(conv.id)
    text = w.chat.toPlainText()
    assert text.index("first") < text.index("Stopped: Stopped by you") < text.index("second")
    assert text.index("second") < text.index("Failed: HTTP 500") < text.index("third")
    assert text.index("third") < text.index("No answer (orphaned)")
    assert not w.stop_turn_button.isEnabled()


def test_a_turn_taken_over_by_another_host_stops_looking_as_if_it_still_ran(qtbot, qloop, ui_pod, script) -> None:
    script([Text(SLOW, chunk_chars=4, delay_s=0.1)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    start_slow_answer(qtbot, qloop, w)
    turn_id = w._live_turn
    ui_pod.store.update_turn(turn_id, lease_until=0)  # this host's lease ran out; another host claims the turn
    assert ui_pod.store.claim_turn(turn_id, "other-host:1:x", 30)

    async def renew() -> list[str]:
        return ui_pod.renew_leases_once()

    assert qloop.run(renew()) == [turn_id]
    qloop.wait_until(lambda: "working" not in w.header.text(), timeout=5, what="the header to leave 'working'")
    assert w.header.text().endswith("moved to another host") and not w.stop_turn_button.isEnabled()
    assert "The Hearth host that holds the turn now finishes it" in w.chat.toPlainText()


def test_channels_that_did_not_start_are_said_in_the_window(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    ui_pod.emit({"type": "channels.failed", "error": "The phone channels did not start: Unauthorized"})
    qloop.wait_until(lambda: "Unauthorized" in w.statusBar().currentMessage(), timeout=5, what="the message")
    assert "Settings → Channels" in w.statusBar().currentMessage()
