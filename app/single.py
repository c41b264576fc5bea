"""One Hearth per person and data folder: a second launch asks the running one to bring its window
forward (over a local socket) and exits."""

from __future__ import annotations

import getpass
import hashlib
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

MESSAGE = b"show\n"


def server_name(home: Path) -> str:
    """The local socket's name: per OS user and data folder (two HEARTH_HOMEs are two Hearths)."""
    digest = hashlib.sha256(str(Path(home).resolve()).encode()).hexdigest()[:16]
    return f"hearth-{getpass.getuser()}-{digest}"


def ask_running_to_show(home: Path, timeout_ms: int = 1000) -> bool:
    """True if a Hearth already runs on this data folder; it was asked to show its window."""
    sock = QLocalSocket()
    sock.connectToServer(server_name(home))
    if not sock.waitForConnected(timeout_ms):
        return False
    sock.write(MESSAGE)
    sock.flush()
    sock.waitForBytesWritten(timeout_ms)
    sock.waitForReadyRead(timeout_ms)  # the running Hearth answers "ok" once its window is up
    sock.disconnectFromServer()
    return True


class InstanceServer(QObject):
    """Listens for later launches. Signals: show_requested(): another launch wants the window."""

    show_requested = Signal()

    def __init__(self, home: Path, parent: QObject | None = None):
        super().__init__(parent)
        self.name = server_name(home)
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._on_connection)

    def listen(self) -> bool:
        """Starts listening; a socket left by a Hearth that crashed is removed first."""
        if self.server.listen(self.name):
            return True
        probe = QLocalSocket()
        probe.connectToServer(self.name)
        if probe.waitForConnected(300):
            probe.disconnectFromServer()
            return False  # a live Hearth holds it
        QLocalServer.removeServer(self.name)
        return self.server.listen(self.name)

    def _on_connection(self) -> None:
        while self.server.hasPendingConnections():
            sock = self.server.nextPendingConnection()
            sock.readyRead.connect(lambda sock=sock: self._on_ready(sock))
            sock.disconnected.connect(sock.deleteLater)

    def _on_ready(self, sock: QLocalSocket) -> None:
        if bytes(sock.readAll().data()).startswith(MESSAGE.strip()):
            self.show_requested.emit()
            sock.write(b"ok\n")
            sock.flush()
