"""The task board: hand-offs between agents by state, approve or reject, the timeline, the receiving
agent's tool-call tree, and a way to open its conversation."""

from __future__ import annotations

import asyncio
import html
import time
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

import unseen
from app.cards_view import direction_label, say_directions
from app.chat_view import StepsTree
from app.markdown import rich_label
from runtime_host.store import StoreError

COLUMNS = (("proposed", "Waiting for you"), ("active", "Working"), ("done", "Done"),
           ("failed", "Failed / timed out / rejected"))


def timeline_text(e: dict[str, Any], names: dict[str, str]) -> str:
    """One timeline event in words, with agents by name and no internal ids."""
    def who(v: Any) -> str:
        return names.get(str(v), "an agent that no longer exists")

    kind = e.get("kind", "")
    if kind == "proposed":
        return f"proposed by {who(e.get('by'))} for {who(e.get('to'))}"
    if kind == "handed_off":
        return f"handed “{unseen.direction_shown(str(e.get('title', '')))}” to {who(e.get('to'))}"
    if kind == "tool":
        return f"used the tool {e.get('name')}"
    words = {"active": "approved; the agent started", "rejected": "rejected", "done": "done", "failed": "failed",
             "timed_out": "timed out"}.get(kind, kind.replace("_", " "))
    if e.get("decided_by"):
        words += f" (by {'you' if e['decided_by'] == 'app' else e['decided_by']})"
    if e.get("error"):
        words += f": {unseen.direction_shown(str(e['error']))}"
    return words


class TasksView(QWidget):
    """Signals:
    open_conversation(str, str): agent name and conversation id to show in the chat.
    status(str): a message for the status bar.
    """

    open_conversation = Signal(str, str)
    status = Signal(str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.columns: dict[str, QListWidget] = {}
        board = QHBoxLayout()
        for state, label in COLUMNS:
            col = QVBoxLayout()
            col.addWidget(rich_label(f"<b>{label}</b>"))
            lst = QListWidget()
            lst.setAccessibleName(label)
            lst.currentItemChanged.connect(self._on_selected)
            self.columns[state] = lst
            col.addWidget(lst)
            board.addLayout(col)
        board_w = QWidget()
        board_w.setLayout(board)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)  # it shows what agents wrote: nothing in it is followed
        self.detail.setAccessibleName("Task")
        # A model's title and description are shown as stored: a direction character in them written out (\u202e),
        # never obeyed, with the approval cards' warning while the hand-off waits for Approve.
        self.direction = direction_label({})
        self.tree = StepsTree()
        self.approve = QPushButton("Approve")
        self.reject = QPushButton("Reject")
        self.open_button = QPushButton("Open conversation")
        self.approve.clicked.connect(self._on_approve)
        self.reject.clicked.connect(self._on_reject)
        self.open_button.clicked.connect(self._on_open)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        buttons.addWidget(self.reject)
        buttons.addWidget(self.approve)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.addWidget(self.direction)
        rl.addWidget(self.detail, 2)
        rl.addWidget(self.tree, 2)
        rl.addLayout(buttons)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(board_w)
        split.addWidget(right)
        layout = QVBoxLayout(self)
        layout.addWidget(split)
        self.current: dict[str, Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._set_buttons()

    def refresh(self) -> None:
        keep = self.current["id"] if self.current else None
        for lst in self.columns.values():
            lst.blockSignals(True)
            lst.clear()
        for t in self.pod.list_tasks():
            state = t["state"] if t["state"] in self.columns else "failed"
            item = QListWidgetItem(unseen.direction_shown(f"{t['title']}\n{t['creator']} → {t['owner']}"))
            item.setData(Qt.ItemDataRole.UserRole, t)
            self.columns[state].addItem(item)
            if t["id"] == keep:
                self.columns[state].setCurrentItem(item)
                self.current = t
        for lst in self.columns.values():
            lst.blockSignals(False)
        if self.current:
            self._show(self.current)

    def count(self, state: str) -> int:
        return self.columns[state].count()

    def _on_selected(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        if item is None:
            return
        self.current = item.data(Qt.ItemDataRole.UserRole)
        self._show(self.current)

    def _show(self, t: dict[str, Any]) -> None:
        def shown(value: Any) -> str:  # a model's words (title, description, result), never markup nor obeyed
            return html.escape(unseen.direction_shown(str(value))).replace("\n", "<br>")

        waiting = t["state"] == "proposed"
        say_directions(self.direction, {"title": t["title"], "description": t["description"]} if waiting else {},
                       unseen.HANDED_AS_THEY_ARE)

        lines = [f"<h3>{shown(t['title'])}</h3><p><i>{shown(t['creator'])} → {shown(t['owner'])} · "
                 f"{shown(t['size'])} · {shown(t['state'])}</i></p>", f"<p>{shown(t['description'])}</p>"]
        if t.get("result"):
            lines.append(f"<p><b>Result:</b> {shown(t['result'])}</p>")
        if t.get("error"):
            lines.append(f"<p><b>Why:</b> {shown(t['error'])}</p>")
        lines.append("<h4>Timeline</h4><ul>")
        names = {a["id"]: a["name"] for a in self.pod.list_agents()}
        try:
            timeline = self.pod.task_timeline(t["id"])
        except StoreError:  # deleted meanwhile: no timeline to show
            timeline = []
        for e in timeline:
            lines.append(f"<li>{time.strftime('%H:%M:%S', time.localtime(e['ts']))} {html.escape(timeline_text(e, names))}</li>")
        lines.append("</ul>")
        self.detail.setHtml("".join(lines))
        self.tree.clear_steps()
        if t.get("turn_id"):
            turn = next((x for x in self.pod.turns(t["conversation_id"]) if x["id"] == t["turn_id"]), None)
            if turn:
                self.tree.load_tree(turn["steps"])
        self._set_buttons()

    def _set_buttons(self) -> None:
        t = self.current
        waiting = bool(t and t["state"] == "proposed")
        self.approve.setEnabled(waiting)
        self.reject.setEnabled(waiting)
        self.open_button.setEnabled(bool(t and t.get("conversation_id")))

    def _decide(self, approve: bool) -> None:
        if not self.current:
            return
        task_id = self.current["id"]

        async def go() -> None:
            try:
                await self.pod.decide_task(task_id, approve)
            except StoreError as exc:
                self.status.emit(str(exc))
            self.refresh()

        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_approve(self) -> None:
        self._decide(True)

    def _on_reject(self) -> None:
        self._decide(False)

    def _on_open(self) -> None:
        if self.current and self.current.get("conversation_id"):
            self.open_conversation.emit(self.current["owner"] or "", self.current["conversation_id"])
