"""Mail's tables (plain SQL for SQLite and PostgreSQL) and the helpers that read and write them.

`MAIL_MIGRATION` creates: mail_accounts (settings without secrets, rules as JSON, the review gate),
mail_watermarks (UIDVALIDITY + last UID per mailbox: nothing is fetched twice), mail_messages (what
was kept of each message, UNIQUE by account/mailbox/UIDVALIDITY/UID), mail_actions (what rules asked
for, pending until done, so a dropped connection or a restart loses none), outbox_cards (approve-and-send).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
import uuid
from dataclasses import dataclass
from email.utils import getaddresses
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Engine

from runtime_host import ordinal
from runtime_host.mail.parse import ParsedMail
from runtime_host.mail.rules import RuleMatch

MAIL_MIGRATION: tuple[str, list[str]] = (
    "0005_mail",
    [
        """CREATE TABLE mail_accounts (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, address TEXT NOT NULL,
            imap TEXT NOT NULL, smtp TEXT NOT NULL, rules TEXT NOT NULL DEFAULT '[]',
            review_required BOOLEAN NOT NULL DEFAULT TRUE, paused BOOLEAN NOT NULL DEFAULT FALSE,
            start_at TEXT NOT NULL DEFAULT 'now', created_at DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE mail_watermarks (account_id TEXT NOT NULL, mailbox TEXT NOT NULL, uidvalidity BIGINT NOT NULL,
            last_uid BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (account_id, mailbox))""",
        """CREATE TABLE mail_messages (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, mailbox TEXT NOT NULL,
            uidvalidity BIGINT NOT NULL, uid BIGINT NOT NULL, message_id TEXT NOT NULL DEFAULT '',
            from_addr TEXT NOT NULL, to_addrs TEXT NOT NULL, subject TEXT NOT NULL, sent_date TEXT,
            size BIGINT NOT NULL, body_text TEXT NOT NULL, headers TEXT NOT NULL, attachments TEXT NOT NULL,
            notes TEXT NOT NULL, matches TEXT NOT NULL DEFAULT '[]', received_at DOUBLE PRECISION NOT NULL,
            UNIQUE (account_id, mailbox, uidvalidity, uid))""",
        "CREATE INDEX ix_mail_messages_msgid ON mail_messages (account_id, message_id)",
        "CREATE INDEX ix_mail_messages_received ON mail_messages (account_id, received_at)",
        """CREATE TABLE mail_actions (id TEXT PRIMARY KEY, mail_id TEXT NOT NULL REFERENCES mail_messages(id),
            account_id TEXT NOT NULL, rule_id TEXT NOT NULL, kind TEXT NOT NULL, params TEXT NOT NULL,
            why TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION)""",
        "CREATE INDEX ix_mail_actions_state ON mail_actions (account_id, state, kind)",
        """CREATE TABLE outbox_cards (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, mail_id TEXT,
            from_addr TEXT NOT NULL, to_addrs TEXT NOT NULL, cc_addrs TEXT NOT NULL DEFAULT '',
            subject TEXT NOT NULL, body TEXT NOT NULL, why TEXT NOT NULL, message_id TEXT NOT NULL UNIQUE,
            in_reply_to TEXT, refs TEXT, state TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL, approved_at DOUBLE PRECISION, decided_at DOUBLE PRECISION,
            sent_at DOUBLE PRECISION)""",
        "CREATE INDEX ix_outbox_cards_state ON outbox_cards (account_id, state)",
    ],
)


def tx(bind: Engine | Connection) -> Any:
    """A transaction on an Engine, or the caller's own Connection (the caller commits)."""
    return bind.begin() if isinstance(bind, Engine) else contextlib.nullcontext(bind)


# A draft card remembers the chat whose agent drafted it, to show above that chat's composer after a restart too.
CARD_CONVERSATION_MIGRATION: tuple[str, list[str]] = (
    "0018_card_conversation", ["ALTER TABLE outbox_cards ADD COLUMN conversation_id TEXT"])


# Mail's part of the store's migration 0021 (``runtime_host.store``): each kept mail's place in the order mail was
# kept, which memory reads it by; those kept before are numbered by (received_at, id), the order memory read them in.
MAIL_ORDER: list[str] = [
    "ALTER TABLE mail_messages ADD COLUMN seq BIGINT",
    """UPDATE mail_messages SET seq = r.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY received_at, id) AS n
        FROM mail_messages) AS r WHERE mail_messages.id = r.id""",
    "CREATE UNIQUE INDEX ix_mail_messages_seq ON mail_messages (account_id, seq)",
    "INSERT INTO ordinal (name, last, carried) SELECT 'mail', COALESCE(MAX(seq), 0), COALESCE(MAX(seq), 0) "
    "FROM mail_messages",
]


def create_tables(engine: Engine) -> None:
    """Applies MAIL_MIGRATION, CARD_CONVERSATION_MIGRATION and MAIL_ORDER directly (tests and benchmarks without the
    Store)."""
    with engine.begin() as c:
        for stmt in [*MAIL_MIGRATION[1], *CARD_CONVERSATION_MIGRATION[1], ordinal.ORDINAL_TABLE, *MAIL_ORDER]:
            c.execute(text(stmt))


# ---- accounts ----------------------------------------------------------------------------------

@dataclass
class AccountRow:
    id: str
    person_id: str
    address: str
    imap: dict[str, Any]
    smtp: dict[str, Any]
    rules: list[Any]
    review_required: bool
    paused: bool
    start_at: str
    created_at: float


def add_account(bind: Engine | Connection, *, person_id: str, address: str, imap: dict[str, Any],
                smtp: dict[str, Any], rules: list[Any] | None = None, review_required: bool = True,
                start_at: str = "now") -> AccountRow:
    """Stores an inbox's settings (never its passwords: those go to the vault under the returned id)."""
    from runtime_host.mail.rules import parse_rules

    if start_at not in ("now", "all"):
        raise ValueError("start_at must be 'now' (only mail arriving from now on) or 'all' (the whole mailbox).")
    parse_rules(rules or [])
    row = AccountRow(uuid.uuid4().hex, person_id, address, imap, smtp, rules or [], review_required, False,
                     start_at, time.time())
    with tx(bind) as c:
        c.execute(text("INSERT INTO mail_accounts (id, person_id, address, imap, smtp, rules, review_required, paused, "
                       "start_at, created_at) VALUES (:id, :p, :a, :i, :s, :r, :rr, :pa, :st, :t)"),
                  {"id": row.id, "p": person_id, "a": address, "i": json.dumps(imap), "s": json.dumps(smtp),
                   "r": json.dumps(row.rules), "rr": review_required, "pa": False, "st": start_at, "t": row.created_at})
    return row


def _account(m: Any) -> AccountRow:
    return AccountRow(m["id"], m["person_id"], m["address"], json.loads(m["imap"]), json.loads(m["smtp"]),
                      json.loads(m["rules"]), bool(m["review_required"]), bool(m["paused"]), m["start_at"],
                      float(m["created_at"]))


def list_accounts(bind: Engine | Connection, person_id: str | None = None) -> list[AccountRow]:
    q = "SELECT * FROM mail_accounts" + (" WHERE person_id = :p" if person_id else "") + " ORDER BY created_at"
    with tx(bind) as c:
        return [_account(r._mapping) for r in c.execute(text(q), {"p": person_id})]


def get_account(bind: Engine | Connection, account_id: str) -> AccountRow | None:
    with tx(bind) as c:
        r = c.execute(text("SELECT * FROM mail_accounts WHERE id = :id"), {"id": account_id}).first()
    return _account(r._mapping) if r else None


def message_row_ids(bind: Engine | Connection, account_id: str) -> list[str]:
    """The ids of every kept message of an inbox (memory's items of its mail are keyed by them)."""
    with tx(bind) as c:
        return [str(r[0]) for r in c.execute(text("SELECT id FROM mail_messages WHERE account_id = :a"),
                                             {"a": account_id})]


def delete_account(bind: Engine | Connection, account_id: str) -> bool:
    """Deletes an inbox with what Hearth kept of it (mail, rule actions, cards, watermarks); the mail
    itself stays on the server."""
    ids = {"id": account_id}
    with tx(bind) as c:
        c.execute(text("DELETE FROM mail_actions WHERE account_id = :id"), ids)
        c.execute(text("DELETE FROM mail_messages WHERE account_id = :id"), ids)
        c.execute(text("DELETE FROM mail_watermarks WHERE account_id = :id"), ids)
        c.execute(text("DELETE FROM outbox_cards WHERE account_id = :id"), ids)
        return bool(c.execute(text("DELETE FROM mail_accounts WHERE id = :id"), ids).rowcount)


def set_rules(bind: Engine | Connection, account_id: str, rules: list[Any]) -> None:
    from runtime_host.mail.rules import parse_rules

    parse_rules(rules)
    with tx(bind) as c:
        c.execute(text("UPDATE mail_accounts SET rules = :r WHERE id = :id"), {"r": json.dumps(rules), "id": account_id})


# ---- watermarks and messages -----------------------------------------------------------------

def get_watermark(bind: Engine | Connection, account_id: str, mailbox: str) -> tuple[int, int] | None:
    with tx(bind) as c:
        r = c.execute(text("SELECT uidvalidity, last_uid FROM mail_watermarks WHERE account_id = :a AND mailbox = :m"),
                      {"a": account_id, "m": mailbox}).first()
    return (int(r[0]), int(r[1])) if r else None


def set_watermark(c: Connection, account_id: str, mailbox: str, uidvalidity: int, last_uid: int) -> None:
    c.execute(text("INSERT INTO mail_watermarks (account_id, mailbox, uidvalidity, last_uid, updated_at) "
                   "VALUES (:a, :m, :v, :u, :t) ON CONFLICT (account_id, mailbox) DO UPDATE SET "
                   "uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid, updated_at = excluded.updated_at"),
              {"a": account_id, "m": mailbox, "v": uidvalidity, "u": last_uid, "t": time.time()})


def known_message_ids(bind: Engine | Connection, account_id: str, mailbox: str) -> set[str]:
    with tx(bind) as c:
        return {r[0] for r in c.execute(text("SELECT message_id FROM mail_messages WHERE account_id = :a AND "
                                             "mailbox = :m AND message_id != ''"), {"a": account_id, "m": mailbox})}


def fingerprint(mail: ParsedMail) -> tuple[str, str, str, int]:
    """What tells a mail with no Message-ID from another: sender, subject, date and size (the server's)."""
    return (mail.from_addr, mail.subject, mail.date, int(mail.size))


def known_fingerprints(bind: Engine | Connection, account_id: str, mailbox: str) -> set[tuple[str, str, str, int]]:
    """The fingerprints of the kept mail of ``mailbox`` that has no Message-ID (recognised by them instead)."""
    with tx(bind) as c:
        return {(r[0], r[1], r[2], int(r[3])) for r in c.execute(text(
            "SELECT from_addr, subject, sent_date, size FROM mail_messages WHERE account_id = :a AND mailbox = :m "
            "AND message_id = ''"), {"a": account_id, "m": mailbox})}


@dataclass
class KeptAt:
    """Where a kept mail was when Hearth kept it (or last found it)."""

    id: str
    mailbox: str
    uidvalidity: int
    uid: int


def kept_alike(bind: Engine | Connection, account_id: str, mail: ParsedMail) -> list[KeptAt]:
    """The kept mail that ``mail`` may be under an earlier UID (moved out of the mailbox and back, the server gave it
    a new one), oldest first: the same Message-ID, sender, subject and Date; a mail with no Message-ID, the same
    sender, subject, Date (or none), headers (a delivery's Received lines among them), text and size. Whether it is
    that mail or a second one alike, only the server can tell: the one kept before has left the mailbox or not."""
    if mail.message_id:
        where, args = "message_id = :mid", {"mid": mail.message_id}
    else:
        where = "message_id = '' AND size = :size AND body_text = :body AND headers = :h"
        args = {"size": int(mail.size), "body": mail.text, "h": json.dumps(mail.headers)}
    with tx(bind) as c:
        rows = c.execute(text(
            f"SELECT id, mailbox, uidvalidity, uid FROM mail_messages WHERE account_id = :a AND {where} AND "
            "from_addr = :f AND subject = :s AND COALESCE(sent_date, '') = :d ORDER BY received_at, id"),
            {"a": account_id, "f": mail.from_addr, "s": mail.subject, "d": mail.date or "", **args}).all()
    return [KeptAt(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


NOT_IN_MAILBOX = "The mail was no longer in "  # how an action on a mail that left the mailbox failed (see move_message)


def move_message(c: Connection, mail_id: str, mailbox: str, uidvalidity: int, uid: int) -> bool:
    """Notes that a kept mail is now under ``uid`` (moved out of the mailbox and back): the rules' label and mark-read
    still waiting, or failed because it was away, act on it there. False (nothing changed) if that UID is kept already."""
    if c.execute(text("SELECT 1 FROM mail_messages WHERE account_id = (SELECT account_id FROM mail_messages WHERE "
                      "id = :id) AND mailbox = :m AND uidvalidity = :v AND uid = :u"),
                 {"id": mail_id, "m": mailbox, "v": uidvalidity, "u": uid}).first():
        return False
    c.execute(text("UPDATE mail_messages SET mailbox = :m, uidvalidity = :v, uid = :u WHERE id = :id"),
              {"id": mail_id, "m": mailbox, "v": uidvalidity, "u": uid})
    c.execute(text("UPDATE mail_actions SET state = 'pending', error = NULL, done_at = NULL WHERE mail_id = :id AND "
                   "state = 'failed' AND kind IN ('label', 'mark_read') AND error LIKE :gone"),
              {"id": mail_id, "gone": NOT_IN_MAILBOX + "%"})
    return True


@dataclass
class StoredMail:
    id: str
    account_id: str
    mailbox: str
    uidvalidity: int
    uid: int
    mail: ParsedMail


def record_message(c: Connection, account_id: str, mailbox: str, uidvalidity: int, uid: int, mail: ParsedMail,
                   matches: list[RuleMatch]) -> StoredMail | None:
    """Stores a message, its rule matches and their pending actions, and moves the watermark past it.

    One transaction; None (and nothing written) if this UID was already stored, or the mail was under another UID:
    moved out of the mailbox and back (to Archive and back, say), the server gives it a new UID, and it was kept and
    listed twice. It is the same mail when its Message-ID, sender, subject and Date are; the mailroom tells a mail
    with no Message-ID from another alike first (``kept_alike``: has the one kept before left the mailbox?)."""
    if mail.message_id and c.execute(text(
            "SELECT 1 FROM mail_messages WHERE account_id = :a AND message_id = :mid AND from_addr = :f AND "
            "subject = :s AND COALESCE(sent_date, '') = :d LIMIT 1"),
            {"a": account_id, "mid": mail.message_id, "f": mail.from_addr, "s": mail.subject, "d": mail.date or ""}).first():
        return None
    mail_id = uuid.uuid4().hex
    # Always after the inbox's last kept message, so neither a clock set back (a sync after sleep) nor two mails in
    # one tick of the clock lists new mail before it. Memory does not go by this time: it reads mail in the order it
    # was kept (``seq``), which no clock moves.
    last = c.execute(text("SELECT MAX(received_at) FROM mail_messages WHERE account_id = :a"), {"a": account_id}).scalar()
    now = time.time()
    if last is not None and now <= float(last):
        now = math.nextafter(float(last), math.inf)
    res = c.execute(text(
        "INSERT INTO mail_messages (id, account_id, mailbox, uidvalidity, uid, message_id, from_addr, to_addrs, subject, "
        "sent_date, size, body_text, headers, attachments, notes, matches, received_at, seq) VALUES (:id, :a, :m, :v, "
        ":u, :mid, :f, :to, :s, :d, :size, :body, :h, :att, :n, :mt, :t, :seq) "
        "ON CONFLICT (account_id, mailbox, uidvalidity, uid) DO NOTHING"),
        {"id": mail_id, "a": account_id, "m": mailbox, "v": uidvalidity, "u": uid, "mid": mail.message_id,
         "f": mail.from_addr, "to": json.dumps(mail.to), "s": mail.subject, "d": mail.date, "size": mail.size,
         "body": mail.text, "h": json.dumps(mail.headers), "att": json.dumps([a.__dict__ for a in mail.attachments]),
         "n": json.dumps(mail.notes), "mt": json.dumps([{"rule": m.rule_id, "why": m.explain()} for m in matches]),
         "t": now, "seq": ordinal.next_in_order(c, "mail")})
    if not res.rowcount:
        return None
    for m in matches:
        for a in m.actions:
            c.execute(text("INSERT INTO mail_actions (id, mail_id, account_id, rule_id, kind, params, why, state, "
                           "created_at) VALUES (:id, :mail, :acc, :r, :k, :p, :w, 'pending', :t)"),
                      {"id": uuid.uuid4().hex, "mail": mail_id, "acc": account_id, "r": m.rule_id, "k": a.kind,
                       "p": json.dumps(a.params), "w": m.explain(), "t": now})
    return StoredMail(mail_id, account_id, mailbox, uidvalidity, uid, mail)


def _mail_from_row(m: Any) -> ParsedMail:
    from runtime_host.mail.parse import Attachment

    headers = json.loads(m["headers"])
    froms = getaddresses([m["from_addr"]])
    return ParsedMail(message_id=m["message_id"], subject=m["subject"], from_addr=m["from_addr"],
                      from_email=froms[0][1].lower() if froms else "",
                      to=json.loads(m["to_addrs"]), cc=[], reply_to=(headers.get("reply-to") or [""])[0],
                      date=m["sent_date"], headers=headers, text=m["body_text"],
                      attachments=[Attachment(**a) for a in json.loads(m["attachments"])], size=int(m["size"]),
                      notes=json.loads(m["notes"]))


def get_message(bind: Engine | Connection, mail_id: str) -> StoredMail | None:
    with tx(bind) as c:
        r = c.execute(text("SELECT * FROM mail_messages WHERE id = :id"), {"id": mail_id}).first()
    if r is None:
        return None
    m = r._mapping
    return StoredMail(m["id"], m["account_id"], m["mailbox"], int(m["uidvalidity"]), int(m["uid"]), _mail_from_row(m))


def list_messages(bind: Engine | Connection, account_id: str, after: tuple[float, str] | None = None,
                  limit: int = 500, newest: bool = False) -> list[dict[str, Any]]:
    """Kept messages without their body text, oldest first by (received_at, id); with ``newest``, the latest
    ``limit`` of them, newest first (what an inbox shows as recent). ``after`` (received_at, id) gives the ones
    strictly after it in that order: pages that never skip or repeat a message, however many were stored in one
    instant."""
    ts, key = after if after is not None else (float("-inf"), "")
    order = "received_at DESC, id DESC" if newest else "received_at, id"
    return _listed(bind, f"account_id = :a AND (received_at > :s OR (received_at = :s AND id > :k)) ORDER BY {order}",
                   {"a": account_id, "s": ts, "k": key, "l": limit})


def kept_after(bind: Engine | Connection, account_id: str, after: int | None, limit: int = 500) -> list[dict[str, Any]]:
    """Kept messages (as ``list_messages``) strictly past ``after`` in the order they were kept (``seq``; None: from
    the first), which no clock moves: the memory producer reads them so, and never skips or repeats one."""
    return _listed(bind, "account_id = :a AND seq > :q ORDER BY seq", {"a": account_id, "q": after or 0, "l": limit})


def carried_seq(bind: Engine | Connection, account_id: str, after: tuple[float, str]) -> int:
    """Where a reader that went by (received_at, id) up to ``after`` stands in the order this inbox's mail was kept
    (see ``runtime_host.ordinal.carried_seq``)."""
    with tx(bind) as c:
        return ordinal.carried_seq(c, "mail", after, account_id)


def _listed(bind: Engine | Connection, where: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    with tx(bind) as c:
        rows = c.execute(text("SELECT id, uid, message_id, from_addr, subject, sent_date, size, notes, matches, "
                              f"received_at, seq FROM mail_messages WHERE {where} LIMIT :l"), params).all()
    return [{**dict(r._mapping), "notes": json.loads(r._mapping["notes"]), "matches": json.loads(r._mapping["matches"])}
            for r in rows]


# ---- actions -----------------------------------------------------------------------------------

@dataclass
class ActionRow:
    id: str
    mail_id: str
    account_id: str
    rule_id: str
    kind: str
    params: dict[str, Any]
    why: str
    state: str
    error: str | None
    attempts: int


def pending_actions(bind: Engine | Connection, account_id: str | None = None,
                    kinds: tuple[str, ...] = ("label", "mark_read", "draft", "hand", "notify")) -> list[ActionRow]:
    q = "SELECT * FROM mail_actions WHERE state = 'pending'" + (" AND account_id = :a" if account_id else "")
    with tx(bind) as c:
        rows = c.execute(text(q + " ORDER BY created_at, id"), {"a": account_id}).all()
    out = []
    for r in rows:
        m = r._mapping
        if m["kind"] in kinds:
            out.append(ActionRow(m["id"], m["mail_id"], m["account_id"], m["rule_id"], m["kind"], json.loads(m["params"]),
                                 m["why"], m["state"], m["error"], int(m["attempts"])))
    return out


def finish_action(bind: Engine | Connection, action_id: str, *, ok: bool, error: str | None = None,
                  retry: bool = False) -> None:
    """Marks an action done or failed; with `retry`, a failure leaves it pending for the next pass."""
    state = "done" if ok else ("pending" if retry else "failed")
    with tx(bind) as c:
        c.execute(text("UPDATE mail_actions SET state = :s, error = :e, attempts = attempts + 1, done_at = :t "
                       "WHERE id = :id"),
                  {"s": state, "e": error, "t": time.time() if state != "pending" else None, "id": action_id})


def list_actions(bind: Engine | Connection, mail_id: str) -> list[ActionRow]:
    with tx(bind) as c:
        rows = c.execute(text("SELECT * FROM mail_actions WHERE mail_id = :m ORDER BY created_at, id"),
                         {"m": mail_id}).all()
    return [ActionRow(m["id"], m["mail_id"], m["account_id"], m["rule_id"], m["kind"], json.loads(m["params"]),
                      m["why"], m["state"], m["error"], int(m["attempts"])) for m in (r._mapping for r in rows)]


def failed_action_ids(bind: Engine | Connection, account_id: str) -> set[str]:
    """The ids of the inbox's rule actions that failed (to tell which failed during one check)."""
    with tx(bind) as c:
        return {str(r[0]) for r in c.execute(text(
            "SELECT id FROM mail_actions WHERE account_id = :a AND state = 'failed'"), {"a": account_id})}


def failed_actions(bind: Engine | Connection, account_id: str, *, limit: int = 20,
                   only: set[str] | None = None) -> list[dict[str, Any]]:
    """The inbox's failed rule actions, the latest first, with the subject and sender of their mail (``only``:
    those of these ids)."""
    if only is not None and not only:
        return []
    q = ("SELECT a.id, a.mail_id, a.rule_id, a.kind, a.params, a.why, a.error, a.done_at, m.subject, m.from_addr "
         "FROM mail_actions a LEFT JOIN mail_messages m ON m.id = a.mail_id WHERE a.account_id = :a AND "
         "a.state = 'failed'" + (" AND a.id IN :ids" if only is not None else "") +
         " ORDER BY a.done_at DESC, a.id DESC LIMIT :l")
    stmt = text(q).bindparams(bindparam("ids", expanding=True)) if only is not None else text(q)
    args: dict[str, Any] = {"a": account_id, "l": limit if only is None else len(only)}
    if only is not None:
        args["ids"] = sorted(only)
    with tx(bind) as c:
        rows = c.execute(stmt, args).all()
    return [{**dict(r._mapping), "params": json.loads(r._mapping["params"])} for r in rows]
