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
