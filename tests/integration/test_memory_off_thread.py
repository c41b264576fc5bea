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


async def on_minilm(pod: Any) -> str:
    """Alice's dentist noted, and MiniLM chosen for search by meaning (memory re-embedded with it): her scope."""
    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: pod.memory.add_source("Dentist: Dr. Nwosu at Brightsmile, check-up on 3 March.",
                                                             scope=scope))
    pod.set_role_model("embedding", "local/minilm")
    await pod.memory_search("anything", mode="keyword")  # memory takes up MiniLM
    assert await asyncio.to_thread(pod.memory.wait_for_embedding, 60)
    return scope


async def answering_while(pod: Any, job: Any, settle: float = 0.0) -> tuple[Any, list[float], list[float]]:
    """Alice types "Dent" and searches for her dentist again and again while ``job`` (a future) runs, after
    ``settle`` s: (its result, how long each typeahead waited, how long each search waited)."""
    typed: list[float] = []
    searched: list[float] = []
    await asyncio.sleep(settle)
    while not job.done():
        t = time.monotonic()
        assert await pod.in_memory_thread(lambda: pod.memory.typeahead("Dent", scopes=pod.person_scopes()))
        typed.append(time.monotonic() - t)
        t = time.monotonic()
        hits = await pod.memory_search("when do I see the tooth doctor", k=3)
        searched.append(time.monotonic() - t)
        assert "Brightsmile" in hits[0].snippet
        await asyncio.sleep(0.2)
    return await asyncio.wait_for(job, 300), typed, searched


def stored_with_minilm(pod: Any, scope: str, where: str, want: int) -> None:
    """The ``want`` documents of the scope's index matching ``where`` are stored, a few of them (the first, one in
    the middle, the last) each with the MiniLM vector of its own text."""
    from wiki_engine.embed import load_embedder
    from wiki_engine.index import ScopeIndex

    con = sqlite3.connect(str(pod.home / "memory" / "index" / scope / "meta.db"))
    try:
        rows = con.execute(f"SELECT kind, title, body, ctx, vec FROM docs WHERE {where} ORDER BY rowid").fetchall()
    finally:
        con.close()
    assert len(rows) == want
    minilm = load_embedder("minilm")
    for k, t, b, c, v in (rows[0], rows[len(rows) // 2], rows[-1]):
        wanted = minilm.embed([ScopeIndex._meaning_text(k, t, b, c)])[0]
        assert v is not None and np.allclose(np.frombuffer(v, dtype=np.float32), wanted, atol=1e-5), b[:40]


async def test_typeahead_and_search_answer_while_a_folder_import_is_embedded_with_minilm(pod, tmp_path) -> None:
    """With MiniLM chosen for search by meaning, each batch of a watched folder (up to 500 parts) was embedded on
    memory's one thread, under memory's lock: a typeahead or a search typed meanwhile waited for the whole batch
    (12.9 s for these 84 long parts on a busy 2-core machine). The parts are embedded off memory's thread now, and
    the search's question beside them; each part is stored with the vector of its own text."""
    scope = await on_minilm(pod)
    folder = minutes_folder(tmp_path)
    pod.folders.add(folder)
    # the files are read for a second; then their parts are being embedded
    rep, typed, searched = await answering_while(pod, asyncio.ensure_future(pod.folders.scan(str(folder))), 1.0)
    assert rep.sources_added == 84 and typed, rep
    assert max(typed) < 1.5, f"a typeahead typed during the import waited {max(typed):.1f} s for its suggestions"
    assert max(searched) < 1.5, f"a search asked during the import waited {max(searched):.1f} s for its answer"
    stored_with_minilm(pod, scope, "body LIKE 'Item %'", 84)


BOILER = "Zebulon the plumber comes on Tuesday at nine to service the gas boiler and bleed the radiators."


async def test_typeahead_and_search_answer_while_a_first_mail_sync_is_stored_with_minilm(pod, servers) -> None:
    """With MiniLM chosen, the 5-minute memory run stored a first mail sync's mail (up to 200 a step) embedding each
    on memory's one thread: a typeahead or a search typed meanwhile waited for the whole step (several seconds for
    these 84 long mails). The mails kept are embedded off memory's thread now, before memory is locked; each is
    stored with the vector of its own text, and found by meaning."""
    from tests.helpers.mailservers import make_mail
    from tests.integration.test_mail_pod import _plain_inbox

    scope = await on_minilm(pod)
    d, s = servers
    for n in range(84):
        d.deliver(make_mail(f"Minutes {n}", f"Item {n}: " + MINUTES * 6, message_id=f"<minutes-{n}@example.org>"))
    d.deliver(make_mail("Boiler service", BOILER, message_id="<boiler@example.org>"))
    acct = _plain_inbox(pod, d, s)
    await asyncio.wait_for(pod.mail.poll(acct), 120)
    reports, typed, searched = await answering_while(pod, asyncio.ensure_future(pod.memory_produce()))
    assert reports[0]["mail"] == 85 and typed, reports
    assert max(typed) < 1.5, f"a typeahead typed while the mail was stored waited {max(typed):.1f} s"
    assert max(searched) < 1.5, f"a search asked while the mail was stored waited {max(searched):.1f} s"
    stored_with_minilm(pod, scope, "body LIKE 'Item %'", 84)
    hits = await pod.memory_search("who fixes the heating", k=1, mode="meaning")
    assert hits and "Zebulon" in hits[0].snippet, hits


async def test_typeahead_and_search_answer_while_ingest_writes_pages_with_minilm(pod, fake_model) -> None:
    """With MiniLM chosen, ingest wrote its model's pages embedding each under memory's lock on memory's one thread
    (about a tenth of a second a page): a typeahead or a search typed meanwhile waited for all of them. The pages are
    embedded off memory's thread now, before memory is locked; each is stored with the vector of its own text, and
    found by meaning."""
    scope = await on_minilm(pod)
    await _seed(pod, "The allotment committee's minutes are kept in the shed.")
    pages = 60

    def writer(req: Request) -> Text:
        sn = re.search(r"^- (S\d+) \(scope [^)]*\): The allotment", req.last_user, re.M)
        assert sn, req.last_user[:400]
        out = [{"title": f"Minutes {n}", "scope": scope, "category": "allotment",
                "body": f"- Item {n}: {MINUTES * 6}[1]", "citations": {"1": sn.group(1)}} for n in range(pages)]
        out.append({"title": "Boiler", "scope": scope, "category": "home", "body": f"- {BOILER} [1]",
                    "citations": {"1": sn.group(1)}})
        return Text(json.dumps(out))

    fake_model.script = writer
    pod.set_role_model("ingest", "fake/fake-1")
    out, typed, searched = await answering_while(pod, asyncio.ensure_future(pod.memory_ingest()))
    assert len(out["written"]) == pages + 1 and typed, out
    assert max(typed) < 1.5, f"a typeahead typed while ingest wrote its pages waited {max(typed):.1f} s"
    assert max(searched) < 1.5, f"a search asked while ingest wrote its pages waited {max(searched):.1f} s"
    stored_with_minilm(pod, scope, "kind='page' AND title LIKE 'Minutes %'", pages)
    hits = await pod.memory_search("who fixes the heating", k=1, mode="meaning")
    assert hits and hits[0].title == "Boiler", hits
