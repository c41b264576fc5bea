"""The steps tree says which model answered a turn and, when the fallback chain moved it, where and why."""

from __future__ import annotations

from app.main_window import MainWindow
from tests.helpers.fake_model import Error, Text
from tests.ui.test_main_window import send


def test_tree_shows_the_model_that_failed_where_the_turn_moved_and_who_answered(qtbot, qloop, ui_pod, fake_model,
                                                                                 script) -> None:
    ui_pod.add_provider("backup", kind="openai-compatible", base_url=fake_model.base_url, model="fake-2")
    ui_pod.edit_agent("helper", fallbacks=["backup"])
    script([Error(500, "Internal error"), Text("from the backup")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "hello")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    assert "fake-2" in w.header.text()
    rows = [[w.steps.topLevelItem(i).text(c) for c in (0, 1, 3)] for i in range(w.steps.topLevelItemCount())]
    assert rows[0][:2] == ["model: fake-1", "✗"] and rows[1][:2] == ["model: fake-2", "✓"]
    assert "via fake" in rows[0][2] and "moved to backup/fake-2 (server:" in rows[0][2] and "500" in rows[0][2]
    assert "via backup" in rows[1][2] and "from the backup" in rows[1][2]
