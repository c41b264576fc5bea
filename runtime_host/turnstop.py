"""Stopping turns: at once, from any edge (window, CLI, serve, another Hearth process), keeping what was
streamed so far, and leaving the agent ready for its next message.

A stop ends the turn in the store immediately (status "stopped", the partial answer kept as the agent's
message); the worker is then told to cancel and is given `DRAIN_S` to end its own turn before it is
stopped for good, so the next turn never meets a worker that is still busy with the old one. A process
that does not own the turn writes a stop request on the turn row; its owner notices it within
`POLL_S`. A turn with no live owner is stopped on the spot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from runtime_host.store import StoreError, now

log = logging.getLogger("hearth.turnstop")

DRAIN_S = 2.0  # how long a worker gets to end a stopped turn itself before it is stopped
POLL_S = 0.5  # how often an owner looks for stop requests written by another process
REQUESTED = "stop_requested"  # error_kind on a live turn row: another process asked its owner to stop it
ACTIVE = ("pending", "running")


def _took(started: float | None) -> str:
    return f" after {time.time() - started:.1f} s" if started else ""


def note_for(turn: Any, *, live: bool) -> str | None:
    """What a person should read beside a message whose turn has no answer (None: answered or running)."""
    status, error = turn.status, (turn.error or "").strip()
    if status == "done":
        return None
    if status == "stopped":
        return f"Stopped: {error or 'the turn was stopped.'}"
    if status in ("failed", "cancelled"):
        return f"Failed: {error or 'the turn ended without an answer.'}"
    if status in ACTIVE and not live:
        return ("No answer (orphaned): the Hearth process that ran this turn ended before it finished. "
                "It resumes when Hearth starts again; stop it to drop it.")
    return None


class TurnStops:
    """The Pod's stop switch. `pod` is the Pod (kept loose: this module must not import it)."""

    def __init__(self, pod: Any):
        self.pod = pod
        self.draining: dict[tuple[str, str], tuple[str, asyncio.Future[None]]] = {}  # worker key -> (turn, ended)
        self._watch: asyncio.Task[None] | None = None

    # -- stopping
    async def stop(self, turn_id: str, by: str = "you") -> dict[str, Any]:
        """Stops one turn. Returns {turn_id, status, text, error}; unknown turns raise StoreError."""
        pod = self.pod
        run = pod.turn_driver.active.get(turn_id)
        if run is not None and not run.future.done():
            self._end_run(run, by)
        else:
            t = pod.store.get_turn(turn_id)
            if t is None:
                raise StoreError(f"No turn {turn_id!r}. `python -m runtime_host turns` lists them.")
            if t.status in ACTIVE:
                if t.lease_owner and t.lease_owner != pod.owner and (t.lease_until or 0) > now():
                    return await self._ask_owner(turn_id, by)
                self._end_row(turn_id, f"stopped by {by} (no Hearth process was running it)")
        t = pod.store.get_turn(turn_id)
        assert t is not None
        answer = next((m.content for m in pod.store.list_messages(t.conversation_id)
                       if m.turn_id == turn_id and m.role == "assistant"), "")
        return {"turn_id": turn_id, "status": t.status, "text": answer, "error": t.error}

    async def stop_agent(self, person_id: str, name: str, by: str = "you", *,
                         waiting_too: bool = True) -> list[dict[str, Any]]:
        """Stops one of a person's agents' unfinished turns: the running one, and (waiting_too) those queued."""
        inst, _profile = self.pod.find_agent(person_id, name)
        runs = [r for r in list(self.pod.turn_driver.active.values())
                if r.instance_id == inst.id and not r.future.done()]
        ids = [r.turn_id for r in runs if waiting_too or r.started]
        if waiting_too:
            ids += [t.id for s in ACTIVE for t in self.pod.store.list_turns(status=s)
                    if t.instance_id == inst.id and t.id not in ids]
        return [await self.stop(tid, by) for tid in ids]

    def _end_run(self, run: Any, by: str) -> None:
        pod = self.pod
        t = pod.store.get_turn(run.turn_id)
        started = t.started_at if t else None
        partial = "\n\n".join(x for x in run.streamed.values() if x.strip())
        if not run.started:
            why = f"Stopped by {by} before it started."
        else:
            kept = " What it had written so far is kept." if partial else ""
            why = f"Stopped by {by}{_took(started)}.{kept}"
        self._close_open_steps(run.turn_id)
        handle = run.handle
        pod.turn_driver.finish(run, {"status": "stopped", "text": partial, "error": why, "error_kind": "stopped"})
        if handle is not None and run.started and handle.proc is not None and handle.proc.returncode is None:
            ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.draining[handle.key] = (run.turn_id, ended)
            with contextlib.suppress(ConnectionError, OSError):
                handle.send({"type": "turn.cancel", "turn_id": run.turn_id})
            asyncio.create_task(self._drain(handle, run.turn_id, ended))

    def _end_row(self, turn_id: str, why: str) -> None:
        """Ends a turn no live process runs (no turn.finished event): its row, and its run's row in the schedule
        ledger if a schedule started it (or the Run ledger says "running" for ever)."""
        from runtime_host import schedule

        self._close_open_steps(turn_id)
        said = why[:1].upper() + why[1:] + "."
        self.pod.store.update_turn(turn_id, status="stopped", error=said, error_kind="stopped", finished_at=now(),
                                   lease_owner=None, lease_until=None)
        schedule.record_turn_finished(self.pod.store.engine, turn_id, ok=False, error=said)

    def _close_open_steps(self, turn_id: str) -> None:
        for s in self.pod.store.list_steps(turn_id):
            if s.status == "started":
                self.pod.store.finish_step(s.id, "stopped", {"error": "stopped by the person"})

    async def _ask_owner(self, turn_id: str, by: str) -> dict[str, Any]:
        """The turn runs in another live Hearth process: ask it, and wait a little for its answer."""
        store = self.pod.store
        store.update_turn(turn_id, error_kind=REQUESTED, error=f"stop requested by {by}")
        deadline = time.monotonic() + DRAIN_S + 4 * POLL_S
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_S / 2)
            t = store.get_turn(turn_id)
            if t is not None and t.status not in ACTIVE:
                break
        t = store.get_turn(turn_id)
        assert t is not None
        error = t.error if t.status not in ACTIVE else (
            "Asked the Hearth process that runs this turn to stop it; it has not confirmed yet.")
        return {"turn_id": turn_id, "status": t.status, "text": "", "error": error}

    # -- after a stop: the worker ends its turn, or it is stopped
    async def _drain(self, handle: Any, turn_id: str, ended: asyncio.Future[None]) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(ended), DRAIN_S)
        except TimeoutError:
            log.info("worker %s did not end stopped turn %s within %.0f s: stopping it", handle.label, turn_id, DRAIN_S)
            await handle.stop()
        else:
            if self.pod.store.removing(handle.key[0]):  # its person was removed (maybe by another process)
                log.info("worker %s stopped: its person was removed from this Hearth", handle.label)
                await handle.stop()
                self.pod.supervisor.handles.pop(handle.key, None)  # as deleting its agent does
        finally:
            if self.draining.get(handle.key, (None,))[0] == turn_id:
                self.draining.pop(handle.key, None)
            if not ended.done():
                ended.set_result(None)

    def worker_spoke(self, handle: Any, turn_id: str | None, event: dict[str, Any]) -> bool:
        """An event for a turn this worker no longer owns: True if it belongs to a stopped turn (drop it quietly)."""
        entry = self.draining.get(handle.key)
        if entry is None or entry[0] != turn_id:
            return False
        if event.get("type") == "turn.finished" and not entry[1].done():
            entry[1].set_result(None)
        return True

    async def wait_drained(self, handle: Any) -> None:
        """Before a new turn goes to a worker: the stopped one has ended (or the worker was stopped)."""
        entry = self.draining.get(handle.key)
        if entry is not None:
            try:
                await asyncio.wait_for(asyncio.shield(entry[1]), DRAIN_S + 5)
            except Exception as exc:  # the next turn goes ahead; the worker is stopped by _drain if need be
                log.warning("worker %s had not ended stopped turn %s before the next one: %s", handle.label,
                            entry[0], exc or type(exc).__name__)

    # -- requests from other processes
    def ensure_watch(self) -> None:
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._watch_requests())

    async def _watch_requests(self) -> None:
        while self.pod.turn_driver.active:
            await asyncio.sleep(POLL_S)
            for turn_id in list(self.pod.turn_driver.active):
                try:
                    t = self.pod.store.get_turn(turn_id)
                except Exception:  # the store is busy or gone: look again next time
                    log.exception("could not read turn %s for stop requests", turn_id)
                    break
                if t is not None and t.error_kind == REQUESTED:
                    await self.stop(turn_id, (t.error or "").removeprefix("stop requested by ") or "another Hearth process")

    def requested(self, turn: Any) -> bool:
        return turn.error_kind == REQUESTED

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
