"""Schedules: a person's scheduled agent runs and the Pod's memory timers, on one scheduler and one ledger
(runtime_host/schedule.py holds the timing and the exactly-once ledger). It ticks every minute while the Pod runs,
starts what is due, records how scheduled turns ended, and honours the tray's pause switch.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from runtime_host.store import StoreError, made_title

log = logging.getLogger("hearth.pod")


class ScheduleHost:
    """Schedules and the memory timers. `pod` is the Pod (kept loose: this module never imports it)."""

    MEMORY_TIMERS = (("memory.producer", "*/5 * * * *"), ("memory.ingest", "*/30 * * * *"),
                     ("memory.nightly", "0 3 * * *"))  # on this machine's clock (ensure_memory_timers)

    def __init__(self, pod: Any):
        self.pod = pod
        self._scheduler_task: asyncio.Task[None] | None = None
        self._memory_runs: dict[str, asyncio.Task[None]] = {}  # memory timer kind -> its latest run
        self._memory_going: set[asyncio.Task[Any]] = set()  # every memory run now going (to stop with the Pod)
        self._folder_rescan: asyncio.Task[Any] | None = None  # the producer timer's latest rescan of watched folders
        self._memory_failing: dict[tuple[str, str], str] = {}  # (timer kind, person) -> the failure they were told
        self._damaged_told: set[tuple[str, str, str]] = set()  # (person, note file, problem) a timed ingest told
        pod.subscribe(self._record_scheduled_turn)

    @property
    def schedules_paused(self) -> bool:
        from runtime_host import schedule

        return schedule.is_globally_paused(self.pod.store.engine)

    def set_schedules_paused(self, paused: bool) -> None:
        from runtime_host import schedule

        schedule.set_global_pause(self.pod.store.engine, paused)
        self.pod.emit({"type": "schedules.paused", "paused": paused})

    def add_schedule(self, person_id: str, agent: str, cron: str, prompt: str, *, tz: str = "UTC", catch_up: str = "once",
                     name: str = "") -> dict[str, Any]:
        from runtime_host import schedule

        inst, _ = self.pod.find_agent(person_id, agent)
        if catch_up not in schedule.CATCH_UP_POLICIES:
            raise StoreError(f"--catch-up must be one of {', '.join(schedule.CATCH_UP_POLICIES)}.")
        row = schedule.create_schedule(self.pod.store.engine, person_id=inst.person_id, instance_id=inst.id, cron=cron,
                                       prompt=prompt, tz=tz, catch_up=catch_up, name=name)
        self.pod.emit({"type": "schedule.added", "person": inst.person_id, "schedule_id": row.id})
        return self._schedule_info(row)

    def _schedule_info(self, row: Any) -> dict[str, Any]:
        d = row.to_dict()
        found = self.pod.store.get_instance(row.instance_id) if row.instance_id else None
        d["agent"] = found[0].name if found else None
        return d

    def schedules(self, person_id: str) -> list[dict[str, Any]]:
        from runtime_host import schedule

        return [self._schedule_info(r) for r in schedule.list_schedules(self.pod.store.engine, person_id)]

    def _own_schedule(self, person_id: str, schedule_id: str) -> Any:
        from runtime_host import schedule

        row = schedule.get_schedule(self.pod.store.engine, schedule_id)
        what = "That schedule does not exist (it may have been deleted)."
        if row is not None and row.person_id != person_id:
            raise self.pod.refuse(person_id, what, f"tried to change schedule {schedule_id} of another person")
        if row is None:
            raise StoreError(what)
        return row

    def pause_schedule(self, person_id: str, schedule_id: str, paused: bool) -> dict[str, Any]:
        """Pauses or resumes one of the person's schedules (due times while paused are skipped)."""
        from runtime_host import schedule

        row = self._own_schedule(person_id, schedule_id)
        schedule.set_paused(self.pod.store.engine, row.id, paused)
        self.pod.emit({"type": "schedule.changed", "person": row.person_id, "schedule_id": row.id})
        return self._schedule_info(self._own_schedule(person_id, schedule_id))

    def delete_schedule(self, person_id: str, schedule_id: str) -> None:
        """Deletes one of the person's schedules; its past runs stay in the ledger."""
        from runtime_host import schedule

        row = self._own_schedule(person_id, schedule_id)
        schedule.delete_schedule(self.pod.store.engine, row.id)
        self.pod.emit({"type": "schedule.changed", "person": row.person_id, "schedule_id": row.id})

    def ensure_memory_timers(self) -> None:
        """The memory producer, ingest and nightly pass run on the same scheduler and ledger, on this machine's clock
        (the nightly pass at 03:00 where the machine is, as people's own schedules are). Timers made on another clock
        (UTC, as they all were: the "nightly" pass ran at 19:00 in Los Angeles; or before the machine moved zone) are
        set to this one, keeping when they last ran, so a missed nightly still runs once."""
        from sqlalchemy import text

        from runtime_host import schedule

        tz = schedule.local_zone()
        try:
            schedule.zone(tz)
        except schedule.CronError:  # a TZ that names no zone ("EST+5"): the timers keep to UTC
            tz = "UTC"
        rows = schedule.list_schedules(self.pod.store.engine, "pod")
        have = {r.kind for r in rows}
        for kind, cron in self.MEMORY_TIMERS:
            if kind not in have:
                schedule.create_schedule(self.pod.store.engine, person_id="pod", instance_id="", cron=cron, prompt="",
                                         tz=tz, catch_up="once", name=kind, kind=kind)
        moved = [r.id for r in rows if r.tz != tz and r.kind in {k for k, _ in self.MEMORY_TIMERS}]
        if moved:
            with self.pod.store.engine.begin() as c:
                for sid in moved:
                    c.execute(text("UPDATE schedules SET tz = :tz WHERE id = :id"), {"tz": tz, "id": sid})

    async def tick(self, now: Any = None, *, wait: bool = True) -> dict[str, Any]:
        """Runs what is due at `now` (default: the current time) exactly once, across every Pod. A memory timer's
        job runs beside the schedules due with it, never before them (one person's slow memory model must not
        hold another's runs); `wait` waits for the memory jobs this tick started, its producer's folder rescan too
        (the scheduler's own ticks do not: a job still going when its timer is next due is not started twice)."""
        from datetime import UTC, datetime

        from runtime_host import schedule

        now = now or datetime.now(UTC)
        memory_jobs: list[asyncio.Task[None]] = []
        rescan = self._folder_rescan

        async def start_run(row: Any, due_at: Any) -> str:
            if row.kind == "agent":
                found = self.pod.store.get_instance(row.instance_id)
                if found is None:
                    raise StoreError("the schedule's agent no longer exists")
                run = await self.pod.start_turn_for(*found, row.prompt, new_conversation=True, origin="schedule",
                                                title=f"Scheduled: {row.name or made_title(row.prompt)[:40]}")
                return run.turn_id
            job = {"memory.producer": self._timed_produce, "memory.ingest": self._timed_ingest,
                   "memory.nightly": self.pod.memory_nightly}.get(row.kind)
            if job is None:
                raise StoreError(f"unknown schedule kind {row.kind!r}")
            going = self._memory_runs.get(row.kind)
            # the ingest and producer start beside their previous run: that run's people still going are skipped (one
            # person's model that has not answered yet holds no one else's pages or chat); nightly waits for its last
            if row.kind == "memory.nightly" and going is not None and not going.done():
                raise StoreError(f"the previous {row.kind} run was still going, so this one was not started")
            job_id = f"{row.kind}:{uuid.uuid4().hex}"
            task = self._memory_runs[row.kind] = asyncio.create_task(self._memory_run(job, job_id))
            self._memory_going.add(task)
            task.add_done_callback(self._memory_going.discard)
            memory_jobs.append(task)
            return job_id

        self.pod.expire_tasks()
        result = await schedule.atick(self.pod.store.engine, now, start_run, owner=self.pod.owner)
        if wait and memory_jobs:
            await asyncio.wait(memory_jobs)
            if self._folder_rescan is not rescan and self._folder_rescan is not None:  # the one its producer started
                await asyncio.wait([self._folder_rescan])
        out = result.to_dict()
        self.pod.emit({"type": "schedule.ticked", **{k: v for k, v in out.items() if isinstance(v, int)}})
        return out

    async def _timed_produce(self) -> list[dict[str, Any]]:
        """Everyone's chat and mail into memory, then the watched folders' rescan as a job of its own: a folder
        with thousands of new files holds no one's next chat and mail (the next run is not refused as still going).
        Each person's folders are read beside the others' (``WatchedFolders.rescan_all``): a person's still being
        read when the next rescan is due (their import model has not answered yet, a slow network folder) are left to
        that rescan, not read twice, while everyone else's are read again; the one after reads what changed since.
        Each person whose model fails is told as their part ends (Bob's failure is not kept until Alice's hung model
        gives up), and not again when the run ends."""
        try:
            reports = await self.pod.memory_produce(folders=False, told=lambda pid, why: self._tell_memory_failures(
                "memory.producer", {pid: why}, set()))
        except Exception:  # one person's failing model: everyone's folders are still read
            self._rescan_folders()
            raise
        self._rescan_folders()
        return reports

    def _rescan_folders(self) -> None:
        task = self._folder_rescan = asyncio.create_task(self.pod.folders.rescan_all())
        self._memory_going.add(task)  # stopped with the Pod, like the memory runs
        task.add_done_callback(self._memory_going.discard)

    async def _timed_ingest(self) -> dict[str, Any]:
        """Everyone's ingest; each person whose model fails is told as their writer ends (Bob's failure is not kept
        until Alice's hung model gives up), and not again when the run ends."""
        return dict(await self.pod.memory_ingest(
            told=lambda pid, why: self._tell_memory_failures("memory.ingest", {pid: why}, set())))

    async def _memory_run(self, job: Callable[[], Awaitable[Any]], job_id: str) -> None:
        """One memory timer's job, its outcome written to the schedule ledger when it ends."""
        from runtime_host import schedule

        await asyncio.sleep(0)  # the tick records the run as started first
        report: Any = None
        try:
            report = await job()
        except asyncio.CancelledError:
            schedule.record_turn_finished(self.pod.store.engine, job_id, ok=False,
                                          error="Hearth stopped during this run; the next one goes on from there.")
            raise
        except Exception as exc:  # noqa: BLE001 - a failed job is a ledger outcome; the next one tries again
            from runtime_host.memory_jobs import MemoryModelError

            # A model's failure may quote its answer, and so the person's words: the ledger (pod.db) and the log
            # (shared, and shown in the crash dialog) say only what failed; the person is told the detail below.
            said = exc.plain() if isinstance(exc, MemoryModelError) else str(exc)
            log.warning("memory job %s failed: %s", job_id, said)
            schedule.record_turn_finished(self.pod.store.engine, job_id, ok=False, error=said)
            report = getattr(exc, "report", None)
            failures = getattr(exc, "failures", None) or {}
            self._tell_memory_failures(job_id.split(":", 1)[0], failures, _ran(report))
            self._tell_damaged_notes(job_id.split(":", 1)[0], report, set(failures))
        else:
            schedule.record_turn_finished(self.pod.store.engine, job_id, ok=True)
            self._tell_memory_failures(job_id.split(":", 1)[0], {}, _ran(report))
            self._tell_damaged_notes(job_id.split(":", 1)[0], report, set())

    def _tell_memory_failures(self, kind: str, failures: dict[str, str], ran: set[str] | None = None) -> None:
        """Each person whose own memory model failed on a timer is told, alone (the error may quote what their
        model said), once: a model failing every 5 minutes (each time in other words) is said once, and again
        only after a run of it worked. ``ran``: whose models this run used (None: everyone's); another's, skipped
        while their previous run was still going, neither worked nor failed."""
        for key in [k for k in self._memory_failing
                    if k[0] == kind and k[1] not in failures and (ran is None or k[1] in ran)]:
            del self._memory_failing[key]  # worked this time
        for pid, why in failures.items():
            if (kind, pid) in self._memory_failing:
                continue
            self._memory_failing[(kind, pid)] = why
            self.pod.emit({"type": "memory.failed", "person": pid, "job": kind, "error": why})

    def _tell_damaged_notes(self, kind: str, report: Any, failed: set[str]) -> None:
        """A timed ingest that left a note waiting because its file is lost or no longer UTF-8 tells the person whose
        model writes that note's pages (a person's own and their agents' notes: them; shared notes: the owner), alone,
        which file and what to do. Once per file and problem: told again only if it breaks another way, or after a run
        (that read that person's notes) found it fixed or deleted and it broke again."""
        from runtime_host.memory_jobs import writer_of
        from wiki_engine.sources import said_of

        if kind != "memory.ingest" or not isinstance(report, dict) or "ran" not in report:
            return  # not an ingest, or one that read no notes (no model chosen)
        now: dict[str, list[dict[str, Any]]] = {}
        for bad in report.get("unreadable", []):
            now.setdefault(writer_of(self.pod, bad["scope"]), []).append(bad)
        seen = {(pid, bad["path"], bad["problem"]) for pid, bads in now.items() for bad in bads}
        # a note no longer reported was put back or deleted; a person whose model failed (or was still writing: their
        # previous run's; or whose scope another process was writing) had theirs not read
        ran = _ran(report)
        self._damaged_told = {k for k in self._damaged_told
                              if k in seen or k[0] in failed or (ran is not None and k[0] not in ran)}
        for pid, bads in now.items():
            new = [b for b in bads if (pid, b["path"], b["problem"]) not in self._damaged_told]
            if not new:
                continue
            self._damaged_told |= {(pid, b["path"], b["problem"]) for b in new}
            said = said_of(new, self.pod.scope_label)
            said[-1] = (f"{said[-1]} Until then {'it waits' if len(new) == 1 else 'they wait'} in the inbox; "
                        "the other notes were written into the wiki.")
            self.pod.emit({"type": "memory.failed", "person": pid, "job": kind, "notes": [b["path"] for b in new],
                           "error": " ".join(line if line.endswith(".") else f"{line}." for line in said)})

    def _record_scheduled_turn(self, ev: dict[str, Any]) -> None:
        if ev.get("type") == "turn.finished" and ev.get("origin") == "schedule":
            from runtime_host import schedule

            schedule.record_turn_finished(self.pod.store.engine, ev["turn_id"], ok=ev.get("status") == "done",
                                          error=ev.get("error"))

    def schedule_ledger(self, person_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The person's newest `limit` runs, newest first: theirs are chosen before the limit (everyone else's runs
        and the memory timers' push none of them out), those of schedules they deleted too (`deleted`: True)."""
        from runtime_host import schedule

        engine = self.pod.store.engine
        mine = {r.id: self._schedule_info(r) for r in schedule.list_schedules(engine, person_id, deleted=True)}
        rows = []
        for rec in schedule.list_runs(engine, limit=limit, person_id=person_id):
            s = mine.get(rec.schedule_id)
            if s is None:  # forgotten with its runs (an agent deleted) since the runs were read
                continue
            d = rec.to_dict()
            d.update(agent=s["agent"], cron=s["cron"], prompt=s["prompt"], name=s.get("name") or "",
                     deleted=s["deleted_at"] is not None)
            turn = self.pod.store.get_turn(rec.turn_id) if rec.turn_id else None
            d["conversation_id"] = turn.conversation_id if turn else None
            rows.append(d)
        return rows

    def start_ticking(self) -> None:
        """The scheduler ticks every 60 seconds while this Pod runs."""
        if self._scheduler_task is None:
            self._scheduler_task = asyncio.create_task(self._scheduler_loop())

    def stop_ticking(self) -> None:
        if self._scheduler_task:
            self._scheduler_task.cancel()
        for task in list(self._memory_going):
            task.cancel()

    async def _scheduler_loop(self) -> None:
        while True:
            try:
                await self.tick(wait=False)
            except Exception:  # a failed tick is logged and tried again next minute
                log.exception("scheduler tick failed")
            await asyncio.sleep(60)


def _ran(report: Any) -> set[str] | None:
    """Whose writers a timed memory run used through every scope of theirs, from its report (None: everyone's, or
    not said): not those skipped as still writing, nor those a scope of whom another process was writing. A producer
    run's report (a list, one per person whose part ran) names them by scope."""
    if isinstance(report, list):
        return {str(r.get("scope", "")).removeprefix("private/") for r in report if isinstance(r, dict)}
    ran = report.get("ran") if isinstance(report, dict) else None
    return None if ran is None else set(ran) - set(report.get("busy", ()))
