"""Mail: your inboxes (passwords in the keyring), their rules in a form (JSON one toggle away), polling
now, removing an inbox, and what arrived. Sending is never done here: drafts wait in Approvals."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.mail_rules import RulesEditor
from app.markdown import plain_label, rich_label, without_overrides
from runtime_host.store import StoreError


class MailView(QWidget):
    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self._tasks: set[asyncio.Task[Any]] = set()
        self.accounts = QListWidget()
        self.accounts.setAccessibleName("Inboxes")
        self.accounts.currentRowChanged.connect(self._on_account)
        self.rules = RulesEditor()
        self.rules.setAccessibleName("Rules")
        self.remove = QPushButton("Remove inbox…")
        self.remove.setToolTip("Stop watching this inbox and forget its password (your mail stays on the server)")
        self.remove.clicked.connect(self._on_remove)
        self.save_rules = QPushButton("Save rules")
        self.save_rules.clicked.connect(self._on_save_rules)
        self.poll = QPushButton("Check mail now")
        self.poll.clicked.connect(self._on_poll)
        self.recent = QListWidget()
        self.recent.setAccessibleName("Recent mail")
        self.problems = QListWidget()  # the rule actions that failed: which rule, which mail, why, what to do
        self.problems.setAccessibleName("Rule problems")
        self.problems.setWordWrap(True)
        self.problems_title = plain_label("Rule problems (the latest actions your rules could not carry out)")
        top = QHBoxLayout()
        left = QVBoxLayout()
        left.addWidget(plain_label("Inboxes"))
        left.addWidget(self.accounts, 1)
        left.addWidget(self.remove)
        top.addLayout(left, 1)
        right = QVBoxLayout()
        rules_note = plain_label("Rules for this inbox (no model involved: sender, subject, header, body → label, hand "
                                 "to an agent, draft a reply, notify)")
        rules_note.setWordWrap(True)
        right.addWidget(rules_note)
        right.addWidget(self.rules, 3)
        buttons = QHBoxLayout()
        buttons.addWidget(self.poll)
        buttons.addStretch(1)
        buttons.addWidget(self.save_rules)
        right.addLayout(buttons)
        right.addWidget(self.problems_title)
        right.addWidget(self.problems, 1)
        right.addWidget(plain_label("Recent mail"))
        right.addWidget(self.recent, 1)
        top.addLayout(right, 2)

        form = QFormLayout()
        self.address = QLineEdit()
        self.imap_host = QLineEdit()
        self.imap_port = QSpinBox()
        self.imap_port.setRange(1, 65535)
        self.imap_port.setValue(993)
        self.smtp_host = QLineEdit()
        self.smtp_port = QSpinBox()
        self.smtp_port.setRange(1, 65535)
        self.smtp_port.setValue(465)
        self.security = QComboBox()
        for label, value in (("SSL/TLS", "ssl"), ("STARTTLS", "starttls"), ("None (this machine only)", "none")):
            self.security.addItem(label, value)
        self.username = QLineEdit()
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("kept in the OS keyring")
        for label, w in (("Address", self.address), ("IMAP server", self.imap_host), ("IMAP port", self.imap_port),
                         ("SMTP server", self.smtp_host), ("SMTP port", self.smtp_port), ("Security", self.security),
                         ("User name", self.username), ("Password", self.password)):
            w.setAccessibleName(label)
            form.addRow(label, w)
        # unticked, only mail arriving from now on is read: an inbox of years is the person's to hand over, not ours
        self.read_existing = QCheckBox("Also read the mail already in this inbox")
        self.read_existing.setToolTip("Hearth keeps it and your memory learns from it over the next runs (a big "
                                      "inbox takes a while); unticked, only mail arriving from now on is read.")
        form.addRow("", self.read_existing)
        self.add = QPushButton("Add inbox")
        self.add.clicked.connect(self._on_add)
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.add_toggle = QPushButton("Add an inbox…")
        self.add_toggle.setCheckable(True)
        self.add_toggle.toggled.connect(lambda on: self.add_box.setVisible(on or not self.rows))
        left.addWidget(self.add_toggle)
        self.add_box = QWidget()
        add_layout = QVBoxLayout(self.add_box)
        add_layout.setContentsMargins(0, 0, 0, 0)
        add_note = rich_label("<b>Add an inbox</b> — Hearth reads with BODY.PEEK (your mail stays unread) and "
                              "never sends without your approval.")
        add_note.setWordWrap(True)
        add_layout.addWidget(add_note)
        add_layout.addLayout(form)
        add_layout.addWidget(self.add)
        layout = QVBoxLayout(self)
        layout.addLayout(top, 3)
        layout.addWidget(self.add_box)
        layout.addWidget(self.message)
        self.rows: list[Any] = []

    def reset(self) -> None:
        """Wipes what the previous person typed in the inbox form, their password first, and what was said to them;
        setText also wipes the undo history, so Ctrl+Z brings none of it back."""
        for box in (self.address, self.imap_host, self.smtp_host, self.username, self.password):
            box.setText("")
        self.read_existing.setChecked(False)
        self.message.setText("")
        # their inboxes, recent mail and the rules being typed: the next person's are read when the page is shown
        self.rows = []
        self.add_toggle.setChecked(False)
        for lst in (self.accounts, self.recent, self.problems):
            lst.blockSignals(True)
            lst.clear()
            lst.blockSignals(False)
        self._show_problems([])
        self.rules.set_rules([])

    def refresh(self) -> None:
        self.rules.agents = [a["name"] for a in self.pod.list_agents()]
        chosen = self._current()
        self.rows = self.pod.mail.accounts(self.pod.person.id)
        self.accounts.blockSignals(True)
        self.accounts.clear()
        for a in self.rows:
            self.accounts.addItem(f"{a.address} ({a.imap.get('host')})")
        self.accounts.blockSignals(False)
        ids = [a.id for a in self.rows]
        self.add_box.setVisible(self.add_toggle.isChecked() or not self.rows)  # the form while there is no inbox
        for w in (self.rules, self.remove, self.poll, self.save_rules):
            w.setEnabled(bool(self.rows))
        if self.rows:
            self.accounts.setCurrentRow(ids.index(chosen.id) if chosen is not None and chosen.id in ids else 0)
            self._on_account(self.accounts.currentRow())
        else:
            self.rules.set_rules([])
            self.recent.clear()
            self._show_problems([])

    def _current(self) -> Any:
        i = self.accounts.currentRow()
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def _on_account(self, _row: int) -> None:
        acct = self._current()
        if acct is None:
            return
        self.rules.set_rules(acct.rules)
        self.recent.clear()
        for m in self.pod.mail.messages(acct.id, self.pod.person.id, limit=50):  # a stranger's words, as stored
            self.recent.addItem(without_overrides(f"{m.get('from_addr', '')} — {m.get('subject', '')}"))
        self._show_problems(self.pod.mail.rule_problems(acct.id, self.pod.person.id))

    def _show_problems(self, problems: list[dict[str, Any]]) -> None:
        """The list of failed rule actions, shown only while there is one."""
        self.problems.clear()
        for p in problems:
            self.problems.addItem(without_overrides(p["text"]))  # it names the mail's subject and sender
        self.problems.setVisible(bool(problems))
        self.problems_title.setVisible(bool(problems))

    def on_pod_event(self, ev: dict[str, Any]) -> None:
        """A rule action that failed in a check in the background shows in the open inbox's list at once."""
        acct = self._current()
        if ev.get("type") == "mail.rule_failed" and acct is not None and ev.get("account") == acct.address:
            self._show_problems(self.pod.mail.rule_problems(acct.id, self.pod.person.id))  # rules being typed stay

    def _on_save_rules(self) -> None:
        from runtime_host.mail.rules import RuleError

        acct = self._current()
        if acct is None:
            self.message.setText("Add an inbox first; rules belong to an inbox.")
            return
        try:
            rules = self.rules.value()
            self.pod.mail.set_rules(acct.id, self.pod.person.id, rules)  # the next check uses them
        except (RuleError, ValueError, StoreError) as exc:
            self.message.setText(f"Rules not saved: {exc}")
            return
        self.message.setText(f"Saved {len(rules)} rule(s) for {acct.address}; they apply to mail from the next check on.")
        self.refresh()

    def _on_remove(self) -> None:
        from app.confirm import confirm

        acct = self._current()
        if acct is None:
            self.message.setText("Pick an inbox first.")
            return
        if not confirm(self, "Remove inbox", f"Remove the inbox {acct.address}?", "Remove",
                       "Hearth stops checking it and forgets its password, rules, the mail it kept, what your "
                       "memory learned from that mail and any cards not yet approved. Your mail stays on the "
                       "server."):
            self.message.setText("Nothing removed.")
            return

        async def go() -> None:
            try:
                forgotten = await self.pod.mail.remove_account(acct.id, self.pod.person.id)
            except StoreError as exc:
                self.message.setText(f"Not removed: {exc}")
                return
            self.refresh()
            self.message.setText(f"Removed {acct.address}; memory forgot {forgotten} note(s) of its mail. Your mail "
                                 "stays on the server.")

        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_add(self) -> None:
        sec = self.security.currentData()
        user = self.username.text().strip() or self.address.text().strip()
        try:
            self.pod.mail.add_account(
                self.pod.person.id, self.address.text().strip(),
                imap={"host": self.imap_host.text().strip(), "port": self.imap_port.value(), "username": user,
                      "security": sec},
                smtp={"host": self.smtp_host.text().strip(), "port": self.smtp_port.value(), "username": user,
                      "security": sec},
                password=self.password.text(), start_at="all" if self.read_existing.isChecked() else "now")
        except (StoreError, ValueError, TypeError) as exc:
            self.message.setText(f"Not added: {exc}")
            return
        self.password.clear()
        self.read_existing.setChecked(False)
        self.add_toggle.setChecked(False)
        self.refresh()
        self.accounts.setCurrentRow(self.accounts.count() - 1)
        self._on_poll(added=True)  # the first check marks where "new mail" starts

    def _on_poll(self, _checked: bool = False, added: bool = False) -> None:
        acct = self._current()
        if acct is None:
            self.message.setText("Add an inbox first.")
            return
        self.message.setText(f"Checking {acct.address}…")
        self.poll.setEnabled(False)
        prefix = "Inbox added; Hearth checks it every minute. " if added else ""

        async def go() -> None:
            from runtime_host.mail.imap import MailError

            try:
                rep = await self.pod.mail.poll(acct.id)
            except (MailError, StoreError) as exc:
                self.message.setText(f"Could not check {acct.address}: {exc}")
                return
            finally:
                self.poll.setEnabled(True)
            # the first check of an inbox read from now on keeps nothing: said so, not left as "0 new message(s)"
            now_on = " It reads mail arriving from now on; the mail already in the inbox is left alone." if (
                added and acct.start_at == "now") else ""
            self.message.setText(f"{prefix}{len(rep.get('new', []))} new message(s); "
                                 f"{rep.get('dispatched', 0)} handled by rules.{now_on}")
            self._on_account(self.accounts.currentRow())

        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
