"""Which of a person's pages the wiki writer is shown, and how: the pages a new note is about, once the person has
more pages than the writer is shown, and a page whose first line alone is past what is shown of a page. Each check
is of what the writer was sent (the request the fake model server received) and of the wiki the person then reads.
Each test failed on the code before it."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.fake_model import Text

_SHOWN = re.compile(r"Existing page '([^'\n]*)' in (\S+) \([^)\n]*\):\n(.*?)(?:\nIts citations: ([^\n]*))?"
                    r"(?=\nExisting page |\nPage to rewrite |\Z)", re.S)


def _scope(pod) -> str:
    return f"private/{pod.person.id}"


def _shown(prompt: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Title -> (the text shown of the page, its citation labels) of each existing page the prompt shows."""
    return {m.group(1): (m.group(3), dict(re.findall(r"\[(\d+)\] = (P\d+-\d+)", m.group(4) or "")))
            for m in _SHOWN.finditer(prompt)}


def _writer_of_what_it_sees(new_title: str, *, copy: bool = True):
    """A writer that writes only from what it is shown: the newest note's fact goes on the shown page whose title the
    note names first (``new_title``, a page of its own, when it was shown none), the page's shown text copied above
    it (``copy``), and it links the other shown pages the note names."""

    def write(req) -> Text:
        prompt = req.last_user
        label, scope, fact = list(re.finditer(r"- (S\d+) \(scope (\S+);[^\n]*?\): (.*)", prompt))[-1].groups()
        shown = _shown(prompt)
        named = sorted((t for t in shown if t in fact), key=fact.index)
        title = named[0] if named else new_title
        text, cites = shown.get(title, ("", {}))
        new = max((int(n) for n in cites), default=0) + 1
        links = "".join(f" [[{t}]]" for t in named if t != title)
        body = (text + "\n" if copy and text else "") + f"- {fact} [{new}]{links}"
        return Text(json.dumps([{"title": title, "scope": scope, "category": "family", "body": body,
                                 "citations": {**(cites if copy else {}), str(new): label}}]))

    return write


async def _sixty_pages(pod, zoe: str = "- Zoe plays the cello [1]\n- Zoe is eight [1]") -> str:
    """A person's 60 pages: 58 of errands (before "Grandma Rosa" and "Zoe" by name), Grandma Rosa's and Zoe's."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("Our errands, one a page, and the family.",
                                                                   scope=scope))
    pages = [Page(f"Errand {n:02}", scope, "home", f"- Errand {n} is done on Saturdays [1]", {1: sid})
             for n in range(1, 59)]
    pages += [Page("Grandma Rosa", scope, "family", "- Grandma Rosa lives on Rua das Flores [1]", {1: sid}),
              Page("Zoe", scope, "family", zoe, {1: sid})]
    await pod.in_memory_thread(lambda: pod.memory.write_pages(pages, author="agent:wiki-writer"))
    return scope


async def test_a_note_about_a_page_past_the_first_fifty_goes_on_that_page(pod, script, fake_model) -> None:
    """The writer was shown a scope's first 50 pages by name: told about Zoe's school, with Zoe's page the 60th, it
    never saw that page and wrote a second page about Zoe, linking nothing (Grandma Rosa's page, 59th, unseen too)."""
    scope = await _sixty_pages(pod)
    await pod.in_memory_thread(lambda: pod.memory.add_source(
        "Zoe's school, Escola Azul, is two streets from Grandma Rosa's flat.", scope=scope))
    script([_writer_of_what_it_sees("Zoe's school")])
    out = await pod.memory_ingest()
    shown = _shown(fake_model.requests[-1].last_user)
    assert {"Zoe", "Grandma Rosa"} <= set(shown), sorted(shown)
    assert len(shown) == 50  # the cap holds: pages that matter first, then the others up to it
    assert out["written"] == [f"page:{scope}/zoe"], out
    pages = {p.title: p for p in pod.memory.list_pages(scope)[0]}
    assert len(pages) == 60 and "Zoe's school" not in pages
    zoe = pages["Zoe"]
    assert zoe.body.startswith("- Zoe plays the cello [1]\n- Zoe is eight [1]\n- Zoe's school, Escola Azul,"), zoe.body
    assert zoe.links == ["Grandma Rosa"]


async def test_a_page_found_by_its_words_is_shown_though_the_note_names_no_title(pod, script, fake_model) -> None:
    """A note naming no page's title ("Escola Azul" is on Zoe's page): memory's own search of the note finds the page,
    and the writer is shown it; it was past the first 50 by name."""
    scope = await _sixty_pages(pod, zoe="- Zoe plays the cello [1]\n- Zoe goes to Escola Azul [1]")
    await pod.in_memory_thread(lambda: pod.memory.add_source("The term at Escola Azul starts on 9 September.",
                                                             scope=scope))
    script([_writer_of_what_it_sees("Escola Azul")])
    await pod.memory_ingest()
    assert "Zoe" in _shown(fake_model.requests[-1].last_user)


_LONG = " ".join(f"Clara's cousin number {n} loves orchids and comes to stay every spring [1]." for n in range(1, 31))


@pytest.mark.parametrize("copy", [True, False], ids=["writer copies what it sees", "writer leaves the line"])
async def test_a_page_whose_first_line_is_past_what_is_shown_keeps_it_once_and_whole(pod, script, fake_model,
                                                                                    copy) -> None:
    """A page of one line of 2,340 characters is shown cut at 1,500, and put back whole after the writer's draft:
    a writer copying what it was shown (as it is told to keep a page's lines) left the page with the line's first
    1,500 characters twice, the second time cut mid-sentence."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's cousins love orchids.", scope=scope))
    await pod.in_memory_thread(lambda: pod.memory.write_page(Page("Clara", scope, "family", _LONG, {1: sid}),
                                                             author="agent:wiki-writer"))
    new = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's birthday is on 9 May.", scope=scope))
    script([_writer_of_what_it_sees("Clara", copy=copy)])
    out = await pod.memory_ingest()
    prompt = fake_model.requests[-1].last_user
    text, _ = _shown(prompt)["Clara"]
    assert _LONG[:1200] in text and _LONG not in text  # shown cut
    assert "the line above is cut here" in text  # and the writer is told so, and that the page keeps it whole
    assert out["written"] == [f"page:{scope}/clara"], out
    page = pod.memory.read_page(scope, "Clara")
    claims = [re.sub(r"\[(\d+)\]", lambda m: f"[{page.citations[int(m.group(1))]}]", line)
              for line in page.body.split("\n") if line.strip()]
    assert claims == [_LONG.replace("[1]", f"[{sid}]"), f"- Clara's birthday is on 9 May. [{new}]"], page.body


async def test_a_named_page_is_shown_beside_many_pages_to_rewrite(pod, script, fake_model) -> None:
    """The pages to rewrite (stale: a note they cite was deleted) are shown under their own heading, and they also
    came first among the 50 existing pages shown, each taking a place for nothing: with the club's handbook deleted
    under 50 errand pages, the writer was shown no other page, not even Zoe's that the new note names, and wrote a
    second page about Zoe. The 50 are pages not already shown to rewrite."""
    from wiki_engine import Page

    scope = _scope(pod)
    pod.set_role_model("ingest", "fake/writer-1")

    def fifty_errands_and_zoe() -> str:
        mem = pod.memory
        doc = mem.add_source("The club's handbook: what each errand needs.", scope=scope)
        own = [mem.add_source(f"Errand {n} is done on Saturdays.", scope=scope) for n in range(50)]
        fam = mem.add_source("Zoe plays the cello and is eight.", scope=scope)
        pages = [Page(f"Errand {n:02}", scope, "home", f"- Errand {n} is done on Saturdays [1]\n- It needs the "
                      f"handbook [2]", {1: own[n], 2: doc}) for n in range(50)]
        mem.write_pages([*pages, Page("Zoe", scope, "family", "- Zoe plays the cello [1]", {1: fam})],
                        author="agent:wiki-writer")
        with mem.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM inbox")
        return doc

    doc = await pod.in_memory_thread(fifty_errands_and_zoe)
    await pod.memory_delete_source(doc)  # the handbook is deleted: the 50 errand pages wait to be written again
    assert len(await pod.in_memory_thread(pod.memory.stale_pages)) == 50
    await pod.in_memory_thread(lambda: pod.memory.add_source("Zoe starts at Hillside school in September.",
                                                             scope=scope))
    script([_writer_of_what_it_sees("Zoe's school")])
    out = await pod.memory_ingest()
    prompt = fake_model.requests[-1].last_user
    assert len(re.findall(r"^Page to rewrite ", prompt, re.M)) == 50  # each shown once, to rewrite
    assert "Zoe" in _shown(prompt), f"existing pages shown: {sorted(_shown(prompt))}"
    assert out["written"] == [f"page:{scope}/zoe"], out
    assert "Zoe's school" not in {p.title for p in pod.memory.list_pages(scope)[0]}
