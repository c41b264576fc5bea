"""Approve-and-send cards against a real aiosmtpd (SMTP) and Dovecot (the Sent mailbox)."""

from __future__ import annotations

import email
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from runtime_host.mail import ledger
from runtime_host.mail.imap import ImapSettings
from runtime_host.mail.mailroom import Draft, Mailroom
from runtime_host.mail.outbox import (
    Outbox,
    OutboxBusy,
    OutboxError,
    SmtpSettings,
    create_card,
    get_card,
    list_cards,
)
from tests.helpers.mailservers import Dovecot, SmtpSink, free_port, make_mail


def imap(d: Dovecot) -> ImapSettings:
    return ImapSettings(host="127.0.0.1", port=d.port, username="alice", security="none", timeout_s=10)


def outbox(engine: Engine, sink: SmtpSink, d: Dovecot, **kw: Any) -> Outbox:
    return Outbox(engine, smtp=SmtpSettings(host="127.0.0.1", port=sink.port, security="none"),
                  imap=imap(d), imap_password="secret", **kw)


def new_card(engine: Engine, **kw: Any) -> str:
    fields = {"account_id": "acc1", "from_addr": "Alice <alice@example.org>", "to": "Bob <bob@example.org>",
              "subject": "Re: Lunch", "body": "Tuesday works.", "why": "Rule 'Questions' matched"}
    fields.update(kw)
    return create_card(engine, **fields).id


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing catches it."""


def test_approved_card_is_sent_exactly_once(engine: Engine, smtp_sink: SmtpSink, dovecot: Dovecot) -> None:
    card_id = new_card(engine)
    ob = outbox(engine, smtp_sink, dovecot)
    card = ob.approve(card_id, edits={"body": "Tuesday works. See you at noon."})
    assert card.state == "sent" and card.sent_at
    assert ob.approve(card_id).state == "sent"  # a second click does nothing
    assert ob.approve(card_id, edits={"body": "changed"}).state == "sent"
    (got,) = smtp_sink.messages
    assert got.rcpt_tos == ["bob@example.org"] and got.mail_from == "alice@example.org"
    msg = email.message_from_bytes(got.data)
    assert msg["Message-ID"] == card.message_id and msg["Subject"] == "Re: Lunch"
    assert str(msg.get_payload()).strip() == "Tuesday works. See you at noon."
    assert dovecot.count("Sent") == 1  # a copy in Sent, for the person and for crash recovery
    with pytest.raises(OutboxError, match="already sent"):
        ob.reject(card_id)


def test_rejected_card_is_never_sent(engine: Engine, smtp_sink: SmtpSink, dovecot: Dovecot) -> None:
    card_id = new_card(engine)
    ob = outbox(engine, smtp_sink, dovecot)
    assert ob.reject(card_id, reason="Not now").state == "rejected"
    with pytest.raises(OutboxError, match="rejected, so it is never sent"):
        ob.approve(card_id)
    assert ob.reject(card_id).state == "rejected"
    assert smtp_sink.messages == [] and dovecot.count("Sent") == 0


def test_crash_after_send_before_marking_does_not_resend(engine: Engine, smtp_sink: SmtpSink,
                                                        dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch) -> None:
    card_id = new_card(engine)
    ob = outbox(engine, smtp_sink, dovecot)

    def die(_self: Outbox, _card_id: str) -> None:
        raise Crash()

    monkeypatch.setattr(Outbox, "_mark_sent", die)
    with pytest.raises(Crash):
        ob.approve(card_id)
    monkeypatch.undo()
    assert get_card(engine, card_id).state == "approved"  # type: ignore[union-attr]
    assert len(smtp_sink.messages) == 1
    # the same Pod clicking again right away: still in flight, nothing sent
    with pytest.raises(OutboxBusy):
        outbox(engine, smtp_sink, dovecot).approve(card_id)
    # after a restart: recovery finds the Message-ID in Sent and marks it, without sending
    restarted = outbox(engine, smtp_sink, dovecot, send_timeout_s=0)
    (card,) = restarted.recover()
    assert card.state == "sent"
    assert restarted.approve(card_id).state == "sent"
    assert len(smtp_sink.messages) == 1


def test_crash_before_the_sent_copy_fails_safe(engine: Engine, smtp_sink: SmtpSink, dovecot: Dovecot,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    card_id = new_card(engine)

    def die(_self: Outbox, _raw: bytes) -> None:
        raise Crash()

    monkeypatch.setattr(Outbox, "_save_to_sent", die)
    with pytest.raises(Crash):
        outbox(engine, smtp_sink, dovecot).approve(card_id)
    monkeypatch.undo()
    restarted = outbox(engine, smtp_sink, dovecot, send_timeout_s=0)
    card = restarted.approve(card_id)  # resolves; does not send
    assert card.state == "failed" and "not retried automatically" in (card.error or "")
    assert len(smtp_sink.messages) == 1
    # only the person's explicit new approve sends again (same Message-ID, so receivers can spot it)
    again = restarted.approve(card_id)
    assert again.state == "sent" and len(smtp_sink.messages) == 2
    assert {email.message_from_bytes(m.data)["Message-ID"] for m in smtp_sink.messages} == {card.message_id}


def test_smtp_down_is_a_certain_failure_and_can_be_retried(engine: Engine, smtp_sink: SmtpSink,
                                                          dovecot: Dovecot) -> None:
    card_id = new_card(engine)
    dead = Outbox(engine, smtp=SmtpSettings(host="127.0.0.1", port=free_port(), security="none", timeout_s=3),
                  imap=imap(dovecot), imap_password="secret")
    card = dead.approve(card_id)
    assert card.state == "failed" and card.error and card.error.startswith("Not sent: cannot reach the mail server")
    assert outbox(engine, smtp_sink, dovecot).approve(card_id).state == "sent"
    assert len(smtp_sink.messages) == 1 and get_card(engine, card_id).attempts == 2  # type: ignore[union-attr]


def test_card_errors_for_people(engine: Engine, smtp_sink: SmtpSink, dovecot: Dovecot) -> None:
    with pytest.raises(OutboxError, match="No valid recipient"):
        new_card(engine, to="bob")
    card_id = new_card(engine)
    ob = outbox(engine, smtp_sink, dovecot)
    with pytest.raises(OutboxError, match="Only to, cc, subject, body can be edited"):
        ob.approve(card_id, edits={"from": "mallory@example.org"})
    with pytest.raises(OutboxError, match="No valid recipient"):
        ob.approve(card_id, edits={"to": ""})
    assert smtp_sink.messages == []


def test_mail_to_rule_to_card_to_approved_reply(engine: Engine, smtp_sink: SmtpSink, dovecot: Dovecot) -> None:
    rules = [{"id": "ask", "name": "Questions", "when": [{"field": "subject", "op": "contains", "value": "?"}],
              "then": [{"action": "draft"}]}]

    def drafter(stored: ledger.StoredMail, _a: ledger.ActionRow) -> Draft:
        return Draft(body="Yes, Tuesday at noon.")

    room = Mailroom(engine, account_id="acc1", address="Alice <alice@example.org>", rules=rules, drafter=drafter,
                    start_at="all", imap=imap(dovecot), password="secret")
    dovecot.deliver(make_mail("Lunch on Tuesday?", "Shall we?", sender="Bob <bob@example.org>",
                              message_id="<q1@example.org>"))
    try:
        (card,) = room.poll().cards
        assert room.poll().cards == []  # the mail is not drafted twice
    finally:
        room.close()
    assert list_cards(engine, state="pending") == [card]
    assert smtp_sink.messages == []  # review required: nothing leaves without a person
    sent = outbox(engine, smtp_sink, dovecot).approve(card.id)
    assert sent.state == "sent"
    msg = email.message_from_bytes(smtp_sink.messages[0].data)
    assert (msg["To"], msg["Subject"], msg["In-Reply-To"]) == ("Bob <bob@example.org>", "Re: Lunch on Tuesday?",
                                                               "<q1@example.org>")
