"""The window asks the first person's name: on a new Hearth's welcome, and when someone is added while they are
still "Me" (before, the person added read "chosen by Me for everyone" in Settings → Models). ✎ next to the person
list renames the person shown, and only them."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QInputDialog

from app.dialogs import SettingsDialog
from app.main_window import MainWindow
from runtime_host.store import UNNAMED


def prompts_answered(answers: list[str | None]) -> list[str]:
    """Answers the next prompts in turn: a text is typed and accepted, None cancels. Returns their labels."""
    seen: list[str] = []
    todo = list(answers)

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QInputDialog):
            QTimer.singleShot(10, answer)
            return
        seen.append(box.labelText())
        given = todo.pop(0)
        if given is None:
            box.reject()
        else:
            box.setTextValue(given)
            box.accept()
        if todo:
            QTimer.singleShot(10, answer)

    QTimer.singleShot(0, answer)
    return seen


def test_adding_a_second_person_asks_the_first_their_name(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    # Carol was added outside the window: "carol" (hers, in another case) is refused in the prompt itself, which
    # asks again; then Bob's name, and no passphrase
    ui_pod.add_person("Carol")
    seen = prompts_answered(["carol", "Alice", "Bob", ""])
    w.open_add_person()
    assert len(seen) == 4 and "Others on this Hearth will see your name" in seen[0], seen
    assert "already a person named 'Carol'" in seen[1] and seen[2] == "Name:", seen
    assert ui_pod.person.name == "Alice" and [w.person_box.itemData(i) for i in range(w.person_box.count())] == [
        "Alice", "Carol", "Bob"]
    assert w.person_box.currentData() == "Alice"
    bob = ui_pod.pod.unlock("Bob")
    dlg = SettingsDialog(bob)
    qtbot.addWidget(dlg)
    assert dlg.models.combos["embedding"].itemText(0).endswith(", chosen by Alice for everyone")

    # named once, adding another asks nothing but their name; ✎ renames the person shown
    seen = prompts_answered(["Dan", ""])
    w.open_add_person()
    assert seen == ["Name:", "Passphrase for Dan (8 characters or more; empty for none):"], seen
    seen = prompts_answered(["Alice Liddell"])
    w.rename_person_button.click()
    assert seen == ["Your name:"] and ui_pod.person.name == "Alice Liddell"
    assert w.person_box.currentData() == "Alice Liddell" and "Alice Liddell" in w.statusBar().currentMessage()


def test_the_welcome_asks_the_new_persons_name(qtbot, qloop, ui_pod) -> None:
    from app.welcome import show_welcome

    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    dlg = show_welcome(w)
    assert dlg.name.isVisibleTo(dlg)
    dlg.name.setText("Me")
    dlg.later.click()
    assert dlg.isVisible() and "has not given a name" in dlg.problem.text() and ui_pod.person.name == UNNAMED
    dlg.name.setText(" Alice ")
    dlg.later.click()
    assert not dlg.isVisible() and ui_pod.person.name == "Alice" and w.person_box.currentData() == "Alice"
    assert not show_welcome(w).name.isVisibleTo(dlg)  # named: the welcome asks no more
