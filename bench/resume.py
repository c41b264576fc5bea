"""Crash-resume benchmark: turns of three shapes, each worker SIGKILLed once at a random point mid-turn.

Shapes (a third of the turns each), every one writing real side effects (lines in the agent's notes file):
- sequential: three notes, one tool call per answer;
- parallel: three notes asked in one answer (three tool calls of one model step);
- sub-agents: two `delegate` calls in one answer, each sub-agent writing one note (it reads its notes first,
  as the interrupted result tells it to, so a re-delegated task is not written twice).
The kill lands at a random step boundary of the turn (the Pod has written the step and the worker waits for
its ack), half of the time a few milliseconds later (mid-step). The model asks again for what an
interrupted call left undone. The fake model refuses a request whose tool calls and results do not pair,
as the real providers do (HTTP 400).

Prints one JSON object as its last line: turns, resumed (killed at least once and still finished), lost
(turns that did not finish, plus notes never written), duplicated_side_effects (notes written more than
once), unpaired_tool_calls (requests the model refused for unpaired calls), kills.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import random
import re
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

from _common import ROOT  # noqa: F401  (sets sys.path and the loopback-only switch)

from runtime_host.pod import Pod  # noqa: E402
from runtime_host.supervisor import SupervisorConfig  # noqa: E402
from runtime_host.worker.loop import SUBAGENT_SYSTEM  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Request, Text, ToolCalls  # noqa: E402

TURNS = 48
SHAPES = ("sequential", "parallel", "sub-agents")
NOTES = 3
rng = random.Random(20261203)


def kill_tree(pid: int) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):
        outer = psutil.Process(pid)
        for p in [*outer.children(recursive=True), outer]:
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)


def noted(req: Request) -> set[str]:
    return {r.removeprefix("noted: ") for r in req.tool_results if r.startswith("noted: ")}


def model(req: Request) -> Any:
    prompt = req.last_user
    if SUBAGENT_SYSTEM in req.system:  # a sub-agent: read the notes, write its one note if missing, answer
        note = f"{prompt} note"
        if not req.tool_results:
            return ToolCalls([("read_notes", {"last": 500})])
        if note in noted(req) or any(note in r for r in req.tool_results if not r.startswith("noted: ")):
            return Text(f"{prompt}: done")
        return ToolCalls([("append_note", {"text": note})])
    shape, _ = prompt.split(" ", 1)
    if shape == "sub-agents":
        done = {r.removesuffix(": done") for r in req.tool_results if r.endswith(": done")}
        missing = [f"{prompt} / sub {k}" for k in (1, 2) if f"{prompt} / sub {k}" not in done]
        if missing:
            return ToolCalls([("delegate", {"task": t}) for t in missing])
        return Text("both sub-agents done")
    wanted = [f"{prompt} / note {k}" for k in range(1, NOTES + 1)]
    missing = [n for n in wanted if n not in noted(req)]
    if not missing:
        return Text("all notes written", chunk_chars=4, delay_s=0.01)
    if shape == "sequential":
        return ToolCalls([("append_note", {"text": missing[0]})])
    return ToolCalls([("append_note", {"text": n}) for n in missing])


class Killer:
    """Kills the agent's worker once per turn, at a random step boundary, now or a few ms later."""

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.target = 0
        self.delay = 0.0
        self.seen = 0
        self.killed = 0
        self.armed = False

    def arm(self) -> None:
        self.target = rng.randint(0, 11)
        self.delay = rng.choice([0.0, rng.uniform(0.001, 0.03)])
        self.seen = 0
        self.armed = True

    def __call__(self, ev: dict[str, Any]) -> None:
        if not self.armed or ev.get("type") not in ("step.started", "step.finished"):
            return
        if self.seen == self.target:
            self.armed = False
            self.killed += 1
            pids = [h.pid for h in self.pod.supervisor.handles.values()
                    if h.proc is not None and h.proc.returncode is None and h.pid]
            for pid in pids:
                if self.delay:
                    threading.Timer(self.delay, kill_tree, (pid,)).start()
                else:
                    kill_tree(pid)
        self.seen += 1


async def main() -> dict[str, int]:
    fake = FakeModelServer(model).start()
    home = Path(tempfile.mkdtemp(prefix="hearth-resume-"))
    # a generous restart cap and no backoff: this benchmark kills a worker in almost every turn on purpose
    pod = Pod(home, supervisor_config=SupervisorConfig(max_restarts=1000, health_interval_s=3600,
                                                       backoff_base_s=0.01, backoff_max_s=0.05)).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("scribe", provider="fake", toolkits=["notes", "delegate"])
    killer = Killer(pod)
    pod.subscribe(killer)
    results = []
    prompts = [f"{SHAPES[i % 3]} turn-{i:02d}" for i in range(TURNS)]
    try:
        for prompt in prompts:
            killer.arm()
            try:
                r = await asyncio.wait_for(pod.chat("scribe", prompt, new_conversation=True), 120)
            except TimeoutError:
                r = None
            results.append(r)
        done = [r for r in results if r is not None and r.ok]
        restarts = {r.turn_id: pod.turns(r.conversation_id)[0]["restarts"] for r in done}
        inst = pod.find_agent("scribe")[0]
        notes_file = home / "agents" / inst.person_id / inst.id / "notes.md"
        notes = notes_file.read_text(encoding="utf-8") if notes_file.exists() else ""
    finally:
        await pod.close()
        fake.stop()
    lines = [re.sub(r" <!-- step:\w+ -->$", "", ln)[2:] for ln in notes.splitlines() if ln.strip()]
    counts = collections.Counter(lines)
    expected = set()
    for p in prompts:
        if p.startswith("sub-agents"):
            expected |= {f"{p} / sub {k} note" for k in (1, 2)}
        else:
            expected |= {f"{p} / note {k}" for k in range(1, NOTES + 1)}
    return {
        "turns": TURNS,
        "resumed": sum(1 for r in done if restarts[r.turn_id] >= 1),
        "lost": TURNS - len(done) + len(expected - set(counts)),
        "duplicated_side_effects": sum(c - 1 for c in counts.values() if c > 1),
        "unpaired_tool_calls": len(fake.pairing_errors),
        "kills": killer.killed,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
