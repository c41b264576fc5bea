"""The first-run welcome: what works offline, what needs a key, and a way to add a provider."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from app.markdown import rich_label

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

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Welcome to Hearth")
        text = rich_label(WELCOME)
        text.setWordWrap(True)
        text.setAccessibleName("Welcome")
        self.text = text
        self.add_button = QPushButton("Add a model provider")
        self.later = QPushButton("Start with the offline model")
        self.add_button.clicked.connect(self._on_add)
        self.later.clicked.connect(self.accept)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.later)
        row.addWidget(self.add_button)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addLayout(row)
        self.resize(560, 360)

    def _on_add(self) -> None:
        self.accept()
        self.add_provider.emit()


def show_welcome(window: Any) -> WelcomeDialog:
    dlg = WelcomeDialog(window)
    dlg.add_provider.connect(window.open_settings)
    dlg.show()
    return dlg
