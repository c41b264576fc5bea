"""Deleting a source leaves nothing pointing at what went: no citation written before a colon, no link to a page
deleted for having nothing left to say."""

from __future__ import annotations

import json
import re

from tests.helpers.fake_model import Text
from wiki_engine import Page, Viewer


async def test_ingest_keeps_the_source_of_a_citation_before_a_colon(pod, script) -> None:
    """Before, the writer's "Sizes [1]: shoes 38. She loves orchids [2]." was written with [1] in the text and no
    [1] under Sources (memory did not read "[1]:" as a citation, the window did): the page showed a [1] that opened
    nothing. Now [1] cites the sizes note, and deleting it takes the sizes off the page."""
    scope = f"private/{pod.person.id}"
    pod.set_role_model("ingest", "fake/writer-1")
    sizes = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's shoe size is 38.", scope=scope))
    await pod.in_memory_thread(lambda: pod.memory.add_source("Clara loves orchids.", scope=scope))
    script([Text(json.dumps([{"title": "Clara", "scope": scope, "category": "family",
                              "body": "Sizes [1]: shoes 38. She loves orchids [2].",
                              "citations": {"1": "S1", "2": "S2"}}]))])
    out = await pod.memory_ingest()
    assert out["written"] == [f"page:{scope}/clara"], out
    page = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "clara"))
    assert page.citations.get(1) == sizes, (page.body, page.citations)
    assert all(int(n) in page.citations for n in re.findall(r"\[(\d+)\]", page.body)), page.body

    await pod.memory_delete_source(sizes)
    page = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "clara"))
    assert page.body == "She loves orchids [2].", page.body


async def test_links_to_a_page_deleted_for_having_nothing_left_go(pod) -> None:
    """Before, deleting the only source of "Gifts" deleted that page, but Family kept its "[[Gifts]]", which then
    opened "No page Gifts here yet": links were taken off only for a page whose title named what the deleted source
    said. Now a page deleted for having nothing left takes the links to it along, and Family's own claim stays."""
    scope = f"private/{pod.person.id}"

    def seed():
        a = pod.memory.add_source("Clara loves orchids.", scope=scope)
        b = pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope)
        w = "agent:wiki-writer"
        pod.memory.write_page(Page("Gifts", scope, "family", "- Orchids for Clara [1]", {1: a}), author=w)
        pod.memory.write_page(Page("Family", scope, "family", "- Clara's birthday is on 3 June [1]\n\nSee also: "
                                   "[[Gifts]], [[Clara]]", {1: b}), author=w)
        pod.memory.write_page(Page("Clara", scope, "family", "- Clara's birthday is on 3 June [1]", {1: b}), author=w)
        return a

    a = await pod.in_memory_thread(seed)
    await pod.memory_delete_source(a)
    assert await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "gifts")) is None  # nothing left: gone
    family = await pod.in_memory_thread(lambda: pod.memory.read_page(scope, "family"))
    me = Viewer(pod.person.id)
    dead = [t for t in family.links
            if await pod.in_memory_thread(lambda t=t: pod.memory.view_page(scope, t, me)) is None]
    assert dead == [], f"Family still links to the deleted page(s) {dead}: {family.body!r}"
    assert family.body == "- Clara's birthday is on 3 June [1]\n\nSee also: [[Clara]]", family.body
    hits = await pod.in_memory_thread(lambda: pod.memory.search("gifts", scopes=[scope], mode="keyword"))
    assert not hits, hits
