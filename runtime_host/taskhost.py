"""Hand-offs between agents: the task ledger's Pod side (runtime_host/tasks.py holds the ledger itself).

An agent proposes a task to another agent of the same person (`hand_off`), the person allows it or not (in the
window, the CLI or on the phone), the receiving agent then runs it in a fresh conversation under its own
identity, and the proposing agent may wait for the result (`wait_for_task`) without spending model calls.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from runtime_host.store import StoreError, now
from unseen import HANDED_AS_THEY_ARE, direction_shown, direction_warning


class TaskHost:
    """Hand-offs between agents. `pod` is the Pod (kept loose: this module never imports it)."""

    def __init__(self, pod: Any):
        self.pod = pod
        pod.subscribe(self._task_events)
        self._task_waiters: dict[str, list[asyncio.Future[Any]]] = {}
        self._handoff_turns: dict[str, str] = {}  # turn id -> task id

    def register_tools(self, tools: dict[str, Any]) -> None:
        """The Pod tools this part carries out for a worker."""
        tools["hand_off"] = self.tool_hand_off
        tools["wait_for_task"] = self._tool_wait_for_task

    async def tool_hand_off(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        from runtime_host import tasks

        handle = self.pod.supervisor.handles.get((person_id, instance_id))
        turn_id = handle.active_turn if handle else None
        turn = self.pod.store.get_turn(turn_id) if turn_id else None
        if turn is not None and turn.origin == "handoff":
            raise ValueError("delegation is one level deep: an agent working on a hand-off cannot hand off again; "
                             "do the work, or say what is missing in your answer")
        name = str(args.get("agent") or "").strip()
        target = next(((i, p) for i, p in self.pod.store.list_agents(person_id) if i.name == name), None)
        if target is None:
            names = ", ".join(i.name for i, _ in self.pod.store.list_agents(person_id) if i.id != instance_id)
            raise ValueError(f"no agent named {name!r}; you can hand off to: {names or 'nobody'}")
        if target[0].id == instance_id:
            raise ValueError("you cannot hand a task to yourself")
        parent = tasks.find_by_turn(self.pod.store.engine, turn_id) if turn_id else None
        try:
            t = tasks.create(self.pod.store.engine, person_id=person_id, title=str(args.get("title") or ""),
                             description=str(args.get("description") or ""), size=str(args.get("size") or "small"),
                             owner_instance=target[0].id, creator_instance=instance_id, creator_turn=turn_id,
                             parent_id=parent.id if parent else None)
        except tasks.TaskError as exc:
            raise ValueError(str(exc)) from None
        creator = self.pod.store.get_instance(instance_id)
        self.pod.emit({"type": "task.proposed", "person": person_id, "task_id": t.id, "title": t.title, "to": name})
        _ = self.pod.channels
        self.pod.emit({"type": "card.created", "person": person_id, "card_id": t.id, "kind": "handoff",
                   "summary": direction_shown(f"{creator[0].name if creator else 'An agent'} wants to hand “{t.title}” to {name}"),
                   "body": direction_shown(t.description),
                   "warning": direction_warning({"title": t.title, "description": t.description}, HANDED_AS_THEY_ARE),
                   **self.pod.turn_driver.working_on(person_id, instance_id)})
        return (f"task {t.id} proposed to {name}; it starts when the person approves. "
                f"Call wait_for_task with this id to wait for its result (waiting costs nothing).")

    async def _tool_wait_for_task(self, person_id: str, _instance_id: str, args: dict[str, Any]) -> str:
        from runtime_host import tasks

        task_id = str(args.get("task_id") or "")
        t = tasks.get(self.pod.store.engine, task_id)
        if t is None or t.person_id != person_id:
            raise ValueError(f"no task {task_id!r}")
        timeout = max(1.0, min(float(args.get("timeout_s") or 240), 240.0))
        if t.state in tasks.OPEN_STATES:
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._task_waiters.setdefault(task_id, []).append(fut)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(fut), timeout)  # no model calls while we wait
            t = tasks.get(self.pod.store.engine, task_id)
            assert t is not None
        if t.state == "done":
            return f"task done. Result:\n{t.result}"
        if t.state in tasks.OPEN_STATES:
            return f"task still {t.state}; call wait_for_task again later"
        return f"task {t.state}: {t.error or 'no reason given'}"

    def _task_settled(self, task_id: str) -> None:
        for fut in self._task_waiters.pop(task_id, []):
            if not fut.done():
                fut.set_result(None)
        self.pod.emit({"type": "task.changed", "task_id": task_id})

    def list_tasks(self, person_id: str, state: str | None = None) -> list[dict[str, Any]]:
        from runtime_host import tasks

        names = {i.id: i.name for i, _ in self.pod.store.list_agents(person_id)}
        return [{**t.to_dict(), "owner": names.get(t.owner_instance), "creator": names.get(t.creator_instance)}
                for t in tasks.list_tasks(self.pod.store.engine, person_id, state)]

    def task_timeline(self, person_id: str, task_id: str) -> list[dict[str, Any]]:
        """What happened to one of the person's tasks, oldest first (ts, kind and its details)."""
        from runtime_host import tasks

        t = tasks.get(self.pod.store.engine, task_id)
        if t is not None and t.person_id != person_id:
            raise self.pod.refuse(person_id, "That task does not exist (it may have been deleted).",
                              f"tried to read task {task_id} of another person")
        if t is None:
            raise StoreError("That task does not exist (it may have been deleted).")
        return tasks.events(self.pod.store.engine, task_id)

    async def decide_task(self, person_id: str, task_id: str, approve: bool, decided_by: str = "app") -> dict[str, Any]:
        """The person's allow (or not) for a proposed hand-off. On approval the receiving agent starts
        a fresh conversation under its own identity; only the task text and the parent link move."""
        from runtime_host import tasks
        from runtime_host.channelhost import AlreadyDecided

        t = tasks.get(self.pod.store.engine, task_id)
        if t is not None and t.person_id != person_id:
            raise self.pod.refuse(person_id, f"No task {task_id!r} of yours.", f"tried to decide task {task_id} of another person")
        if t is None:
            raise StoreError(f"No task {task_id!r} of yours.")
        if decided_by == "app":
            try:
                self.pod.channels.claim(task_id, approve, "app")
            except AlreadyDecided as exc:
                raise StoreError(str(exc)) from None
        return await self.carry_out(t, approve, decided_by)

    async def carry_out(self, t: Any, approve: bool, decided_by: str) -> dict[str, Any]:
        from runtime_host import tasks

        if not approve:
            if not tasks.transition(self.pod.store.engine, t.id, ("proposed",), "rejected", decided_by=decided_by):
                raise StoreError(f"The task is {tasks.get(self.pod.store.engine, t.id).state}, not waiting for a decision.")
            self._task_settled(t.id)
            return tasks.get(self.pod.store.engine, t.id).to_dict()
        found = self.pod.store.get_instance(t.owner_instance)
        if found is None:
            tasks.transition(self.pod.store.engine, t.id, ("proposed",), "failed", error="the receiving agent is gone")
            self._task_settled(t.id)
            raise StoreError("The receiving agent no longer exists.")
        if not tasks.transition(self.pod.store.engine, t.id, ("proposed",), "active", started_at=now(), decided_by=decided_by):
            raise StoreError(f"The task is {tasks.get(self.pod.store.engine, t.id).state}, not waiting for a decision.")
        run = await self.pod.start_turn_for(*found, f"Task: {t.title}\n\n{t.description}", new_conversation=True,
                                        origin="handoff", title=f"Task: {t.title}")
        with self.pod.store.engine.begin() as c:
            from sqlalchemy import text as sql

            c.execute(sql("UPDATE tasks SET conversation_id = :c, turn_id = :t WHERE id = :i"),
                      {"c": run.conversation_id, "t": run.turn_id, "i": t.id})
        self._handoff_turns[run.turn_id] = t.id
        self.pod.emit({"type": "task.changed", "task_id": t.id, "person": t.person_id})
        return tasks.get(self.pod.store.engine, t.id).to_dict()

    def _task_events(self, ev: dict[str, Any]) -> None:
        """Streams the receiving agent's run onto its task's timeline, and settles the task at the end."""
        turn_id = ev.get("turn_id")
        if not turn_id or ev.get("type") not in ("step.started", "turn.finished"):
            return
        from runtime_host import tasks

        task_id = self._handoff_turns.get(turn_id)
        if task_id is None and ev.get("origin") == "handoff":  # a task resumed by a later process
            found_task = tasks.find_by_turn(self.pod.store.engine, turn_id)
            task_id = found_task.id if found_task else None
        t = tasks.get(self.pod.store.engine, task_id) if task_id else None
        if t is None:
            return
        kind = ev.get("type")
        if kind == "step.started" and ev.get("kind") == "tool":
            tasks.add_event(self.pod.store.engine, t.id, "tool", {"name": ev.get("name"), "step_id": ev.get("step_id")})
        elif kind == "turn.finished":
            if ev.get("status") == "done":
                tasks.transition(self.pod.store.engine, t.id, ("active",), "done", result=ev.get("text") or "",
                                 finished_at=now())
            else:
                tasks.transition(self.pod.store.engine, t.id, ("active",), "failed", error=ev.get("error") or "failed",
                                 finished_at=now())
            self._handoff_turns.pop(turn_id, None)
            self._task_settled(t.id)

    def expire_tasks(self) -> list[str]:
        """Tasks past their deadline time out with a reason (checked on every scheduler tick)."""
        from runtime_host import tasks

        out = []
        for p in self.pod.store.list_people():
            for t in tasks.list_tasks(self.pod.store.engine, p.id):
                if t.state in tasks.OPEN_STATES and now() - (t.started_at or t.created_at) > t.deadline_s:
                    why = (f"no decision within {t.deadline_s / 60:.0f} minutes" if t.state == "proposed"
                           else f"not finished within {t.deadline_s / 60:.0f} minutes")
                    if tasks.transition(self.pod.store.engine, t.id, (t.state,), "timed_out", error=why, finished_at=now()):
                        out.append(t.id)
                        self._task_settled(t.id)
        return out
