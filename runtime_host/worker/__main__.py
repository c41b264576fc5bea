"""Entry point: `python -m runtime_host.worker`. Reads protocol lines on stdin, answers on stdout."""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from runtime_host.protocol import PROTOCOL_VERSION, ProtocolError, decode
from runtime_host.worker.channel import Channel
from vault import redact, remember_secret


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _preload() -> None:
    # Warm the imports a turn needs while the worker waits for its first turn.
    import runtime_host.guard  # noqa: F401
    import runtime_host.providers.openai_compat  # noqa: F401
    import runtime_host.tools  # noqa: F401
    import runtime_host.worker.loop  # noqa: F401


class _RedactingStream:
    """The worker log (stderr) through the vault's redactor: a key never reaches it, even in a traceback."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def remember_keys(routes: Any) -> None:
    """Marks every key this worker was given as secret, so the channel and the log hide it."""
    for route in routes or []:
        if isinstance(route, dict) and route.get("key"):
            remember_secret(str(route["key"]))


def binding_problem(binding: dict[str, Any]) -> str | None:
    """Why this worker must not start with `binding` (no guard could be built), or None when it may."""
    profile = binding.get("profile") if isinstance(binding.get("profile"), dict) else {}
    raw = profile.get("allowlist")
    if not raw:
        return ("the binding has no tool allowlist, and a worker never runs without its guard. Restart the agent; "
                "if this keeps happening, choose its tools again in Settings → Agents.")
    try:
        from runtime_host.allowlist import Allowlist

        Allowlist.from_json(str(profile.get("name") or "agent"), raw)
    except Exception as exc:  # any unreadable allowlist: refuse, naming why
        return f"the tool allowlist cannot be read ({exc}). Choose the agent's tools again in Settings → Agents."
    data_dir = binding.get("data_dir")
    if not data_dir:
        return "the binding names no data folder, so the guard cannot tell which files are the person's."
    if not os.path.isdir(str(data_dir)):
        return (f"the data folder {data_dir} is missing, so the guard cannot tell which files are the person's. "
                "Check that Hearth's data folder (HEARTH_HOME) is mounted and readable, then restart the agent.")
    return None


class Worker:
    def __init__(self) -> None:
        # The protocol owns the real stdout; anything else printed goes to stderr (the worker log).
        self.channel = Channel(sys.stdout.buffer)
        sys.stderr = _RedactingStream(sys.stderr)  # type: ignore[assignment]
        sys.stdout = sys.stderr
        self.binding: dict[str, Any] | None = None
        self.turn_thread: threading.Thread | None = None
        self.cancel = threading.Event()
        self.exit_code = 0

    def run(self) -> int:
        self.channel.send({"type": "hello", "pid": os.getpid(), "protocol": PROTOCOL_VERSION})
        for line in sys.stdin.buffer:
            try:
                msg = decode(line)
            except ProtocolError as exc:
                self.channel.send({"type": "error", "error": f"bad line from the Pod: {exc}"})
                continue
            if self.handle(msg) is False:
                return self.exit_code
        return self.exit_code  # stdin closed: the Pod is gone

    def handle(self, msg: dict[str, Any]) -> bool | None:
        kind = msg["type"]
        if kind in ("ack", "pod.result"):
            self.channel.resolve(int(msg["seq"]), msg.get("result"))
        elif kind == "health.ping":
            self.channel.send({"type": "health.pong", "id": msg.get("id"), "rss": rss_bytes()})
        elif kind == "bind":
            if self.binding is not None:
                self.channel.send({"type": "error", "error": "already bound; a worker serves one (person, agent)"})
                return None
            problem = binding_problem(msg)
            if problem is not None:  # refuse to start rather than run unguarded
                print(f"hearth worker refused to start: {problem}", file=sys.stderr, flush=True)
                self.channel.send({"type": "error", "fatal": True, "error": problem})
                self.exit_code = 3
                return False
            remember_keys(msg.get("routes"))
            self.binding = msg
            scratch = msg.get("scratch")
            if scratch:
                os.makedirs(scratch, exist_ok=True)
                os.chdir(scratch)
            self.channel.send({"type": "ready", "pid": os.getpid(), "rss": rss_bytes()})
            threading.Thread(target=_preload, name="preload", daemon=True).start()
        elif kind == "turn.start":
            remember_keys(msg.get("routes"))
            self.start_turn(msg)
        elif kind == "turn.cancel":
            self.cancel.set()
        elif kind == "shutdown":
            self.cancel.set()
            return False
        else:
            self.channel.send({"type": "error", "error": f"unknown message type {kind!r}"})
        return None

    def start_turn(self, msg: dict[str, Any]) -> None:
        if self.binding is None:
            self.channel.send({"type": "error", "error": "turn.start before bind"})
            return
        if self.turn_thread and self.turn_thread.is_alive():
            # The previous turn's thread may be just past its acknowledged turn.finished: let it end.
            self.turn_thread.join(timeout=5)
        if self.turn_thread and self.turn_thread.is_alive():
            self.channel.send({"type": "error", "turn_id": msg.get("turn_id"), "error": "a turn is already running"})
            return
        from runtime_host.worker.loop import run_turn

        self.cancel.clear()
        self.turn_thread = threading.Thread(
            target=run_turn, args=(self.channel, self.binding, msg, self.cancel), name="turn", daemon=True
        )
        self.turn_thread.start()


def main() -> int:
    try:
        return Worker().run()
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # last resort: say why on stderr (the worker log) and exit non-zero
        print(json.dumps({"fatal": repr(exc)}), file=sys.stderr)
        raise


if __name__ == "__main__":
    sys.exit(main())
