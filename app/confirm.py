"""One way to ask before something that cannot be undone: a message box whose default is Cancel."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget


def confirm(parent: QWidget | None, title: str, text: str, action: str, detail: str = "") -> bool:
    """Asks "text" with a button named after the action (e.g. "Delete") and Cancel; True only if the
    person chose the action. Cancel is the default, so Enter never destroys anything."""
    return choose(parent, title, text, [action], detail) == action


def choose(parent: QWidget | None, title: str, text: str, actions: list[str], detail: str = "",
           cancel: str = "") -> str | None:
    """``confirm`` with more than one way to go on (e.g. "Delete and forget", "Delete"): the action the person
    chose, or None for Cancel (the default; ``cancel`` names it in words, e.g. "Keep editing")."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setText(text)
    if detail:
        box.setInformativeText(detail)
    buttons = {box.addButton(a, QMessageBox.ButtonRole.DestructiveRole): a for a in actions}
    keep = box.addButton(QMessageBox.StandardButton.Cancel)
    if cancel:
        keep.setText(cancel)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.setObjectName("confirm")
    box.exec()
    return buttons.get(box.clickedButton())
