"""Settings (providers) and the new-agent dialog."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from runtime_host.store import StoreError
from vault import VaultUnavailable


class ProvidersPage(QWidget):
    """Lists providers and adds an OpenAI-compatible one (base URL, model, key into the OS keyring)."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.setAccessibleName("Providers")
        layout.addWidget(QLabel("Model providers"))
        layout.addWidget(self.list)
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. openai, local-ollama")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("https://api.openai.com/v1 or http://127.0.0.1:11434/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("e.g. gpt-4o-mini, llama3.1")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("stored in the OS keyring, never on disk in plain text")
        for label, w in (("Name", self.name), ("Base URL", self.base_url), ("Model", self.model), ("API key", self.key)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        layout.addLayout(form)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Provider status")
        layout.addWidget(self.message)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for p in self.pod.list_providers():
            self.list.addItem(f"{p['name']} — {p['base_url']} ({p['model'] or 'default model'}){'  🔑' if p['has_key'] else ''}")

    def save(self) -> bool:
        try:
            info = self.pod.add_provider(self.name.text(), kind="openai-compatible", base_url=self.base_url.text().strip(),
                                         model=self.model.text().strip(), key=self.key.text().strip() or None)
        except (StoreError, VaultUnavailable, ValueError) as exc:
            self.message.setText(f"Not saved: {exc}")
            return False
        self.key.clear()
        self.message.setText(f"Saved provider {info['name']!r}.")
        self.refresh()
        return True


class SettingsDialog(QDialog):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Hearth — Settings")
        self.tabs = QTabWidget()
        self.providers = ProvidersPage(pod)
        self.tabs.addTab(self.providers, "Providers")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)
        self.resize(560, 460)

    def _save(self) -> None:
        if self.providers.save():
            self.accept()


class AddAgentDialog(QDialog):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.setWindowTitle("New agent")
        form = QFormLayout()
        self.name = QLineEdit()
        self.provider = QComboBox()
        self.provider.addItem("(none)", None)
        for p in pod.list_providers():
            self.provider.addItem(p["name"], p["name"])
        if self.provider.count() > 1:
            self.provider.setCurrentIndex(1)
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("Role and personality, e.g. 'You are a concise research assistant.'")
        for label, w in (("Name", self.name), ("Provider", self.provider), ("Instructions", self.system)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        self.created: dict[str, Any] | None = None

    def _save(self) -> None:
        try:
            self.created = self.pod.add_agent(self.name.text(), provider=self.provider.currentData(),
                                              system=self.system.toPlainText())
        except StoreError as exc:
            self.message.setText(str(exc))
            return
        self.accept()
