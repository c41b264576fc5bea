"""Schedules: each agent's scheduled runs, an editor that checks the cron line as you type and says it
in plain words with the next runs, pause/resume/delete, and the run ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from runtime_host.schedule import local_zone as schedule_local_zone
from runtime_host.store import StoreError


class SchedulesView(QWidget):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Agent", "When", "Next run", "Prompt", "State"])
        self.table.setAccessibleName("Schedules")
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setStretchLastSection(True)
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
        self.preview = QLabel("")
        self.preview.setWordWrap(True)
        self.preview.setAccessibleName("Schedule preview")
        for label, w in (("Agent", self.agent), ("Cron", self.cron), ("Time zone", self.tz),
                         ("If missed", self.catch_up), ("Prompt", self.prompt)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        form.addRow("", self.preview)
        self.add = QPushButton("Add schedule")
        self.add.clicked.connect(self._on_add)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.ledger = QTableWidget(0, 4)
        self.ledger.setHorizontalHeaderLabels(["Due", "Agent", "Outcome", "Note"])
        self.ledger.setAccessibleName("Run ledger")
        self.ledger.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 2)
        layout.addLayout(row)
        layout.addLayout(form)
        layout.addWidget(self.add, 0, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.message)
        layout.addWidget(QLabel("<b>Run ledger</b>"))
        layout.addWidget(self.ledger, 2)
        self.rows: list[dict[str, Any]] = []

    def refresh(self) -> None:
        self.agent.clear()
        for a in self.pod.list_agents():
            self.agent.addItem(a["name"], a["name"])
        self.rows = self.pod.schedules()
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            nxt = r["next_runs"][0] if r["next_runs"] else ""
            for j, v in enumerate((r["agent"] or "", f"{r['description']} ({r['tz']})", nxt, r["prompt"],
                                   "paused" if r["paused"] else "active")):
                self.table.setItem(i, j, QTableWidgetItem(str(v)))
        ledger = self.pod.schedule_ledger(100)
        self.ledger.setRowCount(len(ledger))
        for i, r in enumerate(ledger):
            for j, v in enumerate((r["due_at"], r["agent"] or "", r["outcome"], r.get("error") or "")):
                self.ledger.setItem(i, j, QTableWidgetItem(str(v)))
        self._on_cron()

    def _on_cron(self, _text: str = "") -> None:
        from runtime_host import schedule

        expr = self.cron.text().strip()
        if not expr:
            self.preview.setText("")
            self.add.setEnabled(False)
            return
        try:
            sched = schedule.Schedule(expr, self.tz.text().strip() or "UTC", "once")
            runs = schedule.next_runs(sched, datetime.now(UTC), 3)
        except (schedule.CronError, ValueError) as exc:
            self.preview.setText(f"⚠ {exc}")
            self.add.setEnabled(False)
            return
        local = [r.astimezone(schedule.zone(sched.tz)).strftime("%a %d %b %H:%M") for r in runs]
        self.preview.setText(f"{schedule.describe(expr).capitalize()}. Next: {', '.join(local)}")
        self.add.setEnabled(True)

    def _on_add(self) -> None:
        from runtime_host import schedule

        try:
            info = self.pod.add_schedule(self.agent.currentData() or "", self.cron.text().strip(),
                                         self.prompt.toPlainText().strip(), tz=self.tz.text().strip() or "UTC",
                                         catch_up=self.catch_up.currentData())
        except (schedule.CronError, StoreError) as exc:
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
        from runtime_host import schedule

        r = self._selected()
        if r:
            schedule.set_paused(self.pod.store.engine, r["id"], not r["paused"])
            self.refresh()

    def _on_delete(self) -> None:
        from runtime_host import schedule

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
        schedule.delete_schedule(self.pod.store.engine, r["id"])
        self.message.setText("Schedule deleted; its past runs stay in the ledger.")
        self.refresh()
