"""Memory's background embedding pass with a provider's embeddings (the fake model server: a real HTTP server)
where real providers break it: a long document, another model behind the provider's name mid re-embed, a model
chosen just as the pass ends, a person forgotten mid re-embed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime_host.providers import Route
from runtime_host.providers.embeddings import ProviderEmbedder
from tests.helpers.fake_model import Error, FakeModelServer
from wiki_engine import Item, Memory, open_memory
from wiki_engine.embed import load_embedder
from wiki_engine.index import ScopeIndex
from wiki_engine.memory import _index_folders

KEY = "sk-embed-0a1b2c3d4e5f6g7h"
DENTIST = "Appointment with the dentist on Friday at nine."
MINUTES = "Committee meeting minutes. " + "The committee discussed the budget at length. " * 5000  # 240 KB


def provider(fake: FakeModelServer) -> ProviderEmbedder:
    return ProviderEmbedder.for_route(Route("fake", "openai-compatible", fake.base_url, "fake-embed", KEY))


def wait_until(cond: Callable[[], object], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def settled(mem: Memory) -> bool:
    st = mem.embedding_status()
    return not st["running"] and not st["error"]


def shopping(n: int) -> list[Item]:
    return [Item(text=f"Shopping list {k}: bread and {k} apples.", scope="private/me", ts=1.7e9 + k) for k in range(n)]


# ---- a long document ---------------------------------------------------------------------------------------------

def test_a_long_document_gets_its_vector_from_its_start_and_holds_up_no_other_note(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """A 240 KB text file imported from a folder went whole to the provider, which refused the batch it was in
    (HTTP 400, context length) again and again: no note stored after it ever got a vector ("tries again in 16 s")."""
    fake_model.embed_max_chars = 32_000  # about 8,000 tokens of English, as OpenAI's embedding models take
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        long_id = mem.add_source(MINUTES, scope="private/me")
        sid = mem.add_source(DENTIST, scope="private/me")
        assert wait_until(lambda: settled(mem) and mem.embedding_status()["done"] >= 2, 20), mem.embedding_status()
        st = mem.embedding_status()
        assert st["done"] == st["total"] and st["set_aside"] == 0 and not st["note"], st
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        assert mem.search("committee budget", scopes=["private/me"], k=1, mode="meaning")[0].id == long_id
        assert mem.index("private/me").queued_count() == 0
    finally:
        mem.close()


def test_a_document_the_provider_refuses_alone_is_set_aside_named_and_found_by_its_words(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """A provider that refuses even the start of a text (a smaller context, a script of many tokens a letter): that
    text is found by its words alone, named in the status with what to do, and the notes stored with it (in the same
    batch of 64 and after) get their vectors; progress reaches its end, with no error."""
    fake_model.embed_max_chars = 8_000
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        mem.add_items(shopping(40))
        long_id = mem.add_source(MINUTES, scope="private/me")
        mem.add_items([Item(text=f"Garden note {k}: water the roses.", scope="private/me", ts=1.8e9 + k)
                       for k in range(40)])
        sid = mem.add_source(DENTIST, scope="private/me")
        assert wait_until(lambda: settled(mem) and mem.embedding_status()["set_aside"], 20), mem.embedding_status()
        st = mem.embedding_status()
        assert st["done"] == st["total"] and st["set_aside"] == 1, st
        assert "“Committee meeting minutes." in st["note"] and "maximum context length" in st["note"], st["note"]
        assert "words alone" in st["note"] and "shorter notes" in st["note"], st["note"]
        assert mem.embedding_status(["private/bob"])["set_aside"] == 0  # another person is shown nothing of hers
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        assert mem.search("committee budget", scopes=["private/me"], k=1, mode="keyword")[0].id == long_id
        assert mem.index("private/me").queued_count() == 1  # hers alone, never sent again meanwhile
        sent = len(fake_model.embed_refused)
        mem.add_source("Bought stamps at the post office.", scope="private/me")
        assert wait_until(lambda: settled(mem) and mem.index("private/me").queued_count() == 1, 20)
        assert len(fake_model.embed_refused) == sent
    finally:
        mem.close()


def test_a_document_the_provider_refuses_alone_does_not_stop_the_switch_to_it(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """Choosing the provider's embeddings (`models set embedding`) with a long note stored failed the same way."""
    fake_model.embed_max_chars = 8_000
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        mem.add_items(shopping(100))
        mem.add_source(MINUTES, scope="private/me")
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.set_embedder(provider(fake_model))
        assert wait_until(lambda: settled(mem), 20), mem.embedding_status()
        st = mem.embedding_status()
        assert st["done"] == st["total"] == 102 and st["set_aside"] == 1, st
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == "provider:fake/fake-embed"
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        mem.set_embedder(provider(fake_model))  # choosing it again tries the note set aside again
        assert wait_until(lambda: settled(mem) and mem.embedding_status()["set_aside"] == 1, 20)
        assert len(fake_model.embed_refused) >= 2
    finally:
        mem.close()


def test_a_note_stored_after_a_long_document_is_embedded_with_its_own_words(tmp_path: Path) -> None:
    """A source's vector read the whole source said before it first: a note stored within the hour after a long
    document was embedded as that document's start (its own words past what the model reads), and with a provider,
    refused with it."""
    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        mem.add_source(MINUTES, scope="private/me")
        sid = mem.add_source(DENTIST, scope="private/me")
        hits = mem.search("dentist appointment on Friday", scopes=["private/me"], k=2, mode="meaning")
        assert hits[0].id == sid and hits[0].score > hits[1].score, [(h.snippet[:30], h.score) for h in hits]
    finally:
        mem.close()


# ---- another model behind the provider's name mid re-embed -------------------------------------------------------

def swapped_after_first_answer(fake: FakeModelServer) -> list[int]:
    """From its second answer on, another model (32 numbers a vector) answers under the name, as LM Studio does
    when another embedding model is loaded."""
    orig, calls = fake._embeddings, [0]

    def embeddings(h, req):  # noqa: ANN001, ANN202
        calls[0] += 1
        if calls[0] > 1:
            fake.embed_fault = "half-size"
        return orig(h, req)

    fake._embeddings = embeddings  # type: ignore[method-assign]
    return calls


def re_embedding_as_the_model_is_swapped(tmp_path: Path, fake_model: FakeModelServer) -> tuple[Memory, str]:
    """151 notes (the dentist's among them, its id returned) re-embedded with the provider, whose model behind the
    name answers 64 numbers a vector to the first batch and 32 after."""
    mem = open_memory(tmp_path / "memory", embedder="static")
    mem.add_items(shopping(150))
    sid = mem.add_source(DENTIST, scope="private/me")
    swapped_after_first_answer(fake_model)
    mem.set_embedder(provider(fake_model))
    return mem, sid


def test_a_model_swapped_behind_the_name_mid_reembed_is_taken_up_after_three_answers(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """The vectors of the first batch fixed the size: every answer after was refused, the switch stuck at 64/151."""
    mem, sid = re_embedding_as_the_model_is_swapped(tmp_path, fake_model)
    try:
        assert wait_until(lambda: settled(mem), 20), mem.embedding_status()
        st = mem.embedding_status()
        assert st["done"] == st["total"] == 151, st
        assert mem.index("private/me").vecs.shape[1] == 32
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
    finally:
        mem.close()


def test_choosing_the_model_again_takes_up_its_new_size_at_once(
        tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the error says to do, choose the model again, changed nothing (and it still said "in 16 s")."""
    from wiki_engine import memory

    monkeypatch.setattr(memory, "SIZE_CHANGE_ANSWERS", 1000)  # not on its own: the person's choice does it
    mem, sid = re_embedding_as_the_model_is_swapped(tmp_path, fake_model)
    try:
        assert wait_until(lambda: "32 numbers where 64" in str(mem.embedding_status()["error"]), 20)
        mem.set_embedder(provider(fake_model))
        assert wait_until(lambda: settled(mem), 10), mem.embedding_status()
        assert mem.embedding_status()["done"] == 151
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
    finally:
        mem.close()


def test_choosing_a_failing_model_again_retries_at_once_and_says_so(tmp_path: Path,
                                                                    fake_model: FakeModelServer) -> None:
    fake_model.embed_fault = Error(503, "Service unavailable")
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        mem.add_source(DENTIST, scope="private/me")
        assert wait_until(lambda: "tries again in 2 s" in str(mem.embedding_status()["error"]), 20)
        asked = len(fake_model.requests) + len(fake_model.embed_requests)
        mem.set_embedder(provider(fake_model))
        assert wait_until(lambda: "tries again in 0.5 s" in str(mem.embedding_status()["error"]), 1.5), \
            mem.embedding_status()["error"]
        assert len(fake_model.requests) + len(fake_model.embed_requests) >= asked
    finally:
        mem.close()


# ---- a model chosen just as the pass ends ------------------------------------------------------------------------

class _Progress(dict):
    """Memory's progress, telling when the embedding thread reads `again` as False (it is about to end)."""

    def __init__(self, src: dict, ending: threading.Event):
        super().__init__(src)
        self.ending = ending

    def get(self, key, default=None):  # noqa: ANN001, ANN201
        value = super().get(key, default)
        if key == "again" and not value and threading.current_thread().name == "memory-embedding":
            self.ending.set()
        return value


class _PausingLock:
    """Memory's lock, switching the embedding thread out for a moment just after it released it to end."""

    def __init__(self, inner, ending: threading.Event, paused: threading.Event):  # noqa: ANN001
        self.inner, self.ending, self.paused = inner, ending, paused

    def __enter__(self):  # noqa: ANN204
        self.inner.acquire()
        return self

    def __exit__(self, *exc: object) -> bool:
        self.inner.release()
        if self.ending.is_set() and threading.current_thread().name == "memory-embedding" and not self.paused.is_set():
            self.paused.set()
            time.sleep(0.5)  # the thread switch that may happen here in real use
        return False


def test_a_model_chosen_as_the_pass_ends_is_taken_up(tmp_path: Path) -> None:
    """Memory said it used the model chosen last, but its thread ended without looking: the vectors stayed the
    previous model's until Hearth restarted."""
    root = tmp_path / "memory"
    load_embedder("minilm")
    mem = open_memory(root, embedder="static")
    try:
        mem.add_source("Dr. Nwosu at Brightsmile Dental: check-up on 3 March at 10:40.", scope="private/alice")
        ending, paused = threading.Event(), threading.Event()
        mem._progress = _Progress(mem._progress, ending)
        mem._lock = _PausingLock(mem._lock, ending, paused)  # type: ignore[assignment]
        mem.set_embedder("minilm")
        assert paused.wait(30)
        mem.set_embedder("static")  # turned back to the fast model a moment later
        assert wait_until(lambda: not mem.embedding_status()["running"], 30)
        assert mem.wait_for_embedding(30)
        stored = ScopeIndex.stored_embedder(root / "index" / "private" / "alice")
        assert stored == load_embedder("static").name, f"memory says static, its vectors are {stored}"
    finally:
        mem.close()


# ---- a person forgotten mid re-embed -----------------------------------------------------------------------------

def test_forgetting_a_person_mid_reembed_is_no_failure_of_the_model(tmp_path: Path,
                                                                    fake_model: FakeModelServer) -> None:
    """Settings showed "Cannot operate on a closed database … tries again": forgetting closed the index the pass
    was using. Nothing more of hers reaches the provider, nothing of hers is left, and no error is shown."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    errors: list[str] = []
    try:
        for scope in ("private/alice", "agent/alice/helper", "agent/alice/writer"):
            mem.add_items([Item(text=f"Alice's note {scope.split('/')[-1]} {n}: the code is {n * 7}.", scope=scope,
                                ts=1.7e9 + n, owner="alice") for n in range(200)])
        bob = mem.add_source("Bob's note: the dentist on Tuesday.", scope="private/bob")
        fake_model.embed_delay_s = 0.2
        mem.set_embedder(provider(fake_model), only_for="alice")
        assert wait_until(lambda: len(fake_model.embedded) >= 64, 20)
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                if e := mem.embedding_status()["error"]:
                    errors.append(str(e))
                time.sleep(0.01)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        mem.forget_person("alice")
        time.sleep(0.5)  # a request already on the wire when she was forgotten may finish
        in_flight = len(fake_model.embedded)
        assert wait_until(lambda: not mem.embedding_status()["running"], 30)
        time.sleep(0.5)
        stop.set()
        watcher.join(5)
        assert not fake_model.embedded[in_flight:]
        assert not [s for s in _index_folders(root) if s.person == "alice"]
        assert not errors, errors[0]
        assert mem.search("tooth", scopes=["private/bob"], k=1)[0].id == bob
    finally:
        mem.close()
