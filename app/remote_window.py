"""The window for a pod on another machine (`python -m app --remote URL --token-file FILE`): its agents and
a conversation, over the pod host's HTTP contract. Answers arrive whole (the contract does not stream)."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.chat_view import ChatView
from app.markdown import plain_label


class RemoteWindow(QMainWindow):
    def __init__(self, remote: Any, url: str):
        super().__init__()
        self.remote = remote
        self.setWindowTitle(f"Hearth — remote pod at {url}")
        self.agents = QListWidget()
        self.agents.setAccessibleName("Agents")
        self.agents.currentTextChanged.connect(self._on_agent)
        self.chat = ChatView()
        self.composer = QPlainTextEdit()
        self.composer.setAccessibleName("Message")
        self.composer.setFixedHeight(80)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self.send)
        self.status_line = plain_label(f"Connected to {url}")
        self.status_line.setAccessibleName("Connection")
        row = QHBoxLayout()
        row.addWidget(self.composer, 1)
        row.addWidget(self.send_button)
        center = QWidget()
        cl = QVBoxLayout(center)
        cl.addWidget(self.status_line)
        cl.addWidget(self.chat, 1)
        cl.addLayout(row)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.agents)
        split.addWidget(center)
        split.setSizes([200, 800])
        self.setCentralWidget(split)
        self.conversation_id: str | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.resize(1000, 680)

    def _run(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def load(self) -> None:
        from runtime_host.serve import RemoteError

        try:
            agents = await self.remote.agents()
        except (RemoteError, OSError) as exc:
            self.status_line.setText(f"Cannot reach the pod: {exc}")
            return
        except Exception as exc:  # httpx connection errors
            self.status_line.setText(f"Cannot reach the pod: {exc}. Check the address and that `serve` runs there.")
            return
        self.agents.clear()
        for a in agents:
            self.agents.addItem(a["name"])
        if agents:
            self.agents.setCurrentRow(0)

    def _on_agent(self, _name: str) -> None:
        self.conversation_id = None
        self.chat.set_messages([])
        self.chat.agent_name = self.agents.currentItem().text() if self.agents.currentItem() else "Agent"

    def send(self) -> None:
        text = self.composer.toPlainText().strip()
        item = self.agents.currentItem()
        if not text or item is None:
            return
        self.composer.clear()
        self.chat.append_message("user", text)
        self.send_button.setEnabled(False)

        async def go() -> None:
            from runtime_host.serve import RemoteError

            try:
                r = await self.remote.chat(item.text(), text, self.conversation_id)
            except RemoteError as exc:
                self.chat.append_message("error", str(exc))
            except Exception as exc:  # the connection dropped
                self.chat.append_message("error", f"The pod did not answer: {exc}")
            else:
                self.conversation_id = r["conversation_id"]
                if r["status"] == "done":
                    self.chat.append_message("assistant", r["text"] or "")
                else:
                    self.chat.append_message("error", f"The turn failed: {r['error']}")
            finally:
                self.send_button.setEnabled(True)

        self._run(go())
