"""The window refuses an oversized message at the composer, keeping the text so it can be shortened."""

from __future__ import annotations

from app.main_window import MainWindow
from runtime_host.sizes import MAX_MESSAGE_BYTES
from tests.helpers.fake_model import Text
from tests.ui.test_main_window import send


def test_the_composer_refuses_an_oversized_message_and_keeps_it(qtbot, qloop, ui_pod, script, fake_model) -> None:
    script([Text("short answer")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    huge = ("h" * 99 + "\n") * (MAX_MESSAGE_BYTES // 100 + 10)
    send(qtbot, w, huge)
    assert "at most 1.0 MB" in w.statusBar().currentMessage()
    assert "Nothing was sent" in w.chat.toPlainText()
    assert w.composer.toPlainText() == huge  # kept, to shorten or split
    qloop.wait_until(lambda: True)
    assert fake_model.requests == [] and ui_pod.turns() == []
    send(qtbot, w, "a short one")
    qloop.wait_until(lambda: "short answer" in w.chat.toPlainText(), what="the next answer")
