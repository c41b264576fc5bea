"""The About dialog says the version and where the data and log are, offscreen."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app import __version__
from app.about import AboutDialog, about_info, details_text, show_about


def test_about_shows_version_data_folder_and_log(qtbot, tmp_path: Path) -> None:
    dlg = AboutDialog(tmp_path)
    qtbot.addWidget(dlg)
    dlg.show()
    assert dlg.windowTitle() == "About Hearth"
    assert f"Hearth {__version__}" in dlg.title.text()
    assert dlg.fields["data"].text() == str(tmp_path)
    assert dlg.fields["log"].text() == str(tmp_path / "logs" / "hearth.log")
    assert dlg.fields["build"].text() == "source"
    assert "Apache-2.0" == dlg.fields["license"].text()


def test_copy_details_puts_the_facts_on_the_clipboard(qtbot, tmp_path: Path) -> None:
    dlg = AboutDialog(tmp_path)
    qtbot.addWidget(dlg)
    dlg.copy_button.click()
    text = QApplication.clipboard().text()
    assert f"version: {__version__}" in text and f"data: {tmp_path}" in text
    assert text == details_text(about_info(tmp_path))


def test_about_info_holds_no_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HEARTH_ABOUT_MARKER", "must-not-show")
    info = about_info(tmp_path)
    assert set(info) == {"version", "build", "python", "qt", "platform", "license", "data", "log"}
    assert "must-not-show" not in details_text(info)


def test_show_about_runs_modal_and_returns_when_closed(qtbot, tmp_path: Path) -> None:
    def close_it() -> None:
        w = QApplication.activeModalWidget()
        assert isinstance(w, AboutDialog)
        w.reject()

    QTimer.singleShot(50, close_it)
    dlg = show_about(None, tmp_path)
    qtbot.addWidget(dlg)
    assert not dlg.isVisible()
