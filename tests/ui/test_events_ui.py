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
