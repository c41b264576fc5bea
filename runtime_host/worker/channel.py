"""The worker's end of the pipe: thread-safe writes, and waiting for the Pod's acks."""

from __future__ import annotations

import itertools
import threading
from typing import IO, Any

from runtime_host.protocol import encode
from vault import redact

ACK_TIMEOUT_S = 60.0


class PodGone(Exception):
    """The Pod stopped acknowledging: it exited, so the worker must stop too."""


class Channel:
    def __init__(self, out: IO[bytes]):
        self._out = out
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._waiting: dict[int, tuple[threading.Event, list[Any]]] = {}

    def send(self, msg: dict[str, Any]) -> None:
        # Nothing leaves the worker with a key in it (a provider may echo the key in an error body).
        data = redact(encode(msg).decode("utf-8")).encode("utf-8")
        with self._lock:
            self._out.write(data)
            self._out.flush()

    def request(self, msg: dict[str, Any], timeout: float = ACK_TIMEOUT_S) -> Any:
        """Sends a message with a sequence number and waits for the Pod's ack or result."""
        seq = next(self._seq)
        done = threading.Event()
        slot: list[Any] = []
        self._waiting[seq] = (done, slot)
        self.send({**msg, "seq": seq})
        if not done.wait(timeout):
            self._waiting.pop(seq, None)
            raise PodGone(f"no answer from the Pod for message {seq} within {timeout:.0f} s")
        return slot[0] if slot else None

    def resolve(self, seq: int, value: Any = None) -> None:
        entry = self._waiting.pop(seq, None)
        if entry:
            entry[1].append(value)
            entry[0].set()
