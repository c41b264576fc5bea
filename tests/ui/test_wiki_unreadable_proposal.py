"""A proposal over a page whose file no longer parses (a hand edit broke its front matter) is shown beside the
file as it holds it, saying why; Approve replaces only what the person can see."""

from __future__ import annotations

from tests.ui.test_wiki_view import seed, wiki_window
from wiki_engine import Page

HERS = "- Clara's birthday is on 13 June, I checked her passport [1]"


def _proposal_over(qtbot, qloop, ui_pod, home, text: bytes, then: bytes | None = None,
                   click: bool = False):
    """Me's Family file holds ``text`` (mended by hand, badly); the next ingest's Family becomes a proposal, chosen
    in the window (her file holding ``then`` by that time, if given; ``click``: Approve clicked as it is chosen)."""
    scope, sid = seed(qloop, ui_pod)
    path = home / "memory" / "wiki" / scope / "family.md"
    path.write_bytes(text.replace(b"{sid}", sid.encode()))
    res = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(Page(
        "Family", scope, "family", "- Clara's birthday is on 3 June [1]", {1: sid}), author="agent:wiki-writer")))
    assert res.status == "proposed", res
    if then is not None:
        path.write_bytes(then.replace(b"{sid}", sid.encode()))
    w = wiki_window(qtbot, ui_pod)
    w.wiki.refresh()
    qloop.wait_until(lambda: w.wiki.proposals.count() == 1, what="the proposal")
    held = path.read_bytes()
    w.wiki.proposals.setCurrentRow(0)
    if click:  # at once, as the sides are still being read
        w.wiki.approve.click()
    qloop.wait_until(lambda: not w.wiki._tasks and not w.wiki._reads, what="the proposal to be shown")
    return w, path, held


def test_a_proposal_over_her_hand_mended_page_shows_the_file_as_it_is(qtbot, qloop, ui_pod, home) -> None:
    """Me mended Family by hand and left a typo in its front matter (memory never overwrites it: an agent's write
    becomes a proposal). The proposal showed an empty side beside it (reading her page failed, said only in the
    log) while Approve replaced her 13 June with the model's 3 June unseen. Now her file's text is shown, with a
    line saying it does not parse and where; having seen both sides, she may approve."""
    scope = f"private/{ui_pod.person.id}"
    good = Page("Family", scope, "family", HERS, {1: "{sid}"}, verified=True).to_markdown()
    w, path, _ = _proposal_over(qtbot, qloop, ui_pod, home, good.replace("category: family", "category family", 1).encode())
    old, new = w.wiki.diff_old.toPlainText(), w.wiki.diff_new.toPlainText()
    assert "13 June" in old and "3 June" in new, f"beside the proposal: {old!r}; proposed: {new!r}"
    line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln == "category family")
    assert f"This page's file does not parse (line {line}: expected 'key: value'" in old, old
    assert str(home) not in old and "Memory could not do that" not in w.statusBar().currentMessage()
    assert w.wiki.approve.isEnabled()
    w.wiki.approve.click()
    qloop.wait_until(lambda: w.wiki.proposals.count() == 0, what="the proposal approved")
    assert "3 June" in ui_pod.memory.read_page(scope, "family").body


def test_a_proposal_over_a_page_file_that_cannot_be_read_is_not_approved_unseen(qtbot, qloop, ui_pod, home) -> None:
    """Her Family file, mended badly, then saved by an editor in another encoding (not UTF-8): nothing of it can be
    shown beside the proposal, so Approve, even clicked as the proposal was chosen, replaces nothing: it says why,
    the side says why, and Approve is off; her file stays as it is."""
    scope = f"private/{ui_pod.person.id}"
    good = Page("Family", scope, "family", HERS, {1: "{sid}"}, verified=True).to_markdown()
    typo = good.replace("category: family", "category family", 1)
    w, path, held = _proposal_over(qtbot, qloop, ui_pod, home, typo.encode(),
                                   typo.replace("passport", "passeport \u00e9tranger").encode("latin-1"), click=True)
    assert w.statusBar().currentMessage().startswith("Not approved: Family as it is now could not be shown")
    assert path.read_bytes() == held and w.wiki.proposals.count() == 1
    old = w.wiki.diff_old.toPlainText()
    assert "This page's file cannot be read: not UTF-8 text. Re-save it as UTF-8 or delete it." in old, old
    assert "3 June" in w.wiki.diff_new.toPlainText()
    assert not w.wiki.approve.isEnabled()
