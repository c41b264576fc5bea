"""Removing Bob while another Hearth process (the window, the CLI) still acts as him: that process can give him
nothing new (no provider, key, watched folder or inbox is kept for a person who no longer exists), its mail watcher
fetches nothing of his, and rows a race left with no person are deleted with their passwords."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime_host.store import StoreError
from tests.helpers.fake_model import FakeModelServer
from tests.people.conftest import BOB_PASS
from tests.people.test_remove import _inbox, keyring_names, rows_of


async def test_a_process_that_unlocked_bob_before_cannot_give_him_anything_after_his_removal(
        two: Any, tmp_path: Path, fake_model: FakeModelServer) -> None:
    """The window shows Bob (unlocked) while the owner removes him with the CLI (another process). The window's
    every action as Bob is refused with words that say why and what to do; nothing of his is kept."""
    from runtime_host.pod import Pod
    from vault import person_namespace

    alice, bob = two
    pod = alice.pod
    bob_id = bob.person_id
    other = Pod(pod.home)
    try:
        bob_elsewhere = other.unlock("Bob", BOB_PASS)
        await alice.remove_person("Bob", "Bob")
        folder = tmp_path / "bob-diary"
        folder.mkdir()
        (folder / "diary.txt").write_text("Dear diary, Bob's secret plans.")
        acts = ((lambda: bob_elsewhere.add_provider("extra", kind="openai-compatible", base_url=fake_model.base_url,
                                                   model="fake-1", key="sk-bob-after-removal"), "Bob"),
                (lambda: bob_elsewhere.folders.add(folder), "Bob"),
                (lambda: bob_elsewhere.add_agent("another", provider="fake", system="s", toolkits=["clock"]), "Bob"),
                (lambda: _inbox(other, bob_elsewhere, "bob-again@example.test"), "This person"))  # Mail's own form
        for act, who in acts:
            with pytest.raises(StoreError, match=f"{who} was removed from this Hearth; pick another person"):
                act()
        with pytest.raises(StoreError, match="Bob was removed from this Hearth"):
            await bob_elsewhere.start_turn("helper", "Hello?")
        assert other.folders.list_folders(bob_id) == []
        assert rows_of(pod, bob_id) == {}
        assert keyring_names(person_namespace(pod.pod_id, bob_id) + "/") == []
        assert alice.list_providers(builtin=False) and alice.list_agents()  # Alice's own go on
    finally:
        await asyncio.wait_for(other.close(), 20)


async def test_no_worker_starts_for_a_person_who_no_longer_exists(two: Any) -> None:
    alice, bob = two
    pod = alice.pod
    inst, profile = bob.find_agent("helper")
    await alice.remove_person("Bob", "Bob")
    assert pod.store.removing(bob.person_id)  # gone counts as removed: nothing of theirs runs again
    with pytest.raises(StoreError, match="was removed from this Hearth"):
        await pod.agent_host.ensure_worker(inst, profile)
    assert not [h for h in pod.supervisor.handles.values() if h.key[0] == bob.person_id]


def _bobs_inbox(pod: Any, bob_id: str, d: Any, sink: Any) -> Any:
    return pod.mail.add_account(
        bob_id, "bob@example.org",
        imap={"host": "127.0.0.1", "port": d.port, "username": "bob", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": sink.port, "security": "none"}, password="bobsecret", start_at="all")


def _mail_kept(pod: Any, person_id: str) -> int:
    from sqlalchemy import text

    with pod.store.engine.connect() as c:
        return int(c.execute(text("SELECT COUNT(*) FROM mail_messages m JOIN mail_accounts a ON a.id = m.account_id "
                                  "WHERE a.person_id = :p"), {"p": person_id}).scalar() or 0)


async def test_the_mail_check_fetches_nothing_for_a_person_being_removed(
        two: Any, servers: Any, secure_keyring: str) -> None:
    """Bob's removal began and was cut short (a kill): until it finishes, his inbox is not checked (Alice's is)."""
    from tests.helpers.mailservers import make_mail

    d, sink = servers
    alice, bob = two
    pod = alice.pod
    _bobs_inbox(pod, bob.person_id, d, sink)
    pod.mail.add_account(alice.person_id, "alice@example.org", imap={
        "host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": sink.port, "security": "none"}, password="secret", start_at="all")
    pod.store.mark_removing(bob.person_id)
    d.deliver(make_mail("Bank statement", "Your balance is 1234.", sender="Bank <bank@example.org>"), user="bob")
    d.deliver(make_mail("Garden", "The roses are in.", sender="Ana <ana@example.org>"), user="alice")
    checked = await asyncio.wait_for(pod.mail.poll_all(), 60)  # the app's next check of mail
    assert [c.get("error") for c in checked] == [None]  # Alice's inbox alone, checked without a failure
    assert _mail_kept(pod, bob.person_id) == 0 and _mail_kept(pod, alice.person_id) == 1


async def test_an_inbox_given_to_bob_as_he_was_removed_is_never_checked_and_goes_at_the_next_start(
        two: Any, servers: Any, secure_keyring: str) -> None:
    """The window of another process added Bob's inbox just as his removal ended (its check that Bob is still here
    came a moment before), and a provider with its key: the rows and their secrets name no one. Mail is never fetched for it, and the next start
    deletes it with its passwords, as the end of any removal does."""
    from runtime_host import removal
    from runtime_host.pod import Pod
    from tests.helpers.mailservers import make_mail
    from vault import person_namespace

    d, sink = servers
    alice, bob = two
    pod = alice.pod
    bob_id = bob.person_id
    window = Pod(pod.home)
    try:
        bob_there = window.unlock("Bob", BOB_PASS)
        await alice.remove_person("Bob", "Bob")
        window.store.still_here = lambda *_a: None  # its check ran just before the removal ended
        _bobs_inbox(window, bob_id, d, sink)
        bob_there.add_provider("extra", kind="openai-compatible", base_url="http://127.0.0.1:9", model="m",
                               key="sk-bob-left-behind")
    finally:
        await asyncio.wait_for(window.close(), 20)
    assert rows_of(pod, bob_id) == {"mail_accounts": 1, "provider": 1}
    assert len(keyring_names(person_namespace(pod.pod_id, bob_id) + "/")) == 3  # the inbox's two, the key
    d.deliver(make_mail("Bank statement", "Your balance is 1234.", sender="Bank <bank@example.org>"), user="bob")
    assert await asyncio.wait_for(pod.mail.poll_all(), 60) == []
    assert _mail_kept(pod, bob_id) == 0
    removal.finish_later(pod)  # the next start
    for _ in range(400):
        if not rows_of(pod, bob_id):
            break
        await asyncio.sleep(0.05)
    assert rows_of(pod, bob_id) == {}
    assert keyring_names(person_namespace(pod.pod_id, bob_id) + "/") == []
    assert [p["name"] for p in pod.people()] == ["Me"]


async def test_another_processs_worker_for_bob_ends_at_its_next_supervision_pass(
        two: Any, fake_model: FakeModelServer) -> None:
    """The window (another process) started Bob's agent, bound to his provider key, before the owner removed him with
    the CLI: its next supervision pass (every half minute) ends that worker, not Alice's beside it."""
    from runtime_host.pod import Pod

    alice, bob = two
    pod = alice.pod
    window = Pod(pod.home, supervisor_config=pod.supervisor.config, worker_command=list(pod.supervisor.command))
    try:
        await window.unlock("Bob", BOB_PASS).start_agent("helper")
        await window.for_person(alice.person_id).start_agent("helper")

        def live(person_id: str) -> list[Any]:
            return [h for h in window.supervisor.handles.values()
                    if h.key[0] == person_id and h.proc is not None and h.proc.returncode is None]

        assert live(bob.person_id) and live(alice.person_id)
        await alice.remove_person("Bob", "Bob")
        await window.supervisor.tick()  # the window's supervision pass
        assert live(bob.person_id) == [] and live(alice.person_id)
    finally:
        await asyncio.wait_for(window.close(), 20)


async def test_bobs_turn_in_another_process_ends_with_its_worker_when_he_is_removed(
        two: Any, fake_model: FakeModelServer) -> None:
    """Bob's turn runs in the window (another process), his model still thinking, when the owner removes him with the
    CLI: the turn is stopped there, and its worker ends with it (not at the next supervision pass); nothing he was
    telling it to remember is kept."""
    import threading

    from runtime_host.pod import Pod
    from tests.helpers.fake_model import Script, Text, ToolCalls

    alice, bob = two
    pod = alice.pod
    bob.edit_agent("helper", toolkits=["memory", "tasks", "clock"])
    window = Pod(pod.home, supervisor_config=pod.supervisor.config, worker_command=list(pod.supervisor.command))
    try:
        gate = threading.Event()

        def slow_model(req: Any) -> Any:  # the model thinks while the removal runs
            gate.wait(30)
            return ToolCalls([("remember", {"fact": "Bob hides the spare key under the zebra flowerpot."})])

        fake_model.script = Script([slow_model, Text("Noted.")])
        run = await window.unlock("Bob", BOB_PASS).start_turn("helper", "Remember where the spare key is.")
        for _ in range(1500):
            if fake_model.requests or run.future.done():
                break
            await asyncio.sleep(0.02)
        assert fake_model.requests
        await asyncio.wait_for(alice.remove_person("Bob", "Bob"), 60)
        gate.set()
        outcome = await asyncio.wait_for(run.future, 30)
        assert not outcome.ok

        def live() -> list[Any]:
            return [h for h in window.supervisor.handles.values()
                    if h.key[0] == bob.person_id and h.proc is not None and h.proc.returncode is None]

        for _ in range(400):  # the stopped turn's worker is drained, then ends
            if not live():
                break
            await asyncio.sleep(0.05)
        assert live() == []
        assert await alice.memory_search("zebra flowerpot", mode="keyword") == []
    finally:
        await asyncio.wait_for(window.close(), 20)


async def test_a_window_still_showing_bob_reads_no_household_memory_after_his_removal(two: Any) -> None:
    """Alice removed Bob while a window still showed him. Ask memory refused him, yet his search and the Wiki's
    typeahead went on answering from the household's memory, what Alice put there after his removal too (her new
    alarm code). A removed person now reads nothing: no scope is his any more."""
    alice, bob = two
    await alice.remove_person("Bob", "Bob")
    with pytest.raises(StoreError, match="Bob was removed from this Hearth"):
        await bob.ask_memory("When do the bins go out?")
    await alice.in_memory_thread(lambda: alice.memory.add_source(
        "Household: the new alarm code for the front door is 5150, the bins go out on Tuesday.", scope="public"))
    assert [h.id for h in await alice.memory_search("alarm code front door", mode="keyword")]  # hers to read
    hits = await bob.memory_search("alarm code front door", mode="keyword")
    assert hits == [], [h.snippet for h in hits]
    assert bob.person_scopes() == []
    ahead = await bob.in_memory_thread(lambda: bob.memory.typeahead("Household", scopes=bob.person_scopes(), k=8))
    assert ahead == [], [h.title for h in ahead]
