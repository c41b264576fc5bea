"""Task ledger benchmark: a hand-off written by an agent until it is visible on the board, and
listing throughput with 10,000 tasks in the ledger.

Prints one JSON object as its last line: handoff_visible_ms_p50, tasks_listed_per_s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import pct

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="hearth-tasks-cfg-")

import qasync  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


async def run() -> dict[str, float]:
    from app.main_window import MainWindow
    from runtime_host import tasks
    from runtime_host.pod import Pod

    pod = Pod(Path(tempfile.mkdtemp(prefix="hearth-tasks-"))).first_person()
    lead = pod.add_agent("lead")
    worker = pod.add_agent("worker")
    w = MainWindow(pod, use_tray=False)
    w.show()
    visible = []
    try:
        for i in range(30):
            before = w.tasks.count("proposed")
            t = time.perf_counter()
            await pod._tool_hand_off(pod.person.id, lead["id"], {"agent": "worker", "title": f"Task {i}",
                                                                  "description": "Do the thing."})
            while w.tasks.count("proposed") == before:
                await asyncio.sleep(0)
            visible.append((time.perf_counter() - t) * 1000)
        w.close()
        for i in range(10000 - 30):
            tasks.create(pod.store.engine, person_id=pod.person.id, title=f"Bulk {i}", description="x", size="small",
                         owner_instance=worker["id"], creator_instance=lead["id"], creator_turn=None, parent_id=None)
        rates = []
        for _ in range(5):
            t = time.perf_counter()
            rows = pod.list_tasks()
            rates.append(len(rows) / (time.perf_counter() - t))
        assert len(rows) == 10000
    finally:
        await pod.close()
    return {"handoff_visible_ms_p50": pct(visible, 0.5), "handoff_visible_ms_p95": pct(visible, 0.95),
            "tasks_listed_per_s": round(sorted(rates)[len(rates) // 2]), "tasks_in_ledger": 10000}


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        out = loop.run_until_complete(run())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
