"""Personal data an agent remembers in forms the memory redaction missed (review rev95, finding 3): a domestic bank
account with its sort code or routing number, an address typed in small letters with its town and postcode, a card
split by a slash. Each was written as typed to memory's source files, its index and its database; now each is kept
as a placeholder, the value in the person's keyring for them alone to read back, and the other person on the same
Hearth, Bob, is shown nothing of it. Real Pod, real keyring; the model is the fake one on 127.0.0.1."""
from __future__ import annotations

import asyncio

import pytest

from tests.helpers.fake_model import Text, ToolCalls
from tests.integration.test_memory_pod import bob_with_his_own_provider

CASES = [
    ("The builder's rent goes to acct 27719043, sort code 09-01-28, by the 5th.", ["27719043", "09-01-28"]),
    ("Pay the US contractor by ACH: routing 122105155, account 4477 0091 2236.", ["122105155", "4477 0091 2236"]),
    ("The new flat is 31 beech road sheffield s10 2tn, keys with the neighbour.", ["31 beech road sheffield s10 2tn"]),
    ("The garage takes the card 5555 5555 / 5555 4444 for the deposit.", ["5555 5555 / 5555 4444"]),
]


@pytest.mark.parametrize("fact, values", CASES)
async def test_personal_data_in_other_forms_is_kept_out_of_memory_and_shown_to_its_owner_alone(
        pod, script, secure_keyring, fact: str, values: list[str]) -> None:
    from runtime_host.safety.policy import reversible_placeholders

    _, bob = bob_with_his_own_provider(pod)
    pod.edit_agent("helper", toolkits=["memory"], safety={"reversible": True})
    script([ToolCalls([("remember", {"fact": fact, "scope": "person"})]), lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "remember that"), 60)
    assert "remembered" in r.text, r.text

    for value in values:
        on_disk = [p.name for p in (pod.home / "memory").rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
        assert not on_disk, f"{value!r} was stored as typed in {on_disk}"
    [(sid,)] = pod.memory.catalog.query("SELECT id FROM sources WHERE scope=?", (f"private/{pod.person_id}",))
    stored = pod.memory.get_source(sid).markdown
    placeholders = reversible_placeholders(stored)
    assert len(placeholders) == len(values), stored
    assert pod.restore_redactions(stored).count(fact) == 1  # its owner reads it back as she said it
    for ph in placeholders:  # Bob, given the placeholders, is shown none of the values
        assert bob.restore_redactions(ph) == ph
    assert not await bob.memory_search(fact.split(":")[0], mode="keyword")
