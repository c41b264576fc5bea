"""Desktop benchmark: launch to an interactive window; opening a 5,000-message conversation stored in the Pod's
SQLite and scrolling to its top (every earlier page loaded); event-loop stalls while an answer with 20 tool
calls (each opened as it arrives) streams at 200 tokens/s into that conversation; a 1,000-node steps tree.

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
from PySide6.QtCore import QTimer, QUrl  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.helpers.fake_model import FakeModelServer, Text, ToolCalls  # noqa: E402


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


def _seed_long_conversation(pod, agent: str, messages: int = 5000) -> str:
    """A real conversation in the Pod's SQLite: turns, each with the person's message, a tool call and the
    answer, written through the store the Pod uses (as the Pod writes them), one transaction per 500."""
    from runtime_host.store import Message, Turn, TurnStep

    inst, _ = pod.find_agent(agent)
    conv = pod.store.create_conversation(inst.id, "long")
    t0 = time.time() - 100_000
    with pod.store.session() as s:
        for i in range(messages // 2):
            at = t0 + i * 10
            turn = Turn(conversation_id=conv.id, instance_id=inst.id, status="done", model="fake-1", iterations=2,
                        created_at=at, started_at=at, finished_at=at + 1)
            s.add(turn)
            s.add(Message(conversation_id=conv.id, turn_id=turn.id, role="user", created_at=at,
                          content=f"Question {i}: what is {i} times 2? Some **markdown** and `code`."))
            if i % 10 == 0:  # every tenth answer used a tool
                s.add(TurnStep(id=f"s{i}", turn_id=turn.id, seq=0, kind="tool", name="calculate",
                               arguments=json.dumps({"expression": f"{i}*2"}), result=json.dumps({"output": str(i * 2)}),
                               status="finished", started_at=at, finished_at=at + 0.01))
            s.add(Message(conversation_id=conv.id, turn_id=turn.id, role="assistant", created_at=at + 1,
                          content=f"Answer {i}: it is **{i * 2}**. See [the docs](https://example.org).\n\n"
                                  "```python\nprint(%d * 2)\n```" % i))
            if i % 250 == 249:
                s.commit()
        s.commit()
    return conv.id


async def in_process(app: QApplication) -> dict[str, float]:
    from app.chat_view import StepsTree
    from app.main_window import MainWindow
    from runtime_host.pod import Pod

    tokens = 600

    def model(req):  # 20 tool calls in two rounds, then a long answer streamed at 200 tokens/s
        if len(req.tool_results) < 20:
            n = len(req.tool_results)
            return ToolCalls([("calculate", {"expression": f"{n + k}*3"}) for k in range(10)])
        return Text("tok " * tokens, chunk_chars=4, delay_s=1 / 200)

    fake = FakeModelServer(model).start()
    home = Path(tempfile.mkdtemp(prefix="hearth-ui-bench-"))
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("bench", provider="fake")
    try:
        conv_id = _seed_long_conversation(pod, "bench")
        w = MainWindow(pod, use_tray=False)
        w.resize(1200, 800)
        w.show()
        await asyncio.sleep(0.3)
        opens = []
        for _ in range(3):
            # Open it and scroll to its top: each time the top is reached the page before loads.
            t = time.perf_counter()
            w.load_conversation(conv_id)
            await asyncio.sleep(0)
            bar = w.chat.verticalScrollBar()
            while w.chat._shown < len(w.chat._all):
                bar.setValue(0)  # the person reaches the top: the page before loads
                await asyncio.sleep(0)
            bar.setValue(0)
            await asyncio.sleep(0)
            opens.append((time.perf_counter() - t) * 1000)
            assert "Question 0:" in w.chat.toPlainText() and bar.value() == 0
        total_messages = len(w.chat._all)

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
        opened: list[str] = []

        def on_event(e: dict) -> None:
            if e["type"] == "turn.finished":
                done.set()
            elif e["type"] == "step.started" and e["kind"] == "tool":
                # the person opens each tool call's details as it arrives
                QTimer.singleShot(0, lambda sid=e["step_id"]: (opened.append(sid),
                                                                w.chat.anchorClicked.emit(QUrl(f"hearth-step:{sid}"))))

        unsubscribe = pod.subscribe(on_event)
        w.chat.verticalScrollBar().setValue(w.chat.verticalScrollBar().maximum())
        w.composer.setPlainText("stream something long")
        last[0] = time.perf_counter()
        timer.start()
        w.send()
        await asyncio.wait_for(done.wait(), 120)
        await asyncio.sleep(0.1)
        timer.stop()
        unsubscribe()
        tree = w.chat.toPlainText()
        assert len(opened) == 20 and tree.count("Result: ") >= 20, (len(opened), tree.count("Result: "))

        nodes = []
        for d in range(10):
            children = [{"id": f"c{d}-{i}", "kind": "tool", "name": "calculate", "arguments": {"expression": f"{i}*2"},
                         "result": {"output": str(i * 2)}, "status": "finished", "started_at": 0.0, "finished_at": 0.01,
                         "children": []} for i in range(99)]
            nodes.append({"id": f"d{d}", "kind": "tool", "name": "delegate", "arguments": {"task": "part"},
                          "result": {"output": "ok"}, "status": "finished", "started_at": 0.0, "finished_at": 1.0,
                          "children": children})
        steps_tree = StepsTree()
        steps_tree.resize(800, 400)
        steps_tree.show()
        expands = []
        for _ in range(3):
            t = time.perf_counter()
            steps_tree.clear_steps()
            steps_tree.load_tree(nodes)
            steps_tree.expandAll()
            app.processEvents()
            expands.append((time.perf_counter() - t) * 1000)
        assert steps_tree.step_count() == 1000
        w.close()
    finally:
        await pod.close()
        await asyncio.sleep(0.1)  # let the pod's cancelled background tasks end before the loop does
        fake.stop()
    return {"stall_ms_p99": pct(stalls, 0.99), "stall_ms_max": round(max(stalls), 1), "stall_samples": len(stalls),
            "open_5000_messages_ms": pct(opens, 0.5), "opened_messages": total_messages,
            "stream_tool_calls_expanded": len(opened), "expand_1000_nodes_ms": pct(expands, 0.5)}


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
