"""Memory's background embedding pass with a provider's embeddings (the fake model server: a real HTTP server)
where real providers break it: a long document, another model behind the provider's name mid re-embed, a model
chosen just as the pass ends or mid-request, a person forgotten mid re-embed, a server too slow for a whole batch,
one hung for a while, one that drips its answer, notes another process stored and left without their vectors."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import runtime_host.providers.embeddings as embeddings
from runtime_host.providers import Route
from runtime_host.providers.embeddings import ProviderEmbedder
from tests.helpers.fake_model import Error, FakeModelServer, Hang, echo
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


class _Held:
    """A provider's embeddings (remote; vectors of the static model) whose requests wait until the test lets them go."""

    remote = True

    def __init__(self, name: str):
        self.name, self.dim = name, 256
        self.gate, self.entered = threading.Event(), threading.Event()

    def embed(self, texts: list[str], timeout: float | None = None):  # noqa: ANN201
        self.entered.set()
        self.gate.wait(60)
        return load_embedder("static").embed(texts)


def test_a_pass_given_up_on_does_not_end_the_new_models_re_embed(tmp_path: Path) -> None:
    """She chose a provider's embeddings, then changed her mind for another while the first was answering its first
    batch. When that answer came (and was thrown away), the pass given up on wrote "not running" over the new one's
    status: Settings → Models read "Memory is re-embedded: 300 items, ready for search by meaning" while the new
    model had embedded nothing."""
    mem = open_memory(tmp_path / "memory", embedder="static")
    first, second = _Held("provider:a/embed"), _Held("provider:b/embed")
    try:
        mem.add_items(shopping(300))
        mem.set_embedder(first, only_for="me")
        assert first.entered.wait(10)  # the first provider is answering its first batch
        mem.set_embedder(second, only_for="me")  # she changes her mind
        assert second.entered.wait(10)  # the new pass is under way
        first.gate.set()  # the old request comes back (its answer is thrown away)
        time.sleep(0.5)
        st = mem.embedding_status()
        assert st["running"] and st["done"] == 0, f"the new model is on its first batch, yet the status reads {st}"
        second.gate.set()
        assert wait_until(lambda: settled(mem), 30), mem.embedding_status()
        st = mem.embedding_status()
        assert st["done"] == st["total"] == 300, st
        assert ScopeIndex.stored_embedder(tmp_path / "memory" / "index" / "private" / "me") == "provider:b/embed"
    finally:
        first.gate.set()
        second.gate.set()
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


# ---- a model server slower than a request may take ---------------------------------------------------------------

def test_a_server_too_slow_for_a_whole_batch_is_sent_fewer_notes_a_request_and_embeds_them_all(
        tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model server on this machine (Ollama on a CPU) that embeds about two long notes a second answers a request
    of 64 in ~32 s, past the 30 s a request may take: it timed out, was sent again whole with growing waits, timed
    out again, for ever; the re-embed stayed at 0 of N and nothing was found by meaning. Scaled down here (a request
    may take 1 s, the server takes 0.05 s a note): 64 and 32 time out, 16 are answered, and the notes after (the
    rest of the switch, and those stored later) go 16 to a request, none timing out first."""
    monkeypatch.setattr(embeddings, "TIMEOUT_S", 1.0)
    fake_model.embed_per_text_s = 0.05
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        mem.add_items(shopping(100))
        sid = mem.add_source(DENTIST, scope="private/me")
        mem.set_embedder(provider(fake_model), only_for="me")
        assert wait_until(lambda: settled(mem), 40), f"after 40 s: {mem.embedding_status()}"
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == "provider:fake/fake-embed"
        mem.add_items([Item(text=f"Garden note {k}: water the roses.", scope="private/me", ts=1.8e9 + k)
                       for k in range(40)])
        assert wait_until(lambda: settled(mem) and mem.index("private/me").queued_count() == 0, 40), \
            mem.embedding_status()
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
        big = [len(r.body["input"]) for r in fake_model.embed_requests if len(r.body["input"]) > 16]
        assert sorted(big) == [32, 64], f"requests of more than 16 notes: {big}"
    finally:
        mem.close()


def test_a_provider_hung_for_a_while_is_said_within_two_requests_and_then_gets_full_batches_again(
        tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider that stops answering for a while (a hung server, a network dropping packets) was taken for a slow
    one: its requests were halved down to one note, each waiting the time a request may take, before anything was
    said (7 requests' time: 3.5 minutes in Hearth), and once it answered again it was sent one note a request for
    good (640 requests for 640 notes). Now one note is sent alone after the first request timed out: not answered
    either, that is the provider's failure, said at once, and its next requests are whole batches again."""
    monkeypatch.setattr(embeddings, "TIMEOUT_S", 1.0)  # 30 s in Hearth
    fake_model.embed_fault = Hang(3)  # answers nothing for a while
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        mem.add_items(shopping(640))
        started = time.monotonic()
        assert wait_until(lambda: mem.embedding_status()["error"], 20), mem.embedding_status()
        said_after = time.monotonic() - started
        error = str(mem.embedding_status()["error"])
        fake_model.embed_fault = None  # the provider answers again
        assert wait_until(lambda: settled(mem) and mem.index("private/me").queued_count() == 0, 60), \
            mem.embedding_status()
        sizes = [len(r.body["input"]) for r in fake_model.embed_requests]
        assert sizes == [64] * 10, f"once it answered again: {len(sizes)} requests of {sorted(set(sizes))} note(s)"
        assert said_after < 3 * embeddings.TIMEOUT_S, f"the failure was said after {said_after:.1f} s: {error}"
        assert "tries again in" in error, error
    finally:
        mem.close()


# ---- a provider that drips its answer ----------------------------------------------------------------------------

def test_a_provider_dripping_its_answer_is_cut_off_and_said_within_a_request_s_time(
        tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider that sends its answer a byte every half second (no read ever times out) held the background
    pass for 600 s per batch, Settings showing "0 of 1" and no error. Now a request's whole answer gets the time a
    request may take (30 s; 1.5 s here), and Settings says what happened."""
    monkeypatch.setattr(embeddings, "TIMEOUT_S", 1.5)
    fake_model.embed_fault = "drip"
    mem = open_memory(tmp_path / "memory", embedder=provider(fake_model))
    try:
        mem.add_source(DENTIST, scope="private/me")
        assert wait_until(lambda: mem.embedding_status()["error"], 10), mem.embedding_status()
        error = str(mem.embedding_status()["error"])
        assert "more than 1.5 s without ending it" in error and "tries again in" in error, error
    finally:
        mem.close()


def test_choosing_the_local_model_while_a_provider_drips_its_answer_switches_at_once(
        tmp_path: Path, fake_model: FakeModelServer) -> None:
    """The person gives up on a provider that answers the re-embed a byte at a time and chooses the local model
    again: Settings showed "Re-embedding … 0 of 0", and search by meaning was off, until the dripping answer ended
    (up to 10 minutes). Now the local model's pass starts at once; the provider's answer is thrown away."""
    root = tmp_path / "memory"
    mem = open_memory(root, embedder="static")
    try:
        mem.add_items(shopping(100))
        sid = mem.add_source(DENTIST, scope="private/me")
        fake_model.embed_fault = "drip"
        mem.set_embedder(provider(fake_model), only_for="me")
        assert wait_until(lambda: fake_model.embedded, 10)
        time.sleep(1.0)  # its first batch is being answered, a byte at a time
        started = time.monotonic()
        mem.set_embedder("static")
        assert mem.wait_for_embedding(20), f"20 s after choosing the local model: {mem.embedding_status()}"
        assert time.monotonic() - started < 10
        assert ScopeIndex.stored_embedder(root / "index" / "private" / "me") == load_embedder("static").name
        assert mem.search("tooth", scopes=["private/me"], k=1, mode="meaning")[0].id == sid
    finally:
        mem.close()


def test_a_provider_given_up_on_mid_answer_leaves_none_of_its_vectors(tmp_path: Path,
                                                                      fake_model: FakeModelServer) -> None:
    """The pass given up on (another provider chosen while its last request was answered) ends on its own once
    its answer comes, after the new provider's pass made every vector: what it was answered is thrown away, never
    swapped in over the new vectors (it answers vectors of another size here, which would show)."""
    root = tmp_path / "memory"
    old = FakeModelServer(echo).start()
    mem = open_memory(root, embedder="static")
    try:
        mem.add_items(shopping(10))
        old.embed_fault, old.embed_delay_s = "half-size", 2.0
        mem.set_embedder(ProviderEmbedder.for_route(Route("old", "openai-compatible", old.base_url, "old-embed", KEY)),
                         only_for="me")
        time.sleep(0.5)  # its one request is on the wire
        mem.set_embedder(provider(fake_model), only_for="me")
        assert mem.wait_for_embedding(20)
        assert wait_until(lambda: old.embedded, 10)
        time.sleep(1.0)  # its answer read, and thrown away
        folder = root / "index" / "private" / "me"
        assert ScopeIndex.stored_embedder(folder) == "provider:fake/fake-embed"
        con = sqlite3.connect(str(folder / "meta.db"))
        try:
            sizes = {len(v) // 4 for (v,) in con.execute("SELECT vec FROM docs")}
        finally:
            con.close()
        assert sizes == {mem.index("private/me").vecs.shape[1]} and len(sizes) == 1, sizes
        assert not mem.embedding_status()["error"]
    finally:
        mem.close()
        old.stop()


# ---- notes another process stored without their vectors -----------------------------------------------------------

_TERMINAL_IMPORT = """
import sys
from runtime_host.providers import Route
from runtime_host.providers.embeddings import ProviderEmbedder
from wiki_engine import Item, open_memory
emb = ProviderEmbedder.for_route(Route("fake", "openai-compatible", sys.argv[2], "fake-embed", None))
with open_memory(sys.argv[1], embedder=emb, only_for="me") as mem:
    mem.add_items([Item(text=f"Imported chapter {n}: the heron came to the pond at {n}.", scope="private/me",
                        ts=1.7e9 + n) for n in range(300)])
    print(mem.add_source("The greenhouse tomatoes need watering twice a day.", scope="private/me"))
"""


def test_notes_a_terminal_stored_get_their_vectors_in_the_open_window(tmp_path: Path,
                                                                      fake_model: FakeModelServer) -> None:
    """With a provider's embeddings chosen, a terminal (`folder add ~/notes`) stores 300 notes and ends before its
    background pass filled their vectors. The open window found them by their words at once but never by meaning:
    nothing there started filling them, until it stored something itself or was restarted."""
    fake_model.embed_delay_s = 0.5
    root = tmp_path / "memory"
    mem = open_memory(root, embedder=provider(fake_model), only_for="me")  # the window
    try:
        mem.add_source(DENTIST, scope="private/me")
        assert wait_until(lambda: settled(mem), 20)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        done = subprocess.run([sys.executable, "-c", _TERMINAL_IMPORT, str(root), fake_model.base_url], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        sid = done.stdout.strip()
        idx = mem.index("private/me")
        assert mem.search("greenhouse tomatoes", scopes=["private/me"], k=1, mode="keyword")[0].id == sid
        assert idx.queued_count() > 64, "the terminal filled its notes' vectors itself: nothing left to show"

        def searched_and_filled() -> bool:
            mem.search("greenhouse", scopes=["private/me"], k=1)  # the person searches now and then in the window
            return idx.queued_count() == 0

        assert wait_until(searched_and_filled, 20), \
            f"{idx.queued_count()} of its 301 notes still have no vector: {mem.embedding_status()}"
        hits = mem.search("greenhouse tomatoes need watering", scopes=["private/me"], k=3, mode="meaning")
        assert sid in [h.id for h in hits], [h.snippet for h in hits]
    finally:
        mem.close()
