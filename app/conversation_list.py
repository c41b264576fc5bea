"""The sidebar's conversations: chats newest first, runs of a schedule (and other background runs) grouped
under one line each, search results that jump to their message, and a menu to rename, delete or export.

Signals:
opened(str, str, str): open (conversation id, message id or "", agent name or "" for the current agent).
rename_requested(str, str): (conversation id, current title).
delete_requested(str, str): (conversation id, title).
export_requested(str, str, str): (conversation id, title, "markdown" or "json").
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QMenu, QTreeWidget, QTreeWidgetItem

from app.markdown import plain_tooltip

ORIGIN_GROUP = {"background": "Background runs", "mail": "Runs from mail", "handoff": "Hand-offs"}
ID, MESSAGE, AGENT, TITLE = (Qt.ItemDataRole.UserRole + i for i in range(4))


def _when(ts: float) -> str:
    return time.strftime("%d %b %H:%M", time.localtime(ts))


class ConversationList(QTreeWidget):
    opened = Signal(str, str, str)
    rename_requested = Signal(str, str)
    delete_requested = Signal(str, str)
    export_requested = Signal(str, str, str)

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setAccessibleName("Conversations")
        self.setRootIsDecorated(True)
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        self.itemClicked.connect(self.open_item)
        self.itemActivated.connect(self.open_item)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_menu)
        self.searching = False

    def _item(self, conv_id: str, text: str, tooltip: str = "", message_id: str = "", agent: str = "",
              title: str = "") -> QTreeWidgetItem:
        item = QTreeWidgetItem([text])
        item.setData(0, ID, conv_id)
        item.setData(0, MESSAGE, message_id)
        item.setData(0, AGENT, agent)
        item.setData(0, TITLE, title)
        if tooltip:
            item.setToolTip(0, plain_tooltip(tooltip))  # a message's words
        return item

    def load(self, conversations: list[dict[str, Any]], current: str | None) -> None:
        """Chats as rows; scheduled runs under their schedule, other runs under their kind (newest first)."""
        self.searching = False
        self.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        counts: dict[str, int] = {}
        for c in conversations[:500]:
            row = self._item(c["id"], f"{c['title']}\n{_when(c['updated_at'])}", title=c["title"])
            if c["origin"] in ("chat", "telegram"):
                self.addTopLevelItem(row)
            else:
                key = f"schedule:{c['schedule_id']}" if c.get("schedule_id") else c["origin"]
                if key not in groups:
                    label = (f"Runs of “{c['schedule']}”" if c.get("schedule_id") and c.get("schedule")
                             else "Scheduled runs" if c["origin"] == "schedule" else ORIGIN_GROUP.get(c["origin"], "Runs"))
                    groups[key] = QTreeWidgetItem([label])
                    groups[key].setData(0, ID, "")
                    groups[key].setData(0, TITLE, label)
                    self.addTopLevelItem(groups[key])
                counts[key] = counts.get(key, 0) + 1
                row.setText(0, f"{_when(c['updated_at'])} · {c['title'].removeprefix('Scheduled: ')}")
                groups[key].addChild(row)
            if c["id"] == current:
                self.setCurrentItem(row)
                if row.parent() is not None:
                    row.parent().setExpanded(True)
        for key, g in groups.items():
            label = g.data(0, TITLE)
            g.setText(0, f"{label} ({counts[key]} run{'s' if counts[key] != 1 else ''})")
            g.setToolTip(0, "Each run of a schedule or background job is its own conversation; open one to read "
                            "or answer it.")

    def show_results(self, query: str, results: list[dict[str, Any]]) -> None:
        """Search results across all conversations; choosing one opens its conversation at the message."""
        self.searching = True
        self.clear()
        if not results:
            empty = QTreeWidgetItem([f"No message holds “{query}”."])
            empty.setData(0, ID, "")
            empty.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.addTopLevelItem(empty)
            return
        for r in results:
            who = "You" if r["role"] == "user" else r["agent"]
            row = self._item(r["conversation_id"], f"{r['title']} · {r['agent']}\n{who}: {r['snippet']}",
                             tooltip=r["snippet"], message_id=r["message_id"], agent=r["agent"], title=r["title"])
            self.addTopLevelItem(row)

    def open_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        conv_id = item.data(0, ID)
        if conv_id:
            self.opened.emit(conv_id, item.data(0, MESSAGE) or "", item.data(0, AGENT) or "")
        else:
            item.setExpanded(not item.isExpanded())

    def rows(self) -> list[str]:
        """Top-level rows' first lines (what a person reads at a glance)."""
        return [self.topLevelItem(i).text(0).splitlines()[0] for i in range(self.topLevelItemCount())]

    def _on_menu(self, pos: Any) -> None:
        item = self.itemAt(pos)
        if item is None or not item.data(0, ID):
            return
        conv_id, title = item.data(0, ID), item.data(0, TITLE) or "conversation"
        menu = QMenu(self)
        menu.addAction("Rename… (F2)", lambda: self.rename_requested.emit(conv_id, title))
        menu.addAction("Export as Markdown…", lambda: self.export_requested.emit(conv_id, title, "markdown"))
        menu.addAction("Export as JSON…", lambda: self.export_requested.emit(conv_id, title, "json"))
        menu.addSeparator()
        menu.addAction("Delete… (Del)", lambda: self.delete_requested.emit(conv_id, title))
        menu.exec(self.viewport().mapToGlobal(pos))

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        item = self.currentItem()
        if item is not None and item.data(0, ID):
            if event.key() == Qt.Key.Key_F2:
                self.rename_requested.emit(item.data(0, ID), item.data(0, TITLE) or "")
                return
            if event.key() == Qt.Key.Key_Delete:
                self.delete_requested.emit(item.data(0, ID), item.data(0, TITLE) or "conversation")
                return
        super().keyPressEvent(event)
