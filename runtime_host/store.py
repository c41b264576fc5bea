"""The Pod's database: SQLModel tables over SQLite (WAL), with named, ordered migrations.

Migrations are plain SQL recorded in `schema_migrations` and applied once, in order; the SQLModel
classes below map onto the tables they create. Ids are text (uuid4 hex), times are epoch seconds.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
import unicodedata
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, event, func, text
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, create_engine, select

from runtime_host.ordinal import ORDINAL_TABLE, carried_seq, next_in_order
from vault import redact  # every text a turn, step, message or audit row keeps passes the key redactor


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> float:
    return time.time()


# ---- tables ------------------------------------------------------------------------------------


class PodMeta(SQLModel, table=True):
    __tablename__ = "pod_meta"
    key: str = Field(primary_key=True)
    value: str


def same_name(a: str, b: str) -> bool:
    """Whether two people's names look the same: equal once their letters are composed one way (NFC) and their case
    folded ("Zoë" as one letter or two, "ZOË")."""
    return unicodedata.normalize("NFC", a).casefold() == unicodedata.normalize("NFC", b).casefold()


class Person(SQLModel, table=True):
    __tablename__ = "person"
    id: str = Field(primary_key=True, default_factory=new_id)
    name: str
    passphrase_hash: str | None = None  # scrypt, "scrypt$n$r$p$salt$hash"; None = no passphrase
    created_at: float = Field(default_factory=now)
    # When their removal began (runtime_host/removal.py): from then on they cannot log in, and nothing of theirs
    # runs; a removal cut short (a kill) is finished by running it again, or by the next start.
    removing_at: float | None = None


class Provider(SQLModel, table=True):
    """One person's model provider: its address here, its key in that person's vault."""

    __tablename__ = "provider"
    id: str = Field(primary_key=True, default_factory=new_id)
    person_id: str
    name: str
    kind: str
    base_url: str
    model: str = ""
    has_key: bool = False
    created_at: float = Field(default_factory=now)


class AgentProfile(SQLModel, table=True):
    __tablename__ = "agent_profile"
    id: str = Field(primary_key=True, default_factory=new_id)
    name: str
    role: str = ""
    system_prompt: str = ""
    provider: str | None = None
    model: str | None = None
    toolkits: str = '["clock", "math"]'
    template: str | None = None
    fallbacks: str = "[]"  # JSON list of "provider" or "provider/model", tried in order after the primary
    allowlist: str | None = None  # JSON {toolkit: [actions]}: what this agent may call, fixed when set
    safety: str | None = None  # JSON: the agent's safety policy per phase (runtime_host.safety.policy.Policy)
    created_at: float = Field(default_factory=now)


class AgentInstance(SQLModel, table=True):
    __tablename__ = "agent_instance"
    id: str = Field(primary_key=True, default_factory=new_id)
    profile_id: str = Field(foreign_key="agent_profile.id")
    person_id: str = Field(foreign_key="person.id")
    name: str
    created_at: float = Field(default_factory=now)


class Conversation(SQLModel, table=True):
    __tablename__ = "conversation"
    id: str = Field(primary_key=True, default_factory=new_id)
    instance_id: str = Field(foreign_key="agent_instance.id")
    title: str = ""
    # How it came by its title: TITLE_GIVEN (the person's, or Hearth's for a run it started), else made from its
    # person's first message (``made_title``), made again when that message is edited: TITLE_MADE, TITLE_MADE_BRANCH.
    title_auto: int = 0
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)


class Message(SQLModel, table=True):
    __tablename__ = "message"
    id: str = Field(primary_key=True, default_factory=new_id)
    conversation_id: str = Field(foreign_key="conversation.id")
    turn_id: str | None = None
    role: str
    content: str
    created_at: float = Field(default_factory=now)
    # A branch's copy of another conversation's message (its id): the person said it once, where memory took it.
    copied_from: str | None = None
    # Its place in the order messages were written (``next_in_order``, given as it is inserted): memory reads chat
    # past where it stopped in this order, which no clock moves (``created_at`` is the machine's clock, which may
    # have run ahead).
    seq: int | None = None


@event.listens_for(Message, "before_insert")
def _numbered(_mapper: Any, conn: Any, message: Message) -> None:
    if message.seq is None:
        message.seq = next_in_order(conn, "message")


# Turns Hearth started (a task in the background, a schedule, incoming mail, a hand-off between agents): their
# prompts are Hearth's own words, not the person's; "chat" (and "telegram") turns are the person's.
HEARTH_ORIGINS = ("background", "schedule", "mail", "handoff")


class Turn(SQLModel, table=True):
    __tablename__ = "turn"
    id: str = Field(primary_key=True, default_factory=new_id)
    conversation_id: str = Field(foreign_key="conversation.id")
    instance_id: str = Field(foreign_key="agent_instance.id")
    status: str = "pending"  # pending, running, done, failed, cancelled
    error: str | None = None
    error_kind: str | None = None
    model: str | None = None
    iterations: int = 0
    restarts: int = 0
    origin: str = "chat"  # chat, background, schedule, mail, handoff
    lease_owner: str | None = None
    lease_until: float | None = None
    created_at: float = Field(default_factory=now)
    started_at: float | None = None
    finished_at: float | None = None


class TurnStep(SQLModel, table=True):
    __tablename__ = "turn_step"
    id: str = Field(primary_key=True)
    turn_id: str = Field(foreign_key="turn.id")
    parent_id: str | None = None
    seq: int = 0
    kind: str  # model, tool, subagent
    name: str
    call_id: str | None = None
    arguments: str | None = None  # JSON
    result: str | None = None  # JSON
    status: str = "started"  # started, finished, failed, interrupted
    started_at: float = Field(default_factory=now)
    finished_at: float | None = None


class RoleModel(SQLModel, table=True):
    """Which model does one kind of work (extraction, embedding, speech-to-text, ...) for a person."""

    __tablename__ = "role_model"
    person_id: str = Field(primary_key=True)
    role: str = Field(primary_key=True)
    provider: str
    model: str = ""


class WorkerStatus(SQLModel, table=True):
    """The last known state of each agent's worker, so every process (app, CLI) can show it."""

    __tablename__ = "worker_status"
    instance_id: str = Field(primary_key=True)
    state: str
    pid: int | None = None
    host: str | None = None
    rss: int = 0
    started_at: float | None = None
    restarts: int = 0
    reason: str | None = None
    updated_at: float = Field(default_factory=now)


class MappingCheck(SQLModel, table=True):
    """A reversible redaction's mapping (its real value in the person's vault) that a forget may have left unused:
    written before the forget deletes anything, cleared once the vault was told; one left over (the process was
    killed, the keyring locked) is checked again at the next memory producer run."""

    __tablename__ = "mapping_check"
    person_id: str = Field(primary_key=True)
    mapping_id: str = Field(primary_key=True)


class KeptNotice(SQLModel, table=True):
    """A notification meant for a person while someone else was shown in the window (a mail rule's "Notify me",
    a failed memory run, how their send went): kept until that person is shown (the newest KEPT_NOTICES each),
    so a quit in between does not lose it."""

    __tablename__ = "kept_notice"
    id: str = Field(primary_key=True, default_factory=new_id)
    person_id: str = Field(index=True)
    title: str
    text: str
    created_at: float = Field(default_factory=now)
    conversation_id: str | None = None  # the conversation it is of (a run's answer): deleted with it


KEPT_NOTICES = 50  # notifications kept for each person not shown: the newest


class KeptCorrection(SQLModel, table=True):
    """A wiki correction memory did not save while someone else was shown (app/wiki_view.py), kept until its owner
    is shown, across a quit (the newest KEPT_CORRECTIONS each). ``sealed`` is the correction encrypted with a key
    in the owner's vault (runtime_host/keptcorrections.py): pod.db holds no word of what they typed."""

    __tablename__ = "kept_correction"
    id: str = Field(primary_key=True, default_factory=new_id)
    person_id: str = Field(index=True)
    sealed: str
    created_at: float = Field(default_factory=now)


KEPT_CORRECTIONS = 5  # wiki corrections kept for each person not shown: the newest


# ---- migrations --------------------------------------------------------------------------------

# A step is SQL, or a function given the migration's connection (work SQL cannot do, as ``_titles_made_again``).
MIGRATIONS: list[tuple[str, list[Any]]] = [
    (
        "0001_initial",
        [
            "CREATE TABLE pod_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE person (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
            """CREATE TABLE provider (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
                base_url TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', has_key BOOLEAN NOT NULL DEFAULT FALSE,
                created_at DOUBLE PRECISION NOT NULL)""",
            """CREATE TABLE agent_profile (id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL DEFAULT '',
                system_prompt TEXT NOT NULL DEFAULT '', provider TEXT, model TEXT,
                toolkits TEXT NOT NULL DEFAULT '[]', created_at DOUBLE PRECISION NOT NULL)""",
            """CREATE TABLE agent_instance (id TEXT PRIMARY KEY, profile_id TEXT NOT NULL REFERENCES agent_profile(id),
                person_id TEXT NOT NULL REFERENCES person(id), name TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                UNIQUE (person_id, name))""",
            """CREATE TABLE conversation (id TEXT PRIMARY KEY, instance_id TEXT NOT NULL REFERENCES agent_instance(id),
                title TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)""",
            "CREATE INDEX ix_conversation_instance ON conversation (instance_id, updated_at)",
            """CREATE TABLE message (id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL REFERENCES conversation(id),
                turn_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)""",
            "CREATE INDEX ix_message_conversation ON message (conversation_id, created_at)",
            """CREATE TABLE turn (id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL REFERENCES conversation(id),
                instance_id TEXT NOT NULL REFERENCES agent_instance(id), status TEXT NOT NULL, error TEXT,
                error_kind TEXT, model TEXT, iterations INTEGER NOT NULL DEFAULT 0,
                restarts INTEGER NOT NULL DEFAULT 0, created_at DOUBLE PRECISION NOT NULL, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION)""",
            "CREATE INDEX ix_turn_conversation ON turn (conversation_id, created_at)",
            """CREATE TABLE turn_step (id TEXT PRIMARY KEY, turn_id TEXT NOT NULL REFERENCES turn(id), parent_id TEXT,
                seq INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, call_id TEXT, arguments TEXT,
                result TEXT, status TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION)""",
            "CREATE INDEX ix_step_turn ON turn_step (turn_id, seq)",
        ],
    ),
    (
        "0002_runs_leases_workers",
        [
            "ALTER TABLE turn ADD COLUMN origin TEXT NOT NULL DEFAULT 'chat'",
            "ALTER TABLE turn ADD COLUMN lease_owner TEXT",
            "ALTER TABLE turn ADD COLUMN lease_until DOUBLE PRECISION",
            "CREATE INDEX ix_turn_status ON turn (status, origin)",
            "ALTER TABLE agent_profile ADD COLUMN template TEXT",
            """CREATE TABLE worker_status (instance_id TEXT PRIMARY KEY, state TEXT NOT NULL, pid INTEGER, host TEXT,
                rss INTEGER NOT NULL DEFAULT 0, started_at DOUBLE PRECISION, restarts INTEGER NOT NULL DEFAULT 0, reason TEXT,
                updated_at DOUBLE PRECISION NOT NULL)""",
        ],
    ),
    (
        "0003_model_roles_fallbacks",
        [
            "ALTER TABLE agent_profile ADD COLUMN fallbacks TEXT NOT NULL DEFAULT '[]'",
            """CREATE TABLE role_model (person_id TEXT NOT NULL, role TEXT NOT NULL, provider TEXT NOT NULL,
                model TEXT NOT NULL DEFAULT '', PRIMARY KEY (person_id, role))""",
        ],
    ),
]


def _feature_migrations() -> list[tuple[str, list[str]]]:
    """Migrations owned by feature modules (schedules, mail, channels), in the order they were added."""
    from runtime_host.channels.store import MIGRATION as CHANNELS_MIGRATION
    from runtime_host.mail.ledger import MAIL_MIGRATION
    from runtime_host.schedule import SCHEDULES_MIGRATION

    return [SCHEDULES_MIGRATION, MAIL_MIGRATION, CHANNELS_MIGRATION]


def _later_feature_migrations() -> list[tuple[str, list[str]]]:
    from runtime_host.channels.store import OUTBOX_CONVERSATION_MIGRATION
    from runtime_host.mail.ledger import CARD_CONVERSATION_MIGRATION
    from runtime_host.mcpschema import MCP_MIGRATION
    from runtime_host.partners.record import MIGRATION as PARTNERS_MIGRATION
    from runtime_host.schedule import SCHEDULES_KEPT_RUNS_MIGRATION
    from runtime_host.tasks import TASKS_MIGRATION

    return [PARTNERS_MIGRATION, TASKS_MIGRATION, MCP_MIGRATION, CARD_CONVERSATION_MIGRATION,
            OUTBOX_CONVERSATION_MIGRATION, SCHEDULES_KEPT_RUNS_MIGRATION]


MIGRATIONS += _feature_migrations()
MIGRATIONS.append(
    ("0007_people", [
        "ALTER TABLE person ADD COLUMN passphrase_hash TEXT",
        "CREATE UNIQUE INDEX ix_person_name ON person (name)",
    ])
)
MIGRATIONS.append(
    ("0009_audit", [
        """CREATE TABLE audit_log (id TEXT PRIMARY KEY, ts DOUBLE PRECISION NOT NULL, person_id TEXT, agent TEXT,
            kind TEXT NOT NULL, phase TEXT, action TEXT NOT NULL, rule TEXT, summary TEXT, detail TEXT)""",
        "CREATE INDEX ix_audit_person_ts ON audit_log (person_id, ts)",
    ])
)
MIGRATIONS += _later_feature_migrations()
MIGRATIONS.append(("0011_allowlist", ["ALTER TABLE agent_profile ADD COLUMN allowlist TEXT"]))
MIGRATIONS.append(("0012_safety_policy", ["ALTER TABLE agent_profile ADD COLUMN safety TEXT"]))
# Providers and partners belong to a person: one person's `provider add NAME` never changes another's.
# Providers that were shared become each person's own (keys stay where they were: in the vault of the
# person who added them; the others are told to add theirs).
MIGRATIONS.append(("0013_people_own_providers", [
    """CREATE TABLE provider_by_person (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, name TEXT NOT NULL,
        kind TEXT NOT NULL, base_url TEXT NOT NULL, model TEXT NOT NULL DEFAULT '',
        has_key BOOLEAN NOT NULL DEFAULT FALSE, created_at DOUBLE PRECISION NOT NULL, UNIQUE (person_id, name))""",
    """INSERT INTO provider_by_person (id, person_id, name, kind, base_url, model, has_key, created_at)
        SELECT pr.id || '-' || pe.id, pe.id, pr.name, pr.kind, pr.base_url, pr.model, pr.has_key, pr.created_at
        FROM provider pr CROSS JOIN person pe""",
    "DROP TABLE provider",
    "ALTER TABLE provider_by_person RENAME TO provider",
    "ALTER TABLE partners ADD COLUMN person_id TEXT",
    "UPDATE partners SET person_id = (SELECT person.id FROM person WHERE person.name = partners.added_by)",
]))
# Messages are stamped after the newest one (Store.add_message), which this index finds at once.
MIGRATIONS.append(("0014_message_order", ["CREATE INDEX ix_message_created ON message (created_at)"]))
MIGRATIONS.append(("0015_message_copies", ["ALTER TABLE message ADD COLUMN copied_from TEXT"]))
MIGRATIONS.append(("0016_mapping_checks", [
    "CREATE TABLE mapping_check (person_id TEXT NOT NULL, mapping_id TEXT NOT NULL, PRIMARY KEY (person_id, mapping_id))",
]))
MIGRATIONS.append(("0017_kept_notices", [
    """CREATE TABLE kept_notice (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX ix_kept_notice_person ON kept_notice (person_id, created_at)",
]))
MIGRATIONS.append(("0019_kept_corrections", [
    """CREATE TABLE kept_correction (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, sealed TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX ix_kept_correction_person ON kept_correction (person_id, created_at)",
]))
MIGRATIONS.append(("0020_conversation_title_auto", [
    "ALTER TABLE conversation ADD COLUMN title_auto INTEGER NOT NULL DEFAULT 0",
    lambda c: _titles_made_again(c),
]))
# Memory reads chat and mail in the order they were written, not by the clock (which may have run ahead, then been
# put right): each message and mail gets the next number of its ``ordinal`` row as it is written (``next_in_order``).
# Those kept before are numbered in the order memory read them until now (time, then id); ``carried`` says how many
# were, so memory's watermarks, kept as a time and an id, are carried over to these numbers (``carried_seq``).


def _memory_order() -> tuple[str, list[str]]:
    from runtime_host.mail.ledger import MAIL_ORDER

    return ("0021_memory_order", [
        ORDINAL_TABLE,
        "ALTER TABLE message ADD COLUMN seq BIGINT",
        """UPDATE message SET seq = r.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) AS n
            FROM message) AS r WHERE message.id = r.id""",
        "CREATE UNIQUE INDEX ix_message_seq ON message (seq)",
        "CREATE INDEX ix_message_conversation_seq ON message (conversation_id, seq)",  # a person's chat past a number
        "INSERT INTO ordinal (name, last, carried) SELECT 'message', COALESCE(MAX(seq), 0), COALESCE(MAX(seq), 0) "
        "FROM message",
        *MAIL_ORDER,
    ])


MIGRATIONS.append(_memory_order())
MIGRATIONS.append(("0022_person_removal", ["ALTER TABLE person ADD COLUMN removing_at DOUBLE PRECISION"]))
# a notification kept for a person not shown says the conversation it is of (a run's answer): deleting that
# conversation deletes it too (before, the answer's words stayed in pod.db and were shown after the delete)
MIGRATIONS.append(("0023_kept_notice_conversation", ["ALTER TABLE kept_notice ADD COLUMN conversation_id TEXT"]))
MIGRATIONS.sort(key=lambda m: m[0])  # applied in the order of their numbers, wherever they are declared


def words_of_conversations_gone(conn: Any, conversation_ids: list[str]) -> None:
    """(In the transaction that deletes these conversations.) Their words kept elsewhere in pod.db go too: their
    chats' answers not sent yet (``channels.store.forget_conversations``) and a notification of theirs kept for a
    person not shown (a run's answer)."""
    from sqlalchemy import text as sql

    from runtime_host.channels.store import forget_conversations

    forget_conversations(conn, conversation_ids)
    for cid in conversation_ids:
        conn.execute(sql("DELETE FROM kept_notice WHERE conversation_id = :c"), {"c": cid})


TITLE_GIVEN, TITLE_MADE, TITLE_MADE_BRANCH = 0, 1, 2  # Conversation.title_auto
TITLE_CHARS = 60
BRANCH_MARK = " (branch)"


def made_title(first: str, how: int = TITLE_MADE) -> str:
    """The title Hearth makes a conversation from its person's first message: the first line of that message with
    its personal data redacted (cards, IBANs, national ids, addresses, phones, mail addresses, secrets: memory's own
    redaction), then cut at TITLE_CHARS. Cut first, a card number cut in half (or wrapped onto the next line) is no
    longer one the redactor finds, and the chat list, an export and every branch showed its digits."""
    from runtime_host.safety.policy import Policy, decide

    said = first.strip()[:TITLE_READ]
    if not said:
        return ""
    line = decide("memory_write", said, Policy(agent="memory")).text.strip().splitlines()[0][:TITLE_CHARS]
    return line + BRANCH_MARK if how == TITLE_MADE_BRANCH else line


# Of a first message, the start that is redacted to make its title: a value starting within the title's characters
# (or wrapped onto the next line) is read whole, and a 1 MB paste is not redacted all through for 60 characters of it
# (2,000 conversations of 3 KB pastes held the first start after the upgrade 6.5–13 s).
TITLE_READ = TITLE_CHARS * 8


def _first_said(c: Any, conversation_id: str) -> str:
    row = c.execute(text("SELECT content FROM message WHERE conversation_id = :c AND role = 'user' "
                         "ORDER BY created_at, id LIMIT 1"), {"c": conversation_id}).first()
    return row[0] if row else ""


def _titles_made_again(c: Any) -> None:
    """Once, on upgrade: which titles Hearth made from a first message (empty, or that message's first line as
    older Hearths cut it, a branch's with its mark), and those made again, redacted. Older Hearths kept no record of
    it, so this compares titles (here alone); a title the person gave stays as it is."""
    firsts = dict(c.execute(text(  # each conversation's first message of its person, its start: one read
        "SELECT conversation_id, substr(ltrim(content, :blank), 1, :n) FROM (SELECT conversation_id, content, ROW_NUMBER() OVER "
        "(PARTITION BY conversation_id ORDER BY created_at, id) AS k FROM message WHERE role = 'user') AS f "
        "WHERE k = 1"), {"n": TITLE_READ, "blank": " \t\r\n"}).all())
    for cid, title in c.execute(text("SELECT id, title FROM conversation")).all():
        said = (firsts.get(cid) or "").strip()
        base = title
        while base.endswith(BRANCH_MARK):
            base = base.removesuffix(BRANCH_MARK)
        if base != (said.splitlines()[0][:TITLE_CHARS] if said else ""):
            continue
        how = TITLE_MADE_BRANCH if base != title else TITLE_MADE
        c.execute(text("UPDATE conversation SET title = :t, title_auto = :h WHERE id = :c"),
                  {"t": made_title(said, how), "h": how, "c": cid})


class StoreError(Exception):
    """A store operation a person asked for that cannot be done (unknown name, duplicate, ...)."""


UNNAMED = "Me"  # the first person's name until they give theirs (Hearth never asked it before the first window did)
UNNAMED_AS = "the person who set Hearth up"  # how others and the memory models are told of them meanwhile
NAME_CHARS = 60
# A name is shown in lists, menus, terminals and models' prompts: no line break, terminal control or direction
# override (which turns around what follows it), no invisible character that makes two names look the same.
_NAME_UNSEEN = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def called(person: Person) -> str:
    """What a person is called where others read it (another person's window, the CLI, a memory model's prompt):
    their name, or UNNAMED_AS while they are still the UNNAMED first person."""
    return UNNAMED_AS if person.name == UNNAMED else person.name


class StorageError(StoreError):
    """The database could not be written (a full disk, a lock, a read-only folder); says what to do next."""


@contextmanager
def storage_errors_said(folder: Path) -> Iterator[None]:
    """A block whose SQLite storage failure (a read-only folder, a full disk, a lock) is raised as one StorageError
    naming ``folder`` and what to do (``describe_storage_error``), not as sqlite's "unable to open database file";
    any other error stays as it is. For databases kept outside pod.db (memory's catalog and indexes)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        from runtime_host.paths import describe_storage_error

        problem = describe_storage_error(exc, folder)
        if problem is None:
            raise
        raise StorageError(problem) from exc


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA secure_delete=ON")  # a deleted message's text is overwritten, not left in a free page
    cur.close()


class Store:
    """All reads and writes of pod.db. Synchronous; each call is one short transaction."""

    def __init__(self, url_or_path: str | Path):
        url = str(url_or_path)
        if "://" not in url:
            url = f"sqlite:///{url}"
        self.url = url
        self.engine: Engine = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {},
                                            pool_pre_ping=not url.startswith("sqlite"))
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        folder = Path(url.removeprefix("sqlite:///")).parent if url.startswith("sqlite:///") else url.split("@")[-1]

        def storage_error(ctx: Any) -> None:
            # A full disk, a lock or a read-only folder becomes one clear StorageError wherever it happens.
            from runtime_host.paths import describe_storage_error

            problem = describe_storage_error(ctx.original_exception, folder)
            if problem is not None:
                raise StorageError(problem) from ctx.original_exception

        event.listen(self.engine, "handle_error", storage_error)
        self.migrate()

    def close(self) -> None:
        self.engine.dispose()

    def purge(self) -> None:
        """After deleting what a person asked to delete: SQLite's write-ahead log, which still holds the rows'
        earlier pages, is written back and cut to nothing (a reader that holds it delays this to the next purge).
        A server database keeps no such copy in the pod's folder."""
        if self.url.startswith("sqlite"):
            with self.engine.connect() as c:
                c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- migrations
    def migrate(self) -> list[str]:
        applied_now: list[str] = []
        with self.engine.begin() as conn:
            conn.execute(
                text("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
            )
            done = {row[0] for row in conn.execute(text("SELECT name FROM schema_migrations"))}
        for name, statements in MIGRATIONS:
            if name in done:
                continue
            with self.engine.begin() as conn:
                for stmt in statements:
                    if callable(stmt):
                        stmt(conn)
                    else:
                        conn.execute(text(stmt))
                conn.execute(text("INSERT INTO schema_migrations (name, applied_at) VALUES (:n, :t)"), {"n": name, "t": now()})
            applied_now.append(name)
        return applied_now

    def applied_migrations(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT name FROM schema_migrations ORDER BY name"))]

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as s:
            yield s

    # -- pod meta
    def meta(self, key: str, default_factory: Any = None) -> str | None:
        with self.session() as s:
            row = s.get(PodMeta, key)
            if row is None and default_factory is not None:
                row = PodMeta(key=key, value=default_factory())
                s.add(row)
                s.commit()
            return row.value if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.session() as s:
            row = s.get(PodMeta, key) or PodMeta(key=key, value=value)
            row.value = value
            s.add(row)
            s.commit()

    # -- people
    def default_person(self) -> Person:
        with self.session() as s:
            person = s.exec(select(Person).order_by(Person.created_at)).first()
            if person is None:
                person = Person(name=UNNAMED)
                s.add(person)
                s.commit()
            return person

    def person_name(self, name: str, person_id: str | None = None) -> str:
        """``name`` as a person's name (trimmed, its letters composed one way: NFC), or a StoreError saying why not:
        empty, longer than NAME_CHARS, with a control, direction or invisible character, UNNAMED itself, or already
        someone else's in any case or composition ("alice" when there is an "Alice"; "Zoë" typed as e and a
        combining diaeresis when there is a "Zoë"). ``person_id``: whose name it becomes (their own one is free)."""
        name = unicodedata.normalize("NFC", name.strip())
        if not name:
            raise StoreError("A person needs a name.")
        if len(name) > NAME_CHARS:
            raise StoreError(f"That name has {len(name)} characters; a name has at most {NAME_CHARS}. Choose a shorter one.")
        if _NAME_UNSEEN.search(name):
            raise StoreError("That name holds a line break, a control or direction character or an invisible one; "
                             "type the name with letters, digits, spaces and punctuation only.")
        if name.casefold() == UNNAMED.casefold():
            raise StoreError(f"“{UNNAMED}” is what Hearth calls a person who has not given a name: choose your own.")
        with self.session() as s:
            taken = next((p for p in s.exec(select(Person)) if same_name(p.name, name) and p.id != person_id), None)
        if taken is not None:
            raise StoreError(f"There is already a person named {taken.name!r} on this Hearth: choose another name.")
        return name

    def add_person(self, name: str, passphrase_hash: str | None) -> Person:
        name = self.person_name(name)
        with self.session() as s:
            person = Person(name=name, passphrase_hash=passphrase_hash)
            s.add(person)
            s.commit()
            return person

    def rename_person(self, person_id: str, name: str) -> Person:
        """Gives a person a new name (``person_name``'s rules). Only a person renames themselves: this is reached
        from their own window or `person rename`, never from a tool an agent holds."""
        name = self.person_name(name, person_id)
        with self.session() as s:
            row = s.get(Person, person_id)
            if row is None:
                raise StoreError("No such person on this Hearth.")
            row.name = name
            s.add(row)
            s.commit()
            return row

    def get_person(self, name: str) -> Person | None:
        """The person called ``name``, however its letters were composed ("Zoë" as one letter or as e and a
        combining diaeresis); a name typed exactly as kept first (two look-alike names kept before names were
        composed one way stay reachable each by its own)."""
        with self.session() as s:
            exact = s.exec(select(Person).where(Person.name == name)).first()
            if exact is not None:
                return exact
            typed = unicodedata.normalize("NFC", name)
            return next((p for p in s.exec(select(Person).order_by(Person.created_at))
                         if unicodedata.normalize("NFC", p.name) == typed), None)

    def get_person_by_id(self, person_id: str) -> Person | None:
        with self.session() as s:
            return s.get(Person, person_id)

    def list_people(self, *, active: bool = False) -> list[Person]:
        """Everyone on this Hearth, the person who set it up first. ``active``: only those whose removal has not
        begun (runtime_host/removal.py), whom every background run (memory's, the mail watcher's) acts for: nothing
        of a person being removed goes to a model or is fetched again."""
        with self.session() as s:
            q = select(Person).order_by(Person.created_at)
            if active:
                q = q.where(col(Person.removing_at).is_(None))
            return list(s.exec(q))

    def mark_removing(self, person_id: str) -> None:
        """Notes that a person's removal began (kept across a kill: see Person.removing_at)."""
        with self.engine.begin() as c:
            c.execute(text("UPDATE person SET removing_at = :t WHERE id = :p AND removing_at IS NULL"),
                      {"t": now(), "p": person_id})

    def removing(self, person_id: str) -> bool:
        """Whether a person's removal has begun, or they were removed (no such person any more, as another process
        that unlocked them before finds): one read, asked before each worker starts."""
        with self.engine.connect() as c:
            row = c.execute(text("SELECT removing_at FROM person WHERE id = :p"), {"p": person_id}).first()
        return row is None or row[0] is not None

    def still_here(self, person_id: str, name: str) -> None:
        """Refuses acting as a person who was removed from this Hearth, or whose removal began, here or in another
        process (a window that unlocked them before): nothing new is kept for a person no one can remove any more."""
        with self.engine.connect() as c:
            row = c.execute(text("SELECT removing_at FROM person WHERE id = :p"), {"p": person_id}).first()
        if row is None:
            raise StoreError(f"{name} was removed from this Hearth; pick another person. Nothing was done.")
        if row[0] is not None:
            raise StoreError(f"{name} is being removed from this Hearth; pick another person. Nothing was done.")

    def delete_person(self, person_id: str) -> None:
        """The last step of a person's removal (runtime_host/removal.py), their agents, inboxes, schedules, folders
        and memory gone before it: in one transaction, every row left that is theirs (hand-offs, approval cards,
        kept notifications and corrections, partners, MCP servers, providers, model choices, activity, and what
        ``cut_off`` takes if a run before was cut short), then the person."""
        from runtime_host.restored import FORGOTTEN_KEY

        self.cut_off(person_id)
        p = {"p": person_id}
        with self.engine.begin() as c:
            for q in ("DELETE FROM task_events WHERE task_id IN (SELECT id FROM tasks WHERE person_id = :p)",
                      "DELETE FROM tasks WHERE person_id = :p",
                      "DELETE FROM card_message WHERE card_id IN (SELECT card_id FROM card_decision WHERE person_id = :p)",
                      "DELETE FROM card_decision WHERE person_id = :p",
                      "DELETE FROM partners WHERE person_id = :p",
                      "DELETE FROM mcp_servers WHERE person_id = :p",
                      "DELETE FROM kept_notice WHERE person_id = :p",
                      "DELETE FROM kept_correction WHERE person_id = :p",
                      "DELETE FROM mapping_check WHERE person_id = :p",
                      "DELETE FROM role_model WHERE person_id = :p",
                      "DELETE FROM provider WHERE person_id = :p",
                      "DELETE FROM audit_log WHERE person_id = :p",
                      "DELETE FROM person WHERE id = :p"):
                c.execute(text(q), p)
            c.execute(text("DELETE FROM pod_meta WHERE key = :k"), {"k": FORGOTTEN_KEY.format(person=person_id)})
            # the Telegram bot's token was in their vault (they pasted it): it went with them; another pastes one
            c.execute(text("DELETE FROM pod_meta WHERE key = 'telegram_token_person' AND value = :p"), p)
        self.purge()

    # What a person owns, by table: rows here naming no person are left behind by a removal (``left_behind``).
    OWNED = ("provider", "agent_instance", "role_model", "mail_accounts", "partners", "mcp_servers", "kept_notice",
             "kept_correction", "tasks")

    def left_behind(self) -> list[str]:
        """The ids of people no longer on this Hearth that rows of theirs still name (what another process that
        unlocked them before gave them as their removal ended); ``removal.sweep`` takes them apart."""
        from sqlalchemy import inspect

        tables = set(inspect(self.engine).get_table_names())
        found: set[str] = set()
        with self.engine.connect() as c:
            for table in (t for t in self.OWNED if t in tables):
                found |= {str(r[0]) for r in c.execute(text(
                    f"SELECT DISTINCT person_id FROM {table} WHERE person_id IS NOT NULL "  # noqa: S608 - our names
                    "AND person_id NOT IN (SELECT id FROM person)"))}
        return sorted(found)

    def cut_off(self, person_id: str) -> None:
        """The first step of a person's removal: nothing reaches Hearth as them any more. Their `serve` token stops
        working (its hash is read on every request), and their phone chats are unlinked (no card of theirs is
        decided from there, no message of theirs waits to go out)."""
        p = {"p": person_id}
        with self.engine.begin() as c:
            c.execute(text("DELETE FROM pod_meta WHERE key = :k"), {"k": f"serve_token/{person_id}"})
            c.execute(text("DELETE FROM channel_outbox WHERE sent_at IS NULL AND chat_id IN "
                           "(SELECT chat_id FROM channel_link WHERE person_id = :p)"), p)
            c.execute(text("DELETE FROM channel_link WHERE person_id = :p"), p)
            c.execute(text("DELETE FROM channel_link_code WHERE person_id = :p"), p)

    # -- providers
    def add_provider(self, person_id: str, name: str, kind: str, base_url: str, model: str, has_key: bool) -> Provider:
        with self.session() as s:
            row = s.exec(select(Provider).where(Provider.person_id == person_id, Provider.name == name)).first()
            if row is None:
                row = Provider(person_id=person_id, name=name, kind=kind, base_url=base_url, model=model, has_key=has_key)
            else:
                row.kind, row.base_url, row.model = kind, base_url, model
                row.has_key = has_key or row.has_key
            s.add(row)
            s.commit()
            return row

    def get_provider(self, person_id: str, name: str) -> Provider | None:
        with self.session() as s:
            return s.exec(select(Provider).where(Provider.person_id == person_id, Provider.name == name)).first()

    def list_providers(self, person_id: str) -> list[Provider]:
        with self.session() as s:
            return list(s.exec(select(Provider).where(Provider.person_id == person_id).order_by(Provider.name)))

    def delete_provider(self, person_id: str, name: str) -> bool:
        with self.session() as s:
            row = s.exec(select(Provider).where(Provider.person_id == person_id, Provider.name == name)).first()
            if row is None:
                return False
            s.delete(row)
            s.commit()
            return True

    # -- agents
    def add_agent(self, person_id: str, name: str, *, provider: str | None, model: str | None, system: str,
                  role: str = "", toolkits: list[str] | None = None, template: str | None = None) -> AgentInstance:
        with self.session() as s:
            if s.exec(select(AgentInstance).where(AgentInstance.person_id == person_id, AgentInstance.name == name)).first():
                raise StoreError(f"An agent named {name!r} already exists. Pick another name, or edit that agent.")
            profile = AgentProfile(name=name, role=role, system_prompt=system, provider=provider, model=model,
                                   toolkits=json.dumps(toolkits if toolkits is not None else ["clock", "math"]),
                                   template=template)
            s.add(profile)
            s.flush()
            inst = AgentInstance(profile_id=profile.id, person_id=person_id, name=name)
            s.add(inst)
            s.commit()
            return inst

    def get_agent(self, person_id: str, name: str) -> tuple[AgentInstance, AgentProfile] | None:
        with self.session() as s:
            inst = s.exec(select(AgentInstance).where(AgentInstance.person_id == person_id, AgentInstance.name == name)).first()
            if inst is None:
                return None
            return inst, s.get(AgentProfile, inst.profile_id)  # type: ignore[return-value]

    def update_profile(self, profile_id: str, **fields: Any) -> AgentProfile:
        with self.session() as s:
            profile = s.get(AgentProfile, profile_id)
            if profile is None:
                raise StoreError(f"No agent profile {profile_id}")
            for k, v in fields.items():
                setattr(profile, k, json.dumps(v) if k in ("toolkits", "fallbacks") else v)
            s.add(profile)
            s.commit()
            return profile

    def delete_agent(self, instance_id: str) -> None:
        """Deletes one agent with its conversations, messages, turns and steps, and its chats' words still in the
        channel outbox (one transaction)."""
        from sqlalchemy import text as sql

        with self.engine.begin() as c:
            ids = {"i": instance_id}
            words_of_conversations_gone(c, [r[0] for r in c.execute(
                sql("SELECT id FROM conversation WHERE instance_id = :i"), ids)])
            profile_id = c.execute(sql("SELECT profile_id FROM agent_instance WHERE id = :i"), ids).scalar()
            c.execute(sql("DELETE FROM turn_step WHERE turn_id IN (SELECT id FROM turn WHERE instance_id = :i "
                          "OR conversation_id IN (SELECT id FROM conversation WHERE instance_id = :i))"), ids)
            c.execute(sql("DELETE FROM turn WHERE instance_id = :i "
                          "OR conversation_id IN (SELECT id FROM conversation WHERE instance_id = :i)"), ids)
            c.execute(sql("DELETE FROM message WHERE conversation_id IN "
                          "(SELECT id FROM conversation WHERE instance_id = :i)"), ids)
            c.execute(sql("DELETE FROM conversation WHERE instance_id = :i"), ids)
            c.execute(sql("DELETE FROM worker_status WHERE instance_id = :i"), ids)
            c.execute(sql("DELETE FROM agent_instance WHERE id = :i"), ids)
            if profile_id and not c.execute(sql("SELECT 1 FROM agent_instance WHERE profile_id = :p"),
                                            {"p": profile_id}).first():
                c.execute(sql("DELETE FROM agent_profile WHERE id = :p"), {"p": profile_id})
        self.purge()

    def get_instance(self, instance_id: str) -> tuple[AgentInstance, AgentProfile] | None:
        with self.session() as s:
            inst = s.get(AgentInstance, instance_id)
            if inst is None:
                return None
            return inst, s.get(AgentProfile, inst.profile_id)  # type: ignore[return-value]

    def agent_names(self) -> list[str]:
        """What the household's agents are called (every person's), each once, without those that are also a
        person's name or a word of one (a line to "Alice" is to Alice Smith): the names memory's guard reads an order
        to an agent by."""
        with self.session() as s:
            people = [" ".join(n.casefold().split()) for n in s.exec(select(Person.name))]
            names = {n for n in s.exec(select(AgentInstance.name).distinct()) if n.strip()}
        theirs = {*people, *(w for n in people for w in n.split())}
        return sorted(n for n in names if " ".join(n.casefold().split()) not in theirs)

    def list_agents(self, person_id: str) -> list[tuple[AgentInstance, AgentProfile]]:
        with self.session() as s:
            rows = s.exec(
                select(AgentInstance, AgentProfile)
                .where(AgentInstance.person_id == person_id, AgentProfile.id == AgentInstance.profile_id)
                .order_by(AgentInstance.created_at)
            )
            return [(i, p) for i, p in rows]

    # -- conversations and messages
    def create_conversation(self, instance_id: str, title: str = "", *, conversation_id: str | None = None,
                            how: int | None = None) -> Conversation:
        """A new conversation; ``conversation_id`` gives it a known id (one Hearth can look for again after a crash).
        Without a ``title`` (or with ``how`` TITLE_MADE or TITLE_MADE_BRANCH), its title is made from its first
        message (``made_title``)."""
        how = (TITLE_MADE if not title else TITLE_GIVEN) if how is None else how
        with self.session() as s:
            conv = Conversation(instance_id=instance_id, title="" if how else redact(title), title_auto=how,
                                **({"id": conversation_id} if conversation_id else {}))
            s.add(conv)
            s.commit()
            return conv

    def delete_empty_conversation(self, conversation_id: str) -> bool:
        """Deletes the conversation if nothing was ever written in it (no message, no turn): one made for a turn
        that was then refused. True when it was deleted."""
        with self.engine.begin() as c:
            return bool(c.execute(text(
                "DELETE FROM conversation WHERE id = :c AND NOT EXISTS (SELECT 1 FROM message WHERE conversation_id = :c) "
                "AND NOT EXISTS (SELECT 1 FROM turn WHERE conversation_id = :c)"), {"c": conversation_id}).rowcount)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self.session() as s:
            return s.get(Conversation, conversation_id)

    def get_message(self, message_id: str) -> Message | None:
        with self.session() as s:
            return s.get(Message, message_id)

    def latest_conversation(self, instance_id: str) -> Conversation | None:
        with self.session() as s:
            return s.exec(
                select(Conversation).where(Conversation.instance_id == instance_id).order_by(Conversation.updated_at.desc())  # type: ignore[attr-defined]
            ).first()

    def list_conversations(self, instance_id: str) -> list[Conversation]:
        with self.session() as s:
            return list(
                s.exec(select(Conversation).where(Conversation.instance_id == instance_id).order_by(Conversation.updated_at.desc()))  # type: ignore[attr-defined]
            )

    def add_message(self, conversation_id: str, role: str, content: str, turn_id: str | None = None) -> Message:
        with self.session() as s:
            msg = self._add_message(s, conversation_id, role, content, turn_id)
            s.commit()
            return msg

    @staticmethod
    def _add_message(s: Session, conversation_id: str, role: str, content: str, turn_id: str | None) -> Message:
        # Stamped after every message kept before it, so a clock set back (a sync after sleep, a second host whose
        # clock runs behind) never lists a new message before older ones. Memory does not go by this time: it reads
        # chat in the order messages were written (``seq``), which no clock moves.
        last = s.exec(select(func.max(Message.created_at))).one()
        at = now()
        if last is not None and at <= last:
            at = math.nextafter(last, math.inf)
        msg = Message(conversation_id=conversation_id, role=role, content=redact(content), turn_id=turn_id,
                      created_at=at)
        s.add(msg)
        conv = s.get(Conversation, conversation_id)
        if conv is not None:
            conv.updated_at = msg.created_at
            if conv.title_auto and not conv.title and role == "user":
                conv.title = made_title(msg.content, conv.title_auto)
            s.add(conv)
        return msg

    def list_messages(self, conversation_id: str) -> list[Message]:
        """Messages in conversation order: each turn's messages together (its person's messages,
        then its answer), turns in the order they were created."""
        with self.session() as s:
            msgs = list(s.exec(select(Message).where(Message.conversation_id == conversation_id)))
            turn_times = dict(s.exec(select(Turn.id, Turn.created_at).where(Turn.conversation_id == conversation_id)).all())
        return sorted(msgs, key=lambda m: (turn_times.get(m.turn_id, m.created_at) if m.turn_id else m.created_at,
                                           0 if m.role == "user" else 1, m.created_at, m.id))

    def holding(self, needles: set[str], person_id: str) -> set[str]:
        """Which of ``needles`` some message or turn step (its arguments or result) of the person's conversations
        (with their agents) still holds. Another person's are not looked at: what they copied is theirs."""
        found: set[str] = set()
        with self.session() as s:
            agents = select(AgentInstance.id).where(AgentInstance.person_id == person_id)
            for needle in needles:
                if s.exec(select(Message.id)
                          .join(Conversation, Message.conversation_id == Conversation.id)  # type: ignore[arg-type]
                          .where(Message.content.contains(needle, autoescape=True),
                                 Conversation.instance_id.in_(agents))  # type: ignore[attr-defined]
                          .limit(1)).first() \
                        or s.exec(select(TurnStep.id)
                                  .join(Turn, TurnStep.turn_id == Turn.id)  # type: ignore[arg-type]
                                  .where(TurnStep.arguments.contains(needle, autoescape=True)
                                         | TurnStep.result.contains(needle, autoescape=True),
                                         Turn.instance_id.in_(agents))  # type: ignore[attr-defined]
                                  .limit(1)).first():
                    found.add(needle)
        return found

    # -- reversible redactions' mappings a forget may have left unused (MappingCheck)
    def check_mappings(self, person_id: str, ids: set[str]) -> None:
        """Notes mappings of the person's to check once a forget is done (written before it deletes anything)."""
        with self.session() as s:
            for mapping_id in sorted(ids):
                s.merge(MappingCheck(person_id=person_id, mapping_id=mapping_id))
            s.commit()

    def mappings_to_check(self, person_id: str | None = None) -> dict[str, set[str]]:
        """The mappings still to check, by person (one person's, or everyone's)."""
        q = select(MappingCheck)
        if person_id is not None:
            q = q.where(MappingCheck.person_id == person_id)
        out: dict[str, set[str]] = {}
        with self.session() as s:
            for row in s.exec(q):
                out.setdefault(row.person_id, set()).add(row.mapping_id)
        return out

    def mappings_checked(self, person_id: str, ids: set[str]) -> None:
        with self.session() as s:
            for mapping_id in ids:
                row = s.get(MappingCheck, (person_id, mapping_id))
                if row is not None:
                    s.delete(row)
            s.commit()

    # -- notifications kept for a person not shown (KeptNotice)
    def keep_notice(self, person_id: str, title: str, text: str, conversation_id: str | None = None) -> None:
        """Keeps a notification for a person not shown, through the key redactor as every other row (a provider's
        refusal may quote the key it was sent); past the newest KEPT_NOTICES of theirs, the oldest go. One of a
        conversation (``conversation_id``: a run's answer) goes when that conversation is deleted."""
        with self.session() as s:
            s.add(KeptNotice(person_id=person_id, title=redact(title), text=redact(text),
                             conversation_id=conversation_id))
            s.commit()
            old = s.exec(select(KeptNotice).where(KeptNotice.person_id == person_id)
                         .order_by(KeptNotice.created_at.desc(), KeptNotice.id.desc())  # type: ignore[attr-defined]
                         .offset(KEPT_NOTICES)).all()
            for row in old:
                s.delete(row)
            s.commit()

    def take_notices(self, person_id: str) -> list[tuple[str, str]]:
        """The person's kept notifications (title, text), oldest first, and forgets them: each is told once."""
        with self.session() as s:
            rows = s.exec(select(KeptNotice).where(KeptNotice.person_id == person_id)
                          .order_by(KeptNotice.created_at, KeptNotice.id)).all()  # type: ignore[arg-type]
            out = [(r.title, r.text) for r in rows]
            for row in rows:
                s.delete(row)
            s.commit()
        return out

    # -- wiki corrections kept for a person not shown (KeptCorrection), sealed by runtime_host/keptcorrections.py
    def keep_correction(self, person_id: str, row_id: str, sealed: str) -> None:
        """Keeps a sealed correction for its owner; past the newest KEPT_CORRECTIONS of theirs, the oldest go."""
        with self.session() as s:
            s.add(KeptCorrection(id=row_id, person_id=person_id, sealed=sealed))
            s.commit()
            old = s.exec(select(KeptCorrection).where(KeptCorrection.person_id == person_id)
                         .order_by(KeptCorrection.created_at.desc(), KeptCorrection.id.desc())  # type: ignore[attr-defined]
                         .offset(KEPT_CORRECTIONS)).all()
            for row in old:
                s.delete(row)
            s.commit()

    def kept_corrections(self, person_id: str) -> list[tuple[str, str]]:
        """The person's kept corrections (id, sealed), oldest first; they stay until dropped."""
        with self.session() as s:
            rows = s.exec(select(KeptCorrection).where(KeptCorrection.person_id == person_id)
                          .order_by(KeptCorrection.created_at, KeptCorrection.id)).all()  # type: ignore[arg-type]
            return [(r.id, r.sealed) for r in rows]

    def drop_kept_correction(self, person_id: str, row_id: str | None = None) -> None:
        """Forgets one of the person's kept corrections, or (no ``row_id``: Forget everything about me) all."""
        with self.session() as s:
            rows = s.exec(select(KeptCorrection).where(KeptCorrection.person_id == person_id)).all()
            for row in rows:
                if row_id is None or row.id == row_id:
                    s.delete(row)
            s.commit()

    def title_again(self, conversation_id: str) -> None:
        """Makes a made title again from the conversation's first message as it is now (its first message edited,
        or copied into a branch); "" while it has none. A title the person gave stays."""
        with self.engine.begin() as c:
            how = c.execute(text("SELECT title_auto FROM conversation WHERE id = :c"), {"c": conversation_id}).scalar()
            if how:
                c.execute(text("UPDATE conversation SET title = :t WHERE id = :c"),
                          {"t": made_title(_first_said(c, conversation_id), how), "c": conversation_id})

    def messages_after(self, instance_ids: list[str], after: int | None, limit: int,
                       skip_origins: tuple[str, ...] = ()) -> list[tuple[Message, str, str]]:
        """The agents' user and assistant messages with text, strictly past ``after`` in the order they were written
        (``seq``; None: from the first), at most ``limit``, each with its conversation's given title and agent (a
        title Hearth made from the first message is left out, "": that message's words are its own, not every
        message's); read at once (one snapshot), so a message written meanwhile to a conversation read earlier is
        never passed by one read later. Messages of turns of ``skip_origins`` are left out, and a branch's copies of
        messages (read where they were first said)."""
        from sqlalchemy import or_

        if not instance_ids or limit < 1:
            return []
        from sqlalchemy import case

        given = case((Conversation.title_auto == TITLE_GIVEN, Conversation.title), else_="")  # type: ignore[arg-type]
        q = (select(Message, given, Conversation.instance_id)
             .join(Conversation, Message.conversation_id == Conversation.id)  # type: ignore[arg-type]
             .outerjoin(Turn, Message.turn_id == Turn.id)  # type: ignore[arg-type]
             .where(Conversation.instance_id.in_(instance_ids),  # type: ignore[attr-defined]
                    Message.role.in_(("user", "assistant")),  # type: ignore[attr-defined]
                    func.trim(Message.content, " \t\r\n") != "",  # a tool call's empty or blank text
                    Message.copied_from.is_(None),  # type: ignore[union-attr]  # a branch's copy: said once, before
                    Message.seq > (after or 0),  # type: ignore[operator]
                    or_(Turn.id.is_(None), Turn.origin.not_in(skip_origins))))  # type: ignore[union-attr,attr-defined]
        q = q.order_by(Message.seq).limit(limit)  # type: ignore[arg-type]
        with self.session() as s:
            return [(m, title, inst) for m, title, inst in s.exec(q).all()]

    def memory_positions(self) -> dict[str, int]:
        """The last number given in the order messages were written and in the order mail was kept, by the kind of
        item memory makes of them: {"chat": ..., "mail": ...} (what a forget keeps, see Memory.positions)."""
        kinds = {"message": "chat", "mail": "mail"}
        with self.session() as s:
            return {kinds[n]: int(last) for n, last in s.connection().execute(text("SELECT name, last FROM ordinal"))}

    def carried_seq(self, after: tuple[float, str]) -> int:
        """Where memory's reader of chat, which went by (time, id) up to ``after``, stands in the order messages were
        written (see ``carried_seq``)."""
        with self.session() as s:
            return carried_seq(s.connection(), "message", after)

    # -- turns and steps
    def create_turn(self, conversation_id: str, instance_id: str, origin: str = "chat",
                    lease_owner: str | None = None, lease_s: float = 0, text: str | None = None) -> Turn:
        """A pending turn; with ``text``, its person's message is written in the same transaction (a turn is never
        kept without the words it answers, whenever the process dies)."""
        with self.session() as s:
            turn = Turn(conversation_id=conversation_id, instance_id=instance_id, status="pending", origin=origin,
                        lease_owner=lease_owner, lease_until=now() + lease_s if lease_owner else None)
            s.add(turn)
            if text is not None:
                self._add_message(s, conversation_id, "user", text, turn.id)
            s.commit()
            return turn

    def update_turn(self, turn_id: str, **fields: Any) -> Turn:
        with self.session() as s:
            turn = s.get(Turn, turn_id)
            if turn is None:
                raise StoreError(f"No turn {turn_id}")
            for k, v in fields.items():
                setattr(turn, k, redact(v) if isinstance(v, str) else v)
            s.add(turn)
            s.commit()
            return turn

    def get_turn(self, turn_id: str) -> Turn | None:
        with self.session() as s:
            return s.get(Turn, turn_id)

    def list_turns(self, conversation_id: str | None = None, status: str | None = None,
                   origins: list[str] | None = None) -> list[Turn]:
        with self.session() as s:
            q = select(Turn)
            if conversation_id:
                q = q.where(Turn.conversation_id == conversation_id)
            if status:
                q = q.where(Turn.status == status)
            if origins:
                q = q.where(Turn.origin.in_(origins))  # type: ignore[attr-defined]
            return list(s.exec(q.order_by(Turn.created_at)))

    def renew_leases(self, owner: str, turn_ids: list[str], lease_s: float) -> set[str]:
        """Extends `owner`'s leases on `turn_ids`; returns the ids it still holds (a turn another host took
        over after the lease ran out is not among them)."""
        if not turn_ids:
            return set()
        with self.engine.begin() as conn:
            conn.execute(
                text("UPDATE turn SET lease_until = :u WHERE lease_owner = :o AND id IN :ids").bindparams(
                    bindparam("ids", expanding=True)),
                {"u": now() + lease_s, "o": owner, "ids": turn_ids},
            )
            held = conn.execute(
                text("SELECT id FROM turn WHERE lease_owner = :o AND id IN :ids").bindparams(
                    bindparam("ids", expanding=True)),
                {"o": owner, "ids": turn_ids},
            )
            return {row[0] for row in held}

    def expired_leases(self) -> list[Turn]:
        """Unfinished turns whose owner stopped renewing its lease (that host died): another host may take them."""
        with self.session() as s:
            q = select(Turn).where(Turn.status.in_(("pending", "running")), Turn.lease_owner.is_not(None),  # type: ignore[attr-defined]
                                   Turn.lease_until < now())  # type: ignore[operator]
            return list(s.exec(q.order_by(Turn.created_at)))

    def claim_turn(self, turn_id: str, owner: str, lease_s: float) -> bool:
        """Takes a turn whose lease is free or expired. True if this owner now holds it."""
        with self.engine.begin() as conn:
            res = conn.execute(
                text("UPDATE turn SET lease_owner = :o, lease_until = :u WHERE id = :id AND status IN ('pending', 'running') "
                     "AND (lease_owner IS NULL OR lease_owner = :o OR lease_until IS NULL OR lease_until < :now)"),
                {"o": owner, "u": now() + lease_s, "id": turn_id, "now": now()},
            )
            return bool(res.rowcount)

    # -- audit log
    def add_audit(self, *, person_id: str | None, agent: str | None, kind: str, phase: str | None, action: str,
                  rule: str | None, summary: str, detail: dict[str, Any]) -> str:
        aid = new_id()
        with self.engine.begin() as conn:
            conn.execute(text("INSERT INTO audit_log (id, ts, person_id, agent, kind, phase, action, rule, summary, detail) "
                              "VALUES (:id, :ts, :p, :a, :k, :ph, :ac, :r, :s, :d)"),
                         {"id": aid, "ts": now(), "p": person_id, "a": agent, "k": kind, "ph": phase, "ac": action,
                          "r": rule, "s": redact(summary), "d": redact(json.dumps(detail, default=str))})
        return aid

    def list_audit(self, person_id: str, limit: int = 500, kind: str | None = None) -> list[dict[str, Any]]:
        q = "SELECT * FROM audit_log WHERE person_id = :p" + (" AND kind = :k" if kind else "") + " ORDER BY ts DESC LIMIT :n"
        with self.engine.connect() as conn:
            rows = conn.execute(text(q), {"p": person_id, "k": kind, "n": limit}).all()
        return [{**dict(r._mapping), "detail": json.loads(r._mapping["detail"] or "{}")} for r in rows]

    # -- model roles
    def set_role_model(self, person_id: str, role: str, provider: str, model: str) -> None:
        with self.session() as s:
            row = s.get(RoleModel, (person_id, role)) or RoleModel(person_id=person_id, role=role, provider=provider)
            row.provider, row.model = provider, model
            s.add(row)
            s.commit()

    def role_models(self, person_id: str) -> dict[str, RoleModel]:
        with self.session() as s:
            return {r.role: r for r in s.exec(select(RoleModel).where(RoleModel.person_id == person_id))}

    # -- worker status
    def save_worker_status(self, instance_id: str, **fields: Any) -> None:
        with self.session() as s:
            row = s.get(WorkerStatus, instance_id) or WorkerStatus(instance_id=instance_id, state="stopped")
            for k, v in fields.items():
                setattr(row, k, v)
            row.updated_at = now()
            s.add(row)
            s.commit()

    def worker_statuses(self) -> dict[str, WorkerStatus]:
        with self.session() as s:
            return {w.instance_id: w for w in s.exec(select(WorkerStatus))}

    def start_step(self, turn_id: str, step_id: str, *, kind: str, name: str, parent_id: str | None,
                   arguments: Any, call_id: str | None) -> TurnStep:
        with self.session() as s:
            existing = s.get(TurnStep, step_id)
            if existing is not None:
                return existing  # a re-sent start (after an ack was lost) is written once
            seq = s.exec(select(TurnStep).where(TurnStep.turn_id == turn_id)).all()
            step = TurnStep(id=step_id, turn_id=turn_id, parent_id=parent_id, seq=len(seq), kind=kind, name=name,
                            call_id=call_id,
                            arguments=redact(json.dumps(arguments, default=repr)) if arguments is not None else None)
            s.add(step)
            s.commit()
            return step

    def finish_step(self, step_id: str, status: str, result: Any) -> TurnStep | None:
        with self.session() as s:
            step = s.get(TurnStep, step_id)
            if step is None:
                return None
            step.status = status
            step.result = redact(json.dumps(result, default=repr))
            step.finished_at = now()
            s.add(step)
            s.commit()
            return step

    def list_steps(self, turn_id: str) -> list[TurnStep]:
        with self.session() as s:
            return list(s.exec(select(TurnStep).where(TurnStep.turn_id == turn_id).order_by(TurnStep.seq)))

    def steps_by_turn(self, conversation_id: str) -> dict[str, list[TurnStep]]:
        """Every step of a conversation's turns in one query, by turn (a long conversation opens at once)."""
        out: dict[str, list[TurnStep]] = {}
        with self.session() as s:
            turn_ids = select(Turn.id).where(Turn.conversation_id == conversation_id)
            for st in s.exec(select(TurnStep).where(TurnStep.turn_id.in_(turn_ids)).order_by(TurnStep.seq)):  # type: ignore[attr-defined]
                out.setdefault(st.turn_id, []).append(st)
        return out


def step_dict(step: TurnStep) -> dict[str, Any]:
    return {
        "id": step.id,
        "parent_id": step.parent_id,
        "kind": step.kind,
        "name": step.name,
        "call_id": step.call_id,
        "arguments": json.loads(step.arguments) if step.arguments else None,
        "result": json.loads(step.result) if step.result else None,
        "status": step.status,
        "started_at": step.started_at,
        "finished_at": step.finished_at,
    }


def step_tree(steps: list[TurnStep]) -> list[dict[str, Any]]:
    """Nests steps under their parents (sub-agent calls under the delegating call)."""
    nodes = {s.id: {**step_dict(s), "children": []} for s in steps}
    roots: list[dict[str, Any]] = []
    for s in steps:
        node = nodes[s.id]
        parent = nodes.get(s.parent_id) if s.parent_id else None
        (parent["children"] if parent else roots).append(node)
    return roots
