"""Activity: every decision Hearth made on the person's behalf (safety gates, guard denials, approvals),
newest first, with export to JSON lines or CSV."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.markdown import plain_label, plain_tooltip

COLUMNS = ("When", "Kind", "Agent", "Phase", "Decision", "Rule", "What")


class ActivityView(QWidget):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.kind = QComboBox()
        self.kind.setAccessibleName("Kind of activity")
        for label, value in (("Everything", None), ("Safety gates", "gate"), ("Guard", "guard")):
            self.kind.addItem(label, value)
        self.kind.currentIndexChanged.connect(self._on_filter)
        self.export_button = QPushButton("Export…")
        self.export_button.clicked.connect(self._on_export)
        self.count = plain_label("")
        top = QHBoxLayout()
        top.addWidget(plain_label("Show"))
        top.addWidget(self.kind)
        top.addStretch(1)
        top.addWidget(self.count)
        top.addWidget(self.export_button)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Activity")
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        for col in range(len(COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch if col == len(COLUMNS) - 1
                                        else QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table)
        self.rows: list[dict[str, Any]] = []

    def refresh(self) -> None:
        self.rows = self.pod.audit_log(kind=self.kind.currentData())
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            values = (time.strftime("%d %b %H:%M:%S", time.localtime(r["ts"])), r["kind"], r["agent"] or "",
                      r["phase"] or "", r["action"], r["rule"] or "", r["summary"] or "")
            for j, v in enumerate(values):
                item = QTableWidgetItem(str(v))
                item.setToolTip(plain_tooltip(str(v)))
                self.table.setItem(i, j, item)
        self.count.setText(f"{len(self.rows)} event(s)")

    def _on_filter(self, _index: int = 0) -> None:
        self.refresh()

    def export(self, path: str) -> int:
        from runtime_host.safety.audit import events_to_csv, events_to_jsonl

        writer = events_to_csv if path.lower().endswith(".csv") else events_to_jsonl
        return writer(self.rows, path)

    def _on_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export activity", "hearth-activity.jsonl",
                                              "JSON lines (*.jsonl);;CSV (*.csv)")
        if path:
            n = self.export(path)
            self.count.setText(f"Exported {n} event(s) to {path}")
