"""Settings (providers) and the new-agent dialog."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.markdown import plain_label, plain_tooltip, rich_label
from runtime_host.pod import UNNAMED_AS
from runtime_host.store import StoreError
from vault import VaultUnavailable


class ProvidersPage(QWidget):
    """Lists providers; pick one to edit it, Remove it (asks first), or Check it: the server lists its
    models and the key is tested before anything is saved. A dead address is reported at once.

    Signals:
    changed(): a provider was saved or removed (what the Models tab offers changes with it).
    saved(str): the provider of that name was saved (before changed; the message says so and may be added to).
    """

    changed = Signal()
    saved = Signal(str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self._tasks: set[Any] = set()
        self._checked: tuple[str, str, str] | None = None  # (kind, base URL, key) that last passed a check
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.setAccessibleName("Providers")
        self.list.currentRowChanged.connect(self._on_selected)
        layout.addWidget(plain_label("Model providers (pick one to edit it)"))
        layout.addWidget(self.list)
        list_row = QHBoxLayout()
        self.new_button = QPushButton("New provider")
        self.new_button.clicked.connect(self.clear_form)
        self.remove_button = QPushButton("Remove…")
        self.remove_button.setToolTip("Remove the chosen provider and its key (asks first)")
        self.remove_button.clicked.connect(self._on_remove)
        list_row.addWidget(self.new_button)
        list_row.addStretch(1)
        list_row.addWidget(self.remove_button)
        layout.addLayout(list_row)
        form = QFormLayout()
        self.preset = QComboBox()
        self.preset.addItem("Custom (OpenAI-compatible)", None)
        from runtime_host.providers.vendors import VENDORS

        for v in VENDORS.values():
            if v.kind != "embedded":
                self.preset.addItem(v.label, v.name)
        self.preset.currentIndexChanged.connect(self._on_preset)
        form.addRow("Preset", self.preset)
        self.kind = QComboBox()
        for k in ("openai-compatible", "openai", "anthropic", "gemini"):
            self.kind.addItem(k, k)
        self.kind.setAccessibleName("Wire format")
        form.addRow("Wire format", self.kind)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. openai, local-ollama")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("https://api.openai.com/v1 or http://127.0.0.1:11434/v1")
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.lineEdit().setPlaceholderText("e.g. gpt-4o-mini, llama3.1 (Check lists the server's models)")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("stored in the OS keyring, never on disk in plain text")
        for label, w in (("Name", self.name), ("Base URL", self.base_url), ("Model", self.model), ("API key", self.key)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        layout.addLayout(form)
        buttons = QHBoxLayout()
        self.find_local = QPushButton("Find model servers on this machine")
        self.find_local.setToolTip("Looks for Ollama, LM Studio and llama.cpp servers on 127.0.0.1")
        self.find_local.clicked.connect(self._on_find_local)
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip("Ask the server for its models with this key; nothing is saved")
        self.check_button.clicked.connect(lambda: self.start_check(save=False))
        self.save_button = QPushButton("Check and save")
        self.save_button.setToolTip("Check the address and key, then save the provider")
        self.save_button.clicked.connect(lambda: self.start_check(save=True))
        buttons.addWidget(self.find_local)
        buttons.addStretch(1)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.save_button)
        layout.addLayout(buttons)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Provider status")
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)
        for w in (self.name, self.base_url, self.key):
            w.textChanged.connect(self._on_form_changed)
        self.kind.currentIndexChanged.connect(self._on_form_changed)
        self.refresh()

    # -- the form
    def _on_form_changed(self, *_args: Any) -> None:
        if self.save_button.text() != "Check and save":
            self.save_button.setText("Check and save")

    def clear_form(self) -> None:
        self.list.blockSignals(True)
        self.list.clearSelection()
        self.list.setCurrentRow(-1)
        self.list.blockSignals(False)
        self.preset.setCurrentIndex(0)
        self.name.clear()
        self.name.setEnabled(True)
        self.base_url.clear()
        self.model.clear()
        self.key.clear()
        self.key.setPlaceholderText("stored in the OS keyring, never on disk in plain text")
        self.message.setText("Fill in a new provider, or pick a preset.")

    def _on_selected(self, row: int) -> None:
        p = self._rows[row] if 0 <= row < len(self._rows) else None
        if p is None:
            return
        self.name.setText(p["name"])
        self.name.setEnabled(False)  # the name is how agents refer to it
        self.kind.setCurrentIndex(max(0, self.kind.findData(p["kind"])))
        self.base_url.setText(p["base_url"])
        self.model.clear()
        self.model.setEditText(p["model"] or "")
        self.key.clear()
        self.key.setPlaceholderText("a key is saved; type a new one to replace it" if p["has_key"] else
                                    "stored in the OS keyring, never on disk in plain text")
        self.message.setText(f"Editing {p['name']}. Change what you need, then Check and save.")

    def _on_preset(self, _index: int = 0) -> None:
        from runtime_host.providers.vendors import VENDORS

        v = VENDORS.get(self.preset.currentData() or "")
        if v is None:
            return
        self.name.setText(v.name)
        self.name.setEnabled(True)
        self.base_url.setText(v.base_url)
        self.model.setEditText(v.default_model)
        self.kind.setCurrentIndex(max(0, self.kind.findData(v.kind)))
        self.message.setText(v.notes or (f"Get a key at {v.key_page}." if v.key_page else ""))

    def _on_find_local(self) -> None:
        import asyncio

        from runtime_host.providers.vendors import chat_model, discover_local

        self.find_local.setEnabled(False)
        self.message.setText("Looking for model servers on this machine…")

        def look() -> tuple[list[Any], str | None]:
            found = discover_local()
            return found, chat_model(found[0]) if found else None  # never an embedding model listed first

        async def probe() -> None:
            try:
                found, chat = await asyncio.to_thread(look)
            finally:
                self.find_local.setEnabled(True)
            if not found:
                self.message.setText("No Ollama, LM Studio or llama.cpp server answered on this machine. "
                                     "Start one, then try again.")
                return
            first = found[0]
            self.name.setText(first.vendor)
            self.name.setEnabled(True)
            self.base_url.setText(first.base_url)
            self.model.clear()
            self.model.addItems(first.models)
            self.model.setEditText(chat or "")
            self.kind.setCurrentIndex(0)
            self.message.setText("Found: " + "; ".join(f"{f.label} at {f.base_url} ({len(f.models)} models)" for f in found)
                                 + ("" if chat or not first.models else
                                    f". {first.label} has embedding models alone: pull a chat model into it, "
                                    "then find it again."))

        self._probe_task = asyncio.ensure_future(probe())

    def refresh(self) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        self._rows = self.pod.list_providers(builtin=False)
        for p in self._rows:
            self.list.addItem(f"{p['name']} — {p['base_url']} ({p['model'] or 'default model'}){'  🔑' if p['has_key'] else ''}")
        self.list.blockSignals(False)
        self.remove_button.setEnabled(bool(self._rows))

    # -- check, save, remove
    def start_check(self, save: bool) -> Any:
        """Checks the form's address and key in the background; with save, saves when the check passes.
        A failed check keeps the form and offers "Save anyway". Returns the task (tests await it)."""
        import asyncio

        name, base_url = self.name.text().strip(), self.base_url.text().strip()
        key = self.key.text().strip() or None
        kind = self.kind.currentData()
        if save and self.save_button.text() == "Save anyway":
            self.save()
            return None
        if not base_url:
            self.message.setText("Type the server's base URL first (or pick a preset).")
            return None
        self.check_button.setEnabled(False)
        self.save_button.setEnabled(False)
        self.message.setText(f"Asking {base_url} for its models…")

        async def go() -> None:
            from runtime_host.providers import ProviderError
            from runtime_host.providers.vendors import is_chat_model

            try:
                result = await asyncio.to_thread(self.pod.check_provider, name, kind=kind, base_url=base_url, key=key)
            except (ProviderError, StoreError, VaultUnavailable) as exc:
                self.message.setText(f"Check failed: {exc}" + ("\nFix it and check again, or click Save anyway."
                                                               if save else ""))
                if save:
                    self.save_button.setText("Save anyway")
                return
            finally:
                self.check_button.setEnabled(True)
                self.save_button.setEnabled(True)
            typed = self.model.currentText().strip()
            self.model.clear()
            self.model.addItems(result.models)
            self.model.setEditText(typed or next((m for m in result.models if is_chat_model(m)), ""))
            note = ""
            if typed and result.models and typed not in result.models:
                note = f" {typed!r} is not among them: pick one from the Model list."
            self.message.setText(result.summary(name or base_url) + note)
            if save and not note:
                self.save()

        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def save(self) -> bool:
        try:
            info = self.pod.add_provider(self.name.text(), kind=self.kind.currentData(), base_url=self.base_url.text().strip(),
                                         model=self.model.currentText().strip(), key=self.key.text().strip() or None)
        except (StoreError, VaultUnavailable, ValueError) as exc:
            self.message.setText(f"Not saved: {exc}")
            return False
        self.key.clear()
        self.save_button.setText("Check and save")
        self.refresh()
        self.message.setText(f"Saved provider {info['name']!r}" + (f" ({info['model']})." if info["model"] else "."))
        self.saved.emit(info["name"])
        self.changed.emit()
        return True

    def unsaved(self) -> bool:
        """Whether the form holds a provider (or a change to one) that is not saved yet."""
        name = self.name.text().strip()
        if not name:
            return False
        saved = self.pod.provider(name)
        return (saved is None or bool(self.key.text().strip()) or saved["base_url"] != self.base_url.text().strip().rstrip("/")
                or (saved["model"] or "") != self.model.currentText().strip() or saved["kind"] != self.kind.currentData())

    def _on_remove(self) -> None:
        from app.confirm import confirm

        row = self.list.currentRow()
        if not 0 <= row < len(self._rows):
            self.message.setText("Pick a provider in the list first.")
            return
        name = self._rows[row]["name"]
        if not confirm(self, "Remove provider", f"Remove the provider {name!r} and its key?", "Remove",
                       "Agents that use it must be given another provider first."):
            self.message.setText("Nothing removed.")
            return
        try:
            self.pod.remove_provider(name)
        except (StoreError, VaultUnavailable) as exc:
            self.message.setText(f"Not removed: {exc}")
            return
        self.refresh()
        self.clear_form()
        self.message.setText(f"Removed {name!r} and its key.")
        self.changed.emit()


ROLE_LABELS = {
    "extraction": "Memory: keep or skip (extraction)",
    "ingest": "Memory: writing wiki pages (ingest)",
    "ask_memory": "Ask memory (answers from your wiki)",
    "import": "Watched folders: keep or skip messages of mail exports (import)",
    "embedding": "Search by meaning (embeddings)",
}
WRITING_ROLES = ("ingest", "ask_memory")  # work the built-in model cannot do (memory_jobs.capable)
# The embedding role's local choices; each of the person's providers with an embeddings API follows them.
LOCAL_EMBEDDING_LABELS = {"static": "On this computer — static (fast)",
                          "minilm": "On this computer — MiniLM (better at meaning, slower to index)"}


def embedding_label(choice: dict[str, Any]) -> str:
    """How an embedding choice reads: where the vectors are made, and for a provider what it will be sent."""
    if choice["local"]:
        return LOCAL_EMBEDDING_LABELS.get(choice["model"], choice["ref"])
    return f"{choice['provider']} — {choice['model']} (the text of your own notes is sent to {choice['provider']})"


class ModelsPage(QWidget):
    """One model per kind of work. Chat models are chosen per agent; background roles prefer cheap ones."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        note = plain_label("Each kind of work has its own model. Chat models are set per agent (Edit agent). Memory work "
                           "defaults to the local model so it costs nothing and needs no network. Search by meaning runs "
                           "on this computer unless you choose a provider's embeddings: then only your own notes go to "
                           "it (shared and other people's memory stay on the local model). Changing it re-embeds your "
                           "memory in the background, and search keeps working meanwhile. Speech to text runs on a fixed "
                           "local model.")
        note.setWordWrap(True)
        layout.addWidget(note)
        form = QFormLayout()
        self.combos: dict[str, QComboBox] = {}
        for role, label in ROLE_LABELS.items():
            combo = QComboBox()
            combo.setAccessibleName(label)
            self.combos[role] = combo
            combo.activated.connect(lambda _i, role=role: self._on_chosen(role))
            form.addRow(label, combo)
        self.refresh()
        layout.addLayout(form)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Models status")
        layout.addWidget(self.message)
        self.embedding_progress = plain_label("")
        self.embedding_progress.setWordWrap(True)
        self.embedding_progress.setAccessibleName("Re-embedding progress")
        layout.addWidget(self.embedding_progress)
        layout.addStretch(1)
        self._progress_timer = QTimer(self)
        self._progress_timer.setInterval(400)
        self._progress_timer.timeout.connect(self.show_embedding_progress)
        self._progress_timer.start()
        self.show_embedding_progress()

    def refresh(self) -> None:
        """Offers each role the providers there are now (one saved or removed on the Providers tab meanwhile);
        each role keeps the choice it shows, unless that provider is gone."""
        info = self.pod.models()
        options = [(f"{p['name']} — {p['model'] or 'default'}", p["name"]) for p in info["providers"]]
        # The tiny built-in model cannot write wiki pages or answer from them: not offered for that work.
        capable = [(f"{p['name']} — {p['model'] or 'default'}", p["name"]) for p in info["providers"] if not p["builtin"]]
        embedding_options = [(embedding_label(c), c["ref"]) for c in self.pod.embedding_choices()]
        for role, combo in self.combos.items():
            chosen = combo.currentData()  # a choice shown, not saved yet (None: the role's setting as it is)
            combo.clear()
            combo.setEnabled(True)
            combo.setToolTip("")
            current = info["roles"][role]
            if "shared_by" in current:  # search by meaning is one index for everyone: the first person chooses
                local = LOCAL_EMBEDDING_LABELS.get(current["model"], current["model"])
                combo.addItem(f"{local}, chosen by {current['shared_by']} for everyone", None)
                combo.setEnabled(False)
                who = current["shared_by"]
                who += "" if who == UNNAMED_AS else ", who set Hearth up,"
                combo.setToolTip(plain_tooltip(f"Search by meaning is shared by everyone on this Hearth, so "
                                               f"{who} chooses its model."))
                continue
            if "inherits" in current:
                combo.addItem(f"Same as {ROLE_LABELS.get(current['inherits'], current['inherits'])}", None)
            elif current.get("provider"):
                combo.addItem(f"{current['provider']}/{current.get('model') or ''} ({current['source']})".replace("/ (", " ("),
                              None)
            else:
                combo.addItem("Not set", None)
            choices = embedding_options if role == "embedding" else capable if role in WRITING_ROLES else options
            for text_, ref in choices:
                combo.addItem(text_, ref)
            if not choices:
                combo.setToolTip("Add a provider (Providers tab) or a model server on this computer first.")
            if chosen is not None:
                combo.setCurrentIndex(max(0, combo.findData(chosen)))

    def show_embedding_progress(self) -> None:
        """While memory is re-embedded with a newly chosen model: how far it is (search keeps working)."""
        st = self.pod.embedding_status()
        if not st:
            self.embedding_progress.setText("")
            return
        if st.get("error"):
            self.embedding_progress.setText(str(st["error"]))
        elif st.get("running"):
            self.embedding_progress.setText(
                f"Re-embedding memory for search by meaning: {st['done']} of {st['total']} items done. "
                "Search keeps working meanwhile.")
        elif st.get("total"):
            self.embedding_progress.setText(f"Memory is re-embedded: {st['total']} items, ready for search by meaning."
                                            + (f" {st['note']}" if st.get("note") else ""))
        else:
            self.embedding_progress.setText(str(st.get("note") or ""))

    def _on_chosen(self, role: str) -> None:
        """A choice takes effect at once (the next memory run uses it) and says so."""
        ref = self.combos[role].currentData()
        if ref is None:
            return
        try:
            self.pod.set_role_model(role, ref)
        except StoreError as exc:
            self.message.setText(f"Not saved: {exc}")
            return
        self.message.setText(f"{ROLE_LABELS[role]} now uses {ref}.")

    def save(self) -> bool:
        try:
            for role, combo in self.combos.items():
                if combo.currentData() is not None:
                    self.pod.set_role_model(role, combo.currentData())
        except StoreError as exc:
            self.message.setText(f"Not saved: {exc}")
            return False
        return True


class ChannelsPage(QWidget):
    """Telegram: the bot token (into the keyring), a one-time link code, linked chats, the status."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        intro = plain_label("Reach your agents from your phone through a Telegram bot. Hearth polls Telegram, so your "
                            "computer needs no public address. Create a bot with @BotFather and paste its token here.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        self.token = QLineEdit()
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setAccessibleName("Telegram bot token")
        self.token.setPlaceholderText("123456:ABC-… (kept in the OS keyring)")
        form.addRow("Bot token", self.token)
        layout.addLayout(form)
        row = QHBoxLayout()
        self.save_token = QPushButton("Save token and connect")
        self.save_token.clicked.connect(self._on_save_token)
        self.link = QPushButton("Link my Telegram")
        self.link.clicked.connect(self._on_link)
        row.addWidget(self.save_token)
        row.addWidget(self.link)
        layout.addLayout(row)
        self.links = QListWidget()
        self.links.setAccessibleName("Linked chats")
        layout.addWidget(plain_label("Linked chats"))
        layout.addWidget(self.links)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(self.message.textInteractionFlags() | Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.refresh()

    def refresh(self) -> None:
        tg = self.pod.channels.telegram
        self.links.clear()
        if tg is None:
            self.message.setText("Telegram is not connected yet.")
            return
        for link in tg.links(self.pod.person.id):
            self.links.addItem(f"chat {link.chat_id} → {link.agent or 'default agent'}")
        self.message.setText(f"Telegram: {tg.status.state}. {tg.status.detail}")

    def _on_save_token(self) -> None:
        import asyncio

        from runtime_host.channels.base import ChannelError

        try:
            self.pod.channels.save_telegram_token(self.pod.person_id, self.token.text().strip())
        except (ChannelError, ValueError) as exc:
            self.message.setText(str(exc))
            return
        self.token.clear()

        async def connect() -> None:
            ok = await self.pod.channels.start()
            self.message.setText("Connecting to Telegram…" if ok else "No token saved.")
            self.refresh()

        self._task = asyncio.ensure_future(connect())

    def _on_link(self) -> None:
        tg = self.pod.channels.telegram
        if tg is None:
            self.message.setText("Save the bot token first.")
            return
        offer = tg.begin_link(self.pod.person.id)
        self.message.setText(f"{offer.instructions}\n\nCode: {offer.code}" + (f"\n{offer.url}" if offer.url else ""))


class PartnersPage(QWidget):
    """Partner agents of other companies (A2A): address, key and certificate pinned when added."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        intro = plain_label("A partner is another company's agent. Its address, key and certificate are fixed when you "
                            "add it, every message to it needs your approval, and its replies are treated as untrusted.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QListWidget()
        self.list.setAccessibleName("Partners")
        layout.addWidget(self.list)
        form = QFormLayout()
        self.name = QLineEdit()
        self.endpoint = QLineEdit()
        self.endpoint.setPlaceholderText("https://agents.example.com/a2a")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.fingerprint = QLineEdit()
        self.fingerprint.setPlaceholderText("optional: SHA-256 of their TLS certificate")
        for label, w in (("Name", self.name), ("Address", self.endpoint), ("Key", self.key),
                         ("Certificate pin", self.fingerprint)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        layout.addLayout(form)
        self.add = QPushButton("Add partner")
        self.add.clicked.connect(self.save)
        layout.addWidget(self.add)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for p in self.pod.list_partners():
            self.list.addItem(f"{p['name']} — {p['endpoint']}")

    def save(self) -> bool:
        try:
            self.pod.add_partner(self.name.text().strip(), self.endpoint.text().strip(), self.key.text().strip(),
                                 tls_fingerprint=self.fingerprint.text().strip())
        except (StoreError, VaultUnavailable, ValueError) as exc:
            self.message.setText(f"Not added: {exc}")
            return False
        self.key.clear()
        self.message.setText("Partner added.")
        self.refresh()
        return True


class McpPage(QWidget):
    """MCP servers: add one (its command, or its URL), see the tools it lists, allow them for an agent."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        intro = plain_label("An MCP server gives agents more tools. Its tools are offered to an agent only after you allow "
                            "them here; a tool the server adds later stays off until you allow it too. What the tools "
                            "return is treated as untrusted text.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QListWidget()
        self.list.setAccessibleName("MCP servers")
        layout.addWidget(self.list)
        form = QFormLayout()
        self.name = QLineEdit()
        self.command = QLineEdit()
        self.command.setPlaceholderText("the command that starts it, e.g. npx -y @scope/server  (or an https:// URL)")
        self.agent = QComboBox()
        for label, w in (("Name", self.name), ("Command or URL", self.command), ("Allow for agent", self.agent)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        layout.addLayout(form)
        row = QHBoxLayout()
        self.add = QPushButton("Add server")
        self.allow = QPushButton("Allow its tools for the agent")
        self.add.clicked.connect(self._on_add)
        self.allow.clicked.connect(self._on_allow)
        row.addWidget(self.add)
        row.addWidget(self.allow)
        layout.addLayout(row)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self._tasks: set[Any] = set()
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for s in self.pod.mcp.servers(self.pod.person.id):
            self.list.addItem(f"{s['name']} ({s['transport']}): {', '.join(t['name'] for t in s['tools']) or 'no tools'}")
        self.agent.clear()
        for a in self.pod.list_agents():
            self.agent.addItem(a["name"], a["name"])

    def _on_add(self) -> None:
        import asyncio
        import shlex

        name, target = self.name.text().strip(), self.command.text().strip()
        url = target if target.startswith(("http://", "https://")) else None
        command = None if url else shlex.split(target)

        async def go() -> None:
            try:
                info = await self.pod.mcp.add_server(self.pod.person.id, name, command=command, url=url)
            except StoreError as exc:
                self.message.setText(str(exc))
                return
            self.message.setText(f"Added {info['name']}: {', '.join(info['tools']) or 'no tools'}.")
            self.refresh()

        self.message.setText("Starting the server to list its tools…")
        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_allow(self) -> None:
        item = self.list.currentItem()
        agent = self.agent.currentData()
        if item is None or not agent:
            self.message.setText("Pick a server in the list and an agent first.")
            return
        server = item.text().split(" ", 1)[0]
        try:
            allowed = self.pod.allow_mcp(agent, server)
        except StoreError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText(f"{agent} may now use: {', '.join(allowed) or 'nothing'}.")


class SecurityPage(QWidget):
    """The current person's passphrase: it locks them on a shared computer and, where no keyring exists,
    encrypts their keys on disk. Also says whether agents run in the sandbox."""

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        from runtime_host.sandbox import sandbox_status

        layout = QVBoxLayout(self)
        sandbox = plain_label(sandbox_status()[1])
        sandbox.setWordWrap(True)
        layout.addWidget(sandbox)
        form = QFormLayout()
        self.old = QLineEdit()
        self.new = QLineEdit()
        for label, w in (("Current passphrase", self.old), ("New passphrase", self.new)):
            w.setEchoMode(QLineEdit.EchoMode.Password)
            w.setAccessibleName(label)
            form.addRow(label, w)
        layout.addLayout(form)
        self.save_button = QPushButton("Set passphrase")
        self.save_button.clicked.connect(self.save)
        layout.addWidget(self.save_button)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        layout.addStretch(1)

    def save(self) -> bool:
        try:
            self.pod.set_passphrase(self.new.text(), old=self.old.text() or None)
        except StoreError as exc:
            self.message.setText(str(exc))
            return False
        self.old.clear()
        self.new.clear()
        self.message.setText(f"{self.pod.person.name} is now protected by this passphrase.")
        return True


class SettingsDialog(QDialog):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Hearth — Settings")
        self.tabs = QTabWidget()
        self.providers = ProvidersPage(pod)
        self.tabs.addTab(self.providers, "Providers")
        self.models = ModelsPage(pod)
        self.tabs.addTab(self.models, "Models")
        self.providers.changed.connect(self.models.refresh)  # a provider just saved can be chosen for a role at once
        self.channels = ChannelsPage(pod)
        self.tabs.addTab(self.channels, "Channels")
        self.partners = PartnersPage(pod)
        self.tabs.addTab(self.partners, "Partners")
        self.mcp = McpPage(pod)
        self.tabs.addTab(self.mcp, "MCP servers")
        self.security = SecurityPage(pod)
        self.tabs.addTab(self.security, "Security")
        from app.people_page import PeoplePage

        self.people = PeoplePage(pod)
        self.tabs.addTab(self.people, "People")
        self.people.removed.connect(self._on_person_removed)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)
        self.resize(560, 460)

    def _on_person_removed(self, name: str) -> None:
        if name == self.providers.pod.person.name:  # the person these pages were for is gone: nothing here is anyone's
            self.reject()

    def _save(self) -> None:
        """Saves the roles; a provider typed but not saved is checked first (address, key, models) and the
        dialog stays open to show the outcome."""
        if not self.models.save():
            self.tabs.setCurrentWidget(self.models)
            return
        if self.providers.unsaved():
            self.tabs.setCurrentWidget(self.providers)
            self.providers.start_check(save=True)
            return
        self.accept()


class AddAgentDialog(QDialog):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.setWindowTitle("New agent")
        form = QFormLayout()
        self.name = QLineEdit()
        self.profile = QComboBox()
        self.profile.addItem("Your own instructions", None)
        for key, prof in pod.profiles().items():
            self.profile.addItem(f"{prof['title']} — {prof['role']}", key)
        self.profile.currentIndexChanged.connect(self._on_profile)
        self.provider = QComboBox()
        for p in pod.list_providers():
            self.provider.addItem(p["name"] + (" (offline, tiny)" if p["builtin"] else ""), p["name"])
        self.provider.setCurrentIndex(0)
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("Role and personality, e.g. 'You are a concise research assistant.'")
        for label, w in (("Name", self.name), ("Profile", self.profile), ("Provider", self.provider),
                         ("Instructions", self.system)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        self.created: dict[str, Any] | None = None

    @classmethod
    def for_edit(cls, pod: Any, name: str, parent: QWidget | None = None) -> AddAgentDialog:
        """The same form, filled in, to change an existing agent."""
        dlg = cls(pod, parent)
        dlg.setWindowTitle(f"Edit {name}")
        info = next(a for a in pod.list_agents() if a["name"] == name)
        dlg.editing = name
        dlg.name.setText(name)
        dlg.name.setEnabled(False)
        dlg.profile.setEnabled(False)
        dlg.provider.setCurrentIndex(max(0, dlg.provider.findData(info["provider"])))
        dlg.system.setPlainText(info["system"])
        from app.safety_form import SafetyForm

        inst, _profile = pod.find_agent(name)
        dlg.safety = SafetyForm(pod.safety_policy(inst.id, name).to_dict())
        dlg.safety.setAccessibleName("Safety policy")
        dlg.layout().insertWidget(1, rich_label("<b>Safety</b>: what Hearth's gates do for this agent"))
        dlg.layout().insertWidget(2, dlg.safety)
        return dlg

    def _on_profile(self, _index: int = 0) -> None:
        key = self.profile.currentData()
        if key:
            self.system.setPlainText(self.pod.profiles()[key]["system"])
            if not self.name.text().strip():
                self.name.setText(self.pod.profiles()[key]["title"].split()[0])

    editing: str | None = None
    safety: Any = None  # app.safety_form.SafetyForm when editing

    def _save(self) -> None:
        if self.editing:
            try:
                safety = self.safety.value() if self.safety is not None else None
                self.created = self.pod.edit_agent(self.editing, provider=self.provider.currentData(),
                                                   system=self.system.toPlainText(), safety=safety)
            except StoreError as exc:
                self.message.setText(str(exc))
                return
            self.accept()
            return
        try:
            self.created = self.pod.add_agent(self.name.text(), provider=self.provider.currentData(),
                                              system=self.system.toPlainText(), profile=self.profile.currentData())
        except StoreError as exc:
            self.message.setText(str(exc))
            return
        self.accept()
