"""Schedules: each agent's scheduled runs, an editor that checks the cron line as you type and says it
in plain words with the next runs, pause/resume/delete, and the run ledger."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.markdown import plain_label, plain_tooltip, rich_label
from app.when import local_time
from runtime_host.schedule import local_zone as schedule_local_zone
from runtime_host.store import StoreError

LIVE_EVENTS = ("schedule.added", "schedule.changed", "schedule.ticked", "schedules.paused", "agent.deleted")


def _fit(table: QTableWidget, stretch: int) -> None:
    """Columns sized to their content, one column taking the rest (long text is elided, full in the tooltip)."""
    header = table.horizontalHeader()
    for col in range(table.columnCount()):
        header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch if col == stretch
                                    else QHeaderView.ResizeMode.ResizeToContents)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    table.verticalHeader().setVisible(False)


def _cell(text: str) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setToolTip(plain_tooltip(text))
    return item


class SchedulesView(QWidget):
    """Signals:
    open_conversation(str, str): open (agent, conversation id) in the chat: a scheduled run's thread.

    Updates itself on pod events (a schedule added, a run started or finished), never by polling.
    """

    open_conversation = Signal(str, str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self._stale = True
        self._refresh_soon = QTimer(self)
        self._refresh_soon.setSingleShot(True)
        self._refresh_soon.setInterval(50)  # a burst of events becomes one refresh
        self._refresh_soon.timeout.connect(self.refresh)
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Agent", "When", "Next run", "Prompt", "State"])
        self.table.setAccessibleName("Schedules")
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        _fit(self.table, 3)
        row = QHBoxLayout()
        self.pause = QPushButton("Pause / resume")
        self.delete = QPushButton("Delete")
        self.pause.clicked.connect(self._on_pause)
        self.delete.clicked.connect(self._on_delete)
        row.addStretch(1)
        row.addWidget(self.pause)
        row.addWidget(self.delete)

        form = QFormLayout()
        self.agent = QComboBox()
        self.cron = QLineEdit()
        self.cron.setPlaceholderText("minute hour day month weekday, e.g. 0 8 * * 1-5, or @daily")
        self.cron.textChanged.connect(self._on_cron)
        self.tz = QLineEdit(schedule_local_zone())
        self.tz.textChanged.connect(self._on_cron)
        self.catch_up = QComboBox()
        self.catch_up.addItem("Run once when the computer wakes", "once")
        self.catch_up.addItem("Skip runs missed while off", "skip")
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("What should the agent do each time?")
        self.prompt.setFixedHeight(70)
        self.preview = plain_label("")
        self.preview.setWordWrap(True)
        self.preview.setAccessibleName("Schedule preview")
        for label, w in (("Agent", self.agent), ("Cron", self.cron), ("Time zone", self.tz),
                         ("If missed", self.catch_up), ("Prompt", self.prompt)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        form.addRow("", self.preview)
        self.add = QPushButton("Add schedule")
        self.add.clicked.connect(self._on_add)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.ledger = QTableWidget(0, 5)
        self.ledger.setHorizontalHeaderLabels(["Due", "Agent", "Schedule", "Outcome", "Note"])
        self.ledger.setAccessibleName("Run ledger")
        self.ledger.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.ledger.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.ledger.setToolTip("Double-click a run to open its conversation and answer it there")
        self.ledger.cellDoubleClicked.connect(lambda row, _col: self.open_run(row))
        _fit(self.ledger, 4)
        self.open_run_button = QPushButton("Open its conversation")
        self.open_run_button.setToolTip("Read the run's answer and reply to it in the same conversation")
        self.open_run_button.clicked.connect(lambda: self.open_run(self.ledger.currentRow()))
        self.ledger_rows: list[dict[str, Any]] = []
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 2)
        layout.addLayout(row)
        layout.addLayout(form)
        layout.addWidget(self.add, 0, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.message)
        ledger_title = QHBoxLayout()
        ledger_title.addWidget(rich_label("<b>Run ledger</b>"))
        ledger_title.addStretch(1)
        ledger_title.addWidget(self.open_run_button)
        layout.addLayout(ledger_title)
        layout.addWidget(self.ledger, 2)
        self.rows: list[dict[str, Any]] = []

    def on_pod_event(self, ev: dict[str, Any]) -> None:
        """Refreshes (once per burst) when schedules or scheduled runs change; a hidden page refreshes when shown."""
        kind = ev.get("type", "")
        if kind in LIVE_EVENTS or (kind.startswith("turn.") and ev.get("origin") == "schedule"):
            self._stale = True
            if self.isVisible():
                self._refresh_soon.start()

    def reset(self) -> None:
        """Wipes the schedule the previous person was typing and what was said to them (setText and setPlainText
        wipe the undo history too: Ctrl+Z brings none of it back)."""
        self.cron.setText("")
        self.prompt.setPlainText("")
        self.message.setText("")
        self._stale = True

    def refresh(self) -> None:
        self._stale = False
        chosen = self.agent.currentData()
        self.agent.clear()
        for a in self.pod.list_agents():
            self.agent.addItem(a["name"], a["name"])
        self.agent.setCurrentIndex(max(0, self.agent.findData(chosen)))
        selected = self._selected()
        self.rows = self.pod.schedules()
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            nxt = local_time(r["next_runs"][0]) if r["next_runs"] else ""
            for j, v in enumerate((r["agent"] or "", f"{r['description']} ({r['tz']})", nxt,
                                   (r.get("name") + ": " if r.get("name") else "") + r["prompt"],
                                   "paused" if r["paused"] else "active")):
                self.table.setItem(i, j, _cell(str(v)))
            if selected and r["id"] == selected["id"]:
                self.table.selectRow(i)
        self.ledger_rows = self.pod.schedule_ledger(100)
        self.ledger.setRowCount(len(self.ledger_rows))
        for i, r in enumerate(self.ledger_rows):
            note = r.get("error") or ("double-click to open its conversation" if r.get("conversation_id") else "")
            what = (r.get("name") or r["prompt"][:60]) + (" (deleted)" if r.get("deleted") else "")
            for j, v in enumerate((local_time(r["due_at"]), r["agent"] or "", what, r["outcome"], note)):
                self.ledger.setItem(i, j, _cell(str(v)))
        self._on_cron()

    def open_run(self, row: int) -> None:
        """Opens the scheduled run's conversation in the chat, where the person can answer it."""
        r = self.ledger_rows[row] if 0 <= row < len(self.ledger_rows) else None
        if r is None:
            self.message.setText("Pick a run in the ledger first.")
            return
        if not r.get("conversation_id") or not r.get("agent"):
            self.message.setText("This run has no conversation (it did not start).")
            return
        self.open_conversation.emit(r["agent"], r["conversation_id"])

    def _on_cron(self, _text: str = "") -> None:
        expr = self.cron.text().strip()
        if not expr:
            self.preview.setText("")
            self.add.setEnabled(False)
            return
        try:
            preview = self.pod.schedule_preview(expr, self.tz.text().strip() or "UTC", 3)
        except ValueError as exc:  # CronError: a cron expression or time zone that cannot be used
            self.preview.setText(f"⚠ {exc}")
            self.add.setEnabled(False)
            return
        local = [r.strftime("%a %d %b %H:%M") for r in preview["next"]]
        self.preview.setText(f"{preview['description'].capitalize()}. Next: {', '.join(local)}")
        self.add.setEnabled(True)

    def _on_add(self) -> None:
        try:
            info = self.pod.add_schedule(self.agent.currentData() or "", self.cron.text().strip(),
                                         self.prompt.toPlainText().strip(), tz=self.tz.text().strip() or "UTC",
                                         catch_up=self.catch_up.currentData())
        except (ValueError, StoreError) as exc:  # CronError is a ValueError
            self.message.setText(str(exc))
            return
        self.message.setText(f"Scheduled {info['agent']}: {info['description']}.")
        self.cron.clear()
        self.prompt.clear()
        self.refresh()

    def _selected(self) -> dict[str, Any] | None:
        i = self.table.currentRow()
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def _on_pause(self) -> None:
        r = self._selected()
        if r:
            try:
                self.pod.pause_schedule(r["id"], not r["paused"])
            except StoreError as exc:
                self.message.setText(str(exc))
            self.refresh()

    def _on_delete(self) -> None:
        from app.confirm import confirm

        r = self._selected()
        if r is None:
            self.message.setText("Pick a schedule in the list first.")
            return
        what = r.get("name") or r["prompt"][:60]
        if not confirm(self, "Delete schedule", f"Delete the schedule \u201c{what}\u201d of {r['agent']}?", "Delete",
                       "It will not run again; its past runs stay in the ledger."):
            self.message.setText("Nothing deleted.")
            return
        try:
            self.pod.delete_schedule(r["id"])
        except StoreError as exc:
            self.message.setText(str(exc))
        else:
            self.message.setText("Schedule deleted; its past runs stay in the ledger.")
        self.refresh()
