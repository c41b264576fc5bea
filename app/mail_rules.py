"""The mail rules editor: rules as a form (conditions and actions in rows), with the JSON one toggle away.

The form and the JSON are two views of one list of rule dicts (runtime_host.mail.rules' format); the
rules engine validates both the same way when they are saved.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.markdown import plain_label
from runtime_host.mail.rules import ACTIONS, FIELDS, OPS

FIELD_LABELS = {"from": "From", "to": "To", "cc": "Cc", "recipients": "Any recipient", "subject": "Subject",
                "body": "Body", "attachment": "Attachment name"}
OP_LABELS = {"contains": "contains", "not_contains": "does not contain", "equals": "is", "not_equals": "is not",
             "startswith": "starts with", "endswith": "ends with", "regex": "matches (regex)", "exists": "exists",
             "not_exists": "does not exist"}
ACTION_LABELS = {"label": "Label it (IMAP keyword)", "hand": "Hand it to an agent", "draft": "Draft a reply (approval card)",
                 "notify": "Notify me", "mark_read": "Mark it read"}
assert set(ACTION_LABELS) == set(ACTIONS) and {o.removeprefix("not_") for o in OP_LABELS} == set(OPS)


def _combo(items: dict[str, str], current: str, editable: bool = False) -> QComboBox:
    box = QComboBox()
    for value, label in items.items():
        box.addItem(label, value)
    box.setEditable(editable)
    i = box.findData(current)
    if i >= 0:
        box.setCurrentIndex(i)
    elif editable:
        box.setEditText(current)
    return box


class RulesEditor(QWidget):
    """Signals:
    changed(): the person edited a rule (not yet saved).
    """

    changed = Signal()

    def __init__(self, agents: list[str] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.agents = agents or []
        self.rules: list[dict[str, Any]] = []
        self._row = -1
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.list = QListWidget()
        self.list.setAccessibleName("Mail rules")
        self.list.setMaximumWidth(220)
        self.list.currentRowChanged.connect(self._on_rule_chosen)
        left = QVBoxLayout()
        left.addWidget(self.list, 1)
        rule_buttons = QHBoxLayout()
        self.add_rule = QPushButton("Add rule")
        self.add_rule.clicked.connect(self._on_add_rule)
        self.remove_rule = QPushButton("Remove rule")
        self.remove_rule.clicked.connect(self._on_remove_rule)
        rule_buttons.addWidget(self.add_rule)
        rule_buttons.addWidget(self.remove_rule)
        left.addLayout(rule_buttons)
        top.addLayout(left)

        self.form = QWidget()
        form_layout = QVBoxLayout(self.form)
        form_layout.setContentsMargins(0, 0, 0, 0)
        head = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Rule name")
        self.name.textEdited.connect(self._on_name)
        self.enabled = QCheckBox("On")
        self.enabled.toggled.connect(lambda _on: self._store())
        self.match = QComboBox()
        self.match.addItem("all of these hold", "all")
        self.match.addItem("any of these holds", "any")
        self.match.currentIndexChanged.connect(lambda _i: self._store())
        self.stop = QCheckBox("Stop here (later rules do not see this mail)")
        self.stop.toggled.connect(lambda _on: self._store())
        head.addRow("Name", self.name)
        head.addRow("", self.enabled)
        head.addRow("When", self.match)
        form_layout.addLayout(head)
        self.conditions = QTableWidget(0, 3)
        self.conditions.setHorizontalHeaderLabels(["Field", "Test", "Value"])
        self.conditions.setAccessibleName("Conditions")
        self.conditions.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.conditions.verticalHeader().setVisible(False)
        form_layout.addWidget(self.conditions, 1)
        cond_buttons = QHBoxLayout()
        self.add_condition = QPushButton("Add condition")
        self.add_condition.clicked.connect(lambda: self._add_condition_row({"field": "subject", "op": "contains"}))
        self.remove_condition = QPushButton("Remove condition")
        self.remove_condition.clicked.connect(lambda: self._remove_row(self.conditions))
        cond_buttons.addWidget(self.add_condition)
        cond_buttons.addWidget(self.remove_condition)
        cond_buttons.addStretch(1)
        form_layout.addLayout(cond_buttons)
        form_layout.addWidget(plain_label("Then"))
        self.actions = QTableWidget(0, 3)
        self.actions.setHorizontalHeaderLabels(["Action", "Agent", "Label or instructions"])
        self.actions.setAccessibleName("Actions")
        self.actions.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.actions.verticalHeader().setVisible(False)
        form_layout.addWidget(self.actions, 1)
        act_buttons = QHBoxLayout()
        self.add_action = QPushButton("Add action")
        self.add_action.clicked.connect(lambda: self._add_action_row({"action": "notify"}))
        self.remove_action = QPushButton("Remove action")
        self.remove_action.clicked.connect(lambda: self._remove_row(self.actions))
        act_buttons.addWidget(self.add_action)
        act_buttons.addWidget(self.remove_action)
        act_buttons.addStretch(1)
        form_layout.addLayout(act_buttons)
        form_layout.addWidget(self.stop)
        top.addWidget(self.form, 1)
        layout.addLayout(top, 1)

        self.json_toggle = QCheckBox("Edit as JSON (advanced)")
        self.json_toggle.toggled.connect(self._on_json_toggled)
        self.json = QPlainTextEdit()
        self.json.setAccessibleName("Rules as JSON")
        self.json.setVisible(False)
        layout.addWidget(self.json_toggle)
        layout.addWidget(self.json, 1)
        self.error = plain_label("")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)

    # -- loading and reading
    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        self.rules = [dict(r) for r in rules]
        self._row = -1
        self.json.setPlainText(json.dumps(self.rules, indent=2))
        self._fill_list(0)

    def value(self) -> list[dict[str, Any]]:
        """The rules as edited (from the JSON when that view is on); raises ValueError when the JSON is not JSON."""
        if self.json_toggle.isChecked():
            try:
                data = json.loads(self.json.toPlainText() or "[]")
            except json.JSONDecodeError as exc:
                raise ValueError(f"The rules are not valid JSON: {exc}") from None
            if not isinstance(data, list):
                raise ValueError("The rules must be a JSON list of rule objects.")
            return data
        self._store()
        return [dict(r) for r in self.rules]

    def _fill_list(self, select: int) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for r in self.rules:
            self.list.addItem(str(r.get("name") or r.get("id") or "Rule") + ("" if r.get("enabled", True) else " (off)"))
        self.list.blockSignals(False)
        self.form.setEnabled(bool(self.rules))
        self.remove_rule.setEnabled(bool(self.rules))
        if self.rules:
            self.list.setCurrentRow(max(0, min(select, len(self.rules) - 1)))
        else:
            self._row = -1
            self._show_rule({})

    def _on_rule_chosen(self, row: int) -> None:
        self._store()
        self._row = row
        self._show_rule(self.rules[row] if 0 <= row < len(self.rules) else {})

    def _show_rule(self, r: dict[str, Any]) -> None:
        for w in (self.enabled, self.match, self.stop):
            w.blockSignals(True)
        self.name.setText(str(r.get("name") or ""))
        self.enabled.setChecked(bool(r.get("enabled", True)))
        self.match.setCurrentIndex(max(0, self.match.findData(r.get("match", "all"))))
        self.stop.setChecked(bool(r.get("stop", False)))
        for w in (self.enabled, self.match, self.stop):
            w.blockSignals(False)
        self.conditions.setRowCount(0)
        self.actions.setRowCount(0)
        for c in r.get("when") or []:
            self._add_condition_row(c, store=False)
        for a in r.get("then") or []:
            self._add_action_row(a, store=False)

    # -- rows
    def _add_condition_row(self, c: dict[str, Any], store: bool = True) -> None:
        i = self.conditions.rowCount()
        self.conditions.insertRow(i)
        op = str(c.get("op", "contains"))
        if c.get("not") and not op.startswith("not_"):
            op = "not_" + op
        field = _combo({**FIELD_LABELS, "header:": "Header (type header:Name)"}, str(c.get("field", "subject")),
                       editable=True)
        field.setToolTip(f"One of: {', '.join(FIELDS)}")
        test = _combo(OP_LABELS, op)
        value = QLineEdit(str(c.get("value", "")))
        for col, w in enumerate((field, test, value)):
            self.conditions.setCellWidget(i, col, w)
        field.currentIndexChanged.connect(lambda _i: self._store())
        field.editTextChanged.connect(lambda _t: self._store())
        test.currentIndexChanged.connect(lambda _i: self._store())
        value.textEdited.connect(lambda _t: self._store())
        if store:
            self._store()

    def _add_action_row(self, a: dict[str, Any], store: bool = True) -> None:
        i = self.actions.rowCount()
        self.actions.insertRow(i)
        kind = _combo(ACTION_LABELS, str(a.get("action", "notify")))
        agent = QComboBox()
        agent.addItem("(first agent)", "")
        for name in self.agents:
            agent.addItem(name, name)
        if a.get("agent") and agent.findData(a["agent"]) < 0:
            agent.addItem(str(a["agent"]), a["agent"])
        agent.setCurrentIndex(max(0, agent.findData(a.get("agent", ""))))
        detail = QLineEdit(str(a.get("keyword") or a.get("prompt") or ""))
        detail.setPlaceholderText("label name, or what the agent should do")
        for col, w in enumerate((kind, agent, detail)):
            self.actions.setCellWidget(i, col, w)
        kind.currentIndexChanged.connect(lambda _i: self._store())
        agent.currentIndexChanged.connect(lambda _i: self._store())
        detail.textEdited.connect(lambda _t: self._store())
        if store:
            self._store()

    def _remove_row(self, table: QTableWidget) -> None:
        row = table.currentRow() if table.currentRow() >= 0 else table.rowCount() - 1
        if row >= 0:
            table.removeRow(row)
            self._store()

    # -- rules
    def _on_add_rule(self) -> None:
        self._store()
        taken = {r.get("id") for r in self.rules}
        n = len(self.rules) + 1
        while f"rule-{n}" in taken:
            n += 1
        self.rules.append({"id": f"rule-{n}", "name": f"New rule {n}", "match": "all", "enabled": True, "stop": False,
                           "when": [{"field": "subject", "op": "contains", "value": ""}],
                           "then": [{"action": "notify"}]})
        self._row = -1
        self._fill_list(len(self.rules) - 1)
        self.name.setFocus()
        self.name.selectAll()
        self.changed.emit()

    def _on_remove_rule(self) -> None:
        row = self.list.currentRow()
        if 0 <= row < len(self.rules):
            self.rules.pop(row)
            self._row = -1
            self._fill_list(row)
            self.changed.emit()

    def _on_name(self, text: str) -> None:
        self._store()
        item = self.list.item(self._row)
        if item is not None:
            item.setText(text or "Rule")

    def _store(self) -> None:
        """Writes the form back into the chosen rule's dict."""
        if not 0 <= self._row < len(self.rules):
            return
        r = self.rules[self._row]
        r["name"] = self.name.text().strip() or r.get("id", "Rule")
        r["enabled"] = self.enabled.isChecked()
        r["match"] = self.match.currentData()
        r["stop"] = self.stop.isChecked()
        when = []
        for i in range(self.conditions.rowCount()):
            field, test, value = (self.conditions.cellWidget(i, c) for c in range(3))
            fld = field.currentData() if field.currentText() == field.itemText(field.currentIndex()) else None
            fld = fld or field.currentText().strip()
            op = test.currentData()
            c: dict[str, Any] = {"field": fld, "op": op.removeprefix("not_")}
            if op.startswith("not_"):
                c["not"] = True
            if op.removeprefix("not_") != "exists":
                c["value"] = value.text()
            when.append(c)
        then = []
        for i in range(self.actions.rowCount()):
            kind, agent, detail = (self.actions.cellWidget(i, c) for c in range(3))
            a: dict[str, Any] = {"action": kind.currentData()}
            if agent.currentData() and a["action"] in ("hand", "draft"):
                a["agent"] = agent.currentData()
            text_ = detail.text().strip()
            if a["action"] == "label":
                a["keyword"] = text_
            elif a["action"] in ("hand", "draft") and text_:
                a["prompt"] = text_
            then.append(a)
        r["when"], r["then"] = when, then
        self.changed.emit()

    def _on_json_toggled(self, on: bool) -> None:
        self.error.setText("")
        if on:
            self._store()
            self.json.setPlainText(json.dumps(self.rules, indent=2))
        else:
            try:
                data = json.loads(self.json.toPlainText() or "[]")
                if not isinstance(data, list):
                    raise ValueError("the rules must be a JSON list")
            except ValueError as exc:
                self.error.setText(f"The JSON could not be read back into the form: {exc}. Fix it or save it as JSON.")
                self.json_toggle.blockSignals(True)
                self.json_toggle.setChecked(True)
                self.json_toggle.blockSignals(False)
                return
            self.set_rules(data)
        self.json.setVisible(on)
        self.form.setVisible(not on)
        self.list.setVisible(not on)
        self.add_rule.setVisible(not on)
        self.remove_rule.setVisible(not on)
