"""The pipelines as steps (what a host uses to let the model think off memory's thread): memory may change
between the batch and the answer, and a failed model part releases the lease."""

from __future__ import annotations

import pytest

from wiki_engine import Memory, Page
from wiki_engine.lease import Lease
from wiki_engine.pipeline import Embed, IngestBatch, drive, ingest_steps, nightly_steps


def answered(steps, drafts: list[Page]) -> None:
    """The writer's drafts sent to the steps, then the pages' vectors they ask for (``Embed``), made here as a host
    makes them off memory's thread: the steps end (StopIteration)."""
    ask = steps.send(drafts)
    assert isinstance(ask, Embed) and [p.title for p in ask.pages] == [p.title for p in drafts]
    steps.send(ask.made())


def test_no_draft_is_written_when_a_source_the_writer_read_is_deleted_while_it_writes(mem: Memory) -> None:
    """Ingest showed the writer two notes; while it wrote, Alice deleted one. A draft citing the deleted note was
    refused, but its "Household" page put the deleted note's words in a sentence citing the other note, and was
    written: the zorblax fever on a page after the deletion said its words had left every page. None of the
    batch's drafts is written now; the other note waits in the inbox, and the next writer never reads the deleted one."""
    gone = mem.add_source("I was diagnosed with zorblax fever by Dr Haas.", scope="private/alice")
    bins = mem.add_source("The bins go out on Thursday night.", scope="private/alice")
    steps = ingest_steps(mem)
    batch = next(steps)
    assert {s.id for s in batch.sources} == {gone, bins}
    mem.delete_source(gone)  # while the model was writing
    with pytest.raises(StopIteration) as done:
        answered(steps, [Page("Health", "private/alice", "health", "- Zorblax fever, says Dr Haas [1]", {1: gone}),
                    Page("Household", "private/alice", "home",
                         "I have zorblax fever and the bins go out on Thursday night [1].", {1: bins})])
    report = done.value.value
    assert report.written == [] and report.consumed == [] and report.left_in_inbox == [bins]
    assert [t for t, _ in report.rejected] == ["ingest"] and "deleted while it wrote" in report.rejected[0][1]
    assert mem.list_pages("private/alice") == ([], []) and mem.inbox() == [bins]
    seen: list[str] = []

    def writer(batch: IngestBatch) -> list[Page]:
        seen.extend(s.text for s in batch.sources)
        return [Page("Household", "private/alice", "home", "The bins go out on Thursday night [1].", {1: bins})]

    assert drive(ingest_steps(mem), writer).written == ["page:private/alice/household"]
    assert seen == ["The bins go out on Thursday night."] and mem.inbox() == []


def _alices_travel_page(mem: Memory) -> tuple[str, str, str]:
    """Alice's Travel page citing three notes of hers (passport, aisle seats, Gatwick): their ids."""
    a = mem.add_source("Alice's passport expires in November.", scope="private/alice")
    b = mem.add_source("Alice prefers aisle seats on flights.", scope="private/alice")
    c = mem.add_source("Alice flies from Gatwick.", scope="private/alice")
    mem.write_page(Page("Travel", "private/alice", "travel", "Passport: November [1]. Aisle seats [2]. Gatwick [3].",
                        {1: a, 2: b, 3: c}), author="agent:writer")
    return a, b, c


def test_no_rewrite_is_written_when_a_source_its_page_cited_is_deleted_while_the_writer_rewrites(mem: Memory) -> None:
    """Nightly showed the writer a page to rewrite, its claims with their notes; while it wrote, Alice deleted the
    aisle-seat note. The rewrite said "aisle seats" citing the Gatwick note and was written; now the page stays as
    the deletion left it, to be rewritten next night."""
    a, b, c = _alices_travel_page(mem)
    mem.delete_source(a)
    steps = nightly_steps(mem, resynthesize=True)
    assert [p.body for p in next(steps).stale_pages] == ["Aisle seats [2]. Gatwick [3]."]
    mem.delete_source(b)  # while the model was rewriting the page
    with pytest.raises(StopIteration) as done:
        answered(steps, [Page("Travel", "private/alice", "travel", "Alice takes an aisle seat from Gatwick [1].", {1: c})])
    report = done.value.value
    assert report.resynthesized == [] and [(t, sc) for t, _, sc in report.rejected] == [("re-synthesis", "private/alice")]
    assert "deleted while it wrote" in report.rejected[0][1]
    page = mem.read_page("private/alice", "travel")
    assert page is not None and page.body == "Gatwick [3]." and mem.stale_pages() == ["page:private/alice/travel"]


def test_a_stale_page_rewritten_from_a_source_deleted_meanwhile_stays_stale(mem: Memory) -> None:
    a, b, c = _alices_travel_page(mem)
    mem.delete_source(a)
    steps = nightly_steps(mem, resynthesize=True)
    batch = next(steps)
    assert [p.title for p in batch.stale_pages] == ["Travel"]
    mem.delete_source(b)  # while the model was rewriting the page
    with pytest.raises(StopIteration) as done:
        answered(steps, [Page("Travel", "private/alice", "travel", "Aisle seats [1]. Gatwick [2].", {1: b, 2: c})])
    assert done.value.value.resynthesized == []
    page = mem.read_page("private/alice", "travel")
    assert page is not None and page.citations == {3: c}  # the rewrite did not bring b back
    assert mem.stale_pages() == ["page:private/alice/travel"]  # the next nightly tries again


def test_an_ingests_pages_share_one_index_commit_and_each_page_fails_alone(mem: Memory) -> None:
    """An ingest wrote its writer's pages one by one (so that one bad page fails alone), and each committed the
    full-text index: 20-60 ms a commit under memory's lock on memory's thread, 1.4-3.6 s for 61 pages while the
    window's typeahead and search waited. They share one commit now; a page citing no such source is still refused
    alone, and every page written is found."""
    scope = "private/alice"
    sid = mem.add_source("The allotment committee's minutes are kept in the shed.", scope=scope)
    idx = mem.index(scope)
    commits: list[int] = []
    commit = idx.commit
    idx.commit = lambda *a, **kw: commits.append(1) or commit(*a, **kw)  # type: ignore[method-assign]
    drafts = [Page(f"Minutes {n}", scope, "allotment", f"- Item {n} of the minutes is kept in the shed [1]", {1: sid})
              for n in range(30)]
    drafts.insert(7, Page("Broken", scope, "allotment", "- A note that is not there [1]", {1: "no-such-note"}))
    report = drive(ingest_steps(mem), lambda batch: drafts)
    assert len(report.written) == 30 and [t for t, _ in report.rejected] == ["Broken"], report
    assert len(commits) == 1, f"{len(commits)} index commits for one ingest's pages"
    hits = mem.search("minutes item 17", scopes=[scope], k=3, mode="keyword", kinds=("page",))
    assert hits and hits[0].id == f"page:{scope}/minutes-17", hits


def test_a_failing_model_part_releases_the_lease(mem: Memory) -> None:
    mem.add_source("We fly to Lisbon on 4 May.", scope="private/alice")

    def broken(batch: object) -> list[Page]:
        raise RuntimeError("the model went away")

    with pytest.raises(RuntimeError, match="went away"):
        drive(ingest_steps(mem), broken)
    with Lease(mem.catalog, "ingest"):  # free again
        pass
    assert len(mem.inbox()) == 1


def test_while_one_scopes_model_thinks_another_scope_is_written_but_never_the_same_scope_twice(mem: Memory) -> None:
    """Ingest held the whole wiki's lease while a model thought, so Bob's pages (another process's ingest) waited on
    Alice's hung model. Now a scope's ingest holds its own scope while its model thinks: Bob's scope is written
    meanwhile, a second ingest of Alice's scope or a nightly pass is turned away, and Alice's drafts still land."""
    from wiki_engine.lease import LeaseBusy

    a = mem.add_source("Alice's dentist is Dr Alvarez.", scope="private/alice")
    b = mem.add_source("Bob's allotment is plot 42.", scope="private/bob")
    alices = ingest_steps(mem, scopes=lambda s: s == "private/alice", claim="private/alice")
    assert [s.id for s in next(alices).sources] == [a]  # her model thinks...
    with pytest.raises(LeaseBusy):
        next(ingest_steps(mem, scopes=lambda s: s == "private/alice", claim="private/alice"))
    with pytest.raises(LeaseBusy):
        next(nightly_steps(mem))
    bobs = drive(ingest_steps(mem, scopes=lambda s: s == "private/bob", claim="private/bob"),
                 lambda batch: [Page("Allotment", "private/bob", "things", "- Plot 42 [1]", {1: b})])
    assert bobs.written == ["page:private/bob/allotment"]
    with pytest.raises(StopIteration) as done:
        answered(alices, [Page("Dentist", "private/alice", "health", "- Dr Alvarez [1]", {1: a})])
    assert done.value.value.written == ["page:private/alice/dentist"] and mem.inbox() == []
    with Lease(mem.catalog, "ingest", excludes=("ingest:%",)):  # all free again
        pass


def test_a_scopes_ingest_waits_off_the_thread_for_anothers_moment_of_writing_and_skips_a_nightly_at_once(
        mem: Memory) -> None:
    """A scope's ingest waited for the whole wiki's lease by sleeping (15 s) on the thread that ran it: memory's one
    thread, so search froze. Now, while another scope's ingest writes (a moment), its steps yield Wait for the host
    to wait elsewhere and then go on; while a nightly pass holds the wiki, they skip at once."""
    from wiki_engine.lease import LeaseBusy
    from wiki_engine.pipeline import Wait

    a = mem.add_source("Alice's dentist is Dr Alvarez.", scope="private/alice")
    writing = Lease(mem.catalog, "ingest", moment=True)  # Bob's ingest, writing his pages
    writing.acquire()
    alices = ingest_steps(mem, scopes=lambda s: s == "private/alice", claim="private/alice")
    assert isinstance(next(alices), Wait) and isinstance(alices.send(None), Wait)
    writing.release()
    assert [s.id for s in alices.send(None).sources] == [a]  # read, now the wiki is free
    alices.close()
    with Lease(mem.catalog, "ingest"):  # a nightly pass (another process), its model rewriting a page
        with pytest.raises(LeaseBusy):
            next(ingest_steps(mem, scopes=lambda s: s == "private/alice", claim="private/alice"))
    assert len(mem.inbox()) == 1


def test_reading_a_backlog_batch_holds_memory_a_moment_and_shows_the_pages_of_its_first_notes(tmp_path) -> None:
    """A backlog of 200 mail-sized notes (the Pod's batch takes up to 200: a watched-folder import, a week's mail)
    and 5,000 pages: reading the batch ran a keyword search of each note to choose the pages the writer is shown,
    under memory's lock and the whole wiki's writer lease: ~3 s (~7 s at 20,000 pages), while the window's search
    and typeahead and other people's ingests waited. A note is searched only when its turn for one of the
    PAGES_SHOWN places comes; the writer is still shown each of the first notes' own page."""
    import random

    from wiki_engine import open_memory
    from wiki_engine.pipeline import PAGES_SHOWN

    scope = "private/alice"
    rnd = random.Random(1)
    vocab = [f"w{n}" for n in range(20000)]
    names = ["Zoe", "Rosa", "Tom", "school", "garden", "bank", "doctor", "car", "holiday", "boiler"]
    mem = open_memory(tmp_path / "memory", embedder=None)
    try:
        seed = mem.add_source("seed note", scope=scope)
        pages = [Page(f"{rnd.choice(names)} {vocab[n]} {vocab[n + 1]}", scope, "notes",
                      "\n".join(f"- {' '.join(rnd.choices(vocab, k=12))} [1]" for _ in range(5)), {1: seed})
                 for n in range(0, 10000, 2)]
        mem.write_pages(pages, author="agent:wiki-writer")
        with mem.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM inbox")
        quotes: dict[str, Page] = {}  # each note quotes a line of one page, then goes on as a long mail does
        for page in rnd.sample(pages, 200):
            line = page.body.split("\n")[0].strip("- [1]")
            more = " ".join(rnd.choices(vocab[10000:] + names * 50, k=330))  # words of no page's title
            quotes[mem.add_source(f"{line} {more}"[:2000], scope=scope)] = page
        searched: list[str] = []
        search = mem.search
        mem.search = lambda query, **kw: searched.append(query) or search(query, **kw)  # type: ignore[method-assign]
        steps = ingest_steps(mem, scopes=lambda s: s == scope, claim=scope)
        batch = next(steps)  # read under memory's lock and the whole wiki's lease
        steps.close()
        assert isinstance(batch, IngestBatch) and len(batch.sources) == 200
        shown = {p.key for p in batch.existing_pages[scope][:PAGES_SHOWN]}
        assert shown == {quotes[s.id].key for s in batch.sources[:PAGES_SHOWN]}, "not shown the first notes' pages"
        assert len(searched) <= PAGES_SHOWN, f"{len(searched)} searches for {PAGES_SHOWN} places"
        # how long choosing takes is bench/writer_pages.py's figure (a timed test fails on a busy machine)
    finally:
        mem.close()
