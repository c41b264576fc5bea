"""Approve-and-send cards in the window: edit, approve (sent once over real SMTP), reject (never sent)."""

from __future__ import annotations

import email

import pytest

from app.main_window import MainWindow
from runtime_host.mail.outbox import create_card
from tests.helpers.mailservers import Dovecot, SmtpSink


@pytest.fixture
def inbox(ui_pod):
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    acct = ui_pod.mail.add_account(
        ui_pod.person.id, "alice@example.org",
        imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": s.port, "security": "none"}, password="secret")
    try:
        yield acct, s
    finally:
        s.stop()
        d.stop()


def card(pod, acct, subject: str) -> str:
    c = create_card(pod.store.engine, account_id=acct.id, from_addr=acct.address, to="bob@example.org",
                    subject=subject, body="Tuesday works.", why="Rule 'Lunch' matched")
    pod.emit({"type": "card.created", "person": pod.person.id, "card_id": c.id, "summary": subject})
    return c.id


def test_edit_then_approve_sends_once_and_reject_sends_nothing(qtbot, qloop, ui_pod, inbox) -> None:
    acct, sink = inbox
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    first, second = card(ui_pod, acct, "Lunch"), card(ui_pod, acct, "Dinner")
    assert w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals (2)"
    assert "Waiting for your approval" in w.notices.history[-1][0]
    cw = w.cards.widgets[first]
    cw.body.setPlainText("Tuesday works. See you at noon!")
    cw.approve.click()
    qloop.wait_until(lambda: first not in w.cards.widgets, what="the send")
    assert w.statusBar().currentMessage() == "“Lunch”: sent."
    (got,) = sink.messages
    assert str(email.message_from_bytes(got.data).get_payload()).strip() == "Tuesday works. See you at noon!"
    other = w.cards.widgets[second]
    other.reject.click()
    qloop.wait_until(lambda: second not in w.cards.widgets, what="the rejection")
    assert "nothing was sent" in w.statusBar().currentMessage()
    assert len(sink.messages) == 1
    qloop.wait_until(lambda: w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals", what="the count")
