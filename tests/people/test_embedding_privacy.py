"""Memory's embedding role follows the first person; when they choose a provider's embeddings, that provider
(reached with their key) embeds only their own private and agent notes. Bob's notes, his agent's notes, the
shared public memory and Bob's questions never reach it: those scopes keep the local model."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from runtime_host.store import StoreError
from tests.helpers.fake_model import FakeModelServer
from tests.people.conftest import BOB_KEY, ME_KEY
from wiki_engine.embed import load_embedder


async def settled(me: Any) -> None:
    deadline = time.monotonic() + 30
    while True:
        st = me.embedding_status()
        if st is not None and not st["running"]:
            assert not st["error"], st["error"]
            return
        assert time.monotonic() < deadline, st
        await asyncio.sleep(0.05)


async def test_a_providers_embeddings_never_see_another_persons_or_shared_memory(two: Any, fake_model: FakeModelServer) -> None:
    me, bob = two
    mem = me.memory
    bob_helper = bob.list_agents()[0]["id"]
    bobs = ["Bob's safe code is 4711, behind the dentist poster.", "Note for Bob: his dentist is Dr. Zanzibar."]
    public = "Everyone: the office dentist visit is on Monday."
    mine = "Appointment with the dentist on Friday at nine."
    mem.add_source(bobs[0], scope=f"private/{bob.person.id}")
    mem.add_source(bobs[1], scope=f"agent/{bob.person.id}/{bob_helper}")
    mem.add_source(public, scope="public")
    mine_id = mem.add_source(mine, scope=f"private/{me.person.id}")

    me.set_role_model("embedding", "fake/fake-embed")
    await settled(me)
    later = "Bob's spare key is under the third flowerpot."
    mem.add_source(later, scope=f"private/{bob.person.id}")
    mem.add_source("Me again: the dentist moved to Saturday.", scope=f"private/{me.person.id}")
    await settled(me)

    # Bob's memory still works by words and by (local) meaning; his question goes nowhere.
    hits = await bob.memory_search("Where is the safe code hidden behind the poster?", k=3)
    assert bobs[0] in [h.snippet for h in hits]
    assert mem.index(f"private/{bob.person.id}").embedder.name == load_embedder("static").name
    assert mem.index("public").embedder.name == load_embedder("static").name
    # Mine are on the provider's vectors: a question with no shared word finds my note.
    hits = await me.memory_search("tooth", k=3, mode="meaning")
    assert mine_id in [h.id for h in hits]

    sent = " ".join(fake_model.embedded)
    assert mine in fake_model.embedded and "tooth" in fake_model.embedded
    for text in [*bobs, later, public, "safe code"]:
        assert text not in sent, f"{text!r} was sent to the first person's provider"
    assert {r.headers["authorization"] for r in fake_model.embed_requests} == {f"Bearer {ME_KEY}"}

    # Bob cannot choose the shared index's model (it would silently do nothing): he is told who chooses it; and
    # nothing is sent with his key.
    asked = len(fake_model.embed_requests)
    with pytest.raises(StoreError, match="chosen by the person who set Hearth up \\(Settings → Models as Me;"):
        bob.set_role_model("embedding", "fake/bob-embed")
    # he is shown the local model his notes use (he was told "a provider", as if his notes went to hers)
    assert bob.models()["roles"]["embedding"] == {"source": "shared", "shared_by": "the person who set Hearth up",
                                                  "model": "static"}
    mem.add_source("Bob: the boiler service is in June.", scope=f"private/{bob.person.id}")
    await settled(me)
    assert all(r.headers["authorization"] != f"Bearer {BOB_KEY}" for r in fake_model.embed_requests[asked:])
    assert all(r.body["model"] == "fake-embed" for r in fake_model.embed_requests)


async def test_bob_is_shown_how_far_his_notes_are_re_embedded_when_alice_chooses_her_provider(pod, fake_model) -> None:
    """Alice had chosen MiniLM for everyone, then chose her provider's embeddings: Bob's notes and the household's
    were re-embedded on the local model, and Bob's Settings → Models showed nothing of it (his progress was hidden
    whenever the model was a provider's). He is now shown how far the notes he reads are, on the local model, and
    still nothing of Alice's provider."""
    from wiki_engine.embed import KINDS

    async def settled(who: Any, name: str) -> dict[str, Any]:
        deadline = time.monotonic() + 90
        while not ((st := who.embedding_status()) and st["model"] == name and not st["running"]):
            assert time.monotonic() < deadline, st
            await asyncio.sleep(0.1)
        return st

    bob = pod.add_person("Bob")
    as_bob = pod.pod.for_person(pod.store.get_person("Bob"))
    await pod.in_memory_thread(lambda: [pod.memory.add_source(f"Bob's note {n}: the boat needs paint on side {n}.",
                                                              scope=f"private/{bob['id']}") for n in range(50)])
    await pod.in_memory_thread(lambda: pod.memory.add_source("The bins go out on Tuesday.", scope="public"))
    await pod.in_memory_thread(lambda: pod.memory.add_source("Alice: dentist on Friday.", scope=f"private/{pod.person.id}"))
    pod.set_role_model("embedding", "local/minilm")
    await settled(pod, KINDS["minilm"])
    pod.set_role_model("embedding", "fake/fake-embed")  # Alice: her own notes to her provider
    await settled(pod, "provider:fake/fake-embed")
    his = await settled(as_bob, KINDS["static"])
    assert (his["done"], his["total"], his["error"]) == (51, 51, ""), his
    assert "fake" not in str(his)  # nothing of Alice's provider
    # Alice's provider fails on her next note: her status says why; Bob's holds none of it
    from tests.helpers.fake_model import Error

    fake_model.embed_fault = Error(500, "quokka-overloaded")
    await pod.in_memory_thread(lambda: pod.memory.add_source("Alice: the vet on Monday.", scope=f"private/{pod.person.id}"))
    deadline = time.monotonic() + 60
    while "HTTP 500" not in str(pod.embedding_status()):
        assert time.monotonic() < deadline, repr(pod.embedding_status())
        await asyncio.sleep(0.1)
    his = as_bob.embedding_status()
    assert his is not None and "HTTP 500" not in str(his) and "fake" not in str(his), his
