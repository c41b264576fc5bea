"""The main window: agents on the left, the conversation with its tool-call tree, and the composer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.activity_view import ActivityView
from app.bridge import PodBridge
from app.cards_view import CardsView, drop_card
from app.chat_view import RUN_CONVERSATION, ChatView, RunsList, StepsTree, cut_off_marker
from app.confirm import ask_text
from app.conversation_list import ConversationList
from app.dialogs import AddAgentDialog, SettingsDialog
from app.mail_view import MailView
from app.markdown import plain_label, plain_tooltip
from app.schedules_view import SchedulesView
from app.tasks_view import TasksView
from app.tray import NotificationBar, Tray, app_icon, notification_for
from app.voice import VoiceButton
from app.wiki_view import WikiView
from runtime_host import events
from runtime_host.pod import EMBEDDED, EMBEDDED_NOTE, UNNAMED
from runtime_host.store import StoreError

EMPTY_HINT = (
    "**Welcome to Hearth.** Your agents, their memory and your keys stay on this machine.\n\n"
    "To start: open **Settings → Providers** and add a model provider (an OpenAI-compatible server such as "
    "Ollama or LM Studio on this machine, or a hosted provider with your key), then create an agent with **New agent**."
)


AUDIO_SUFFIXES = (".wav", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".flac", ".webm")



def open_first_person(pod: Any, ask: Callable[[str, str | None], str | None]) -> Any | None:
    """The person who set this Hearth up, as the window opens on them: when they have a passphrase it is
    asked first (``ask(name, last_error)`` returns it, or None when the person cancels), so a shared
    computer never shows their conversations to whoever starts Hearth. A wrong passphrase is audited."""
    first = pod.first_person()
    name = first.person.name
    if not any(p["name"] == name and p["has_passphrase"] for p in pod.people()):
        return first
    error: str | None = None
    for _ in range(5):
        phrase = ask(name, error)
        if phrase is None:
            return None
        try:
            return pod.unlock(name, phrase)
        except StoreError as exc:
            error = str(exc)
    return None


def ask_passphrase(name: str, error: str | None) -> str | None:
    """The start-up passphrase prompt of the window (Cancel quits)."""
    text = f"Hearth is locked. Passphrase for {name}:"
    if error:
        text = f"{error}\n\n{text}"
    phrase, ok = ask_text(None, "Unlock Hearth", text, QLineEdit.EchoMode.Password)
    return phrase if ok else None


class Composer(QPlainTextEdit):
    """Multi-line message input: Enter adds a line, Ctrl+Enter sends; audio files dropped on it
    are transcribed locally into it.

    Signals:
    submitted(): Ctrl+Enter was pressed.
    audio_dropped(str): an audio file was dropped on the composer.
    """

    submitted = Signal()
    audio_dropped = Signal(str)
    file_dropped = Signal(str)

    def dropEvent(self, event: Any) -> None:  # noqa: N802
        md = event.mimeData()
        files = [u.toLocalFile() for u in md.urls() if u.isLocalFile()] if md.hasUrls() else []
        if not files:
            super().dropEvent(event)
            return
        event.acceptProposedAction()
        for path in files:
            if path.lower().endswith(AUDIO_SUFFIXES):
                self.audio_dropped.emit(path)
            else:
                self.file_dropped.emit(path)

    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class MainWindow(QMainWindow):
    """Signals:
    closed(): the window was closed (the app then shuts the Pod down and exits).
    """

    closed = Signal()

    def __init__(self, pod: Any, *, use_tray: bool = True):
        super().__init__()
        self.pod = pod
        self.bridge = PodBridge(pod, self)
        self.bridge.event.connect(self._on_pod_event)
        self._turn_handlers: dict[type[events.Event], Callable[[Any], None]] = {
            events.TurnStarted: self._on_turn_started, events.Delta: self._on_delta, events.Progress: self._on_progress,
            events.StepStarted: self._on_step_started, events.StepFinished: self._on_step_finished,
            events.TurnResuming: self._on_turn_resuming, events.TurnAbandoned: self._on_turn_abandoned,
            events.TurnFinished: self._on_turn_finished}
        self.agent: str | None = None
        self.conversation_id: str | None = None
        self._new_conversation = False
        self._editing: str | None = None  # a message of the person's being edited, to be answered again
        self._live_turn: str | None = None
        # What came for the person shown while another used the window (before a quit too) waits in pod.db until
        # the window is first shown: started in the tray (--tray, at login), it is not yet.
        self._kept_waiting = True
        self._tasks: set[asyncio.Task[Any]] = set()
        self.setWindowTitle("Hearth")
        self.setWindowIcon(app_icon())
        self._quitting = False
        self._build()
        self.tray = Tray(self.notices, self, force_no_tray=not use_tray)
        self.tray.set_paused(pod.schedules_paused)
        self.tray.open_requested.connect(self.bring_to_front)
        self.tray.quit_requested.connect(self.quit)
        self.tray.pause_toggled.connect(pod.set_schedules_paused)
        self.refresh_people()
        self.refresh_agents()
        self.cards.refresh()
        from runtime_host.sandbox import sandbox_status

        ok, why = sandbox_status()
        if not ok:
            self.notices.show_message("Sandbox off", why, timeout_ms=30000)
        settings = QSettings("Hearth", "Hearth")
        last_view = settings.value("window/view")
        if last_view is not None and str(last_view).isdigit():
            self.pages.setCurrentIndex(int(last_view))
        geometry = settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1100, 720)
        if self.wiki.give_back():  # their correction not saved while someone else was shown, before a quit
            self.pages.setCurrentWidget(self.wiki)

    # -- layout
    def _build(self) -> None:
        side = QWidget()
        side_layout = QVBoxLayout(side)
        person_row = QHBoxLayout()
        self.person_box = QComboBox()
        self.person_box.setAccessibleName("Person")
        self.person_box.setToolTip("Who is using Hearth: each person sees only their own agents, chats, memory and keys")
        self.person_box.activated.connect(self._on_person_chosen)
        self.add_person_button = QPushButton("+")
        self.add_person_button.setToolTip("Add a person")
        self.add_person_button.setFixedWidth(32)
        self.add_person_button.clicked.connect(self.open_add_person)
        self.rename_person_button = QPushButton("✎")
        self.rename_person_button.setToolTip("Change your name (the one others on this Hearth and your memory see)")
        self.rename_person_button.setAccessibleName("Change your name")
        self.rename_person_button.setFixedWidth(32)
        self.rename_person_button.clicked.connect(lambda: self.rename_me())
        person_row.addWidget(self.person_box, 1)
        person_row.addWidget(self.rename_person_button)
        person_row.addWidget(self.add_person_button)
        side_layout.addLayout(person_row)
        side_layout.addWidget(plain_label("Agents"))
        self.agents = QListWidget()
        self.agents.setAccessibleName("Agents")
        self.agents.currentItemChanged.connect(self._on_agent_selected)
        side_layout.addWidget(self.agents)
        worker_row = QHBoxLayout()
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop this agent's worker process (it starts again on the next message)")
        self.stop_button.clicked.connect(self._on_stop_clicked)
        self.restart_button = QPushButton("Restart")
        self.restart_button.setToolTip("Restart this agent's worker process (also after it was stopped for crashing)")
        self.restart_button.clicked.connect(self._on_restart_clicked)
        worker_row.addWidget(self.stop_button)
        worker_row.addWidget(self.restart_button)
        side_layout.addLayout(worker_row)
        self.new_agent_button = QPushButton("New agent")
        self.new_agent_button.clicked.connect(self.open_new_agent)
        self.settings_button = QPushButton("Settings")
        self.settings_button.clicked.connect(self.open_settings)
        side_layout.addWidget(plain_label("Conversations"))
        self.conversation_search = QLineEdit()
        self.conversation_search.setPlaceholderText("Search all conversations")
        self.conversation_search.setAccessibleName("Search conversations")
        self.conversation_search.setClearButtonEnabled(True)
        self.conversation_search.returnPressed.connect(self._on_conversation_search)
        self.conversation_search.textChanged.connect(lambda t: None if t.strip() else self.refresh_conversations())
        side_layout.addWidget(self.conversation_search)
        self.conversations = ConversationList()
        self.conversations.opened.connect(self._on_conversation_opened)
        self.conversations.rename_requested.connect(self._on_rename_requested)
        self.conversations.delete_requested.connect(self._on_delete_requested)
        self.conversations.export_requested.connect(self._on_export_requested)
        side_layout.addWidget(self.conversations, 1)
        side_layout.addWidget(self.new_agent_button)
        self.edit_agent_button = QPushButton("Edit agent")
        self.edit_agent_button.clicked.connect(self.open_edit_agent)
        side_layout.addWidget(self.edit_agent_button)
        self.delete_agent_button = QPushButton("Delete agent…")
        self.delete_agent_button.setToolTip("Delete this agent with its conversations and schedules (asks first)")
        self.delete_agent_button.clicked.connect(self.delete_agent)
        side_layout.addWidget(self.delete_agent_button)
        side_layout.addWidget(self.settings_button)

        center = QWidget()
        center_layout = QVBoxLayout(center)
        top = QHBoxLayout()
        self.header = plain_label("")
        self._progress: dict[str, str] = {}  # the live turn's "step n/90" and "model calls n/100"
        self.header.setAccessibleName("Conversation status")
        top.addWidget(self.header, 1)
        self.new_conversation_button = QPushButton("New conversation")
        self.new_conversation_button.clicked.connect(self.new_conversation)
        top.addWidget(self.new_conversation_button)
        center_layout.addLayout(top)
        split = QSplitter(Qt.Orientation.Vertical)
        self.chat = ChatView()
        self.chat.action.connect(self._on_message_action)
        self.chat.copied.connect(lambda what: self.statusBar().showMessage(f"Copied {what}.", 3000))
        self.chat.said.connect(lambda text: self.statusBar().showMessage(text, 10000))
        self.steps = StepsTree()
        self.runs = RunsList()
        self.runs.setToolTip("Double-click a run to open its conversation and answer it there")
        self.runs.itemDoubleClicked.connect(self._on_run_opened)
        # Pod events come in bursts: each list the window shows is read once per burst, not once per event.
        self._runs_soon = self._once_per_burst(lambda: self.runs.load(self.pod.runs()))
        self._labels_soon = self._once_per_burst(self.refresh_agents_labels)
        self._cards_soon = self._once_per_burst(self._refresh_cards)
        self._tasks_soon = self._once_per_burst(lambda: self.tasks.refresh())
        self._conversations_soon = self._once_per_burst(self.refresh_conversations)
        self._finished_turns: list[str] = []  # the shown conversation's finished turns whose ids are not read yet
        self._ids_soon = self._once_per_burst(self._assign_finished_ids)
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.steps, "Steps")
        self.bottom_tabs.addTab(self.runs, "Runs")
        split.addWidget(self.chat)
        split.addWidget(self.bottom_tabs)
        split.setSizes([520, 160])
        center_layout.addWidget(split, 1)
        self.inline_cards = QVBoxLayout()  # approval cards from this conversation's turns, inline
        center_layout.addLayout(self.inline_cards)
        self._inline: dict[str, QWidget] = {}
        row = QHBoxLayout()
        self.composer = Composer()
        self.composer.submitted.connect(self.send)
        self.composer.textChanged.connect(self._on_composer_changed)
        self.composer.setPlaceholderText("Message your agent — Ctrl+Enter to send")
        self.composer.setAccessibleName("Message")
        self.composer.setFixedHeight(90)
        self.send_button = QPushButton("Send")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.send_button.clicked.connect(self.send)
        self.model_picker = QComboBox()
        self.model_picker.setAccessibleName("Model for this message")
        self.model_picker.setToolTip("Which model answers the next message; the agent keeps its tools and memory")
        self.model_picker.currentIndexChanged.connect(self._on_model_picked)
        self.voice = VoiceButton()
        self.voice.attach_to(self.composer)
        self.composer.audio_dropped.connect(self.voice.controller.transcribe_file)
        self.composer.file_dropped.connect(self.attach_file)
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setToolTip("Attach a text file to the message (audio files are transcribed)")
        self.attach_button.clicked.connect(self._on_attach_clicked)
        side_col = QVBoxLayout()
        side_col.addWidget(self.model_picker)
        side_col.addWidget(self.voice)
        side_col.addWidget(self.attach_button)
        side_col.addWidget(self.send_button)
        self.stop_turn_button = QPushButton("Stop")
        self.stop_turn_button.setAccessibleName("Stop the answer")
        self.stop_turn_button.setToolTip("Stop this answer now (Esc); what it wrote so far is kept")
        self.stop_turn_button.clicked.connect(self.stop_answer)
        self.stop_turn_button.setEnabled(False)
        side_col.addWidget(self.stop_turn_button)
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, context=Qt.ShortcutContext.WindowShortcut)
        self.stop_shortcut.activated.connect(self.stop_answer)
        self.stop_shortcut.activatedAmbiguously.connect(self.voice.controller.cancel)  # dictating: Esc ends that first
        self.stop_shortcut.setEnabled(False)
        row.addWidget(self.composer, 1)
        row.addLayout(side_col)
        center_layout.addLayout(row)
        self.model_hint = plain_label("")
        self.model_hint.setWordWrap(True)
        self.model_hint.setAccessibleName("Model note")
        center_layout.addWidget(self.model_hint)
        self.refresh_model_picker()

        self.wiki = WikiView(self.pod)
        self.wiki.status.connect(self.statusBar().showMessage)
        self.pages = QTabWidget()
        self.pages.setAccessibleName("Views")
        self.pages.addTab(center, "Chat")
        self.pages.addTab(self.wiki, "Wiki")
        self.cards = CardsView(self.pod)
        self.pages.addTab(self.cards, "Approvals")
        self.cards.count_changed.connect(self._on_cards_count)
        self.cards.status.connect(self.statusBar().showMessage)
        self.cards.away.connect(self._keep_for)
        self.tasks = TasksView(self.pod)
        self.tasks.status.connect(self.statusBar().showMessage)
        self.tasks.open_conversation.connect(self.open_conversation)
        self.pages.addTab(self.tasks, "Tasks")
        self.schedules = SchedulesView(self.pod)
        self.schedules.open_conversation.connect(self.open_conversation)
        self.pages.addTab(self.schedules, "Schedules")
        self.mail = MailView(self.pod)
        self.pages.addTab(self.mail, "Mail")
        self.activity = ActivityView(self.pod)
        self.pages.addTab(self.activity, "Activity")
        self.pages.currentChanged.connect(self._on_page_changed)
        outer = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(side)
        outer.addWidget(self.pages)
        outer.setSizes([220, 880])
        self.notices = NotificationBar()
        root = QWidget()
        root_layout = QVBoxLayout(root)
        root_layout.setContentsMargins(0, 0, 0, 0)
        root_layout.addWidget(self.notices)
        root_layout.addWidget(outer, 1)
        self.setCentralWidget(root)

        settings_action = QAction("Settings", self, shortcut=QKeySequence("Ctrl+,"), triggered=self.open_settings)
        new_conv_action = QAction("New conversation", self, shortcut=QKeySequence("Ctrl+N"), triggered=self.new_conversation)
        self.addAction(settings_action)
        self.addAction(new_conv_action)
        self.addAction(QAction("Show chat", self, shortcut=QKeySequence("Ctrl+1"), triggered=self.show_chat))
        self.addAction(QAction("Show wiki", self, shortcut=QKeySequence("Ctrl+2"), triggered=self.show_wiki))
        self.addAction(QAction("Show approvals", self, shortcut=QKeySequence("Ctrl+3"), triggered=self.show_approvals))
        find = QAction("Search memory", self, shortcut=QKeySequence("Ctrl+K"), triggered=self.focus_memory_search)
        self.addAction(find)
        self.addAction(QAction("Quit Hearth", self, shortcut=QKeySequence("Ctrl+Q"), triggered=self.quit))
        self.addAction(QAction("About Hearth", self, shortcut=QKeySequence("F1"), triggered=self.open_about))
        self.statusBar().showMessage("Ready")
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setInterval(5000)
        self._refresh_timer.timeout.connect(self.refresh_agents_labels)
        self._refresh_timer.start()

    # -- people
    def refresh_people(self) -> None:
        self.person_box.blockSignals(True)
        self.person_box.clear()
        for p in self.pod.people():
            self.person_box.addItem(p["name"] + (" 🔒" if p["has_passphrase"] else "")
                                    + (" (being removed)" if p["removing"] else ""), p["name"])
            if p["current"]:
                self.person_box.setCurrentIndex(self.person_box.count() - 1)
        self.person_box.blockSignals(False)

    def _on_person_chosen(self, index: int) -> None:
        name = self.person_box.itemData(index)
        if name == self.pod.person.name:
            return
        if self._keeps_correction():
            self.refresh_people()  # the box shows who is still using Hearth
            return
        entry = next((p for p in self.pod.people() if p["name"] == name), None)
        passphrase = None
        if entry and entry["has_passphrase"]:
            passphrase, ok = ask_text(self, "Unlock", f"Passphrase for {name}:", QLineEdit.EchoMode.Password)
            if not ok:
                self.refresh_people()
                return
        self.switch_person(name, passphrase)

    def switch_person(self, name: str, passphrase: str | None = None) -> bool:
        """Shows `name` (after their passphrase unlocks them): every view then acts for them only."""
        try:
            me = self.pod.unlock(name, passphrase)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc))
            self.refresh_people()
            return False
        self._show_person(me)
        return True

    def person_removed(self, name: str) -> None:
        """Someone was removed (Settings → People). The window showed them: it shows the person who set Hearth up
        now, asked for their passphrase as at start (cancelled: Hearth quits, showing no one)."""
        if name != self.pod.person.name:
            self.refresh_people()
            return

        def ask(first: str, error: str | None) -> str | None:
            why = f"{error}\n\n" if error else f"{name} was removed from this Hearth.\n\n"
            typed, ok = ask_text(self, "Unlock", f"{why}Passphrase for {first}:", QLineEdit.EchoMode.Password)
            return typed if ok else None

        me = open_first_person(self.pod.pod, ask)
        if me is None:
            self.quit()
            return
        self._show_person(me)
        self.statusBar().showMessage(f"{name} was removed. Now using Hearth as {me.person.name}.")

    def _show_person(self, me: Any) -> None:
        name = me.person.name
        self.pod = me  # the window keeps which person is shown; the Pod keeps none
        me.restored.keep_only(me.person_id)  # the values the previous person read back leave memory
        for view in self.findChildren(QWidget):  # every view (wiki, folders, cards, mail, ...) acts for them now
            if "pod" in vars(view):
                view.pod = me
        self.agent = None
        self.conversation_id = None
        self.header.setText("")  # no agent of the previous person is named, above the chat or on its messages
        self.chat.agent_name = "Agent"
        self._set_live_turn(None)
        self.notices.clear()  # the previous person's notification (a run's answer, a mail) is not the next one's
        self._show_kept()  # what came for them while someone else was shown
        # Nothing the previous person typed stays, nor comes back with Ctrl+Z (setText and setPlainText wipe the
        # undo history; clear() on a line keeps it): their unsent message, conversation search, inbox and schedule.
        self.composer.setPlainText("")
        self._leave_conversation_search()
        self.mail.reset()
        self.schedules.reset()
        self.conversations.load([], None)
        self.chat.set_messages([])
        self.steps.clear_steps()
        self.refresh_people()
        self.refresh_agents()
        self.refresh_model_picker()
        self.runs.load(self.pod.runs())
        self._refresh_cards()  # their Approvals, and above the composer only their cards of the conversation shown
        self.tasks.refresh()
        self.wiki.reset()  # nothing of the previous person stays on the Wiki page, shown or not
        if self.pages.currentWidget() is self.wiki:
            self.wiki.refresh()
        if self.pages.currentWidget() is self.mail:  # the page on screen shows the next person's inboxes at once
            self.mail.refresh()
        self.statusBar().showMessage(f"Now using Hearth as {name}.")
        if self.wiki.give_back():  # their correction that was not saved while someone else was shown: in its editor
            self.pages.setCurrentWidget(self.wiki)

    def rename_me(self, why: str = "") -> bool:
        """Asks the person shown for their name and gives it (only their own: the list's others are theirs to
        rename). ``why`` goes before the question. Answers whether they were renamed."""
        current = self.pod.person.name
        while True:
            name, ok = ask_text(self, "Your name", f"{why}Your name:", text="" if current == UNNAMED else current)
            if not ok or not name.strip() or name.strip() == current:
                return False
            try:
                self.pod.rename(name)
            except StoreError as exc:
                why = f"{exc}\n\n"
                continue
            self.refresh_people()
            self.statusBar().showMessage(f"You are now called {self.pod.person.name}.")
            return True

    def open_add_person(self) -> None:
        if self.pod.person.name == UNNAMED:  # the first person, never asked: the one added would read "chosen by Me"
            self.rename_me(f"Others on this Hearth will see your name: until you give it, you are “{UNNAMED}” "
                           "(✎ next to the person list changes it later).\n\n")
        name, ok = ask_text(self, "Add a person", "Name:")
        if not ok or not name.strip():
            return
        passphrase, ok = ask_text(self, "Add a person",
                                 f"Passphrase for {name} (8 characters or more; empty for none):",
                                 QLineEdit.EchoMode.Password)
        if not ok:
            return
        try:
            self.pod.add_person(name, passphrase or None)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc))
            return
        self.refresh_people()
        self.statusBar().showMessage(f"Added {name}. Switch to them from the person list.")

    # -- agents
    def refresh_agents(self) -> None:
        current = self.agent
        self.agents.blockSignals(True)
        self.agents.clear()
        for a in self.pod.list_agents():
            item = QListWidgetItem(self._agent_label(a))
            item.setToolTip(plain_tooltip(self._agent_tooltip(a)))
            item.setData(Qt.ItemDataRole.UserRole, a["name"])
            self.agents.addItem(item)
            if a["name"] == current:
                self.agents.setCurrentItem(item)
        self.agents.blockSignals(False)
        if self.agents.count() and self.agents.currentItem() is None:
            self.agents.setCurrentRow(0)
        elif not self.agents.count():
            self.chat.set_messages([])
            self.chat.append_message("assistant", EMPTY_HINT)

    @staticmethod
    def _agent_label(a: dict[str, Any]) -> str:
        w = a["worker"]
        rss = f", {w['rss_mb']:.0f} MB" if w.get("rss_mb") else ""
        return f"{a['name']}  ·  {w['state']}{rss}"

    @staticmethod
    def _agent_tooltip(a: dict[str, Any]) -> str:
        w = a["worker"]
        lines = [f"{a['name']} — {a.get('role') or 'agent'}", f"Worker: {w['state']}"]
        if w.get("pid"):
            lines.append(f"PID {w['pid']}, {w.get('rss_mb') or 0:.0f} MB resident, up {w.get('uptime_s') or 0:.0f} s")
        lines.append(f"Restarts: {w.get('restarts', 0)}")
        if w.get("pid"):
            lines.append("Sandbox: on (sees only its own folders)" if w.get("sandboxed") else
                         "Sandbox: off (the guard alone keeps it in its folders)")
        if w.get("reason"):
            lines.append(f"Last reason: {w['reason']}")
        return "\n".join(lines)

    def _on_stop_clicked(self) -> None:
        self._agent_action("stop")

    def _on_restart_clicked(self) -> None:
        self._agent_action("restart")

    def _agent_action(self, action: str) -> None:
        if not self.agent:
            return
        coro = self.pod.stop_agent(self.agent) if action == "stop" else self.pod.restart_agent(self.agent)

        async def run() -> None:
            try:
                await coro
            except Exception as exc:  # shown to the person, never a traceback
                self.statusBar().showMessage(f"Could not {action} {self.agent}: {exc}")
            self.refresh_agents_labels()

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_agent_selected(self, item: QListWidgetItem | None, _prev: QListWidgetItem | None = None) -> None:
        if item is None:
            return
        self.agent = item.data(Qt.ItemDataRole.UserRole)
        self.chat.agent_name = self.agent or "Agent"
        self._on_model_picked()
        self._leave_conversation_search()  # choosing an agent leaves a search
        try:
            last = self.pod.last_chat(self.agent)
        except StoreError:
            last = None
        self.load_conversation(last)

    def _leave_conversation_search(self) -> None:
        self.conversation_search.blockSignals(True)
        self.conversation_search.setText("")  # wipes its undo history too
        self.conversation_search.blockSignals(False)
        self.conversations.searching = False

    def refresh_conversations(self) -> None:
        if self.conversations.searching and self.conversation_search.text().strip():
            return  # search results stay while the person goes through them
        if not self.agent:
            self.conversations.load([], None)
            return
        try:
            convs = self.pod.list_conversations(self.agent)
        except StoreError:
            convs = []
        self.conversations.load(convs, self.conversation_id)

    def _on_conversation_opened(self, conversation_id: str, message_id: str, agent: str) -> None:
        if agent and agent != self.agent:
            self.open_conversation(agent, conversation_id)
        else:
            self.load_conversation(conversation_id)
        if message_id:
            self.chat.scroll_to_message(message_id)

    def _on_conversation_clicked(self, item: Any) -> None:
        self.conversations.open_item(item)

    def _on_conversation_search(self) -> None:
        query = self.conversation_search.text().strip()
        if not query:
            self.refresh_conversations()
            return
        results = self.pod.search_conversations(query)
        self.conversations.show_results(query, results)
        self.statusBar().showMessage(f"{len(results)} message(s) found for “{query}”." if results else
                                     f"No message holds “{query}”.")

    def confirm(self, title: str, text: str, action: str = "Delete") -> bool:
        """Asks before a destructive action (app.confirm: Cancel is the default)."""
        from app.confirm import confirm

        return confirm(self, title, text, action)

    def choose(self, title: str, text: str, actions: list[str], detail: str = "") -> str | None:
        """Asks before a destructive action that can go more than one way (app.confirm.choose)."""
        from app.confirm import choose

        return choose(self, title, text, actions, detail)

    def _on_rename_requested(self, conversation_id: str, current: str) -> None:
        title, ok = ask_text(self, "Rename conversation", "Title:", QLineEdit.EchoMode.Normal, current)
        if ok:
            self.rename_conversation(conversation_id, title)

    def rename_conversation(self, conversation_id: str, title: str) -> bool:
        try:
            self.pod.rename_conversation(conversation_id, title)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc))
            return False
        self.refresh_conversations()
        return True

    def _on_delete_requested(self, conversation_id: str, title: str) -> None:
        self.delete_conversation(conversation_id, title)

    FORGET, KEEP = "Delete and forget", "Delete"

    def delete_conversation(self, conversation_id: str, title: str = "this conversation") -> bool:
        """Asks, then deletes in the background (memory's part runs on its thread: Delete drops why the extraction
        model skipped the conversation's messages, Delete and forget also what memory learned from it); the list
        and the status bar follow when it is done."""
        choice = self.choose("Delete conversation", f"Delete “{title}” with all its messages and steps? "
                             "This cannot be undone (export it first to keep a copy).", [self.FORGET, self.KEEP],
                             "Delete keeps what memory learned from it; Delete and forget deletes that too, and the "
                             "wiki's pages that cite it are rewritten.")
        if choice is None:
            return False

        me = self.pod  # the person who asked: the window may show someone else by the time it is done

        async def run() -> None:
            try:
                if choice == self.FORGET:
                    n = await me.delete_conversation_and_forget(conversation_id)
                    done = f"Deleted “{title}” and forgot {n} memory source(s) learned from it."
                else:
                    await me.delete_conversation(conversation_id)
                    done = f"Deleted “{title}”."
            except StoreError as exc:
                done = str(exc)
                if self.pod is me:
                    self.statusBar().showMessage(done)
                return
            if self.pod is me:  # another person shown now hears nothing of it (its title is the first one's)
                self._deleted(conversation_id, done)

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def _deleted(self, conversation_id: str, message: str) -> None:
        if conversation_id == self.conversation_id:
            self.load_conversation(self.pod.last_chat(self.agent) if self.agent else None)
        self.refresh_conversations()
        self.statusBar().showMessage(message)

    def _on_export_requested(self, conversation_id: str, title: str, fmt: str) -> None:
        from PySide6.QtWidgets import QFileDialog

        suffix = "json" if fmt == "json" else "md"
        safe = "".join(c if c.isalnum() or c in " -_" else "_" for c in title).strip() or "conversation"
        path, _ = QFileDialog.getSaveFileName(self, "Export conversation", f"{safe}.{suffix}",
                                              "JSON (*.json)" if fmt == "json" else "Markdown (*.md)")
        if path:
            self.export_conversation(conversation_id, path, fmt)

    def export_conversation(self, conversation_id: str, path: str, fmt: str = "markdown") -> bool:
        try:
            data = self.pod.export_conversation(conversation_id, fmt)
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        except (StoreError, OSError) as exc:
            self.statusBar().showMessage(f"Could not export: {exc}")
            return False
        self.statusBar().showMessage(f"Exported to {path}.")
        return True

    def load_conversation(self, conversation_id: str | None) -> None:
        self.conversation_id = conversation_id
        self._new_conversation = conversation_id is None
        self._editing = None
        self.steps.clear_steps()
        self._refresh_inline_cards()  # above the composer: the cards made in this conversation only
        if conversation_id is None:
            self.chat.set_messages([])
            self._set_live_turn(None)
            self.header.setText(f"{self.agent} — new conversation")
            self.refresh_conversations()
            return
        self.refresh_conversations()
        try:
            data = self.pod.conversation(conversation_id)  # refused (and audited) unless it is this person's
        except StoreError as exc:
            self.conversation_id = None
            self._set_live_turn(None)
            self.chat.set_messages([("error", str(exc))])
            self.statusBar().showMessage(str(exc))
            return
        turns = data["turns"]
        by_turn = {t["id"]: t for t in turns}
        stored = data["messages"]
        entries: list[dict[str, Any]] = []
        placed: set[str] = set()
        for i, m in enumerate(stored):
            t = by_turn.get(m["turn_id"] or "")
            entry = {"id": m["id"], "role": m["role"], "text": m["content"], "turn_id": m["turn_id"],
                     "origin": m.get("origin"), "by_hearth": m.get("by_hearth")}
            if m["role"] == "assistant" and t is not None and t["id"] not in placed:
                placed.add(t["id"])
                entry["steps"] = t["steps"]
                if t["status"] == "stopped":
                    entry["marker"] = t["note"]
                    t["note"] = None
            entries.append(entry)
            last_of_turn = i + 1 == len(stored) or stored[i + 1]["turn_id"] != m["turn_id"]
            if last_of_turn and t is not None and t["note"]:  # a message with no answer says why
                note = {"role": "error", "text": t["note"], "turn_id": t["id"]}
                if t["id"] not in placed:
                    placed.add(t["id"])
                    note["steps"] = t["steps"]
                entries.append(note)
        live = next((t for t in turns if t["status"] in ("pending", "running") and not t["note"]), None)
        self.chat.set_messages(entries)
        self._set_live_turn(live["id"] if live else None)
        if live is not None and live["status"] == "running":
            self.chat.restore_live(live["id"], self.pod.live_text(live["id"]), live["steps"])
            self.steps.load_tree(live["steps"])
            self.header.setText(f"{self.agent} — working…")
        elif turns:
            last = turns[-1]
            self.steps.load_tree(last["steps"])
            self.header.setText(f"{self.agent} — last answer by {last['model'] or '—'}" if last["status"] == "done"
                                else f"{self.agent} — {last['status']}")
        else:
            self.header.setText(f"{self.agent}")

    # -- message actions
    def _on_message_action(self, kind: str, message_id: str) -> None:
        if not self.conversation_id:
            return
        if kind == "branch":
            try:
                new_id = self.pod.branch_conversation(self.conversation_id, message_id)
            except StoreError as exc:
                self.statusBar().showMessage(str(exc))
                return
            self.load_conversation(new_id)
            self.statusBar().showMessage("Branched: this is a new conversation; the original is unchanged.")
        elif kind == "edit":
            text = self.chat.message_text(message_id)
            if text is None:
                return
            self._editing = message_id
            self.composer.setPlainText(text)
            self.composer.setFocus()
            self.statusBar().showMessage("Editing your message: send it to get a new answer from there (empty the box to cancel).")
        elif kind == "regenerate":
            self._answer_again(message_id, None)

    def _on_composer_changed(self) -> None:
        if self._editing is not None and not self.composer.toPlainText().strip():
            self._editing = None  # the person emptied the box: no longer editing that message
            self.statusBar().showMessage("Edit cancelled.", 3000)

    def _answer_again(self, message_id: str, text: str | None) -> None:
        conv = self.conversation_id
        if conv is None:
            return

        async def run() -> None:
            try:
                started = await self.pod.answer_again(conv, message_id, text)
            except StoreError as exc:
                self.statusBar().showMessage(str(exc))
                return
            self.load_conversation(started.conversation_id)
            if started.conversation_id != conv:
                self.statusBar().showMessage("Answered again in a branch: the original conversation is unchanged.")

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def new_conversation(self) -> None:
        if self.agent:
            self.load_conversation(None)

    def _on_page_changed(self, index: int) -> None:
        self._sync_stop_shortcut()
        if self.pages.widget(index) is self.wiki:
            self.wiki.refresh()
        elif self.pages.widget(index) is self.activity:
            self.activity.refresh()
        elif self.pages.widget(index) is self.tasks:
            self.tasks.refresh()
        elif self.pages.widget(index) is self.schedules:
            self.schedules.refresh()
        elif self.pages.widget(index) is self.mail:
            self.mail.refresh()

    def show_chat(self) -> None:
        self.pages.setCurrentIndex(0)
        self.composer.setFocus()

    def open_conversation(self, agent: str, conversation_id: str) -> None:
        for i in range(self.agents.count()):
            if self.agents.item(i).data(Qt.ItemDataRole.UserRole) == agent:
                self.agents.blockSignals(True)
                self.agents.setCurrentRow(i)
                self.agents.blockSignals(False)
        self.agent = agent
        self.chat.agent_name = agent
        self.load_conversation(conversation_id)
        self.show_chat()

    def _on_run_opened(self, item: Any, _column: int = 0) -> None:
        """A run (background, scheduled, mail) opens its conversation, where the person can answer it."""
        where = item.data(0, RUN_CONVERSATION)
        if where and where[1]:
            self.open_conversation(*where)

    def _once_per_burst(self, fn: Any) -> QTimer:
        """A timer whose start() calls `fn` once, 100 ms after the last start: a burst of events, one call."""
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.setInterval(100)
        timer.timeout.connect(fn)
        return timer

    def _refresh_cards(self) -> None:
        self.cards.refresh()
        self._refresh_inline_cards()

    def _made_here(self, card: QWidget) -> bool:
        """Whether an agent made this card while answering in the conversation open now (the card says which: after
        a restart, or made while another person was shown, too); a mail rule's card was made in none."""
        made_in = getattr(card, "card", {}).get("conversation_id")
        return bool(made_in) and made_in == self.conversation_id

    def _refresh_inline_cards(self) -> None:
        """Cards created during a turn of this conversation show right above the composer, too."""
        for cid in list(self._inline):  # gone, or made in another conversation than the one now open
            if cid not in self.cards.widgets or not self._made_here(self.cards.widgets[cid]):
                drop_card(self._inline.pop(cid))  # one being sent finishes out of sight
        for cid, w in self.cards.widgets.items():
            if cid in self._inline and hasattr(w, "show_state"):
                self._inline[cid].show_state(w.card)  # type: ignore[attr-defined]  # a failed send: reason, Retry
            if cid in self._inline or not self._made_here(w):
                continue
            clone = type(w)(self.pod, w.card)
            clone.decided.connect(self.cards._on_decided)
            self._inline[cid] = clone
            self.inline_cards.addWidget(clone)

    MAX_ATTACH_CHARS = 100_000

    def _on_attach_clicked(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getOpenFileName(self, "Attach a file")
        if path:
            self.attach_file(path)

    def attach_file(self, path: str) -> bool:
        """Adds a text file to the message being written (audio goes to the transcriber). Binary or huge
        files are refused with the reason; nothing is sent until the person sends the message."""
        import os

        name = os.path.basename(path)
        if path.lower().endswith(AUDIO_SUFFIXES):
            self.voice.controller.transcribe_file(path)
            return True
        try:
            with open(path, "rb") as f:
                data = f.read(self.MAX_ATTACH_CHARS * 4 + 1)
        except OSError as exc:
            self.statusBar().showMessage(f"Could not read {name}: {exc.strerror or exc}")
            return False
        from runtime_host.folders import file_text

        too_long = f"{name} is longer than {self.MAX_ATTACH_CHARS:,} characters; attach a part."
        if len(data) > self.MAX_ATTACH_CHARS * 4:  # more characters than that in any encoding read (UTF-32 at most)
            self.statusBar().showMessage(too_long)
            return False
        read = file_text(data)  # as watched folders read a file: UTF-8, a byte order mark, else Windows-1252
        if read is None:
            self.statusBar().showMessage(f"{name} is not a text file; only text files and audio can be attached.")
            return False
        text, note = read
        if len(text) > self.MAX_ATTACH_CHARS:
            self.statusBar().showMessage(too_long)
            return False
        block = f"\n\nAttached file {name}:\n```\n{text.rstrip()}\n```\n"
        self.composer.moveCursor(self.composer.textCursor().MoveOperation.End)
        self.composer.insertPlainText(block)
        self.statusBar().showMessage(f"Attached {name} ({note})." if note else f"Attached {name}.")
        return True

    def show_approvals(self) -> None:
        self.pages.setCurrentWidget(self.cards)

    def _on_cards_count(self, n: int) -> None:
        self.pages.setTabText(self.pages.indexOf(self.cards), f"Approvals ({n})" if n else "Approvals")

    def show_wiki(self) -> None:
        self.pages.setCurrentWidget(self.wiki)

    def focus_memory_search(self) -> None:
        self.pages.setCurrentWidget(self.wiki)
        self.wiki.search.setFocus()
        self.wiki.search.selectAll()

    # -- model picker
    def refresh_model_picker(self) -> None:
        self.model_picker.blockSignals(True)
        self.model_picker.clear()
        self.model_picker.addItem("Agent's model", None)
        for p in self.pod.list_providers():
            label = f"{p['name']} — {p['model'] or 'default'}" + ("" if p["supports_tools"] else " (no tools)")
            self.model_picker.addItem(label, p["name"])
            self.model_picker.setItemData(self.model_picker.count() - 1, p["supports_tools"], Qt.ItemDataRole.UserRole + 1)
        self.model_picker.blockSignals(False)
        self._on_model_picked()

    def _on_model_picked(self, _index: int = 0) -> None:
        ref = self.model_picker.currentData()
        tools_ok = self.model_picker.currentData(Qt.ItemDataRole.UserRole + 1)
        if ref is not None and tools_ok is False:
            self.model_hint.setText(f"{ref} cannot use tools: for this message the agent answers without them.")
        elif ref == "embedded" or (ref is None and self._agent_provider() == "embedded"):
            self.model_hint.setText(f"This agent uses {EMBEDDED_NOTE}")
        else:
            self.model_hint.setText("")

    def _agent_provider(self) -> str | None:
        if not self.agent:
            return None
        return next((a["provider"] for a in self.pod.list_agents() if a["name"] == self.agent), None)

    # -- dialogs
    def settings_dialog(self) -> SettingsDialog:
        """Settings for the person shown; removing them there (People) switches the window to another."""
        dlg = SettingsDialog(self.pod, self)
        dlg.people.removed.connect(self.person_removed)
        return dlg

    def open_settings(self) -> None:
        dlg = self.settings_dialog()
        dlg.exec()
        self.refresh_model_picker()
        # a model chosen for wiki pages there: the Wiki's bar and empty page stop offering one
        self.wiki.ingest_panel.refresh()
        if self.pages.currentWidget() is self.wiki:  # shown later, it reloads anyway
            self.wiki.refresh()

    def open_edit_agent(self) -> None:
        if not self.agent:
            return
        dlg = AddAgentDialog.for_edit(self.pod, self.agent, self)
        if dlg.exec():
            self.refresh_agents()
            self.statusBar().showMessage(f"{self.agent} updated; its worker picks up the change on the next message.")

    def delete_agent(self) -> None:
        """Deletes the chosen agent after the person confirms (what it put in the person's memory stays)."""
        from app.confirm import confirm

        name = self.agent
        if not name:
            return
        if not confirm(self, "Delete agent", f"Delete the agent {name}?", "Delete",
                       "Its conversations, steps, schedules, own notes and folder are deleted and its worker stops. "
                       "What it put in your memory stays: to delete that too, forget the agent first (Wiki → Forget). "
                       "This cannot be undone."):
            self.statusBar().showMessage("Nothing deleted.")
            return

        async def run() -> None:
            try:
                await self.pod.delete_agent(name)
            except (StoreError, OSError) as exc:
                self.statusBar().showMessage(f"Could not delete {name}: {exc}")
                return
            if self.agent == name:
                self.agent = None
                self.conversation_id = None
            self.refresh_agents()
            if self.agent is None:
                self.refresh_conversations()
            self.statusBar().showMessage(f"Deleted {name}, its conversations and schedules.")

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def open_about(self) -> None:
        from app.about import show_about

        show_about(self, self.pod.home)

    def open_new_agent(self) -> None:
        dlg = AddAgentDialog(self.pod, self)
        if dlg.exec() and dlg.created:
            self.agent_created(dlg.created["name"])

    def agent_created(self, name: str) -> None:
        """A new agent opens ready to chat: selected, its (new) conversation shown, the composer focused."""
        self.refresh_agents()
        self.select_agent(name)
        self.show_chat()

    def select_agent(self, name: str) -> None:
        for i in range(self.agents.count()):
            if self.agents.item(i).data(Qt.ItemDataRole.UserRole) == name:
                if self.agents.currentRow() == i:
                    self._on_agent_selected(self.agents.item(i))
                else:
                    self.agents.setCurrentRow(i)
                return

    # -- stopping
    def _set_live_turn(self, turn_id: str | None) -> None:
        self._live_turn = turn_id
        self.stop_turn_button.setEnabled(turn_id is not None)
        self._sync_stop_shortcut()

    def _sync_stop_shortcut(self) -> None:
        """Esc stops the answer only while the Chat page shows it: on another page Esc is the page's own (dropping a
        search or a suggestion) and never stops an answer written out of sight. The Stop button works as before."""
        self.stop_shortcut.setEnabled(self._live_turn is not None and self.pages.currentIndex() == 0)

    def stop_answer(self) -> None:
        """Stops the answer being written in this conversation (the Stop button, Esc)."""
        turn_id = self._live_turn
        if turn_id is None:
            return
        self.header.setText(f"{self.agent} — stopping…")

        async def run() -> None:
            try:
                await self.pod.stop_turn(turn_id, "you")
            except Exception as exc:  # shown to the person, never a traceback
                self.statusBar().showMessage(f"Could not stop the answer: {exc}")

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- sending
    def send(self) -> None:
        text = self.composer.toPlainText().strip()
        if not text:
            return
        if not self.agent:
            self.chat.append_message("error", "There is no agent yet: create one with New agent (after adding a provider in Settings).")
            return
        from runtime_host.sizes import message_problem

        problem = message_problem(text)
        if problem is not None:  # refused here, and the text stays in the composer to shorten
            self.statusBar().showMessage(problem)
            self.chat.append_message("error", problem)
            return
        editing, self._editing = self._editing, None
        self.composer.clear()
        if editing is not None and self.conversation_id:
            self._answer_again(editing, text)
            return
        self.chat.append_message("user", text)
        task = asyncio.ensure_future(self._send(self.agent, text))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, agent: str, text: str) -> None:
        try:
            run = await self.pod.start_turn(agent, text, conversation_id=None if self._new_conversation else self.conversation_id,
                                            new_conversation=self._new_conversation,
                                            model=self.model_picker.currentData())
        except StoreError as exc:
            self.chat.append_message("error", str(exc))
            return
        if agent == self.agent:
            new = self.conversation_id != run.conversation_id
            self.conversation_id = run.conversation_id
            self._new_conversation = False
            if new:
                self.refresh_conversations()

    # -- pod events
    def _keep_for(self, person: str, title: str, text: str, conversation_id: str | None = None) -> None:
        """A notification meant for a person not shown (a mail rule's "Notify me", a failed memory run, told once):
        kept in pod.db for them alone, so a quit before they are back does not lose it (the newest 50 each); one of
        a conversation (a run's answer) goes if that conversation is deleted meanwhile."""
        self.pod.keep_notice(person, title, text, conversation_id)

    def _show_kept(self) -> None:
        """Shows the person shown what was kept for them, once the window is on screen (else at its next show)."""
        self._kept_waiting = not self.isVisible()
        if self._kept_waiting:
            return
        kept = self.pod.take_notices()
        if kept:
            self.notices.show_away(kept)

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        if self._kept_waiting:
            self._show_kept()

    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        if ev.get("person") not in (None, self.pod.person.id):
            note = notification_for(ev)  # another person's activity: never shown here while someone else is,
            if note is not None:  # but a notification is theirs to see when they are shown again
                self._keep_for(ev["person"], *note, ev.get("conversation_id"))
            return
        note = notification_for(ev)
        if note is not None:
            self.tray.notify(*note)
        e = events.parse(ev)
        self.schedules.on_pod_event(ev)
        self.mail.on_pod_event(ev)
        if isinstance(e, events.WorkerState):
            self._labels_soon.start()  # a worker changes state a few times a turn: the agents are read once
            if e.new == "fatal":
                self.statusBar().showMessage(f"Agent {e.agent} stopped: {e.reason}")
            return
        if isinstance(e, events.CardChanged):
            self._cards_soon.start()  # a card says the conversation it was made in: shown above its composer, too
        elif isinstance(e, events.ConversationChanged) and not self.conversations.searching:
            self._conversations_soon.start()
            if e.type == "conversation.deleted" and e.conversation_id == self.conversation_id:
                self.load_conversation(self.pod.last_chat(self.agent) if self.agent else None)
        elif isinstance(e, events.TaskChanged):
            self._tasks_soon.start()
        elif isinstance(e, events.Audit) and self.pages.currentWidget() is self.activity:
            self.activity.refresh()
        elif isinstance(e, events.ChannelsFailed):  # e.g. a wrong Telegram token: said, not dropped
            self.statusBar().showMessage(f"{e.error or 'The phone channels did not start.'} "
                                         "Check the channel in Settings → Channels and save it again.")
        if isinstance(e, (events.TurnQueued, events.TurnStarted, events.TurnFinished, events.TurnAbandoned)) \
                and e.origin != "chat":
            self._runs_soon.start()  # one read of the runs per burst of run events, not one per event
        if e.conversation_id is not None and e.conversation_id == self.conversation_id:
            handler = self._turn_handlers.get(type(e))
            if handler is not None:
                handler(e)

    # -- the shown conversation's live turn, per event kind
    def _on_turn_started(self, e: events.TurnStarted) -> None:
        self._set_live_turn(e.turn_id)
        self.steps.clear_steps()
        self.chat.stream_begin(e.turn_id)
        self._progress = {}
        self.header.setText(f"{self.agent} — working…")

    def _on_delta(self, e: events.Delta) -> None:
        if e.parent_id is None:
            self.chat.stream_append(e.text)

    def _on_progress(self, e: events.Progress) -> None:
        # The live header: the lead's step count, and the turn's model calls (sub-agents included) of its budget.
        label = "step" if e.type == "iteration" else "model calls"
        self._progress[e.type] = f"{label} {e.n}/{e.max}"
        shown = " · ".join(self._progress[k] for k in ("iteration", "model_calls") if k in self._progress)
        self.header.setText(f"{self.agent} — working… {shown}")

    def _on_step_started(self, e: events.StepStarted) -> None:
        self.steps.add_step(e.step_id, e.parent_id, e.kind, e.name, e.arguments, e.started_at)
        self.chat.step_started(e.step_id, e.parent_id, e.kind, e.name, e.arguments, e.started_at)
        if e.kind == "model" and e.parent_id is None and self.chat.streaming_text:
            self.chat.stream_append("\n\n")  # a new model call after tool calls: its text follows

    def _on_step_finished(self, e: events.StepFinished) -> None:
        self.steps.finish_step(e.step_id, e.status, e.result, e.finished_at)
        self.chat.step_finished(e.step_id, e.status, e.result, e.finished_at)

    def _on_turn_resuming(self, e: events.TurnResuming) -> None:
        self.statusBar().showMessage(f"The agent's worker restarted ({e.reason}); resuming the turn.")

    def _on_turn_abandoned(self, e: events.TurnAbandoned) -> None:
        """Another Hearth host took the turn over: it is not running here any more."""
        self._set_live_turn(None)
        why = (f"Stopped on this computer: {e.reason or 'its lease was lost'}. The Hearth host that "
               "holds the turn now finishes it; open the conversation again later to see its answer.")
        self.chat.stream_end(None, marker=why)
        self.header.setText(f"{self.agent} — moved to another host")
        self.statusBar().showMessage(why)

    def _on_turn_finished(self, e: events.TurnFinished) -> None:
        self._set_live_turn(None)
        if e.turn_id:
            self._finished_turns.append(e.turn_id)
            self._ids_soon.start()  # the turn's stored message ids: read once per burst of finished turns
        if e.status == "stopped":
            self.chat.stream_end(e.text or None, message_id=e.message_id, marker=f"Stopped: {e.error}")
            self.header.setText(f"{self.agent} — stopped")
        elif e.status == "done":
            self.chat.stream_end(e.text or "", message_id=e.message_id, marker=cut_off_marker(self.chat.live_steps()))
            model = e.model or "—"
            if model == EMBEDDED["model"]:
                model = "the tiny offline model"
            self.header.setText(f"{self.agent} — answered by {model} in {e.iterations} step(s)")
        else:
            self.chat.stream_discard()
            self.chat.append_message("error", f"The turn failed: {e.error}")
            self.header.setText(f"{self.agent} — failed")
        self.statusBar().showMessage("Ready")

    def _assign_finished_ids(self) -> None:
        """Gives the person's messages of the turns just finished their stored ids (Edit and Branch need them):
        one turn's messages when one turn finished, else the shown conversation's messages, in one read."""
        turns, self._finished_turns = self._finished_turns, []
        if not turns or not self.conversation_id:
            return
        try:
            if len(turns) == 1:
                messages = self.pod.turn_messages(turns[0])
            else:
                messages = [{"id": m.id, "role": m.role, "content": m.content, "turn_id": m.turn_id}
                            for m in self.pod.messages(self.conversation_id) if m.turn_id in turns]
        except StoreError:
            return  # the conversation went away meanwhile: nothing left to give ids to
        self.chat.assign_ids(messages)

    def refresh_agents_labels(self) -> None:
        by_name = {a["name"]: a for a in self.pod.list_agents()}
        for i in range(self.agents.count()):
            item = self.agents.item(i)
            a = by_name.get(item.data(Qt.ItemDataRole.UserRole))
            if a:
                item.setText(self._agent_label(a))
                item.setToolTip(plain_tooltip(self._agent_tooltip(a)))

    def bring_to_front(self) -> None:
        if self.isMinimized():
            self.setWindowState(self.windowState() & ~Qt.WindowState.WindowMinimized)
        self.show()
        self.raise_()
        self.activateWindow()

    def quit(self) -> None:
        """Really quit (the tray's Quit): closing the window only hides it while a tray exists."""
        self._quitting = True
        self.close()

    def _keeps_correction(self) -> bool:
        """Whether the person keeps editing an unsaved wiki correction rather than lose it (asked on the Wiki page,
        which is then shown)."""
        if not self.wiki.has_unsaved_correction():
            return False
        self.bring_to_front()
        self.pages.setCurrentWidget(self.wiki)
        return self.wiki.keeps_correction()

    def closeEvent(self, event: Any) -> None:  # noqa: N802
        if self.tray.available and not self._quitting:
            event.ignore()
            self.hide()
            self.tray.notify("Hearth is still running", "Schedules and mail go on; open Hearth from the tray icon.")
            return
        # Quitting would throw the person's correction away: asked when they quit or closed the window themselves
        # (a close made by code, on shutdown, asks nothing).
        if (self._quitting or event.spontaneous()) and self._keeps_correction():
            self._quitting = False
            event.ignore()
            return
        settings = QSettings("Hearth", "Hearth")
        settings.setValue("window/geometry", self.saveGeometry())
        settings.setValue("window/view", self.pages.currentIndex())
        super().closeEvent(event)
        self.closed.emit()
