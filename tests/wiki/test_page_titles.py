"""Pages whose titles make one file name: written apart, found by their titles, never in a loop."""
from __future__ import annotations

import threading

import pytest

from wiki_engine import Memory, Page, open_memory


@pytest.fixture
def mem(tmp_path):
    m = open_memory(tmp_path / "memory")
    m._hung = False
    yield m
    if not m._hung:  # a writer thread still in its loop holds memory: closing would wait for it forever
        m.close()


def _write_in_time(mem: Memory, page: Page, seconds: float = 10.0):
    out: dict = {}

    def go() -> None:
        try:
            out["res"] = mem.write_page(page, author="agent:writer")
        except Exception as exc:  # noqa: BLE001
            out["exc"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    mem._hung = t.is_alive()
    return t.is_alive(), out


def test_two_long_titles_with_a_four_byte_script_do_not_hang_the_writer(mem: Memory) -> None:
    """Titles in CJK Extension B (4 bytes a letter in UTF-8): a file name is cut at 200 bytes, so "title 2", "title 3"...
    all make the same file name as the first page and _own_file looks for a free one forever."""
    a = mem.add_source("Note one.", scope="private/alice")
    b = mem.add_source("Note two.", scope="private/alice")
    first = "𠮷" * 70
    second = "𠮷" * 71
    hung, out = _write_in_time(mem, Page(first, "private/alice", "notes", "One [1].", {1: a}))
    assert not hung and "res" in out, out
    hung, out = _write_in_time(mem, Page(second, "private/alice", "notes", "Two [1].", {1: b}))
    assert not hung, "writing the second page never returned (the title collision loop does not end)"


def test_two_long_turkish_titles_do_not_hang_the_writer(mem: Memory) -> None:
    """"İ".lower() is two characters: a 60-character title of them makes a file name longer than 80 characters,
    which is cut, so "title 2" makes the same file name again, forever."""
    a = mem.add_source("Not bir.", scope="private/alice")
    b = mem.add_source("Not iki.", scope="private/alice")
    hung, out = _write_in_time(mem, Page("İ" * 70, "private/alice", "notes", "Bir [1].", {1: a}))
    assert not hung and "res" in out, out
    hung, out = _write_in_time(mem, Page("İ" * 71, "private/alice", "notes", "İki [1].", {1: b}))
    assert not hung, "writing the second page never returned (the title collision loop does not end)"


def test_a_verified_page_extended_under_its_title_without_a_full_stop_gets_a_proposal(mem: Memory) -> None:
    """The person verified "Dr. Smith"; the writer extends it titled "Dr Smith" (the same file, dr-smith.md). Before
    6d41726 that was a proposal on the verified page; now a second, unverified page "Dr Smith 2" is written with
    the model's version, beside the person's correction, never asked."""
    s1 = mem.add_source("Dr. Smith is my GP; appointments on Mondays.", scope="private/alice")
    s2 = mem.add_source("Dr. Smith moved surgery to Oak Street.", scope="private/alice")
    mem.write_page(Page("Dr. Smith", "private/alice", "people", "My GP, on Mondays [1].", {1: s1}),
                   author="agent:writer")
    mem.set_verified("private/alice", "Dr. Smith")
    res = mem.write_page(Page("Dr Smith", "private/alice", "people", "My GP, on Fridays [1]. Oak Street [2].",
                              {1: s1, 2: s2}), author="agent:writer")
    pages, _ = mem.list_pages("private/alice")
    assert res.status == "proposed" and sorted(p.title for p in pages) == ["Dr. Smith"], (
        res.status, [(p.title, p.verified, p.body) for p in pages])


def test_a_link_to_the_renamed_page_opens_it_not_the_first_page(mem: Memory) -> None:
    """The writer's page "C++" is stored as "C++ 2"; a page linking [[C++]] (the title the writer gave it, on the
    writer's other pages) and `read_page("C++")` (the wiki's link, an agent's read) open the page "C#" instead."""
    from wiki_engine import Viewer

    sharp = mem.add_source("I started a C# course at work in May.", scope="private/alice")
    plus = mem.add_source("My C++ exam is on 12 June.", scope="private/alice")
    mem.write_page(Page("C#", "private/alice", "skills", "A C# course since May [1].", {1: sharp}),
                   author="agent:writer")
    mem.write_page(Page("C++", "private/alice", "skills", "The exam is on 12 June [1].", {1: plus}),
                   author="agent:writer")
    bobs = mem.add_source("Bob's C++ book is on loan.", scope="private/bob")
    mem.write_page(Page("C++", "private/bob", "skills", "A book on loan [1].", {1: bobs}), author="agent:writer")
    page = mem.view_page("private/alice", "C++", Viewer("alice"))
    assert page is not None and page.title == "C++ 2" and "12 June" in page.body, page
    assert mem.read_page("private/alice", "c").title == "C#"  # a file name opens its own page
    assert mem.view_page("private/bob", "C++", Viewer("bob")).body == "A book on loan [1]."
    mem.delete_page("private/alice", "C++")  # deletes the page of that title, not C#
    assert sorted(p.title for p in mem.list_pages("private/alice")[0]) == ["C#"]


def test_verified_numbered_page_is_still_protected_after_its_namesake_is_deleted(mem: Memory) -> None:
    """'C#' is c.md, the writer's 'C++' is stored as 'C++ 2' (c-2.md); Alice verifies her C++ page. Later she deletes
    the C# page. The writer extends 'C++' again: it should be a proposal on her verified page (or at least not a
    second unverified page beside it), and read_page('C++') should still open her page."""
    a = mem.add_source("I started a C# course at work in May.", scope="private/alice")
    b = mem.add_source("I read a C++ book in June.", scope="private/alice")
    c = mem.add_source("The C++ book was by Stroustrup.", scope="private/alice")
    mem.write_page(Page("C#", "private/alice", "learning", "- A C# course [1]", {1: a}), author="agent:writer")
    mem.write_page(Page("C++", "private/alice", "learning", "- A C++ book in June [1]", {1: b}), author="agent:writer")
    assert mem.read_page("private/alice", "C++").title == "C++ 2"
    mem.set_verified("private/alice", "C++")
    mem.delete_page("private/alice", "c")  # Alice deletes the C# page in the Wiki
    assert mem.read_page("private/alice", "C++") is not None, "the C++ page is no longer found by its title once C# is gone"
    res = mem.write_page(Page("C++", "private/alice", "learning", "- A C++ book [1], by Stroustrup [2]", {1: b, 2: c}),
                         author="agent:writer")
    pages, _ = mem.list_pages("private/alice")
    assert res.status == "proposed" and [(p.title, p.verified) for p in pages] == [("C++ 2", True)], (
        res.status, [(p.title, p.verified, p.body) for p in pages])


def test_a_long_title_page_is_read_by_its_own_slug(mem: Memory) -> None:
    """A title whose file name is cut at 80 letters just after a word ends: its slug ends in '-'. The Wiki and every
    internal caller read a page by p.slug; read_page(scope, p.slug) must find the page listed."""
    a = mem.add_source("The school trip note.", scope="private/alice")
    title = "x" * 79 + " trip to the seaside for the whole class"
    mem.write_page(Page(title, "private/alice", "school", "- trip [1]", {1: a}), author="agent:writer")
    pages, _ = mem.list_pages("private/alice")
    assert len(pages) == 1
    p = pages[0]
    assert mem.read_page("private/alice", p.slug) is not None, f"listed page {p.slug!r} cannot be read by its slug"
