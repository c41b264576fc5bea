"""Storage errors during a turn and at start: a full disk (a real SQLite refusing to grow, through
PRAGMA max_page_count) or a locked database ends the turn with a clear reason, stops its worker and keeps
what was written; a read-only data folder gives one clear message at start (CLI and window)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from sqlalchemy import event

from tests.helpers.fake_model import Text, ToolCalls


def worker_pids() -> list[int]:
    me = psutil.Process()
    return [c.pid for c in me.children(recursive=True) if "runtime_host.worker" in " ".join(c.cmdline())]


@contextlib.contextmanager
def pragma_on_every_connection(pod, pragma) -> Iterator[None]:
    """Applies `pragma(cursor)` to every new connection of the pod's real SQLite engine, for a while."""
    def on_connect(conn, _record) -> None:
        cur = conn.cursor()
        pragma(cur)
        cur.close()

    event.listen(pod.store.engine, "connect", on_connect)
    pod.store.engine.dispose()
    try:
        yield
    finally:
        event.remove(pod.store.engine, "connect", on_connect)
        pod.store.engine.dispose()


def disk_full(cur) -> None:
    pages = cur.execute("PRAGMA page_count").fetchone()[0]
    cur.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow by one page: SQLITE_FULL


async def test_a_full_disk_ends_the_turn_clearly_stops_the_worker_and_keeps_what_was_written(pod, script) -> None:
    script([ToolCalls([("calculate", {"expression": "6 * 7"})], text="Let me work that out. " * 20000),
            Text("The answer is 42."), Text("back to normal")])
    full = contextlib.ExitStack()
    started = asyncio.Event()
    pod.subscribe(lambda ev: started.set() if ev["type"] == "turn.started" else None)
    run = await pod.start_turn("helper", "what is 6 times 7?")
    await asyncio.wait_for(started.wait(), 30)
    full.enter_context(pragma_on_every_connection(pod, disk_full))
    try:
        result = await asyncio.wait_for(run.future, 30)  # ends: never hangs silently
        assert result.status == "failed" and result.error_kind == "storage"
        assert result.error.startswith("The disk is full") and "Free some space and retry" in result.error
        await asyncio.sleep(0.5)
        for _ in range(50):
            if not worker_pids():
                break
            await asyncio.sleep(0.1)
        assert worker_pids() == []  # its worker was stopped, not left waiting for an ack
    finally:
        full.close()
    # nothing already written was lost: the message and the first step are there
    msgs = pod.store.list_messages(result.conversation_id)
    assert [(m.role, m.content) for m in msgs][:1] == [("user", "what is 6 times 7?")]
    steps = pod.store.list_steps(result.turn_id)
    assert steps and steps[0].kind == "model"
    # once there is room again, the same conversation goes on with a fresh worker
    again = await asyncio.wait_for(pod.chat("helper", "and now?", conversation_id=result.conversation_id), 30)
    assert again.ok, again.error


async def test_a_locked_database_ends_the_turn_with_the_reason(pod, script, home) -> None:
    import sqlite3

    script([lambda req: Text("fine again" if "again" in req.last_user else "x" * 50000)], repeat_last=True)
    started = asyncio.Event()
    pod.subscribe(lambda ev: started.set() if ev["type"] == "turn.started" else None)
    run = await pod.start_turn("helper", "hello")
    await asyncio.wait_for(started.wait(), 30)
    other = sqlite3.connect(home / "pod.db", timeout=0.1)
    with pragma_on_every_connection(pod, lambda cur: cur.execute("PRAGMA busy_timeout = 200")):
        other.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
        try:
            result = await asyncio.wait_for(run.future, 30)
        finally:
            other.rollback()
            other.close()
    assert result.status == "failed" and result.error_kind == "storage"
    assert "locked by another program" in result.error and "retry" in result.error
    again = await asyncio.wait_for(pod.chat("helper", "hello again", conversation_id=result.conversation_id), 30)
    assert again.ok and again.text == "fine again"


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """A read-only data folder. chmod alone does not stop root, so as root the folder and its files are
    also made immutable (chattr +i), which stops root too."""
    paths = [folder, *folder.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    immutable: list[Path] = []
    try:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        if os.geteuid() == 0:
            for p in sorted(paths, key=lambda p: -len(p.parts)):
                if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode != 0:
                    pytest.skip("this file system cannot make a folder read-only for root (no chattr +i)")
                immutable.append(p)
        yield
    finally:
        for p in immutable:
            subprocess.run(["chattr", "-i", str(p)], capture_output=True)
        for p, mode in modes.items():
            with contextlib.suppress(OSError):
                p.chmod(mode)


def test_a_read_only_data_folder_gives_one_clear_message_in_the_cli(home, fake_model) -> None:
    from tests.integration.test_cli import cli, setup_agent

    setup_agent(home, fake_model.base_url)
    with read_only(home):
        r = cli(home, "agent", "list")
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: Hearth cannot write to its data folder {home}")
    assert "HEARTH_HOME" in r.stderr and "Traceback" not in r.stderr and "sqlalchemy" not in r.stderr.lower()
    assert len(r.stderr.strip().splitlines()) == 1
    assert cli(home, "agent", "list").returncode == 0  # writable again: it works


def test_a_read_only_data_folder_gives_one_clear_message_in_the_window(home) -> None:
    from runtime_host.pod import Pod

    asyncio.run(_make_pod(home))
    env = {**os.environ, "HEARTH_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    with read_only(home):
        r = subprocess.run([sys.executable, "-m", "app", "--quit-after", "0.5"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert r.returncode == 1, r.stderr
    assert f"Hearth cannot write to its data folder {home}" in r.stderr and "Traceback" not in r.stderr
    assert Pod  # the same Pod opens the folder once it is writable again
    asyncio.run(_make_pod(home))


async def _make_pod(home: Path) -> None:
    from runtime_host.pod import Pod

    p = Pod(home)
    await p.close()
