"""Scale-out benchmark: the pod on PostgreSQL with one and two hosts, lease takeover, and the cost of a
step write on SQLite and PostgreSQL in the same run (a throwaway PostgreSQL on loopback).

Prints one JSON object as its last line: turns_per_s_1_host, turns_per_s_2_hosts, lease_takeover_ms,
write_ms_sqlite, write_ms_postgres. Both "hosts" share this 2-core machine, so the two-host figure shows
that hosts cooperate on one database without conflicts, not extra capacity.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import pct

os.environ["HEARTH_SANDBOX"] = "off"

from runtime_host.store import Store  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402
from tests.helpers.postgres import running_postgres  # noqa: E402

AGENTS = 4
TURNS = 80


def write_ms(url: str, n: int = 300) -> float:
    s = Store(url)
    person = s.default_person()
    inst = s.add_agent(person.id, f"w{time.time_ns()}", provider=None, model=None, system="")
    conv = s.create_conversation(inst.id)
    turn = s.create_turn(conv.id, inst.id)
    out = []
    for i in range(n):
        t = time.perf_counter()
        s.start_step(turn.id, f"s{i}-{time.time_ns()}", kind="tool", name="x", parent_id=None, arguments={"i": i},
                     call_id=None)
        out.append((time.perf_counter() - t) * 1000)
    s.close()
    return round(statistics.median(out), 2)


async def turns_per_s(url: str, hosts: int, base_url: str) -> float:
    from runtime_host.pod import Pod

    os.environ["HEARTH_DATABASE_URL"] = url
    pods = [Pod(Path(tempfile.mkdtemp(prefix=f"hearth-host{i}-"))) for i in range(hosts)]
    try:
        names = []
        for i in range(AGENTS):
            name = f"a{hosts}-{i}"
            if i == 0:
                pods[0].add_provider(f"fake{hosts}", kind="openai-compatible", base_url=base_url, model="fake-1")
            pods[0].add_agent(name, provider=f"fake{hosts}")
            names.append(name)
        for p in pods:
            p.person = p.store.default_person()
        for i, name in enumerate(names):  # warm every worker first
            await pods[i % hosts].chat(name, "warm up")
        t = time.perf_counter()

        async def agent_turns(i: int, name: str) -> None:
            for k in range(TURNS // AGENTS):
                r = await pods[i % hosts].chat(name, f"turn {k}", new_conversation=True)
                assert r.ok, r.error

        await asyncio.gather(*(agent_turns(i, n) for i, n in enumerate(names)))
        return round(TURNS / (time.perf_counter() - t), 1)
    finally:
        for p in pods:
            await p.close()
        os.environ.pop("HEARTH_DATABASE_URL", None)


async def takeover_ms(url: str, base_url: str, runs: int = 5) -> float:
    from runtime_host.pod import Pod

    os.environ["HEARTH_DATABASE_URL"] = url
    host = Pod(Path(tempfile.mkdtemp(prefix="hearth-takeover-")))
    out = []
    try:
        host.add_provider("faket", kind="openai-compatible", base_url=base_url, model="fake-1")
        host.add_agent("t", provider="faket")
        for _ in range(runs):
            turn_id = host.create_background_run("t", "resume me")
            # a host that died holding this turn: its lease ran out just now
            host.store.update_turn(turn_id, status="running", lease_owner="dead-host", lease_until=time.time())
            started = asyncio.Event()
            unsub = host.subscribe(lambda e, tid=turn_id, ev=started: ev.set()
                                   if e["type"] == "turn.started" and e["turn_id"] == tid else None)
            t = time.perf_counter()
            await host.recover()
            await asyncio.wait_for(started.wait(), 30)
            out.append((time.perf_counter() - t) * 1000)
            unsub()
            await host._runs[turn_id].future
    finally:
        await host.close()
        os.environ.pop("HEARTH_DATABASE_URL", None)
    return pct(out, 0.5)


async def main() -> dict[str, float]:
    fake = FakeModelServer(lambda req: Text("ok")).start()
    try:
        sqlite_url = f"sqlite:///{tempfile.mkdtemp(prefix='hearth-sq-')}/pod.db"
        with running_postgres() as pg:
            return {
                "turns_per_s_1_host": await turns_per_s(pg, 1, fake.base_url),
                "turns_per_s_2_hosts": await turns_per_s(pg, 2, fake.base_url),
                "lease_takeover_ms": await takeover_ms(pg, fake.base_url),
                "write_ms_sqlite": write_ms(sqlite_url),
                "write_ms_postgres": write_ms(pg),
            }
    finally:
        fake.stop()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
