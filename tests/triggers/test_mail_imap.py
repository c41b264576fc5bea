"""Polling a real Dovecot on loopback: watermarks, read state, rules, big and odd mail, dropped connections."""

from __future__ import annotations

import base64
import os
import threading
import time
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from runtime_host.mail import ledger
from runtime_host.mail.imap import ImapSession, ImapSettings, MailAuthError, MailConnectionError, MailError
from runtime_host.mail.mailroom import Draft, Mailroom
from runtime_host.mail.outbox import list_cards
from tests.helpers.mailservers import Dovecot, DropProxy, make_mail


def settings(port: int, user: str = "alice") -> ImapSettings:
    return ImapSettings(host="127.0.0.1", port=port, username=user, security="none", timeout_s=10)


def room(engine: Engine, port: int, *, rules: list[Any] | None = None, start_at: str = "all", **kw: Any) -> Mailroom:
    return Mailroom(engine, account_id="acc1", address="alice@example.org", imap=settings(port), password="secret",
                    rules=rules or [], start_at=start_at, reconnect_delays=(0.05,), **kw)


def test_poll_keeps_each_message_once_and_never_marks_read(engine: Engine, dovecot: Dovecot) -> None:
    uids = [dovecot.deliver(make_mail(f"m{i}")) for i in range(3)]
    r = room(engine, dovecot.port)
    try:
        rep = r.poll()
        assert [m.mail.subject for m in rep.new] == ["m0", "m1", "m2"]
        assert ledger.get_watermark(engine, "acc1", "INBOX")[1] == uids[-1]  # type: ignore[index]
        assert r.poll().new == []  # nothing fetched twice
        dovecot.deliver(make_mail("m3"))
        assert [m.mail.subject for m in r.poll().new] == ["m3"]
    finally:
        r.close()
    for uid in uids:
        assert "\\Seen" not in dovecot.flags(uid)  # BODY.PEEK: read state untouched
    # a new Mailroom (a Pod restart) resumes from the stored watermark
    r2 = room(engine, dovecot.port)
    try:
        assert r2.poll().new == []
    finally:
        r2.close()
    with engine.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM mail_messages")).scalar() == 4


def test_first_poll_of_a_new_inbox_starts_now(engine: Engine, dovecot: Dovecot) -> None:
    dovecot.deliver(make_mail("old"))
    r = room(engine, dovecot.port, start_at="now")
    try:
        rep = r.poll()
        assert rep.new == [] and "first poll" in rep.notes[0]
        dovecot.deliver(make_mail("new"))
        assert [m.mail.subject for m in r.poll().new] == ["new"]
    finally:
        r.close()


RULES = [
    {"id": "inv", "name": "Invoices", "when": [{"field": "subject", "op": "contains", "value": "invoice"}],
     "then": [{"action": "label", "keyword": "Invoices"}, {"action": "hand", "agent": "bookkeeper"}]},
    {"id": "read", "name": "Receipts are read", "when": [{"field": "from", "op": "contains", "value": "receipts@"}],
     "then": [{"action": "mark_read"}]},
    {"id": "ask", "name": "Questions get a draft", "when": [{"field": "body", "op": "regex", "value": r"\?\s*$"}],
     "then": [{"action": "draft"}, {"action": "notify"}]},
]


def test_rules_label_mark_read_draft_and_hand(engine: Engine, dovecot: Dovecot) -> None:
    u_inv = dovecot.deliver(make_mail("Your invoice 12", "Pay by Friday."))
    u_rec = dovecot.deliver(make_mail("Receipt", "Thanks.", sender="receipts@shop.example"))
    u_ask = dovecot.deliver(make_mail("Lunch", "Are you free on Tuesday?", sender="Bob <bob@example.org>"))
    u_none = dovecot.deliver(make_mail("Hello", "Nothing to do."))

    def drafter(stored: ledger.StoredMail, action: ledger.ActionRow) -> Draft:
        return Draft(body=f"Thanks for your mail about {stored.mail.subject!r}. I will get back to you.")

    r = room(engine, dovecot.port, rules=RULES, drafter=drafter)
    try:
        rep = r.poll()
    finally:
        r.close()
    assert len(rep.new) == 4
    assert "Invoices" in dovecot.flags(u_inv) and "\\Seen" not in dovecot.flags(u_inv)
    assert "\\Seen" in dovecot.flags(u_rec)  # only because a rule said so
    assert "\\Seen" not in dovecot.flags(u_ask) and "\\Seen" not in dovecot.flags(u_none)
    (card,) = rep.cards
    assert (card.state, card.to, card.subject) == ("pending", "Bob <bob@example.org>", "Re: Lunch")
    assert card.why.startswith("Rule 'Questions get a draft' matched: body regex")
    assert card.in_reply_to and card.in_reply_to.startswith("<")
    assert list_cards(engine, state="pending") == [card]
    left = ledger.pending_actions(engine, "acc1")
    assert sorted(a.kind for a in left) == ["hand", "notify"]  # for the Pod to dispatch
    hand = next(a for a in left if a.kind == "hand")
    assert hand.params == {"agent": "bookkeeper"} and "Invoices" in hand.why
    ledger.finish_action(engine, hand.id, ok=True)
    assert sorted(a.kind for a in ledger.pending_actions(engine, "acc1")) == ["notify"]


def _big_mail(mb: int) -> tuple[bytes, bytes]:
    blob = os.urandom(mb << 20)
    text_part = ("Quarterly report.\r\n" + "Numbers and words. " * 60_000).encode()  # ~1.1 MB of text
    raw = (b"From: Ana <ana@example.org>\r\nTo: alice@example.org\r\nSubject: The big one\r\n"
           b"Message-ID: <big@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=BB\r\n\r\n"
           b"--BB\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text_part + b"\r\n"
           b"--BB\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=data.bin\r\n"
           b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(blob).replace(b"\n", b"\r\n") + b"--BB--\r\n")
    return raw, blob


def test_a_25_mb_mail(engine: Engine, dovecot: Dovecot) -> None:
    raw, blob = _big_mail(18)  # 18 MB binary as base64 plus 1 MB text: about 25 MB on the server
    assert len(raw) > 25_000_000
    uid = dovecot.deliver(raw)
    r = room(engine, dovecot.port)
    try:
        t = time.monotonic()
        (m,) = r.poll().new
        took = time.monotonic() - t
    finally:
        r.close()
    mail = m.mail
    assert mail.size == len(raw)
    assert mail.subject == "The big one"
    assert len(mail.text) == 200_000 and mail.text_truncated and mail.text.startswith("Quarterly report.")
    (att,) = mail.attachments
    assert (att.filename, att.size, att.cut_off) == ("data.bin", len(blob), False)
    assert any("cut to the first 200,000" in n for n in mail.notes)
    assert "\\Seen" not in dovecot.flags(uid)
    with engine.connect() as c:
        stored = c.execute(text("SELECT LENGTH(body_text) FROM mail_messages")).scalar()
    assert stored == 200_000  # the database keeps the capped text, never the 25 MB
    assert took < 15, took


def test_over_the_fetch_cap_only_the_start_is_read(engine: Engine, dovecot: Dovecot) -> None:
    raw, _ = _big_mail(6)
    dovecot.deliver(raw)
    r = room(engine, dovecot.port, fetch_cap=3 << 20)
    try:
        (m,) = r.poll().new
    finally:
        r.close()
    assert m.mail.size == len(raw)
    assert any(f"only the first {3 << 20:,} were read" in n for n in m.mail.notes)
    assert m.mail.attachments and m.mail.attachments[0].cut_off
    assert m.mail.text.startswith("Quarterly report.")


def test_binary_attachment_and_legacy_charsets_through_the_server(engine: Engine, dovecot: Dovecot) -> None:
    blob = bytes(range(256)) * 4000
    dovecot.deliver(b"From: a@example.org\r\nSubject: scan\r\nMIME-Version: 1.0\r\n"
                    b"Content-Type: multipart/mixed; boundary=Q\r\n\r\n--Q\r\nContent-Type: text/plain\r\n\r\nscan\r\n"
                    b"--Q\r\nContent-Type: application/pdf; name=scan.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                    + base64.encodebytes(blob).replace(b"\n", b"\r\n") + b"--Q--\r\n")
    dovecot.deliver(b"From: =?iso-8859-1?q?J=F6rg?= <j@example.de>\r\nSubject: =?iso-8859-1?q?Gr=FC=DFe?=\r\n"
                    b"Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
                    b"Sch\xf6ne Gr\xfc\xdfe, 20\x80\r\n")
    dovecot.deliver("Subject: =?shift_jis?b?{}?=\r\nContent-Type: text/plain; charset=shift_jis\r\n\r\n".format(
        base64.b64encode("お知らせ".encode("shift_jis")).decode()).encode() + "本日は晴天なり".encode("shift_jis"))
    dovecot.deliver(b"Subject: Caf\xe9\r\n\r\nUndeclared caf\xe9 cr\xe8me\r\n")  # raw 8-bit, no charset
    r = room(engine, dovecot.port, rules=[{"id": "k", "when": [{"field": "body", "op": "contains", "value": "grüße"}],
                                           "then": [{"action": "label", "keyword": "Greetings"}]}])
    try:
        scan, de, jp, raw8 = (m.mail for m in r.poll().new)
    finally:
        r.close()
    assert scan.attachments[0].filename == "scan.pdf" and scan.attachments[0].size == len(blob)
    assert (de.from_addr, de.subject, de.text) == ("Jörg <j@example.de>", "Grüße", "Schöne Grüße, 20€")
    assert (jp.subject, jp.text) == ("お知らせ", "本日は晴天なり")
    assert (raw8.subject, raw8.text) == ("Café", "Undeclared café crème")
    assert "Greetings" in dovecot.flags(2)  # the rule saw the decoded text


def test_server_drops_the_connection_mid_fetch(engine: Engine, dovecot: Dovecot) -> None:
    small = [dovecot.deliver(make_mail(f"small {i}")) for i in range(2)]
    raw, _ = _big_mail(2)
    big = dovecot.deliver(raw)
    after = [dovecot.deliver(make_mail(f"after {i}")) for i in range(2)]
    with DropProxy(dovecot.port) as proxy:
        r = room(engine, proxy.port, rules=[{"id": "l", "when": [{"field": "subject", "op": "contains", "value": "a"}],
                                             "then": [{"action": "label", "keyword": "Seen-By-Hearth"}]}])
        try:
            r._connected()  # login and greeting pass the proxy untouched
            proxy.arm(after_bytes=600_000)  # cut inside the 2.8 MB literal of the big message
            rep = r.poll()
        finally:
            r.close()
        assert proxy.drops == 1 and rep.reconnects >= 1 and proxy.connections >= 2
    assert sorted(m.uid for m in rep.new) == small + [big] + after  # nothing lost, nothing twice
    with engine.connect() as c:
        rows = c.execute(text("SELECT uid, COUNT(*) FROM mail_messages GROUP BY uid")).all()
    assert sorted(u for u, n in rows) == small + [big] + after and all(n == 1 for _, n in rows)
    assert all("Seen-By-Hearth" in dovecot.flags(u) for u in small + after)  # actions done after reconnect
    big_mail = next(m for m in rep.new if m.uid == big).mail
    assert big_mail.attachments[0].size == 2 << 20  # the whole message was read on the second try


def test_drop_between_messages_resumes_without_duplicates(engine: Engine, dovecot: Dovecot) -> None:
    uids = [dovecot.deliver(make_mail(f"n{i}", "x" * 50_000)) for i in range(6)]
    with DropProxy(dovecot.port) as proxy:
        r = room(engine, proxy.port)
        try:
            r._connected()
            proxy.arm(after_bytes=160_000)  # during the third or fourth message
            rep = r.poll()
            dovecot.deliver(make_mail("late"))
            rep2 = r.poll()
        finally:
            r.close()
    assert [m.uid for m in rep.new] == uids
    assert [m.mail.subject for m in rep2.new] == ["late"]


def test_a_dead_server_is_an_error_a_person_can_read(engine: Engine, dovecot: Dovecot) -> None:
    with DropProxy(dovecot.port) as proxy:
        r = room(engine, proxy.port, max_reconnects=1)
        r._connected()
        proxy.stop()  # the server goes away and stays away
        with pytest.raises(MailConnectionError, match="the next poll resumes"):
            r.poll()
        r.close()
    bad = Mailroom(engine, account_id="acc1", address="a@x", imap=settings(dovecot.port), password="wrong")
    with pytest.raises(MailAuthError, match="refused the login for 'alice'"):
        bad.poll()
    with pytest.raises(MailError, match="Refusing to send your IMAP password unencrypted"):
        ImapSession(ImapSettings(host="imap.example.com", port=143, username="a", security="none"), "pw")


def test_uidvalidity_change_does_not_replay_old_mail(engine: Engine, dovecot: Dovecot) -> None:
    """Mail kept before the server renumbered is recognised by Message-ID, and one with none (a shop's order mail,
    kept twice before: its rules ran again and memory got it twice) by sender, subject, date and size."""
    for i in range(3):
        dovecot.deliver(make_mail(f"u{i}", message_id=f"<u{i}@example.org>"))
    for subject in ("Your order", "Your order shipped"):
        dovecot.deliver(f"From: shop@example.org\r\nTo: alice@example.org\r\nSubject: {subject}\r\nDate: Mon, 03 "
                        "Jun 2024 09:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nOrchids ship on Monday.\r\n".encode())
    r = room(engine, dovecot.port)
    try:
        assert len(r.poll().new) == 5
        with engine.begin() as c:  # as if the server had rebuilt its index (kept under the old numbering)
            c.execute(text("UPDATE mail_watermarks SET uidvalidity = 1, last_uid = 99"))
            c.execute(text("UPDATE mail_messages SET uidvalidity = 1"))
        dovecot.deliver(make_mail("fresh", message_id="<fresh@example.org>"))
        rep = r.poll()
    finally:
        r.close()
    assert [m.mail.subject for m in rep.new] == ["fresh"]
    assert "renumbered" in rep.notes[0]


def test_idle_wakes_up_on_new_mail(engine: Engine, dovecot: Dovecot) -> None:
    r = room(engine, dovecot.port)
    try:
        r.poll()
        assert "IDLE" in r._connected().capabilities
        t = threading.Timer(0.3, lambda: dovecot.deliver(make_mail("pushed")))
        t.start()
        start = time.monotonic()
        woke = r.idle(timeout_s=10)
        waited = time.monotonic() - start
        t.join()
        assert woke and waited < 5, waited
        assert [m.mail.subject for m in r.poll().new] == ["pushed"]
        assert r.idle(timeout_s=0.3) is False  # nothing new: times out quietly
    finally:
        r.close()
