"""A provider's embeddings for memory's search by meaning (issue 19), with the real provider code and the fake
model's /v1/embeddings on 127.0.0.1: storing a source never waits on the network, its vector is queued and
filled in the background (also after a restart, and again after the provider failed), search answers by
keywords while the provider is down or slow, and an answer that would corrupt the index is refused."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from runtime_host.providers import Route
from runtime_host.providers.embeddings import ProviderEmbedder
from tests.helpers.fake_model import Error, FakeModelServer, Hang, fake_vector
from wiki_engine import Item, Page, open_memory
from wiki_engine.embed import load_embedder
from wiki_engine.index import ScopeIndex

KEY = "sk-embed-0a1b2c3d4e5f6g7h"
DENTIST = "Appointment with the dentist on Friday at nine."


def provider(fake: FakeModelServer, key: str | None = KEY) -> ProviderEmbedder:
    return ProviderEmbedder.for_route(Route("fake", "openai-compatible", fake.base_url, "fake-embed", key))


def wait_until(cond: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def idle(mem: object) -> bool:
    st = mem.embedding_status()  # type: ignore[attr-defined]
    return not st["running"] and not st["error"]


def stored_vectors(root: Path, scope: str) -> list[bytes | None]:
    con = sqlite3.connect(str(root / "index" / scope / "meta.db"))
    try:
        return [r[0] for r in con.execute("SELECT vec FROM docs ORDER BY rowid")]
    finally:
        con.close()


def test_a_source_stored_while_the_provider_is_down_is_found_by_words_at_once_and_by_meaning_once_it_is_back(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    fake_model.embed_fault = Error(500, "overloaded")
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        started = time.monotonic()
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.add_source("Bought bread and milk at the market.", scope="private/me")
        assert time.monotonic() - started < 2  # storing did not wait on the provider
        assert [h.id for h in mem.search("dentist", scopes=["private/me"], k=1)] == [sid]
        # Both wait, whichever the background pass had counted when the provider first failed.
        wait_until(lambda: mem.embedding_status()["error"] and mem.embedding_status()["total"] == 2)
        st = mem.embedding_status()
        assert "HTTP 500" in st["error"] and "tries again" in st["error"] and st["running"], st
        assert st["done"] < st["total"] == 2
        # Nothing shares a word with "tooth": without vectors, search by meaning cannot find the dentist yet.
        assert sid not in [h.id for h in mem.search("tooth", scopes=["private/me"], k=2, mode="meaning")]
        fake_model.embed_fault = None
        wait_until(lambda: idle(mem))
        assert mem.embedding_status()["done"] == mem.embedding_status()["total"]
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        assert DENTIST in fake_model.embedded
        assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fake_model.embed_requests)
    finally:
        mem.close()


def test_vectors_still_queued_when_memory_closed_are_filled_after_it_opens_again(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    fake_model.embed_fault = Error(503, "maintenance")
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    sid = mem.add_source(DENTIST, scope="private/me")
    mem.add_items([Item(text=f"Shopping list {n}: bread and {n} apples.", scope="agent/me/helper", ts=1.7e9 + n)
                   for n in range(100)])
    wait_until(lambda: mem.embedding_status()["error"])
    mem.close()
    assert stored_vectors(tmp_path / "memory", "private/me") == [None]

    fake_model.embed_fault = None
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))  # a new process would build a new one
    try:
        wait_until(lambda: idle(mem) and mem.embedding_status()["done"] == 101)
        assert all(v is not None for v in stored_vectors(tmp_path / "memory", "agent/me/helper"))
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        sizes = {len(r.body["input"]) for r in fake_model.embed_requests}
        assert max(sizes) <= 64  # batches, not one request per text nor one huge one
    finally:
        mem.close()

    # Opened on the local model instead: it opens at once (keywords) and re-embeds behind, asking the provider nothing.
    asked = len(fake_model.embed_requests)
    started = time.monotonic()
    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        assert mem.search("dentist", scopes=["private/me"], k=1)[0].id == sid
        assert time.monotonic() - started < 5
        assert mem.wait_for_embedding(60) and not mem.embedding_status()["error"]
        assert ScopeIndex.stored_embedder(tmp_path / "memory" / "index" / "private" / "me") == load_embedder("static").name
        assert mem.index("agent/me/helper").vecs.shape == (100, 256)
        assert len(fake_model.embed_requests) == asked
    finally:
        mem.close()


@pytest.mark.parametrize("fault", [Error(500, "boom"), Hang(8), "drip"], ids=["error", "hang", "drip"])
def test_a_question_the_provider_cannot_embed_is_answered_by_keywords(
        tmp_path: Path, fake_model: FakeModelServer, fault: Error | Hang | str) -> None:
    """A provider that fails, hangs, or sends its answer a byte at a time (no read ever times out: search waited
    up to the 600 s an answer may take): the question is ranked by its words within about 3 s."""
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.add_source("The plumber fixed the kitchen sink.", scope="private/me")
        wait_until(lambda: idle(mem))
        fake_model.embed_fault = fault
        for mode in ("hybrid", "meaning"):
            started = time.monotonic()
            hits = mem.search("dentist appointment", scopes=["private/me"], k=2, mode=mode)
            assert time.monotonic() - started < 6  # ~3 s at most for the question's vector, then keywords
            assert hits[0].id == sid
    finally:
        mem.close()


def test_static_to_a_provider_and_back_reembeds_with_progress(tmp_path: Path, fake_model: FakeModelServer) -> None:
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.add_items([Item(text=f"Note {n}: the bus leaves at {n} past.", scope="private/me", ts=1.7e9 + n)
                       for n in range(150)])
        static = load_embedder("static")
        fake_model.embed_delay_s = 0.3
        emb = provider(fake_model)
        mem.set_embedder(emb, only_for="me")
        seen = set()
        while mem.embedding_status()["running"]:
            st = mem.embedding_status()
            seen.add((st["done"], st["total"]))
            # Meanwhile search answers on the static vectors.
            assert mem.search("dentist", scopes=["private/me"], k=1)[0].id == sid
            time.sleep(0.05)
        st = mem.embedding_status()
        assert st == {**st, "model": emb.name, "done": 151, "total": 151, "error": ""}
        assert any(0 < d < t for d, t in seen), seen  # progress was visible on the way
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == emb.name == "provider:fake/fake-embed"
        assert mem.index("private/me").vecs.shape[1] == 64  # the size came from the first answer
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        fake_model.embed_delay_s = 0.0

        asked = len(fake_model.embedded)
        mem.set_embedder("static")
        assert mem.wait_for_embedding(60)
        assert mem.embedding_status()["done"] == 151 and not mem.embedding_status()["error"]
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == static.name
        assert mem.index("private/me").vecs.shape[1] == 256
        assert len(fake_model.embedded) == asked  # the provider is not asked anything any more
        assert mem.search("dentist", scopes=["private/me"], k=1)[0].id == sid
    finally:
        mem.close()


@pytest.mark.parametrize("fault", ["wrong-dims", "nan", "wrong-count"])
def test_a_hostile_provider_never_corrupts_the_index(tmp_path: Path, fake_model: FakeModelServer, fault: str) -> None:
    root = tmp_path / "memory"
    mem = open_memory(root, embedder=provider(fake_model))
    try:
        first = mem.add_source("The plumber fixed the kitchen sink.", scope="private/me")
        wait_until(lambda: idle(mem))
        fake_model.embed_fault = fault
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.add_source("Bought bread and milk at the market.", scope="private/me")
        wait_until(lambda: mem.embedding_status()["error"])
        err = mem.embedding_status()["error"]
        assert "embedding model" in err and "Settings → Models" in err, err
        vecs = stored_vectors(root, "private/me")
        assert vecs[0] is not None and vecs[1:] == [None, None]  # nothing of the bad answer was stored
        good = np.frombuffer(vecs[0], dtype=np.float32)
        assert good.shape == (64,) and np.isfinite(good).all()
        idx = mem.index("private/me")
        assert np.isfinite(idx.vecs).all()
        sims = idx.similarities(np.asarray(fake_vector(DENTIST), dtype=np.float32))
        assert sims is not None and sims[idx.row[sid]] == 0.0  # a queued document counts as unrelated, not noise
        assert [h.id for h in mem.search("dentist", scopes=["private/me"], k=1)] == [sid]
        assert mem.search("sink leak", scopes=["private/me"], k=1, mode="meaning")[0].id == first
    finally:
        mem.close()


def test_a_refused_key_is_reported_with_what_to_do_and_without_the_key(tmp_path: Path, fake_model: FakeModelServer) -> None:
    from vault import remember_secret

    old = "sk-old-revoked-9z8y7x6w"
    remember_secret(old)
    fake_model.key = KEY
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model, key=old))
    try:
        sid = mem.add_source(DENTIST, scope="private/me")
        wait_until(lambda: mem.embedding_status()["error"])
        err = mem.embedding_status()["error"]
        assert "refused the key" in err and "Settings → Providers" in err and old not in err, err
        assert mem.search("dentist", scopes=["private/me"], k=1)[0].id == sid
        mem.set_embedder(provider(fake_model))  # the new key: the same model, retried at once
        wait_until(lambda: idle(mem), 10)
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
    finally:
        mem.close()


def test_gemini_embeddings_speak_batch_embed_contents_and_anthropic_says_it_has_none() -> None:
    from runtime_host.providers import ProviderError

    with FakeModelServer(wire="gemini", key=KEY) as srv:
        emb = ProviderEmbedder.for_route(Route("google", "gemini", srv.base_url, "gemini-embedding-001", KEY))
        got = emb.embed([DENTIST, "tooth"])
        assert got.shape == (2, 64) and emb.dim == 64 and emb.name == "provider:google/gemini-embedding-001"
        assert np.allclose(got[0], fake_vector(DENTIST), atol=1e-6)
        req = srv.embed_requests[0]
        assert req.path.endswith("/models/gemini-embedding-001:batchEmbedContents") and req.headers["x-goog-api-key"] == KEY
        assert KEY not in req.path
    none = ProviderEmbedder.for_route(Route("claude", "anthropic", "http://127.0.0.1:9/v1", "claude-x", KEY))
    with pytest.raises(ProviderError, match="no embeddings API"):
        none.embed(["hello"])


def named(fake: FakeModelServer, model: str) -> ProviderEmbedder:
    return ProviderEmbedder.for_route(Route("fake", "openai-compatible", fake.base_url, model, KEY))


def fail_after(fake: FakeModelServer, n_ok: int) -> None:
    """The provider answers ``n_ok`` requests, then HTTP 500 to every one after."""
    orig, calls = fake._embeddings, [0]

    def wrapped(h, req):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] > n_ok:
            fake.embed_fault = Error(500, "overloaded")
        return orig(h, req)

    fake._embeddings = wrapped  # type: ignore[method-assign]


def bus_notes(mem: object, n: int, scope: str = "private/me") -> None:
    mem.add_items([Item(text=f"Note {i}: the bus leaves at {i} past.", scope=scope, ts=1e6 + i * 1e4)  # type: ignore[attr-defined]
                   for i in range(n)])


def test_vectors_a_failing_provider_answered_are_never_taken_for_the_next_models(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """A provider answered the first 64 notes, then failed; the person chose MiniLM instead: the provider's 64
    vectors (kept for a retry) were taken as MiniLM's, the pass failed for ever on their size and meta.db was
    labelled MiniLM over mixed sizes. Choosing another provider model instead sent it 36 notes of 100."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        bus_notes(mem, 100)
        fail_after(fake_model, 1)
        mem.set_embedder(named(fake_model, "embed-a"), only_for="me")
        wait_until(lambda: mem.embedding_status()["error"])
        mem.set_embedder("minilm")  # on this computer: cannot fail
        assert mem.wait_for_embedding(60) and not mem.embedding_status()["error"], mem.embedding_status()
        assert mem.index("private/me").vecs.shape == (100, 384)
        assert {len(v or b"") for v in stored_vectors(root, "private/me")} == {384 * 4}

        fake_model.embed_fault = None
        fake_model._embeddings = FakeModelServer._embeddings.__get__(fake_model)  # type: ignore[method-assign]
        fail_after(fake_model, 1)
        mem.set_embedder(named(fake_model, "embed-a"), only_for="me")
        wait_until(lambda: mem.embedding_status()["error"])
        fake_model.embed_fault = None
        fake_model._embeddings = FakeModelServer._embeddings.__get__(fake_model)  # type: ignore[method-assign]
        before = len(fake_model.embed_requests)
        mem.set_embedder(named(fake_model, "embed-b"), only_for="me")
        wait_until(lambda: idle(mem))
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == "provider:fake/embed-b"
        assert sum(len(r.body["input"]) for r in fake_model.embed_requests[before:] if r.body["model"] == "embed-b") == 100
    finally:
        mem.close()


def mismatched(root: Path, scope: str) -> list[str]:
    """Ids whose stored vector is not the provider's vector of the text the index now holds for them."""
    con = sqlite3.connect(str(root / "index" / scope / "meta.db"))
    try:
        rows = con.execute("SELECT id, kind, title, body, ctx, vec FROM docs").fetchall()
    finally:
        con.close()
    bad = []
    for i, k, t, b, c, v in rows:
        want = np.asarray(fake_vector(ScopeIndex._meaning_text(k, t, b, c)), dtype=np.float32)
        got = np.frombuffer(v, dtype=np.float32) if v else None
        if got is None or got.shape != want.shape or not np.allclose(got, want / np.linalg.norm(want), atol=1e-5):
            bad.append(i)
    return bad


def test_text_that_changes_while_memory_is_reembedded_gets_the_vector_of_its_new_text(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """A page rewritten, and the turn said after a deleted one (indexed again without its words), while the
    pass ran: both kept vectors of their old text, so the page was not found by its new meaning and the reply
    still ranked first for the deleted dentist note's meaning."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        dentist = mem.add_items([Item(text="Alice: " + DENTIST, scope="private/me", ts=1000.0)])[0]
        mem.add_items([Item(text="Bob: Sure, see you then.", scope="private/me", ts=1010.0)])
        sid = mem.add_source("Called someone about the house.", scope="private/me")
        mem.write_page(Page("House", "private/me", "home", "The plumber fixed the leak under the sink [1].", {1: sid}),
                       author="agent:ingest")
        bus_notes(mem, 150)
        fake_model.embed_delay_s = 0.5
        mem.set_embedder(provider(fake_model), only_for="me")
        wait_until(lambda: len(fake_model.embed_requests) >= 1)  # the first batch (the turns, the page) is embedded
        mem.delete_source(dentist)
        mem.write_page(Page("House", "private/me", "home", "Booked the dentist for a tooth check [1].", {1: sid}),
                       author="agent:ingest")
        wait_until(lambda: idle(mem))
        assert mem.index("private/me").embedder.name == "provider:fake/fake-embed"
        assert mismatched(root, "private/me") == []
        hits = mem.search("Booked the dentist for a tooth check", scopes=["private/me"], k=3, mode="meaning")
        assert "page:private/me/house" in [h.id for h in hits], hits
    finally:
        mem.close()


def test_choosing_the_local_model_again_stops_sending_notes_to_the_provider(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """A provider's embeddings chosen by mistake and the local model chosen again a moment later: the pass went
    on sending all 640 private notes to the provider (then re-embedded them locally)."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        mem.add_items([Item(text=f"Private note {n}: my account number ends in {n}.", scope="private/me", ts=1e6 + n)
                       for n in range(640)])
        fake_model.embed_delay_s = 0.3
        mem.set_embedder(provider(fake_model), only_for="me")
        wait_until(lambda: fake_model.embed_requests)
        mem.set_embedder("static")
        assert mem.embedding_status()["model"] == load_embedder("static").name
        assert mem.wait_for_embedding(60)
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == load_embedder("static").name
        assert len(fake_model.embedded) <= 2 * 64, "notes went on to the provider after the local model was chosen"
        assert mem.search("account number ends in 7", scopes=["private/me"], k=1, mode="meaning")
    finally:
        mem.close()


def test_a_question_never_goes_to_a_provider_no_longer_chosen(tmp_path: Path, fake_model: FakeModelServer) -> None:
    """While memory was re-embedded for provider B, every question was still sent to provider A, which the person
    had turned away from, until B's pass ended; it is ranked by keywords meanwhile."""
    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        mem.add_items([Item(text=f"Private note {n}: my account number ends in {n}.", scope="private/me", ts=1e6 + n)
                       for n in range(640)])
        mem.set_embedder(named(fake_model, "embed-a"), only_for="me")
        wait_until(lambda: idle(mem), 60)
        fake_model.embed_delay_s = 0.5  # B is slow: a big memory takes a while
        mem.set_embedder(named(fake_model, "embed-b"), only_for="me")
        wait_until(lambda: any(r.body["model"] == "embed-b" for r in fake_model.embed_requests), 30)
        before = len(fake_model.embed_requests)
        for mode in ("meaning", "hybrid"):
            hits = mem.search("account number ends in 7", scopes=["private/me"], k=3, mode=mode)
            assert hits and "ends in 7." in hits[0].snippet, (mode, hits)
        assert mem.embedding_status()["running"]
        assert not [r for r in fake_model.embed_requests[before:] if r.body["model"] == "embed-a"]
    finally:
        fake_model.embed_delay_s = 0.0
        mem.close()


def test_a_wrong_size_answer_after_a_restart_does_not_stop_the_retries_that_follow(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """After a restart the provider's first answer had vectors of half the size memory holds (refused, as it
    should be); the embedder then took that size for the provider's, so once the provider was mended every retry
    was refused too ("vectors of 64 numbers where 32 were expected"): the queued note was never found by meaning
    until the person chose the model again."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder=provider(fake_model))
    try:
        mem.add_source("The plumber fixed the kitchen sink.", scope="private/me")
        wait_until(lambda: idle(mem))
        fake_model.embed_fault = Error(500, "down")
        sid = mem.add_source(DENTIST, scope="private/me")
        wait_until(lambda: mem.embedding_status()["error"])
    finally:
        mem.close()
    fake_model.embed_fault = "half-size"
    mem = open_memory(root, embedder=provider(fake_model))  # Hearth started again
    try:
        wait_until(lambda: "numbers" in str(mem.embedding_status()["error"]))
        fake_model.embed_fault = None  # mended: the next retry by itself fills the vector
        wait_until(lambda: idle(mem), 20)
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
    finally:
        mem.close()


def test_a_provider_that_keeps_answering_a_new_size_has_its_scope_embedded_again(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """Another model now answers under the provider's model name, with vectors of another size: refused once (as a
    bad answer), then, answered again and again, the scope is embedded again with the new size, with progress; new
    notes got no vector and meaning search found nothing, for good."""
    root = tmp_path / "memory"
    fake_model.embed_fault = "half-size"  # 32 numbers a vector
    mem = open_memory(root, embedder=provider(fake_model))
    try:
        first = mem.add_source("Bought bread and milk at the market.", scope="private/me")
        wait_until(lambda: idle(mem))
        fake_model.embed_fault = None  # another model behind the name: 64 numbers a vector
        sid = mem.add_source(DENTIST, scope="private/me")
        wait_until(lambda: idle(mem) and mem.embedding_status()["done"] >= 2, 20)
        st = mem.embedding_status()
        assert st["done"] == st["total"] and not st["error"], st
        assert {len(v) for v in stored_vectors(root, "private/me") if v is not None} == {64 * 4}
        assert None not in stored_vectors(root, "private/me")
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        assert mem.search("groceries", scopes=["private/me"], k=1, mode="meaning")[0].id == first
    finally:
        mem.close()


async def test_choosing_the_model_again_recovers_after_the_provider_changed_its_vector_size(
        pod, fake_model, monkeypatch) -> None:
    """The provider's model answered another size (refused: "choose the model again in Settings → Models to retry
    now"); choosing it again changed nothing, as the vectors held were of the old size: it now embeds the person's
    notes again with the new size."""
    from wiki_engine import memory

    monkeypatch.setattr(memory, "SIZE_CHANGE_ANSWERS", 1000, raising=False)  # not on its own: the person's choice does it

    async def settle(cond: Callable[[dict], object], timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while not cond(st := pod.embedding_status() or {}):
            assert time.monotonic() < deadline, st
            await asyncio.sleep(0.1)
        return st

    scope = f"private/{pod.person.id}"
    fake_model.embed_fault = "half-size"
    await pod.in_memory_thread(lambda: pod.memory.add_source("Bought bread and milk at the market.", scope=scope))
    pod.set_role_model("embedding", "fake/fake-embed")
    await settle(lambda st: "fake" in str(st.get("model")) and not st.get("running") and not st.get("error"))
    fake_model.embed_fault = None
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source(DENTIST, scope=scope))
    st = await settle(lambda st: st.get("error"))
    assert "choose the model again in Settings → Models" in st["error"]
    pod.set_role_model("embedding", "fake/fake-embed")  # what the message says
    st = await settle(lambda st: not st.get("running") and not st.get("error") and st.get("done") == st.get("total") >= 2)
    hits = await pod.memory_search("tooth", k=1, mode="meaning")
    assert hits and hits[0].id == sid, [h.snippet for h in hits]
    assert pod.memory.index(scope).vecs.shape[1] == 64


def test_a_failure_of_the_provider_turned_away_from_is_not_reported_as_the_new_models(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """The person chose a provider, then MiniLM while the provider's first request was on its way; that request
    failed, and all through MiniLM's pass Settings read "Memory could not get search vectors from minilm…:
    Provider 'fake' had a server error" (shown to everyone, the model being a local one)."""
    def slow_then_fail(h, req):  # type: ignore[no-untyped-def]
        time.sleep(1.0)
        fake_model._answer(h, req, Error(500, "overloaded"))

    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        bus_notes(mem, 400)
        fake_model._embeddings = slow_then_fail  # type: ignore[method-assign]
        mem.set_embedder(provider(fake_model), only_for="me")
        time.sleep(0.3)  # its first request is on its way
        mem.set_embedder("minilm")
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while mem.embedding_status()["running"] and time.monotonic() < deadline:
            seen += [str(mem.embedding_status()["error"])] if mem.embedding_status()["error"] else []
            time.sleep(0.05)
        assert mem.embedding_status()["model"] == load_embedder("minilm").name
        assert seen == [] and not mem.embedding_status()["error"], seen[:1]
    finally:
        mem.close()


async def test_a_slow_provider_holds_up_neither_search_nor_storing_for_long(pod, fake_model: FakeModelServer) -> None:
    """With a provider's embeddings chosen, a question it answers a byte at a time held memory's one thread for
    minutes: the search, and every note stored behind it (an agent's remember tool here). Now the question is
    ranked by keywords after 3 s, and the questions after it skip the provider a while."""
    me = pod.person.id
    agent = pod.list_agents()[0]["id"]
    pod.set_role_model("embedding", "fake/fake-embed")
    pod.memory.add_source(DENTIST, scope=f"private/{me}")
    deadline = time.monotonic() + 30
    while not idle(pod.memory):
        assert time.monotonic() < deadline, pod.memory.embedding_status()
        await asyncio.sleep(0.05)
    fake_model.embed_fault = "drip"
    started = time.monotonic()
    search = asyncio.create_task(pod.memory_search("dentist appointment", k=3))
    await asyncio.sleep(0.3)
    said = await asyncio.wait_for(pod.memory_host._tool_remember(
        me, agent, {"fact": "The plumber comes on Tuesday.", "scope": "person"}), 15)
    assert "remembered" in said and time.monotonic() - started < 5
    hits = await asyncio.wait_for(search, 10)
    assert hits and "dentist" in hits[0].snippet
    started = time.monotonic()
    assert await pod.memory_search("plumber Tuesday", k=3)
    assert time.monotonic() - started < 1  # the next question does not wait on the provider again


async def _embedded_settle(pod) -> None:
    deadline = time.monotonic() + 30
    while not idle(pod.memory):
        assert time.monotonic() < deadline, pod.memory.embedding_status()
        await asyncio.sleep(0.05)


async def test_turning_a_providers_embeddings_off_from_the_terminal_stops_the_open_window_sending_notes(
        pod, fake_model, home, monkeypatch) -> None:
    """Me chose the provider's embeddings, then (from a terminal, the window still open) goes back to the local
    model so no more of his notes leave the machine. README: "nothing more goes to a provider you no longer
    chose". The window's Pod kept sending every new note, and every question, to the provider."""
    from runtime_host import memoryhost
    from tests.integration.test_cli import cli

    monkeypatch.setattr(memoryhost, "EMBEDDING_RECHECK_S", 0.0)  # at once, not within 2 s: no waiting in a test
    me = pod.person.id
    pod.set_role_model("embedding", "fake/fake-embed")
    await pod.in_memory_thread(lambda: pod.memory.add_source(DENTIST, scope=f"private/{me}"))
    await _embedded_settle(pod)
    assert DENTIST in fake_model.embedded
    r = await asyncio.to_thread(cli, home, "models", "set", "embedding", "local/static")
    assert r.returncode == 0, r.stderr
    assert pod.models()["roles"]["embedding"]["model"] == "static"  # the window reads the new choice...
    fake_model.embedded.clear()
    secret = "My new bank PIN hint: the name of the first cat, Mittens."
    await pod.in_memory_thread(lambda: pod.memory.add_source(secret, scope=f"private/{me}"))
    await pod.memory_search("what is the hint for my bank PIN", k=3)
    await asyncio.sleep(3)  # the background filler had time to send it
    sent = list(fake_model.embedded)
    assert sent == [], (f"after choosing local/static, the open window still sent {len(sent)} texts to the "
                        f"provider: {sent[:3]}; embedding_status={pod.embedding_status()}")


async def test_choosing_a_providers_embeddings_from_the_terminal_reaches_the_open_windows_memory(
        pod, fake_model, home, monkeypatch) -> None:
    """The other way round: chosen from a terminal while the window is open, the provider's embeddings should be
    what the window's memory uses for new notes (or the window should say it uses another model); it went on with
    the local model and Settings showed the provider as chosen."""
    from runtime_host import memoryhost
    from tests.integration.test_cli import cli

    monkeypatch.setattr(memoryhost, "EMBEDDING_RECHECK_S", 0.0)  # at once, not within 2 s: no waiting in a test
    me = pod.person.id
    await pod.in_memory_thread(lambda: pod.memory.add_source(DENTIST, scope=f"private/{me}"))
    r = await asyncio.to_thread(cli, home, "models", "set", "embedding", "fake/fake-embed")
    assert r.returncode == 0, r.stderr + r.stdout
    chosen = pod.models()["roles"]["embedding"]
    note = "The plumber comes on Tuesday to fix the boiler."
    await pod.in_memory_thread(lambda: pod.memory.add_source(note, scope=f"private/{me}"))
    deadline = time.monotonic() + 15
    while not any(note in e for e in fake_model.embedded) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    st = pod.embedding_status()
    assert any(note in e for e in fake_model.embedded) and "fake-embed" in str(st.get("model")), (
        f"Settings shows {chosen}, the window's memory uses {st.get('model')!r} and never embedded the new note "
        f"with the provider")


async def _sending_private_notes(pod, fake_model: FakeModelServer, n: int, how: str = "re-embedding") -> None:
    """Me's ``n`` private notes and the provider's embeddings chosen in the window (Settings → Models): memory sends
    the notes to it in the background, a batch of 64 a second, re-embedding them (stored before the choice) or
    filling their vectors (stored after it, as a folder import); returns once the provider has received some."""
    me = pod.person.id

    def store() -> None:
        pod.memory.add_items([Item(text=f"Private note {k}: my savings account number ends in {k:04d}.",
                                   scope=f"private/{me}", ts=1e6 + k) for k in range(n)])

    if how == "re-embedding":
        await pod.in_memory_thread(store)
    fake_model.embed_delay_s = 1.0
    pod.set_role_model("embedding", "fake/fake-embed")
    if how == "filling":
        await pod.in_memory_thread(store)
    deadline = time.monotonic() + 15
    while not fake_model.embedded:
        assert time.monotonic() < deadline, pod.embedding_status()
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("how", ["re-embedding", "filling"])
async def test_the_background_pass_sends_nothing_more_to_a_provider_turned_off_in_a_terminal(
        pod, fake_model, home, monkeypatch, how: str) -> None:
    """Me changes his mind in a terminal (`models set embedding local/static`) while memory sends his notes to the
    provider, and leaves the window alone. The window looked at the choice only when some memory work ran in it
    (a search, a store): left idle, it went on sending every note (924 to 1,052 more in 8 s). README: "nothing more
    goes to a provider you no longer chose". Here the window does not look for a minute: the pass itself reads the
    choice before each batch (one already on the wire may finish), and a question asked meanwhile stays here too
    (with the notes filled, search by meaning uses the provider)."""
    from runtime_host import memoryhost
    from tests.integration.test_cli import cli

    monkeypatch.setattr(memoryhost, "EMBEDDING_RECHECK_S", 60.0)
    await _sending_private_notes(pod, fake_model, 1000, how)
    r = await asyncio.to_thread(cli, home, "models", "set", "embedding", "local/static")
    assert r.returncode == 0, r.stderr
    at_choice = len(fake_model.embedded)
    await asyncio.sleep(4)
    more = len(fake_model.embedded) - at_choice
    assert more <= 64, (f"{more} more private notes went to the provider in the 4 s after the terminal chose the "
                        f"local model ({pod.embedding_status()})")
    before = len(fake_model.embedded)
    assert await pod.memory_search("my savings account number", k=3)  # found by its words
    assert len(fake_model.embedded) == before, "the question went to the provider no longer chosen"


async def test_an_idle_window_takes_up_a_model_chosen_in_a_terminal_within_seconds(pod, fake_model, home) -> None:
    """README: "A model chosen in another Hearth process ... is taken up by the window within a few seconds". An
    idle window never did: it kept the provider (and Settings its progress) until some memory work ran in it."""
    from tests.integration.test_cli import cli

    await _sending_private_notes(pod, fake_model, 1000)
    r = await asyncio.to_thread(cli, home, "models", "set", "embedding", "local/static")
    assert r.returncode == 0, r.stderr
    chosen = time.monotonic()
    static = load_embedder("static").name
    while pod.embedding_status()["model"] != static:  # Settings' progress: no memory work in the window
        assert time.monotonic() - chosen < 6, f"6 s after the terminal's choice the window shows {pod.embedding_status()}"
        await asyncio.sleep(0.1)
    assert await asyncio.to_thread(pod.memory.wait_for_embedding, 30)
    folder = home / "memory" / "index" / "private" / pod.person.id
    assert ScopeIndex.stored_embedder(folder) == static


async def test_after_the_terminal_chose_a_provider_a_restart_leaves_no_vector_of_the_old_model(
        pod, fake_model, home, monkeypatch) -> None:
    """The terminal re-embedded memory with the provider while the window's memory, still on the local model,
    stored a note with a local vector in the same index. After a restart that note's vector is of the wrong
    model (another size) among the provider's: it should have been re-embedded with the provider."""
    import sqlite3

    from runtime_host import memoryhost
    from runtime_host.pod import Pod
    from tests.integration.test_cli import cli

    monkeypatch.setattr(memoryhost, "EMBEDDING_RECHECK_S", 0.0)  # at once, not within 2 s: no waiting in a test
    me = pod.person.id
    await pod.in_memory_thread(lambda: pod.memory.add_source(DENTIST, scope=f"private/{me}"))
    r = await asyncio.to_thread(cli, home, "models", "set", "embedding", "fake/fake-embed")
    assert r.returncode == 0, r.stderr + r.stdout
    note = "The plumber comes on Tuesday to fix the boiler."
    await pod.in_memory_thread(lambda: pod.memory.add_source(note, scope=f"private/{me}"))
    await asyncio.sleep(1)
    await pod.close()
    again = Pod(home).first_person()
    try:
        await again.in_memory_thread(lambda: again.memory)
        deadline = time.monotonic() + 20
        while not any(note in e for e in fake_model.embedded) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await again.memory_search("boiler", k=3)
        db = home / "memory" / "index" / f"private/{me}" / "meta.db"
        con = sqlite3.connect(str(db))
        sizes = {body[:30]: (len(v) // 4 if v else None) for body, v in con.execute("SELECT body, vec FROM docs")}
        emb = con.execute("SELECT value FROM info WHERE key='embedder'").fetchone()
        con.close()
        assert len(set(sizes.values())) == 1 and any(note in e for e in fake_model.embedded), (
            f"index says embedder={emb}, vector sizes by note: {sizes}; the provider embedded {fake_model.embedded}")
    finally:
        await again.close()


def test_a_vector_of_another_models_size_is_made_again_when_the_index_opens(tmp_path: Path,
                                                                             fake_model: FakeModelServer) -> None:
    """A second Hearth process still on the old model wrote its vector into an index re-embedded meanwhile: that
    note kept a vector of the wrong size for good (never found by meaning, never queued again, past restarts).
    Now opening the index queues it for the provider (or makes it again with a local model)."""
    root = tmp_path / "memory"
    for local in (False, True):
        scope = "private/local" if local else "private/me"
        embedder = "static" if local else provider(fake_model)
        mem = open_memory(root, embedder=embedder)
        try:
            mem.add_source("The plumber fixed the kitchen sink.", scope=scope)
            sid = mem.add_source(DENTIST, scope=scope)
            wait_until(lambda m=mem: idle(m))
        finally:
            mem.close()
        con = sqlite3.connect(str(root / "index" / scope / "meta.db"))
        with con:  # the other process's vector, of its own model's size
            con.execute("UPDATE docs SET vec=? WHERE id=?", (np.ones(48, dtype=np.float32).tobytes(), sid))
        con.close()
        mem = open_memory(root, embedder="static" if local else provider(fake_model))
        try:
            mem.index(scope)
            wait_until(lambda m=mem: idle(m))
            assert len({len(v) for v in stored_vectors(root, scope) if v}) == 1
            assert None not in stored_vectors(root, scope)
            assert mem.search("tooth appointment", scopes=[scope], k=1, mode="meaning")[0].id == sid
        finally:
            mem.close()


async def test_a_terminal_embedding_choice_does_not_freeze_the_event_loop(pod) -> None:
    """A model chosen in a terminal was taken up on the window's event loop, which then waited for memory's lock:
    while memory's thread was in a long piece of work (a folder batch embedded under the lock, a big deletion),
    the window froze until it ended."""
    from tests.integration.test_cli import cli

    await pod.memory_search("anything", mode="keyword")  # memory open in the "window"
    mem = pod.memory

    done = threading.Event()  # the long work goes on until the heartbeat below has been measured (however long
    # the terminal's command took on a busy machine)

    def long_work() -> None:  # stands for a long memory operation holding memory's lock (e.g. a folder batch)
        with mem._lock:
            done.wait(60)

    busy = asyncio.ensure_future(pod.pod.memory_host.in_memory_thread(long_work))
    out = await asyncio.to_thread(cli, pod.home, "models", "set", "embedding", "local/minilm")
    assert out.returncode == 0, out.stderr
    await asyncio.sleep(2.1)  # the window looks for a choice made elsewhere every 2 s
    assert not busy.done()
    gaps: list[float] = []

    async def heartbeat() -> None:
        last = time.monotonic()
        for _ in range(30):
            await asyncio.sleep(0.05)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    hb = asyncio.ensure_future(heartbeat())
    await asyncio.sleep(0.1)
    search = asyncio.ensure_future(pod.memory_search("anything", mode="keyword"))  # a keystroke's typeahead, say
    await hb
    done.set()
    await busy
    await search
    assert max(gaps) < 1.0, f"the event loop stood still for {max(gaps):.1f} s"


async def test_an_embedding_choice_in_settings_does_not_freeze_the_event_loop(pod) -> None:
    """Choosing a model in Settings (the window's own process) called set_embedder on the event loop: it loaded
    the model and waited for memory's lock there, so while memory's thread was in a long piece of work the whole
    window stood still until it ended. The choice now returns at once and is taken up on memory's thread."""
    await pod.memory_search("anything", mode="keyword")  # memory open in the window
    mem = pod.memory

    def long_work() -> None:  # a long memory operation holding memory's lock (a folder batch, a big deletion)
        with mem._lock:
            time.sleep(4)

    busy = asyncio.ensure_future(pod.pod.memory_host.in_memory_thread(long_work))
    await asyncio.sleep(0.2)
    t0 = time.monotonic()
    pod.set_role_model("embedding", "local/minilm")  # what Settings → Models does on the event loop
    took = time.monotonic() - t0
    assert not busy.done()
    assert took < 1.0, f"choosing the model held the window for {took:.1f} s"
    await busy
    await pod.memory_search("anything", mode="keyword")  # memory's next work runs after the switch
    assert pod.pod.memory_host.embedding_status()["model"] == "minilm-l6-v2-int8"


def test_the_nightly_pass_keeps_the_vectors_it_has_and_asks_the_provider_for_none_again(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """The nightly pass made every scope's index anew: every source went to the provider again each night (paid
    calls, rate limits), and search by meaning lost them until all were embedded again."""
    from wiki_engine.pipeline import run_nightly

    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        sid = mem.add_source(DENTIST, scope="private/me")
        others = [mem.add_source(f"Note {i}: bought bread and milk at the market.", scope="private/me") for i in range(5)]
        wait_until(lambda: idle(mem) and mem.embedding_status()["done"] == 6)
        asked = len(fake_model.embedded)
        fake_model.embed_fault = Error(500, "overloaded")  # the provider down tonight
        rep = run_nightly(mem)
        assert rep.reindexed_scopes == ["private/me"]
        fake_model.embed_fault = None  # back in the morning: the question is embedded, the sources' vectors are there
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        time.sleep(0.5)
        assert not [t for t in fake_model.embedded[asked:] if t == DENTIST or "market" in t], "sources embedded again"
        assert {h.id for h in mem.search("market", scopes=["private/me"], k=10, mode="keyword")} == set(others)
    finally:
        mem.close()


def test_the_nightly_pass_sends_an_unchanged_page_to_the_provider_no_more_and_a_hand_edited_one_again(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """Each night every page was taken out of the index and put back: sent to the provider again, and without a
    vector (not found by meaning) while the provider was down."""
    from wiki_engine.pipeline import run_nightly

    root = tmp_path / "memory"
    mem = open_memory(root, embedder=provider(fake_model))
    try:
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.write_page(Page("Dentist", "private/me", "health", "Sees the dentist every Friday at nine [1].", {1: sid}),
                       author="agent:ingest")
        mem.write_page(Page("Garden", "private/me", "home", "Waters the tomatoes every evening [1].", {1: sid}),
                       author="agent:ingest")
        wait_until(lambda: idle(mem) and None not in stored_vectors(root, "private/me"))
        asked = len(fake_model.embedded)
        fake_model.embed_fault = Error(500, "overloaded")  # the provider down tonight
        garden = root / "wiki" / "private" / "me" / "garden.md"
        garden.write_text(garden.read_text().replace("tomatoes", "courgettes"))  # a hand edit
        run_nightly(mem)
        fake_model.embed_fault = None
        wait_until(lambda: idle(mem) and None not in stored_vectors(root, "private/me"))
        again = fake_model.embedded[asked:]
        assert not [t for t in again if "dentist every Friday" in t], "the unchanged page was embedded again"
        assert [t for t in again if "courgettes" in t], "the hand-edited page was not embedded again"
        assert [h.title for h in mem.search("courgettes", scopes=["private/me"], k=1, mode="keyword")] == ["Garden"]
        garden.unlink()  # a page file deleted by hand leaves the index
        run_nightly(mem)
        assert mem.search("courgettes", scopes=["private/me"], k=1, mode="keyword") == []
    finally:
        mem.close()


async def test_vectors_queued_for_the_provider_are_filled_after_a_restart_without_a_search(pod, fake_model, home) -> None:
    """100 notes were queued for the provider's vectors while it was down, and Hearth quit. After a restart with the
    provider back, nothing was sent and Settings showed nothing until a search or the timed producer opened memory
    (the start-up looked only for scopes on another model). README: queued vectors are "filled in the background
    ..., again after a restart". Now the start opens memory in the background when vectors wait for the provider."""
    from runtime_host.pod import Pod

    me = pod.person.id
    pod.set_role_model("embedding", "fake/fake-embed")
    fake_model.embed_fault = Error(503, "maintenance")
    await pod.in_memory_thread(lambda: pod.memory.add_items(
        [Item(text=f"Note {k}: the plumber comes on day {k}.", scope=f"private/{me}", ts=1e6 + k) for k in range(100)]))
    deadline = time.monotonic() + 20
    while not (pod.embedding_status() or {}).get("error"):
        assert time.monotonic() < deadline, pod.embedding_status()
        await asyncio.sleep(0.1)
    await pod.close()
    fake_model.embed_fault = None  # the provider is back; Hearth starts again and is left alone
    sent_before = len(fake_model.embedded)
    again = Pod(home).first_person()
    try:
        again.pod.start_background()
        deadline = time.monotonic() + 30
        while not ((st := again.embedding_status()) and st["total"] and not st["running"]):
            assert time.monotonic() < deadline, (
                f"after the restart the provider was sent {len(fake_model.embedded) - sent_before} of the 100 queued "
                f"notes; Settings → Models shows {st}")
            await asyncio.sleep(0.1)
        assert (st["done"], st["total"], st["error"]) == (100, 100, ""), st
        assert len(fake_model.embedded) - sent_before >= 100
        assert all(v is not None for v in stored_vectors(home / "memory", f"private/{me}"))
    finally:
        await again.close()
