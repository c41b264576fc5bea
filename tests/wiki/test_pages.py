"""Pages: front matter, corrupt files, verified pages getting proposals, citations checked and filtered."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import stat
import time

import pytest

from tests.integration.test_storage import read_only
from wiki_engine import CitationError, Memory, Page, PageFormatError, PageWriteError, Viewer, parse_page
from wiki_engine.pipeline import IngestBatch, run_ingest, run_nightly


def _page(mem: Memory, scope: str, title: str, body: str, cites: dict[int, str], **kw: object) -> Page:
    return Page(title=title, scope=scope, category=str(kw.get("category", "home")), body=body, citations=cites)


def test_page_round_trip_with_links_and_citations(mem: Memory) -> None:
    sid = mem.add_source("The stopcock is under the kitchen sink.", scope="public")
    res = mem.write_page(_page(mem, "public", "Water", "Shut the water at the stopcock [1]. See [[Plumbing]].", {1: sid}), author="agent:writer")
    assert res.status == "written" and res.key == "page:public/water"
    text = (mem.root / "wiki" / "public" / "water.md").read_text()
    assert text.startswith("---\ntitle: Water\nscope: public\ncategory: home\nupdated: ")
    assert "verified: false" in text and f"[1]: {sid}" in text
    page = parse_page(text)
    assert page.links == ["Plumbing"] and page.citations == {1: sid} and page.cited_numbers() == [1]
    hits = mem.search("stopcock", scopes=["public"], mode="keyword", kinds=("page",))
    assert [h.id for h in hits] == ["page:public/water"]


def test_corrupt_page_files_are_skipped_with_a_clear_error(mem: Memory) -> None:
    sid = mem.add_source("Bins go out every second Tuesday.", scope="public")
    mem.write_page(_page(mem, "public", "Bins", "Every second Tuesday [1].", {1: sid}), author="agent:writer")
    folder = mem.root / "wiki" / "public"
    (folder / "broken.md").write_text("---\ntitle: \nscope: public\n---\nno title here\n")
    (folder / "nofm.md").write_text("just some text\n")
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00garbage")
    pages, errors = mem.list_pages("public")
    assert [p.title for p in pages] == ["Bins"]
    assert len(errors) == 3
    assert any("broken.md" in e and "title" in e and "category" in e for e in errors)
    assert any("nofm.md" in e and "no front matter" in e for e in errors)
    assert any("binary.md" in e and "UTF-8" in e for e in errors)
    with pytest.raises(PageFormatError, match="broken.md"):
        mem.read_page("public", "broken")
    assert mem.reindex_pages("public") == errors  # reindexing keeps going past corrupt files


def test_verified_page_gets_a_proposal_never_an_overwrite(mem: Memory) -> None:
    s1 = mem.add_source("Bob is allergic to peanuts.", scope="private/alice")
    s2 = mem.add_source("Bob says he grew out of the peanut allergy.", scope="private/alice")
    mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob is allergic to peanuts [1].", {1: s1}), author="person:alice")
    mem.set_verified("private/alice", "Bob's allergies")
    path = mem.root / "wiki" / "private" / "alice" / "bob-s-allergies.md"
    before = path.read_text()
    res = mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob is no longer allergic [1].", {1: s2}), author="agent:writer")
    assert res.status == "proposed" and res.proposal_id is not None
    assert path.read_text() == before
    assert "-Bob is allergic to peanuts [1]." in res.diff and "+Bob is no longer allergic [1]." in res.diff
    assert res.diff.startswith("--- a/private/alice/bob-s-allergies.md")
    [prop] = mem.proposals()
    mem.reject_proposal(prop.id)
    assert path.read_text() == before and mem.proposals() == []
    # The change turned down is not asked again while the page is as it was.
    same = mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob is no longer allergic [1].", {1: s2}), author="agent:writer")
    assert same.status == "rejected" and same.proposal_id == prop.id and mem.proposals() == []
    # Another change, approved by the person, lands and the page stays verified.
    res2 = mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob outgrew the allergy [1].", {1: s2}), author="agent:writer")
    assert res2.proposal_id is not None
    mem.approve_proposal(res2.proposal_id)
    page = mem.read_page("private/alice", "bob-s-allergies")
    assert page is not None and page.verified and "outgrew" in page.body
    with pytest.raises(KeyError):
        mem.approve_proposal(res2.proposal_id)


def test_the_same_change_proposed_again_is_asked_once(mem: Memory) -> None:
    """An ingest that ran again after a crash (its inbox not yet emptied) proposed the very same change a second
    time: the person had two identical proposals to decide. A different change is new; a change the person turned
    down is asked again only once the page changed."""
    s1 = mem.add_source("Bob is allergic to peanuts.", scope="private/alice")
    s2 = mem.add_source("Bob says he grew out of the peanut allergy.", scope="private/alice")
    mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob is allergic to peanuts [1].", {1: s1}), author="person:alice")
    mem.set_verified("private/alice", "Bob's allergies")
    change = _page(mem, "private/alice", "Bob's allergies", "Bob is no longer allergic [1].", {1: s2})
    first = mem.write_page(change, author="agent:writer")
    time.sleep(1.1)  # a page file's time of writing is to the second: the second proposal's differs
    again = mem.write_page(change, author="agent:writer")
    assert again.status == "proposed" and again.proposal_id == first.proposal_id
    assert [p.id for p in mem.proposals()] == [first.proposal_id]
    other = mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob outgrew it [1].", {1: s2}), author="agent:writer")
    assert other.proposal_id != first.proposal_id and len(mem.proposals()) == 2
    mem.reject_proposal(first.proposal_id)
    turned_down = mem.write_page(change, author="agent:writer")  # asked and answered: not asked again
    assert turned_down.status == "rejected" and [p.id for p in mem.proposals()] == [other.proposal_id]
    mem.write_page(_page(mem, "private/alice", "Bob's allergies", "Bob is allergic to peanuts [1].\n\nUpdated.", {1: s1}),
                   author="person:alice")  # the person changes the page: the same change, on it, is new
    assert mem.write_page(change, author="agent:writer").proposal_id not in (first.proposal_id, other.proposal_id)


def test_a_page_file_that_no_longer_parses_is_never_overwritten_by_an_agent(mem: Memory) -> None:
    s1 = mem.add_source("Clara's birthday is on 12 June.", scope="private/alice")
    mem.write_page(_page(mem, "private/alice", "Clara", "Birthday 12 June [1].", {1: s1}), author="agent:writer")
    path = mem.root / "wiki" / "private" / "alice" / "clara.md"
    # The person corrects the date by hand and mistypes the front matter on the way.
    hand = path.read_text().replace("12 June [1]", "13 June (I checked her passport) [1]").replace("verified: false", "verified yes")
    path.write_text(hand)
    with pytest.raises(PageFormatError):
        mem.read_page("private/alice", "clara")
    res = mem.write_page(_page(mem, "private/alice", "Clara", "Birthday 12 June [1].", {1: s1}), author="agent:writer")
    assert res.status == "proposed" and "passport" in res.diff
    assert path.read_text() == hand  # the correction is still there, for the person to mend
    [prop] = mem.proposals()
    assert prop.slug == "clara"
    # The person writes directly, over the broken file: that is their own choice.
    assert mem.write_page(_page(mem, "private/alice", "Clara", "Birthday 13 June [1].", {1: s1}), author="person:alice").status == "written"
    page = mem.read_page("private/alice", "clara")
    assert page is not None and "13 June" in page.body


def test_deleting_a_source_withdraws_the_proposals_that_cite_it(mem: Memory) -> None:
    football = mem.add_source("Leo likes football.", scope="private/alice")
    piano = mem.add_source("Leo has piano lessons with Mrs Varga on Wednesdays.", scope="private/alice")
    mem.write_page(_page(mem, "private/alice", "Leo", "- Likes football [1]", {1: football}), author="person:alice")
    mem.set_verified("private/alice", "Leo")
    piano_prop = mem.write_page(_page(mem, "private/alice", "Leo", "- Likes football [1]\n- Piano on Wednesdays [2]",
                                      {1: football, 2: piano}), author="agent:writer")
    other = mem.write_page(_page(mem, "private/alice", "Leo", "- Loves football [1]", {1: football}), author="agent:writer")
    mem.delete_source(piano)
    assert [p.id for p in mem.proposals()] == [other.proposal_id]  # the one that never cited it stays
    assert [p.id for p in mem.proposals("withdrawn")] == [piano_prop.proposal_id]
    with pytest.raises(KeyError):
        mem.approve_proposal(piano_prop.proposal_id)
    page = mem.read_page("private/alice", "Leo")
    assert page is not None and "Piano" not in page.body and page.verified


def test_deleting_a_source_leaves_none_of_its_words_in_proposals_open_or_decided(mem: Memory) -> None:
    """Proposals keep the page text they proposed and the text they were made against. A withdrawn or decided one
    used to keep both in memory.db after the source they quoted was deleted, so "delete" left its words on disk."""
    import sqlite3

    football = mem.add_source("Leo likes football.", scope="private/alice")
    piano = mem.add_source("Leo has piano lessons with Mrs Varga on Wednesdays.", scope="private/alice")
    mem.write_page(_page(mem, "private/alice", "Leo", "- Likes football [1]", {1: football}), author="person:alice")
    mem.set_verified("private/alice", "Leo")
    rejected = mem.write_page(_page(mem, "private/alice", "Leo", "- Likes football [1]\n- Mrs Varga on Wednesdays [2]",
                                    {1: football, 2: piano}), author="agent:writer")
    mem.reject_proposal(rejected.proposal_id)
    approved = mem.write_page(_page(mem, "private/alice", "Leo", "- Likes football [1]\n- Piano with Mrs Varga [2]",
                                    {1: football, 2: piano}), author="agent:writer")
    mem.approve_proposal(approved.proposal_id)
    later = mem.write_page(_page(mem, "private/alice", "Leo", "- Loves football [1]", {1: football}), author="agent:writer")
    mem.delete_source(piano)
    with sqlite3.connect(mem.root / "memory.db") as db:
        texts = db.execute("SELECT base_text || proposed_text || diff FROM proposals").fetchall()
    assert texts and not [t for (t,) in texts if "Varga" in t]
    # made against the page that cited it: withdrawn (that page is gone, so it could not be approved anyway)
    assert mem.proposals() == [] and [p.id for p in mem.proposals("withdrawn")] == [later.proposal_id]
    assert [p.id for p in mem.proposals("rejected")] == [rejected.proposal_id]  # its decision is still on record
    page = mem.read_page("private/alice", "Leo")
    assert page is not None and page.body == "- Likes football [1]" and page.verified


def test_deleting_a_source_never_withdraws_a_proposal_whose_citations_only_look_alike(mem: Memory) -> None:
    # conversation summaries are stored as summary-<conversation>-<messages>: -30 is the start of -300
    early = mem.add_source("Leo started piano lessons.", scope="private/alice", source_id="summary-c0ffee-30")
    late = mem.add_source("Leo plays football on Saturdays.", scope="private/alice", source_id="summary-c0ffee-300")
    mem.write_page(_page(mem, "private/alice", "Piano", "- Leo started [1]", {1: early}), author="person:alice")
    mem.write_page(_page(mem, "private/alice", "Leo", "- Football [1]", {1: late}), author="person:alice")
    mem.set_verified("private/alice", "Leo")
    prop = mem.write_page(_page(mem, "private/alice", "Leo", "- Football on Saturdays [1]", {1: late}),
                          author="agent:writer")
    mem.delete_source(early)
    assert [p.id for p in mem.proposals()] == [prop.proposal_id]
    assert "Saturdays" in mem.approve_proposal(prop.proposal_id).body


def test_stale_proposal_cannot_overwrite_a_later_human_edit(mem: Memory) -> None:
    s1 = mem.add_source("Wifi is Hearthnet.", scope="public")
    mem.write_page(_page(mem, "public", "Wifi", "Network Hearthnet [1].", {1: s1}), author="person:alice")
    mem.set_verified("public", "Wifi")
    res = mem.write_page(_page(mem, "public", "Wifi", "Network is HearthNet5G [1].", {1: s1}), author="agent:writer")
    mem.write_page(_page(mem, "public", "Wifi", "Network Hearthnet, 2.4 GHz only [1].", {1: s1}), author="person:alice")
    assert res.proposal_id is not None
    with pytest.raises(ValueError, match="changed after proposal"):
        mem.approve_proposal(res.proposal_id)
    page = mem.read_page("public", "Wifi")
    assert page is not None and "2.4 GHz" in page.body and page.verified


def test_citations_must_exist_and_fit_the_page_scope(mem: Memory) -> None:
    private = mem.add_source("Alice takes levothyroxine.", scope="private/alice")
    with pytest.raises(CitationError, match="readers of this page could not see it"):
        mem.write_page(_page(mem, "public", "Health", "Someone takes levothyroxine [1].", {1: private}), author="agent:writer")
    with pytest.raises(CitationError, match="not a stored source"):
        mem.write_page(_page(mem, "public", "Health", "Claim [1].", {1: "f" * 64}), author="agent:writer")
    with pytest.raises(CitationError, match=r"\[2\]"):
        mem.write_page(_page(mem, "private/alice", "Health", "Claim [1] and [2].", {1: private}), author="agent:writer")
    assert not (mem.root / "wiki" / "public" / "health.md").exists()


def test_citations_are_shown_only_to_viewers_who_may_see_the_source(mem: Memory) -> None:
    pub = mem.add_source("The car MOT is on the 20th.", scope="public")
    bob = mem.add_source("Bob booked the MOT himself and paid 54 pounds.", scope="private/bob")
    # A person edits the public page by hand and cites Bob's private note.
    folder = mem.root / "wiki" / "public"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "car.md").write_text(
        "---\ntitle: Car\nscope: public\ncategory: car\nupdated: 2026-01-01T00:00:00Z\nverified: false\n---\n\n"
        f"MOT on the 20th [1], paid by Bob [2].\n\n## Sources\n\n[1]: {pub}\n[2]: {bob}\n"
    )
    as_alice = mem.view_page("public", "car", Viewer("alice"))
    as_bob = mem.view_page("public", "car", Viewer("bob"))
    assert as_alice is not None and as_bob is not None
    assert as_alice.citations == {1: pub} and "[2]" not in as_alice.body
    assert as_bob.citations == {1: pub, 2: bob} and "[2]" in as_bob.body
    assert mem.view_page("private/bob", "anything", Viewer("alice")) is None


def test_pages_titled_in_other_scripts_keep_apart(mem: Memory) -> None:
    """Two pages titled "Мама" and "Папа" used to share the file name "page", the second overwriting the first;
    a Latin title keeps its accented letters in its file name ("Café Notes" was caf-notes.md)."""
    a = mem.add_source("Мама работает в Мадриде.", scope="private/alice")
    b = mem.add_source("Папа работает в Берлине.", scope="private/alice")
    for title, body, sid in (("Мама", "Мама работает в Мадриде [1].", a), ("Папа", "Папа работает в Берлине [1].", b),
                             ("東京の旅行", "旅行 [1].", a), ("Café Notes", "Notes [1].", b)):
        assert mem.write_page(_page(mem, "private/alice", title, body, {1: sid}), author="agent:writer").status == "written"
    pages, bad = mem.list_pages("private/alice")
    assert bad == [] and sorted(p.title for p in pages) == sorted(["Мама", "Папа", "東京の旅行", "Café Notes"])
    assert mem.read_page("private/alice", "Мама").body == "Мама работает в Мадриде [1]."
    assert (mem.root / "wiki" / "private" / "alice" / "café-notes.md").exists()


def test_pages_whose_titles_make_the_same_file_name_keep_apart(mem: Memory) -> None:
    """"C#" and "C++" are both c.md: the second page written replaced the first, whose fact was then on no page.
    The second is titled "C++ 2" and gets a file of its own; the same title in other case or quotes is the same page;
    Bob's page of that title is his own."""
    sharp = mem.add_source("I started a C# course at work in May.", scope="private/alice")
    plus = mem.add_source("My C++ exam is on 12 June.", scope="private/alice")
    bobs = mem.add_source("Bob reads about C++ templates.", scope="private/bob")
    assert mem.write_page(_page(mem, "private/alice", "C#", "A C# course since May [1].", {1: sharp}),
                          author="agent:writer").key == "page:private/alice/c"
    assert mem.write_page(_page(mem, "private/alice", "C++", "The exam is on 12 June [1].", {1: plus}),
                          author="agent:writer").key == "page:private/alice/c-2"
    assert mem.write_page(_page(mem, "private/bob", "C++", "Templates [1].", {1: bobs}),
                          author="agent:writer").key == "page:private/bob/c"
    pages, _ = mem.list_pages("private/alice")
    assert {p.title: p.citations[1] for p in pages} == {"C#": sharp, "C++ 2": plus}
    # the writer extending either page later finds it again, and updates it in place
    assert mem.write_page(_page(mem, "private/alice", "c#", "A C# course since May [1]. Week two [1].", {1: sharp}),
                          author="agent:writer").key == "page:private/alice/c"
    assert mem.write_page(_page(mem, "private/alice", "C++", "The exam is on 12 June, room 4 [1].", {1: plus}),
                          author="agent:writer").key == "page:private/alice/c-2"
    pages, _ = mem.list_pages("private/alice")
    assert sorted(p.body for p in pages) == ["A C# course since May [1]. Week two [1].",
                                             "The exam is on 12 June, room 4 [1]."]
    assert [h.id for h in mem.search("exam", scopes=["private/alice"], mode="keyword", kinds=("page",))] == [
        "page:private/alice/c-2"]


def test_deleting_a_source_leaves_every_other_cited_line_its_heading_and_code(mem: Memory) -> None:
    """Deleting one source used to take too much: a heading over cited links, a heading that cites its own source,
    a "# comment" inside a code block (taken for a heading over nothing), and a page whose other lines are cited
    links (deleted whole as "saying nothing")."""
    a, b, c = (mem.add_source(t, scope="public") for t in
               ("Ana is my daughter.", "Bob was diagnosed with diabetes.", "Rui is my son; penicillin allergy."))
    mem.write_page(Page("Family", "public", "people", "## Children\n- [[Ana]] [1]\n- [[Rui]] [3]\n\n"
                        "### Allergic to penicillin [3]\n\n## Bob\nBob was diagnosed with diabetes [2].",
                        {1: a, 2: b, 3: c}), author="agent:writer")
    mem.write_page(Page("Router", "public", "howto", "Reboot it like this [1]:\n\n```\nssh admin@router\n"
                        "# then wait two minutes\n```\n\n## Bob's notes\nBob's code is 4411 [2].", {1: a, 2: b}),
                   author="agent:writer")
    mem.delete_source(b)
    family = mem.read_page("public", "Family")
    assert family is not None
    assert family.body == "## Children\n- [[Ana]] [1]\n- [[Rui]] [3]\n\n### Allergic to penicillin [3]"
    router = mem.read_page("public", "Router")
    assert router is not None and "# then wait two minutes" in router.body and "Bob" not in router.body


def test_a_citation_inside_a_sentence_takes_its_whole_sentence_when_its_source_is_deleted(mem: Memory) -> None:
    """Writers put [n] after the name they credit: "Dr Haas [1] diagnosed me with zorblax fever." Deleting note 1
    left "diagnosed me with zorblax fever." on the page, now resting on the bins note: a citation and a space were
    read as a sentence's end. A citation after a stop ("fever. [1]", "热。[1]") belongs to the sentence before it:
    it used to take the next sentence, the kept note's, with it."""
    gone, kept = (mem.add_source(t, scope="public") for t in (
        "Dr Haas diagnosed me with zorblax fever; it lasts a week. 哈斯医生说我得了佐布拉克斯热。",
        "The bins go out on Thursday night, early, and the green bin too. 垃圾周四晚上拿出去。"))
    mem.write_page(Page("Household", "public", "home",
                        "Dr Haas [1] diagnosed me with zorblax fever. The bins go out on Thursday night [2].\n\n"
                        "The bins are collected early [2]. Dr Haas [1] said zorblax fever lasts a week.\n\n"
                        "I have zorblax fever. [1] The green bin goes out too. [2]\n\n"
                        "哈斯医生[1]说我得了佐布拉克斯热。垃圾周四晚上拿出去 [2]。\n\n"
                        "我得了佐布拉克斯热。[1]垃圾周四晚上拿出去。[2]", {1: gone, 2: kept}), author="agent:writer")
    mem.delete_source(gone)
    page = mem.read_page("public", "household")
    assert page is not None and page.body == (
        "The bins go out on Thursday night [2].\n\nThe bins are collected early [2].\n\n"
        "The green bin goes out too. [2]\n\n垃圾周四晚上拿出去 [2]。\n\n垃圾周四晚上拿出去。[2]"), page.body


def test_claims_on_lines_of_one_paragraph_without_stops_go_one_by_one(mem: Memory) -> None:
    """A paragraph of claims one per line with no full stops ("Tea with Ana [1]" then "Coffee with Sam [2]"): once a
    citation inside a sentence ended none, deleting note 1 took the coffee line, the kept note's claim, with it.
    Citations ending a line end its claim; a sentence wrapped over two lines still goes whole."""
    tea, coffee = (mem.add_source(t, scope="public") for t in ("Tea with Ana on Sundays.", "Coffee with Sam on Mondays."))
    mem.write_page(Page("Habits", "public", "home", "Tea with Ana on Sundays [1]\nCoffee with Sam on Mondays [2]\n\n"
                        "Ana [1] pours the tea\nfor everyone. Sam brings the coffee [2].", {1: tea, 2: coffee}),
                   author="agent:writer")
    mem.delete_source(tea)
    page = mem.read_page("public", "habits")
    assert page is not None and page.body == "Coffee with Sam on Mondays [2]\n\nSam brings the coffee [2].", page.body


def test_deleting_a_source_takes_its_claim_out_of_a_page_file_that_no_longer_parses(mem: Memory) -> None:
    """A hand edit broke a page's front matter; deleting a source then left its claim in the file (the page was
    only taken out of the index), though deleting promises its words leave every page. The rest of the file, the
    person's to mend, stays as they wrote it."""
    keep, gone = (mem.add_source(t, scope="public") for t in ("The boiler is serviced in May.",
                                                              "Ines was diagnosed with zorblax syndrome."))
    mem.write_page(Page("House", "public", "home", "- The boiler is serviced in May [1].\n- Ines has zorblax "
                        "syndrome [2].", {1: keep, 2: gone}), author="agent:writer")
    path = mem.root / "wiki" / "public" / "house.md"
    broken = path.read_text().replace("category: home", "category home")  # the person's typo
    path.write_text(broken)
    with pytest.raises(PageFormatError):
        mem.read_page("public", "house")
    mem.delete_source(gone)
    text = path.read_text()
    assert "zorblax" not in text and gone not in text, text
    assert text == broken.replace("- Ines has zorblax syndrome [2].\n", "").replace(f"[2]: {gone}\n", ""), text
    path.write_bytes(b"\xff\xfe not text")  # a file that is not text at all is left as it is
    mem.delete_source(keep)
    assert path.read_bytes() == b"\xff\xfe not text" and mem.source_scope(keep) is None


def test_a_page_file_saved_in_latin1_or_without_its_closing_line_still_loses_a_deleted_sources_claim(mem: Memory) -> None:
    """A page saved by a Latin-1 editor ("Caf\\xe9") kept the deleted source's claim and id (read as "not text");
    one whose front matter lost its closing '---' was rewritten a line down, so mending it did not make it read."""
    keep, gone = (mem.add_source(t, scope="public") for t in ("The dentist is Dr Okafor.",
                                                              "The check-up is in March at the Lindenhof clinic."))
    body = "- The dentist is Dr Okafor [1].\n- Check-up in March at the Lindenhof clinic [2]."
    for slug in ("latin", "unclosed"):
        mem.write_page(Page(slug.title(), "public", "health", body, {1: keep, 2: gone}), author="agent:writer")
    latin, unclosed = (mem.root / "wiki" / "public" / f"{s}.md" for s in ("latin", "unclosed"))
    latin.write_bytes(latin.read_bytes().replace(b"Okafor [1].", b"Okafor [1]. Near the Caf\xe9 Central."))
    text = unclosed.read_text()
    unclosed.write_text(text.replace("verified: false\n---\n", "verified: false\n", 1))
    mem.delete_source(gone)
    assert b"Lindenhof" not in latin.read_bytes() and gone.encode() not in latin.read_bytes()
    assert b"Okafor [1]. Near the Caf\xe9 Central." in latin.read_bytes()  # the rest as the person wrote it
    edited = unclosed.read_text()
    assert "Lindenhof" not in edited and edited.startswith("---\ntitle: Unclosed\n"), edited
    unclosed.write_text(edited.replace("verified: false\n", "verified: false\n---\n", 1))  # the person mends it
    page = mem.read_page("public", "unclosed")
    assert page is not None and page.citations == {1: keep} and "Okafor" in page.body


def test_a_page_without_the_names_of_a_forgotten_fact_keeps_every_other_link_and_line() -> None:
    """Links and headings claim nothing, so taking a deleted source's sentences off a page left the links and headings
    naming what it said; taking them off keeps the other links of a list, the lines under a heading and code."""
    page = Page("Household", "public", "home",
                "## Bob's zorblax fever\n\nThe bins go out on Thursday [2].\n\n[[Zorblax fever]], [[Bins]]\n\n"
                "See also: [[Zorblax fever|his illness]]\n\n- [[Garden]], [[Zorblax]] and [[Shed]]\n\n"
                "Ask Ana, see [[Zorblax fever]] [2].\n\n```\n[[Zorblax]]\n```", {2: "b"})
    out = page.without_names(lambda text: "zorblax" in text.lower())
    assert out.body == ("The bins go out on Thursday [2].\n\n[[Bins]]\n\n- [[Garden]] and [[Shed]]\n\n"
                        "Ask Ana, see [2].\n\n```\n[[Zorblax]]\n```"), out.body
    assert page.without_names(lambda text: False) is page


def _ingested(mem: Memory, *pages: Page) -> None:
    from wiki_engine.pipeline import run_ingest

    assert run_ingest(mem, lambda batch: list(pages)).written


def test_deleting_a_source_takes_the_links_naming_only_its_words_off_a_page(mem: Memory) -> None:
    gone, kept = (mem.add_source(t, scope="public") for t in ("Bob's health: diagnosed with zorblax fever by Dr Haas.",
                                                              "The bins go out on Thursday night."))
    _ingested(mem, Page("Household", "public", "health", "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on "
                        "Thursday night [2].\n\n[[Zorblax fever]], [[Bins]]\n\n## Dr Haas\n\nHe lives next door.",
                        {1: gone, 2: kept}))
    mem.delete_source(gone)
    page = mem.read_page("public", "household")
    assert page is not None and page.body == "The bins go out on Thursday night [2].\n\n[[Bins]]\n\nHe lives next door."
    assert page.category == "notes"  # "health" came from Bob's note alone
    assert mem.search("zorblax", scopes=["public"], mode="keyword") == []


def test_deleting_a_source_deletes_a_page_whose_title_only_it_backed_and_its_other_sources_wait_for_ingest(
        mem: Memory) -> None:
    """A page titled with what only the deleted source said kept its title in its file and in the title and keyword
    indexes. The page goes; the note it also cited is ingested again, and searchable meanwhile. Another page titled
    alike that never cited the deleted source stays."""
    gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                              "The bins go out on Thursday night."))
    mine = mem.add_source("I read about zorblax fever in the paper.", scope="private/alice")
    _ingested(mem, Page("Zorblax fever and bins", "public", "home",
                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("Zorblax fever", "private/alice", "notes", "I read about it in the paper [1].", {1: mine}))
    assert mem.inbox() == []
    assert mem.delete_source(gone) == ["page:public/zorblax-fever-and-bins"]
    assert mem.read_page("public", "zorblax-fever-and-bins") is None and mem.list_pages("public") == ([], [])
    assert mem.typeahead("zorbl", scopes=["public"]) == []
    assert mem.search("zorblax", scopes=["public"], mode="keyword") == []
    assert [h.id for h in mem.search("bins Thursday", scopes=["public"], mode="keyword")] == [kept]
    assert mem.inbox() == [kept] and mem.stale_pages() == []
    assert not [p for p in (mem.root / "wiki" / "public").rglob("*") if b"zorblax" in p.read_bytes().lower()]
    assert mem.read_page("private/alice", "Zorblax fever") is not None  # Alice's own page is untouched
    _ingested(mem, Page("Bins", "public", "home", "The bins go out on Thursday night [1].", {1: kept}))
    assert [p.title for p in mem.list_pages("public")[0]] == ["Bins"]


def test_deleting_a_page_titled_with_what_only_a_deleted_source_said_takes_the_links_to_it_off_other_pages(
        mem: Memory) -> None:
    """The page "Zorblax fever and bins" went with the source its title came from, yet "Household" (which never cited
    that source) kept "See also: [[Zorblax fever and bins]]" and "Diary" its "[[Zorblax fever and bins|Bob's
    illness]]": their files, and the keyword index, still named Bob's forgotten diagnosis. A link whose words the
    page's own sources say stays."""
    gone, kept, bins, fever = (mem.add_source(t, scope="public") for t in (
        "Bob was diagnosed with zorblax fever by Dr Haas.", "The bins go out on Thursday night.",
        "The green bin goes out on Thursday too.", "Zorblax fever is going round the school."))
    _ingested(mem, Page("Zorblax fever and bins", "public", "home",
                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("Household", "public", "home", "The green bin goes out on Thursday too [1].\n\n"
                   "See also: [[Zorblax fever and bins]], [[Garden]]", {1: bins}),
              Page("Diary", "public", "home", "Bob saw Dr Haas [1], see [[Zorblax fever and bins|Bob's illness]]. "
                   "The bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("School", "public", "home", "Zorblax fever is going round the school [1]; see [[Zorblax fever and "
                   "bins]].", {1: fever}))
    mem.delete_source(gone)
    assert mem.read_page("public", "zorblax-fever-and-bins") is None
    assert mem.read_page("public", "household").body == "The green bin goes out on Thursday too [1].\n\nSee also: [[Garden]]"
    assert mem.read_page("public", "diary").body == "The bins go out on Thursday night [2]."
    assert "[[Zorblax fever and bins]]" in mem.read_page("public", "school").body  # its own source says it
    assert not [p for p in (mem.root / "wiki" / "public").rglob("*") if p.name != "school.md"
                and b"zorblax" in p.read_bytes().lower()]
    assert {h.title for h in mem.search("zorblax", scopes=["public"], mode="keyword") if h.kind == "page"} == {"School"}


def test_links_from_other_scopes_to_a_page_titled_with_a_deleted_sources_words_go_too(mem: Memory) -> None:
    """The Wiki opens a link in the linking page's scope, else in its reader's other scopes: Alice's private "See also:
    [[Zorblax fever and bins]]" opens the household's page, and her writer writes both scopes. That page went with
    the note its title came from; Alice's link stayed (only the public pages were looked at), and so did Bob's, and
    his keyword search still found "zorblax" on his own page. Carol's link names her own page of that title, which
    is still there, and stays."""
    gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                              "The bins go out on Thursday night."))
    plants = mem.add_source("I water the plants on Sundays.", scope="private/alice")
    shed = mem.add_source("I fixed the shed roof on Saturday.", scope="private/bob")
    hers, read = (mem.add_source(t, scope="private/carol") for t in (
        "Zorblax fever and bins: my notes on both.", "I read two books in May."))
    _ingested(mem, Page("Zorblax fever and bins", "public", "home",
                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("Alice's week", "private/alice", "notes",
                   "I water the plants on Sundays [1].\n\nSee also: [[Zorblax fever and bins]]", {1: plants}),
              Page("Shed", "private/bob", "home", "I fixed the shed roof on Saturday [1].\n\nSee [[Zorblax fever and "
                   "bins]].", {1: shed}),
              Page("Zorblax fever and bins", "private/carol", "notes", "My notes on both [1].", {1: hers}),
              Page("Reading", "private/carol", "notes", "I read two books in May [1].\n\nSee also: [[Zorblax fever "
                   "and bins]]", {1: read}))
    mem.delete_source(gone)
    assert mem.read_page("public", "zorblax-fever-and-bins") is None
    assert mem.read_page("private/alice", "alice-s-week").body == "I water the plants on Sundays [1]."
    assert mem.read_page("private/bob", "shed").body == "I fixed the shed roof on Saturday [1]."
    assert "[[Zorblax fever and bins]]" in mem.read_page("private/carol", "reading").body
    for who in ("alice", "bob"):
        assert mem.search("zorblax", scopes=Viewer(who), mode="keyword") == [], who
        assert not [p for p in (mem.root / "wiki" / "private" / who).rglob("*") if b"zorblax" in p.read_bytes().lower()]


def test_a_persons_own_page_of_links_keeps_its_other_links_when_one_names_a_deleted_source(mem: Memory) -> None:
    """The person's own "Family links" page (verified, nothing but links) was deleted whole, its link to Garden
    with it, when the source one of its links' titles came from was deleted: a page left with bare links was taken
    for a page that had said something and lost it."""
    gone, kept, garden = (mem.add_source(t, scope="public") for t in (
        "Bob was diagnosed with zorblax fever by Dr Haas.", "The bins go out on Thursday night.",
        "The roses in the garden need pruning in March."))
    _ingested(mem, Page("Zorblax fever and bins", "public", "home",
                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("Garden", "public", "home", "The roses need pruning in March [1].", {1: garden}))
    mem.write_page(Page("Family links", "public", "home", "- [[Zorblax fever and bins]]\n- [[Garden]]", {},
                        verified=True), author="person:alice")
    mem.delete_source(gone)
    assert mem.read_page("public", "zorblax-fever-and-bins") is None
    page = mem.read_page("public", "family-links")
    assert page is not None and "[[Garden]]" in page.body and "zorblax" not in page.body.lower(), page


def test_a_verified_page_titled_with_what_only_a_deleted_source_said_keeps_the_persons_text_under_a_plain_title(
        mem: Memory) -> None:
    """A verified page holds the person's own corrections: deleting the source its title came from must not throw
    them away with the page. It stays, titled by its category (no page of that name yet: "Home 2" if there is);
    the link "Home" gave to its old title goes."""
    gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                              "The bins go out on Thursday night."))
    _ingested(mem, Page("Zorblax fever and bins", "public", "home",
                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].", {1: gone, 2: kept}),
              Page("Home", "public", "home", "The bins go out on Thursday night [1].\n\nSee [[Zorblax fever and bins]].",
                   {1: kept}))
    mem.write_page(Page("Zorblax fever and bins", "public", "home", "Bob was diagnosed by Dr Haas [1].\n\nThe green "
                        "bin goes out on Thursday night, not Friday [2].", {1: gone, 2: kept}, verified=True),
                   author="person:alice")
    assert mem.read_page("public", "zorblax-fever-and-bins").verified
    deleted = mem.delete_source(gone)
    assert deleted == ["page:public/zorblax-fever-and-bins"]
    # where the person's text went, for the window showing the page to open it there
    assert deleted.moved == {"page:public/zorblax-fever-and-bins": "page:public/home-2"}
    assert mem.read_page("public", "zorblax-fever-and-bins") is None
    page = mem.read_page("public", "Home 2")
    assert page is not None and page.verified and page.citations == {2: kept}
    assert page.body == "The green bin goes out on Thursday night, not Friday [2]."
    assert mem.typeahead("zorbl", scopes=["public"]) == [] and mem.search("zorblax", scopes=["public"], mode="keyword") == []
    assert [h.title for h in mem.search("green bin Friday", scopes=["public"], mode="keyword") if h.kind == "page"][0] == "Home 2"
    assert not [p for p in (mem.root / "wiki" / "public").rglob("*") if b"zorblax" in p.read_bytes().lower()]
    assert mem.stale_pages() == ["page:public/home-2"]  # a model may still rewrite it
    assert mem.read_page("public", "home").body == "The bins go out on Thursday night [1]."  # its link to the old title


def test_a_page_keeps_its_title_and_links_while_a_kept_source_still_says_them(mem: Memory) -> None:
    gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                              "Zorblax fever is going round; the bins go out Thursday."))
    _ingested(mem, Page("Zorblax fever", "public", "health", "Bob was diagnosed by Dr Haas [1].\n\nIt is going "
                        "round [2].\n\n[[Zorblax]], [[Dr Haas]]", {1: gone, 2: kept}))
    mem.delete_source(gone)
    page = mem.read_page("public", "Zorblax fever")
    assert page is not None and page.body == "It is going round [2].\n\n[[Zorblax]]"  # Dr Haas only Bob's note named
    assert mem.inbox() == []


SC = "private/alice"


def test_a_link_to_another_real_page_stays_when_one_source_that_mentioned_it_is_deleted(mem: Memory) -> None:
    """The "Recycling" page links to the "Garden waste" page, a page of its own backed by its own source. Deleting
    one source of "Recycling" that happened to mention garden waste removed the link to the other page, which is
    still there and still backed: the link named a page, not something only the deleted source said."""
    glass = mem.add_source("Glass goes to the bottle bank on Fridays.", scope=SC)
    brown = mem.add_source("Garden waste goes in the brown bin every other Monday.", scope=SC)
    compost = mem.add_source("Garden waste can also go on the compost heap behind the shed.", scope=SC)
    mem.write_page(Page("Garden waste", SC, "home", "Garden waste can go on the compost heap [1].", {1: compost}),
                   author="agent:writer")
    mem.write_page(Page("Recycling", SC, "home",
                        "Glass goes to the bottle bank on Fridays [1]. The brown bin is emptied every other Monday [2]."
                        "\n\nSee also: [[Garden waste]]", {1: glass, 2: brown}), author="agent:writer")
    mem.delete_sources([brown])
    assert mem.read_page(SC, "garden-waste") is not None  # the other page is there, still backed
    page = mem.read_page(SC, "recycling")
    assert page is not None and "bottle bank" in page.body
    assert "[[Garden waste]]" in page.body, page.body


def test_a_chinese_titled_page_whose_title_its_kept_source_says_is_not_deleted(mem: Memory) -> None:
    """A page titled 东京旅行 ("Tokyo trip") cites two notes. Deleting one deletes the whole page, though the note
    it still cites says both 东京 (Tokyo) and 旅行 (trip): the title is read as letter pairs, and the pair across the
    two words (京旅) was said only by the deleted note."""
    kept = mem.add_source("我们五月去东京的旅行订好了酒店。", scope=SC)  # "the hotel for our May trip to Tokyo is booked"
    gone = mem.add_source("东京旅行的机票是三月买的。", scope=SC)  # "the Tokyo-trip plane tickets were bought in March"
    mem.write_page(Page("东京旅行", SC, "旅行", "五月去东京的旅行订好了酒店 [1]。\n\n机票三月买的 [2]。", {1: kept, 2: gone}),
                   author="agent:writer")
    assert mem.read_page(SC, "东京旅行") is not None
    mem.delete_sources([gone])
    page = mem.read_page(SC, "东京旅行")
    assert page is not None, "the page the kept note still backs, title and all, was deleted"
    assert "酒店" in page.body


def test_a_verified_chinese_page_keeps_its_other_cited_sentence_when_one_source_is_deleted(mem: Memory) -> None:
    """A page the person verified, in Chinese: two sentences on
    one line, each citing its own note, ending in 。. Deleting one note deleted the whole page: 。 is not read as a
    sentence end, so the line was one "claim" citing the deleted note and went, the kept note's sentence with it
    (the same page in English keeps "Hotel booked [1].")."""
    kept = mem.add_source("我们五月去东京的旅行订好了酒店。", scope=SC)
    gone = mem.add_source("东京旅行的机票是三月买的。", scope=SC)
    mem.write_page(Page("东京旅行", SC, "旅行计划", "我们订好了五月的酒店 [1]。机票是三月买的 [2]。", {1: kept, 2: gone},
                        verified=True), author="person:alice")
    mem.delete_sources([gone])
    pages = mem.list_pages(SC)[0]
    assert [p for p in pages if "我们订好了五月的酒店 [1]" in p.body], pages


def test_a_models_title_and_category_keep_no_direction_override(mem: Memory) -> None:
    """A hostile writer's title "Dentist \u202egnp.exe" shows in the window as "Dentist exe.png" (the terminal strips
    such characters; the window showed them). Titles and categories are stored without direction overrides,
    embeddings or isolates; a Hebrew title keeps its letters."""
    sid = mem.add_source("The dentist is Dr Okafor.", scope=SC)
    mem.write_page(Page("Dentist \u202egnp.exe\u202c \u2066x\u2069", SC, "he\u202ealth", "The dentist is Dr Okafor [1].",
                        {1: sid}), author="agent:writer")
    mem.write_page(Page("רופא שיניים", SC, "health", "The dentist is Dr Okafor [1].", {1: sid}), author="agent:writer")
    pages = {(p.title, p.category) for p in mem.list_pages(SC)[0]}
    assert pages == {("Dentist gnp.exe x", "health"), ("רופא שיניים", "health")}


def test_a_remembered_facts_first_line_gives_its_title_without_direction_override(mem: Memory) -> None:
    """A model's remembered "Plumber invoice \u202eexe.fdp paid on Monday" (no subject: its first line is its title)
    was listed in the window's results and typeahead reading "…pdf.exe", the list's own label drawn reversed after
    it. The title memory gives such a source has no direction override; its text keeps what was said."""
    sid = mem.add_source("Plumber invoice \u202eexe.fdp paid on Monday\nIt was 120 pounds.", scope=SC)
    hits = mem.typeahead("Plumber", scopes=[SC], k=5)
    assert [h.title for h in hits] == ["Plumber invoice exe.fdp paid on Monday"], hits
    assert [h.title for h in mem.search("plumber invoice", scopes=[SC], k=5) if h.id == sid] == [
        "Plumber invoice exe.fdp paid on Monday"]


def _listed_within(mem: Memory, scope: str, seconds: float = 20) -> tuple[list[Page], list[str]]:
    """``mem.list_pages(scope)``, or AssertionError if it hangs (a named pipe opened to read waits for a writer)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job = pool.submit(mem.list_pages, scope)
        try:
            return job.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            for pipe in (mem.root / "wiki").rglob("*.md"):  # let the stuck reader go, so the test can end
                if stat.S_ISFIFO(pipe.lstat().st_mode):
                    with contextlib.suppress(OSError):
                        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            raise AssertionError(f"listing the pages of {scope} hung on a named pipe among them") from None


def test_a_folder_and_a_named_pipe_named_like_pages_are_named_and_the_other_pages_listed(mem: Memory) -> None:
    """A sync tool makes a folder `notes.md` among the pages, or someone a named pipe `pipe.md`: listing the pages
    ended in IsADirectoryError (the Wiki view and `memory pages` showed nothing) or waited on the pipe for good. Now
    the other pages are listed, each odd entry is named with what to do, and another person's pages are untouched;
    nightly goes through too."""
    sid = mem.add_source("Bins go out every second Tuesday.", scope="public")
    mem.write_page(_page(mem, "public", "Bins", "Every second Tuesday [1].", {1: sid}), author="agent:writer")
    bob = mem.add_source("Bob's bike is in the shed.", scope="private/bob")
    mem.write_page(_page(mem, "private/bob", "Bike", "In the shed [1].", {1: bob}), author="person:bob")
    folder = mem.root / "wiki" / "public"
    (folder / "notes.md").mkdir()
    os.mkfifo(folder / "pipe.md")
    pages, errors = _listed_within(mem, "public")
    assert [p.title for p in pages] == ["Bins"]
    assert sorted(errors) == [f"{folder / 'notes.md'}: a folder, not a page file. Move it out of {folder}, or "
                              "rename it so that its name does not end in .md.",
                              f"{folder / 'pipe.md'}: a named pipe, not a page file; it is never read. Move it out "
                              f"of {folder} or delete it."]
    with pytest.raises(PageFormatError, match="a folder, not a page file"):
        mem.read_page("public", "notes")
    assert [p.title for p in _listed_within(mem, "private/bob")[0]] == ["Bike"]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        report = pool.submit(run_nightly, mem).result(timeout=60)
    assert sorted(report.corrupt) == sorted(errors)
    assert [h.id for h in mem.search("second Tuesday", scopes=["public"], mode="keyword", kinds=("page",))] == \
        ["page:public/bins"]


def test_a_read_only_wiki_folder_is_said_and_the_other_scopes_pages_written(mem: Memory) -> None:
    """The shared pages' folder was made read-only (a sync tool, a restore): ingest ended in a PermissionError
    traceback on a `trips.tmpNNN` file. Now the page is refused with the folder named and what to do, its sources
    wait in the inbox, and a person's own pages are written as before."""
    pub = mem.add_source("We fly to Lisbon on 4 May.", scope="public")
    own = mem.add_source("The bike lock code is 3090.", scope="private/alice")
    folder = mem.root / "wiki" / "public"
    folder.mkdir(parents=True)

    def writer(batch: IngestBatch) -> list[Page]:
        return [Page("Trips", "public", "travel", "- We fly to Lisbon [1]", {1: pub}),
                Page("Bike", "private/alice", "things", "- The lock code is 3090 [1]", {1: own})]

    with read_only(folder):
        report = run_ingest(mem, writer)
        with pytest.raises(PageWriteError) as told:
            mem.write_page(Page("Trips", "public", "travel", "- We fly [1]", {1: pub}), author="person:alice")
        assert list(folder.iterdir()) == []  # no half-written copy left behind
    assert report.written == ["page:private/alice/bike"]
    (title, why), = report.rejected
    assert title == "Trips" and str(folder) in why and "read-only" in why and "Make the folder writable" in why
    assert str(told.value) == why
    assert mem.inbox() == [pub] and report.left_in_inbox == [pub]
    assert mem.read_page("private/alice", "Bike") is not None and mem.read_page("public", "Trips") is None
    assert "page:public/trips" in run_ingest(mem, writer).written  # writable again: the waiting page is written


# A page with [[…]] in code: a shell test in inline code, a link written as code to show its syntax, a fence of four
# tildes holding a ``` line that closes nothing, a bash block, a code span running onto the next line of its
# paragraph; and one backtick alone, which opens no code, before a real link.
CODE_PAGE = ("- Her check is `[[ -f ~/orchids.txt ]]` and ``[[Dentists]]`` links a page [1]\n"
             "- See [[Dentists]] and [[Garden]] [1]\n\n"
             "~~~~\n[[Dentists]]\n```\n[[Doctors]]\n~~~~\n\n"
             "```bash\nif [[ -d ~/Doctors ]]; then ls; fi\n```\n\n"
             "Write `[[Shed\n]]` to link it, or ` once before [[Shed]] [1]")


TABLE_PAGE = ("Visits [1]:\n\n| Who | Dentist | Next visit |\n|:--|---|--:|\n"
              "| Clara | [[Dentists]] | 4 April [1] |\n| Tom | [[Dentists\\|his dentist]] | 9 May [1] |\n"
              "| Ana | [[Dentists|her dentist]] | 2 June [1] |\n\nSee [[Dentists]] [1].")


def test_a_link_pointed_elsewhere_in_a_table_row_keeps_the_row_whole() -> None:
    """A merge relinked a table cell's [[Dentists]] as "[[Dentist|Dentists]]", whose "|" splits the cell in a
    Markdown table: the row lost its link and the cell after it, with its citation. Now a link in a table row is
    written with "\\|" (as Markdown tables need; a writer's own "|" there is mended the same way), memory reads
    "[[Title\\|label]]" as a link to Title, and outside a table a link is written as before."""
    from wiki_engine.pages import links_in

    page = Page("Visits", "public", "health", TABLE_PAGE, {1: "s"})
    assert page.links == ["Dentists"] * 4, page.links
    moved = page.relinked(lambda name: "Dentist" if name == "Dentists" else None)
    assert moved.body == ("Visits [1]:\n\n| Who | Dentist | Next visit |\n|:--|---|--:|\n"
                          "| Clara | [[Dentist\\|Dentists]] | 4 April [1] |\n| Tom | [[Dentist\\|his dentist]] | 9 May [1] |\n"
                          "| Ana | [[Dentist\\|her dentist]] | 2 June [1] |\n\nSee [[Dentist|Dentists]] [1]."), moved.body
    assert moved.links == ["Dentist"] * 4 and links_in("[[A\\B]]") == ["A\\B"], moved.links


def test_a_link_in_code_is_code_wherever_links_are_read() -> None:
    """A [[link]] in inline code or a fenced block counted as a link: in a page's links (the link graph, what a page
    names), in what it states, and when links were taken off or pointed elsewhere (a page deleted or merged), while
    the window showed it as code. Now code is code everywhere, as the window shows it."""
    from wiki_engine.pages import has_link, links_in, names_in, prose, says_anything

    page = Page("Clara", "public", "people", CODE_PAGE, {1: "s"})
    assert page.links == links_in(CODE_PAGE) == ["Dentists", "Garden", "Shed"], page.links
    assert names_in(CODE_PAGE) == ["Dentists", "Garden", "Shed"]
    assert not has_link("Type `[[Title]]` or `[[#part]]` to link.") and has_link("See [[#Hours]] and `x`.")
    assert says_anything("- `[[Dentists]]`") and not says_anything("- [[Dentists]]")
    stated = prose(CODE_PAGE)
    assert "`[[ -f ~/orchids.txt ]]`" in stated and "``[[Dentists]]``" in stated and "[[Doctors]]" in stated
    assert "See   and   [1]" in stated, stated  # a link is read as a space

    moved = page.relinked(lambda name: "Dentist" if name == "Dentists" else None)
    assert moved.body == CODE_PAGE.replace("See [[Dentists]]", "See [[Dentist|Dentists]]"), moved.body
    gone = page.without_names(lambda text: text in ("Dentists", "Shed"))
    assert gone.body == CODE_PAGE.replace("See [[Dentists]] and [[Garden]]", "See [[Garden]]").replace(
        " before [[Shed]] [1]", " before [1]"), gone.body


def test_unlinking_a_deleted_page_leaves_each_table_cell_in_its_column(mem: Memory) -> None:
    """Clara's page went with the only note it cited. The links to it came off the "Walks" page's table as links
    in a list come off: the "|" between [[Clara]] and [[Ana]] went with [[Clara]], so Ana moved into the "Walks
    with" column (the page said Ana walks on Tuesday), and a heading row lost a cell, so the window showed no table
    at all, its delimiter row as words. Now a link leaves its cell empty and the table keeps its columns; a row left
    with nothing goes, and a table left with no row goes whole."""
    clara = mem.add_source("Clara walks the dog with me.", scope=SC)
    walks = mem.add_source("Tuesday walks by the canal; Ana cooks after.", scope=SC)
    mem.write_page(Page("Clara", SC, "people", "Clara walks the dog [1].", {1: clara}), author="agent:writer")
    mem.write_page(Page("Ana", SC, "people", "Ana cooks after walks [1].", {1: walks}), author="agent:writer")
    mem.write_page(Page("Walks", SC, "home",
                        "| Day | Walks with | Cooks |\n|---|---|---|\n| Tuesday [1] | [[Clara]] | [[Ana]] |\n\n"
                        "| [[Clara]] | [[Ana]] |\n|---|---|\n| the canal [1] | after [1] |\n\n"
                        "| Friends |\n|---|\n| [[Clara]] |\n\nThe walk is by the canal [1].", {1: walks}),
                   author="agent:writer")
    mem.delete_sources([clara])
    assert mem.read_page(SC, "clara") is None
    body = mem.read_page(SC, "walks").body
    assert body == ("| Day | Walks with | Cooks |\n|---|---|---|\n| Tuesday [1] | | [[Ana]] |\n\n"
                    "| | [[Ana]] |\n|---|---|\n| the canal [1] | after [1] |\n\nThe walk is by the canal [1]."), body
