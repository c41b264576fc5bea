"""Desktop benchmark: launch to an interactive window, event-loop stalls while an answer streams at
200 tokens/s into a long conversation, opening 5,000 messages, and a 1,000-node tool-call tree.

Prints one JSON object as its last line: launch_to_interactive_ms, stall_ms_p99, open_5000_messages_ms,
expand_1000_nodes_ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, pct

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="hearth-ui-cfg-")

import qasync  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402


def launch_ms(runs: int = 5) -> float:
    """Process start until the app says its window is up (printed once the window is shown on the loop)."""
    times = []
    for _ in range(runs):
        home = tempfile.mkdtemp(prefix="hearth-ui-launch-")
        env = {**os.environ, "HEARTH_HOME": home, "QT_QPA_PLATFORM": "offscreen"}
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "app"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if "is running" in line:
                times.append((time.perf_counter() - t) * 1000)
                break
        proc.terminate()
        proc.wait(10)
    return pct(times, 0.5)


async def in_process(app: QApplication) -> dict[str, float]:
    from app.chat_view import StepsTree
    from app.main_window import MainWindow
    from runtime_host.pod import Pod

    tokens = 600
    fake = FakeModelServer(lambda req: Text("tok " * tokens, chunk_chars=4, delay_s=1 / 200)).start()
    home = Path(tempfile.mkdtemp(prefix="hearth-ui-bench-"))
    pod = Pod(home)
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("bench", provider="fake")
    try:
        inst, _ = pod.find_agent("bench")
        conv = pod.store.create_conversation(inst.id, "long")
        with pod.store.session() as s:
            from runtime_host.store import Message

            t0 = time.time() - 10000
            for i in range(5000):
                s.add(Message(conversation_id=conv.id, role="user" if i % 2 == 0 else "assistant",
                              content=f"Message {i}: some **markdown** with `code` and a [link](https://example.org).",
                              created_at=t0 + i))
            s.commit()
        w = MainWindow(pod, use_tray=False)
        w.resize(1200, 800)
        w.show()
        await asyncio.sleep(0.3)
        opens = []
        for _ in range(3):
            t = time.perf_counter()
            w.load_conversation(conv.id)
            app.processEvents()
            opens.append((time.perf_counter() - t) * 1000)

        # Stall: a 10 ms timer should fire every 10 ms; anything later is the loop being blocked.
        stalls: list[float] = []
        last = [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            stalls.append(max(0.0, (now - last[0]) * 1000 - 10))
            last[0] = now

        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(tick)
        done = asyncio.Event()
        unsubscribe = pod.subscribe(lambda e: done.set() if e["type"] == "turn.finished" else None)
        w.composer.setPlainText("stream something long")
        last[0] = time.perf_counter()
        timer.start()
        w.send()
        await asyncio.wait_for(done.wait(), 120)
        timer.stop()
        unsubscribe()

        nodes = []
        for d in range(10):
            children = [{"id": f"c{d}-{i}", "kind": "tool", "name": "calculate", "arguments": {"expression": f"{i}*2"},
                         "result": {"output": str(i * 2)}, "status": "finished", "started_at": 0.0, "finished_at": 0.01,
                         "children": []} for i in range(99)]
            nodes.append({"id": f"d{d}", "kind": "tool", "name": "delegate", "arguments": {"task": "part"},
                          "result": {"output": "ok"}, "status": "finished", "started_at": 0.0, "finished_at": 1.0,
                          "children": children})
        tree = StepsTree()
        tree.resize(800, 400)
        tree.show()
        expands = []
        for _ in range(3):
            t = time.perf_counter()
            tree.clear_steps()
            tree.load_tree(nodes)
            tree.expandAll()
            app.processEvents()
            expands.append((time.perf_counter() - t) * 1000)
        assert tree.step_count() == 1000
        w.close()
    finally:
        await pod.close()
        fake.stop()
    return {"stall_ms_p99": pct(stalls, 0.99), "stall_ms_max": round(max(stalls), 1), "stall_samples": len(stalls),
            "open_5000_messages_ms": pct(opens, 0.5), "expand_1000_nodes_ms": pct(expands, 0.5)}


def main() -> None:
    launch = launch_ms()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        out = loop.run_until_complete(in_process(app))
    print(json.dumps({"launch_to_interactive_ms": launch, **out}))


if __name__ == "__main__":
    main()
