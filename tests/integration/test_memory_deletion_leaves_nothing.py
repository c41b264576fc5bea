"""Deleting a source leaves nothing pointing at what went: no citation written before a colon, no link to a page
deleted for having nothing left to say."""

from __future__ import annotations

import json
import re

from tests.helpers.fake_model import Text


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
