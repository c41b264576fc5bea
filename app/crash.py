"""Crash reports: an uncaught exception becomes a readable text file in `<data>/crash/`, and the
window offers to open or keep it.

A report holds what helps someone fix the bug (version, platform, the traceback, the last log lines)
and nothing that should not leave the machine: no environment variables, no frame locals, every
secret the vault knows replaced, key-shaped strings the safety detectors recognise masked, and the
home folder written as `~`. Building and writing a report never touches Qt; only `CrashDialog` does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import os
import platform
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

CRASH_DIRNAME = "crash"
MAX_REPORTS_KEPT = 50
LOG_TAIL_LINES = 60


def scrub(text: str) -> str:
    """Removes what must not be in a report: known secrets, key-shaped strings, the home folder's path."""
    from vault import redact

    text = redact(text)
    try:
        from runtime_host.safety.detectors import detect_secrets

        for f in sorted(detect_secrets(text), key=lambda f: f.start, reverse=True):
            text = text[: f.start] + f.masked() + text[f.end :]
    except Exception:  # noqa: BLE001 - a broken detector must not cost the report
        pass
    home = os.path.expanduser("~")
    if home and home not in ("/", "~") and len(home) > 1:
        text = text.replace(home, "~")
    return text


def _version() -> str:
    try:
        from app import __version__

        return __version__
    except Exception:  # noqa: BLE001
        return "unknown"


def build_report(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None, *,
                 home: Path | None = None, where: str = "main thread", when: dt.datetime | None = None) -> str:
    """The report's text, already scrubbed. No environment variables and no frame locals go in."""
    when = when or dt.datetime.now(dt.UTC)
    lines = [
        "Hearth crash report",
        "===================",
        "",
        "Hearth stopped on an error it did not expect. This file explains where; it holds no keys,",
        "no environment variables and no message contents beyond what the error itself quotes.",
        "",
        f"Version:   Hearth {_version()}" + (" (bundle)" if getattr(sys, "frozen", False) else " (source)"),
        f"Time:      {when.isoformat(timespec='seconds')}",
        f"Platform:  {platform.platform()} ({platform.machine()})",
        f"Python:    {platform.python_version()} ({platform.python_implementation()})",
        f"Where:     {where}",
        f"Command:   {' '.join([Path(sys.argv[0]).name if sys.argv else 'hearth', *sys.argv[1:]])}",
    ]
    with contextlib.suppress(Exception):
        from PySide6 import __version__ as pyside_version

        lines.append(f"Qt:        PySide6 {pyside_version}")
    lines += ["", "Error", "-----", f"{exc_type.__name__}: {exc}", "", "Traceback", "---------"]
    lines += "".join(traceback.format_exception(exc_type, exc, tb)).rstrip("\n").splitlines()
    if home is not None:
        from runtime_host.logs import tail

        recent = tail(home, LOG_TAIL_LINES)
        if recent:
            lines += ["", f"Last {len(recent)} log lines", "-" * 20, *recent]
    return scrub("\n".join(lines) + "\n")


def crash_dir(home: Path) -> Path:
    return home / CRASH_DIRNAME


def write_report(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None, home: Path, *,
                 where: str = "main thread") -> Path:
    """Writes a report file (readable by this user only) and returns its path; keeps the newest 50."""
    when = dt.datetime.now(dt.UTC)
    folder = crash_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    text = build_report(exc_type, exc, tb, home=home, where=where, when=when)
    digest = hashlib.sha256("".join(traceback.format_tb(tb)).encode()).hexdigest()[:8]
    path = folder / f"crash-{when.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{digest}.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    old = sorted(folder.glob("crash-*.txt"))[:-MAX_REPORTS_KEPT]
    for p in old:
        with contextlib.suppress(OSError):
            p.unlink()
    return path


class CrashHandler:
    """Catches uncaught exceptions (main thread, Qt slots, other threads), writes a report, logs
    where it is and, when a window can be shown, offers it in a dialog.

    `on_report(path)` is called on the thread that crashed; the Qt app passes one that shows the
    dialog on the main thread. The same traceback is reported once per run, not once per repeat.
    """

    def __init__(self, home: Path, on_report: Callable[[Path], None] | None = None):
        self.home = home
        self.on_report = on_report
        self.reports: list[Path] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._prev_hook: Callable[..., Any] | None = None
        self._prev_thread_hook: Callable[..., Any] | None = None

    def install(self) -> CrashHandler:
        self._prev_hook, sys.excepthook = sys.excepthook, self._excepthook
        self._prev_thread_hook, threading.excepthook = threading.excepthook, self._thread_hook
        return self

    def uninstall(self) -> None:
        if self._prev_hook is not None and sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_hook
        if self._prev_thread_hook is not None and threading.excepthook == self._thread_hook:
            threading.excepthook = self._prev_thread_hook

    def _excepthook(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            (self._prev_hook or sys.__excepthook__)(exc_type, exc, tb)
            return
        self.report(exc_type, exc, tb, where="main thread")

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        name = args.thread.name if args.thread else "unknown"
        self.report(args.exc_type, args.exc_value, args.exc_traceback, where=f"thread {name!r}")

    def report(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None,
               where: str = "main thread") -> Path | None:
        import logging

        key = "".join(traceback.format_exception(exc_type, exc, tb))
        with self._lock:
            if key in self._seen:
                return None
            self._seen.add(key)
        try:
            path = write_report(exc_type, exc, tb, self.home, where=where)
        except Exception as write_exc:  # noqa: BLE001 - the disk may be full: still say what happened
            print(f"Hearth hit an unexpected error and could not write a crash report ({write_exc}).",
                  file=sys.stderr)
            print(scrub(key), file=sys.stderr)
            return None
        self.reports.append(path)
        logging.getLogger("hearth.crash").error("unexpected error (%s); crash report: %s", where, path)
        print(f"Hearth hit an unexpected error. A crash report was saved to {path}", file=sys.stderr)
        if self.on_report is not None:
            with contextlib.suppress(Exception):
                self.on_report(path)
        return path


def show_crash_dialog(path: Path, parent: Any = None) -> Any:
    """Shows the crash dialog for a report (non-modal); returns it. Call on the Qt main thread."""
    dlg = _dialog_class()(path, parent)
    dlg.show()
    dlg.raise_()
    return dlg


def install_crash_handler(home: Path, parent: Callable[[], Any] | None = None) -> CrashHandler:
    """Installs the crash handler for the app: reports go to `<home>/crash/`, and when a Qt
    application is running the crash dialog opens on its main thread (whichever thread crashed).
    `parent()` gives the window to put the dialog over (or None)."""
    handler = CrashHandler(home)
    try:
        from PySide6.QtCore import QObject, Signal
        from PySide6.QtWidgets import QApplication
    except ImportError:
        return handler.install()
    app = QApplication.instance()
    if app is None:
        return handler.install()

    class _Relay(QObject):
        """Signals:
        reported(str): a report was written (emitted on the crashing thread, delivered on the main one).
        """

        reported = Signal(str)

    relay = _Relay()
    relay.moveToThread(app.thread())
    dialogs: list[Any] = []

    def _on_reported(path: str) -> None:
        dialogs[:] = [d for d in dialogs if d.isVisible()]
        if dialogs:  # one dialog at a time; the next report is in the same folder
            return
        dialogs.append(show_crash_dialog(Path(path), parent() if parent else None))

    relay.reported.connect(_on_reported)
    handler.on_report = lambda p: relay.reported.emit(str(p))
    handler.relay = relay  # type: ignore[attr-defined]  # kept alive with the handler
    handler.dialogs = dialogs  # type: ignore[attr-defined]
    return handler.install()


@functools.cache
def _dialog_class() -> type:
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget

    from app.markdown import plain_label

    class _CrashDialog(QDialog):
        """Says that Hearth hit an unexpected error, where the report is, and offers to open it,
        show its folder, or keep it and go on."""

        def __init__(self, path: Path, parent: QWidget | None = None):
            super().__init__(parent)
            self.path = path
            self.setWindowTitle("Hearth hit an unexpected error")
            layout = QVBoxLayout(self)
            intro = plain_label(
                "Something in Hearth failed that should not have. Your data is safe: pods keep every "
                "finished step on disk.\n\nA report was saved on this computer. It contains no keys and no "
                "environment variables; you can read it before sharing it with anyone."
            )
            intro.setWordWrap(True)
            layout.addWidget(intro)
            self.path_label = plain_label(str(path))
            self.path_label.setTextInteractionFlags(self.path_label.textInteractionFlags().TextSelectableByMouse)
            self.path_label.setAccessibleName("Report file")
            layout.addWidget(self.path_label)
            self.preview = QPlainTextEdit()
            self.preview.setReadOnly(True)
            self.preview.setAccessibleName("Report")
            try:
                self.preview.setPlainText(path.read_text(encoding="utf-8"))
            except OSError as exc:
                self.preview.setPlainText(f"(The report could not be read back: {exc})")
            self.preview.setMinimumSize(560, 220)
            layout.addWidget(self.preview, 1)
            buttons = QDialogButtonBox()
            self.open_button = buttons.addButton("Open report", QDialogButtonBox.ButtonRole.ActionRole)
            self.folder_button = buttons.addButton("Show folder", QDialogButtonBox.ButtonRole.ActionRole)
            self.keep_button = buttons.addButton("Keep and continue", QDialogButtonBox.ButtonRole.AcceptRole)
            self.open_button.clicked.connect(self._on_open_clicked)
            self.folder_button.clicked.connect(self._on_folder_clicked)
            buttons.accepted.connect(self.accept)
            layout.addWidget(buttons)

        def _on_open_clicked(self) -> None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.path)))

        def _on_folder_clicked(self) -> None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.path.parent)))

    return _CrashDialog


def __getattr__(name: str) -> Any:
    # `CrashDialog` is built on first use so that importing this module never loads Qt.
    if name == "CrashDialog":
        return _dialog_class()
    raise AttributeError(name)
