"""One way to ask before something that cannot be undone: a message box whose default is Cancel; and the
message boxes and prompts of the window, which show their words as written (never as HTML)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QLabel, QLineEdit, QMessageBox, QWidget


def message_box(parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str, detail: str = "") -> QMessageBox:
    """A message box showing ``text`` and ``detail`` word for word: they name conversations, folders, inboxes,
    people and agents, or quote an error, and a QMessageBox would otherwise read them as HTML when they look
    like it (see markdown.plain_label)."""
    box = QMessageBox(parent)
    box.setTextFormat(Qt.TextFormat.PlainText)  # the informative text follows it
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setText(text)
    if detail:
        box.setInformativeText(detail)
    return box


def ask_text(parent: QWidget | None, title: str, label: str, echo: QLineEdit.EchoMode = QLineEdit.EchoMode.Normal,
             text: str = "") -> tuple[str, bool]:
    """QInputDialog.getText whose prompt (e.g. "Passphrase for <a person's name>:") shows as written."""
    dlg = QInputDialog(parent)
    dlg.setWindowTitle(title)
    dlg.setLabelText(label)
    for shown in dlg.findChildren(QLabel):
        shown.setTextFormat(Qt.TextFormat.PlainText)
    dlg.setTextEchoMode(echo)
    dlg.setTextValue(text)
    ok = dlg.exec() == QInputDialog.DialogCode.Accepted
    value = dlg.textValue()
    dlg.deleteLater()
    return (value, True) if ok else ("", False)


def confirm(parent: QWidget | None, title: str, text: str, action: str, detail: str = "") -> bool:
    """Asks "text" with a button named after the action (e.g. "Delete") and Cancel; True only if the
    person chose the action. Cancel is the default, so Enter never destroys anything."""
    return choose(parent, title, text, [action], detail) == action


def choose(parent: QWidget | None, title: str, text: str, actions: list[str], detail: str = "",
           cancel: str = "") -> str | None:
    """``confirm`` with more than one way to go on (e.g. "Delete and forget", "Delete"): the action the person
    chose, or None for Cancel (the default; ``cancel`` names it in words, e.g. "Keep editing")."""
    box = message_box(parent, QMessageBox.Icon.Warning, title, text, detail)
    buttons = {box.addButton(a, QMessageBox.ButtonRole.DestructiveRole): a for a in actions}
    keep = box.addButton(QMessageBox.StandardButton.Cancel)
    if cancel:
        keep.setText(cancel)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.setObjectName("confirm")
    box.exec()
    return buttons.get(box.clickedButton())
