"""A memory job's model thinks off memory's thread: while the ingest or extraction model (the fake model on
127.0.0.1, holding its answer) thinks, search answers and sources can be deleted; the draft is checked again
when it is written, so a source deleted meanwhile never comes back as a citation, and no draft of a model that read
a source deleted meanwhile is written. A folder import's parts are embedded off memory's thread too."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers.fake_model import Request, Text


class HeldAnswer:
    """A fake-model answer held until the test releases it (or ``hold_s`` passes). ``asked`` is set when the
    request arrives, ``answered`` just before the answer leaves."""

    def __init__(self, answer: Callable[[Request], Text], hold_s: float = 15.0):
        self.answer = answer
        self.hold_s = hold_s
        self.asked = threading.Event()
        self.release = threading.Event()
        self.answered = threading.Event()

    def __call__(self, req: Request) -> Text:
        self.asked.set()
        self.release.wait(self.hold_s)
        self.answered.set()
        return self.answer(req)


def pages_for(scope: str, wanted: dict[str, str]) -> Callable[[Request], Text]:
    """The wiki writer's answer: one page per (title -> a word of the source it cites), numbered as asked."""

    def answer(req: Request) -> Text:
        numbered = dict(re.findall(r"^- (S\d+) \(scope [^)]*\): (.*)$", req.last_user, re.M))
        pages = []
        for title, word in wanted.items():
            sn = next(n for n, text in numbered.items() if word in text)
            pages.append({"title": title, "scope": scope, "category": "notes",
                          "body": f"- {numbered[sn]} [1]", "citations": {"1": sn}})
        return Text(json.dumps(pages))

    return answer


async def _seed(pod: Any, *texts: str) -> tuple[str, list[str]]:
    scope = f"private/{pod.person.id}"
    ids = await pod.in_memory_thread(lambda: [pod.memory.add_source(t, scope=scope) for t in texts])
    return scope, ids


async def _asked(held: HeldAnswer) -> None:
    assert await asyncio.to_thread(held.asked.wait, 20), "the model was never asked"


TRIP, BIRTHDAY = "We fly to Lisbon on 4 May.", "Clara's birthday is on 3 June."


async def _ingest_held(pod: Any, fake_model: Any) -> tuple[str, list[str], HeldAnswer, asyncio.Task]:
    """Two sources in the inbox, and an ingest whose model (pages Trips and Family) holds its answer."""
    scope, ids = await _seed(pod, TRIP, BIRTHDAY)
    held = HeldAnswer(pages_for(scope, {"Trips": "Lisbon", "Family": "Clara"}))
    fake_model.script = held
    pod.set_role_model("ingest", "fake/fake-1")
    ingest = asyncio.create_task(pod.memory_ingest())
    await _asked(held)
    return scope, ids, held, ingest


async def test_search_answers_while_ingest_waits_on_a_slow_model(pod, fake_model) -> None:
    scope, _, held, ingest = await _ingest_held(pod, fake_model)
    try:
        hits = await pod.memory_search("Lisbon")
        typed = await pod.in_memory_thread(lambda: pod.memory.typeahead("Lis", scopes=[scope]))
        assert not held.answered.is_set(), "search waited for the ingest model to answer"
        assert any("Lisbon" in h.snippet for h in hits) and typed
    finally:
        held.release.set()
        out = await asyncio.wait_for(ingest, 30)
    assert len(out["written"]) == 2 and out["left_in_inbox"] == 0, out


async def test_a_source_deleted_while_the_model_writes_reaches_no_page(pod, fake_model) -> None:
    """The person deletes a note while the ingest model writes from it: the draft citing it was refused and the
    other written, though the model had read the deleted note and any draft could hold its words. None is written
    now; the other note waits in the inbox, and the next ingest's model never reads the deleted one."""
    scope, (trip, birthday), held, ingest = await _ingest_held(pod, fake_model)
    try:
        await pod.memory_delete_source(trip)  # the person deletes it while the model is still writing
        assert not held.answered.is_set(), "deleting waited for the ingest model to answer"
    finally:
        held.release.set()
        out = await asyncio.wait_for(ingest, 30)
    assert [r["title"] for r in out["rejected"]] == ["ingest"], out
    assert "deleted while it wrote" in out["rejected"][0]["why"] and out["written"] == []
    assert await pod.in_memory_thread(lambda: (pod.memory.list_pages(scope), pod.memory.inbox(100))) == (
        ([], []), [birthday])
    asked: list[str] = []

    def family(req: Request) -> Text:
        asked.append(req.last_user)
        return pages_for(scope, {"Family": "Clara"})(req)

    fake_model.script = family
    out = await asyncio.wait_for(pod.memory_ingest(), 30)
    pages, _ = await pod.in_memory_thread(lambda: pod.memory.list_pages(scope))
    assert [p.title for p in pages] == ["Family"] and list(pages[0].citations.values()) == [birthday]
    assert asked and not [a for a in asked if "Lisbon" in a]
    assert await pod.in_memory_thread(lambda: pod.memory.inbox(100)) == []


async def test_one_ingest_at_a_time_the_second_is_answered_at_once(pod, fake_model) -> None:
    """Ingest now pressed again while the first still writes: the second waited on the first (up to its model's
    timeout) saying nothing. Now it says at once that the ingest is already running; the first writes the pages."""
    from runtime_host.memory_jobs import INGEST_RUNNING

    scope, _ = await _seed(pod, TRIP)
    held = HeldAnswer(pages_for(scope, {"Trips": "Lisbon"}))
    fake_model.script = held
    pod.set_role_model("ingest", "fake/fake-1")
    first = asyncio.create_task(pod.memory_ingest())
    await _asked(held)
    try:
        two = await asyncio.wait_for(pod.memory_ingest(), 10)  # Ingest now pressed again while the first runs
    finally:
        held.release.set()
    one = await asyncio.wait_for(first, 30)
    assert two["message"] == INGEST_RUNNING and two["written"] == [] and two["consumed"] == 0, two
    assert len(one["written"]) == 1 and not one.get("message"), one
    assert len(fake_model.requests) == 1  # no second model call


async def test_search_answers_while_the_extraction_model_thinks(pod, fake_model, script) -> None:
    script([Text("Noted.")], repeat_last=True)
    assert (await asyncio.wait_for(pod.chat("helper", "My sister Clara's birthday is on 3 June."), 30)).ok
    await _seed(pod, TRIP)

    def keep_all(req: Request) -> Text:
        return Text(json.dumps([{"n": i + 1, "keep": True, "reason": "fact"}
                                for i, _ in enumerate(req.last_user.splitlines())]))

    held = HeldAnswer(keep_all)
    fake_model.script = held
    pod.set_role_model("extraction", "fake/fake-1")
    produce = asyncio.create_task(pod.memory_produce())
    try:
        await _asked(held)
        hits = await pod.memory_search("Lisbon")
        assert not held.answered.is_set(), "search waited for the extraction model to answer"
        assert any("Lisbon" in h.snippet for h in hits)
    finally:
        held.release.set()
        reports = await asyncio.wait_for(produce, 30)
    assert reports[0]["kept"] == 2, reports


MINUTES = ("The allotment committee met on Tuesday to discuss the new water butts, the compost rota and the shed "
           "roof, and agreed that the hedge on the north side needs cutting before the birds nest. ")


def minutes_folder(root: Path, files: int = 6) -> Path:
    """A watched folder of a committee's long minutes: ``files`` text files that are 14 long parts each."""
    folder = root / "journal"
    folder.mkdir()
    for n in range(files):
        (folder / f"minutes-{n}.txt").write_text("\n\n".join(f"Item {n}.{i}: " + MINUTES * 6 for i in range(40)))
    return folder


async def test_typeahead_and_search_answer_while_a_folder_import_is_embedded_with_minilm(pod, tmp_path) -> None:
    """With MiniLM chosen for search by meaning, each batch of a watched folder (up to 500 parts) was embedded on
    memory's one thread, under memory's lock: a typeahead or a search typed meanwhile waited for the whole batch
    (12.9 s for these 84 long parts on a busy 2-core machine). The parts are embedded off memory's thread now, and
    the search's question beside them; each part is stored with the vector of its own text."""
    from wiki_engine.embed import load_embedder
    from wiki_engine.index import ScopeIndex

    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: pod.memory.add_source("Dentist: Dr. Nwosu at Brightsmile, check-up on 3 March.",
                                                             scope=scope))
    pod.set_role_model("embedding", "local/minilm")
    await pod.memory_search("anything", mode="keyword")  # memory takes up MiniLM
    assert await asyncio.to_thread(pod.memory.wait_for_embedding, 60)
    folder = minutes_folder(tmp_path)
    pod.folders.add(folder)
    scan = asyncio.ensure_future(pod.folders.scan(str(folder)))
    typed: list[float] = []
    searched: list[float] = []
    await asyncio.sleep(1.0)  # the files are read; their parts are being embedded
    while not scan.done():
        t = time.monotonic()
        assert await pod.in_memory_thread(lambda: pod.memory.typeahead("Dent", scopes=pod.person_scopes()))
        typed.append(time.monotonic() - t)
        t = time.monotonic()
        hits = await pod.memory_search("when do I see the tooth doctor", k=3)
        searched.append(time.monotonic() - t)
        assert "Brightsmile" in hits[0].snippet
        await asyncio.sleep(0.2)
    rep = await asyncio.wait_for(scan, 300)
    assert rep.sources_added == 84 and typed, rep
    assert max(typed) < 1.5, f"a typeahead typed during the import waited {max(typed):.1f} s for its suggestions"
    assert max(searched) < 1.5, f"a search asked during the import waited {max(searched):.1f} s for its answer"
    con = sqlite3.connect(str(pod.home / "memory" / "index" / scope / "meta.db"))
    try:
        rows = con.execute("SELECT kind, title, body, ctx, vec FROM docs WHERE body LIKE 'Item %' ORDER BY rowid").fetchall()
    finally:
        con.close()
    assert len(rows) == 84
    minilm = load_embedder("minilm")
    for k, t, b, c, v in (rows[0], rows[14], rows[-1]):  # a file's first part, the next file's, the last
        want = minilm.embed([ScopeIndex._meaning_text(k, t, b, c)])[0]
        assert v is not None and np.allclose(np.frombuffer(v, dtype=np.float32), want, atol=1e-5), b[:40]
