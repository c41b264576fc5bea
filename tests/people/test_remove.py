"""Hearth had no way to remove a person: after Bob's "Forget everything about me", his conversations, inboxes (and
their passwords in the keyring), agents (workers, schedules, folders, notes), cards, notifications, activity,
watched folders, kept corrections and reversible-redaction values all stayed. Now a person is removed as a whole
(runtime_host/removal.py): by themselves (their passphrase) or by the person who set Hearth up (typing their name),
with nothing of Alice's touched, nothing of Bob's running meanwhile, and a removal cut short by a kill finished by
running it again. No agent reaches it."""

from __future__ import annotations

import asyncio
import os
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from runtime_host.store import StoreError
from tests.helpers.fake_model import FakeModelServer, Script, Text, ToolCalls
from tests.people.conftest import BOB_PASS

CARD = "4111 1111 1111 1111"


def keyring_names(prefix: str) -> list[str]:
    """What the Secret Service holds for Hearth under ``prefix`` (read here, not through Hearth's vault)."""
    import secretstorage

    with closing(secretstorage.dbus_init()) as bus:
        coll = secretstorage.get_default_collection(bus)
        names = [it.get_attributes().get("username", "") for it in coll.search_items({"service": "Hearth"})]
    return sorted(n for n in names if n.startswith(prefix))


def rows_of(pod: Any, person_id: str) -> dict[str, int]:
    """Every row of pod.db that names the person, by table (any table with a person_id column)."""
    found: dict[str, int] = {}
    engine = pod.store.engine
    insp = inspect(engine)
    with engine.connect() as c:
        for table in insp.get_table_names():
            cols = {col["name"] for col in insp.get_columns(table)}
            col = "person_id" if "person_id" in cols else "id" if table == "person" else None
            if col:
                n = c.execute(text(f"SELECT COUNT(*) FROM {table} WHERE {col} = :p"), {"p": person_id}).scalar()
                if n:
                    found[table] = int(n)
    return found


def said(hits: list[Any], words: str) -> list[Any]:
    return [h for h in hits if words in f"{h.title} {h.snippet}"]


def _inbox(pod: Any, who: Any, address: str) -> Any:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    box = {"host": "127.0.0.1", "port": port, "username": address, "security": "none"}
    return pod.mail.add_account(who.person_id, address, imap=box, smtp=box, password=f"pw-{address}")


async def _furnish(who: Any, fake_model: FakeModelServer, tmp: Path, word: str) -> None:
    """Everything a person has: chat with memory (a reversible card, a household note), an inbox, a schedule, a
    hand-off, a card, a notification, a kept correction, a watched folder, a `serve` token."""
    from runtime_host import keptcorrections, tasks
    from runtime_host.channels.store import ChannelStore
    from runtime_host.serve import new_token

    pod = who.pod
    who.edit_agent("helper", toolkits=["memory", "tasks", "clock"], safety={"reversible": True})
    fake_model.script = Script([
        ToolCalls([("remember", {"fact": f"{who.person.name} pays the {word} shop with card {CARD}."}),
                   ("remember", {"fact": f"The household's {word} boiler is serviced in May.", "scope": "public"})]),
        Text("Noted.")])
    res = await who.chat("helper", f"Remember my {word} things.", new_conversation=True)
    assert res.ok, res.error
    _inbox(pod, who, f"{word}@example.test")
    who.add_schedule("helper", "0 7 * * *", f"Good morning {word}")
    inst = who.find_agent("helper")[0]
    tasks.create(pod.store.engine, person_id=who.person_id, title=f"{word} task", description="d", size="small",
                 owner_instance=inst.id, creator_instance=inst.id, creator_turn=None, parent_id=None)
    channels = ChannelStore(pod.store.engine)
    channels.open_card(who.person_id, "send", f"{word} card")
    chat = len(word) * 1000 + len(who.person.name)  # their phone chat, linked with a code as Settings → Channels gives
    channels.redeem_link_code("telegram", channels.create_link_code("telegram", who.person_id), chat_id=chat,
                              user_id=chat)
    pod.keep_notice(who.person_id, f"{word} notice", "text")
    keptcorrections.keep(pod, who.person_id, {"typed": f"{word} correction"})
    folder = tmp / f"{word}-docs"
    folder.mkdir()
    who.folders.add(folder)
    new_token(who)


async def test_the_owner_removes_bob_with_everything_his_and_nothing_of_alices(
        two: Any, fake_model: FakeModelServer, tmp_path: Path) -> None:
    from runtime_host.channels.store import ChannelStore
    from vault import person_namespace

    alice, bob = two
    alice.rename("Alice")
    pod = alice.pod
    await _furnish(alice, fake_model, tmp_path, "alder")
    await _furnish(bob, fake_model, tmp_path, "birch")
    bob_inst = bob.find_agent("helper")[0]
    worker = pod.supervisor.handles[(bob.person_id, bob_inst.id)].info()["pid"]
    assert worker and os.kill(worker, 0) is None  # Bob's worker runs
    bob_ns, alice_ns = (person_namespace(pod.pod_id, p.person_id) + "/" for p in (bob, alice))
    assert any("/redactions/" in n for n in keyring_names(bob_ns)), keyring_names(bob_ns)  # his card's real value
    assert any("/mail/" in n for n in keyring_names(bob_ns))
    before_alice = rows_of(pod, alice.person_id)
    alice_keys = keyring_names(alice_ns)
    assert said(await bob.memory_search("birch boiler", mode="keyword"), "birch")  # his household note, seen by both
    assert said(await alice.memory_search("birch boiler", mode="keyword"), "birch")

    goes = await alice.what_removal_takes("Bob")
    assert {k: goes[k] for k in ("conversations", "agents", "inboxes")} == {"conversations": 1, "agents": 1, "inboxes": 1}
    assert goes["notes"] >= 2
    with pytest.raises(StoreError, match=r"Type Bob's name \(Bob\) exactly"):
        await alice.remove_person("Bob", "bob")
    assert rows_of(pod, bob.person_id)["person"] == 1  # nothing went
    assert (await alice.remove_person("Bob", "Bob"))["agents"] == 1

    assert [p["name"] for p in alice.people()] == ["Alice"]
    with pytest.raises(StoreError, match="No person named 'Bob'"):
        pod.unlock("Bob", BOB_PASS)
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)  # his worker ended
    assert rows_of(pod, bob.person_id) == {}  # not a row of his in any table
    assert ChannelStore(pod.store.engine).links(person_id=bob.person_id) == []  # his phone no longer reaches Hearth
    assert len(ChannelStore(pod.store.engine).links(person_id=alice.person_id)) == 1
    assert pod.folders.list_folders(bob.person_id) == [] and len(pod.folders.list_folders(alice.person_id)) == 1
    assert pod.store.meta(f"serve_token/{bob.person_id}") is None and pod.store.meta(f"serve_token/{alice.person_id}")
    assert keyring_names(bob_ns) == []  # not a secret of his (mail passwords, provider key, card values)
    assert not (pod.home / "agents" / bob.person_id).exists()
    assert not (pod.home / "memory" / "wiki" / "private" / bob.person_id).exists()
    assert await pod.in_memory_thread(lambda: pod.memory.person_source_count(bob.person_id)) == 0
    assert not said(await alice.memory_search("birch boiler", mode="keyword"), "birch")  # his household note went
    # Alice's all stays: her rows, her secrets, her memory (her own and her household note), her agent answers
    assert rows_of(pod, alice.person_id) == {**before_alice, "audit_log": before_alice["audit_log"] + 1}
    assert keyring_names(alice_ns) == alice_keys
    assert said(await alice.memory_search("alder boiler", mode="keyword"), "alder boiler")
    assert said(await alice.memory_search("alder shop", mode="keyword"), "alder shop")
    assert [r["summary"] for r in alice.audit_log(kind="access") if r["action"] == "removed"] == [
        "removed Bob from this Hearth with everything theirs"]
    fake_model.script = Script([Text("Still here.")])
    assert (await alice.chat("helper", "Are you there?")).ok


async def test_who_may_remove_whom(two: Any) -> None:
    alice, bob = two
    pod = alice.pod
    alice.rename("Alice")
    pod.add_person("Carol", "carol-passphrase")  # she left and forgot it
    with pytest.raises(StoreError, match="Only Carol themselves, or Alice, who set Hearth up, can remove Carol"):
        await bob.remove_person("Carol", "Carol")
    with pytest.raises(StoreError, match="Only Alice themselves"):
        await bob.what_removal_takes("Alice")  # not even what she has is told
    assert [a["summary"] for a in bob.audit_log(kind="access") if a["action"] == "denied"][:2] == [
        "tried to remove Alice", "tried to remove Carol"]
    with pytest.raises(StoreError, match="Alice set Hearth up, so they are removed last: first remove Bob, Carol"):
        await alice.remove_person("Alice", "Alice")
    with pytest.raises(StoreError, match="That is not your passphrase"):
        await bob.remove_person("Bob", "Bob")  # his name is not his passphrase
    assert [p["name"] for p in pod.people()] == ["Alice", "Bob", "Carol"]
    await bob.remove_person("Bob", BOB_PASS)  # Bob removes himself
    await alice.remove_person("Carol", "Carol")  # the owner, without Carol's passphrase
    assert [p["name"] for p in pod.people()] == ["Alice"]
    await alice.remove_person("Alice", "Alice")  # alone now: she may go too, and Hearth starts afresh
    assert pod.store.get_person("Alice") is None
    assert pod.first_person().person.name == "Me"


_KILLED_MIDWAY = """
import asyncio, os, signal, sys
from runtime_host.pod import Pod
from runtime_host import removal
real = removal._clear_vault
def killed(pod, pid):  # the power goes: his workers and schedules stopped, his memory and agents gone, not the rest
    os.kill(os.getpid(), signal.SIGKILL)
removal._clear_vault = killed
async def main():
    pod = Pod(sys.argv[1])
    await pod.first_person().remove_person("Bob", "Bob")
asyncio.run(main())
"""


async def test_a_removal_killed_midway_is_finished_by_running_it_again(home: Path, fake_model: FakeModelServer,
                                                                       secure_keyring: str) -> None:
    import signal
    import subprocess
    import sys

    from runtime_host import removal
    from runtime_host.pod import Pod
    from tests.people.conftest import set_up_two

    pod = Pod(home)
    alice, bob = set_up_two(pod, fake_model.base_url)
    alice.rename("Alice")
    bob.add_schedule("helper", "* * * * *", "tick")
    bob_id = bob.person_id
    assert (await bob.chat("helper", "hello", new_conversation=True)).ok
    await pod.close()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_MIDWAY, str(home)], env=env, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]

    pod = Pod(home)
    try:
        assert [p["removing"] for p in pod.people()] == [False, True]
        with pytest.raises(StoreError, match="Bob is being removed from this Hearth and cannot log in"):
            pod.unlock("Bob", BOB_PASS)
        assert rows_of(pod, bob_id).get("provider") == 1  # the rest waits for the removal to run again
        bobs = pod.for_person(bob_id)
        assert bobs.schedules() == [] and bobs.list_agents() == []  # stopped first, gone before the kill
        alice = pod.unlock("Alice")
        assert (await alice.chat("helper", "still fine?")).ok
        await alice.remove_person("Bob", "Bob")  # run again: finished
        assert rows_of(pod, bob_id) == {}
        assert keyring_names(person_namespace_of(pod, bob_id)) == []
        removal.finish_later(pod)  # the next start finds nothing left to do
    finally:
        await asyncio.wait_for(pod.close(), 20)


def person_namespace_of(pod: Any, person_id: str) -> str:
    from vault import person_namespace

    return person_namespace(pod.pod_id, person_id) + "/"


async def test_a_removal_cut_short_is_finished_at_the_next_start(two: Any, fake_model: FakeModelServer) -> None:
    alice, bob = two
    pod = alice.pod
    for who, said in ((alice, "Alice's plan: paint the shed blue."), (bob, "Bob's plan: sell the red bicycle.")):
        who.set_role_model("extraction", "fake/fake-1")
        inst = who.find_agent("helper")[0]
        conv = pod.store.create_conversation(inst.id, "Plans")
        turn = pod.store.create_turn(conv.id, inst.id, text=said)
        pod.store.add_message(conv.id, "assistant", "Noted.", turn_id=turn.id)
    pod.store.mark_removing(bob.person_id)  # as a kill right after the removal began leaves it
    fake_model.script = lambda req: Text('[{"n": 1, "keep": false, "reason": "small talk"}]')
    await pod.memory_produce()  # the 5-minute memory run: Bob's chat goes to no model now
    asked = " ".join(r.last_user for r in fake_model.requests)
    assert "paint the shed" in asked and "red bicycle" not in asked
    with pytest.raises(StoreError, match="being removed"):
        pod.unlock("Bob", BOB_PASS)
    with pytest.raises(StoreError, match="Bob is being removed from this Hearth; pick another person"):
        await bob.start_agent("helper")  # nothing of his starts meanwhile
    pod.start_background()  # the next start
    for _ in range(400):
        if pod.store.get_person_by_id(bob.person_id) is None:
            break
        await asyncio.sleep(0.05)
    assert rows_of(pod, bob.person_id) == {}
    assert keyring_names(person_namespace_of(pod, bob.person_id)) == []
    assert alice.list_agents() and alice.list_providers(builtin=False)


async def test_an_agent_cannot_remove_anyone_and_nothing_of_bobs_runs_while_he_is_removed(
        two: Any, fake_model: FakeModelServer) -> None:
    """Bob's model tries every name a removal tool might have: none is a tool and the Pod has none, so all stay.
    Then Bob removes himself while his agent is mid-turn (its model still thinking): the turn ends stopped, his
    worker ends, and his schedule never runs again."""
    from datetime import UTC, datetime, timedelta

    from tests.helpers.fake_model import Hang

    alice, bob = two
    pod = alice.pod
    tries = [("remove_person", {"name": "Alice", "confirm": "Alice"}), ("person_remove", {"name": "Alice"}),
             ("people_remove", {"name": "Alice", "yes": True}), ("delete_person", {"name": "Alice"})]
    fake_model.script = Script([ToolCalls(tries), Text("I could not.")])
    res = await bob.chat("helper", "Remove Alice from this Hearth.", new_conversation=True)
    assert res.ok, res.error
    steps = [s for t in bob.turns(res.conversation_id) for s in t["steps"] if s["kind"] == "tool"]
    assert [s["name"] for s in steps] == [n for n, _ in tries] and {s["status"] for s in steps} == {"failed"}
    assert not [n for n in pod.pod_tools if "person" in n or "remov" in n or "people" in n]
    assert [p["name"] for p in pod.people()] == ["Me", "Bob"] and alice.list_agents()

    bob.add_schedule("helper", "* * * * *", "Bob's digest")
    fake_model.script = lambda req: Hang(30) if "thinking" in req.last_user else Text("ok")
    run = await bob.start_turn("helper", "Keep thinking about it.")
    while not any("thinking" in r.last_user for r in fake_model.requests):
        await asyncio.sleep(0.02)
    asked = len(fake_model.requests)
    await bob.remove_person("Bob", BOB_PASS)  # he removes himself, mid-turn
    outcome = await asyncio.wait_for(run.future, 20)
    assert not outcome.ok and pod.turn_driver.active.get(run.turn_id) is None
    assert not [h for h in pod.supervisor.handles.values() if h.key[0] == bob.person_id and h.info().get("pid")]
    await pod.tick(datetime.now(UTC) + timedelta(minutes=2))  # his schedule would have come due
    assert len(fake_model.requests) == asked and "Bob's digest" not in [r.last_user for r in fake_model.requests]
    assert [p["name"] for p in pod.people()] == ["Me"] and alice.list_agents()


def test_people_remove_in_the_cli(home: Path, fake_model: FakeModelServer, secure_keyring: str) -> None:
    import json

    from tests.integration.test_cli import cli

    assert cli(home, "person", "rename", "Alice").returncode == 0
    assert cli(home, "--passphrase-stdin", "person", "add", "Bob", stdin=BOB_PASS + "\n").returncode == 0
    assert cli(home, "person", "add", "Carol").returncode == 0
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "provider", "add", "fake", "--base-url", fake_model.base_url,
            "--model", "fake-1", stdin=BOB_PASS + "\n")
    assert r.returncode == 0, r.stderr
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "agent", "add", "helper", "--provider", "fake",
            stdin=BOB_PASS + "\n")
    assert r.returncode == 0, r.stderr
    r = cli(home, "people", "remove", "Bob")  # as `agent delete`: it says what goes, and needs --yes
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: removing Bob deletes 0 conversation(s), 1 agent(s), 0 inbox(es) and 0 memory note(s) for good; add "
        "--yes to do it."), r.stderr
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "people", "remove", "Carol", "--yes", stdin=BOB_PASS + "\n")
    assert r.returncode == 2 and "Only Carol themselves, or Alice, who set Hearth up, can remove Carol." in r.stderr
    r = cli(home, "people", "remove", "Alice", "--yes")
    assert r.returncode == 2 and "first remove Bob, Carol" in r.stderr, r.stderr
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "person", "remove", "Bob", "--yes", stdin=BOB_PASS + "\n")
    assert r.returncode == 0 and r.stdout.strip() == (
        "Bob was removed from this Hearth with everything theirs: 0 conversation(s), 1 agent(s), 0 inbox(es), "
        "0 memory note(s)."), (r.stdout, r.stderr)
    assert cli(home, "people", "remove", "Carol", "--yes").returncode == 0  # the owner, by her name
    assert [p["name"] for p in json.loads(cli(home, "people", "list", "--json").stdout)] == ["Alice"]
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "agent", "list", stdin=BOB_PASS + "\n")
    assert r.returncode == 2 and "No person named 'Bob'" in r.stderr


async def test_a_removal_that_stops_says_why_and_what_to_do(two: Any) -> None:
    """Bob's agent folder cannot be removed (here: a file stands where the folder was): the removal stops with the
    reason and what to do, Bob stays locked out, and removing him again once it is put right finishes it."""
    alice, bob = two
    folder = alice.pod.home / "agents" / bob.person_id / bob.find_agent("helper")[0].id
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("not a folder")
    with pytest.raises(StoreError) as stopped:
        await alice.remove_person("Bob", "Bob")
    said = str(stopped.value)
    assert said.startswith("Bob's removal stopped before the end: Agent helper's folder") and said.endswith(
        "They cannot log in meanwhile; once that is put right, remove Bob again to finish it (Hearth also tries at "
        "its next start)."), said
    with pytest.raises(StoreError, match="being removed"):
        alice.pod.unlock("Bob", BOB_PASS)
    folder.unlink()
    await alice.remove_person("Bob", "Bob")
    assert rows_of(alice.pod, bob.person_id) == {} and alice.list_agents()
