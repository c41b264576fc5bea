"""Durable state of the channel layer in pod.db: links, one-time link codes, update offsets, handled
updates, the outbox of answers waiting to be sent, conversations per chat, and approval cards with a
compare-and-set decision.

The SQL is `MIGRATION` ("0006_channels"), written so the lead can append it to the store's
`MIGRATIONS`; until then `ChannelStore.ensure_schema()` applies it itself and records it in
`schema_migrations` under the same name, so it runs exactly once either way.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine

MIGRATION_NAME = "0006_channels"
MIGRATION: tuple[str, list[str]] = (
    MIGRATION_NAME,
    [
        # A chat on a channel linked to one Hearth person, and the agent that chat talks to.
        """CREATE TABLE channel_link (channel TEXT NOT NULL, chat_id BIGINT NOT NULL, user_id BIGINT NOT NULL,
            person_id TEXT NOT NULL, agent TEXT, push_runs BOOLEAN NOT NULL DEFAULT TRUE, linked_at REAL NOT NULL,
            PRIMARY KEY (channel, chat_id))""",
        "CREATE INDEX ix_channel_link_person ON channel_link (person_id, channel)",
        # One-time link codes: only the hash is kept; used_at is set once (compare-and-set).
        """CREATE TABLE channel_link_code (code_hash TEXT PRIMARY KEY, channel TEXT NOT NULL, person_id TEXT NOT NULL,
            created_at REAL NOT NULL, expires_at REAL NOT NULL, used_at REAL, used_by TEXT)""",
        # The next update to ask for (Telegram: getUpdates offset); only ever moves forward.
        "CREATE TABLE channel_offset (channel TEXT PRIMARY KEY, update_offset BIGINT NOT NULL, updated_at REAL NOT NULL)",
        # Updates handled but not yet below the committed offset: a restart skips them instead of answering twice.
        """CREATE TABLE channel_update_done (channel TEXT NOT NULL, update_id BIGINT NOT NULL, handled_at REAL NOT NULL,
            PRIMARY KEY (channel, update_id))""",
        # Messages to send, written in the same transaction that marks their update handled.
        """CREATE TABLE channel_outbox (id TEXT PRIMARY KEY, channel TEXT NOT NULL, chat_id BIGINT NOT NULL,
            part INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL, update_id BIGINT, card_id TEXT,
            created_at REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_try_at REAL NOT NULL DEFAULT 0,
            sent_at REAL, message_id BIGINT, failed TEXT)""",
        "CREATE INDEX ix_channel_outbox_pending ON channel_outbox (channel, sent_at, created_at)",
        # The Pod conversation behind each (chat, agent).
        """CREATE TABLE channel_conversation (conversation_key TEXT NOT NULL, agent TEXT NOT NULL,
            conversation_id TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (conversation_key, agent))""",
        # Approval cards: decided once, wherever the decision is made first.
        """CREATE TABLE card_decision (card_id TEXT PRIMARY KEY, person_id TEXT NOT NULL, kind TEXT NOT NULL,
            title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT 'pending',
            decided_by TEXT, decided_at REAL, created_at REAL NOT NULL)""",
        "CREATE INDEX ix_card_decision_person ON card_decision (person_id, state)",
        # Where each card was shown, so a decision made elsewhere can update the buttons there.
        """CREATE TABLE card_message (card_id TEXT NOT NULL, channel TEXT NOT NULL, chat_id BIGINT NOT NULL,
            message_id BIGINT NOT NULL, PRIMARY KEY (card_id, channel, chat_id))""",
    ],
)

# a run's result pushed to a phone says its conversation: deleting that drops the result while it waits unsent
OUTBOX_CONVERSATION_MIGRATION: tuple[str, list[str]] = (
    "0024_outbox_conversation", ["ALTER TABLE channel_outbox ADD COLUMN conversation_id TEXT"])

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: easy to type from a screen
CODE_LENGTH = 8  # 40 bits; redemption is also rate-limited per account
PENDING, APPROVED, REJECTED = "pending", "approved", "rejected"


def now() -> float:
    return time.time()


class LinkCodeError(Exception):
    """A link code that cannot be used; the message says why, for the person."""


@dataclass(frozen=True)
class ChannelLink:
    channel: str
    chat_id: int
    user_id: int
    person_id: str
    agent: str | None
    push_runs: bool
    linked_at: float


@dataclass(frozen=True)
class Card:
    """An approval card: something an agent wants to do that waits for the person's allow."""

    card_id: str
    person_id: str
    kind: str  # "send" (approve-and-send), "handoff", ...
    title: str
    body: str
    state: str = PENDING
    decided_by: str | None = None
    decided_at: float | None = None
    created_at: float = 0.0

    @property
    def pending(self) -> bool:
        return self.state == PENDING


@dataclass(frozen=True)
class OutboxItem:
    id: str
    channel: str
    chat_id: int
    part: int
    body: dict[str, Any]  # the send call's parameters (text, parse_mode, reply_markup)
    update_id: int | None
    card_id: str | None
    attempts: int
    next_try_at: float


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def format_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}" if len(code) == CODE_LENGTH else code


def _hash_code(channel: str, code: str) -> str:
    return hashlib.sha256(f"{channel}\0{normalize_code(code)}".encode()).hexdigest()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def forget_conversations(conn: Connection, conversation_ids: list[str]) -> None:
    """(In the transaction that deletes these Pod conversations.) Their chats' mappings go, and so do the words
    those chats still hold in the outbox: the answers not sent yet (an update's answers: a deleted conversation's
    reply, a voice note's transcript echoed back) and the text of rows sent or given up before sent rows were
    emptied; a run's result pushed from these conversations (the rows that say one) likewise. Cards and other
    conversations' pushed results waiting for that chat stay queued; other chats are not touched."""
    chats: set[tuple[str, int]] = set()
    for cid in conversation_ids:
        for (key,) in conn.execute(text("SELECT conversation_key FROM channel_conversation WHERE conversation_id = :c"),
                                   {"c": cid}):
            channel, _, chat = str(key).partition(":")
            if chat.lstrip("-").isdigit():
                chats.add((channel, int(chat)))
        conn.execute(text("DELETE FROM channel_conversation WHERE conversation_id = :c"), {"c": cid})
        conn.execute(text("DELETE FROM channel_outbox WHERE conversation_id = :c AND sent_at IS NULL AND failed IS NULL"),
                     {"c": cid})
        conn.execute(text("UPDATE channel_outbox SET body = '' WHERE conversation_id = :c AND body <> ''"), {"c": cid})
    for channel, chat_id in chats:
        args = {"c": channel, "chat": chat_id}
        conn.execute(text("DELETE FROM channel_outbox WHERE channel = :c AND chat_id = :chat AND sent_at IS NULL "
                          "AND failed IS NULL AND update_id IS NOT NULL"), args)
        conn.execute(text("UPDATE channel_outbox SET body = '' WHERE channel = :c AND chat_id = :chat "
                          "AND (sent_at IS NOT NULL OR failed IS NOT NULL) AND body <> ''"), args)


class ChannelStore:
    """All channel reads and writes; each call is one short transaction. Thread-safe as the engine is."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.ensure_schema()

    @classmethod
    def open(cls, url_or_path: str | Path) -> ChannelStore:
        """A store on its own engine (benchmarks, tools); the Pod passes its own engine instead."""
        url = str(url_or_path)
        if "://" not in url:
            url = f"sqlite:///{url}"
        eng = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {})
        if url.startswith("sqlite"):
            event.listen(eng, "connect", _sqlite_pragmas)
        return cls(eng)

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    def ensure_schema(self) -> bool:
        """Applies MIGRATION and OUTBOX_CONVERSATION_MIGRATION unless schema_migrations lists them already. True
        if one ran now."""
        ran = False
        with self._tx() as conn:
            conn.execute(text("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"))
            for name, statements in (MIGRATION, OUTBOX_CONVERSATION_MIGRATION):
                if conn.execute(text("SELECT 1 FROM schema_migrations WHERE name = :n"), {"n": name}).first():
                    continue
                for stmt in statements:
                    conn.execute(text(stmt))
                conn.execute(text("INSERT INTO schema_migrations (name, applied_at) VALUES (:n, :t)"),
                             {"n": name, "t": now()})
                ran = True
        return ran

    # -- one-time link codes
    def create_link_code(self, channel: str, person_id: str, ttl_s: float = 600.0) -> str:
        """A fresh code (shown once in the app); only its hash is stored."""
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        t = now()
        with self._tx() as conn:
            conn.execute(text("DELETE FROM channel_link_code WHERE expires_at < :old"), {"old": t - 86400})
            conn.execute(text("INSERT INTO channel_link_code (code_hash, channel, person_id, created_at, expires_at) "
                              "VALUES (:h, :c, :p, :t, :e)"),
                         {"h": _hash_code(channel, code), "c": channel, "p": person_id, "t": t, "e": t + ttl_s})
        return code

    def redeem_link_code(self, channel: str, code: str, *, chat_id: int, user_id: int,
                         default_agent: str | None = None) -> ChannelLink:
        """Uses a code once and links the chat to the code's person. Raises LinkCodeError otherwise."""
        h = _hash_code(channel, code)
        t = now()
        with self._tx() as conn:
            row = conn.execute(text("SELECT person_id, expires_at, used_at FROM channel_link_code "
                                    "WHERE code_hash = :h AND channel = :c"), {"h": h, "c": channel}).first()
            if row is None:
                raise LinkCodeError("That link code is not valid. Open Hearth → Settings → Channels and create a new one.")
            if row.used_at is not None:
                raise LinkCodeError("That link code was already used. Create a new one in Hearth → Settings → Channels.")
            if row.expires_at < t:
                raise LinkCodeError("That link code has expired. Create a new one in Hearth → Settings → Channels "
                                    "and send it within 10 minutes.")
            res = conn.execute(text("UPDATE channel_link_code SET used_at = :t, used_by = :u "
                                    "WHERE code_hash = :h AND used_at IS NULL AND expires_at >= :t"),
                               {"t": t, "u": f"{chat_id}/{user_id}", "h": h})
            if res.rowcount != 1:  # used by a concurrent redemption
                raise LinkCodeError("That link code was already used. Create a new one in Hearth → Settings → Channels.")
            other = conn.execute(text("SELECT person_id FROM channel_link WHERE channel = :c AND chat_id = :chat"),
                                 {"c": channel, "chat": chat_id}).first()
            if other is not None and other.person_id != row.person_id:
                raise LinkCodeError("This chat is already linked to another Hearth person. Unlink it there first.")
            conn.execute(text("DELETE FROM channel_link WHERE channel = :c AND chat_id = :chat"),
                         {"c": channel, "chat": chat_id})
            conn.execute(text("INSERT INTO channel_link (channel, chat_id, user_id, person_id, agent, push_runs, linked_at) "
                              "VALUES (:c, :chat, :u, :p, :a, :push, :t)"),
                         {"c": channel, "chat": chat_id, "u": user_id, "p": row.person_id, "a": default_agent,
                          "push": True, "t": t})
        link = self.get_link(channel, chat_id)
        assert link is not None
        return link

    # -- links
    @staticmethod
    def _link(row: Any) -> ChannelLink:
        return ChannelLink(row.channel, int(row.chat_id), int(row.user_id), row.person_id, row.agent,
                           bool(row.push_runs), float(row.linked_at))

    def get_link(self, channel: str, chat_id: int) -> ChannelLink | None:
        with self._tx() as conn:
            row = conn.execute(text("SELECT * FROM channel_link WHERE channel = :c AND chat_id = :chat"),
                               {"c": channel, "chat": chat_id}).first()
        return None if row is None else self._link(row)

    def links(self, channel: str | None = None, person_id: str | None = None) -> list[ChannelLink]:
        q = "SELECT * FROM channel_link WHERE 1 = 1"
        args: dict[str, Any] = {}
        if channel is not None:
            q += " AND channel = :c"
            args["c"] = channel
        if person_id is not None:
            q += " AND person_id = :p"
            args["p"] = person_id
        with self._tx() as conn:
            return [self._link(r) for r in conn.execute(text(q + " ORDER BY linked_at"), args)]

    def set_link_agent(self, channel: str, chat_id: int, agent: str) -> None:
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_link SET agent = :a WHERE channel = :c AND chat_id = :chat"),
                         {"a": agent, "c": channel, "chat": chat_id})

    def set_push_runs(self, channel: str, chat_id: int, push: bool) -> None:
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_link SET push_runs = :p WHERE channel = :c AND chat_id = :chat"),
                         {"p": push, "c": channel, "chat": chat_id})

    def unlink(self, channel: str, chat_id: int) -> bool:
        with self._tx() as conn:
            res = conn.execute(text("DELETE FROM channel_link WHERE channel = :c AND chat_id = :chat"),
                               {"c": channel, "chat": chat_id})
            return bool(res.rowcount)

    # -- update offsets and handled updates
    def get_offset(self, channel: str) -> int:
        with self._tx() as conn:
            row = conn.execute(text("SELECT update_offset FROM channel_offset WHERE channel = :c"), {"c": channel}).first()
        return int(row[0]) if row else 0

    def commit_offset(self, channel: str, offset: int) -> None:
        """Moves the offset forward (never back) and forgets handled-update marks below it."""
        t = now()
        with self._tx() as conn:
            res = conn.execute(text("UPDATE channel_offset SET update_offset = :o, updated_at = :t "
                                    "WHERE channel = :c AND update_offset < :o"), {"o": offset, "t": t, "c": channel})
            if res.rowcount == 0:
                conn.execute(text("INSERT INTO channel_offset (channel, update_offset, updated_at) VALUES (:c, :o, :t) "
                                  "ON CONFLICT (channel) DO NOTHING"), {"c": channel, "o": offset, "t": t})
            conn.execute(text("DELETE FROM channel_update_done WHERE channel = :c AND update_id < "
                              "(SELECT update_offset FROM channel_offset WHERE channel = :c)"), {"c": channel})

    def is_handled(self, channel: str, update_id: int) -> bool:
        with self._tx() as conn:
            return conn.execute(text("SELECT 1 FROM channel_update_done WHERE channel = :c AND update_id = :u"),
                                {"c": channel, "u": update_id}).first() is not None

    def finish_update(self, channel: str, update_id: int, chat_id: int | None = None,
                      messages: list[dict[str, Any]] | None = None, card_id: str | None = None) -> list[OutboxItem]:
        """Marks an update handled and queues its answer messages, in one transaction. Returns the queued items."""
        t = now()
        items: list[OutboxItem] = []
        with self._tx() as conn:
            res = conn.execute(text("INSERT INTO channel_update_done (channel, update_id, handled_at) VALUES (:c, :u, :t) "
                                    "ON CONFLICT (channel, update_id) DO NOTHING"), {"c": channel, "u": update_id, "t": t})
            if res.rowcount == 0:
                return []  # handled already (by a previous run): never answer twice
            for part, body in enumerate(messages or []):
                assert chat_id is not None
                items.append(self._queue(conn, channel, chat_id, body, part=part, update_id=update_id,
                                         card_id=card_id, t=t))
        return items

    # -- outbox
    def _queue(self, conn: Connection, channel: str, chat_id: int, body: dict[str, Any], *, part: int,
               update_id: int | None, card_id: str | None, t: float, conversation_id: str | None = None) -> OutboxItem:
        oid = uuid.uuid4().hex
        conn.execute(text("INSERT INTO channel_outbox (id, channel, chat_id, part, body, update_id, card_id, created_at, "
                          "conversation_id) VALUES (:id, :c, :chat, :part, :b, :u, :card, :t, :conv)"),
                     {"id": oid, "c": channel, "chat": chat_id, "part": part, "b": json.dumps(body, ensure_ascii=False),
                      "u": update_id, "card": card_id, "t": t, "conv": conversation_id})
        return OutboxItem(oid, channel, chat_id, part, body, update_id, card_id, 0, 0.0)

    def queue_messages(self, channel: str, chat_id: int, messages: list[dict[str, Any]],
                       card_id: str | None = None, conversation_id: str | None = None) -> list[OutboxItem]:
        """Queues messages not caused by an update (pushed run results, cards); a run's result says its
        conversation (``conversation_id``), whose deletion drops it while unsent (``forget_conversations``)."""
        t = now()
        with self._tx() as conn:
            return [self._queue(conn, channel, chat_id, body, part=i, update_id=None, card_id=card_id, t=t,
                                conversation_id=conversation_id)
                    for i, body in enumerate(messages)]

    def pending_outbox(self, channel: str, *, due_only: bool = True) -> list[OutboxItem]:
        q = "SELECT * FROM channel_outbox WHERE channel = :c AND sent_at IS NULL AND failed IS NULL"
        if due_only:
            q += " AND next_try_at <= :t"
        with self._tx() as conn:
            rows = conn.execute(text(q + " ORDER BY created_at, part"), {"c": channel, "t": now()}).all()
        return [OutboxItem(r.id, r.channel, int(r.chat_id), r.part, json.loads(r.body), r.update_id, r.card_id,
                           r.attempts, r.next_try_at) for r in rows]

    def mark_sent(self, item: OutboxItem, message_id: int | None) -> None:
        """The row stays, marked sent (so it is never sent again), without its words: the conversation keeps them,
        and deleting the conversation must leave them nowhere else."""
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_outbox SET sent_at = :t, message_id = :m, body = '' WHERE id = :id"),
                         {"t": now(), "m": message_id, "id": item.id})
            if item.card_id and message_id is not None:
                conn.execute(text("INSERT INTO card_message (card_id, channel, chat_id, message_id) "
                                  "VALUES (:card, :c, :chat, :m) ON CONFLICT (card_id, channel, chat_id) "
                                  "DO UPDATE SET message_id = :m"),
                             {"card": item.card_id, "c": item.channel, "chat": item.chat_id, "m": message_id})

    def mark_retry(self, item: OutboxItem, delay_s: float) -> None:
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_outbox SET attempts = attempts + 1, next_try_at = :n WHERE id = :id"),
                         {"n": now() + delay_s, "id": item.id})

    def mark_failed(self, item: OutboxItem, reason: str) -> None:
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_outbox SET failed = :r, attempts = attempts + 1, body = '' WHERE id = :id"),
                         {"r": reason, "id": item.id})

    def update_body(self, item: OutboxItem, body: dict[str, Any]) -> None:
        with self._tx() as conn:
            conn.execute(text("UPDATE channel_outbox SET body = :b WHERE id = :id"),
                         {"b": json.dumps(body, ensure_ascii=False), "id": item.id})

    def failed_outbox(self, channel: str) -> list[tuple[int, str]]:
        with self._tx() as conn:
            return [(int(r.chat_id), r.failed) for r in conn.execute(
                text("SELECT chat_id, failed FROM channel_outbox WHERE channel = :c AND failed IS NOT NULL "
                     "ORDER BY created_at"), {"c": channel})]

    def forget_conversations(self, conversation_ids: list[str]) -> None:
        with self._tx() as conn:
            forget_conversations(conn, conversation_ids)

    # -- conversations per chat
    def conversation_for(self, key: str, agent: str) -> str | None:
        with self._tx() as conn:
            row = conn.execute(text("SELECT conversation_id FROM channel_conversation WHERE conversation_key = :k "
                                    "AND agent = :a"), {"k": key, "a": agent}).first()
        return row[0] if row else None

    def set_conversation(self, key: str, agent: str, conversation_id: str) -> None:
        with self._tx() as conn:
            conn.execute(text("DELETE FROM channel_conversation WHERE conversation_key = :k AND agent = :a"),
                         {"k": key, "a": agent})
            conn.execute(text("INSERT INTO channel_conversation (conversation_key, agent, conversation_id, created_at) "
                              "VALUES (:k, :a, :c, :t)"), {"k": key, "a": agent, "c": conversation_id, "t": now()})

    # -- approval cards
    @staticmethod
    def _card(row: Any) -> Card:
        return Card(row.card_id, row.person_id, row.kind, row.title, row.body, row.state, row.decided_by,
                    row.decided_at, row.created_at)

    def open_card(self, person_id: str, kind: str, title: str, body: str = "", card_id: str | None = None) -> Card:
        cid = card_id or uuid.uuid4().hex
        with self._tx() as conn:
            conn.execute(text("INSERT INTO card_decision (card_id, person_id, kind, title, body, state, created_at) "
                              "VALUES (:id, :p, :k, :ti, :b, :s, :t) ON CONFLICT (card_id) DO NOTHING"),
                         {"id": cid, "p": person_id, "k": kind, "ti": title, "b": body, "s": PENDING, "t": now()})
        card = self.get_card(cid)
        assert card is not None
        return card

    def get_card(self, card_id: str) -> Card | None:
        with self._tx() as conn:
            row = conn.execute(text("SELECT * FROM card_decision WHERE card_id = :id"), {"id": card_id}).first()
        return None if row is None else self._card(row)

    def pending_cards(self, person_id: str) -> list[Card]:
        with self._tx() as conn:
            return [self._card(r) for r in conn.execute(
                text("SELECT * FROM card_decision WHERE person_id = :p AND state = :s ORDER BY created_at"),
                {"p": person_id, "s": PENDING})]

    def decide_card(self, card_id: str, approve: bool, decided_by: str) -> bool:
        """Compare-and-set: True only for the one call that moves the card out of pending."""
        with self._tx() as conn:
            res = conn.execute(text("UPDATE card_decision SET state = :s, decided_by = :by, decided_at = :t "
                                    "WHERE card_id = :id AND state = :pending"),
                               {"s": APPROVED if approve else REJECTED, "by": decided_by, "t": now(), "id": card_id,
                                "pending": PENDING})
            return res.rowcount == 1

    def card_messages(self, card_id: str, channel: str) -> list[tuple[int, int]]:
        with self._tx() as conn:
            return [(int(r.chat_id), int(r.message_id)) for r in conn.execute(
                text("SELECT chat_id, message_id FROM card_message WHERE card_id = :id AND channel = :c"),
                {"id": card_id, "c": channel})]
