"""Deleting a source cut short by a kill (the power goes) between its steps: the next ingest or nightly finishes it
from what the deletion recorded in its transaction, and loses nothing the deletion would have kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from wiki_engine import Item, Page, open_memory
from wiki_engine.pipeline import run_ingest, run_nightly

_ENV = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))


def _killed(code: str, *args: str) -> None:
    """Runs ``code`` in a process of its own, which memory's code kills (SIGKILL) midway."""
    done = subprocess.run([sys.executable, "-c", code, *args], env=_ENV, timeout=120, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def _files_holding(root: Path, word: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and word in p.read_bytes().lower())


_KILLED_BEFORE_A_SUMMARYS_CLAIMS_LEAVE = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.memory import Memory
Memory._drop_claims = lambda self, *_: os.kill(os.getpid(), signal.SIGKILL)  # the power goes here
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_sources([sys.argv[2]], again=True)  # as the Pod deletes the summaries that read a deleted message
"""


def _summary(mem, scope: str, text: str) -> str:
    [sid] = mem.add_items([Item(text=f"Summary of the conversation “Health”:\n- {text}", scope=scope, ts=1e9,
                                key="summary-c1-30", owner="alice", agent="helper")], source_ids=["summary-c1-30"])
    return sid


def test_a_summary_deletion_killed_before_its_claims_left_is_finished_even_once_the_summary_is_made_again(
        tmp_path) -> None:
    """A summary is deleted to be made again under the same id (a message it read was deleted, or the last exchange
    edited), so it was never recorded as deleted: after a kill before its claims left the page, no run ever took
    them off. The page kept "Alice has a custody hearing about Leo", every ingest showed it to the model as a page
    to rewrite, and once the summary was made again under its id the old claim looked validly cited."""
    root = tmp_path / "memory"
    scope = "private/alice"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("The dentist is Dr Okafor on Mill Street.", scope=scope)
        summ = _summary(mem, scope, "Alice has a court hearing about the custody of Leo on 9 March.")
        mem.write_page(Page("Family", scope, "people",
                            "- The dentist is Dr Okafor [1]\n- Alice has a custody hearing about Leo on 9 March [2]",
                            {1: keep, 2: summ}), author="agent:wiki-writer")
    _killed(_KILLED_BEFORE_A_SUMMARYS_CLAIMS_LEAVE, str(root), summ)
    with open_memory(root, embedder=None) as mem:
        assert mem.source_scope(summ) is None and "custody" in mem.read_page(scope, "family").body  # the kill's work
        assert _summary(mem, scope, "Alice walked the dog on Sunday.") == summ  # made again, under the same id
        run_ingest(mem, lambda batch: [])  # a model that writes nothing: the claim still goes
        assert mem.read_page(scope, "family").body == "- The dentist is Dr Okafor [1]"
        assert mem.search("custody hearing", scopes=[scope], mode="keyword") == []
        assert [h.id for h in mem.search("walked the dog", scopes=[scope], mode="keyword")] == [summ]
    assert _files_holding(root, b"custody") == []


_KILLED_AFTER_THE_PAGE_FILE = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.pages import PageStore
real = PageStore.write
def write(self, page):
    real(self, page)
    os.kill(os.getpid(), signal.SIGKILL)  # the page file lost the claim; its keyword index not yet told
PageStore.write = write
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


def test_a_kill_after_the_page_lost_the_claim_does_not_leave_it_in_keyword_search(tmp_path) -> None:
    """Killed after the page file was written without the deleted claim and before the keyword index took it: the
    next ingest looked only for pages still citing a deleted source, so keyword search found the page by the
    deleted words ("custody hearing") until the nightly rebuild."""
    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("The dentist is Dr Okafor on Mill Street.", scope="public")
        gone = mem.add_source("Ines has a court hearing about the custody of Leo on 9 March.", scope="public")
        run_ingest(mem, lambda b: [Page("Family", "public", "people",
                                        "- The dentist is Dr Okafor [1]\n- Ines has a custody hearing about Leo [2]",
                                        {1: keep, 2: gone})])
    _killed(_KILLED_AFTER_THE_PAGE_FILE, str(root), gone)
    with open_memory(root, embedder=None) as mem:
        assert "custody" not in mem.read_page("public", "family").body
        # the page change the kill left owed to the index is caught up as it opens (a dead writer's mark); the next
        # ingest, which also indexes again the pages a deletion owed claims, leaves it so
        assert mem.search("custody hearing", scopes=["public"], mode="keyword") == []
        run_ingest(mem, lambda batch: [])
        assert mem.search("custody hearing", scopes=["public"], mode="keyword") == []
        assert "page:public/family" in [h.id for h in mem.search("dentist Okafor", scopes=["public"], mode="keyword")]
    assert _files_holding(root, b"custody") == []


_KILLED_AS_THE_PAGE_IS_RETITLED = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.pages import PageStore
real = PageStore.write
def write(self, page):
    if page.title == "Home" and sys.argv[3] == "before":
        os.kill(os.getpid(), signal.SIGKILL)  # the power goes before the page's copy under its new title is written
    real(self, page)
    if page.title == "Home":
        os.kill(os.getpid(), signal.SIGKILL)  # or after: the copy is written, the page under the old title still there
PageStore.write = write
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


def _verified_page_titled_by(root: Path) -> str:
    with open_memory(root, embedder=None) as mem:
        gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                                  "The bins go out on Thursday night."))
        mem.write_page(Page("Zorblax fever and bins", "public", "home", "Bob was diagnosed by Dr Haas [1].\n\n"
                            "The green bin goes out on Thursday night, not Friday [2].", {1: gone, 2: kept},
                            verified=True), author="person:alice")
    return gone


def test_a_kill_while_a_verified_page_is_retitled_keeps_the_persons_corrections(tmp_path) -> None:
    """A verified page whose title named what only the deleted source said is kept under its category's name
    ("Home"): the page under the old title was deleted before its copy was written, so a kill in between deleted
    the person's own corrections ("not Friday") for good. Killed after the copy was written, the next run deletes
    the page under the old title; killed before, that page stays, without the deleted claim."""
    for when in ("before", "after"):
        root = tmp_path / when
        gone = _verified_page_titled_by(root)
        _killed(_KILLED_AS_THE_PAGE_IS_RETITLED, str(root), gone, when)
        with open_memory(root, embedder=None) as mem:
            run_ingest(mem, lambda batch: [])
            run_nightly(mem)
            pages, _ = mem.list_pages("public")
            assert len(pages) == 1 and "not Friday" in pages[0].body and pages[0].verified, [p.body for p in pages]
            assert "Haas" not in pages[0].body
            assert pages[0].title == ("Home" if when == "after" else "Zorblax fever and bins"), (when, pages[0].title)
            assert mem.stale_pages() == [f"page:public/{pages[0].slug}"]  # a model may still rewrite it
        assert _files_holding(root / "wiki", b"haas") == []


_KILLED_AFTER_THE_TITLED_PAGE_WENT = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.pages import PageStore
real = PageStore.delete
def delete(self, scope, slug):
    real(self, scope, slug)
    os.kill(os.getpid(), signal.SIGKILL)  # the page's file is gone, its catalog rows not yet
PageStore.delete = delete
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


def test_a_kill_after_a_titled_page_went_leaves_its_other_sources_in_the_inbox(tmp_path) -> None:
    """A page whose title named what only the deleted source said is deleted, and the sources it still cites wait in
    the inbox for the next ingest to write their facts again. The page went first: a kill in between left their
    facts on no page and out of the inbox for good (inbox, stale pages and pages all empty)."""
    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        gone, kept = (mem.add_source(t, scope="public") for t in ("Bob was diagnosed with zorblax fever by Dr Haas.",
                                                                  "The bins go out on Thursday night."))
        run_ingest(mem, lambda b: [Page("Zorblax fever and bins", "public", "home",
                                        "Bob was diagnosed by Dr Haas [1].\n\nThe bins go out on Thursday night [2].",
                                        {1: gone, 2: kept})])
        assert mem.inbox() == []
    _killed(_KILLED_AFTER_THE_TITLED_PAGE_WENT, str(root), gone)
    with open_memory(root, embedder=None) as mem:
        assert mem.read_page("public", "zorblax-fever-and-bins") is None
        assert mem.inbox() == [kept]
        written: list[list[str]] = []
        run_ingest(mem, lambda batch: written.append([s.id for s in batch.sources]) or [
            Page("Bins", "public", "home", "The bins go out on Thursday night [1].", {1: kept})])
        assert written == [[kept]] and mem.inbox() == [] and mem.stale_pages() == []
        assert [p.title for p in mem.list_pages("public")[0]] == ["Bins"]
        assert mem.search("zorblax", scopes=["public"], mode="keyword") == []


def test_a_memory_from_before_deletions_recorded_their_pages_opens_and_finishes_one_cut_short(tmp_path) -> None:
    """A person's memory.db from before this version: it takes the new tables when opened, and a deletion a kill cut
    short under the old version (the source in deleted_ids, the page still citing it) is finished as before."""
    from wiki_engine.catalog import MIGRATIONS

    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("The dentist is Dr Okafor on Mill Street.", scope="public")
        gone = mem.add_source("Ines has a court hearing about the custody of Leo on 9 March.", scope="public")
        mem.write_page(Page("Family", "public", "people",
                            "- The dentist is Dr Okafor [1]\n- Ines has a custody hearing about Leo [2]",
                            {1: keep, 2: gone}), author="agent:wiki-writer")
    db = sqlite3.connect(root / "memory.db")  # the old version's deletion, killed before the claim left the page
    new = [name for name, _ in MIGRATIONS if name >= "0008"]
    db.executescript("DROP TABLE claims_to_drop; DROP TABLE pages_to_delete; ALTER TABLE inbox DROP COLUMN no_page; "
                     "ALTER TABLE watermarks DROP COLUMN seq; ALTER TABLE forgotten DROP COLUMN upto; "
                     "ALTER TABLE deleted_by_person DROP COLUMN discarded; ALTER TABLE deleted_by_person DROP COLUMN owner;")
    db.executemany("DELETE FROM schema_migrations WHERE name=?", [(n,) for n in new])
    db.execute("DELETE FROM sources WHERE id=?", (gone,))
    db.execute("DELETE FROM citations WHERE source_id=?", (gone,))
    db.execute("INSERT INTO deleted_ids VALUES (?, 0)", (gone,))
    db.execute("INSERT INTO stale_pages VALUES ('public', 'family', 'a cited source was deleted', 0)")
    db.commit()
    db.close()
    with open_memory(root, embedder=None) as mem:
        assert {r[0] for r in mem.catalog.query("SELECT name FROM schema_migrations")} >= set(new)
        run_nightly(mem)
        assert mem.read_page("public", "family").body == "- The dentist is Dr Okafor [1]"
        mem.delete_source(keep)  # and a deletion of this version records what it owes, and clears it when done
        assert mem.catalog.query("SELECT * FROM claims_to_drop") == []
        assert mem.catalog.query("SELECT * FROM pages_to_delete") == []


_KILLED_BEFORE_THE_CLAIMS_LEAVE = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.memory import Memory
Memory._drop_claims = lambda self, *_: os.kill(os.getpid(), signal.SIGKILL)  # the power goes here
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


def test_a_page_a_finished_deletion_empties_is_unlinked_from_the_other_pages(tmp_path) -> None:
    """The person deleted the only note the "Ines" page cited; the power went before its claim left the page. The
    next ingest finished the deletion and deleted the emptied page, but the "Family" page still linked to it: a click
    opened "No page here yet", and "[[Ines]]" kept saying her name was in memory. Now the links go as the deletion
    itself takes them off."""
    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("The dentist is Dr Okafor on Mill Street.", scope="public")
        gone = mem.add_source("Ines has a court hearing about the custody of Leo on 9 March.", scope="public")
        run_ingest(mem, lambda b: [Page("Ines", "public", "people", "Ines has a custody hearing [1].", {1: gone}),
                                   Page("Family", "public", "people",
                                        "- The dentist is Dr Okafor [1]\n- See [[Ines]]\n\n"
                                        "| Who | Dentist |\n|---|---|\n| [[Ines]] | Dr Okafor [1] |", {1: keep})])
    _killed(_KILLED_BEFORE_THE_CLAIMS_LEAVE, str(root), gone)
    with open_memory(root, embedder=None) as mem:
        assert "[[Ines]]" in mem.read_page("public", "family").body  # the kill came before any of it
        run_ingest(mem, lambda batch: [])
        assert mem.read_page("public", "ines") is None
        assert mem.read_page("public", "family").body == ("- The dentist is Dr Okafor [1]\n\n"
                                                          "| Who | Dentist |\n|---|---|\n| | Dr Okafor [1] |")
        assert mem.search("Ines", scopes=["public"], mode="keyword") == []
