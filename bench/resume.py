"""Crash-resume benchmark: 50 multi-step turns, each worker SIGKILLed at a random point mid-turn.

Each turn asks the agent to write three notes, one tool call at a time (a real side effect: a line
appended to the agent's notes file). Prints one JSON object as its last line: turns, resumed (turns
that were killed at least once and still finished), lost (turns that did not finish), and
duplicated_side_effects (notes written more than once).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import re
import signal
import tempfile
import threading
from pathlib import Path

from _common import ROOT  # noqa: F401  (sets sys.path and the loopback-only switch)

from runtime_host.pod import Pod  # noqa: E402
from runtime_host.supervisor import SupervisorConfig  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text, ToolCalls  # noqa: E402

TURNS = 50
NOTES_PER_TURN = 3
rng = random.Random(20261202)


class Killer:
    """Kills the agent's worker once per turn, at a random request of that turn, after a random delay."""

    def __init__(self) -> None:
        self.pid_of: callable = lambda: None  # type: ignore[valid-type]
        self.plan: dict[str, int] = {}
        self.seen: collections.Counter[str] = collections.Counter()
        self.killed: set[str] = set()
        self.lock = threading.Lock()

    def maybe_kill(self, turn_key: str) -> None:
        with self.lock:
            self.seen[turn_key] += 1
            n = self.seen[turn_key]
            target = self.plan.setdefault(turn_key, rng.randint(1, NOTES_PER_TURN + 1))
            if turn_key in self.killed or n != target:
                return
            self.killed.add(turn_key)
        pid = self.pid_of()
        if pid:
            threading.Timer(rng.uniform(0.0, 0.06), lambda: _kill(pid)).start()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def make_model(killer: Killer):
    def model(req):
        turn_key = req.last_user
        killer.maybe_kill(turn_key)
        done = sum(1 for r in req.tool_results if r.startswith("noted:"))
        if done >= NOTES_PER_TURN:
            return Text("all notes written", chunk_chars=2, delay_s=0.02)
        return ToolCalls([("append_note", {"text": f"{turn_key} / note {done + 1}"})])

    return model


async def main() -> dict[str, int]:
    killer = Killer()
    fake = FakeModelServer(make_model(killer)).start()
    home = Path(tempfile.mkdtemp(prefix="hearth-resume-"))
    # a generous restart cap: this benchmark kills 50 times in a minute on purpose
    pod = Pod(home, supervisor_config=SupervisorConfig(max_restarts=1000, health_interval_s=3600))
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("scribe", provider="fake", toolkits=["notes"])

    def current_pid() -> int | None:
        h = next(iter(pod.supervisor.handles.values()), None)
        return h.pid if h and h.proc and h.proc.returncode is None else None

    killer.pid_of = current_pid
    results = []
    try:
        for i in range(TURNS):
            r = await asyncio.wait_for(pod.chat("scribe", f"turn-{i:02d}", new_conversation=True), 120)
            results.append(r)
        turns = {t["id"]: t for c in {r.conversation_id for r in results} for t in pod.turns(c)}
        inst = pod.find_agent("scribe")[0]
        notes = (home / "agents" / inst.person_id / inst.id / "notes.md").read_text(encoding="utf-8")
    finally:
        await pod.close()
        fake.stop()
    lines = [re.sub(r" <!-- step:\w+ -->$", "", ln)[2:] for ln in notes.splitlines() if ln.strip()]
    counts = collections.Counter(lines)
    expected = {f"turn-{i:02d} / note {k}" for i in range(TURNS) for k in range(1, NOTES_PER_TURN + 1)}
    done = [r for r in results if r.ok]
    resumed = [r for r in done if turns[r.turn_id]["restarts"] >= 1]
    return {
        "turns": TURNS,
        "resumed": len(resumed),
        "lost": TURNS - len(done) + len(expected - set(counts)),
        "duplicated_side_effects": sum(c - 1 for c in counts.values() if c > 1),
        "kills": len(killer.killed),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
