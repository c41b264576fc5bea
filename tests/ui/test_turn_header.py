"""The conversation header shows the live turn's model calls against its budget (sub-agents included)."""

from __future__ import annotations

from app.main_window import MainWindow
from runtime_host.worker.loop import MODEL_CALL_BUDGET
from tests.helpers.fake_model import Text, ToolCalls
from tests.ui.test_main_window import send


def test_header_counts_model_calls_of_the_turn_against_its_budget(qtbot, qloop, ui_pod, script) -> None:
    script([ToolCalls([("current_time", {})]), ToolCalls([("current_time", {})]),
            Text("alpha beta gamma delta " * 40, chunk_chars=4, delay_s=0.05)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    send(qtbot, w, "what time is it?")
    qloop.wait_until(lambda: "alpha beta" in w.chat.toPlainText(), what="the answer to stream")
    assert w.header.text().endswith(f"working… step 3/90 · model calls 3/{MODEL_CALL_BUDGET}"), w.header.text()
