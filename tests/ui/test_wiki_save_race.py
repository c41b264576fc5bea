"""A correction saved while another process (`memory ingest` in a terminal) writes the same page: Save never writes
over what that process wrote, says so, and keeps the person's text in the editor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.ui.test_wiki_view import seed, wiki_window

TYPED = "- Clara's birthday is on 13 June; her gift goes on my card 5555 5555 5555 4444 [1]"
CHANGED = "Not saved: this page changed while you were editing it"
SAVED = "Correction saved"

# `memory ingest` in a terminal, as another process writes a page: under the whole wiki's writer lease, held for a
# moment (wiki_engine.pipeline.wiki_pen), memory's own lock being its process's. It adds Tom's birthday to Family
# from a new note. Exit 3: the lease was held by another writer, nothing written (a real ingest waits, then tries
# again at its next run).
INGEST = """
import sys
from wiki_engine import Page, open_memory
from wiki_engine.lease import Lease, LeaseBusy
m = open_memory(sys.argv[1])
try:
    with Lease(m.catalog, "ingest", ttl=60.0, moment=True):
        tom = m.add_source("Tom's birthday is on 9 May.", scope=sys.argv[2])
        page = m.read_page(sys.argv[2], "family")
        m.write_page(Page("Family", sys.argv[2], "family", page.body + "\\n- Tom's birthday is on 9 May [2]",
                          {**page.citations, 2: tom}), author="agent:wiki-writer")
except LeaseBusy:
    sys.exit(3)
finally:
    m.close()
"""


def _terminal_ingest(root: Path, scope: str) -> int:
    r = subprocess.run([sys.executable, "-c", INGEST, str(root), scope], capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 3), r.stderr
    return r.returncode


def _editing_family(qtbot, qloop, ui_pod):
    scope, _sid = seed(qloop, ui_pod)
    w = wiki_window(qtbot, ui_pod, shown=True)
    qloop.run(w.wiki.open_page(scope, "Family"))
    w.wiki.edit.click()
    qloop.wait_until(lambda: w.wiki.page_stack.currentIndex() == 1, what="the editor")
    w.wiki.editor.setPlainText(TYPED)
    return w, scope


def _save(qloop, w) -> list[str]:
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    w.wiki.save_edit.click()
    qloop.wait_until(lambda: not w.wiki._tasks, what="the save to end")
    return said


def test_an_ingest_written_while_the_keyring_is_read_is_not_overwritten(qtbot, qloop, ui_pod) -> None:
    """Save read the page, found it as she opened it, then read her keyring (a D-Bus call; a password prompt if it
    is locked) and only then wrote: an ingest in a terminal that wrote Family in that moment was overwritten, "Correction
    saved" said, Tom's birthday gone from every page while its note had left the inbox. Now Save says the page
    changed and keeps her text in the editor; Tom's line stays."""
    w, scope = _editing_family(qtbot, qloop, ui_pod)
    me = w.wiki.pod
    real = me.redact_own
    ran: list[int] = []

    def keyring_read_while_a_terminal_ingests(text: str) -> str:
        ran.append(_terminal_ingest(ui_pod.memory.root, scope))
        return real(text)

    me.redact_own = keyring_read_while_a_terminal_ingests
    said = _save(qloop, w)
    assert ran == [0]
    assert "Tom's birthday is on 9 May" in ui_pod.memory.read_page(scope, "family").body
    assert not any(SAVED in s for s in said) and any(s.startswith(CHANGED) for s in said), said
    assert w.wiki.page_stack.currentIndex() == 1 and w.wiki.editor.toPlainText() == TYPED


def test_an_ingest_between_the_check_and_the_write_is_held_off(qtbot, qloop, ui_pod) -> None:
    """The page is as she opened it when Save checks; a terminal's ingest would write it before Save's file is
    written. Save checks and writes under the writer lease every ingest writes under: the ingest finds it held
    (and writes at its next run, onto her verified page: a proposal). What either wrote is on the page: an
    ingest's line is never silently replaced."""
    w, scope = _editing_family(qtbot, qloop, ui_pod)
    pages = ui_pod.memory.pages
    real = pages.write
    ran: list[int] = []

    def write_after_a_terminal_ingest(page, *args, **kwargs):
        if page.slug == "family" and not ran:
            ran.append(_terminal_ingest(ui_pod.memory.root, scope))
        return real(page, *args, **kwargs)

    pages.write = write_after_a_terminal_ingest
    try:
        said = _save(qloop, w)
    finally:
        del pages.write
    body = ui_pod.memory.read_page(scope, "family").body
    assert ran and ("Tom's birthday is on 9 May" in body or ran == [3]), f"the ingest wrote; its line is gone:\n{body}"
    assert any(SAVED in s for s in said), said
    assert "13 June" in body  # hers is saved: the ingest (held off) proposes onto it at its next run
    assert _terminal_ingest(ui_pod.memory.root, scope) == 0
    assert [p.slug for p in ui_pod.memory.proposals()] == ["family"]


def test_a_save_while_a_whole_run_writes_memory_says_so_and_keeps_her_text(qtbot, qloop, ui_pod) -> None:
    """A writer holding the wiki's writer lease for a whole run (a nightly pass, in a terminal say): Save does not
    write beside it; it says why and keeps her text. One holding it a moment (another scope's ingest writing its
    pages) is waited for, and the correction is saved."""
    from PySide6.QtCore import QTimer

    from wiki_engine.lease import Lease

    w, scope = _editing_family(qtbot, qloop, ui_pod)
    with Lease(ui_pod.memory.catalog, "ingest", ttl=60.0):
        said = _save(qloop, w)
    assert any(s.startswith("Not saved: another process is writing memory's pages now") for s in said), said
    assert w.wiki.page_stack.currentIndex() == 1 and w.wiki.editor.toPlainText() == TYPED
    assert "13 June" not in ui_pod.memory.read_page(scope, "family").body
    moment = Lease(ui_pod.memory.catalog, "ingest", ttl=60.0, moment=True)
    moment.acquire()
    QTimer.singleShot(300, moment.release)  # its pages written, the other writer lets go
    said = _save(qloop, w)
    assert not moment.held
    assert any(SAVED in s for s in said) and not any("another process" in s for s in said), said
    assert "13 June" in ui_pod.memory.read_page(scope, "family").body


def test_verified_and_approve_while_a_whole_run_writes_memory_say_so_and_change_nothing(qtbot, qloop, ui_pod) -> None:
    """A Verified click and an Approve read the page and write it back whole: beside another process's writer (a
    nightly pass in a terminal, another Hearth's Save) they wrote back what they read over what it wrote. They now
    check and write under the writer lease, as Save does: held for a whole run, the window says the page was not
    changed, puts the box back, and leaves the proposal open; held a moment, it is waited for and the change made."""
    from PySide6.QtCore import QTimer

    from wiki_engine import Page
    from wiki_engine.lease import Lease

    scope, sid = seed(qloop, ui_pod)
    w = wiki_window(qtbot, ui_pod, shown=True)
    qloop.run(w.wiki.open_page(scope, "Family"))
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)

    def settled() -> None:
        qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to settle")

    with Lease(ui_pod.memory.catalog, "ingest", ttl=60.0):
        w.wiki.verified.click()
        settled()
    assert any(s.startswith("Not verified: another process is writing memory's pages now") for s in said), said
    assert not w.wiki.verified.isChecked() and not ui_pod.memory.read_page(scope, "family").verified
    moment = Lease(ui_pod.memory.catalog, "ingest", ttl=60.0, moment=True)
    moment.acquire()
    QTimer.singleShot(300, moment.release)  # its pages written, the other writer lets go
    said.clear()
    w.wiki.verified.click()
    settled()
    assert not moment.held and ui_pod.memory.read_page(scope, "family").verified
    assert any(s.startswith("Page verified") for s in said) and not any("another process" in s for s in said), said

    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(
        Page(title="Family", scope=scope, category="family", body="- Clara's birthday is on 4 June [1]",
             citations={1: sid}), author="agent:wiki-writer")))
    qloop.run(w.wiki.refresh())
    w.wiki.proposals.setCurrentRow(0)
    qloop.wait_until(lambda: "4 June" in w.wiki.diff_new.toPlainText(), what="the two sides")
    said.clear()
    with Lease(ui_pod.memory.catalog, "ingest", ttl=60.0):
        w.wiki.approve.click()
        settled()
    assert any(s.startswith("Not approved: another process is writing memory's pages now") for s in said), said
    assert "3 June" in ui_pod.memory.read_page(scope, "family").body
    assert w.wiki.proposals.count() == 1 and "4 June" in w.wiki.diff_new.toPlainText()  # still open, still shown
    w.wiki.approve.click()  # again, the other writer gone
    qloop.wait_until(lambda: w.wiki.proposals.count() == 0, what="the proposal to go")
    assert "4 June" in ui_pod.memory.read_page(scope, "family").body
