"""The window reacts per event kind and reads the Pod once per burst of events, not once per event: a busy
pod (many workers changing state, many background runs) does not make the window query it for each event."""

from __future__ import annotations

import asyncio

from app.main_window import MainWindow


def test_a_burst_of_worker_and_run_events_reads_the_pod_once_each(qtbot, qloop, ui_pod, monkeypatch) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    reads = {"list_agents": 0, "runs": 0}
    for name in reads:
        real = getattr(ui_pod, name)

        def counted(*a, _real=real, _name=name, **kw):
            reads[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(ui_pod, name, counted)
    me = ui_pod.person.id
    for i in range(40):
        ui_pod.emit({"type": "worker.state", "person": me, "agent": "helper", "old": "starting", "new": "ready"})
        ui_pod.emit({"type": "turn.started", "person": me, "turn_id": f"t{i}", "conversation_id": f"c{i}",
                     "agent": "helper", "origin": "background"})
    qloop.wait_until(lambda: reads["runs"] >= 1 and reads["list_agents"] >= 1, timeout=3, what="the refresh")
    qloop.run(asyncio.sleep(0.3))
    assert reads["runs"] == 1 and reads["list_agents"] <= 2  # (the periodic label refresh may add one)
    assert "helper" in w.agents.item(0).text()


def _count_reads(monkeypatch, targets: dict[str, tuple[object, str]]) -> dict[str, int]:
    reads = {name: 0 for name in targets}
    for name, (obj, attr) in targets.items():
        real = getattr(obj, attr)

        def counted(*a, _real=real, _name=name, **kw):
            reads[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(obj, attr, counted)
    return reads


def test_a_burst_of_card_task_and_conversation_events_reads_each_list_once(qtbot, qloop, ui_pod, monkeypatch) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.open_conversation("helper", None)
    reads = _count_reads(monkeypatch, {"cards": (ui_pod.mail, "cards"), "partner_cards": (ui_pod, "partner_cards"),
                                       "tasks": (ui_pod, "list_tasks"),
                                       "conversations": (ui_pod, "list_conversations")})
    me = ui_pod.person.id
    for i in range(40):
        ui_pod.emit({"type": "card.created", "person": me, "card_id": f"card{i}"})
        ui_pod.emit({"type": "task.changed", "person": me, "task_id": f"task{i}"})
        ui_pod.emit({"type": "conversation.changed", "person": me, "conversation_id": f"c{i}"})
    qloop.wait_until(lambda: all(reads.values()), timeout=3, what="the refresh")
    qloop.run(asyncio.sleep(0.3))
    assert reads == {"cards": 1, "partner_cards": 1, "tasks": 1, "conversations": 1}


def test_a_burst_of_finished_turns_reads_their_messages_once_and_still_gives_ids(qtbot, qloop, ui_pod,
                                                                                  monkeypatch) -> None:
    first = qloop.run(ui_pod.chat("helper", "hello there"))
    second = qloop.run(ui_pod.chat("helper", "and again", conversation_id=first.conversation_id))
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.open_conversation("helper", first.conversation_id)
    for entry in w.chat._all:  # as right after sending: the person's messages have no stored ids yet
        if entry["role"] == "user":
            entry.pop("id", None)
    reads = _count_reads(monkeypatch, {"turn_messages": (ui_pod, "turn_messages"), "messages": (ui_pod, "messages")})
    me = ui_pod.person.id
    for i in range(40):
        turn = (first, second)[i % 2].turn_id if i < 2 else f"t{i}"
        ui_pod.emit({"type": "turn.finished", "person": me, "turn_id": turn, "conversation_id": first.conversation_id,
                     "agent": "helper", "origin": "chat", "status": "done", "text": "ok"})
    qloop.wait_until(lambda: sum(reads.values()) >= 1, timeout=3, what="the ids")
    qloop.run(asyncio.sleep(0.3))
    assert sum(reads.values()) == 1
    user_ids = [e.get("id") for e in w.chat._all if e["role"] == "user"]
    assert len(user_ids) == 2 and all(user_ids)  # Edit and Branch work on both at once
