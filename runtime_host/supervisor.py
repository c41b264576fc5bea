"""Spawns, watches and stops worker processes: one per (person, agent), as a state machine.

Every state change goes through `WorkerHandle.change_state`, which emits one `worker.state` event.
A worker that exits unexpectedly goes to BACKOFF and is reported to the Pod; the periodic `transition()`
tick moves a wanted BACKOFF worker to STARTING once its delay (growing with each crash) has passed.
More than `max_restarts` crashes in a rolling hour make it fatal, with the reason kept; `reset()` clears
the crash history. Only this module changes a handle's fields: the Pod calls `begin_turn`, `end_turn`
and `reset`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime_host.protocol import MAX_LINE_BYTES, ProtocolError, decode, encode
from runtime_host.states import LIVE_STATES, WorkerState, check_transition

log = logging.getLogger("hearth.supervisor")

# Only these variables reach a worker: no provider keys or tokens from the person's shell.
_ENV_PASS = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH", "HEARTH_LOOPBACK_ONLY", "SYSTEMROOT")


@dataclass
class SupervisorConfig:
    ready_timeout_s: float = 90.0
    stop_grace_s: float = 5.0
    max_restarts: int = 5
    restart_window_s: float = 3600.0
    health_interval_s: float = 30.0
    transition_interval_s: float = 0.5
    backoff_base_s: float = 0.5   # the first restart waits this long; each further crash doubles it
    backoff_max_s: float = 60.0
    health_timeout_s: float = 10.0
    idle_reap_s: float = 15 * 60.0
    # Warm workers are kept within this much resident memory; None = sized from the machine.
    memory_budget_mb: float | None = None
    expected_worker_mb: float = 40.0
    # Run workers in a bubblewrap sandbox: None = when it works here (HEARTH_SANDBOX=off turns it off).
    sandbox: bool | None = None


def sandbox_wanted(config: SupervisorConfig) -> bool:
    if config.sandbox is not None:
        return config.sandbox
    if os.environ.get("HEARTH_SANDBOX", "").lower() in ("off", "0", "no"):
        return False
    from runtime_host.sandbox import sandbox_available

    return sandbox_available()


def default_memory_budget_mb(total_bytes: int | None = None) -> float:
    """An eighth of the machine's memory for idle agents: 2 GiB on a 16 GB laptop."""
    if total_bytes is None:
        import psutil

        total_bytes = psutil.virtual_memory().total
    return total_bytes / 8 / 1048576


class WorkerStartError(Exception):
    """A worker could not be brought to ready; the message says why and what to do."""


def worker_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, "--worker"]
    return [sys.executable, "-m", "runtime_host.worker"]


def worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_PASS or k.startswith("LC_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class WorkerHandle:
    """One worker process and its lifecycle."""

    def __init__(self, key: tuple[str, str], label: str, scratch: Path, supervisor: Supervisor):
        self.key = key
        self.label = label
        self.scratch = scratch
        self.sup = supervisor
        self.state = WorkerState.STOPPED
        self.proc: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        self.started_at: float | None = None
        self.last_used = time.monotonic()
        self.rss = 0
        self.crashes: collections.deque[float] = collections.deque()
        self.restarts = 0
        self.reason: str | None = None
        self.active_turn: str | None = None
        self.sandboxed = False
        self.epoch = 0  # the Pod's binding epoch this worker was bound with
        self.backoff_until = 0.0  # monotonic time before which a BACKOFF worker is not restarted
        self.binding: dict[str, Any] | None = None  # kept only while a restart is wanted
        self._restarted: asyncio.Future[None] | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._pongs: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ping_ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._stopping_on_purpose = False

    # -- state
    def change_state(self, new: WorkerState, reason: str | None = None) -> None:
        old = self.state
        if old == new:
            return
        check_transition(old, new)
        self.state = new
        if reason is not None:
            self.reason = reason
        self.sup.emit({"type": "worker.state", "key": list(self.key), "agent": self.label, "old": old.value,
                       "new": new.value, "reason": reason, "pid": self.pid})

    def backoff_delay(self) -> float:
        """How long this worker waits in BACKOFF: doubles with each crash in the window, up to a cap."""
        n = max(1, len(self.crashes))
        return min(self.sup.config.backoff_base_s * 2 ** (n - 1), self.sup.config.backoff_max_s)

    def _enter_backoff(self, reason: str) -> None:
        self.backoff_until = time.monotonic() + self.backoff_delay()
        self.change_state(WorkerState.BACKOFF, reason)

    def info(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "pid": self.pid,
            "rss_mb": round(self.rss / 1048576, 1) if self.rss else None,
            "uptime_s": round(time.time() - self.started_at, 1) if self.started_at and self.state in LIVE_STATES else None,
            "restarts": self.restarts,
            "reason": self.reason,
            "sandboxed": self.sandboxed,
        }

    def _settle_restart(self, error: BaseException | None) -> None:
        fut, self._restarted, self.binding = self._restarted, None, None
        if fut is not None and not fut.done():
            if error is None:
                fut.set_result(None)
            else:
                fut.set_exception(error)

    # -- spawn
    async def spawn(self, binding: dict[str, Any]) -> None:
        self.change_state(WorkerState.STARTING)
        self.scratch.mkdir(parents=True, exist_ok=True)
        logfile = open(self.scratch / "worker.log", "ab")
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stopping_on_purpose = False
        cmd, env = list(self.sup.command), worker_env()
        if sandbox_wanted(self.sup.config):
            from runtime_host.sandbox import bwrap_command

            # The worker sees its own folder (read-write), its person's wiki (read-only), Python and
            # Hearth's code (read-only), and nothing else of this machine.
            env = {**env, "HOME": str(self.scratch)}
            env.pop("PYTHONPATH", None)
            cmd = bwrap_command(cmd, rw_paths=[self.scratch], ro_paths=binding.get("ro_paths", []), share_net=True,
                                env=env, cwd=self.scratch)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=logfile,
                env=env, cwd=str(self.scratch), limit=MAX_LINE_BYTES + 1, start_new_session=True,
            )
        except OSError as exc:
            logfile.close()
            self._enter_backoff(f"could not start the worker process: {exc}")
            raise WorkerStartError(f"Could not start the worker for {self.label}: {exc}") from exc
        finally:
            if not logfile.closed:
                logfile.close()
        self.pid = self.proc.pid
        self.started_at = time.time()
        self.sandboxed = cmd[0] != self.sup.command[0]
        self._reader = asyncio.create_task(self._read_loop(self.proc))
        self.send({**binding, "type": "bind"})
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._ready), self.sup.config.ready_timeout_s)
        except TimeoutError:
            await self.kill("did not become ready in time")
            self._enter_backoff(f"not ready within {self.sup.config.ready_timeout_s:g} s")
            raise WorkerStartError(
                f"The worker for {self.label} did not become ready within {self.sup.config.ready_timeout_s:g} s. "
                f"Its log is {self.scratch / 'worker.log'}."
            ) from None
        except WorkerStartError:
            raise
        self.rss = int(ready.get("rss") or 0)
        self.last_used = time.monotonic()
        self.change_state(WorkerState.READY)

    def send(self, msg: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise ConnectionError(f"worker for {self.label} is not running")
        proc.stdin.write(encode(msg))

    async def _read_loop(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        bad_lines = 0
        try:
            while True:
                try:
                    line = await proc.stdout.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    await self.kill(f"sent a line longer than {MAX_LINE_BYTES} bytes")
                    break
                if not line:
                    break
                try:
                    msg = decode(line)
                except ProtocolError as exc:
                    bad_lines += 1
                    log.warning("worker %s: %s", self.label, exc)
                    if bad_lines > 20:
                        await self.kill("kept writing lines that are not protocol messages")
                        break
                    continue
                try:
                    await self._dispatch(msg)
                except Exception:  # never stop reading: a reader that stops leaves the turn hanging silently
                    log.exception("worker %s: handling its message failed; stopping it", self.label)
                    await self.kill("Hearth could not handle one of its messages (see the log)")
        finally:
            code = await proc.wait()
            if proc is self.proc:
                await self._on_exit(code)

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg["type"]
        if kind == "hello":
            return
        if kind == "ready":
            if self._ready and not self._ready.done():
                self._ready.set_result(msg)
            return
        if kind == "error" and msg.get("fatal") and self._ready and not self._ready.done():
            # The worker refused its binding: its reason is the start error (it exits next).
            self._ready.set_exception(WorkerStartError(
                f"The worker for {self.label} refused to start: {msg.get('error')}"))
            return
        if kind == "health.pong":
            self.rss = int(msg.get("rss") or self.rss)
            fut = self._pongs.pop(int(msg.get("id") or 0), None)
            if fut and not fut.done():
                fut.set_result(msg)
            return
        self.last_used = time.monotonic()
        await self.sup.on_message(self, msg)

    async def _on_exit(self, code: int) -> None:
        if self._ready and not self._ready.done():
            self._ready.set_exception(
                WorkerStartError(f"The worker for {self.label} exited (code {code}) before it was ready. "
                                 f"Its log is {self.scratch / 'worker.log'}.")
            )
        for fut in self._pongs.values():
            if not fut.done():
                fut.set_exception(ConnectionError("worker exited"))
        self._pongs.clear()
        if self._stopping_on_purpose or self.state == WorkerState.STOPPING:
            if self.state == WorkerState.STOPPING:
                self.change_state(WorkerState.STOPPED)
            return
        # An unexpected exit: a crash.
        now = time.monotonic()
        self.crashes.append(now)
        while self.crashes and now - self.crashes[0] > self.sup.config.restart_window_s:
            self.crashes.popleft()
        reason = self.reason if self.reason and self.reason.startswith("killed:") else f"exited unexpectedly (code {code})"
        if self.state in (WorkerState.STARTING, WorkerState.READY, WorkerState.BUSY):
            self._enter_backoff(reason)
        if len(self.crashes) > self.sup.config.max_restarts:
            self.change_state(
                WorkerState.FATAL,
                f"crashed {len(self.crashes)} times within an hour (last: {reason}); not restarted again. "
                "Restart it from the agents panel once the cause is fixed.",
            )
        await self.sup.on_exit(self, code)

    # -- health and stop
    async def ping(self) -> bool:
        if self.state not in (WorkerState.READY, WorkerState.BUSY):
            return True
        pid = next(self._ping_ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pongs[pid] = fut
        try:
            self.send({"type": "health.ping", "id": pid})
            await asyncio.wait_for(fut, self.sup.config.health_timeout_s)
            return True
        except (TimeoutError, ConnectionError):
            self._pongs.pop(pid, None)
            if self.state in (WorkerState.READY, WorkerState.BUSY):
                await self.kill("stopped answering health pings")
            return False

    async def kill(self, why: str) -> None:
        """Kills a misbehaving worker; its exit is then handled as a crash."""
        self.reason = f"killed: {why}"
        proc = self.proc
        if proc and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def stop(self) -> None:
        """Asks the worker to shut down; kills it after the grace period."""
        proc = self.proc
        if proc is None or proc.returncode is not None or self.state not in LIVE_STATES:
            if self.state in (WorkerState.BACKOFF, WorkerState.FATAL):
                self.change_state(WorkerState.STOPPED)
                self._settle_restart(ConnectionError(f"the worker for {self.label} was stopped"))
            return
        self._stopping_on_purpose = True
        if self.state != WorkerState.STOPPING:
            self.change_state(WorkerState.STOPPING)
        with contextlib.suppress(ConnectionError, OSError):
            self.send({"type": "shutdown"})
            if proc.stdin:
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), self.sup.config.stop_grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 1.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        if self._reader:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self.state == WorkerState.STOPPING:
            self.change_state(WorkerState.STOPPED)


class Supervisor:
    """All workers of one Pod: lazy spawn, crash accounting, health pings, idle reaping."""

    def __init__(
        self,
        on_message: Callable[[WorkerHandle, dict[str, Any]], Awaitable[None]],
        on_exit: Callable[[WorkerHandle, int], Awaitable[None]],
        emit: Callable[[dict[str, Any]], None],
        config: SupervisorConfig | None = None,
        command: list[str] | None = None,
        gone: Callable[[set[str]], set[str]] | None = None,
    ):
        self.on_message = on_message
        # Of the people whose workers live, those removed (or being removed) meanwhile, maybe by another process:
        # their workers end at the next pass (``tick``).
        self.gone = gone
        self.on_exit = on_exit
        self.emit = emit
        self.config = config or SupervisorConfig()
        self.command = command or worker_command()
        self.handles: dict[tuple[str, str], WorkerHandle] = {}
        self.budget_mb = self.config.memory_budget_mb or default_memory_budget_mb()
        self._spawn_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._restarts: set[asyncio.Task[None]] = set()

    def handle(self, key: tuple[str, str], label: str, scratch: Path) -> WorkerHandle:
        h = self.handles.get(key)
        if h is None:
            h = self.handles[key] = WorkerHandle(key, label, scratch, self)
        return h

    async def ensure(self, key: tuple[str, str], label: str, scratch: Path, binding: dict[str, Any],
                     epoch: int = 0) -> WorkerHandle:
        """Returns a ready worker for `key`, spawning it if needed (and restarting an idle one
        bound with an older profile, so edits take effect)."""
        h = self.handle(key, label, scratch)
        lock = self._spawn_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if h.state == WorkerState.READY and h.epoch != epoch and h.active_turn is None:
                await h.stop()
            if h.state in (WorkerState.READY, WorkerState.BUSY):
                return h
            if h.state == WorkerState.FATAL:
                raise WorkerStartError(f"The worker for {label} is stopped: {h.reason}")
            if h.state == WorkerState.STOPPING:
                await h.stop()
            h.epoch = epoch
            if h.state == WorkerState.BACKOFF:
                # Wanted again: the transition() tick restarts it once its backoff delay has passed.
                h.binding = binding
                restarted = h._restarted = h._restarted or asyncio.get_running_loop().create_future()
                while h.state == WorkerState.BACKOFF:
                    await asyncio.sleep(max(0.0, h.backoff_until - time.monotonic()))
                    self.transition()
                if h.state == WorkerState.FATAL:
                    raise WorkerStartError(f"The worker for {label} is stopped: {h.reason}")
                if h.state != WorkerState.STOPPED:  # STOPPED: a person reset it meanwhile; start fresh below
                    await restarted
                    return h
            await self._make_room(h)
            await h.spawn(binding)
            return h

    def transition(self, now: float | None = None) -> list[WorkerHandle]:
        """One tick of the state machine: each wanted BACKOFF worker whose delay has passed goes to STARTING
        (and is spawned with the binding it was wanted with). Returns the handles it moved."""
        now = time.monotonic() if now is None else now
        moved = []
        for h in list(self.handles.values()):
            if h.state != WorkerState.BACKOFF or h.binding is None or now < h.backoff_until:
                continue
            h.restarts += 1
            h.change_state(WorkerState.STARTING, f"restart {h.restarts} after a {h.backoff_delay():g} s backoff")
            task = asyncio.create_task(self._restart(h, h.binding))
            self._restarts.add(task)
            task.add_done_callback(self._restarts.discard)
            moved.append(h)
        return moved

    async def _restart(self, h: WorkerHandle, binding: dict[str, Any]) -> None:
        try:
            await self._make_room(h)
            await h.spawn(binding)
        except Exception as exc:  # the waiter in ensure() gets the reason; the state says BACKOFF again
            log.warning("worker %s could not be restarted: %s", h.label, exc)
            h._settle_restart(exc)
        else:
            h._settle_restart(None)

    def reset(self, key: tuple[str, str], reason: str = "reset by the person") -> None:
        """Clears the worker's crash history (a person's Restart): the next crash counts as the first."""
        h = self.handles.get(key)
        if h is None:
            return
        h.crashes.clear()
        h.restarts = 0
        h.backoff_until = 0.0
        if h.state in (WorkerState.FATAL, WorkerState.BACKOFF):
            h.change_state(WorkerState.STOPPED, reason)
            h._settle_restart(WorkerStartError(f"The worker for {h.label} was reset: start it again"))

    def begin_turn(self, h: WorkerHandle, turn_id: str) -> None:
        """The worker runs `turn_id` now (READY -> BUSY)."""
        h.active_turn = turn_id
        h.last_used = time.monotonic()
        if h.state == WorkerState.READY:
            h.change_state(WorkerState.BUSY)

    def end_turn(self, h: WorkerHandle, turn_id: str | None) -> None:
        """`turn_id` is over on this worker (BUSY -> READY); a later turn it runs is left alone."""
        if turn_id is None or h.active_turn != turn_id:
            return
        h.active_turn = None
        if h.state == WorkerState.BUSY:
            h.change_state(WorkerState.READY)

    def refresh_rss(self) -> None:
        import psutil

        for h in self.handles.values():
            if h.pid and h.state in LIVE_STATES:
                try:
                    proc = psutil.Process(h.pid)
                    # In the sandbox the spawned process is bubblewrap: count the worker under it too.
                    h.rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
                except psutil.Error:
                    pass

    def warm_mb(self) -> float:
        return sum(h.rss for h in self.handles.values() if h.state in LIVE_STATES) / 1048576

    async def _make_room(self, incoming: WorkerHandle) -> None:
        """Stops least recently used idle workers until one more fits in the memory budget."""
        self.refresh_rss()
        while self.warm_mb() + self.config.expected_worker_mb > self.budget_mb:
            idle = [h for h in self.handles.values()
                    if h is not incoming and h.state == WorkerState.READY and h.active_turn is None]
            if not idle:
                log.warning("memory budget of %.0f MB exceeded and no idle worker to stop", self.budget_mb)
                return
            victim = min(idle, key=lambda h: h.last_used)
            self.emit({"type": "worker.evicted", "key": list(victim.key), "agent": victim.label,
                       "reason": f"memory budget of {self.budget_mb:.0f} MB reached"})
            await victim.stop()

    def start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick_loop())

    async def _tick_loop(self) -> None:
        last_health = time.monotonic()
        while True:
            await asyncio.sleep(self.config.transition_interval_s)
            try:
                self.transition()
                if time.monotonic() - last_health >= self.config.health_interval_s:
                    last_health = time.monotonic()
                    await self.tick()
            except Exception:  # a failed pass is logged and the next one runs as usual
                log.exception("supervision tick failed")

    async def tick(self) -> None:
        """One supervision pass: end the workers of people removed (or being removed) meanwhile, ping live workers,
        reap idle ones."""
        now = time.monotonic()
        handles = list(self.handles.values())
        live = {h.key[0] for h in handles if h.state in LIVE_STATES}
        gone = self.gone(live) if self.gone is not None and live else set()
        for h in handles:
            if h.key[0] in gone and h.state in LIVE_STATES:
                log.info("worker %s stopped: its person was removed from this Hearth", h.label)
                await h.stop()
                self.handles.pop(h.key, None)  # nothing of theirs starts here again
                continue
            if h.state == WorkerState.READY and h.active_turn is None and now - h.last_used > self.config.idle_reap_s:
                await h.stop()
                continue
            await h.ping()

    def describe(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {k: h.info() for k, h in self.handles.items()}

    async def stop_all(self) -> None:
        if self._ticker:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for task in list(self._restarts):
            task.cancel()
        handles = list(self.handles.values())
        results = await asyncio.gather(*(h.stop() for h in handles), return_exceptions=True)
        for h, result in zip(handles, results, strict=True):
            if isinstance(result, Exception):
                log.warning("worker %s did not stop cleanly: %s", h.label, result)
