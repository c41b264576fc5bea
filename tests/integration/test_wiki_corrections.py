"""Corrections a person makes to the wiki stay made: a deleted source leaves none of its words, a rejected or
approved change is not asked again, an unchanged page is no proposal, and a writer never titles a page with its
own instructions. Found by review; each failed on the code before it."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.fake_model import Text


def _scope(pod) -> str:
    return f"private/{pod.person.id}"


async def test_deleting_a_source_leaves_none_of_its_words_in_a_wrapped_list_item(pod, script) -> None:
    """A model writes a list item wrapped over two lines (as models and people do); the source it cites is deleted.
    Promise: 'Deleting a source takes every sentence that cites it off every page ... uncited sentences just before
    its citation go with it ... none of its words is left behind.'"""
    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    a = await pod.in_memory_thread(lambda: pod.memory.add_source(
        "Clara was diagnosed with diabetes in March 2023.", scope=scope))
    await pod.in_memory_thread(lambda: pod.memory.add_source("Clara loves orchids.", scope=scope))
    script([Text(json.dumps([{"title": "Clara", "scope": scope, "category": "family",
                              "body": "- Clara loves orchids [2].\n- Clara was diagnosed with\n  diabetes in March 2023 [1].",
                              "citations": {"1": "S1", "2": "S2"}}]))])
    out = await pod.memory_ingest()
    assert out["written"] == [f"page:{scope}/clara"]
    assert "diagnosed" in pod.memory.read_page(scope, "Clara").body

    await pod.memory_delete_source(a)
    page = pod.memory.read_page(scope, "Clara")
    assert page is not None
    assert "diagnosed" not in page.body, f"the deleted source's words stay on the page:\n{page.body}"


async def test_deleting_a_source_leaves_none_of_its_words_in_a_wrapped_quote(pod, script) -> None:
    scope = _scope(pod)
    a = await pod.in_memory_thread(lambda: pod.memory.add_source("Bob said his salary is 90k a year.", scope=scope))
    b = await pod.in_memory_thread(lambda: pod.memory.add_source("Bob works at the bakery.", scope=scope))
    from wiki_engine import Page

    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Bob", scope, "people", "Bob works at the bakery [2].\n\n> Bob said his salary\n> is 90k a year [1].",
        {1: a, 2: b}), author="agent:wiki-writer"))
    await pod.memory_delete_source(a)
    page = pod.memory.read_page(scope, "Bob")
    assert "salary" not in page.body, f"the deleted source's words stay on the page:\n{page.body}"


async def _two_pages(pod):
    from wiki_engine import Page

    scope = _scope(pod)
    s1 = await pod.in_memory_thread(lambda: pod.memory.add_source("We plant tomatoes in May.", scope=scope))
    s2 = await pod.in_memory_thread(lambda: pod.memory.add_source("Roses go in along the fence in June.", scope=scope))
    # the person's own corrected page (verified), and an agent's near-duplicate
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Garden plans", scope, "home", "- Tomatoes in May [1]", {1: s1}, verified=True), author=f"person:{pod.person.id}"))
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Garden plan", scope, "home", "- Roses along the fence in June [1]", {1: s2}), author="agent:wiki-writer"))
    return scope


async def test_a_rejected_nightly_merge_is_not_proposed_again_every_night(pod) -> None:
    scope = await _two_pages(pod)
    await pod.memory_nightly()
    props = await pod.memory_proposals()
    assert len(props) == 1 and props[0].slug == "garden-plans"
    await pod.in_memory_thread(lambda: pod.memory.reject_proposal(props[0].id))
    await pod.memory_nightly()
    again = await pod.memory_proposals()
    assert again == [], f"the person rejected this merge; the next night asks again: {[p.diff for p in again]}"
    assert pod.memory.read_page(scope, "Garden plans").body == "- Tomatoes in May [1]"


async def test_an_approved_nightly_merge_does_not_come_back_as_an_empty_proposal(pod) -> None:
    scope = await _two_pages(pod)
    await pod.memory_nightly()
    props = await pod.memory_proposals()
    await pod.in_memory_thread(lambda: pod.memory.approve_proposal(props[0].id))
    assert "Roses" in pod.memory.read_page(scope, "Garden plans").body
    await pod.memory_nightly()
    again = await pod.memory_proposals()
    assert again == [], f"a proposal that changes nothing but the date: {[p.diff for p in again]}"


def _fact_page(pod, scope: str, title: str, fact: str, body: str = "") -> None:
    from wiki_engine import Page

    sid = pod.memory.add_source(fact, scope=scope)
    pod.memory.write_page(Page(title, scope, "people", body or f"- {fact} [1]", {1: sid}), author="agent:wiki-writer")


@pytest.mark.parametrize("a,b", [("Andrea", "Andreas"), ("Luca", "Lucas"), ("Plan A", "Plan"), ("Marie", "Maria")])
async def test_the_nightly_pass_merges_no_pages_of_other_titles_unasked(pod, a, b) -> None:
    """Alice's "Andrea" (a nurse in Turin) and "Andreas" (allergic to penicillin): after 03:00 "Andreas" was gone
    and "Andrea" said "Andreas is allergic to penicillin" (a title's final "s", "a" and "the" were dropped to find
    duplicates). Pages of other titles are merged only once the person approves it; a near title ("Andreas") is
    proposed, saying which page goes into which."""
    scope = _scope(pod)

    def seed() -> None:
        _fact_page(pod, scope, a, f"{a} lives in Turin and works as a nurse.")
        _fact_page(pod, scope, b, f"{b} is allergic to penicillin.")

    await pod.in_memory_thread(seed)
    before = {p.title: p.body for p in pod.memory.list_pages(scope)[0]}
    out = await pod.memory_nightly()
    after = {p.title: p.body for p in pod.memory.list_pages(scope)[0]}
    assert after == before and out["merged"] == [], f"nightly merged {b!r} into {a!r}: {before} -> {after}"
    props = await pod.memory_proposals()
    assert all(f"“{b}”" in p.author for p in props), [p.author for p in props]
    await pod.memory_nightly()
    assert [p.id for p in await pod.memory_proposals()] == [p.id for p in props]  # asked once, not every night


async def test_a_verified_page_holding_a_near_titled_pages_lines_deletes_nothing_unasked(pod) -> None:
    """Alice verified her "Andrea" page; the writer also made "Andreas" (her brother) from the same note, the same
    line. The nightly pass took the verified page holding that line for an approved merge: "Andreas" was deleted
    and her links to him opened Andrea's page. Only a merge she approved deletes a page of another title."""
    from wiki_engine import Page

    scope = _scope(pod)

    def seed() -> None:
        sid = pod.memory.add_source("Andrea and her brother Andreas came for dinner on Sunday.", scope=scope)
        line = "- Andrea and her brother Andreas came for dinner on Sunday [1]"
        pod.memory.write_page(Page("Andrea", scope, "people", line, {1: sid}), author="agent:wiki-writer")
        pod.memory.set_verified(scope, "Andrea", True)
        pod.memory.write_page(Page("Andreas", scope, "people", line, {1: sid}), author="agent:wiki-writer")
        pod.memory.write_page(Page("Family", scope, "people", "- See [[Andreas]] [1]", {1: sid}),
                              author="agent:wiki-writer")

    await pod.in_memory_thread(seed)
    out = await pod.memory_nightly()
    assert out["merged"] == [] and pod.memory.read_page(scope, "andreas") is not None, out
    assert pod.memory.read_page(scope, "family").body == "- See [[Andreas]] [1]"


async def test_a_merge_proposed_again_after_its_pages_changed_is_one_card(pod) -> None:
    """"Garden plan" and "Garden plans": the nightly pass proposed the merge; an ingest then added a line to the
    page it would keep, and the next night proposed the merge again with the new line beside the first card, which
    could still be approved without it. The newer card replaces the one still waiting."""
    from wiki_engine import Page

    scope, w = _scope(pod), "agent:wiki-writer"

    def seed() -> list[str]:
        ids = [pod.memory.add_source(t, scope=scope) for t in ("We plant tomatoes in May.",
                                                              "Roses go in along the fence in June.",
                                                              "Basil goes by the door.")]
        pod.memory.write_page(Page("Garden plans", scope, "home", "- Tomatoes in May [1]", {1: ids[0]}), author=w)
        pod.memory.write_page(Page("Garden plan", scope, "home", "- Roses along the fence in June [1]", {1: ids[1]}),
                              author=w)
        return ids

    ids = await pod.in_memory_thread(seed)
    await pod.memory_nightly()
    (first,) = await pod.memory_proposals()
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Garden plans", scope, "home", "- Tomatoes in May [1]\n- Basil by the door [2]", {1: ids[0], 2: ids[2]}),
        author=w))
    await pod.memory_nightly()
    (card,) = await pod.memory_proposals()
    assert card.id != first.id and "Basil" in card.proposed_text, card
    # an ingest writes the page the merge keeps, now the newer of the two (the other one written long ago): the
    # merge was proposed the other way round too, a second card beside the first; it is still merged into it
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Garden plan", scope, "home", "- Roses along the fence in June [1]\n- Basil by the door [2]",
        {1: ids[1], 2: ids[2]}), author=w))
    other = pod.memory.root / "wiki" / scope / "garden-plans.md"
    other.write_text(re.sub(r"(?m)^updated: .*$", "updated: 2020-01-01T00:00:00Z", other.read_text()))
    await pod.memory_nightly()
    assert [(p.slug, "“Garden plans”" in p.author) for p in await pod.memory_proposals()] == [("garden-plan", True)]


async def test_an_approved_merge_points_the_links_to_the_merged_page_at_the_kept_one(pod) -> None:
    """"Dentist" and "Dentists" merged: Clara's page still said "See [[Dentists]]", and the link opened "No page
    Dentists here yet". The merge, once approved, is done the next night and the link opens "Dentist", reading as
    it did."""
    from wiki_engine import Page, Viewer

    scope = _scope(pod)

    def seed() -> None:
        _fact_page(pod, scope, "Dentist", "The dentist is Dr Okafor.")
        _fact_page(pod, scope, "Dentists", "The dentist's practice opens at 8.")
        sid = pod.memory.add_source("Clara goes to the dentist on Fridays.", scope=scope)
        pod.memory.write_page(Page("Clara", scope, "people", "- Clara goes on Fridays [1]\n- See [[Dentists]] and "
                                   "[[Dentists#Hours|the hours]]", {1: sid}),
                              author="agent:wiki-writer")

    await pod.in_memory_thread(seed)
    out = await pod.memory_nightly()
    (prop,) = await pod.memory_proposals()
    assert out["merged"] == [] and prop.slug == "dentist" and "“Dentists”" in prop.author
    await pod.memory_approve_proposal(prop.id)
    out = await pod.memory_nightly()
    assert out["merged"] == [(f"page:{scope}/dentist", f"page:{scope}/dentists")], out
    assert pod.memory.read_page(scope, "dentists") is None
    assert "practice opens at 8" in pod.memory.read_page(scope, "dentist").body
    clara = pod.memory.read_page(scope, "clara")
    assert "See [[Dentist|Dentists]] and [[Dentist#Hours|the hours]]" in clara.body, clara.body
    opened = [t for t in clara.links if pod.memory.view_page(scope, t, Viewer(pod.person.id)) is not None]
    assert opened == clara.links == ["Dentist", "Dentist"], clara.links


async def test_an_approved_merge_relinks_a_table_cell_and_the_row_stays_whole(pod) -> None:
    """After an approved Dentist/Dentists merge, Clara's row "| Clara | [[Dentists]] | 4 April [1] |" was relinked as
    "[[Dentist|Dentists]]": the "|" split the cell, the window showed "[[Dentist" and "Dentists]]" as text and the
    "4 April [1]" cell, with its citation, was gone. Now a link in a table row is written "[[Dentist\\|Dentists]]"
    (as Markdown tables need), memory still reads it as a link to Dentist, and the row shows whole: the link, the
    date and its citation."""
    from app.wiki_view import page_html
    from wiki_engine import Page, Viewer

    scope = _scope(pod)
    table = ("| Who | Dentist | Next visit |\n|---|---|---|\n"
             "| Clara | [[Dentists]] | 4 April [1] |\n| Tom | [[Doctors]] | 9 May [2] |")

    def seed() -> None:
        _fact_page(pod, scope, "Dentist", "The dentist is Dr Okafor.")
        _fact_page(pod, scope, "Dentists", "The dentist's practice opens at 8.")
        a = pod.memory.add_source("Clara sees the dentist on 4 April.", scope=scope)
        b = pod.memory.add_source("Tom sees the doctor on 9 May.", scope=scope)
        pod.memory.write_page(Page("Visits", scope, "health", table, {1: a, 2: b}), author="agent:wiki-writer")

    await pod.in_memory_thread(seed)
    await pod.memory_nightly()
    (prop,) = await pod.memory_proposals()
    await pod.memory_approve_proposal(prop.id)
    await pod.memory_nightly()
    visits = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "visits"))
    assert "| Clara | [[Dentist\\|Dentists]] | 4 April [1] |" in visits.body, visits.body
    assert visits.links == ["Dentist", "Doctors"], visits.links
    assert pod.memory.view_page(scope, visits.links[0], Viewer(pod.person.id)) is not None

    html = page_html(visits.body, visits.citations, scope)
    row = re.search(r"<tr>\s*<td>Clara</td>.*?</tr>", html, re.S).group(0)
    assert "hearth-page:" in row and ">Dentists</a>" in row and "4 April" in row and "hearth-source:" in row, row
    assert "[[" not in row and "]]" not in row, row


async def test_an_ingest_that_keeps_a_verified_page_as_it_is_proposes_nothing(pod, script) -> None:
    """The person corrected a page (verified). The next ingest's model, told to keep existing claims, hands the page
    back unchanged next to a new page: the person should not be asked to approve a change that changes nothing."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    s1 = await pod.in_memory_thread(lambda: pod.memory.add_source("We plant tomatoes in May.", scope=scope))
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Garden", scope, "home", "- Tomatoes in May [1]", {1: s1}, verified=True), author=f"person:{pod.person.id}"))
    await pod.in_memory_thread(lambda: pod.memory.add_source("The dentist appointment is on 4 April.", scope=scope))

    def writer(req) -> Text:
        label = re.search(r"\[1\] = (P\d+-1)", req.last_user).group(1)
        return Text(json.dumps([
            {"title": "Garden", "scope": scope, "category": "home", "body": "- Tomatoes in May [1]",
             "citations": {"1": label}},
            {"title": "Dentist", "scope": scope, "category": "health", "body": "- Appointment on 4 April [1]",
             "citations": {"1": "S1"}}]))

    script([writer])
    out = await pod.memory_ingest()
    assert f"page:{scope}/dentist" in out["written"]
    props = await pod.memory_proposals()
    assert props == [], f"a proposal whose only change is the date line:\n{props[0].diff if props else ''}"


async def test_a_writer_that_titles_a_page_with_its_instructions_changes_nothing(pod, script) -> None:
    """The body repeating the writer's instructions is refused (test_a_writer_that_repeats_its_instructions...);
    the same sentence as the page's title is written and shows in the Wiki's tree."""
    from runtime_host.memory_jobs import MemoryModelError

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope))
    script([Text(json.dumps([{"title": "You maintain a personal wiki from sources.", "scope": scope,
                              "category": "family", "body": "- Clara: 3 June [1]", "citations": {"1": "S1"}}]))])
    try:
        await pod.memory_ingest()
    except MemoryModelError:
        pass
    titles = [p.title for p in pod.memory.list_pages(scope)[0]]
    assert titles == [], f"a page titled with the writer's own instructions was written: {titles}"


async def test_a_page_of_megabytes_from_the_writer_is_refused_and_its_sources_wait(pod, script) -> None:
    """A looping or hostile writer answered one page of megabytes, every line cited: it was stored, and opening it
    held the window for half a minute. A model's page is now refused past 100,000 characters."""
    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    await pod.in_memory_thread(lambda: pod.memory.add_source("Clara loves orchids and tulips.", scope=scope))
    line = "- Clara loves orchids, tulips, roses, lilies, daisies and every other flower in the garden [1]"
    script([Text(json.dumps([{"title": "Clara", "scope": scope, "category": "family", "body": "\n".join([line] * 3000),
                              "citations": {"1": "S1"}}]))])
    out = await pod.memory_ingest()
    assert out["written"] == [] and out["rejected"] and "at most 100,000" in out["rejected"][0]["why"]
    assert pod.memory.read_page(scope, "Clara") is None
    assert out["left_in_inbox"] == 1  # the source waits for the next ingest


async def test_only_the_pages_person_decides_a_proposal_for_it(pod) -> None:
    """The window decided a proposal by its id straight in memory, whoever was shown: one read for Me and decided
    after the window changed hands was decided by Bob, and nothing stopped a proposal for Me's private page being
    approved as Bob. The pod decides only the person's own, and refuses another's as one that is not open."""
    import pytest

    scope = await _two_pages(pod)
    await pod.memory_nightly()
    (prop,) = await pod.memory_proposals()
    pod.add_person("Bob")
    bob = pod.pod.unlock("Bob")
    for decide in (bob.memory_approve_proposal, bob.memory_reject_proposal):
        with pytest.raises(KeyError, match="No open proposal"):
            await decide(prop.id)
    assert [p.id for p in await pod.memory_proposals()] == [prop.id]  # still open for Me
    assert pod.memory.read_page(scope, "Garden plans").body == "- Tomatoes in May [1]"
    assert any("proposal" in e["summary"] for e in bob.audit_log(kind="access"))
    page = await pod.memory_approve_proposal(prop.id)
    assert "Roses" in page.body and "Roses" in pod.memory.read_page(scope, "Garden plans").body
    with pytest.raises(KeyError, match="No open proposal"):
        await pod.memory_reject_proposal(prop.id)  # decided already


_COUSINS = [f"- Cousin {n} of Clara loves orchids and visits in spring [1]" for n in range(1, 51)]  # 2,950 chars
_TOM = "- Tom's birthday is on 9 May."


def _faithful_writer(title: str):
    """A sensible writer: it keeps every line it is shown of the page ``title`` (copied as shown, its [n] cited by
    the labels listed) and adds the new source's fact; of a page it was not shown it knows only that fact."""

    def write(req) -> Text:
        prompt = req.last_user
        label = list(re.finditer(r"- (S\d+) \(scope (\S+);[^\n]*?\): (.*)", prompt))[-1]  # the newest source
        m = re.search(rf"Existing page '{title}' in \S+ \([^)]*\):\n(.*?)\nIts citations: (.*)", prompt, re.S)
        shown, cites = (m.group(1), dict(re.findall(r"\[(\d+)\] = (P\d+-\d+)", m.group(2)))) if m else ("", {})
        new = max((int(n) for n in cites), default=0) + 1
        body = (shown + "\n" if shown else "") + f"- {label.group(3)} [{new}]"
        return Text(json.dumps([{"title": title, "scope": label.group(2), "category": "family", "body": body,
                                 "citations": {**cites, str(new): label.group(1)}}]))

    return write


async def _long_family_page(pod, *, verified: bool) -> str:
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source(
        "Clara's cousins all love orchids and visit in spring.", scope=scope))
    author = f"person:{pod.person.id}" if verified else "agent:wiki-writer"  # the person's own correction is verified
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Family", scope, "family", "\n".join(_COUSINS), {1: sid}, verified=verified), author=author))
    await pod.in_memory_thread(lambda: pod.memory.add_source("Tom's birthday is on 9 May.", scope=scope))
    return scope


async def test_a_long_corrected_page_is_proposed_whole_with_the_new_fact(pod, script, fake_model) -> None:
    """The writer was shown a page cut at 1,500 characters, with no word that it went on: a writer keeping every line
    it was shown proposed the person's 50-line correction without its last 25 lines, at every ingest."""
    scope = await _long_family_page(pod, verified=True)
    script([_faithful_writer("Family")])
    await pod.memory_ingest()
    prompt = fake_model.requests[-1].last_user
    assert "more characters of this page not shown" in prompt  # the writer is told the page goes on
    (prop,) = await pod.memory_proposals()
    from wiki_engine.pages import parse_page

    proposed = parse_page(prop.proposed_text).body.split("\n")
    assert proposed[:50] == _COUSINS, f"the proposal drops {len(set(_COUSINS) - set(proposed))} of the 50 lines"
    assert proposed[50].startswith(_TOM) and len(proposed) == 51
    assert "not shown" not in prop.proposed_text  # the prompt's own line, copied by the writer, is taken off
    assert pod.memory.read_page(scope, "Family").body == "\n".join(_COUSINS)  # the page waits for the person


async def test_a_long_page_is_not_rewritten_without_its_end(pod, script) -> None:
    """Not verified, the page was rewritten without the lines the writer was not shown; their sources had left the
    inbox, so no ingest ever wrote them again."""
    scope = await _long_family_page(pod, verified=False)
    script([_faithful_writer("Family")])
    out = await pod.memory_ingest()
    assert out["written"] == [f"page:{scope}/family"]
    page = pod.memory.read_page(scope, "Family")
    lines = page.body.split("\n")
    assert lines[:50] == _COUSINS, f"ingest rewrote the page without {len(set(_COUSINS) - set(lines))} of its lines"
    assert lines[50].startswith(_TOM) and len(lines) == 51
    assert len(page.citations) == 2  # the cousins' source under one number, as before, and the new one


async def test_a_page_the_writer_was_not_shown_keeps_its_lines(pod, script, fake_model) -> None:
    """The writer is shown 50 pages of a scope; a draft of a 51st it never saw (neither named nor found by the new
    note, so past the 50 shown; a model may still guess its title) replaced that page with the new fact alone."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("Notes on the garden, one a topic.", scope=scope))
    pages = [Page(f"Garden topic {n:02}", scope, "home", f"- Garden topic {n} is noted [1]", {1: sid})
             for n in range(1, 51)]
    pages.append(Page("Zoe", scope, "family", "- Zoe plays the cello [1]\n- Zoe lives in Porto [1]", {1: sid}))
    await pod.in_memory_thread(lambda: pod.memory.write_pages(pages, author="agent:wiki-writer"))
    await pod.in_memory_thread(lambda: pod.memory.add_source("Her birthday is on 9 May.", scope=scope))
    script([_faithful_writer("Zoe")])
    await pod.memory_ingest()
    assert "Existing page 'Zoe'" not in fake_model.requests[-1].last_user  # the 51st page is not shown
    page = pod.memory.read_page(scope, "Zoe")
    claims = [re.sub(r"\[(\d+)\]", lambda m: f"[{page.citations[int(m.group(1))]}]", line)
              for line in page.body.split("\n") if line]
    assert claims[:2] == [f"- Zoe plays the cello [{sid}]", f"- Zoe lives in Porto [{sid}]"], page.body
    assert claims[2].startswith("- Her birthday is on 9 May.") and len(claims) == 3


def _writer_of(title: str, fact: str):
    """A wiki writer that writes one page ``title`` holding ``fact``, citing the last new note it is shown."""
    def write(req) -> Text:
        label = list(re.finditer(r"- (S\d+) \(scope (\S+);[^\n]*?\): (.*)", req.last_user))[-1]
        return Text(json.dumps([{"title": title, "scope": label.group(2), "category": "people",
                                 "body": f"- {fact} [1]", "citations": {"1": label.group(1)}}]))
    return write


@pytest.mark.parametrize(("old", "new"), [("Frau Müller", "Frau Möller"), ("C#", "C++")])
async def test_a_new_page_whose_title_shares_a_file_name_gets_none_of_the_other_pages_lines(pod, script, old,
                                                                                          new) -> None:
    """Titles sharing a file name ("C#" and "C++" are both c.md) get pages of their own, but the writer's new page
    was matched to the other page by its file name: "Frau Möller 2" came out holding the end of Frau Müller's long
    page the writer was not shown, her penicillin allergy included, cited to her note."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source(f"Notes on {old}.", scope=scope))
    long = "\n".join([f"- {old} marked Tom's maths test {n} on time [1]" for n in range(1, 40)]
                     + [f"- {old} is allergic to penicillin [1]"])  # past what the writer is shown of a page
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(old, scope, "people", long, {1: sid}),
                                                             author="agent:wiki-writer"))
    await pod.in_memory_thread(lambda: pod.memory.add_source(f"{new} is our new neighbour.", scope=scope))
    script([_writer_of(new, f"{new} is our new neighbour.")])
    await pod.memory_ingest()
    pages = {p.title: p.body for p in pod.memory.list_pages(scope)[0]}
    made = [t for t in pages if t.startswith(new)]
    assert made and pages[made[0]] == f"- {new} is our new neighbour. [1]", pages
    assert pages[old] == long


async def test_a_page_file_with_spaces_at_line_ends_handed_back_as_it_reads_asks_nothing(pod) -> None:
    """A verified page whose file keeps spaces at its lines' ends and blank lines more (saved before Hearth took
    them off, or by hand), handed back as it reads, its two sources under each other's numbers: a proposal the
    person could see no change in."""
    from wiki_engine import Page, Scope

    scope = _scope(pod)
    a = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope))
    b = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara loves orchids.", scope=scope))
    stored = Page("Family", scope, "family", "- Clara's birthday is on 3 June [1]  \n\n\n\n- She loves orchids [2] ",
                  {1: a, 2: b}, verified=True)
    await pod.in_memory_thread(lambda: pod.memory.pages.write_text(Scope.parse(scope), "family", stored.to_markdown()))
    res = await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Family", scope, "family", "- Clara's birthday is on 3 June [2]\n- She loves orchids [1]", {1: b, 2: a}),
        author="agent:wiki-writer"))
    assert res.status == "unchanged", res.diff
    assert await pod.memory_proposals() == []
    changed = await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Family", scope, "family", "- Clara's birthday is on 4 June [2]\n- She loves orchids [1]", {1: b, 2: a}),
        author="agent:wiki-writer"))
    assert changed.status == "proposed"  # a word changed is still asked


async def test_an_agents_page_hit_names_the_page_it_reads(pod) -> None:
    """search_memory labelled a page hit "[page page:public/ · Bills]": its id cut at 12 characters, the agent
    could not tell which page, or whose, it was reading."""
    from wiki_engine import Page

    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("The orchid shop is paid by card.", scope="public"))
    await pod.in_memory_thread(lambda: pod.memory.write_pages([
        Page("Bills", "public", "home", "- The orchid shop is paid by card [1]", {1: sid}),
        Page("Orchid shop", _scope(pod), "home", "- The orchid shop is paid by card [1]", {1: sid})],
        author="agent:wiki-writer"))
    helper = next(i for i, _ in pod.store.list_agents(pod.person.id))
    found = await pod.pod.memory_host._tool_search_memory(pod.person.id, helper.id, {"query": "orchid shop card"})
    lines = [line for line in found.split("\n") if line.startswith("[page")]
    lines = [re.sub(r", updated \w+day \d{1,2} \w+ \d{4}\]", ", updated DAY]", line) for line in lines]
    assert sorted(lines) == ["[page “Bills”, household, updated DAY] home - The orchid shop is paid by card [1]",
                             "[page “Orchid shop”, private, updated DAY] home - The orchid shop is paid by card [1]"], found


async def test_a_models_page_of_her_corrected_pages_title_but_for_punctuation_is_a_proposal_for_it(pod, script) -> None:
    """Alice corrected "Wi-Fi" (verified: the router is in the hall cupboard). A new mail says the attic, and the
    ingest model writes the page "WiFi": the same title but for case and punctuation (README: such titles are one
    page). It was written at once beside hers, her agents given the attic as a page of its own; it is a proposal for
    her page instead, and rejected, leaves her one page."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("The router is in the attic.", scope=scope))
    mine = "- The Wi-Fi router is in the hall cupboard, not the attic [1]"
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Wi-Fi", scope, "home", mine, {1: sid}, verified=True), author=f"person:{pod.person.id}"))
    await pod.in_memory_thread(lambda: pod.memory.add_source(
        "Mail from the landlord: the WiFi router is in the attic.", scope=scope))
    script([_writer_of("WiFi", "The WiFi router is in the attic.")], repeat_last=True)
    await pod.memory_ingest()
    props = await pod.memory_proposals()
    assert [p.slug for p in props] == ["wi-fi"] and "attic. [1]" in props[0].proposed_text, (
        [p.title for p in pod.memory.list_pages(scope)[0]])
    await pod.memory_reject_proposal(props[0].id)
    assert [(p.title, p.body) for p in pod.memory.list_pages(scope)[0]] == [("Wi-Fi", mine)]
    helper = next(i for i, _ in pod.store.list_agents(pod.person.id))
    found = await pod.pod.memory_host._tool_search_memory(pod.person.id, helper.id, {"query": "where is the wifi router"})
    assert not any("attic" in ln and "hall cupboard" not in ln for ln in found.split("\n") if ln.startswith("[page")), found


async def test_a_page_approved_today_says_it_was_updated_today(pod, monkeypatch) -> None:
    """A proposal for Alice's corrected page waited since 2 January; she approves it today. The page said it was
    updated on 2 January (the day Ask memory and search_memory give the model to tell the newer of two facts), so a
    note from February read as newer than the page she had just approved."""
    import time
    from types import SimpleNamespace

    import wiki_engine.memory as memory_module
    from wiki_engine import Page

    scope = _scope(pod)
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("The dentist is Dr Okafor.", scope=scope))
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
        "Dentist", scope, "health", "- The dentist is Dr Okafor [1]", {1: sid}, verified=True),
        author=f"person:{pod.person.id}"))
    with monkeypatch.context() as m:  # memory's clock on 2 January 2026, when the ingest proposed the change
        m.setattr(memory_module, "time", SimpleNamespace(time=lambda: 1767344400.0, monotonic=time.monotonic,
                                                         strptime=time.strptime))
        res = await pod.in_memory_thread(lambda: pod.memory.write_page(Page(
            "Dentist", scope, "health", "- The dentist is Dr Okafor, at the Elm Street practice [1]", {1: sid}),
            author="agent:wiki-writer"))
    assert res.status == "proposed"
    await pod.memory_approve_proposal(res.proposal_id)
    page = pod.memory.read_page(scope, "dentist")
    assert "Elm Street" in page.body and page.verified
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert page.updated.startswith(today), f"approved today ({today}), the page says it was updated {page.updated}"


@pytest.mark.parametrize("other", ["Dentists", "Den-tist"])
async def test_an_approved_merge_of_two_pages_she_corrected_is_done(pod, other) -> None:
    """Alice corrected both "Dentist" and "Dentists" (each Save marks its page verified). The nightly pass proposed
    merging "Dentists" into "Dentist" and she approved; but a verified page was never deleted, so both stayed for
    good and Clara's link still opened "Dentists". The approved merge is done; a page of the same title ("Den-tist",
    its file written before such titles were one page), verified, goes only by a merge she approved too, and the
    card says which page goes."""
    from wiki_engine import Page, Scope

    scope = _scope(pod)
    me = f"person:{pod.person.id}"

    def seed() -> None:
        a = pod.memory.add_source("The dentist is Dr Okafor.", scope=scope)
        b = pod.memory.add_source("The dentist's practice opens at 8.", scope=scope)
        c = pod.memory.add_source("Clara goes to the dentist on Fridays.", scope=scope)
        pod.memory.write_page(Page("Dentist", scope, "health", "- The dentist is Dr Okafor [1]", {1: a},
                                   verified=True), author=me)
        page = Page(other, scope, "health", "- The practice opens at 8, not 9 [1]", {1: b}, verified=True)
        pod.memory.pages.write_text(Scope.parse(scope), page.slug, page.to_markdown())
        pod.memory.reindex_pages(scope)
        pod.memory.write_page(Page("Clara", scope, "people", f"- Clara goes on Fridays [1]\n- See [[{other}]]",
                                   {1: c}), author="agent:wiki-writer")

    await pod.in_memory_thread(seed)
    gone = pod.memory.list_pages(scope)[0]
    gone = next(p.slug for p in gone if p.title == other)
    await pod.memory_nightly()
    (prop,) = await pod.memory_proposals()
    assert prop.slug == "dentist" and f"“{other}”" in prop.author, prop
    assert pod.memory.read_page(scope, gone) is not None  # nothing goes before she approves
    await pod.memory_approve_proposal(prop.id)
    out = await pod.memory_nightly()
    assert out["merged"] == [(f"page:{scope}/dentist", f"page:{scope}/{gone}")], out
    assert pod.memory.read_page(scope, gone) is None, "the page she approved merging away is still there"
    assert "opens at 8" in pod.memory.read_page(scope, "dentist").body
    assert "[[Dentist" in pod.memory.read_page(scope, "clara").body
    await pod.memory_nightly()
    assert await pod.memory_proposals() == []
