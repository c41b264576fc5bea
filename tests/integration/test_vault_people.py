"""A person's own values behind reversible placeholders (a card an agent kept out of memory, in their keyring) with
a second person on the same Hearth and a second process on the same data: another person's copy of a placeholder
keeps nothing in the keyring and shows nothing, the window keeps a bounded number of values read back, and a value
forgotten from a terminal leaves the window's too. Real keyring, real CLI process; the model is the fake one on
127.0.0.1. Found by review; each failed on the code before it, but for the boundary said so."""
from __future__ import annotations

import asyncio
import time

from tests.helpers.fake_model import Text, ToolCalls
from tests.integration.test_cli import cli
from tests.integration.test_memory_pod import bob_with_his_own_provider

CARD = "4111 1111 1111 1111"


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


async def _alice_keeps_her_card(pod, script, scope: str) -> tuple[str, str]:
    """Alice's helper (reversible redaction) remembers the card she pays the plumber with; returns its source and
    the placeholder memory keeps instead of it (its value in Alice's keyring)."""
    from runtime_host.safety.policy import reversible_placeholders

    pod.edit_agent("helper", toolkits=["memory"], safety={"reversible": True})
    script([ToolCalls([("remember", {"fact": f"The plumber is paid with the card {CARD}.", "scope": scope})]),
            Text("Noted.")])
    assert (await asyncio.wait_for(pod.chat("helper", "remember how we pay the plumber"), 60)).ok
    where = "public" if scope == "public" else f"private/{pod.person_id}"
    [(sid,)] = pod.memory.catalog.query("SELECT id FROM sources WHERE scope=?", (where,))
    [placeholder] = reversible_placeholders(pod.memory.get_source(sid).markdown)
    assert _digits(CARD) in _digits(pod.restore_redactions(placeholder))  # Alice reads her own card back
    return sid, placeholder


async def test_bobs_copy_of_alices_placeholder_keeps_nothing_in_her_keyring_and_shows_him_nothing(
        pod, script, secure_keyring) -> None:
    """Alice's helper kept the household's plumber card as a placeholder, the card in her keyring. Bob read the
    placeholder in the household's memory and copied it into his own note and his chat. Alice deleted the household
    note; nothing of hers showed the placeholder any more, yet the clean-up counted Bob's copies as uses and her
    keyring kept the card for good. Now only what Alice can read (the household's memory, her own, her
    conversations) keeps it; Bob's copies are his words, and they never show him her card."""
    sid, placeholder = await _alice_keeps_her_card(pod, script, "public")
    mapping_id = placeholder.rpartition("#")[2].rstrip("]")
    alices = pod.pod.vault_for(pod.person_id)
    _, bob = bob_with_his_own_provider(pod)
    bob.add_agent("bobs", provider="fake", toolkits=["memory"])
    copied = f"The plumber's card is {placeholder}; pay the boiler service with it too."
    script([ToolCalls([("remember", {"fact": copied, "scope": "person"})]), Text(f"Noted: {placeholder}")])
    assert (await asyncio.wait_for(bob.chat("bobs", f"Remember this: {copied}"), 60)).ok
    found = await bob.memory_search("plumber's card boiler service", mode="keyword")
    assert [h for h in found if h.scope == f"private/{bob.person_id}"], found  # his own note holds her placeholder
    # the boundary: Bob is never shown Alice's card, from his note or anywhere else (this held before the fix)
    assert bob.restore_redactions(copied) == copied and _digits(CARD) not in _digits(bob.restore_redactions(placeholder))

    await pod.memory_delete_source(sid)
    assert alices.get(f"redactions/{mapping_id}") is None, \
        "Bob's copy of Alice's placeholder kept her forgotten card in her keyring"
    assert bob.restore_redactions(copied) == copied


async def test_the_window_keeps_a_bounded_number_of_values_read_back(pod, secure_keyring, monkeypatch) -> None:
    """Every value a person read back stayed in the window's memory until they switched person: 100,000 values,
    all of them, for good. The window keeps the ones read last (KEPT at most); one read long ago is read from the
    keyring again, still the person's own."""
    import runtime_host.restored as restored

    monkeypatch.setattr(restored, "KEPT", 20, raising=False)  # the bound, made small for a test: 25 real entries
    me = pod.person_id
    said = [pod.pod.redact_own(me, f"Cousin {n} writes from cousin{n}@example.org") for n in range(25)]
    assert all("@" not in text for text in said), said  # each address kept in the keyring, a placeholder in its place
    pod.pod.restored.keep_only(None)  # nothing read back yet: every value comes from the keyring
    for n, text in enumerate(said):
        assert f"cousin{n}@example.org" in pod.restore_redactions(text)
    assert pod.pod.restored.holds(me) <= 20, f"the window holds {pod.pod.restored.holds(me)} values"
    assert "cousin0@example.org" in pod.restore_redactions(said[0])  # the first, read again from the keyring


async def test_a_value_forgotten_from_a_terminal_leaves_the_window(pod, script, home, secure_keyring) -> None:
    """The window showed Alice her card behind a placeholder (read from her keyring once, then kept). In a terminal
    she ran `python -m runtime_host memory forget-agent helper --yes`: the card left her keyring, but the window
    went on showing it from what it kept, until she switched person or quit. The window learns of a forget done by
    another process within a few seconds, and reads the keyring again: the card is gone there too."""
    _, placeholder = await _alice_keeps_her_card(pod, script, "person")
    r = await asyncio.to_thread(cli, home, "memory", "forget-agent", "helper", "--yes")
    assert r.returncode == 0, r.stderr
    assert pod.pod.vault_for(pod.person_id).get(f"redactions/{placeholder.rpartition('#')[2].rstrip(']')}") is None
    deadline = time.monotonic() + 10
    while _digits(CARD) in _digits(pod.restore_redactions(placeholder)) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert pod.restore_redactions(placeholder) == placeholder, "the window still shows the card forgotten elsewhere"


async def test_a_value_the_window_wrote_then_forgotten_from_a_terminal_leaves_the_window(
        pod, script, home, secure_keyring) -> None:
    """Alice's helper remembered her card in the window (the window keeps the value it wrote to her keyring) and,
    before the window had read any value back, she ran `memory forget-agent helper --yes` in a terminal: the card
    left her keyring, but the window's first look at pod.db only took note of the forget's token, and went on
    showing the card it had written. The first look lets go of what was kept before it: the card is gone there too."""
    from runtime_host.safety.policy import reversible_placeholders

    pod.edit_agent("helper", toolkits=["memory"], safety={"reversible": True})
    script([ToolCalls([("remember", {"fact": f"The plumber is paid with the card {CARD}.", "scope": "person"})]),
            Text("Noted.")])
    assert (await asyncio.wait_for(pod.chat("helper", "remember how we pay the plumber"), 60)).ok
    [(sid,)] = pod.memory.catalog.query("SELECT id FROM sources WHERE scope=?", (f"private/{pod.person_id}",))
    [placeholder] = reversible_placeholders(pod.memory.get_source(sid).markdown)
    assert pod.pod.restored.holds(pod.person_id) >= 1  # the window keeps the value it wrote, none read back yet

    r = await asyncio.to_thread(cli, home, "memory", "forget-agent", "helper", "--yes")
    assert r.returncode == 0, r.stderr
    assert pod.pod.vault_for(pod.person_id).get(f"redactions/{placeholder.rpartition('#')[2].rstrip(']')}") is None
    shown = pod.restore_redactions(placeholder)  # the window's first look at pod.db since it wrote the card
    assert _digits(CARD) not in _digits(shown), f"the window still shows the card forgotten in a terminal: {shown!r}"
    await asyncio.sleep(1.2)  # past RECHECK_S: a second look changes nothing
    assert pod.restore_redactions(placeholder) == placeholder
