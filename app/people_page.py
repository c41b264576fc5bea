"""Settings → People: who shares this Hearth, and removing one of them with everything theirs (asked first, with what
goes counted, then confirmed by their passphrase or by typing their name: runtime_host/removal.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLineEdit, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from app.confirm import ask_text, confirm
from app.markdown import plain_label
from runtime_host.store import StoreError


def what_goes(goes: dict[str, Any]) -> str:
    """The confirmation's words for what a removal takes (its counts, from PersonPod.what_removal_takes)."""
    whose = "yours" if goes["self"] else f"{goes['name']}'s"
    return (f"Everything of {whose} goes: {goes['conversations']} conversation(s), {goes['agents']} agent(s) with their "
            f"workers, schedules and folders, {goes['inboxes']} inbox(es) with their passwords, and "
            f"{goes['notes']} memory note(s) (private, their agents' and what they put in the household's memory), "
            "with their keys, cards, notifications and activity. Nothing of anyone else's is touched. "
            "This cannot be undone.")


class PeoplePage(QWidget):
    """The people of this Hearth and Remove…: anyone may remove themselves; the person who set Hearth up may remove
    anyone else (and is removed last).

    Signals: ``removed(name)`` once a person is removed (the window stops showing them)."""

    removed = Signal(str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        layout = QVBoxLayout(self)
        intro = plain_label("Everyone who shares this Hearth. You can remove yourself; the person who set Hearth up "
                            "can remove anyone else, for instance someone who left and forgot their passphrase.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QListWidget()
        self.list.setAccessibleName("People")
        layout.addWidget(self.list)
        self.remove = QPushButton("Remove…")
        self.remove.setToolTip("Remove the chosen person with everything theirs (asks first)")
        self.remove.clicked.connect(self._on_remove)
        layout.addWidget(self.remove)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self._tasks: set[asyncio.Task[None]] = set()
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for p in self.pod.people():
            label = p["name"] + (" (you)" if p["current"] else "") + (" — being removed" if p["removing"] else "")
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, p["name"])
            self.list.addItem(item)

    def _run(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_remove(self) -> None:
        item = self.list.currentItem()
        if item is None:
            self.message.setText("Pick a person in the list first.")
            return
        name = item.data(Qt.ItemDataRole.UserRole)

        async def count() -> None:
            try:
                goes = await self.pod.what_removal_takes(name)
            except StoreError as exc:
                self.message.setText(str(exc))
                return
            QTimer.singleShot(0, lambda: self._ask(goes))  # the boxes open outside this coroutine

        self.message.setText(f"Counting what is {name}'s…")
        self._run(count())

    def _ask(self, goes: dict[str, Any]) -> None:
        name = goes["name"]
        title = "Remove yourself" if goes["self"] else "Remove a person"
        question = "Remove yourself from this Hearth?" if goes["self"] else f"Remove {name} from this Hearth?"
        if not confirm(self, title, question, "Remove…", what_goes(goes)):
            self.message.setText("Nobody removed.")
            return
        if goes["self"] and goes["has_passphrase"]:
            typed, ok = ask_text(self, title, "Your passphrase, to confirm that you remove yourself:",
                                 QLineEdit.EchoMode.Password)
        else:
            typed, ok = ask_text(self, title, f"Type {name} to confirm:")
        if not ok:
            self.message.setText("Nobody removed.")
            return

        async def go() -> None:
            try:
                await self.pod.remove_person(name, typed)
            except StoreError as exc:
                self.message.setText(str(exc))
                return
            self.message.setText(f"Removed {name} with everything theirs.")
            self.refresh()
            QTimer.singleShot(0, lambda: self.removed.emit(name))  # the window may ask a passphrase: not in here

        self.message.setText(f"Removing {name}…")
        self._run(go())
