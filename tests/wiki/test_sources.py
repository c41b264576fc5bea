"""Sources: deterministic rendering, immutability, sha256 names, and verify() finding tampering."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from wiki_engine import Item, Memory, SourceUnreadable, Viewer, render_item


def test_rendering_is_deterministic_and_names_the_file(mem: Memory) -> None:
    item = Item(text="Bob is allergic to peanuts.\r\n", scope="private/alice", ts=1767225600, kind="chat", key="m1", author="Bob")
    assert render_item(item) == render_item(Item(**{**item.__dict__}))
    sid = mem.add_items([item])[0]
    rec = mem.get_source(sid)
    assert rec.id == hashlib.sha256(rec.markdown.encode()).hexdigest()
    path = mem.sources.path_for(mem.index("private/alice") and __import__("wiki_engine").Scope.parse("private/alice"), rec.sha)
    assert path.read_bytes() == render_item(item).encode()
    assert "\r" not in rec.markdown and rec.text == "Bob is allergic to peanuts."
    assert "private" in path.parts and "alice" in path.parts


def test_sources_are_read_only_and_never_replaced(mem: Memory) -> None:
    sid = mem.add_source("The boiler service is due in October.", scope="public", source_id="note-1", ts=1.0)
    rec = mem.get_source(sid)
    path = next((mem.root / "sources" / "public").rglob(f"{rec.sha}.md"))
    assert not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    # The same item again is the same source, not a second one.
    assert mem.add_source("The boiler service is due in October.", scope="public", source_id="note-1", ts=1.0) == sid
    assert mem.count_sources() == 1
    with pytest.raises(ValueError, match="immutable"):
        mem.add_source("The boiler service is due in November.", scope="public", source_id="note-1", ts=2.0)
    assert mem.get_source(sid).text == "The boiler service is due in October."


def test_verify_finds_modified_and_missing_sources(mem: Memory) -> None:
    a = mem.add_source("Water stopcock is under the kitchen sink.", scope="public")
    b = mem.add_source("I take levothyroxine every morning.", scope="private/alice")
    c = mem.add_source("Spare key is with Mrs Okafor.", scope="public")
    assert mem.verify() == []
    pa = mem.sources.path_for(__import__("wiki_engine").Scope.parse("public"), mem.get_source(a).sha)
    os.chmod(pa, 0o644)
    pa.write_text(pa.read_text().replace("kitchen sink", "garden shed"))
    pb = mem.sources.path_for(__import__("wiki_engine").Scope.parse("private/alice"), mem.get_source(b).sha)
    os.chmod(pb, 0o644)
    pb.unlink()
    bad = {(t.sha, t.problem) for t in mem.verify()}
    assert bad == {(mem.get_source(a).sha, "modified"), (b, "missing")}
    assert c not in {t.sha for t in mem.verify()}
    with pytest.raises(SourceUnreadable, match=re.escape(f"is missing from disk: {pb}. Put the file back from a backup")):
        mem.get_source(b)
    pa.write_bytes(pa.read_bytes().replace(b"garden", "gárden".encode("latin-1")))  # no longer UTF-8
    with pytest.raises(SourceUnreadable, match=re.escape(f"was modified on disk after it was stored: {pa}. Put the file back")):
        mem.get_source(a)


def test_bad_scope_and_importance_are_refused_with_a_clear_message(mem: Memory) -> None:
    with pytest.raises(ValueError, match="private/<person>"):
        mem.add_source("x y z w", scope="private/../bob")
    with pytest.raises(ValueError, match="between 0 and 1"):
        mem.add_source("x y z w", scope="public", importance=3)


@pytest.mark.parametrize("embedder", ["static", "minilm"])
def test_text_with_lone_surrogates_is_stored_found_and_cited_instead_of_failing(tmp_path, embedder: str) -> None:
    """A model's JSON may hold "\\ud800" escapes and a mail decoder's surrogateescape leaves bytes as lone
    surrogates: such a str cannot be written as UTF-8. Memory stores it with U+FFFD in their place; nothing is lost
    and no path (add, remember, key, search, typeahead, page, citation) raises an encoding error."""
    from wiki_engine import CitationError, Page, open_memory

    with open_memory(tmp_path / "m", embedder=embedder) as mem:
        sid = mem.add_source("The boat is red \udcff and moored at pier 4.", scope="private/alice", source_id="k\ud800",
                             ts=1.0)
        rid = mem.remember("Alice's locker code is \ud83d on the blue card.", person="alice", agent="helper",
                           scope="private/alice")
        mem.add_source("Bob's garage is full of paint tins.", scope="private/alice", ts=2.0)
        assert mem.get_source(sid).text == "The boat is red \ufffd and moored at pier 4."
        assert "\ufffd on the blue card" in mem.get_source(rid).text
        assert mem.add_source("The boat is red \udcff and moored at pier 4.", scope="private/alice", source_id="k\ud800",
                              ts=1.0) == sid  # the same item again is the same source
        for mode in ("hybrid", "keyword", "meaning"):
            hits = mem.search("boat \ud800 moored", scopes=["private/alice"], k=3, mode=mode)
            assert hits and hits[0].id == sid, mode
        assert [h.id for h in mem.search("locker \udcff code", scopes=["private/alice"], k=1)] == [rid]
        assert sid in [h.id for h in mem.typeahead("boa\ud800", scopes=["private/alice"])]
        res = mem.write_page(Page(title="Boat \ud800", scope="private/alice", category="things\udcff",
                                  body="Red, at pier 4 \udcff [1].", citations={1: sid}), author="agent:writer")
        assert res.status == "written"
        page = mem.read_page("private/alice", "Boat \ufffd")
        assert page is not None and page.body == "Red, at pier 4 \ufffd [1]." and page.citations == {1: sid}
        with pytest.raises(CitationError):  # a made-up id with a surrogate is refused like any unknown id
            mem.write_page(Page(title="Ghost", scope="private/alice", category="x", body="Boo [1].",
                                citations={1: "nope\ud800"}), author="agent:writer")
        assert mem.verify() == []


def _files_holding(root, secret: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and secret in p.read_bytes().lower())


def test_a_deleted_or_forgotten_text_is_in_no_file_of_memory(tmp_path) -> None:
    """Deleting a source, or forgetting a person, leaves their words in no file under memory's folder: not in a
    database's free pages, not in its write-ahead log, not in the title index, not in the earlier text of a page
    that cited it (they used to stay until the space happened to be reused). Another person's memory is untouched."""
    from wiki_engine import open_memory

    root = tmp_path / "m"
    with open_memory(root) as mem:
        for i in range(40):
            mem.add_source(f"Alice: The garden bench number {i} needs paint.", scope="private/alice", ts=1e9 + 60 * i)
        sid = mem.add_source("Alice: My bank PIN is quokka7731, keep it safe.", scope="private/alice", ts=1e9 + 2400)
        gate = mem.add_source("Alice: And the bench by the gate is fine.", scope="private/alice", ts=1e9 + 2460)
        mem.add_source("Alice: My locker code is wombat5521.", scope="private/alice", ts=1e9 + 9e5)
        mem.add_source("Bob: My bike lock code is numbat9043.", scope="private/bob", ts=1e9)
        from wiki_engine import Page

        mem.write_page(Page(title="Bench", scope="private/alice", category="money",
                            body="Alice's PIN is quokka7731 [1].\n\nThe bench by the gate is fine [2].",
                            citations={1: sid, 2: gate}), author="agent:writer")
        mem.flush()
        assert _files_holding(root, b"quokka7731") and _files_holding(root, b"wombat5521")
        mem.delete_source(sid)
        assert _files_holding(root, b"quokka7731") == []
        page = mem.read_page("private/alice", "Bench")
        assert page is not None and "gate is fine" in page.body  # the claim left the page, the rest stayed
        assert mem.search("quokka7731 PIN", scopes=Viewer("alice"), mode="keyword") == []
        mem.forget_person("alice")
        assert _files_holding(root, b"wombat5521") == []
        assert mem.search("bike lock code", scopes=Viewer("bob"), k=1)
    assert _files_holding(root, b"quokka7731") == [] and _files_holding(root, b"wombat5521") == []
    assert _files_holding(root, b"numbat9043")


_CRASH_AT_COMMIT = """
import os, signal, sys
import wiki_engine
from wiki_engine.index import ScopeIndex

mem = wiki_engine.open_memory(sys.argv[1], embedder=None)
ScopeIndex.commit = lambda self: os.kill(os.getpid(), signal.SIGKILL)  # the power goes as the keywords are written
if sys.argv[2] == "add":
    mem.add_source("Alice: The zebra lives at the quokka house.", scope="private/alice", ts=1e9 + 9e5)
else:
    mem.delete_source(sys.argv[3])
"""


def test_a_crash_between_storing_and_the_keyword_index_loses_nothing_and_keeps_no_deleted_text(tmp_path) -> None:
    """A real process killed after memory stored a source (or removed one) but before the keyword index took it:
    on reopening, the stored source was in the catalog yet found by no keyword search until nightly rebuilt the
    index, and the removed one's words stayed in the keyword index's files."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine import open_memory

    root = tmp_path / "m"
    with open_memory(root, embedder=None) as mem:
        for i in range(40):
            mem.add_source(f"Alice: The garden bench number {i} needs paint.", scope="private/alice", ts=1e9 + 60 * i)
        secret = mem.add_source("Alice: My bank PIN is quokka7731, keep it safe.", scope="private/alice", ts=1e9 + 2400)
    script = tmp_path / "crash.py"
    script.write_text(_CRASH_AT_COMMIT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for args in (["add"], ["delete", secret]):
        done = subprocess.run([sys.executable, str(script), str(root), *args], env=env, timeout=120)
        assert done.returncode == -signal.SIGKILL
    with open_memory(root, embedder=None) as mem:
        hits = mem.search("zebra quokka house", scopes=Viewer("alice"), k=3, mode="keyword")
        assert hits and "zebra lives" in hits[0].snippet
        assert len(mem.search("garden bench paint", scopes=Viewer("alice"), k=50, mode="keyword")) == 40
        assert mem.search("quokka7731 PIN", scopes=Viewer("alice"), mode="keyword") == []
    assert _files_holding(root, b"quokka7731") == []


_KILLED_WRITING = """
import os, signal, sys
import wiki_engine.pages as pages
from wiki_engine import Page, open_memory
from wiki_engine.pipeline import run_ingest
where, keep, gone = sys.argv[2:5]
if where == "after the page file":  # the file is written, the catalog not yet told what it cites
    real = pages.PageStore.write_text
    def write_text(self, *a):
        real(self, *a)
        os.kill(os.getpid(), signal.SIGKILL)
    pages.PageStore.write_text = write_text
else:  # the new page, or a new source, is in its temporary file, not yet renamed into place
    real_replace, into = os.replace, "/sources/" if where == "before a source's rename" else "/wiki/"
    def replace(src, dst, *a, **k):
        if into in str(dst):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *a, **k)
    os.replace = replace
with open_memory(sys.argv[1], embedder=None) as mem:
    if where == "before a source's rename":
        mem.add_source("Alice: the gate code is okapi6138.", scope="private/alice")
    run_ingest(mem, lambda batch: [Page("Household", "private/alice", "home",
        "- The dentist is Dr Okafor on Mill Street [1]\\n- The safe combination is 4417-2291 [2]", {1: keep, 2: gone})])
"""


@pytest.mark.parametrize("where", ["after the page file", "before the page's rename", "before a source's rename"])
@pytest.mark.parametrize("then", ["ingest", "nightly"])
def test_a_write_killed_midway_keeps_no_words_of_a_source_deleted_after(tmp_path, where, then) -> None:
    """An ingest killed just after it wrote a page (before the catalog learnt what the page cites): deleting a source
    the page cited after the restart left its claim on the page for good ("The safe combination is 4417-2291"),
    as deleting looks for claims by the catalog. Killed before the page's rename, the page's text stayed in a
    temporary file nothing ever removed, as did a source's killed while it was being stored (in no catalog, so no
    one could delete it). Now neither outlives the next ingest or nightly run."""
    from wiki_engine import open_memory
    from wiki_engine.pipeline import run_ingest, run_nightly

    root = tmp_path / "m"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("Alice: The dentist is Dr Okafor on Mill Street.", scope="private/alice")
        gone = mem.add_source("Alice: The safe combination is 4417-2291.", scope="private/alice")
        mem.add_source("Bob: the shed code is 4417-2291 too.", scope="private/bob")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITING, str(root), where, keep, gone], env=env,
                          timeout=120, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    left = b"okapi6138" if where == "before a source's rename" else b"4417-2291"
    assert _files_holding(root / ("sources" if left == b"okapi6138" else "wiki"), left)  # what the killed run left
    with open_memory(root, embedder=None) as mem:
        mem.delete_source(gone)
        run_nightly(mem) if then == "nightly" else run_ingest(mem, lambda batch: [])
        page = mem.read_page("private/alice", "household")
        assert page is None or ("4417" not in page.body and "Dr Okafor" in page.body)
        assert mem.search("safe combination 4417", scopes=Viewer("alice"), mode="keyword") == []
        assert mem.search("shed code", scopes=Viewer("bob"), mode="keyword")  # Bob's own note stays
    assert _files_holding(root / "wiki", b"4417-2291") == [] and _files_holding(root, b"okapi6138") == []


def test_a_temporary_file_of_a_writer_still_running_is_left_alone(tmp_path) -> None:
    """The sweep of killed writers' temporary files must not take one from under a process writing it now (the
    window storing a page while a `memory` command runs nightly): its process is alive. A finished process's goes."""
    from wiki_engine import open_memory

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with open_memory(tmp_path / "m", embedder=None) as mem:
        folder = mem.pages.root / "private" / "alice"
        folder.mkdir(parents=True)
        live, killed = folder / f"home.tmp{os.getpid()}", folder / f"home.tmp{int(dead.stdout)}"
        live.write_text("being written")
        killed.write_text("left by a crash")
        mem.finish_deletions()
        assert live.exists() and not killed.exists()


_OPEN_INDEX = """
import sys
from pathlib import Path
from wiki_engine.index import ScopeIndex
i = ScopeIndex(Path(sys.argv[1]), None)
print(len(i.keyword(["numbat"], 1000)))
i.close()
"""


def test_another_live_process_opening_an_index_mid_write_leaves_that_write_alone(tmp_path) -> None:
    """A process opening an index (a `memory` command while the window stores sources) took the other's mark of
    uncommitted keyword writes for a crash and deleted the keyword index under it: the writer's commit pointed at
    deleted files and the index no longer opened."""
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine.index import Doc, ScopeIndex

    def docs(n: int, word: str, base: int = 0) -> list[Doc]:
        return [Doc(f"s{base + k}", "source", f"note {base + k}", f"{word} note number {base + k} about the shed",
                    1_700_000_000.0 + base + k) for k in range(n)]

    folder = tmp_path / "idx"
    writer = ScopeIndex(folder, None)
    writer.add(docs(200, "numbat"))
    writer.commit()
    writer.add(docs(50, "quokka", base=1000))  # stored in meta.db, the keyword index not committed yet
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    other = subprocess.run([sys.executable, "-c", _OPEN_INDEX, str(folder)], capture_output=True, text=True,
                           env=env, timeout=120)
    assert other.returncode == 0 and int(other.stdout) >= 200, other.stderr[-2000:]
    writer.commit()
    writer.close()
    again = ScopeIndex(folder, None)
    try:
        assert len(again.keyword(["numbat"], 1000)) >= 200 and len(again.keyword(["quokka"], 1000)) == 50
    finally:
        again.close()


def test_a_forked_child_marks_its_keyword_writes_as_its_own() -> None:
    """The mark was made once, at import: a forked child wrote its parent's, so its crash mid-write looked like the
    parent's write under way (never rebuilt), and its commit cleared the parent's mark."""
    from wiki_engine.index import _pending_mark

    mine = _pending_mark()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, _pending_mark().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    theirs = os.read(read, 4096).decode()
    os.close(read)
    assert theirs.startswith("keywords_pending:") and f":{pid}:" in theirs and theirs != mine


def test_a_deleted_sources_words_leave_the_keyword_index_at_once(tmp_path) -> None:
    """The keyword index only marked a deleted source deleted: its words stayed in the term list of its segment
    (counted by anyone who opens the index, also after a restart) while another source stored with it lived on,
    until the nightly pass rebuilt the index. A byte search missed them only because that list is compressed."""
    from wiki_engine import open_memory
    from wiki_engine.index import stems

    root = tmp_path / "m"
    word = stems("quokka7731")[0]
    with open_memory(root, embedder=None) as mem:
        kept, secret = mem.add_items([  # one batch, one commit: both in the same segment of the keyword index
            Item(text="Alice: The garden bench needs paint.", scope="private/alice", ts=1e9, key="a"),
            Item(text="Alice: My bank PIN is quokka7731, keep it safe.", scope="private/alice", ts=1e9 + 60, key="b")])
        assert mem.index("private/alice").searcher.doc_freq("body", word) == 1
        mem.delete_source(secret)
        assert mem.index("private/alice").searcher.doc_freq("body", word) == 0
        assert [h.id for h in mem.search("garden bench", scopes=Viewer("alice"), mode="keyword")] == [kept]
    with open_memory(root, embedder=None) as mem:  # and in the files a restart reads
        assert mem.index("private/alice").searcher.doc_freq("body", word) == 0
        assert mem.index("private/alice").searcher.doc_freq("ctx", word) == 0
        assert [h.id for h in mem.search("garden bench", scopes=Viewer("alice"), mode="keyword")] == [kept]


_KILLED_BEFORE_CLAIMS_LEAVE = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.memory import Memory
Memory._drop_claims = lambda self, *_: os.kill(os.getpid(), signal.SIGKILL)  # the power goes here
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


@pytest.mark.parametrize("run", ["nightly", "ingest"])
def test_a_deletion_killed_before_its_claims_left_the_pages_is_finished_by_the_next_run(tmp_path, run) -> None:
    """A process killed after memory forgot a source and before its claims left the page citing it: the claim stayed
    for good (in the page, in search, in memory's files), the page only marked for a rewrite no model might do."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine import Page, open_memory
    from wiki_engine.pipeline import run_ingest, run_nightly

    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        keep = mem.add_source("The dentist is Dr Okafor on Mill Street.", scope="public")
        gone = mem.add_source("Ines has a court hearing about the custody of Leo on 9 March.", scope="public")
        mem.write_page(Page("Family", "public", "people",
                            "- The dentist is Dr Okafor [1]\n- Ines has a custody hearing about Leo on 9 March [2]",
                            {1: keep, 2: gone}), author="agent:wiki-writer")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_CLAIMS_LEAVE, str(root), gone], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL
    with open_memory(root, embedder=None) as mem:
        assert "custody" in mem.read_page("public", "family").body  # what the killed process left
        if run == "nightly":
            run_nightly(mem)
        else:
            run_ingest(mem, lambda batch: [])  # a model that writes nothing: the claim still goes
        assert mem.read_page("public", "family").body == "- The dentist is Dr Okafor [1]"
        assert not mem.search("custody hearing Leo", scopes=["public"], mode="keyword")
    assert _files_holding(root, b"custody") == []


_KILLED_MID_MERGE = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.memory import Memory
from wiki_engine.pipeline import run_nightly
Memory.delete_page = lambda self, scope, slug: os.kill(os.getpid(), signal.SIGKILL)  # merged, not yet deleted
with open_memory(sys.argv[1], embedder=None) as mem:
    run_nightly(mem)
"""


def test_a_nightly_killed_mid_merge_does_not_double_a_pages_claims(tmp_path) -> None:
    """Nightly merges "Trips" into "Trip" (the person approved it) and is killed before deleting "Trips": the next
    nightly merged them again, and the page said each of the merged claims twice."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine import Page, open_memory
    from wiki_engine.pipeline import run_nightly

    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        a = mem.add_source("We fly to Lisbon on 4 May.", scope="public")
        b = mem.add_source("We stay in the Alfama flat in Lisbon.", scope="public")
        mem.write_page(Page("Trip", "public", "travel", "- We fly to Lisbon on 4 May [1]", {1: a}), author="agent:w")
        mem.write_page(Page("Trips", "public", "travel", "- We stay in the Alfama flat [1]\n- We fly home on 9 May",
                            {1: b}), author="agent:w")
        run_nightly(mem)
        (prop,) = mem.proposals()
        mem.approve_proposal(prop.id)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_MID_MERGE, str(root)], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL
    with open_memory(root, embedder=None) as mem:
        run_nightly(mem)
        pages, _ = mem.list_pages("public")
        assert len(pages) == 1, [p.title for p in pages]
        body = pages[0].body
        assert body.count("Alfama flat") == 1 and body.count("4 May") == 1 and body.count("9 May") == 1, body


def test_a_kill_while_the_keyword_index_is_written_again_is_repaired_by_the_next_open(tmp_path) -> None:
    """The deletion committed, then the process was killed while the keyword index was written again: nothing
    marked the gap (the mark of a lagging index was cleared by the commit before), so the deleted words stayed in
    the index for good, past every restart, until a nightly rebuild."""

    from wiki_engine import open_memory

    root = tmp_path / "m"
    with open_memory(root, embedder=None) as mem:
        kept, secret = mem.add_items([
            Item(text="Alice: The garden bench needs paint.", scope="private/alice", ts=1e9, key="a"),
            Item(text="Alice: My bank PIN is quokka7731, keep it safe.", scope="private/alice", ts=1e9 + 60, key="b")])
    code = ("import os, sys\nfrom wiki_engine import open_memory\nfrom wiki_engine.index import ScopeIndex\n"
            "mem = open_memory(sys.argv[1], embedder=None)\n"
            "mem.index('private/alice')\n"
            "def dying(*_a):\n"
            "    os._exit(9)  # killed while the keyword index is written again, its first document being read\n"
            "ScopeIndex._keyword_doc = staticmethod(dying)\n"
            "mem.delete_source(sys.argv[2])\n")
    _killed_then_reopened(root, code, secret, "quokka7731", kept)


def _killed_then_reopened(root, code: str, secret: str, word: str, kept: str) -> None:
    """Runs ``code`` (a process of memory's that kills itself, exit 9) on ``secret``; memory opened again holds
    ``word`` in no keyword index term and still finds ``kept``."""
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine import open_memory
    from wiki_engine.index import stems

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", code, str(root), secret], env=env, timeout=120, capture_output=True,
                          text=True)
    assert done.returncode == 9, done.stderr[-2000:]
    with open_memory(root, embedder=None) as mem:
        idx = mem.index("private/alice")
        assert idx.searcher.doc_freq("body", stems(word)[0]) == 0
        assert [h.id for h in mem.search("garden bench", scopes=Viewer("alice"), mode="keyword")] == [kept]


def test_deletions_under_a_hold_write_the_keyword_index_once_and_a_kill_before_its_end_is_repaired(tmp_path) -> None:
    """A watched folder removed 500 sources at a time holds memory's purges: each batch is unfindable at once, the
    keyword index is written again once at the end (not once a batch), and a process killed before the end has
    its deleted words taken out on the next open. Another person's scope is not held."""

    from wiki_engine import open_memory
    from wiki_engine.index import ScopeIndex

    root = tmp_path / "m"
    with open_memory(root, embedder=None) as mem:
        ids = [mem.add_source(f"Alice: Locker {i} code is quokka{7000 + i}.", scope="private/alice", ts=1e9 + 60 * i)
               for i in range(6)]
        kept = mem.add_source("Alice: The garden bench needs paint.", scope="private/alice", ts=1e9 + 900)
        bob = mem.add_source("Bob: My bike lock code is numbat9043.", scope="private/bob", ts=1e9)
        rewrites: list[str] = []
        real = ScopeIndex._rewrite_keywords
        ScopeIndex._rewrite_keywords = lambda self: (rewrites.append(self.folder.name), real(self))[1]
        try:
            mem.hold_purges("private/alice", True)
            mem.delete_sources(ids[:2], held=True)
            assert [h.snippet for h in mem.search("quokka7001", scopes=Viewer("alice"), mode="keyword")] == []
            mem.delete_sources(ids[2:4], held=True)
            mem.delete_source(bob)  # Bob's deletion is written out at once
            assert rewrites == ["bob"]
            assert [h.snippet for h in mem.search("quokka7003", scopes=Viewer("alice"), mode="keyword")] == []
            mem.hold_purges("private/alice", False)
            assert rewrites == ["bob", "alice"]
            assert _files_holding(root, b"quokka7003") == [] and _files_holding(root, b"numbat9043") == []
            # Alice deletes a note herself while a folder's removal holds her scope: hers goes at once
            mem.hold_purges("private/alice", True)
            mem.delete_sources(ids[4:5], held=True)
            mem.delete_source(ids[5])
            assert rewrites == ["bob", "alice", "alice"]
            assert _files_holding(root, b"quokka7005") == [] and _files_holding(root, b"quokka7004") == []
            mem.hold_purges("private/alice", False)
            assert rewrites == ["bob", "alice", "alice"]  # nothing was left owed
        finally:
            ScopeIndex._rewrite_keywords = real
        secret = mem.add_source("Alice: My bank PIN is dunlin2290.", scope="private/alice", ts=1e9 + 1000)
    code = ("import os, sys\nfrom wiki_engine import open_memory\n"
            "mem = open_memory(sys.argv[1], embedder=None)\n"
            "mem.hold_purges('private/alice', True)\n"
            "mem.delete_sources([sys.argv[2]], held=True)\n"
            "os._exit(9)  # killed before the hold ends\n")
    _killed_then_reopened(root, code, secret, "dunlin2290", kept)
    assert _files_holding(root, b"dunlin2290") == []


def test_a_merged_duplicates_claim_stays_under_its_own_heading(tmp_path) -> None:
    """Nightly merges "Bobs" into "Bob" (the person approved it): the duplicate's "## Health" heading is a line the
    kept page holds too, so it was left out, and its claim landed under the kept page's last heading (Bob allergic to
    peanuts, at work)."""
    from wiki_engine import Page, open_memory
    from wiki_engine.pipeline import run_nightly

    with open_memory(tmp_path / "m", embedder=None) as mem:
        tea = mem.add_source("Bob likes green tea.", scope="public")
        job = mem.add_source("Bob works at the bakery.", scope="public")
        nuts = mem.add_source("Bob is allergic to peanuts.", scope="public")
        mem.write_page(Page("Bob", "public", "people",
                            "## Health\n- Likes green tea [1]\n\n## Work\n- Works at the bakery [2]", {1: tea, 2: job}),
                       author="agent:w")
        mem.write_page(Page("Bobs", "public", "people", "## Health\n- Likes green tea [1]\n- Allergic to peanuts [2]",
                            {1: tea, 2: nuts}), author="agent:w")
        run_nightly(mem)
        (prop,) = mem.proposals()
        mem.approve_proposal(prop.id)
        run_nightly(mem)
        pages, _ = mem.list_pages("public")
        assert len(pages) == 1
        lines = pages[0].body.split("\n")
        at = next(i for i, line in enumerate(lines) if "Allergic to peanuts" in line)
        assert [line for line in lines[:at] if line.startswith("#")][-1] == "## Health", pages[0].body
        assert pages[0].body.count("green tea") == 1, pages[0].body


def test_an_index_another_process_deleted_and_made_again_is_opened_anew(tmp_path) -> None:
    """A window's memory had Alice's index open; a terminal forgot her and stored a new note, which made her index
    again in the same folder. The window went on with the deleted index it had open (by its folder's presence alone
    it looked fine): the new note was never found there, and closing it could write into the new index."""
    from wiki_engine import open_memory

    root = tmp_path / "m"
    window = open_memory(root, embedder=None)
    try:
        window.add_source("Alice: The old locker code is kittiwake5521.", scope="private/alice")
        assert window.search("kittiwake5521", scopes=Viewer("alice"), mode="keyword")
        with open_memory(root, embedder=None) as terminal:
            terminal.forget_person("alice")
            new = terminal.add_source("Alice: The new bike shed is by the guillemot gate.", scope="private/alice")
        assert [h.id for h in window.search("guillemot gate", scopes=Viewer("alice"), mode="keyword")] == [new]
        assert window.search("kittiwake5521", scopes=Viewer("alice"), mode="keyword") == []
    finally:
        window.close()
    with open_memory(root, embedder=None) as again:
        assert [h.id for h in again.search("guillemot gate", scopes=Viewer("alice"), mode="keyword")] == [new]


def test_a_source_the_person_deleted_is_not_stored_again_from_its_origin(tmp_path) -> None:
    """Read again from its origin under another key (a mail export that grew: its items' keys carry the file's
    version), a source the person deleted is not stored again; one deleted by Hearth's own upkeep (a rescan
    replacing a file's old parts) is."""
    mem = Memory(tmp_path / "m")
    try:
        def mail(key: str) -> Item:
            return Item(text="Piano lessons for Leo move to Thursday.", scope="private/alice", ts=1.0e9,
                        kind="mail", key=key, subject="Piano lessons (all.mbox)")

        [sid] = mem.add_items([mail("file:f:v1#0")])
        mem.delete_source(sid)
        assert mem.add_items([mail("file:f:v2#0")], skip_refused=True) == [""]
        assert mem.add_items([mail("file:f:v1#0")], skip_refused=True) == [""]
        assert mem.deleted_keys("private/alice", ["file:f:v1#0", "file:f:v2#0"]) == {"file:f:v1#0"}
        [other] = mem.add_items([Item(text="The boiler is serviced in May.", scope="private/alice", ts=1.0e9,
                                      kind="note", key="file:g:v1#0")])
        mem.delete_sources([other])  # upkeep, not the person
        assert mem.add_items([Item(text="The boiler is serviced in May.", scope="private/alice", ts=1.0e9,
                                   kind="note", key="file:g:v2#0")])[0]
        assert mem.add_items([mail("file:f:v3#0")], skip_refused=True) == [""]  # still deleted after more upkeep
    finally:
        mem.close()


def test_a_deleted_mail_with_no_date_is_not_stored_again_when_read_at_another_time(tmp_path) -> None:
    """A mail with no Date header is dated by when Hearth read it: read again (moved out of the inbox and back) under
    a new key at a new time, it printed apart and came back. Its Message-ID's print names it instead."""
    mem = Memory(tmp_path / "m")
    try:
        def mail(key: str, ts: float, mid: str = "aaaa", author: str = "Ana <ana@example.org>") -> Item:
            return Item(text="Piano lessons for Leo move to Thursday.", scope="private/alice", ts=ts, kind="mail",
                        key=key, author=author, subject="Piano lessons", meta={"message-print": mid})

        [sid] = mem.add_items([mail("m1", 1.0e9)])
        mem.delete_source(sid)
        assert mem.add_items([mail("m2", 1.0e9 + 86400)], skip_refused=True) == [""]
        assert mem.add_items([mail("m3", 1.0e9 + 86400, mid="bbbb")])[0]  # another message
        assert mem.add_items([mail("m4", 1.0e9 + 86400, author="Bo <bo@example.org>")])[0]  # someone else
    finally:
        mem.close()


_KILLED_BEFORE_COMMIT = """
import os, signal, sys
from wiki_engine import open_memory
with open_memory(sys.argv[1], embedder=None) as mem:
    def power_cut():
        os.kill(os.getpid(), signal.SIGKILL)  # the power goes: every statement ran, the COMMIT did not
    mem.catalog.before_commit.append(power_cut)
    if len(sys.argv) > 3:
        mem.delete_sources(sys.argv[2:])
    else:
        mem.delete_source(sys.argv[2])
"""


def _killed(root: Path, *sids: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_COMMIT, str(root), *sids], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL


@pytest.mark.parametrize("many", [False, True])
def test_a_delete_killed_before_its_commit_leaves_each_source_whole_or_gone(tmp_path, many) -> None:
    """A deletion removed each source's file inside the catalog's transaction: killed before the commit, the
    catalog rolled back and kept the source, its file gone (unreadable, undeletable from the window)."""
    from wiki_engine import open_memory

    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        sids = [mem.add_source(f"Receipt {i}: the boiler service cost {100 + i} euros.", scope="private/alice")
                for i in range(5)]
    _killed(root, *(sids if many else sids[:1]))
    with open_memory(root, embedder=None) as mem:
        for sid in sids:
            if mem.source_scope(sid) is None:
                continue  # deleted for good: fine
            # still stored (the deletion never committed): then it must still be readable, not a dangling row
            text = mem.get_source(sid).text
            assert "boiler service" in text
        assert mem.verify() == [], mem.verify()


_KILLED_AFTER_COMMIT = """
import os, signal, sys
from wiki_engine import open_memory
from wiki_engine.sources import SourceStore
SourceStore.delete = lambda self, scope, sha: os.kill(os.getpid(), signal.SIGKILL)  # committed; the files not yet gone
with open_memory(sys.argv[1], embedder=None) as mem:
    mem.delete_source(sys.argv[2])
"""


def test_a_delete_killed_after_its_commit_leaves_no_file_behind_at_the_next_open(tmp_path) -> None:
    """Files now go after the commit: a kill between the two must not leave the deleted source's text on disk."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from wiki_engine import open_memory

    root = tmp_path / "memory"
    with open_memory(root, embedder=None) as mem:
        sid = mem.add_source("The safe code behind the painting is 4471.", scope="private/alice")
        kept = mem.add_source("The plumber comes on Friday.", scope="private/alice")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _KILLED_AFTER_COMMIT, str(root), sid], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert _files_holding(root / "sources", b"painting")  # the kill left the file
    with open_memory(root, embedder=None) as mem:
        assert mem.source_scope(sid) is None and "plumber" in mem.get_source(kept).text
        assert mem.verify() == []
    assert _files_holding(root / "sources", b"painting") == []


def test_same_note_stored_again_by_another_process_during_a_deletion_keeps_its_file(tmp_path) -> None:
    """A deletion's file goes after its commit: a terminal storing the same note again meanwhile kept its row but
    lost its file ("missing... restore it from a backup"). The check and the delete now hold the catalog."""
    import threading

    from wiki_engine import open_memory

    root = tmp_path / "memory"
    text, ts = "Clara's birthday is on 3 June.", 1_700_000_000.0
    a = open_memory(root, embedder=None)  # the window
    b = open_memory(root, embedder=None)  # a terminal, another process (its own connections)
    try:
        sid = a.add_source(text, scope="public", ts=ts)
        real_delete = a.sources.delete
        out: dict[str, object] = {}

        def again() -> None:
            try:
                out["sid"] = b.add_source(text, scope="public", ts=ts)  # the terminal stores the same note again
            except Exception as exc:  # noqa: BLE001
                out["error"] = exc

        def delete_with_the_terminal_storing(scope, sha):
            t = threading.Thread(target=again)
            t.start()
            t.join(2.0)  # the other process runs meanwhile (it waits if the deletion holds the catalog)
            out["thread"] = t
            real_delete(scope, sha)

        a.sources.delete = delete_with_the_terminal_storing
        a.delete_sources([sid], again=True)
        out["thread"].join(60)
        assert "error" not in out, out
        assert out["sid"] == sid
        # the source is stored (its row is there) and so must its file be
        assert b.get_source(sid).text.strip().endswith(text)
    finally:
        a.close()
        b.close()
