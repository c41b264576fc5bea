"""The first-run welcome: the person's name, what works offline, what needs a key, and a way to add a provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QFormLayout, QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.markdown import plain_label, rich_label
from runtime_host.pod import UNNAMED
from runtime_host.store import StoreError

WELCOME = (
    "<h2>Welcome to Hearth</h2>"
    "<p>Your agents, their memory and your keys stay on this computer.</p>"
    "<p><b>Works right now, offline:</b> the window, an <i>Assistant</i> agent on a tiny built-in model (it answers "
    "with no key and no network, but weakly), memory and its search, schedules, tasks, and dictation.</p>"
    "<p><b>Needs a key or a server:</b> real answers from a hosted model (OpenAI, Anthropic, Google, …: paste a key, "
    "kept in your system keyring) or from a model server on this computer (Ollama, LM Studio, llama.cpp: no key); "
    "your mail (your IMAP/SMTP account); Telegram (a bot token).</p>"
    "<p>Nothing an agent writes leaves this computer without your approval.</p>"
)


class WelcomeDialog(QDialog):
    """Signals:
    add_provider(): the person wants to add a model provider now.
    """

    add_provider = Signal()

    def __init__(self, parent: QWidget | None = None, rename: Callable[[str], Any] | None = None):
        """``rename`` gives the person the name they typed (left empty, they stay "Me" until they change it with
        ✎ next to the person list); a name it refuses (StoreError) is said here and the welcome stays open."""
        super().__init__(parent)
        self._rename = rename
        self.setWindowTitle("Welcome to Hearth")
        text = rich_label(WELCOME)
        text.setWordWrap(True)
        text.setAccessibleName("Welcome")
        self.text = text
        self.add_button = QPushButton("Add a model provider")
        self.later = QPushButton("Start with the offline model")
        self.name = QLineEdit()
        self.name.setAccessibleName("Your name")
        self.name.setPlaceholderText(f"what your agents, your memory and others here call you (else “{UNNAMED}”)")
        self.problem = plain_label("")
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.add_button.clicked.connect(self._on_add)
        self.later.clicked.connect(self._on_later)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.later)
        row.addWidget(self.add_button)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        if rename is not None:
            form = QFormLayout()
            form.addRow("Your name:", self.name)
            layout.addLayout(form)
            layout.addWidget(self.problem)
        layout.addLayout(row)
        self.resize(560, 360)

    def _named(self) -> bool:
        name = self.name.text().strip()
        if self._rename is None or not name:
            return True
        try:
            self._rename(name)
        except StoreError as exc:
            self.problem.setText(str(exc))
            self.problem.show()
            return False
        return True

    def _on_later(self) -> None:
        if self._named():
            self.accept()

    def _on_add(self) -> None:
        if self._named():
            self.accept()
            self.add_provider.emit()


def show_welcome(window: Any) -> WelcomeDialog:
    def rename(name: str) -> None:
        window.pod.rename(name)
        window.refresh_people()

    dlg = WelcomeDialog(window, rename if window.pod.person.name == UNNAMED else None)
    dlg.add_provider.connect(window.open_settings)
    dlg.show()
    return dlg
