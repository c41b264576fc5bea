"""The mailroom: polls one inbox, keeps each new message once, runs the rules, carries out the actions.

`poll()` connects (or reuses the connection), reads every UID past the watermark with BODY.PEEK,
and for each message, in one transaction: stores it, its rule matches and their actions, and moves
the watermark. A dropped connection is reconnected and the poll resumes from the watermark, so a
message is never lost and never kept twice. IMAP actions (label, mark_read) run right after and are
retried on the next poll if the connection failed; `draft` runs the drafting function (if one is
given) and writes a pending outbox card; `hand` and `notify` stay pending for the Pod to dispatch.
Blocking: an asyncio host runs `poll` and `idle` with `asyncio.to_thread`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from runtime_host.mail import ledger
from runtime_host.mail.imap import ImapSession, ImapSettings, MailConnectionError, MailError
from runtime_host.mail.outbox import Card, reply_card
from runtime_host.mail.parse import TEXT_CAP_CHARS, ParsedMail, parse_message, unreadable_mail
from runtime_host.mail.rules import RuleSet

log = logging.getLogger("hearth.mail")

FETCH_CAP_BYTES = 40 << 20  # read at most this much of one message; the rest is listed as cut off


@dataclass
class Draft:
    """What a drafting function returns for a `draft` action; `to`/`subject` default to a reply."""

    body: str
    why: str = ""
    to: str | None = None
    subject: str | None = None


Drafter = Callable[[ledger.StoredMail, ledger.ActionRow], Draft]


@dataclass
class PollReport:
    new: list[ledger.StoredMail] = field(default_factory=list)
    cards: list[Card] = field(default_factory=list)
    actions_done: int = 0
    actions_pending: int = 0
    reconnects: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"new": [{"id": m.id, "uid": m.uid, "subject": m.mail.subject, "from": m.mail.from_addr}
                        for m in self.new],
                "cards": [c.id for c in self.cards], "actions_done": self.actions_done,
                "actions_pending": self.actions_pending, "reconnects": self.reconnects, "notes": self.notes}


class Mailroom:
    """One inbox (account id + IMAP settings + password + rules)."""

    def __init__(self, engine: Engine, *, account_id: str, address: str, imap: ImapSettings, password: str,
                 rules: RuleSet | list[Any] | str | None = None, drafter: Drafter | None = None,
                 start_at: str = "now", fetch_cap: int = FETCH_CAP_BYTES, text_cap: int = TEXT_CAP_CHARS,
                 max_reconnects: int = 3, reconnect_delays: tuple[float, ...] = (0.2, 1.0, 3.0)):
        self.engine = engine
        self.account_id = account_id
        self.address = address
        self.settings = imap
        self._password = password
        self.rules = rules if isinstance(rules, RuleSet) else RuleSet(rules or [])
        self.drafter = drafter
        self.start_at = start_at
        self.fetch_cap = fetch_cap
        self.text_cap = text_cap
        self.max_reconnects = max_reconnects
        self.reconnect_delays = reconnect_delays
        self._session: ImapSession | None = None
        self.closed = False  # for good (the inbox removed, or Hearth quitting): a check under way stops

    def close(self) -> None:
        self.closed = True
        if self._session is not None:
            self._session.close()
            self._session = None

    def _stop_if_closed(self) -> None:
        if self.closed:
            raise MailError(f"The check of {self.address} stopped: the inbox was removed (or Hearth is quitting).")

    def _connected(self) -> ImapSession:
        self._stop_if_closed()
        if self._session is None or not self._session.connected:
            self._session = ImapSession(self.settings, self._password).connect()
        return self._session

    # -- polling
    def poll(self) -> PollReport:
        """Fetches and handles every new message; reconnects on a dropped connection."""
        report = PollReport()
        attempt = 0
        while True:
            try:
                self._poll_once(report)
                break
            except MailConnectionError as exc:
                self._stop_if_closed()
                if self._session is not None:
                    self._session.close()
                    self._session = None
                if attempt >= self.max_reconnects:
                    raise MailConnectionError(f"{exc} (gave up after {attempt} reconnects; the next poll resumes "
                                              "where this one stopped)") from exc
                delay = self.reconnect_delays[min(attempt, len(self.reconnect_delays) - 1)]
                attempt += 1
                report.reconnects += 1
                log.info("mail: connection dropped (%s); reconnecting in %.1f s", exc, delay)
                time.sleep(delay)
        self._run_imap_actions(report)
        self._run_drafts(report)
        report.actions_pending = len(ledger.pending_actions(self.engine, self.account_id))
        return report

    def _poll_once(self, report: PollReport) -> None:
        sess = self._connected()
        box = self.settings.mailbox
        uidvalidity, uidnext = sess.select(box)
        wm = ledger.get_watermark(self.engine, self.account_id, box)
        dedupe_ids: set[str] | None = None
        dedupe_prints: set[tuple[str, str, str, int]] = set()
        if wm is None:
            if self.start_at == "now":
                with self.engine.begin() as c:
                    ledger.set_watermark(c, self.account_id, box, uidvalidity, max(uidnext - 1, 0))
                report.notes.append("first poll: only mail arriving from now on will be read")
                return
            last_uid = 0
        elif wm[0] != uidvalidity:
            report.notes.append(f"the server renumbered {box} (UIDVALIDITY {wm[0]} → {uidvalidity}); "
                                "messages already kept are recognised by Message-ID (or, with none, by sender, "
                                "subject, date and size)")
            dedupe_ids = ledger.known_message_ids(self.engine, self.account_id, box)
            dedupe_prints = ledger.known_fingerprints(self.engine, self.account_id, box)
            last_uid = 0
        else:
            last_uid = wm[1]
        uids = sess.uids_after(last_uid)
        if not uids:
            return
        meta = sess.fetch_meta(uids)
        ids = sess.fetch_header_ids(uids) if dedupe_ids is not None else {}
        for uid in uids:
            self._stop_if_closed()
            if uid not in meta:
                continue  # expunged in between
            size, _flags = meta[uid]
            if dedupe_ids is not None and ids.get(uid) and ids[uid] in dedupe_ids:
                with self.engine.begin() as c:
                    ledger.set_watermark(c, self.account_id, box, uidvalidity, uid)
                continue
            partial = size > self.fetch_cap
            try:
                raw = sess.fetch_body(uid, size, cap=self.fetch_cap)
            except MailConnectionError:
                raise
            except MailError as exc:  # deleted on the server while we read: nothing to keep
                report.notes.append(f"UID {uid} skipped: {exc}")
                with self.engine.begin() as c:
                    ledger.set_watermark(c, self.account_id, box, uidvalidity, uid)
                continue
            mail = self._read(uid, raw, size=size, partial=partial)
            if not mail.message_id and ledger.fingerprint(mail) in dedupe_prints:  # kept before the renumbering
                with self.engine.begin() as c:
                    ledger.set_watermark(c, self.account_id, box, uidvalidity, uid)
                continue
            if self._found_again(sess, box, uidvalidity, uid, mail):
                continue
            try:
                matches = self.rules.evaluate(mail)
            except Exception as exc:  # noqa: BLE001 - one mail the rules trip on must not stop the inbox
                log.exception("mail: the rules of %s failed on UID %s; it is kept with no rule applied", self.address,
                              uid)
                mail.notes.append(f"the rules could not be checked against this mail ({type(exc).__name__}), so "
                                  "none acted on it; the error is in Hearth's log")
                matches = []
            self._stop_if_closed()
            with self.engine.begin() as c:
                stored = ledger.record_message(c, self.account_id, box, uidvalidity, uid, mail, matches)
                ledger.set_watermark(c, self.account_id, box, uidvalidity, uid)
            if stored is not None:
                report.new.append(stored)

    def _found_again(self, sess: ImapSession, box: str, uidvalidity: int, uid: int, mail: ParsedMail) -> bool:
        """Whether the mail new under ``uid`` was kept before under another UID: moved out of the mailbox and back
        (to Archive and back), the server gave it a new one. The one kept before that has left the mailbox is it: it
        is now under ``uid``, and the rules' label and mark-read still to do act on it there. A mail with no
        Message-ID whose look-alikes are all still in the mailbox is another mail with the same words (sent twice):
        it is kept as a mail of its own. One with the same Message-ID is kept once, as a copy of it."""
        earlier = ledger.kept_alike(self.engine, self.account_id, mail)
        if not earlier:
            return False
        gone = next((k for k in earlier
                     if k.mailbox != box or k.uidvalidity != uidvalidity or not sess.has_uid(k.uid)), None)
        if gone is None and not mail.message_id:
            return False
        with self.engine.begin() as c:
            if gone is not None:
                ledger.move_message(c, gone.id, box, uidvalidity, uid)
            ledger.set_watermark(c, self.account_id, box, uidvalidity, uid)
        return True

    def _read(self, uid: int, raw: bytes, *, size: int, partial: bool) -> ParsedMail:
        """The message parsed; if parsing fails (a fault in Hearth), kept as it came with a note and logged: one mail
        must never stop the inbox, or the read position would stay before it and every later check fail there."""
        try:
            return parse_message(raw, size=size, partial=partial, text_cap=self.text_cap)
        except Exception as exc:  # noqa: BLE001 - said in the mail's notes and the log
            log.exception("mail: UID %s of %s could not be read; it is kept as it came", uid, self.address)
            return unreadable_mail(raw, size=size, why=f"{type(exc).__name__}: {exc}", text_cap=self.text_cap)

    # -- actions
    def _run_imap_actions(self, report: PollReport) -> None:
        actions = ledger.pending_actions(self.engine, self.account_id, kinds=("label", "mark_read"))
        if not actions:
            return
        try:
            sess = self._connected()
            if sess.selected != self.settings.mailbox:
                sess.select(self.settings.mailbox)
        except MailError as exc:
            report.notes.append(f"rule actions on the server wait for the next poll: {exc}")
            return
        for a in actions:
            stored = ledger.get_message(self.engine, a.mail_id)
            if stored is None or stored.uidvalidity != sess.uidvalidity:
                ledger.finish_action(self.engine, a.id, ok=False,
                                     error="the mailbox was renumbered before this could be done")
                continue
            flag = "\\Seen" if a.kind == "mark_read" else str(a.params["keyword"])
            try:
                if not sess.has_uid(stored.uid):  # the server would set it on nothing, and say OK
                    what = "marked read" if a.kind == "mark_read" else f"labelled {flag!r}"
                    why = (f"{ledger.NOT_IN_MAILBOX}{self.settings.mailbox} (moved or deleted on the server), so "
                           f"{stored.mail.subject!r} was not {what}; it will be if it comes back to "
                           f"{self.settings.mailbox}.")
                    ledger.finish_action(self.engine, a.id, ok=False, error=why)
                    report.notes.append(why)
                    continue
                sess.add_flags(stored.uid, [flag])
            except MailConnectionError as exc:
                report.notes.append(f"rule actions on the server wait for the next poll: {exc}")
                return
            except MailError as exc:
                ledger.finish_action(self.engine, a.id, ok=False, error=str(exc))
                continue
            ledger.finish_action(self.engine, a.id, ok=True)
            report.actions_done += 1

    def _run_drafts(self, report: PollReport) -> None:
        if self.drafter is None:
            return  # drafts wait for the Pod (an agent writes them)
        for a in ledger.pending_actions(self.engine, self.account_id, kinds=("draft",)):
            stored = ledger.get_message(self.engine, a.mail_id)
            if stored is None:
                ledger.finish_action(self.engine, a.id, ok=False, error="the message is gone")
                continue
            try:
                draft = self.drafter(stored, a)
                card = draft_to_card(self.engine, stored, a, draft, from_addr=self.address)
            except Exception as exc:  # noqa: BLE001 - a drafting failure is recorded on the action
                ledger.finish_action(self.engine, a.id, ok=False, error=f"{type(exc).__name__}: {exc}")
                continue
            ledger.finish_action(self.engine, a.id, ok=True)
            report.cards.append(card)
            report.actions_done += 1

    def idle(self, timeout_s: float = 55.0) -> bool:
        """Blocks until the server reports new mail (IDLE) or the timeout passes; True on news."""
        sess = self._connected()
        if sess.selected != self.settings.mailbox:
            sess.select(self.settings.mailbox)
        return sess.idle(timeout_s)


def draft_to_card(engine: Engine, stored: ledger.StoredMail, action: ledger.ActionRow, draft: Draft, *,
                  from_addr: str, card_id: str | None = None) -> Card:
    """Turns a draft for a kept message into a pending approve-and-send card (``card_id``: the card's id)."""
    why = draft.why or action.why
    card = reply_card(engine, stored, from_addr=from_addr, body=draft.body, why=why, card_id=card_id)
    if draft.to or draft.subject:
        from sqlalchemy import text

        with engine.begin() as c:
            c.execute(text("UPDATE outbox_cards SET to_addrs = :to, subject = :s WHERE id = :id"),
                      {"to": draft.to or card.to, "s": draft.subject or card.subject, "id": card.id})
        card.to, card.subject = draft.to or card.to, draft.subject or card.subject
    return card
