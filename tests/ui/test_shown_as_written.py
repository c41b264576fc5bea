"""Words from outside Hearth (a provider's error, a mail's subject, a person's name, a file's name) show in the
window's labels, message boxes and prompts as written: none of them reads its text as HTML when it looks like it
(a QLabel's default), so '<img src=…>' reads no file from disk, '<a href>' makes no link and 'display:none' hides
nothing next to a button."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAccessible, Qt
from PySide6.QtWidgets import QApplication, QInputDialog, QLabel, QMessageBox, QWidget

from app.about import AboutDialog
from app.crash import show_crash_dialog
from app.dialogs import AddAgentDialog, SettingsDialog
from app.main_window import MainWindow
from app.welcome import WelcomeDialog
from app.wiki_view import SourceDialog
from tests.helpers.fake_model import Error, FakeModelServer, Text


class Pipe:
    """A named pipe at a short path, and whether something opened it to read: a label that loads an '<img src=…>'
    naming it does (and, with nobody writing, hangs the window for good). Here a shell answers each reader with an
    empty pipe (from its own process: the window's thread may hold Python's lock while it waits), so the test says
    what happened instead of hanging."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="h", dir="/tmp")
        self.path = os.path.join(self.dir, "p")
        self._log = os.path.join(self.dir, "opened")
        os.mkfifo(self.path)
        self._writer = subprocess.Popen(["sh", "-c", 'while :; do : > "$1"; echo x >> "$2"; done', "sh", self.path,
                                         self._log])

    @property
    def opened(self) -> bool:
        return os.path.exists(self._log)

    def close(self) -> None:
        self._writer.kill()
        self._writer.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


def read(label: QLabel) -> str:
    """What a person (or their screen reader) reads on the label: Qt's own account of its text, as shown."""
    name = label.accessibleName()
    label.setAccessibleName("")  # else the screen reader says the label's name, not its text
    try:
        return QAccessible.queryAccessibleInterface(label).text(QAccessible.Text.Name)
    finally:
        label.setAccessibleName(name)


def guessing(root: QWidget) -> list[str]:
    """The labels under ``root`` that would read their text as HTML if it looked like it. A form's row names (the
    labels QFormLayout makes for addRow("Name", field), buddies of their field) are Hearth's own words: they count
    only if they look like markup."""
    def left_to_guess(label: QLabel) -> bool:
        if label.textFormat() != Qt.TextFormat.AutoText or (not label.text() and not label.pixmap().isNull()):
            return False
        return label.buddy() is None or Qt.mightBeRichText(label.text())

    return [f"{type(label.parent()).__name__}: {label.accessibleName() or label.text()[:60]!r}"
            for label in root.findChildren(QLabel) if left_to_guess(label)]


def test_no_label_in_the_window_or_its_dialogs_guesses_html(qtbot, qloop, ui_pod, home, tmp_path) -> None:
    """Every label of the window (chat, memory, folders, approvals, tasks, schedules, mail, activity, the
    notification bar) and of its dialogs (Settings with all its pages, new and edit agent, About, Welcome, a
    source, the crash report) shows its text as written, or is markup Hearth wrote on purpose (RichText, its
    outside words escaped); none is left to Qt's guess, which reads anything looking like HTML as HTML."""
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.notices.show_message("<b>Mail</b>", "<img src='x'>")
    report = tmp_path / "crash.txt"
    report.write_text("report")
    made: list[QWidget] = [w, SettingsDialog(ui_pod, w), AddAgentDialog(ui_pod, w),
                           AddAgentDialog.for_edit(ui_pod, "helper", w), AboutDialog(home, w), WelcomeDialog(w),
                           SourceDialog("A note", "text", w, about="about"), show_crash_dialog(report, w)]
    labels = sum(len(d.findChildren(QLabel)) for d in made)
    assert labels > 60  # the walk saw the window's and the dialogs' labels
    assert [g for d in made for g in guessing(d)] == []
    rich = [label for d in made for label in d.findChildren(QLabel) if label.textFormat() == Qt.TextFormat.RichText]
    # Hearth's own markup (the title in bold), the notification's words in it as written
    assert w.notices.label in rich and read(w.notices.label) == "<b>Mail</b> — <img src='x'>"


def test_a_providers_error_shows_as_it_wrote_it(qtbot, qloop, ui_pod) -> None:
    """A provider (a broken or hostile server) answers the model-list check with an error whose text is markup: the
    Settings message showed it as HTML, so '<img src=…>' opened a file from disk on the window's thread (a named
    pipe: the window hung) and the person did not read what the server said. It shows word for word."""
    pipe = Pipe()
    server = FakeModelServer().start()
    try:
        said = f'<img src="{pipe.path}"><span style="display:none">hidden</span>'
        server.list_fault = Error(500, said)
        dlg = SettingsDialog(ui_pod)
        qtbot.addWidget(dlg)
        dlg.show()
        page = dlg.providers
        page.name.setText("odd")
        page.base_url.setText(server.base_url)
        qloop.run(page.start_check(save=False))
        QApplication.processEvents()
        page.message.repaint()
        assert "Check failed" in read(page.message) and said in read(page.message), read(page.message)
        assert not pipe.opened, "the window opened the pipe named in the provider's error"
    finally:
        server.stop()
        pipe.close()


def boxes_answered(choice: str) -> list[tuple[list[str], list[str]]]:
    """Answers the next message box or prompt by clicking ``choice``; returns what its labels showed and how (their
    text formats), after the window had painted it."""
    seen: list[tuple[list[str], list[str]]] = []

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox | QInputDialog):
            QTimer.singleShot(10, click)
            return
        box.repaint()
        QApplication.processEvents()
        labels = [label for label in box.findChildren(QLabel) if label.text()]
        seen.append(([read(label) for label in labels], [label.textFormat().name for label in labels]))
        if isinstance(box, QInputDialog):
            box.reject()
            return
        next(b for b in box.buttons() if b.text().replace("&", "") == choice).click()

    QTimer.singleShot(0, click)
    return seen


def test_a_mail_subject_in_the_delete_box_shows_as_written(qtbot, qloop, ui_pod, script) -> None:
    """A stranger's mail, drafted for by a rule, makes a conversation named after its subject: deleting it asked
    'Delete “Draft: <img src=…>”?' in a box that read the subject as HTML, opening the file it named (a pipe hung
    the window) and showing the person something other than what they delete. The box shows the subject as written."""
    from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail

    pipe = Pipe()
    subject = f'<img src="{pipe.path}"><b>Lunch</b>'
    script([Text("Tuesday works.")], repeat_last=True)
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        acct = ui_pod.mail.add_account(
            ui_pod.person.id, "alice@example.org",
            imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
            smtp={"host": "127.0.0.1", "port": s.port, "security": "none"}, password="secret")
        ui_pod.mail.set_rules(acct.id, ui_pod.person.id, [{"id": "all", "name": "All", "when": [
            {"field": "subject", "op": "contains", "value": "Lunch"}], "then": [{"action": "draft", "agent": "helper"}]}])
        qloop.run(ui_pod.mail.poll(acct.id))  # the first check marks where new mail starts
        d.deliver(make_mail(subject, "Are you free?", sender="Eve <eve@example.org>"))
        qloop.run(ui_pod.mail.poll(acct.id))
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.show()

        def drafted() -> tuple[str, str] | None:
            w.refresh_conversations()
            for i in range(w.conversations.topLevelItemCount()):
                top = w.conversations.topLevelItem(i)
                for item in [top, *(top.child(j) for j in range(top.childCount()))]:
                    title = item.data(0, Qt.ItemDataRole.UserRole + 3) or ""
                    if title.startswith("Draft:"):
                        return item.data(0, Qt.ItemDataRole.UserRole), title
            return None

        qloop.wait_until(lambda: drafted() is not None, what="the drafting run's conversation")
        conv_id, title = drafted()
        assert title == f"Draft: {subject}"
        seen = boxes_answered("Cancel")
        w.conversations.delete_requested.emit(conv_id, title)
        qloop.wait_until(lambda: seen, what="the delete box")
        shown, formats = seen[0]
        assert any(f"Delete “Draft: {subject}”" in text for text in shown), shown
        assert set(formats) == {"PlainText"}, formats
        assert not pipe.opened, "the window opened the pipe named in the mail's subject"
    finally:
        s.stop()
        d.stop()
        pipe.close()


def test_a_persons_name_in_the_passphrase_prompt_shows_as_written(qtbot, qloop, ui_pod) -> None:
    """Someone else on the computer adds a person named with markup: switching to them asked for 'Passphrase for
    <name>:' in a prompt that read the name as HTML. The prompt names them as they were typed."""
    pipe = Pipe()
    try:
        name = f'<img src="{pipe.path}">Bob'
        ui_pod.add_person(name, passphrase="correct horse battery")
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.show()
        seen = boxes_answered("Cancel")
        w.person_box.activated.emit(w.person_box.findData(name))  # the person picks them in the list
        qloop.wait_until(lambda: seen, what="the passphrase prompt")
        shown, formats = seen[0]
        assert f"Passphrase for {name}:" in shown and set(formats) == {"PlainText"}, (shown, formats)
        assert not pipe.opened
    finally:
        pipe.close()
