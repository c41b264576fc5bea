"""The safety policy of one agent as a form: what each gate does, in words, instead of raw JSON."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QVBoxLayout,
    QWidget,
)

from runtime_host.safety.detectors import DETECTOR_NAMES

DETECTOR_LABELS = {"secret": "Passwords and keys", "card": "Card numbers", "iban": "Bank accounts (IBAN)",
                   "account": "Bank account, sort code and routing numbers", "national_id": "National ID numbers",
                   "email": "Email addresses", "phone": "Phone numbers", "address": "Postal addresses"}
INGRESS = {"flag": "Note personal data (the agent sees it)", "redact": "Hide personal data from the agent",
           "off": "Do nothing"}
EGRESS = {"block": "Block", "ask": "Ask me first", "allow": "Allow"}
MEMORY_WRITE = {"redact": "Hide personal data before remembering", "allow": "Remember as written"}
MEMORY_READ = {"pass": "Use as remembered", "flag": "Note personal data found in memory"}


def _combo(choices: dict[str, str], current: str, name: str) -> QComboBox:
    box = QComboBox()
    box.setAccessibleName(name)
    for value, label in choices.items():
        box.addItem(label, value)
    box.setCurrentIndex(max(0, box.findData(current)))
    return box


class SafetyForm(QWidget):
    """Edits a policy dict (runtime_host.safety.policy.Policy.to_dict()); `value()` returns the edited dict.
    Settings the form does not show (which detectors the person turned off) are kept as they were; a detector a
    later Hearth adds is in no such list, so it runs."""

    def __init__(self, policy: dict[str, Any], parent: QWidget | None = None):
        super().__init__(parent)
        self._policy = dict(policy)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QFormLayout()
        self.ingress = _combo(INGRESS, policy.get("ingress", "flag"), "Your messages to the agent")
        top.addRow("Your messages to the agent", self.ingress)
        self.memory_write = _combo(MEMORY_WRITE, policy.get("memory_write", "redact"), "What it remembers")
        top.addRow("What it remembers", self.memory_write)
        self.reversible = QCheckBox("Keep the hidden values in my keyring so I can see them in the wiki")
        self.reversible.setChecked(bool(policy.get("reversible", False)))
        top.addRow("", self.reversible)
        self.memory_read = _combo(MEMORY_READ, policy.get("memory_read", "pass"), "What it reads from memory")
        top.addRow("What it reads from memory", self.memory_read)
        self.min_confidence = QDoubleSpinBox()
        self.min_confidence.setRange(0.0, 1.0)
        self.min_confidence.setSingleStep(0.05)
        self.min_confidence.setValue(float(policy.get("min_confidence", 0.5)))
        self.min_confidence.setAccessibleName("How sure a finding must be")
        self.min_confidence.setToolTip("0 = act on every possible finding, 1 = only on certain ones")
        top.addRow("How sure a finding must be", self.min_confidence)
        layout.addLayout(top)
        box = QGroupBox("When it sends something out (mail, partners, the web)")
        egress_form = QFormLayout(box)
        self.egress: dict[str, QComboBox] = {}
        current = policy.get("egress") or {}
        for det in DETECTOR_NAMES:
            combo = _combo(EGRESS, current.get(det, "ask"), f"Sending {DETECTOR_LABELS.get(det, det).lower()}")
            self.egress[det] = combo
            egress_form.addRow(DETECTOR_LABELS.get(det, det), combo)
        layout.addWidget(box)

    def value(self) -> dict[str, Any]:
        return {**self._policy, "ingress": self.ingress.currentData(), "memory_write": self.memory_write.currentData(),
                "reversible": self.reversible.isChecked(), "memory_read": self.memory_read.currentData(),
                "min_confidence": round(self.min_confidence.value(), 2),
                "egress": {det: combo.currentData() for det, combo in self.egress.items()}}
