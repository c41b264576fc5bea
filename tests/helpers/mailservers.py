"""Real mail servers on loopback for tests and benchmarks: Dovecot IMAP, an aiosmtpd SMTP sink, and a
TCP proxy that can cut a connection in the middle of a transfer.

Dovecot runs in the foreground from a config written to a short temp folder (Dovecot's base_dir must
be short). As root, the master runs as root and mail processes as `nobody`; as an ordinary user,
everything runs as that user. Each server is stopped by its PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import imaplib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Dovecot:
    """A throwaway Dovecot IMAP server on 127.0.0.1 with plain-text logins (loopback only)."""

    def __init__(self, users: dict[str, str] | None = None):
        self.users = dict(users or {"alice": "secret"})
        self.port = 0
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self, timeout: float = 10.0) -> Dovecot:
        if not os.path.exists(DOVECOT):
            raise ServerError("Dovecot is not installed: run `make test` (it installs the Debian package "
                              "dovecot-imapd from packaging/debian-packages.txt) or `apt-get install dovecot-imapd`.")
        self.dir = Path(tempfile.mkdtemp(prefix="dv", dir="/tmp"))
        d = self.dir
        os.chmod(d, 0o755)
        (d / "run").mkdir()
        (d / "state").mkdir()
        (d / "home").mkdir()
        self.port = free_port()
        root = os.geteuid() == 0
        if root:
            mail_uid, mail_gid = 65534, 65534  # nobody: Dovecot refuses uid 0 for mail
            os.chown(d / "home", mail_uid, mail_gid)
            # Do not rely on the dovecot/dovenull users the package's install script may or may not have made.
            users = "default_internal_user = nobody\ndefault_internal_group = nogroup\ndefault_login_user = nobody\n"
        else:
            mail_uid, mail_gid = os.getuid(), os.getgid()
            me = pwd.getpwuid(mail_uid).pw_name
            users = (f"default_internal_user = {me}\ndefault_internal_group = {me}\ndefault_login_user = {me}\n"
                     "service anvil {\n  chroot =\n}\n")
        (d / "passwd").write_text("".join(f"{u}:{{PLAIN}}{p}\n" for u, p in self.users.items()))
        login_chroot = "" if root else "  chroot =\n"
        (d / "dovecot.conf").write_text(f"""
protocols = imap
listen = 127.0.0.1
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_failure_delay = 0
auth_mechanisms = plain login
{users}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/passwd
}}
userdb {{
  driver = static
  args = uid={mail_uid} gid={mail_gid} home={d}/home/%u
}}
mail_location = maildir:~/Maildir
service imap-login {{
{login_chroot}  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Sent {{
    special_use = \\Sent
    auto = subscribe
  }}
}}
""")
        self._log = open(d / "stderr.log", "wb")
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(d / "dovecot.conf")], stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_greeting(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def _wait_greeting(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerError(f"Dovecot exited with {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.settimeout(2)
                    if s.recv(200).startswith(b"* OK"):
                        return
            except OSError as exc:
                last = exc
            time.sleep(0.02)
        raise ServerError(f"Dovecot did not greet on port {self.port} within {timeout} s ({last}): {self.log()[-2000:]}")

    def log(self) -> str:
        if self.dir is None:
            return ""
        out = []
        for name in ("stderr.log", "dovecot.log"):
            p = self.dir / name
            if p.exists():
                out.append(p.read_text(errors="replace"))
        return "\n".join(out)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(0.3)  # a clean stop takes ~1 s; a test server need not wait for it
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group id is its PID
                proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    # -- helpers for tests
    def client(self, user: str = "alice") -> imaplib.IMAP4:
        c = imaplib.IMAP4("127.0.0.1", self.port, timeout=30)
        c.login(user, self.users[user])
        return c

    def deliver(self, raw: bytes, user: str = "alice", mailbox: str = "INBOX", flags: str = "") -> int:
        """Delivers a message by IMAP APPEND; returns its UID."""
        c = self.client(user)
        try:
            typ, data = c.append(f'"{mailbox}"', f"({flags})" if flags else None, None, raw)
            if typ != "OK":
                raise ServerError(f"APPEND failed: {data!r}")
            m = re.search(rb"APPENDUID \d+ (\d+)", data[0] or b"")
            return int(m.group(1)) if m else 0
        finally:
            c.logout()

    def flags(self, uid: int, user: str = "alice", mailbox: str = "INBOX") -> set[str]:
        c = self.client(user)
        try:
            c.select(f'"{mailbox}"', readonly=True)
            typ, data = c.uid("FETCH", str(uid), "(FLAGS)")
            m = re.search(rb"FLAGS \(([^)]*)\)", data[0] or b"")
            return set(m.group(1).decode().split()) if m else set()
        finally:
            c.logout()

    def count(self, mailbox: str = "INBOX", user: str = "alice") -> int:
        c = self.client(user)
        try:
            typ, data = c.select(f'"{mailbox}"', readonly=True)
            return int(data[0] or 0)
        finally:
            c.logout()

    def __enter__(self) -> Dovecot:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes


@dataclass
class SmtpSink:
    """An aiosmtpd server on 127.0.0.1 that keeps every message it accepts. After `stop()`, `start()` serves
    again on the same port (a mail server that was down and came back). With `delay_s`, each message is accepted
    that long after its data arrived (a slow mail server)."""

    messages: list[Received] = field(default_factory=list)
    port: int = 0
    delay_s: float = 0
    _controller: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> SmtpSink:
        from aiosmtpd.controller import Controller

        sink = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                if sink.delay_s:
                    await asyncio.sleep(sink.delay_s)
                with sink._lock:
                    sink.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content)))
                return "250 OK"

        self.port = self.port or free_port()
        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> SmtpSink:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class DropProxy:
    """A TCP proxy to a server that, once armed, cuts the connection after N more bytes from the server."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.port = 0
        self._srv: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._cut_after: int | None = None
        self.drops = 0
        self.connections = 0
        self._open: list[socket.socket] = []
        self._stopping = False

    def start(self) -> DropProxy:
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(16)
        self.port = int(self._srv.getsockname()[1])
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def arm(self, after_bytes: int) -> None:
        """The next `after_bytes` bytes from the server pass; then the connection is cut (once)."""
        with self._lock:
            self._cut_after = after_bytes

    def _accept(self) -> None:
        assert self._srv is not None
        while not self._stopping:
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self.connections += 1
            with self._lock:
                self._open += [client, upstream]
            pair = (client, upstream)
            for args in ((client, upstream, False), (upstream, client, True)):
                t = threading.Thread(target=self._pump, args=(*args, pair), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, from_server: bool,
              pair: tuple[socket.socket, socket.socket]) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_server:
                    with self._lock:
                        cut = self._cut_after
                        if cut is not None:
                            if len(data) >= cut:
                                data = data[:cut]
                                self._cut_after = None
                                self.drops += 1
                                dst.sendall(data)
                                raise ConnectionAbortedError("cut by the test")
                            self._cut_after = cut - len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

    def stop(self) -> None:
        self._stopping = True
        if self._srv is not None:
            with contextlib.suppress(OSError):
                self._srv.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._srv.close()
        with self._lock:
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)  # wakes the pumps blocked in recv
                with contextlib.suppress(OSError):
                    s.close()
        for t in self._threads:
            t.join(2)

    def __enter__(self) -> DropProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def make_mail(subject: str = "Hello", body: str = "Hi there.", *, sender: str = "Ana <ana@example.org>",
              to: str = "alice@example.org", message_id: str | None = None, extra_headers: str = "") -> bytes:
    mid = message_id or f"<{time.time_ns()}.{os.getpid()}@example.org>"
    return (f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: {mid}\r\n"
            f"Date: Mon, 03 Jun 2024 09:00:00 +0000\r\n{extra_headers}MIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()
