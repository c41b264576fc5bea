"""Two Hearth processes on one memory folder (Alice's window in one, Bob's in another). A person's Save of a page is
checked and written under the whole wiki's writer lease (``write_page(expected=...)``); a Verified click
(``set_verified``) and an approval (``approve_proposal``) read the page and write it back whole. Under memory's
in-process lock only, the other process's Save landing between the read and the write was overwritten: its person
was told "Correction saved", and the correction was gone. Both now hold the same lease: the other Save finds it held
(the window says so, and Save again works), and nothing is lost."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from wiki_engine import Memory, Page, PageChanged, open_memory
from wiki_engine.pipeline import LeaseBusy

TUESDAY = "- The bins go out on Tuesday night [1]"


@pytest.fixture
def two(tmp_path) -> Iterator[tuple[Memory, Memory]]:
    root = tmp_path / "memory"
    first, second = open_memory(root, embedder=None), open_memory(root, embedder=None)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def _save(proc: Memory, body: str, read: Page, author: str) -> str:
    """A person's Save in ``proc``, onto the page as they were shown it: "saved", or "busy" (told to Save again)."""
    try:
        proc.write_page(Page(read.title, "public", read.category, body, read.citations, verified=True),
                        author=author, expected=(read.body, dict(read.citations)))
        return "saved"
    except LeaseBusy:
        return "busy"


def test_alices_verified_click_in_one_process_never_undoes_bobs_save_in_another(two) -> None:
    alice_proc, bob_proc = two
    sid = alice_proc.add_source("The bins go out on Tuesday night.", scope="public")
    alice_proc.write_page(Page("Bins", "public", "home", TUESDAY, {1: sid}), author="agent:wiki-writer")
    shown = alice_proc.read_page("public", "bins")
    bobs = "- The bins go out on Wednesday night since May [1]"
    bob_shown = bob_proc.read_page("public", "bins")  # Bob opened the page in his window too
    saved: list[str] = []
    real_read = alice_proc.read_page

    def read_then_bob_saves(scope, slug):  # Bob's Save lands just after Alice's process read the page
        page = real_read(scope, slug)
        if not saved:
            saved.append(_save(bob_proc, bobs, bob_shown, "person:bob"))
        return page

    alice_proc.read_page = read_then_bob_saves  # type: ignore[method-assign]
    try:
        alice_proc.set_verified("public", "bins", True, read=(shown.body, dict(shown.citations)))
    finally:
        del alice_proc.read_page
    now = bob_proc.read_page("public", "bins")
    assert saved == ["busy"], (f"Bob was told {saved}, and the page reads {now.body!r}: Alice's Verified click wrote "
                               "the text she read back over his correction")
    assert now.verified and now.body == TUESDAY  # what Alice vouched for
    assert _save(bob_proc, bobs, bob_shown, "person:bob") == "saved"  # Bob saves again: his correction is there
    assert bob_proc.read_page("public", "bins").body == bobs


def test_bobs_approve_in_one_process_never_undoes_alices_save_in_another(two) -> None:
    bob_proc, alice_proc = two
    sid = bob_proc.add_source("The bins go out on Tuesday night.", scope="public")
    sid2 = bob_proc.add_source("The recycling goes out every other Tuesday.", scope="public")
    bob_proc.write_page(Page("Bins", "public", "home", TUESDAY, {1: sid}, verified=True), author="person:alice")
    res = bob_proc.write_page(Page("Bins", "public", "home", f"{TUESDAY}\n- Recycling every other Tuesday [2]",
                                   {1: sid, 2: sid2}), author="agent:wiki-writer")
    assert res.status == "proposed"
    alices = "- The bins go out on Tuesday night, before 10 pm [1]"
    alice_shown = alice_proc.read_page("public", "bins")
    saved: list[str] = []
    real = bob_proc.check_citations

    def check_then_alice_saves(page):  # Alice's Save lands after Bob's process compared the page
        real(page)
        if not saved:
            saved.append(_save(alice_proc, alices, alice_shown, "person:alice"))

    bob_proc.check_citations = check_then_alice_saves  # type: ignore[method-assign]
    try:
        bob_proc.approve_proposal(res.proposal_id)
    finally:
        del bob_proc.check_citations
    now = alice_proc.read_page("public", "bins").body
    assert saved == ["busy"], (f"Alice was told {saved}, and the page reads {now!r}: Bob's approval wrote the "
                               "proposal over her correction")
    assert "Recycling every other Tuesday" in now  # the approval
    with pytest.raises(PageChanged):  # her Save again finds the page changed since she opened it: she is told so
        alice_proc.write_page(Page("Bins", "public", "home", alices, alice_shown.citations, verified=True),
                              author="person:alice", expected=(alice_shown.body, dict(alice_shown.citations)))

