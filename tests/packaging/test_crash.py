"""Crash reports: readable, in <data>/crash, without secrets or environment variables; the dialog offers them."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from app.crash import CrashHandler, build_report, crash_dir, scrub, write_report
from vault import remember_secret

KNOWN = "hearth-known-secret-9f3a1c77e2"
KEY_SHAPED = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv"


def _boom(message: str) -> tuple[type[BaseException], BaseException, object]:
    try:
        raise ValueError(message)
    except ValueError:
        return sys.exc_info()  # type: ignore[return-value]


def test_report_is_readable_and_holds_no_secrets_and_no_environment(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    remember_secret(KNOWN)
    monkeypatch.setenv("HEARTH_TEST_ENV_MARKER", "env-value-that-must-not-leak-42")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-should-not-appear-1234567890")
    exc_type, exc, tb = _boom(f"provider answered 401 for key {KNOWN} and {KEY_SHAPED}")
    text = build_report(exc_type, exc, tb, home=tmp_path)
    assert "Hearth crash report" in text and "Version:   Hearth" in text and "(source)" in text
    assert "ValueError: provider answered 401 for key [secret hidden]" in text
    assert "Traceback (most recent call last)" in text and "_boom" in text
    assert KNOWN not in text
    assert KEY_SHAPED not in text and "[openai_key]" in text
    assert "env-value-that-must-not-leak-42" not in text and "HEARTH_TEST_ENV_MARKER" not in text
    assert "sk-env-should-not-appear" not in text and "OPENAI_API_KEY" not in text


def test_report_names_the_home_folder_as_tilde(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_home = tmp_path / "home" / "alice"
    monkeypatch.setenv("HOME", str(fake_home))
    assert scrub(f"open {fake_home}/notes.md failed") == "open ~/notes.md failed"


def test_report_carries_the_last_log_lines_redacted(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "hearth.log").write_text(f"line one\nline with {KNOWN}\n", encoding="utf-8")
    remember_secret(KNOWN)
    text = build_report(*_boom("x"), home=tmp_path)  # type: ignore[arg-type]
    assert "line one" in text and "line with [secret hidden]" in text and KNOWN not in text


def test_write_report_makes_a_private_file_in_the_crash_folder(tmp_path: Path) -> None:
    path = write_report(*_boom("disk"), tmp_path)  # type: ignore[arg-type]
    assert path.parent == crash_dir(tmp_path) == tmp_path / "crash"
    assert path.name.startswith("crash-") and path.suffix == ".txt"
    assert (path.stat().st_mode & 0o777) == 0o600
    assert "ValueError: disk" in path.read_text(encoding="utf-8")


def test_handler_reports_thread_crashes_once_and_restores_the_hooks(tmp_path: Path) -> None:
    seen: list[Path] = []
    before = sys.excepthook, threading.excepthook
    handler = CrashHandler(tmp_path, on_report=seen.append).install()
    try:
        def fail() -> None:
            raise RuntimeError(f"worker thread failed with {KNOWN}")

        for _ in range(2):  # the same crash twice: one report
            t = threading.Thread(target=fail, name="crasher")
            t.start()
            t.join()
        sys.excepthook(*_boom("main thread failure"))
    finally:
        handler.uninstall()
    assert (sys.excepthook, threading.excepthook) == before
    assert len(seen) == 2 == len(list(crash_dir(tmp_path).glob("crash-*.txt")))
    thread_report = seen[0].read_text(encoding="utf-8")
    assert "Where:     thread 'crasher'" in thread_report and KNOWN not in thread_report
    assert "main thread failure" in seen[1].read_text(encoding="utf-8")


def test_keyboard_interrupt_is_not_a_crash(tmp_path: Path) -> None:
    handler = CrashHandler(tmp_path)
    called: list[object] = []
    handler._prev_hook = lambda *a: called.append(a)
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        handler._excepthook(*sys.exc_info())  # type: ignore[arg-type]
    assert called and not crash_dir(tmp_path).exists()


def test_crash_dialog_shows_the_report_and_opens_from_any_thread(qtbot, tmp_path: Path) -> None:
    from app.crash import CrashDialog, install_crash_handler

    handler = install_crash_handler(tmp_path)
    try:
        def fail() -> None:
            raise OSError("socket closed while streaming")

        t = threading.Thread(target=fail, name="stream")
        t.start()
        t.join()
        dialogs = handler.dialogs  # type: ignore[attr-defined]
        qtbot.waitUntil(lambda: bool(dialogs), timeout=5000)  # delivered on the main thread
        dlg = dialogs[0]
        qtbot.addWidget(dlg)
        assert isinstance(dlg, CrashDialog) and dlg.isVisible()
        assert dlg.path == handler.reports[0]
        assert str(handler.reports[0]) == dlg.path_label.text()
        assert "OSError: socket closed while streaming" in dlg.preview.toPlainText()
        assert {b.text() for b in (dlg.open_button, dlg.folder_button, dlg.keep_button)} == {
            "Open report", "Show folder", "Keep and continue"}
        dlg.keep_button.click()
        assert not dlg.isVisible()
        assert handler.reports[0].exists()  # kept
    finally:
        handler.uninstall()


def test_crash_module_loads_no_qt_until_the_dialog_is_needed() -> None:
    import subprocess

    code = "import sys, app.crash; print(any(m.startswith('PySide6') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ))
    assert out.stdout.strip() == "False"
