"""Hostile-model benchmark: a model server that tries to wedge Hearth, against real workers.

Cases (each in its own conversation; the hostile model never gives up unless noted):
- 5000 tool calls in every answer;
- 30 delegates in every answer, whose sub-agents never finish;
- 2000 delegates in every answer (sub-agents answer at once);
- the calculate bomb ((10**999)**999)**999 in every answer;
- two 5 MB answers in one conversation;
- an answer that never stops streaming;
- a stream that trickles a few bytes a second forever (ended by the turn's time limit);
- garbage bytes instead of a stream.
After each hostile turn the model turns sane and the same conversation gets one more message: a
conversation is wedged if that message is not answered. A turn is hung if it did not end by its time
limit plus the Pod's grace.

Prints one JSON object as its last line: wedged_conversations (target 0), max_turn_model_calls (target ≤
model_call_budget), max_turn_s (target ≤ turn_limit_s), hung_turns (target 0), and per-case figures.
"""

from __future__ import annotations

import os

os.environ.setdefault("HEARTH_TURN_LIMIT_S", "60")  # the limit this benchmark holds turns to

import asyncio  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from _common import ROOT  # noqa: E402, F401  (sets sys.path and the loopback-only switch)

import runtime_host.pod as pod_module  # noqa: E402
import runtime_host.turns as turns_module  # noqa: E402
from runtime_host.supervisor import SupervisorConfig  # noqa: E402
from runtime_host.worker.loop import MODEL_CALL_BUDGET, SUBAGENT_SYSTEM  # noqa: E402
from tests.helpers.fake_model import Endless, FakeModelServer, Raw, Request, Text, ToolCalls  # noqa: E402

FIVE_MB = "All work and no play makes Jack a dull boy. " * (5 * 1024 * 1024 // 44)


class Concurrency:
    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __enter__(self) -> None:
        with self.lock:
            self.live += 1
            self.peak = max(self.peak, self.live)

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.live -= 1


subs = Concurrency()


def sub_agent(answer: Any):  # type: ignore[no-untyped-def]
    def model(req: Request) -> Any:
        if SUBAGENT_SYSTEM in req.system:
            with subs:
                time.sleep(0.05)
                return answer(req) if callable(answer) else answer
        return None

    return model


def lead_or_sub(lead: Any, sub: Any):  # type: ignore[no-untyped-def]
    in_sub = sub_agent(sub)

    def model(req: Request) -> Any:
        return in_sub(req) if SUBAGENT_SYSTEM in req.system else lead(req)

    return model


CASES: dict[str, Any] = {
    "5000 tool calls": lambda req: ToolCalls([("current_time", {"timezone": "UTC"})] * 5000),
    "30 delegates": lead_or_sub(lambda req: ToolCalls([("delegate", {"task": f"part {i}"}) for i in range(30)]),
                                lambda req: ToolCalls([("current_time", {})])),
    "2000 delegates": lead_or_sub(lambda req: ToolCalls([("delegate", {"task": f"part {i}"}) for i in range(2000)]),
                                  lambda req: Text("done")),
    "calculate bomb": lambda req: ToolCalls([("calculate", {"expression": "((10**999)**999)**999"})]),
    "huge answers": lambda req: Text(FIVE_MB, chunk_chars=64 * 1024),
    "endless stream": lambda req: Endless("and on and on " * 2000),
    "trickle": lambda req: Endless("drip ", delay_s=0.5),
    "garbage": lambda req: Raw(os.urandom(4096) + b"\n\ndata: {not json\n\n"),
}


async def main() -> dict[str, Any]:
    import tempfile
    from pathlib import Path

    fake = FakeModelServer().start()
    pod = pod_module.Pod(Path(tempfile.mkdtemp(prefix="hearth-hostile-")),
                         supervisor_config=SupervisorConfig(health_interval_s=3600))
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("target", provider="fake", toolkits=["clock", "math", "delegate", "notes"])
    limit = turns_module.TURN_TIME_LIMIT_S
    grace = turns_module.TURN_STOP_GRACE_S
    report: dict[str, Any] = {}
    wedged = hung = 0
    max_calls = 0
    max_s = 0.0
    try:
        for name, hostile in CASES.items():
            fake.script = hostile
            before = len(fake.requests) + len(fake.pairing_errors)
            t = time.monotonic()
            conv = None
            outcome = "hung"
            rounds = 2 if name == "huge answers" else 1
            try:
                for _ in range(rounds):
                    run = await pod.start_turn("target", f"{name}: go", conversation_id=conv, new_conversation=conv is None)
                    conv = run.conversation_id
                    r = await asyncio.wait_for(run.future, limit + grace + 30)
                    outcome = r.status
            except TimeoutError:
                hung += 1
            took = time.monotonic() - t
            calls = len(fake.requests) + len(fake.pairing_errors) - before
            max_calls = max(max_calls, calls // rounds)
            max_s = max(max_s, took / rounds)
            # the same conversation must still answer
            fake.script = lambda req: Text("still here")
            answered = False
            try:
                after = await asyncio.wait_for(pod.chat("target", "are you still there?", conversation_id=conv), 90)
                answered = after.ok and after.text == "still here"
            except TimeoutError:
                pass
            wedged += 0 if answered else 1
            report[name] = {"status": outcome, "s": round(took / rounds, 1), "model_calls": calls // rounds,
                            "answers_next": answered}
            print(json.dumps({name: report[name]}), flush=True)
    finally:
        await pod.close()
        fake.stop()
    return {
        "wedged_conversations": wedged,
        "max_turn_model_calls": max_calls,
        "model_call_budget": MODEL_CALL_BUDGET,
        "max_turn_s": round(max_s, 1),
        "turn_limit_s": limit,
        "hung_turns": hung,
        "max_concurrent_subagents": subs.peak,
        "cases": len(CASES),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
