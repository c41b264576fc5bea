"""A small, blocking IMAP client over the standard library (run it in a thread from asyncio).

It reads without changing anything: SELECT, UID SEARCH, UID FETCH with BODY.PEEK (never sets
\\Seen), large messages in chunks. It writes only when asked (a keyword, \\Seen, an APPEND to Sent).
IDLE is used where the server advertises it. Every network failure becomes `MailConnectionError`
so the caller can reconnect and resume from its watermark; a refused login is `MailAuthError`.
"""

from __future__ import annotations

import imaplib
import re
import select
import socket
import ssl
import time
from dataclasses import asdict, dataclass
from typing import Any

from runtime_host.netrules import is_loopback


class MailError(Exception):
    """A mail problem a person can act on; the message says what to do."""


class MailAuthError(MailError):
    pass


class MailConnectionError(MailError):
    """The connection failed or dropped; reconnecting may succeed."""


_NET_ERRORS = (imaplib.IMAP4.abort, OSError, EOFError, ssl.SSLError, socket.timeout)


@dataclass
class ImapSettings:
    host: str
    port: int = 993
    username: str = ""
    security: str = "ssl"  # ssl | starttls | none (none only on loopback)
    mailbox: str = "INBOX"
    sent_mailbox: str = "Sent"
    timeout_s: float = 30.0
    cafile: str | None = None  # a private CA (tests, self-hosted servers)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_security(kind: str, host: str, security: str) -> None:
    if security not in ("ssl", "starttls", "none"):
        raise MailError(f"{kind} security {security!r} is not one of ssl, starttls, none.")
    if security == "none" and not is_loopback(host):
        raise MailError(f"Refusing to send your {kind} password unencrypted to {host}: choose ssl or starttls.")


def _ssl_context(cafile: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile)


_FETCH_UID = re.compile(rb"UID (\d+)")
_FETCH_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_FETCH_FLAGS = re.compile(rb"FLAGS \(([^)]*)\)")


def _q(s: str) -> str:
    """An IMAP quoted string."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ImapSession:
    """One logged-in connection with one selected mailbox."""

    def __init__(self, settings: ImapSettings, password: str):
        check_security("IMAP", settings.host, settings.security)
        self.settings = settings
        self._password = password
        self.conn: imaplib.IMAP4 | None = None
        self.uidvalidity = 0
        self.uidnext = 0
        self.exists = 0
        self.capabilities: set[str] = set()
        self.selected: str | None = None

    # -- connection
    def connect(self) -> ImapSession:
        s = self.settings
        try:
            if s.security == "ssl":
                conn: imaplib.IMAP4 = imaplib.IMAP4_SSL(s.host, s.port, ssl_context=_ssl_context(s.cafile),
                                                        timeout=s.timeout_s)
            else:
                conn = imaplib.IMAP4(s.host, s.port, timeout=s.timeout_s)
                if s.security == "starttls":
                    conn.starttls(_ssl_context(s.cafile))
        except (ConnectionRefusedError, socket.gaierror) as exc:
            raise MailConnectionError(f"Cannot reach the mail server {s.host}:{s.port} ({exc}). Check the "
                                      "server name and port, and that this computer is online.") from exc
        except _NET_ERRORS as exc:
            raise MailConnectionError(f"The connection to {s.host}:{s.port} failed: {exc}") from exc
        try:
            conn.login(s.username, self._password)
        except imaplib.IMAP4.error as exc:
            with _quiet():
                conn.shutdown()
            raise MailAuthError(f"The mail server {s.host} refused the login for {s.username!r}: check the "
                                "user name and password in Settings → Mail.") from exc
        except _NET_ERRORS as exc:
            raise MailConnectionError(f"The connection to {s.host} dropped during login: {exc}") from exc
        self.conn = conn
        self.capabilities = {c.upper() for c in conn.capabilities}
        return self

    def close(self) -> None:
        conn, self.conn = self.conn, None
        self.selected = None
        if conn is None:
            return
        with _quiet():
            conn.logout()
        with _quiet():
            conn.shutdown()

    @property
    def connected(self) -> bool:
        return self.conn is not None

    def _c(self) -> imaplib.IMAP4:
        if self.conn is None:
            raise MailConnectionError("Not connected to the mail server.")
        return self.conn

    def _call(self, fn: Any, *args: Any) -> tuple[str, list[Any]]:
        try:
            typ, data = fn(*args)
        except imaplib.IMAP4.abort as exc:
            self._drop()
            raise MailConnectionError(f"The mail server dropped the connection: {exc}") from exc
        except (OSError, EOFError, ssl.SSLError) as exc:
            self._drop()
            raise MailConnectionError(f"The connection to the mail server failed: {exc}") from exc
        except imaplib.IMAP4.error as exc:
            raise MailError(f"The mail server refused a command: {exc}") from exc
        if typ != "OK":
            raise MailError(f"The mail server answered {typ}: {_text(data)}")
        return typ, data

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        self.selected = None
        if conn is not None:
            with _quiet():
                conn.shutdown()

    # -- mailbox
    def select(self, mailbox: str | None = None, readonly: bool = False) -> tuple[int, int]:
        """Selects a mailbox; returns (UIDVALIDITY, UIDNEXT)."""
        conn = self._c()
        box = mailbox or self.settings.mailbox
        _, data = self._call(conn.select, _q(box), readonly)
        first = data[0] if data else None
        self.exists = int(first) if isinstance(first, bytes) and first.isdigit() else 0
        uv = conn.untagged_responses.get("UIDVALIDITY", [b"0"])[-1]
        un = conn.untagged_responses.get("UIDNEXT", [b"0"])[-1]
        self.uidvalidity = int(uv) if isinstance(uv, bytes) and uv.isdigit() else 0
        self.uidnext = int(un) if isinstance(un, bytes) and un.isdigit() else 0
        if not self.uidnext:  # some servers omit UIDNEXT from SELECT
            _, st = self._call(conn.status, _q(box), "(UIDNEXT)")
            m = re.search(rb"UIDNEXT (\d+)", st[0] or b"")
            self.uidnext = int(m.group(1)) if m else 0
        self.selected = box
        return self.uidvalidity, self.uidnext

    def uids_after(self, last_uid: int) -> list[int]:
        """UIDs greater than last_uid, ascending ('N:*' also returns the highest UID: filtered out)."""
        _, data = self._call(self._c().uid, "SEARCH", f"UID {last_uid + 1}:*")
        uids = sorted({int(x) for x in b" ".join(d for d in data if d).split()})
        return [u for u in uids if u > last_uid]

    def has_uid(self, uid: int) -> bool:
        """Whether the selected mailbox still holds the message with this UID (moved away or deleted: no)."""
        _, data = self._call(self._c().uid, "SEARCH", f"UID {int(uid)}")
        return int(uid) in {int(x) for x in b" ".join(d for d in data if d).split()}

    def fetch_meta(self, uids: list[int]) -> dict[int, tuple[int, set[str]]]:
        """{uid: (size in bytes, flags)} for the given UIDs."""
        out: dict[int, tuple[int, set[str]]] = {}
        for i in range(0, len(uids), 500):
            chunk = uids[i:i + 500]
            _, data = self._call(self._c().uid, "FETCH", ",".join(map(str, chunk)), "(UID RFC822.SIZE FLAGS)")
            for item in data:
                line = item[0] if isinstance(item, tuple) else item
                if not isinstance(line, bytes):
                    continue
                mu, ms = _FETCH_UID.search(line), _FETCH_SIZE.search(line)
                if not mu or not ms:
                    continue  # an unsolicited FETCH (flags changed elsewhere)
                mf = _FETCH_FLAGS.search(line)
                flags = set(mf.group(1).decode(errors="replace").split()) if mf else set()
                out[int(mu.group(1))] = (int(ms.group(1)), flags)
        return out

    def fetch_header_ids(self, uids: list[int]) -> dict[int, str]:
        """{uid: Message-ID} without touching \\Seen (used after a UIDVALIDITY change)."""
        from runtime_host.mail.parse import header_text

        out: dict[int, str] = {}
        for i in range(0, len(uids), 200):
            chunk = uids[i:i + 200]
            _, data = self._call(self._c().uid, "FETCH", ",".join(map(str, chunk)),
                                 "(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
            for item in data:
                if isinstance(item, tuple):
                    mu = _FETCH_UID.search(item[0])
                    if mu:
                        val = item[1].decode("latin-1").partition(":")[2]
                        out[int(mu.group(1))] = header_text(val).strip()
        return out

    def fetch_body(self, uid: int, size: int, *, cap: int, chunk: int = 8 << 20) -> bytes:
        """The message's bytes (at most `cap`), read in chunks with BODY.PEEK so \\Seen is never set."""
        want = min(size, cap) if size else cap
        if want <= chunk and size <= cap:
            return self._fetch_literal(uid, "BODY.PEEK[]", "BODY[]")
        parts: list[bytes] = []
        got = 0
        while got < want:
            n = min(chunk, want - got)
            piece = self._fetch_literal(uid, f"BODY.PEEK[]<{got}.{n}>", f"BODY[]<{got}>")
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    def _fetch_literal(self, uid: int, item: str, answer: str) -> bytes:
        _, data = self._call(self._c().uid, "FETCH", str(uid), f"(UID {item})")
        for part in data:
            if isinstance(part, tuple) and answer.encode() in part[0]:
                mu = _FETCH_UID.search(part[0])
                if mu and int(mu.group(1)) == uid:
                    return bytes(part[1])
        for part in data:  # some servers put UID after the literal
            if isinstance(part, tuple) and answer.encode() in part[0]:
                return bytes(part[1])
        raise MailError(f"Message UID {uid} vanished from the mailbox before it could be read.")

    # -- writes (only when a rule or a send asks)
    def add_flags(self, uid: int, flags: list[str]) -> None:
        self._call(self._c().uid, "STORE", str(uid), "+FLAGS.SILENT", "(" + " ".join(flags) + ")")

    def append(self, mailbox: str, raw: bytes, flags: str = "(\\Seen)") -> None:
        self._call(self._c().append, _q(mailbox), flags, imaplib.Time2Internaldate(time.time()), raw)

    def search_header(self, mailbox: str, name: str, value: str) -> list[int]:
        self.select(mailbox, readonly=True)
        _, data = self._call(self._c().uid, "SEARCH", "HEADER", name, _q(value))
        return [int(x) for x in b" ".join(d for d in data if d).split()]

    def mailboxes(self) -> list[str]:
        _, data = self._call(self._c().list)
        out = []
        for line in data:
            if isinstance(line, bytes):
                m = re.match(rb'\(.*?\) (?:"[^"]*"|NIL) (.+)$', line)
                if m:
                    out.append(m.group(1).decode(errors="replace").strip('"'))
        return out

    # -- IDLE
    def idle(self, timeout_s: float) -> bool:
        """Waits up to timeout_s for the server to report new mail (IDLE); True if it did.

        Without IDLE support it sleeps and returns False, so the caller's next poll finds the mail."""
        conn = self._c()
        if "IDLE" not in self.capabilities:
            time.sleep(timeout_s)
            return False
        tag: bytes = conn._new_tag()
        news = False
        try:
            conn.send(tag + b" IDLE\r\n")
            line = conn.readline()
            if not line.startswith(b"+"):
                raise MailError(f"The server did not start IDLE: {line!r}")
            sock = conn.socket()
            deadline = time.monotonic() + timeout_s
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                pending = isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
                if not pending:
                    ready, _, _ = select.select([sock], [], [], min(left, 1.0))
                    if not ready:
                        continue
                line = conn.readline()
                if not line:
                    raise EOFError("connection closed during IDLE")
                if re.match(rb"\* \d+ (EXISTS|RECENT)", line):
                    news = True
                    break
            conn.send(b"DONE\r\n")
            while True:
                line = conn.readline()
                if not line:
                    raise EOFError("connection closed while leaving IDLE")
                if re.match(rb"\* \d+ EXISTS", line):
                    news = True
                if line.startswith(tag):
                    break
        except (OSError, EOFError, ssl.SSLError, imaplib.IMAP4.abort) as exc:
            self._drop()
            raise MailConnectionError(f"The connection dropped while waiting for new mail: {exc}") from exc
        return news


def _text(data: Any) -> str:
    try:
        return " ".join(d.decode(errors="replace") if isinstance(d, bytes) else str(d) for d in data)
    except TypeError:
        return str(data)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return True
