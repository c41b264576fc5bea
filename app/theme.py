"""Follows the system's light or dark appearance (Qt reports it; Fusion draws both the same way everywhere)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette


def dark_palette() -> QPalette:
    p = QPalette()
    base, text, mid = QColor(36, 36, 40), QColor(230, 230, 230), QColor(52, 52, 58)
    for role, color in ((QPalette.ColorRole.Window, mid), (QPalette.ColorRole.WindowText, text),
                        (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, mid),
                        (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, mid),
                        (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, mid),
                        (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.Highlight, QColor(62, 110, 190)),
                        (QPalette.ColorRole.HighlightedText, QColor(255, 255, 255)),
                        (QPalette.ColorRole.Link, QColor(120, 170, 255)),
                        (QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150))):
        p.setColor(role, color)
    grey = QColor(128, 128, 134)  # disabled buttons and text must look disabled in the dark too
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, grey)
    return p


def apply_theme(app: Any, scheme: Qt.ColorScheme | None = None) -> str:
    """Applies the dark or light palette for `scheme` (default: the system's); returns which."""
    scheme = app.styleHints().colorScheme() if scheme is None else scheme
    app.setStyle("Fusion")
    if scheme == Qt.ColorScheme.Dark:
        app.setPalette(dark_palette())
        return "dark"
    app.setPalette(app.style().standardPalette())
    return "light"


def follow_system(app: Any) -> None:
    apply_theme(app)
    app.styleHints().colorSchemeChanged.connect(lambda scheme: apply_theme(app, scheme))
