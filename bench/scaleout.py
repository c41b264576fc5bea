"""Scale-out benchmark: the pod on PostgreSQL with one and two hosts, lease takeover, and the cost of a
step write on SQLite and PostgreSQL in the same run (a throwaway PostgreSQL on loopback).

Prints one JSON object as its last line: turns_per_s_1_host, turns_per_s_2_hosts, lease_takeover_ms (a running
host takes over a SIGKILLed host's turn; it includes the lease_s seconds the lease needs to run out),
write_ms_sqlite, write_ms_postgres. Both "hosts" share this 2-core machine, so the two-host figure shows
that hosts cooperate on one database without conflicts, not extra capacity.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import pct

os.environ["HEARTH_SANDBOX"] = "off"

from runtime_host.store import Store  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text, ToolCalls  # noqa: E402
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
    pods = [Pod(Path(tempfile.mkdtemp(prefix=f"hearth-host{i}-"))).first_person() for i in range(hosts)]
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


HOST = r"""
import asyncio
from runtime_host.pod import Pod
async def main():
    pod = Pod()
    pod.start_background()
    await pod.recover()
    print("up", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""
LEASE_S = 3


def _host(home: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOST], env={**env, "HEARTH_HOME": str(home)}, text=True,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up", "a host did not start"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole host: pod and workers
    proc.wait(10)


async def takeover_ms(url: str, runs: int = 3) -> float:
    """A real takeover: host B runs all along; host A owns a turn and is SIGKILLed after its tool step, in the
    middle of its second model call. Measured from the SIGKILL until B holds the turn's lease (this includes
    waiting for A's lease of LEASE_S seconds to run out); each turn then finishes on B."""
    from runtime_host.pod import Pod

    def model(req: Any) -> Any:
        if not req.tool_results:
            return ToolCalls([("append_note", {"text": "booked"})])
        return Text("done after the takeover", delay_s=0.2, chunk_chars=1)

    fake = FakeModelServer(model).start()
    env = {**os.environ, "HEARTH_DATABASE_URL": url, "HEARTH_LEASE_S": str(LEASE_S), "HEARTH_SANDBOX": "off"}
    os.environ["HEARTH_DATABASE_URL"] = url
    admin = Pod(Path(tempfile.mkdtemp(prefix="hearth-takeover-"))).first_person()  # writes rows only; runs no turn
    admin.add_provider("faket", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    admin.add_agent("taker", provider="faket", toolkits=["notes"])
    host_b = _host(Path(tempfile.mkdtemp(prefix="hearth-host-b-")), env)
    out = []
    try:
        for i in range(runs):
            turn_id = admin.create_background_run("taker", f"book table {i}")
            host_a = _host(Path(tempfile.mkdtemp(prefix="hearth-host-a-")), env)  # takes the turn as it starts
            try:
                for _ in range(2000):  # until A has run the tool and is in its second model call
                    steps = admin.store.list_steps(turn_id)
                    if any(st.kind == "tool" and st.status == "finished" for st in steps) and \
                            sum(1 for st in steps if st.kind == "model") >= 2:
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise RuntimeError("host A never reached its second model call")
                t = time.perf_counter()
                _kill(host_a)
            finally:
                _kill(host_a)
            for _ in range(6000):
                owner = admin.store.get_turn(turn_id).lease_owner or ""
                if owner.split(":")[1:2] == [str(host_b.pid)]:
                    break
                await asyncio.sleep(0.01)
            else:
                raise RuntimeError("host B never took the turn over")
            out.append((time.perf_counter() - t) * 1000)
            for _ in range(3000):
                if admin.store.get_turn(turn_id).status == "done":
                    break
                await asyncio.sleep(0.01)
            else:
                raise RuntimeError(f"the turn ended {admin.store.get_turn(turn_id).status} after the takeover")
            tools = [st for st in admin.store.list_steps(turn_id) if st.kind == "tool"]
            assert len(tools) == 1, "the tool step ran again after the takeover"
    finally:
        _kill(host_b)
        await admin.close()
        fake.stop()
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
                "lease_takeover_ms": await takeover_ms(pg),
                "lease_s": LEASE_S,
                "write_ms_sqlite": write_ms(sqlite_url),
                "write_ms_postgres": write_ms(pg),
            }
    finally:
        fake.stop()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
