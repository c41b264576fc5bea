"""The embedding model can change: every vector is recomputed in the background, with progress, while
search keeps answering; afterwards meaning search runs on the new model's vectors."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from wiki_engine import Item, open_memory
from wiki_engine.embed import load_embedder
from wiki_engine.index import ScopeIndex


class Gated:
    """The real MiniLM model, held at a gate so the test can look at memory while re-embedding is under way."""

    def __init__(self) -> None:
        self.inner = load_embedder("minilm")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.gate = threading.Event()
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > 1:  # the first call (a search's question) passes; the re-embedding waits
            self.gate.wait(30)
        return self.inner.embed(texts)


def test_changing_the_model_reembeds_in_the_background_and_search_keeps_working(tmp_path: Path) -> None:
    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        target = mem.add_source("Dr. Nwosu at Brightsmile Dental: check-up on 3 March at 10:40.", scope="private/alice")
        mem.add_items([Item(text=f"Shopping list {n}: bread, milk and {n} apples.", scope="public", ts=1.7e9 + n)
                       for n in range(300)])
        assert mem.embedding_status()["running"] is False
        gated = Gated()
        gated.embed(["warm up"])
        mem.set_embedder(gated)  # type: ignore[arg-type]
        deadline = time.time() + 10
        while mem.embedding_status()["total"] == 0 and time.time() < deadline:
            time.sleep(0.02)
        st = mem.embedding_status()
        assert st["running"] is True and st["total"] == 301 and st["done"] < 301 and st["model"] == gated.name
        # Meanwhile search answers with the vectors it has (the old model's).
        hits = mem.search("Brightsmile check-up", scopes=["private/alice", "public"], k=3)
        assert hits and hits[0].id == target
        gated.gate.set()
        assert mem.wait_for_embedding(60)
        st = mem.embedding_status()
        assert st["running"] is False and st["done"] == st["total"] == 301 and not st["error"]
        assert ScopeIndex.stored_embedder(tmp_path / "memory" / "index" / "public") == gated.name
        assert mem.index("public").vecs.shape[1] == 384
        # Meaning search now runs on MiniLM's vectors: a paraphrase with no shared word finds the check-up.
        hits = mem.search("when do I see the tooth doctor", scopes=["private/alice", "public"], k=1)
        assert hits[0].id == target
    finally:
        mem.close()

    # Opened again with another model: it searches at once with the stored vectors and re-embeds behind.
    mem = open_memory(tmp_path / "memory", embedder="static")
    try:
        assert mem.search("Brightsmile", scopes=["private/alice"], k=1)[0].id == target
        assert mem.wait_for_embedding(60)
        assert ScopeIndex.stored_embedder(tmp_path / "memory" / "index" / "private" / "alice") == load_embedder("static").name
        assert mem.embedding_status()["done"] == mem.embedding_status()["total"] > 0
    finally:
        mem.close()
