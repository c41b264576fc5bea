"""The outbox: every outgoing mail is an approve-and-send card, and an approved card is sent once.

States: pending → approved → sent | failed; pending → rejected. `reject` never sends. `approve`
applies the person's edits and sends over SMTP.

Exactly once, and why this way: a card's Message-ID is chosen when the card is written, long
before any send. `approve` first records the decision (state 'approved', approved_at) in its own
transaction, then talks SMTP, then saves a copy to the Sent mailbox over IMAP, then marks 'sent'.
A second approve of a card that is already 'approved' never sends: if the first attempt is still
within `send_timeout_s` it is "already being sent"; after that (a crash between the SMTP answer
and the mark) the Sent mailbox is searched for the Message-ID. Found: the card becomes 'sent'.
Not found: 'failed' with a note that it may have gone out; only a person's new approve of that
failed card sends again (with the same Message-ID, so receiving systems can spot a duplicate).
SMTP errors before the message data was accepted (refused login or recipient, server down) are
certain failures and say so. Two Pods racing to approve the same card: the conditional UPDATE
lets one win.
"""

from __future__ import annotations

import json
import smtplib
import ssl
import time
import uuid
from dataclasses import asdict, dataclass
from email.message import EmailMessage
from email.utils import formatdate, getaddresses
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from runtime_host.mail.imap import ImapSession, ImapSettings, MailError, check_security
from runtime_host.mail.ledger import StoredMail, tx

STATES = ("pending", "approved", "rejected", "sent", "failed")
EDITABLE = ("to", "cc", "subject", "body")


class OutboxError(MailError):
    """A card action that cannot be done (already sent, rejected, no recipient...); says why."""


class OutboxBusy(OutboxError):
    """The card is being sent right now by this or another Pod."""


@dataclass
class SmtpSettings:
    host: str
    port: int = 465
    username: str = ""
    security: str = "ssl"  # ssl | starttls | none (none only on loopback)
    timeout_s: float = 30.0
    cafile: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Card:
    id: str
    account_id: str
    mail_id: str | None
    from_addr: str
    to: str
    cc: str
    subject: str
    body: str
    why: str
    message_id: str
    in_reply_to: str | None
    refs: str | None
    state: str
    error: str | None
    attempts: int
    created_at: float
    approved_at: float | None
    decided_at: float | None
    sent_at: float | None
    conversation_id: str | None = None  # the chat whose agent drafted it (shown above its composer); a rule's: None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["inbox"] = self.account_id
        return d


def _card(m: Any) -> Card:
    return Card(m["id"], m["account_id"], m["mail_id"], m["from_addr"], m["to_addrs"], m["cc_addrs"], m["subject"],
                m["body"], m["why"], m["message_id"], m["in_reply_to"], m["refs"], m["state"], m["error"],
                int(m["attempts"]), float(m["created_at"]), m["approved_at"], m["decided_at"], m["sent_at"],
                m["conversation_id"])


def _recipients(to: str, cc: str = "") -> list[str]:
    addrs = [a for _, a in getaddresses([to, cc]) if a and "@" in a]
    return addrs


def new_message_id(from_addr: str) -> str:
    domain = (getaddresses([from_addr])[0][1].rpartition("@")[2] if from_addr else "") or "hearth.invalid"
    return f"<hearth.{uuid.uuid4().hex}@{domain}>"


def create_card(bind: Engine | Connection, *, account_id: str, from_addr: str, to: str, subject: str, body: str,
                why: str, cc: str = "", mail_id: str | None = None, in_reply_to: str | None = None,
                refs: str | None = None, card_id: str | None = None, conversation_id: str | None = None) -> Card:
    """Writes a pending card (under ``card_id`` when given; ``conversation_id``: the chat whose agent drafted it).
    Nothing is sent until a person approves it."""
    if not _recipients(to, cc):
        raise OutboxError(f"No valid recipient in {to!r}: add an address like name@example.org.")
    now = time.time()
    card = Card(card_id or uuid.uuid4().hex, account_id, mail_id, from_addr, to, cc, subject, body, why,
                new_message_id(from_addr), in_reply_to, refs, "pending", None, 0, now, None, None, None, conversation_id)
    with tx(bind) as c:
        c.execute(text("INSERT INTO outbox_cards (id, account_id, mail_id, from_addr, to_addrs, cc_addrs, subject, body, "
                       "why, message_id, in_reply_to, refs, state, attempts, created_at, conversation_id) VALUES (:id, "
                       ":a, :mail, :f, :to, :cc, :s, :b, :w, :mid, :irt, :refs, 'pending', 0, :t, :conv)"),
                  {"id": card.id, "a": account_id, "mail": mail_id, "f": from_addr, "to": to, "cc": cc, "s": subject,
                   "b": body, "w": why, "mid": card.message_id, "irt": in_reply_to, "refs": refs, "t": now,
                   "conv": conversation_id})
    return card


def reply_card(bind: Engine | Connection, original: StoredMail, *, from_addr: str, body: str, why: str,
               card_id: str | None = None) -> Card:
    """A pending reply to a kept message: To from Reply-To or From, 'Re:' subject, threading headers."""
    m = original.mail
    to = m.reply_to or m.from_addr
    subject = m.subject if m.subject.lower().startswith("re:") else f"Re: {m.subject}".strip()
    refs = " ".join(x for x in [m.header("references"), m.message_id] if x) or None
    return create_card(bind, account_id=original.account_id, from_addr=from_addr, to=to, subject=subject, body=body,
                       why=why, mail_id=original.id, in_reply_to=m.message_id or None, refs=refs, card_id=card_id)


def get_card(bind: Engine | Connection, card_id: str) -> Card | None:
    with tx(bind) as c:
        r = c.execute(text("SELECT * FROM outbox_cards WHERE id = :id"), {"id": card_id}).first()
    return _card(r._mapping) if r else None


def list_cards(bind: Engine | Connection, account_id: str | None = None, state: str | None = None) -> list[Card]:
    q = "SELECT * FROM outbox_cards WHERE 1 = 1"
    if account_id:
        q += " AND account_id = :a"
    if state:
        q += " AND state = :s"
    with tx(bind) as c:
        return [_card(r._mapping) for r in c.execute(text(q + " ORDER BY created_at, id"), {"a": account_id, "s": state})]


def build_message(card: Card) -> bytes:
    msg = EmailMessage()
    msg["From"] = card.from_addr
    msg["To"] = card.to
    if card.cc:
        msg["Cc"] = card.cc
    msg["Subject"] = card.subject
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = card.message_id
    if card.in_reply_to:
        msg["In-Reply-To"] = card.in_reply_to
    if card.refs:
        msg["References"] = card.refs
    msg["X-Hearth-Card"] = card.id
    msg.set_content(card.body)
    return msg.as_bytes()


class _Uncertain(Exception):
    """SMTP failed after the message data may have been accepted."""


class Outbox:
    """Sends approved cards of one inbox. Blocking: call it from a thread in asyncio hosts."""

    def __init__(self, engine: Engine, *, smtp: SmtpSettings, smtp_password: str | None = None,
                 imap: ImapSettings | None = None, imap_password: str | None = None, save_to_sent: bool = True,
                 send_timeout_s: float = 180.0):
        check_security("SMTP", smtp.host, smtp.security)
        self.engine = engine
        self.smtp = smtp
        self._smtp_password = smtp_password
        self.imap = imap
        self._imap_password = imap_password
        self.save_to_sent = save_to_sent and imap is not None
        self.send_timeout_s = send_timeout_s

    # -- decisions
    def reject(self, card_id: str, reason: str | None = None) -> Card:
        with self.engine.begin() as c:
            res = c.execute(text("UPDATE outbox_cards SET state = 'rejected', decided_at = :t, error = :e "
                                 "WHERE id = :id AND state IN ('pending', 'failed')"),
                            {"t": time.time(), "e": reason, "id": card_id})
        card = self._get(card_id)
        if not res.rowcount and card.state != "rejected":
            raise OutboxError(f"This card is already {card.state}; it can no longer be rejected.")
        return card

    def approve(self, card_id: str, edits: dict[str, str] | None = None) -> Card:
        """Applies edits and sends the card exactly once. Returns the card in its new state
        ('sent', or 'failed' with the reason in `error`)."""
        edits = dict(edits or {})
        bad = set(edits) - set(EDITABLE)
        if bad:
            raise OutboxError(f"Only {', '.join(EDITABLE)} can be edited (not {', '.join(sorted(bad))}).")
        card = self._get(card_id)
        if card.state == "sent":
            return card  # idempotent: approving again does nothing
        if card.state == "rejected":
            raise OutboxError("This card was rejected, so it is never sent. Write a new one if you changed your mind.")
        if card.state == "approved":
            if time.time() - (card.approved_at or 0) < self.send_timeout_s:
                raise OutboxBusy("This card is being sent right now.")
            return self._resolve(card)
        if card.state == "failed" and self._in_sent(card):  # it did go out (the Sent mailbox has its Message-ID)
            self._mark_sent(card.id)
            return self._get(card.id)
        to, cc = edits.get("to", card.to), edits.get("cc", card.cc)
        if not _recipients(to, cc):
            raise OutboxError(f"No valid recipient in {to!r}: add an address like name@example.org.")
        with self.engine.begin() as c:
            res = c.execute(text(
                "UPDATE outbox_cards SET state = 'approved', to_addrs = :to, cc_addrs = :cc, subject = :s, body = :b, "
                "approved_at = :t, decided_at = :t, attempts = attempts + 1, error = NULL "
                "WHERE id = :id AND state = :old"),
                {"to": to, "cc": cc, "s": edits.get("subject", card.subject), "b": edits.get("body", card.body),
                 "t": time.time(), "id": card_id, "old": card.state})
        if not res.rowcount:  # someone else decided in between
            raise OutboxBusy("Another window or Pod decided this card a moment ago; reload it.")
        card = self._get(card_id)
        raw = build_message(card)
        try:
            self._smtp_send(card, raw)
        except _Uncertain as exc:
            return self._resolve(card, reason=str(exc))
        except OutboxError as exc:
            self._set(card_id, "failed", str(exc))
            return self._get(card_id)
        if self.save_to_sent:
            self._save_to_sent(raw)
        self._mark_sent(card_id)
        return self._get(card_id)

    def recover(self) -> list[Card]:
        """Resolves cards left 'approved' by a Pod that stopped mid-send (call at start-up); never sends."""
        out = []
        for card in list_cards(self.engine, state="approved"):
            if time.time() - (card.approved_at or 0) >= self.send_timeout_s:
                out.append(self._resolve(card))
        return out

    # -- steps (separate so a test can stop between them, as a crash would)
    def _smtp_send(self, card: Card, raw: bytes) -> None:
        s = self.smtp
        rcpts = _recipients(card.to, card.cc)
        sender = getaddresses([card.from_addr])[0][1] or card.from_addr
        try:
            if s.security == "ssl":
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout_s,
                                                      context=ssl.create_default_context(cafile=s.cafile))
            else:
                smtp = smtplib.SMTP(s.host, s.port, timeout=s.timeout_s)
                if s.security == "starttls":
                    smtp.starttls(context=ssl.create_default_context(cafile=s.cafile))
        except (OSError, smtplib.SMTPException) as exc:
            raise OutboxError(f"Not sent: cannot reach the mail server {s.host}:{s.port} ({exc}). "
                              "Check the server settings, then approve again.") from exc
        try:
            try:
                smtp.ehlo_or_helo_if_needed()
                if self._smtp_password and s.username:
                    smtp.login(s.username, self._smtp_password)
                code, resp = smtp.mail(sender)
                if code != 250:
                    raise OutboxError(f"Not sent: the server refused the sender {sender} ({code} {resp!r}).")
                refused = {}
                for r in rcpts:
                    code, resp = smtp.rcpt(r)
                    if code not in (250, 251):
                        refused[r] = (code, resp)
                if len(refused) == len(rcpts):
                    raise OutboxError(f"Not sent: the server refused every recipient ({', '.join(refused)}).")
            except smtplib.SMTPAuthenticationError as exc:
                raise OutboxError(f"Not sent: the mail server refused the login for {s.username!r}. Check the "
                                  "password in Settings → Mail, then approve again.") from exc
            except (OSError, smtplib.SMTPException) as exc:
                raise OutboxError(f"Not sent: the mail server failed before the message was handed over ({exc}).") from exc
            try:
                code, resp = smtp.data(raw)
            except smtplib.SMTPDataError as exc:
                raise OutboxError(f"Not sent: the server refused the message ({exc.smtp_code} {exc.smtp_error!r}).") from exc
            except (TimeoutError, OSError, smtplib.SMTPException) as exc:
                raise _Uncertain(f"the connection failed while the message was being handed over ({exc})") from exc
            if code != 250:
                raise OutboxError(f"Not sent: the server refused the message ({code} {resp!r}).")
        finally:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()

    def _imap_session(self) -> ImapSession:
        assert self.imap is not None
        return ImapSession(self.imap, self._imap_password or "").connect()

    def _save_to_sent(self, raw: bytes) -> None:
        """A copy in the Sent mailbox: the person sees it, and a crash before `_mark_sent` can be resolved."""
        assert self.imap is not None
        try:
            sess = self._imap_session()
            try:
                sess.append(self.imap.sent_mailbox, raw)
            finally:
                sess.close()
        except MailError:
            pass  # sent is sent: the card is marked regardless; only crash recovery loses its evidence

    def _mark_sent(self, card_id: str) -> None:
        with self.engine.begin() as c:
            c.execute(text("UPDATE outbox_cards SET state = 'sent', sent_at = :t, error = NULL WHERE id = :id"),
                      {"t": time.time(), "id": card_id})

    def _in_sent(self, card: Card) -> bool | None:
        if self.imap is None:
            return None
        try:
            sess = self._imap_session()
            try:
                return bool(sess.search_header(self.imap.sent_mailbox, "Message-ID", card.message_id))
            finally:
                sess.close()
        except MailError:
            return None

    def _resolve(self, card: Card, reason: str | None = None) -> Card:
        found = self._in_sent(card)
        if found:
            self._mark_sent(card.id)
            return self._get(card.id)
        why = reason or "Hearth stopped while sending this card"
        if found is None:
            note = (f"Not sure it was sent: {why}, and the Sent mailbox could not be checked. Look in your Sent "
                    "folder; approve again only if it is not there.")
        else:
            note = (f"Probably not sent: {why}, and it is not in the Sent mailbox. It was not retried "
                    "automatically; approve again to send it.")
        with self.engine.begin() as c:
            c.execute(text("UPDATE outbox_cards SET state = 'failed', error = :e WHERE id = :id AND state = 'approved'"),
                      {"e": note, "id": card.id})
        return self._get(card.id)

    def _set(self, card_id: str, state: str, error: str | None) -> None:
        with self.engine.begin() as c:
            c.execute(text("UPDATE outbox_cards SET state = :s, error = :e WHERE id = :id"),
                      {"s": state, "e": error, "id": card_id})

    def _get(self, card_id: str) -> Card:
        card = get_card(self.engine, card_id)
        if card is None:
            raise OutboxError(f"No card {card_id!r}.")
        return card


def card_json(card: Card) -> str:
    return json.dumps(card.to_dict())
