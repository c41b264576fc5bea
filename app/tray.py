"""The tray icon, its menu and notifications, with an in-window fallback when there is no tray.

Notifications come from Pod events a person would want to see while the window is closed:
background, scheduled and mail-triggered runs that finish or fail, and cards waiting for approval.
"""

from __future__ import annotations

import html
import sys
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QHBoxLayout, QMenu, QPushButton, QSystemTrayIcon, QWidget

from app.markdown import rich_label, without_overrides
from runtime_host.profiles import resources_dir


def app_icon() -> QIcon:
    icon = QIcon()
    folder = resources_dir() / "icons"
    for name in ("hearth.svg", "hearth.png", "hearth-64.png"):
        if (folder / name).exists():
            icon.addFile(str(folder / name))
    return icon


class NotificationBar(QWidget):
    """In-window notifications, for desktops without a tray (or while the window is open)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = rich_label("")
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Notification")
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("Dismiss")
        close.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.setStyleSheet("background-color: palette(alternate-base); border-radius: 4px;")
        self.history: list[tuple[str, str]] = []
        self._away: list[tuple[str, str]] = []  # "While you were away", on the bar until dismissed or timed out
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.dismiss)
        self.hide()

    def show_message(self, title: str, text: str, timeout_ms: int = 15000) -> None:
        """Shows one notification; a "While you were away" still on the bar stays under it, for as long as it had."""
        self.history.append((title, text))
        shown = f"<b>{html.escape(title)}</b> — {html.escape(text)}"  # a mail's subject is no markup
        if self._away:
            shown += "<br><br>" + _away_html(self._away)
            timeout_ms = max(timeout_ms, self._timer.remainingTime())
        self.label.setText(shown)
        self.show()
        self._timer.start(timeout_ms)

    def show_away(self, notes: list[tuple[str, str]]) -> None:
        """The notifications meant for the person now shown that came while someone else was: in one message,
        under the one still shown, if any (such as "Sandbox off" at start-up). Later notifications show above it
        until the person dismisses the bar or a minute has passed."""
        now = [self.history[-1]] if self.history and not self.isHidden() else []
        self.history.extend(notes)
        self._away = list(notes)
        lines = _away_html(notes)
        if now:
            lines += f"<br><br><b>{html.escape(now[0][0])}</b> — {html.escape(now[0][1])}"
        self.label.setText(lines)
        self.show()
        self._timer.start(60000)

    def dismiss(self) -> None:
        """Hides the bar (the person's Dismiss, or its time is up): what it showed has been seen."""
        self._timer.stop()
        self._away = []
        self.hide()

    def clear(self) -> None:
        """Forgets what was shown (the window is handed to another person): hidden, its text and history gone."""
        self.dismiss()
        self.label.setText("")
        self.history.clear()


def _away_html(notes: list[tuple[str, str]]) -> str:
    lines = "<br>".join(f"{html.escape(title)} — {html.escape(text)}" for title, text in notes)
    return f"<b>While you were away</b> ({len(notes)}):<br>{lines}"


class Tray(QObject):
    """Signals:
    open_requested(): the person asked to see the window.
    quit_requested(): the person chose Quit.
    pause_toggled(bool): the person paused (True) or resumed (False) all schedules.
    """

    open_requested = Signal()
    quit_requested = Signal()
    pause_toggled = Signal(bool)

    def __init__(self, bar: NotificationBar, parent: QObject | None = None, force_no_tray: bool = False):
        super().__init__(parent)
        self.bar = bar
        self.available = not force_no_tray and QSystemTrayIcon.isSystemTrayAvailable()
        self.menu = QMenu()
        self.open_action = QAction("Open Hearth", self.menu)
        self.open_action.triggered.connect(self._on_open)
        self.pause_action = QAction("Pause schedules", self.menu)
        self.pause_action.setCheckable(True)
        self.pause_action.triggered.connect(self._on_pause)
        self.quit_action = QAction("Quit Hearth", self.menu)
        self.quit_action.triggered.connect(self._on_quit)
        for a in (self.open_action, self.pause_action, self.quit_action):
            self.menu.addAction(a)
        self.icon: QSystemTrayIcon | None = None
        if self.available:
            self.icon = QSystemTrayIcon(app_icon(), self)
            self.icon.setToolTip("Hearth")
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_activated)
            self.icon.show()

    def notify(self, title: str, text: str) -> None:
        if self.icon is not None:
            self.icon.showMessage(title, tray_body(text), QSystemTrayIcon.MessageIcon.Information, 10000)
        self.bar.show_message(title, text)

    def set_paused(self, paused: bool) -> None:
        self.pause_action.setChecked(paused)
        self.pause_action.setText("Resume schedules" if paused else "Pause schedules")

    def _on_open(self) -> None:
        self.open_requested.emit()

    def _on_quit(self) -> None:
        self.quit_requested.emit()

    def _on_pause(self) -> None:
        paused = self.pause_action.isChecked()
        self.set_paused(paused)
        self.pause_toggled.emit(paused)

    def _on_activated(self, reason: Any) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_requested.emit()


def tray_body(text: str) -> str:
    """A notification's text as the tray's popup must be given it to show it as written: on Linux the desktop's
    notification server reads the body as markup (a mail subject's or a model's "<!--" hid the rest), so it is
    escaped there; Windows and macOS show it as plain text already. The title is plain text everywhere."""
    if sys.platform in ("win32", "darwin"):
        return text
    return html.escape(text, quote=False)


NOTICE_CHARS = 200  # of a notification's text: a popup shows a few lines


def cut_text(text: str, limit: int = NOTICE_CHARS) -> str:
    """``text`` cut to ``limit`` characters at the end of a word, with "…" where it was cut (a word without a space in
    its last quarter, a long address say, is cut where the limit falls)."""
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    space = head.rfind(" ")
    if space >= limit * 3 // 4:
        head = head[:space]
    return head.rstrip(" ,;:.") + "…"


def notification_for(ev: dict[str, Any]) -> tuple[str, str] | None:
    """The (title, text) a Pod event deserves as a notification, or None. Known keys in it are hidden before any of
    it is cut to length (a key cut in two is no longer recognised: a provider's refusal may quote the key it got).
    A mail's sender and subject, a model's words: shown as written, their direction overrides not obeyed."""
    note = _notification_for(ev)
    return None if note is None else (without_overrides(note[0]), without_overrides(note[1]))


def _notification_for(ev: dict[str, Any]) -> tuple[str, str] | None:
    from vault import redact_value

    ev = redact_value(ev)
    kind = ev.get("type")
    origin = ev.get("origin", "chat")
    if kind == "turn.finished" and origin not in ("chat", "telegram"):
        what = {"schedule": "Scheduled run", "background": "Background run", "mail": "Mail rule",
                "handoff": "Hand-off"}.get(origin, "Run")
        if ev.get("status") == "done":
            return f"{what} by {ev.get('agent')} finished", cut_text(ev.get("text") or "")
        return f"{what} by {ev.get('agent')} failed", cut_text(ev.get("error") or "")
    if kind == "card.created":  # with the warning about hidden direction characters in it, whole
        return "Waiting for your approval", "\n".join(filter(None, (cut_text(ev.get("summary") or ""),
                                                                     ev.get("warning"))))
    if kind == "channels.failed":
        return "Phone channels did not start", cut_text(ev.get("error") or "")
    if kind == "turn.abandoned" and origin not in ("chat", "telegram"):
        return f"Run by {ev.get('agent')} moved to another host", cut_text(ev.get("reason") or "")
    if kind == "mail.notify":  # a mail rule's "Notify me": who wrote and about what, as plain text
        sender = " ".join(str(ev.get("from") or "").split())[:80] or "an unknown sender"
        return f"Mail from {sender}", cut_text(" ".join(str(ev.get("subject") or "").split())) or "(no subject)"
    if kind == "mail.rule_failed":  # a rule's action failed: which rule, which mail, why, what to do (once each)
        return f"Mail rule {str(ev.get('rule') or '')[:80]!r} failed", str(ev.get("text") or ev.get("error") or "")
    if kind == "memory.failed" and ev.get("notes"):  # a timed ingest left a note whose file is lost or damaged
        title = "A note of yours could not be read" if len(ev["notes"]) == 1 else "Notes of yours could not be read"
        return title, str(ev.get("error") or "")  # whole: which file and what to do (told once per file)
    if kind == "memory.failed":  # a timed memory run: the person's own model failed (told once per failure)
        what = {"memory.producer": "Memory could not read your new chat and mail",
                "memory.ingest": "Memory could not write your wiki pages",
                "memory.nightly": "Memory's nightly pass left some pages as they were"}.get(str(ev.get("job")), "A memory job failed")
        return what, cut_text(ev.get("error") or "")
    if kind == "worker.state" and ev.get("new") == "fatal":
        return f"Agent {ev.get('agent')} stopped", cut_text(ev.get("reason") or "")
    return None
