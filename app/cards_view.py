"""Approve-and-send cards: what an agent or a rule wants to send, shown in full, editable, and sent
only when the person approves (or dropped when they reject)."""

from __future__ import annotations

import asyncio
import html
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

import unseen
from app.markdown import plain_label, rich_label
from runtime_host.store import StoreError


def direction_label(parts: dict[str, str], then: str = unseen.EDITABLE) -> QLabel:
    """The card's warning about direction characters in ``parts`` (name: words), hidden when there are none."""
    label = plain_label()
    label.setWordWrap(True)
    label.setStyleSheet("color: #c0392b;")
    label.setAccessibleName("Warning")
    say_directions(label, parts, then)
    return label


def say_directions(label: QLabel, parts: dict[str, str], then: str = unseen.EDITABLE) -> None:
    """Shows on ``label`` which of ``parts`` hold direction characters (``unseen.direction_warning``), or hides it
    when none does."""
    label.setText(unseen.direction_warning(parts, then))
    label.setVisible(bool(label.text()))


def drop_card(w: QWidget) -> None:
    """Takes a card off the screen for good. One being sent is only hidden and detached: its send goes on and the
    widget goes once it is done (deleted now, the send would end in a widget that no longer exists)."""
    w.hide()
    task = getattr(w, "_task", None)
    if getattr(w, "sending", False) and task is not None and not task.done():
        task.add_done_callback(lambda _t: w.deleteLater())
    else:
        w.deleteLater()


class CardWidget(QFrame):
    """Signals:
    decided(str, str, str, str): card id, its new state, its subject, the id of the person whose card it is.
    """

    decided = Signal(str, str, str, str)

    def __init__(self, pod: Any, card: dict[str, Any], parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.person = pod.person.id  # whose card: the window may show someone else by the time it is sent
        self.card = card
        self.setFrameShape(QFrame.Shape.StyledPanel)
        # What is sent is shown as it is stored: a direction character a model or a stranger put in it is written
        # out (\u202e), never obeyed (the To, Subject or Body would read otherwise than the mail the person sends).
        shown = unseen.direction_shown
        self.setAccessibleName(f"Card: {shown(card['subject'])}")
        form = QFormLayout()
        self.to = QLineEdit(shown(card["to"]))
        self.subject = QLineEdit(shown(card["subject"]))
        self.body = QPlainTextEdit(shown(card["body"]))
        self.body.setMinimumHeight(120)
        for label, w in (("To", self.to), ("Subject", self.subject), ("Body", self.body)):
            w.setAccessibleName(label)
            form.addRow(label, w)
            w.textChanged.connect(self._on_edited)  # the warning goes once the person deleted every one
        # The why is a model's or a rule's words and the inbox a mail address: shown as written, never as markup (a
        # model's "<!--" hid the safety warning Hearth adds after its words, and the inbox it goes from).
        why = rich_label(f"<b>Why:</b> {html.escape(shown(card['why']))}<br>"
                         f"<i>From {html.escape(shown(card.get('inbox') or card['from_addr']))}</i>")
        why.setWordWrap(True)
        self.direction = direction_label(self._sent())
        self.message = plain_label("")
        self.message.setWordWrap(True)
        self.approve = QPushButton("Approve and send")
        self.reject = QPushButton("Reject")
        self.approve.clicked.connect(self._on_approve)
        self.reject.clicked.connect(self._on_reject)
        buttons = QHBoxLayout()
        buttons.addWidget(self.message, 1)
        buttons.addWidget(self.reject)
        buttons.addWidget(self.approve)
        layout = QVBoxLayout(self)
        layout.addWidget(why)
        layout.addWidget(self.direction)
        layout.addLayout(form)
        layout.addLayout(buttons)
        self._task: asyncio.Task[Any] | None = None
        self.sending = False  # while it is sent or rejected, the list keeps it (it says how it went)
        self.show_state(card)

    def show_state(self, card: dict[str, Any]) -> None:
        """An approved card whose send failed stays here with the reason and a Retry (sent at most once)."""
        self.card = {**self.card, **card}
        failed = self.card.get("state") == "failed"
        self.approve.setText("Retry send" if failed else "Approve and send")
        self.approve.setAccessibleName("Retry send" if failed else "Approve and send")
        if failed:
            self.message.setText(self.card.get("error") or "Not sent.")

    def _sent(self) -> dict[str, str]:
        """What Approve sends now, by the name each part has on the card."""
        edits = self.edits() if hasattr(self, "direction") else {}
        return {name: edits.get(key, self.card[key]) for name, key in (("To", "to"), ("Subject", "subject"),
                                                                        ("Body", "body"))}

    def _on_edited(self, *_args: Any) -> None:
        say_directions(self.direction, self._sent())

    def edits(self) -> dict[str, str]:
        """The parts the person changed, as they will be sent: a direction character the card wrote out (\\u202e) and
        she kept is sent as that character, what she typed as typed; a part left as shown is sent exactly as stored."""
        out = {}
        for key, value in (("to", self.to.text()), ("subject", self.subject.text()), ("body", self.body.toPlainText())):
            if value != unseen.direction_shown(self.card[key]):
                out[key] = unseen.direction_read(self.card[key], value)
        return out

    def _busy(self, busy: bool) -> None:
        self.sending = busy
        self.approve.setEnabled(not busy)
        self.reject.setEnabled(not busy)

    def _on_approve(self) -> None:
        self._decide(True)

    def _on_reject(self) -> None:
        self._decide(False)

    def _decide(self, approve: bool) -> None:
        self._busy(True)
        self.message.setText("Sending…" if approve else "Rejecting…")

        async def go() -> None:
            try:
                if approve:
                    out = await self.pod.mail.approve(self.card["id"], self.pod.person.id, self.edits() or None)
                else:
                    out = await self.pod.mail.reject(self.card["id"], self.pod.person.id)
            except StoreError as exc:
                self.message.setText(str(exc))
                self._busy(False)
                return
            if out["state"] == "failed":
                self.show_state(out)
                self._busy(False)
                return
            self.message.setText({"sent": "Sent.", "rejected": "Rejected: nothing was sent."}.get(out["state"], out["state"]))
            self.sending = False
            self.decided.emit(self.card["id"], out["state"], unseen.direction_shown(self.card["subject"]), self.person)

        self._task = asyncio.ensure_future(go())


class PartnerCardWidget(QFrame):
    """A message an agent wants to send to a partner agent of another company: exact text, approve or reject.

    Signals:
    decided(str, str, str, str): card id, new state, a title, the id of the person whose card it is.
    """

    decided = Signal(str, str, str, str)

    def __init__(self, pod: Any, card: dict[str, Any], parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.person = pod.person.id
        self.card = card
        self.setFrameShape(QFrame.Shape.StyledPanel)
        shown = unseen.direction_shown
        title = rich_label(f"<b>Send to partner {html.escape(shown(card['partner']))}</b> "
                           f"({html.escape(shown(card['endpoint']))}), {card['size']} characters. "
                           "The text goes to another company exactly as shown.")
        title.setWordWrap(True)
        self.direction = direction_label({"message": card["text"]}, unseen.AS_THEY_ARE)  # read-only: not deleted here
        self.text = QPlainTextEdit(shown(card["text"]))
        self.text.setReadOnly(True)
        self.text.setAccessibleName("Message to the partner")
        self.approve = QPushButton("Approve and send")
        self.reject = QPushButton("Reject")
        self.approve.clicked.connect(self._on_approve)
        self.reject.clicked.connect(self._on_reject)
        self.message = plain_label("")
        row = QHBoxLayout()
        row.addWidget(self.message, 1)
        row.addWidget(self.reject)
        row.addWidget(self.approve)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.direction)
        layout.addWidget(self.text)
        layout.addLayout(row)

    def _decide(self, approve: bool) -> None:
        try:
            self.pod.decide_partner_send(self.card["id"], approve)
        except StoreError as exc:
            self.message.setText(str(exc))
            return
        self.decided.emit(self.card["id"], "approved" if approve else "rejected",
                          f"to {unseen.direction_shown(self.card['partner'])}",
                          self.person)

    def _on_approve(self) -> None:
        self._decide(True)

    def _on_reject(self) -> None:
        self._decide(False)


class CardsView(QWidget):
    """Signals:
    count_changed(int): how many cards wait for the person.
    status(str): the outcome of a decision, for the status bar.
    away(str, str, str): person id, title, text: the outcome of a person's decision that came while another person
    was shown, for them alone.
    """

    count_changed = Signal(int)
    status = Signal(str)
    away = Signal(str, str, str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.empty = plain_label("Nothing waits for your approval. Mail an agent drafts, and anything that would "
                                 "leave this machine, shows up here first.")
        self.empty.setWordWrap(True)
        self.inner = QWidget()
        self.list = QVBoxLayout(self.inner)
        self.list.addWidget(self.empty)
        self.list.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.inner)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll)
        self.widgets: dict[str, CardWidget] = {}

    def refresh(self) -> None:
        person = self.pod.person.id
        cards = self.pod.mail.cards(person)  # waiting, and failed sends (with a Retry)
        partner_cards = self.pod.partner_cards()
        ids = {c["id"] for c in cards} | {c["id"] for c in partner_cards}
        for cid in list(self.widgets):
            if self.widgets[cid].person != person:  # another person is shown now: none of the first one's cards
                drop_card(self.widgets.pop(cid))  # stays, not even one being sent (its send goes on, out of sight)
            elif cid not in ids and not getattr(self.widgets[cid], "sending", False):  # goes once it says how it went
                self.widgets.pop(cid).deleteLater()
        for c in cards:
            shown = self.widgets.get(c["id"])
            if isinstance(shown, CardWidget) and (shown.card.get("state"), shown.card.get("error")) != (
                    c["state"], c["error"]):
                shown.show_state(c)
        for c in cards + partner_cards:
            if c["id"] not in self.widgets:
                w = CardWidget(self.pod, c) if "subject" in c else PartnerCardWidget(self.pod, c)
                w.decided.connect(self._on_decided)
                self.widgets[c["id"]] = w  # type: ignore[assignment]
                self.list.insertWidget(self.list.count() - 1, w)
        self.empty.setVisible(not self.widgets)
        self.count_changed.emit(len(self.widgets))

    def _on_decided(self, _card_id: str, state: str, subject: str, person: str) -> None:
        said = f"“{subject}”: " + {"sent": "sent.", "approved": "approved, sending.",
                                   "rejected": "rejected, nothing was sent."}.get(state, state)
        if person != self.pod.person.id:  # how another person's card went is never said to the person shown now
            self.away.emit(person, "Approvals", said)  # but to them, when they are back
            return
        self.status.emit(said)
        self.refresh()
