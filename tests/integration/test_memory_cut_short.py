"""Memory cut short (Hearth killed by a power cut or kill -9 in the middle of a write) or its folder in a bad state
(read-only, memory.db damaged in its middle): what the person finds afterwards. Found by review; each failed before."""
from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import wiki_engine
from tests.integration.test_cli import cli, setup_agent
from tests.integration.test_memory_pod import killed_midway
from tests.integration.test_storage import read_only
from wiki_engine import Page
from wiki_engine.catalog import CatalogDamaged

# A child process that changes the page "Boiler" of the scope argv[2] as the window does, and is killed (SIGKILL) the
# moment the page's file is written or deleted: before the search index is told.
_PAGE_CHANGE_KILLED = """
import asyncio, os, signal, sys
from runtime_host.pod import Pod
from wiki_engine.pages import PageStore
from wiki_engine import Page
for name in ("write_text", "delete"):
    def killed(self, *a, real=getattr(PageStore, name), **k):
        real(self, *a, **k)
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(PageStore, name, killed)
me = Pod(sys.argv[1]).first_person()
mem, scope = me.memory, sys.argv[2]
def change():
    if sys.argv[3] == "save":  # Wiki -> Edit -> Save
        page = mem.read_page(scope, "Boiler")
        mem.write_page(Page(page.title, scope, page.category, "- Service every November with Warmflow [1]",
                            page.citations, verified=True), author="person:me")
    else:  # Wiki -> Delete
        mem.delete_page(scope, "Boiler")
asyncio.run(me.in_memory_thread(change))
"""


async def _page_words(pod, words: str) -> list[str]:
    return [h.title for h in await pod.memory_search(words, mode="keyword") if h.kind == "page"]


@pytest.mark.parametrize("change", ["save", "delete"])
async def test_a_page_changed_just_before_a_kill_is_searched_as_its_file_says_after_the_restart(pod, home,
                                                                                                change) -> None:
    """A correction saved (or a page deleted) and Hearth killed after the page file changed, before the keyword
    index took it: after the restart search, typeahead and Ask memory matched and quoted the old words until the
    nightly pass, and the new ones found nothing. The index now catches up when it is opened."""
    scope = f"private/{pod.person.id}"
    mem = pod.memory
    s1 = await pod.in_memory_thread(lambda: mem.add_source("The boiler service is every October with Heatwise.",
                                                           scope=scope))
    await pod.in_memory_thread(lambda: mem.write_page(Page("Boiler", scope, "home",
                                                           "- Service every October with Heatwise [1]", {1: s1}),
                                                      author="agent:wiki-writer"))
    assert await _page_words(pod, "Heatwise") == ["Boiler"]
    again = await killed_midway(pod, home, _PAGE_CHANGE_KILLED, scope, change)
    try:
        page = await again.in_memory_thread(lambda: again.memory.read_page(scope, "Boiler"))
        assert (page is None) == (change == "delete") and (page is None or "Warmflow" in page.body)  # the file
        assert await _page_words(again, "Heatwise October") == []
        assert await _page_words(again, "Warmflow November") == ([] if change == "delete" else ["Boiler"])
        typed = await again.in_memory_thread(lambda: again.memory.typeahead("Boil", scopes=[scope]))
        assert [h.title for h in typed if h.kind == "page"] == ([] if change == "delete" else ["Boiler"])
    finally:
        await asyncio.wait_for(again.close(), 20)


async def test_a_clean_close_owes_the_index_no_page(pod, home) -> None:
    """The catch-up is for a writer that died with a page owed: every way a page file changes (written, verified,
    deleted) settles what it owes, so a memory closed cleanly is not read back into its index at the next start."""
    scope = f"private/{pod.person.id}"
    mem = pod.memory
    sid = await pod.in_memory_thread(lambda: mem.add_source("The bins go out on Tuesday.", scope=scope))
    for title in ("Bins", "Recycling"):
        await pod.in_memory_thread(lambda title=title: mem.write_page(
            Page(title, scope, "home", "- Bins out on Tuesday [1]", {1: sid}), author="agent:w"))
    await pod.in_memory_thread(lambda: mem.set_verified(scope, "Bins"))
    await pod.in_memory_thread(lambda: mem.delete_page(scope, "Recycling"))
    await pod.close()
    (meta,) = (home / "memory" / "index").rglob("meta.db")
    con = sqlite3.connect(meta)
    try:
        assert con.execute("SELECT key FROM info WHERE key LIKE 'page_pending|%'").fetchall() == []
    finally:
        con.close()


_APPROVE_KILLED = """
import asyncio, os, signal, sys
from runtime_host.pod import Pod
from wiki_engine.pages import PageStore
real = PageStore.write_text
def killed(self, *a, **k):
    real(self, *a, **k)
    os.kill(os.getpid(), signal.SIGKILL)  # the page is written; the proposal not yet marked approved
PageStore.write_text = killed
asyncio.run(Pod(sys.argv[1]).first_person().memory_approve_proposal(int(sys.argv[2])))
"""


async def test_an_approval_cut_short_by_a_kill_is_approved_not_left_to_be_refused_or_rejected(pod, home) -> None:
    """Approving an agent's change to a verified page, Hearth killed after the page was written and before the
    proposal was marked approved: after the restart the change was on the page and the proposal still waited;
    Approve refused it ("The page changed after proposal #1 was made"), and Reject left the "rejected" change on the
    page. Now the change on the page is the approval, and search finds its words."""
    scope = f"private/{pod.person.id}"
    mem = pod.memory
    s1 = await pod.in_memory_thread(lambda: mem.add_source("The boiler service is every October.", scope=scope))
    s2 = await pod.in_memory_thread(lambda: mem.add_source("The boiler engineer is Heatwise.", scope=scope))
    await pod.in_memory_thread(lambda: mem.write_page(Page("Boiler", scope, "home", "- Service every October [1]",
                                                           {1: s1}), author="person:me"))
    await pod.in_memory_thread(lambda: mem.set_verified(scope, "Boiler"))
    res = await pod.in_memory_thread(lambda: mem.write_page(Page(
        "Boiler", scope, "home", "- Service every October [1]\n- Engineer: Heatwise [2]", {1: s1, 2: s2}),
        author="agent:wiki-writer"))
    assert res.status == "proposed"
    again = await killed_midway(pod, home, _APPROVE_KILLED, str(res.proposal_id))
    try:
        page = await again.in_memory_thread(lambda: again.memory.read_page(scope, "Boiler"))
        assert "Heatwise" in page.body and page.verified
        assert await again.memory_proposals() == []
        assert [p.id for p in await again.in_memory_thread(lambda: again.memory.proposals("approved"))] == [
            res.proposal_id]
        assert await _page_words(again, "engineer Heatwise") == ["Boiler"]
    finally:
        await asyncio.wait_for(again.close(), 20)


async def test_approving_or_rejecting_a_proposal_whose_change_is_on_the_page_says_so(pod) -> None:
    """The same, met by a window whose list of proposals was read before the restart: Approve is done (nothing to
    write), Reject says the change stays approved rather than marking it rejected while it stays on the page."""
    scope = f"private/{pod.person.id}"
    mem = pod.memory
    sid = await pod.in_memory_thread(lambda: mem.add_source("The boiler engineer is Heatwise.", scope=scope))
    await pod.in_memory_thread(lambda: mem.write_page(Page("Boiler", scope, "home", "- Boiler [1]", {1: sid}),
                                                      author="person:me"))
    await pod.in_memory_thread(lambda: mem.set_verified(scope, "Boiler"))
    ids = []
    for body in ("- Engineer: Heatwise [1]", "- Heatwise services it [1]"):
        res = await pod.in_memory_thread(lambda body=body: mem.write_page(Page("Boiler", scope, "home", body,
                                                                                {1: sid}), author="agent:w"))
        ids.append(res.proposal_id)
    for pid in ids:  # what the approval cut short had written
        text = mem.catalog.query("SELECT proposed_text FROM proposals WHERE id=?", (pid,))[0][0]
        mem.pages.write_text(wiki_engine.scopes.Scope.parse(scope), "boiler", text)
        if pid == ids[0]:
            page = await pod.in_memory_thread(lambda pid=pid: mem.approve_proposal(pid))
            assert "Engineer: Heatwise" in page.body
        else:
            with pytest.raises(ValueError, match="on its page already"):
                await pod.in_memory_thread(lambda pid=pid: mem.reject_proposal(pid))
    assert [p.id for p in mem.proposals("approved")] == ids and mem.proposals() == []


def _memory_of_many_notes(home: Path) -> str:
    assert cli(home, "memory", "search", "peanuts").returncode == 0
    from runtime_host.pod import Pod

    scope = Pod(home).first_person().person_scopes()[1]
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem:
        mem.add_items([wiki_engine.Item(text=f"Note {n}: the blue car needs part {n} from the garage.", scope=scope,
                                        ts=1_700_000_000 + n, kind="note", key=f"k{n}") for n in range(2000)])
    return scope


def test_a_catalog_damaged_in_its_middle_is_said_with_what_to_do_when_a_command_meets_it(home) -> None:
    """memory.db with one page in its middle written over (a disk error, a bad sector): its header and schema are
    whole, so memory opened, and the command that read that page printed "error: database disk image is
    malformed", naming no file, saying nothing of a backup or of the notes being safe."""
    scope = _memory_of_many_notes(home)
    db = home / "memory" / "memory.db"
    con = sqlite3.connect(db)
    size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='sources'").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * size: root * size] = b"\xa5" * size  # the sources table's first page, read after opening
    db.write_bytes(bytes(data))
    for f in (home / "memory").glob("memory.db-*"):
        f.unlink()
    for action in (["search", "garage"], ["verify"]):
        r = cli(home, "memory", *action)
        assert r.returncode != 0 and "Traceback" not in r.stderr, (action, r.stderr[-800:])
        said = r.stderr
        assert str(db) in said and "damaged" in said and "backup" in said and "untouched" in said, (action, said)
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem, pytest.raises(CatalogDamaged, match="backup"):
        mem.search("garage", scopes=[scope])


def test_a_read_only_memory_folder_is_named_with_what_to_do(home, fake_model) -> None:
    """Only memory's folder read-only (restored from a backup as another user, a `sudo` run that left it owned by
    root), the rest of the data folder writable: every memory command printed "error: unable to open database
    file", naming no folder."""
    setup_agent(home, fake_model.base_url)
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem:
        mem.add_source("Clara's birthday is on 3 June.", scope="public")
    for f in (home / "memory").glob("memory.db-*"):
        f.unlink()  # closed cleanly: nothing in its log
    with read_only(home / "memory"):
        for action in (["search", "birthday"], ["pages"], ["verify"]):
            r = cli(home, "memory", *action)
            assert r.returncode != 0 and "Traceback" not in r.stderr, (action, r.stderr[-800:])
            assert f"cannot write to its data folder {home / 'memory'}" in r.stderr and "chmod" in r.stderr, (
                action, r.stderr)
