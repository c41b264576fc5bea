"""Guards against a Qt binding that corrupts reference counts (PySide6 6.12.0 on Python 3.11 drops a
reference to None on every void call, so a long session ends in an abort)."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QLabel, QPushButton


def test_void_qt_calls_keep_none_and_bools_alive(qapp) -> None:
    label, button = QLabel(), QPushButton()
    none0, false0 = sys.getrefcount(None), sys.getrefcount(False)
    for _ in range(200):
        label.setText("x")
        button.click()
        button.setChecked(False)
    assert abs(sys.getrefcount(None) - none0) < 50, "this PySide6 build leaks references to None: pin another version"
    assert abs(sys.getrefcount(False) - false0) < 50
