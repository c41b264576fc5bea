"""Time and memory limits for one tool call: the tool runs in a forked child of the worker.

The child gets an address-space limit (the worker's size plus the tool's memory allowance) and a CPU
limit; the worker waits for its answer no longer than the tool's time limit and then kills it. A tool
that passes a limit ends with a clear result for the model; the worker and the turn go on. Where
fork is missing (Windows), tools run in the worker with no limit.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any

MAX_OUTPUT_BYTES = 4 * 1024 * 1024  # what a tool may hand back; more is cut with a note


class ToolLimitExceeded(Exception):
    """A tool passed its time or memory limit and was stopped. `limit` is "time" or "memory"."""

    def __init__(self, limit: str, message: str):
        super().__init__(message)
        self.limit = limit


class ToolRaised(Exception):
    """The tool raised inside its child; carries the exception's type name and message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def run_limited(name: str, fn: Callable[[], str], *, time_s: float, memory_mb: int,
                input_error: type[Exception] = ValueError) -> str:
    """Runs `fn` in a forked child within `time_s` seconds and `memory_mb` more memory; returns its text.

    Raises `input_error` if the tool refused its input (with its message), ToolRaised if it failed,
    ToolLimitExceeded if it passed a limit.
    """
    if not hasattr(os, "fork"):
        return fn()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(fn, w, r, time_s, memory_mb, input_error)
    os.close(w)
    try:
        data, timed_out = _read_until(r, time.monotonic() + time_s)
    finally:
        os.close(r)
    if timed_out:
        _kill(pid)
        raise ToolLimitExceeded("time", f"{name} was stopped after {time_s:g} s, its time limit; it had not "
                                "finished. Try a smaller request.")
    _, status = os.waitpid(pid, 0)
    try:
        out = json.loads(data) if data else None
    except ValueError:
        out = None
    if not isinstance(out, dict):
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            raise ToolLimitExceeded("time", f"{name} was stopped: it used more than {time_s:g} s of processor "
                                    "time, its limit. Try a smaller request.")
        raise ToolLimitExceeded("memory", f"{name} was stopped: it ended without an answer (it needed more than "
                                f"its {memory_mb} MB memory limit, or crashed). Try a smaller request.")
    if "memory" in out:
        raise ToolLimitExceeded("memory", f"{name} was stopped: it needed more than its {memory_mb} MB memory "
                                "limit. Try a smaller request.")
    if "input_error" in out:
        raise input_error(out["input_error"])
    if "error" in out:
        raise ToolRaised(out.get("kind") or "Exception", out["error"])
    text = str(out.get("ok", ""))
    if out.get("cut"):
        text += f"\n[… cut: the tool returned more than {MAX_OUTPUT_BYTES // 1048576} MB]"
    return text


def _child(fn: Callable[[], str], w: int, r: int, time_s: float, memory_mb: int,
           input_error: type[Exception]) -> None:
    code = 0
    try:
        os.close(r)
        # Hold no other descriptor of the worker (another call's pipe, the Pod's pipe for writing):
        # output that is not the answer goes to the worker log.
        os.dup2(2, 1)
        os.closerange(3, w)
        os.closerange(w + 1, _max_fd())
        _set_limits(time_s, memory_mb)
        try:
            out: dict[str, Any] = {"ok": fn()}
        except MemoryError:
            out = {"memory": True}
        except input_error as exc:
            out = {"input_error": str(exc)}
        except BaseException as exc:  # noqa: BLE001  (every failure goes back as a result)
            out = {"error": str(exc), "kind": type(exc).__name__}
        try:
            data = json.dumps(out, ensure_ascii=False).encode("utf-8", "replace")
        except MemoryError:
            data = b'{"memory": true}'
        if len(data) > MAX_OUTPUT_BYTES:
            keep = str(out.get("ok", ""))[: MAX_OUTPUT_BYTES // 4]
            data = json.dumps({"ok": keep, "cut": True}, ensure_ascii=False).encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(w, view):]
    except BaseException:  # noqa: BLE001  (the parent reads no answer and reports it)
        code = 1
    finally:
        os._exit(code)


def _max_fd() -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return 65536 if soft == resource.RLIM_INFINITY else min(int(soft), 65536)
    except (ImportError, ValueError):
        return 1024


def _set_limits(time_s: float, memory_mb: int) -> None:
    try:
        import resource
    except ImportError:
        return
    cpu = math.ceil(time_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    try:
        with open("/proc/self/statm", "rb") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return
    limit = size + memory_mb * 1048576
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return b"", True
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False
        size += len(chunk)
        if size <= MAX_OUTPUT_BYTES * 2:
            chunks.append(chunk)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
