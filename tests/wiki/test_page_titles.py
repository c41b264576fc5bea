"""Pages whose titles make one file name: written apart, found by their titles, never in a loop."""
from __future__ import annotations

import threading

import pytest

from wiki_engine import Memory, Page, Scope, open_memory
from wiki_engine.pipeline import run_nightly


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


@pytest.mark.parametrize("first,second", [("Þór", "Ýr"), ("Lê Văn An", "Lý Văn An"), ("Søren Holm", "Sören Holm"),
                                          ("Åse", "Øse")])
def test_two_peoples_pages_keep_their_own_names(mem: Memory, first: str, second: str) -> None:
    """Two people whose names differ only in letters outside a-z: their file names lost those letters ("Þór" and "Ýr"
    were both ``r.md``), so the second page was titled "Ýr 2", the title agents and the writer then saw. Bob has
    pages of the same names in his own scope."""
    from wiki_engine import Viewer

    for who in ("alice", "bob"):
        sc = f"private/{who}"
        a = mem.add_source(f"{first} plays handball on Tuesdays.", scope=sc)
        b = mem.add_source(f"{second} is learning the violin.", scope=sc)
        mem.write_pages([Page(first, sc, "family", f"- {first} plays handball [1]", {1: a})], author="agent:writer")
        mem.write_pages([Page(second, sc, "family", f"- {second} is learning the violin [1]\n\nSee [[{first}]].",
                              {1: b})], author="agent:writer")
        # two pages (Mona's is "मोना 2" where the two titles make one file name, as "C++" beside "C#")
        titles = [p.title for p in mem.list_pages(sc)[0]]
        assert len(titles) == 2 and {t.removesuffix(" 2") for t in titles} == {first, second}, (who, titles)
        assert mem.read_page(sc, first).body.startswith(f"- {first} plays handball")
        assert mem.read_page(sc, second).body.startswith(f"- {second} is learning")
    hits = mem.search("violin", scopes=Viewer("alice"), k=3)
    assert [h.title for h in hits if h.kind == "page"] == [second]


def test_a_page_written_under_its_earlier_file_name_is_renamed_once(tmp_path, monkeypatch) -> None:
    """Pages written when "Þór" was ``r.md``: on opening, each such file gets its title's name once (``þór.md``), and
    the page opens, is updated in place (not written again beside itself), is linked, and is found under its new
    name; the catalog's rows naming it follow. Bob's page of the same title, in his scope, is his alone."""
    from wiki_engine import Viewer, memory, pages
    from wiki_engine.pages import earlier_slug

    root = tmp_path / "memory"
    with monkeypatch.context() as m:  # as the earlier version wrote them
        m.setattr(pages, "slugify", earlier_slug)
        m.setattr(memory, "slugify", earlier_slug)
        with open_memory(root) as mem:
            ids = {}
            for sc in ("private/alice", "private/bob"):
                ids[sc] = mem.add_source("Þór plays handball on Tuesdays.", scope=sc)
                mem.write_pages([Page("Þór", sc, "family", "- Þór plays handball [1]", {1: ids[sc]})],
                                author="agent:writer")
            sung = mem.add_source("Sören Holm sings in the choir.", scope="private/alice")
            mem.write_pages([Page("Sören Holm", "private/alice", "family", "- Sören sings [1]", {1: sung})],
                            author="agent:writer")
            mem.catalog.db.execute("DELETE FROM schema_migrations WHERE name='pages_keep_accented_letters'")
    assert sorted(p.name for p in (root / "wiki" / "private" / "alice").glob("*.md")) == ["r.md", "s-ren-holm.md"]
    with open_memory(root) as mem:
        folder = root / "wiki" / "private" / "alice"
        assert sorted(p.name for p in folder.glob("*.md")) == ["sören-holm.md", "þór.md"]
        assert [p.name for p in (root / "wiki" / "private" / "bob").glob("*.md")] == ["þór.md"]
        assert [r[0] for r in mem.catalog.query("SELECT slug FROM citations WHERE scope='private/alice' ORDER BY 1")] == [
            "sören-holm", "þór"]
        hits = mem.search("handball", scopes=Viewer("alice"), k=3)
        assert [h.id for h in hits if h.kind == "page"] == ["page:private/alice/þór"]
        assert mem.read_page("private/alice", "Þór").body == "- Þór plays handball [1]"
        b = mem.add_source("Þór also coaches the under-tens.", scope="private/alice")
        mem.write_pages([Page("Þór", "private/alice", "family", "- Þór plays handball [1]\n- Þór coaches [2]",
                              {1: ids["private/alice"], 2: b})], author="agent:writer")
        mem.write_pages([Page("Ýr", "private/alice", "family", "- Ýr is Þór's sister, see [[Þór]] [1]", {1: b})],
                        author="agent:writer")
        titles = sorted(p.title for p in mem.list_pages("private/alice")[0])
        assert titles == ["Sören Holm", "Ýr", "Þór"], titles
        assert "coaches" in mem.read_page("private/alice", "Þór").body
        assert "coaches" not in mem.read_page("private/bob", "Þór").body
    with open_memory(root) as mem:  # once: nothing is renamed again
        assert sorted(p.name for p in folder.glob("*.md")) == ["sören-holm.md", "ýr.md", "þór.md"]


def test_a_title_typed_decomposed_names_the_same_page_and_file_names_stay_short(mem: Memory) -> None:
    """"Sören" typed as "o" and a combining diaeresis (as macOS hands names back) is the page "Sören": one file,
    named in composed form. A long title of accented letters still makes a file name under 255 bytes, and a second
    one cut to the same name is written beside it (numbered, as any title cut so), not over it."""
    from wiki_engine import slugify

    sc = "private/alice"
    a = mem.add_source("Sören sings in the choir.", scope=sc)
    mem.write_pages([Page("So\u0308ren", sc, "family", "- Sören sings [1]", {1: a})], author="agent:writer")
    mem.write_pages([Page("Sören", sc, "family", "- Sören sings in the choir [1]", {1: a})], author="agent:writer")
    assert [p.name for p in (mem.root / "wiki" / "private" / "alice").glob("*.md")] == ["sören.md"]
    assert mem.read_page(sc, "Sören").body == "- Sören sings in the choir [1]"
    long = "Ærøskøbing " + "ø" * 120
    assert len(slugify(long + "x").encode()) <= 200
    mem.write_pages([Page(long, sc, "places", "- one [1]", {1: a})], author="agent:writer")
    mem.write_pages([Page(long + "x", sc, "places", "- two [1]", {1: a})], author="agent:writer")
    pages = mem.list_pages(sc)[0]
    assert len(pages) == 3 and long in {p.title for p in pages}
    assert all(len(p.name.encode()) <= 255 for p in (mem.root / "wiki" / "private" / "alice").glob("*.md"))


@pytest.mark.parametrize("first,second", [
    ("मीना", "मोना"),  # Meena and Mona: the vowel signs ी and ो are marks on the letter, not punctuation
    ("ขาว", "ข่าว"),  # "white" (the cat's name) and "news": a tone mark
    ("Flat 1.2", "Flat 12"),  # two flats of the building
])
def test_titles_that_differ_in_a_letters_marks_or_a_point_between_digits_are_two_pages(
        mem: Memory, first: str, second: str) -> None:
    """A model's page of the second title went onto the page of the first (its text replaced, the first page's facts
    on no page): the rule that "Dr. Smith" is "Dr Smith" dropped vowel signs, tone marks and the point of "1.2". Bob
    writes the same two pages in his own scope; a nightly pass merges neither pair, nor proposes to."""
    for who in ("alice", "bob"):
        sc = f"private/{who}"
        a = mem.add_source(f"{first}: likes jasmine tea.", scope=sc)
        b = mem.add_source(f"{second}: moved to Leeds.", scope=sc)
        mem.write_page(Page(first, sc, "people", "- Likes jasmine tea [1]", {1: a}), author="agent:wiki-writer")
        res = mem.write_page(Page(second, sc, "people", "- Moved to Leeds [1]", {1: b}), author="agent:wiki-writer")
        assert res.status == "written", (who, res)
        # two pages (Mona's is "मोना 2" where the two titles make one file name, as "C++" beside "C#")
        titles = [p.title for p in mem.list_pages(sc)[0]]
        assert len(titles) == 2 and {t.removesuffix(" 2") for t in titles} == {first, second}, (who, titles)
        assert mem.read_page(sc, first).body.startswith("- Likes jasmine tea"), who
        assert mem.read_page(sc, second).body.startswith("- Moved to Leeds"), who
    rep = run_nightly(mem)
    assert rep.merged == [] and rep.proposed == [] and mem.proposals() == []
    for who in ("alice", "bob"):
        assert len(mem.list_pages(f"private/{who}")[0]) == 2, who
        assert mem.read_page(f"private/{who}", second).body.startswith("- Moved to Leeds"), who


def test_a_models_page_of_another_name_is_no_proposal_against_her_verified_page(mem: Memory) -> None:
    """Alice verified Meena's page (मीना); the writer's page about Mona (मोना) became a proposal to rewrite it."""
    sc = "private/alice"
    a = mem.add_source("Meena likes jasmine tea.", scope=sc)
    b = mem.add_source("Mona moved to Leeds.", scope=sc)
    mem.write_page(Page("मीना", sc, "people", "- Likes jasmine tea [1]", {1: a}, verified=True), author="person:alice")
    res = mem.write_page(Page("मोना", sc, "people", "- Moved to Leeds [1]", {1: b}), author="agent:wiki-writer")
    assert res.status == "written" and mem.proposals() == [], res
    assert mem.read_page(sc, "मीना").verified and mem.read_page(sc, "मोना").body.startswith("- Moved to Leeds")


@pytest.mark.parametrize("first,second", [("Dentist", "dentist"), ("Wi-Fi", "WiFi"), ("Dr. Smith", "Dr Smith"),
                                          ("Café", "Cafe\u0301"), ("I ❤️ NY", "I ❤ NY"), ("Flat 1.2", "flat 1.2")])
def test_titles_that_differ_in_case_spacing_punctuation_or_encoding_are_still_one_page(
        mem: Memory, first: str, second: str) -> None:
    """The same title written otherwise (case, punctuation, an accent typed as a separate mark, an emoji's invisible
    variation selector) still goes to the page of that title; "Café" and "Cafe" stay two pages."""
    sc = "private/alice"
    a = mem.add_source("The first note.", scope=sc)
    b = mem.add_source("The second note.", scope=sc)
    mem.write_page(Page(first, sc, "places", "- First [1]", {1: a}), author="agent:wiki-writer")
    mem.write_page(Page(second, sc, "places", "- First [1]\n- Second [2]", {1: a, 2: b}), author="agent:wiki-writer")
    (one,) = mem.list_pages(sc)[0]
    assert one.title in (first, second) and one.body.startswith("- First [1]\n- Second [2]")
    c = mem.add_source("Cafe without an accent.", scope=sc)
    mem.write_page(Page("Cafe", sc, "places", "- Plain [1]", {1: c}), author="agent:wiki-writer")
    assert sorted(p.title for p in mem.list_pages(sc)[0]) == sorted([one.title, "Cafe"])


def test_the_nightly_pass_does_not_merge_pages_of_two_flats_unasked(mem: Memory) -> None:
    """"Flat 1.2" and "Flat 12" in their own files (as written before): the nightly pass took them for one title and
    merged the second into the first without asking, deleting it."""
    sc = "public"
    for title, fact in (("Flat 1.2", "Boiler serviced in May"), ("Flat 12", "Window sticks")):
        s = mem.add_source(f"{title}: {fact}.", scope=sc)
        page = Page(title, sc, "places", f"- {fact} [1]", {1: s})
        mem.pages.write_text(Scope.parse(sc), page.slug, page.to_markdown())
    mem.reindex_pages(sc)
    rep = run_nightly(mem)
    assert rep.merged == [] and mem.proposals() == []
    assert sorted(p.title for p in mem.list_pages(sc)[0]) == ["Flat 1.2", "Flat 12"]
