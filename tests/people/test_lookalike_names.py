"""Names that differ only in how their letters are composed look the same: "Zoë" typed with one letter (ë) and with
two (e and a combining diaeresis, as some keyboards give it). Hearth keeps one form (NFC) and finds a person by
either, so two people never share a name that looks the same, and a typed name (to log in, or to confirm a
removal) matches however the keyboard composed it."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from runtime_host.store import StoreError
from tests.people.conftest import BOB_PASS

COMPOSED = "Zo\u00eb"
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)


async def test_a_name_that_looks_like_another_persons_is_refused(two: Any) -> None:
    alice, bob = two
    alice.rename(COMPOSED)
    for name in (DECOMPOSED, DECOMPOSED.upper()):
        with pytest.raises(StoreError, match=f"There is already a person named '{COMPOSED}' on this Hearth"):
            bob.rename(name)
        with pytest.raises(StoreError, match="already a person named"):
            alice.pod.add_person(name, "a-long-passphrase")
    assert [p["name"] for p in alice.people()] == [COMPOSED, "Bob"]


async def test_a_name_typed_either_way_finds_the_one_person(two: Any) -> None:
    alice, bob = two
    pod = alice.pod
    alice.rename("Alice")
    assert bob.rename(DECOMPOSED) == COMPOSED  # kept in one form
    assert [p["name"] for p in pod.people()] == ["Alice", COMPOSED]
    assert pod.unlock(COMPOSED, BOB_PASS).person_id == bob.person_id
    assert pod.unlock(DECOMPOSED, BOB_PASS).person_id == bob.person_id
    counted = await alice.what_removal_takes(DECOMPOSED)
    assert counted["name"] == COMPOSED and counted["agents"] == 1
    await alice.remove_person(COMPOSED, DECOMPOSED)  # the owner types Zoë's name to confirm, composed another way
    assert [p["name"] for p in pod.people()] == ["Alice"]
