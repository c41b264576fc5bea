"""The conversation view: rendered messages, a streaming answer, and the turn's tool-call tree."""

from __future__ import annotations

import json
import time
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextBrowser, QTreeWidget, QTreeWidgetItem

from app.markdown import STYLE, escape, render

ROLE_LABEL = {"user": "You", "assistant": "Agent", "error": "Hearth"}


class ChatView(QTextBrowser):
    """Messages as rendered markdown. Finished messages are inserted once; only the streaming
    answer is re-rendered, at most every 40 ms, so long conversations stay smooth."""

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self.setAccessibleName("Conversation")
        self._all: list[tuple[str, str]] = []
        self._shown = 0
        self.document().setDefaultStyleSheet(STYLE.replace("<style>", "").replace("</style>", ""))
        self._stream_pos: int | None = None
        self._stream_text = ""
        self._dirty = False
        self.agent_name = "Agent"
        self._timer = QTimer(self)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self._flush)

    def clear_messages(self) -> None:
        self.clear()
        self._stream_pos = None
        self._stream_text = ""

    def _block(self, role: str, body_html: str) -> str:
        label = self.agent_name if role == "assistant" else ROLE_LABEL.get(role, role)
        cls = ' class="error"' if role == "error" else ""
        return f'<p class="role"><b>{escape(label)}</b></p><div{cls}>{body_html}</div>'

    def _insert(self, html_text: str, at: int | None = None) -> None:
        cur = QTextCursor(self.document())
        if at is None:
            cur.movePosition(QTextCursor.MoveOperation.End)
        else:
            cur.setPosition(at)
            cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cur.removeSelectedText()
        cur.insertHtml(html_text)
        cur.insertBlock()

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _scroll_if(self, was_bottom: bool) -> None:
        if was_bottom:
            self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def append_message(self, role: str, text: str) -> None:
        was_bottom = self._at_bottom()
        body = f"<p>{escape(text)}</p>" if role == "error" else render(text)
        self._insert(self._block(role, body))
        self._scroll_if(was_bottom)

    PAGE = 150  # messages rendered at once; earlier ones load on demand

    def set_messages(self, messages: list[tuple[str, str]]) -> None:
        """Loads a conversation: the latest messages at once, earlier ones when the person asks."""
        self.clear_messages()
        self._all = list(messages)
        self._shown = min(len(self._all), self.PAGE)
        self._render_tail()

    def _render_tail(self) -> None:
        tail = self._all[len(self._all) - self._shown:]
        hidden = len(self._all) - self._shown
        head = (f'<p><a href="hearth-earlier:">Show {min(hidden, self.PAGE * 2)} earlier messages</a> '
                f"({hidden} not shown)</p>" if hidden else "")
        parts = [self._block(role, f"<p>{escape(t)}</p>" if role == "error" else render(t)) for role, t in tail]
        self.setHtml(head + "".join(parts))
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def show_earlier(self) -> None:
        if self._shown >= len(self._all):
            return
        self._shown = min(len(self._all), self._shown + self.PAGE * 2)
        self._render_tail()
        self.verticalScrollBar().setValue(0)

    def _on_anchor(self, url: Any) -> None:
        if url.toString().startswith("hearth-earlier:"):
            self.show_earlier()
        else:
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)

    # -- streaming
    def stream_begin(self) -> None:
        self._stream_pos = self.document().characterCount() - 1
        self._stream_text = ""
        self._timer.start()

    def stream_append(self, text: str) -> None:
        if self._stream_pos is None:
            self.stream_begin()
        self._stream_text += text
        self._dirty = True

    def _flush(self) -> None:
        if not self._dirty or self._stream_pos is None:
            return
        self._dirty = False
        was_bottom = self._at_bottom()
        self._insert(self._block("assistant", render(self._stream_text)), at=self._stream_pos)
        self._scroll_if(was_bottom)

    def stream_end(self, final_text: str | None = None) -> None:
        if final_text is not None:
            self._stream_text = final_text
            self._dirty = True
        self._flush()
        self._timer.stop()
        self._stream_pos = None

    def stream_discard(self) -> None:
        """Removes a partial streamed answer (the turn failed; the error replaces it)."""
        if self._stream_pos is not None:
            cur = QTextCursor(self.document())
            cur.setPosition(self._stream_pos)
            cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cur.removeSelectedText()
        self._timer.stop()
        self._stream_pos = None
        self._stream_text = ""

    @property
    def streaming_text(self) -> str:
        return self._stream_text


class StepsTree(QTreeWidget):
    """The turn's steps (model calls, tool calls) as a tree; sub-agent calls nest under their parent."""

    STATUS_ICON = {"started": "⏳", "finished": "✓", "failed": "✗", "interrupted": "⚠", "stopped": "■"}

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setColumnCount(4)
        self.setHeaderLabels(["Step", "Status", "Duration", "Details"])
        self.setAccessibleName("Tool calls")
        self.setUniformRowHeights(True)
        self.setColumnWidth(0, 240)
        self.setColumnWidth(1, 60)
        self.setColumnWidth(2, 80)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._started: dict[str, float] = {}

    def clear_steps(self) -> None:
        self.clear()
        self._items.clear()
        self._started.clear()

    def add_step(self, step_id: str, parent_id: str | None, kind: str, name: str, arguments: Any,
                 started_at: float | None = None) -> QTreeWidgetItem:
        parent = self._items.get(parent_id) if parent_id else None
        label = f"{'model' if kind == 'model' else 'tool'}: {name}"
        if kind == "model":  # which provider this model call went to
            details = f"via {arguments['provider']}" if isinstance(arguments, dict) and arguments.get("provider") else ""
        else:
            details = json.dumps(arguments, ensure_ascii=False)[:300]
        item = QTreeWidgetItem([label, self.STATUS_ICON["started"], "", details])
        item.setData(0, Qt.ItemDataRole.UserRole, step_id)
        if parent is not None:
            parent.addChild(item)
            parent.setExpanded(True)
        else:
            self.addTopLevelItem(item)
        self._items[step_id] = item
        self._started[step_id] = started_at or time.time()
        return item

    def finish_step(self, step_id: str, status: str, result: Any, finished_at: float | None = None) -> None:
        item = self._items.get(step_id)
        if item is None:
            return
        item.setText(1, self.STATUS_ICON.get(status, status))
        item.setToolTip(1, status)
        took = (finished_at or time.time()) - self._started.get(step_id, time.time())
        item.setText(2, f"{took * 1000:.0f} ms")
        if isinstance(result, dict):
            out = result.get("output") or result.get("error") or result.get("text") or ""
            if result.get("moved_to"):  # a fallback: say where the turn went and why
                out = f"moved to {result['moved_to']} ({result.get('why') or out})"
            if out:
                item.setText(3, (item.text(3) + " → " if item.text(3) else "") + str(out)[:300])

    def load_tree(self, nodes: list[dict[str, Any]], parent_id: str | None = None) -> None:
        for n in nodes:
            self.add_step(n["id"], parent_id, n["kind"], n["name"], n.get("arguments"), n.get("started_at"))
            if n["status"] != "started":
                self.finish_step(n["id"], n["status"], n.get("result"), n.get("finished_at"))
            self.load_tree(n.get("children") or [], n["id"])

    def step_count(self) -> int:
        return len(self._items)


class RunsList(QTreeWidget):
    """Background, scheduled and mail-triggered runs with their state (newest first)."""

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setColumnCount(5)
        self.setHeaderLabels(["Agent", "Kind", "State", "Prompt", "Result"])
        self.setAccessibleName("Runs")
        self.setRootIsDecorated(False)
        self._ids: list[str] = []

    def load(self, runs: list[dict[str, Any]]) -> None:
        self.clear()
        self._ids = []
        for r in reversed(runs):
            state = r["status"] if r["status"] not in ("pending", "running") or r["live"] else f"{r['status']} (no owner)"
            result = r["result"] or r["error"] or ""
            item = QTreeWidgetItem([r["agent"], r["origin"], state, r["prompt"][:80], result[:120]])
            item.setToolTip(4, result[:2000])
            item.setData(0, Qt.ItemDataRole.UserRole, r["id"])
            self.addTopLevelItem(item)
            self._ids.append(r["id"])

    def ids(self) -> list[str]:
        return list(self._ids)
