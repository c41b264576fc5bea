"""What the Wiki shows once a source is deleted: no citation the window linked is left dangling on the page, an Ask
memory answer saying what the deletion took off a page leaves the screen, and a verified page kept under its
category's name is shown there, not announced as deleted."""

from __future__ import annotations

import re

from PySide6.QtCore import QUrl

from tests.helpers.fake_model import Text
from tests.ui.conftest import answer_confirm
from tests.ui.test_wiki_view import seed, wiki_window
from wiki_engine import Page


def delete_from_window(qloop, w, sid: str) -> None:
    """The person opens a source from the page shown and deletes it, as the window offers."""
    w.wiki._on_anchor(QUrl(f"hearth-source:{sid}"))
    qloop.wait_until(lambda: hasattr(w.wiki, "source_dialog"), what="the source dialog")
    answer_confirm("Delete")
    w.wiki.source_dialog.delete.click()
    qloop.wait_until(lambda: "Source deleted" in w.statusBar().currentMessage() and not w.wiki._tasks,
                     what="the deletion")


def answer_citing_a_page(qtbot, qloop, pod, script, title: str, fact: str):
    """The window showing Ask memory's answer ``fact``, citing the page ``title`` (as the model is shown it)."""

    def cite_the_page(req):
        n = re.search(rf"\[(\d+)\][^\n]*page “{title}”", req.last_user)
        return Text(f"{fact} [{n.group(1) if n else 1}].")

    pod.set_role_model("ask_memory", "fake/fake-1")
    script([cite_the_page], repeat_last=True)
    w = wiki_window(qtbot, pod)
    w.wiki.search.setText("When is it?")
    w.wiki.ask.click()
    qloop.wait_until(lambda: fact in w.wiki.page.toPlainText(), what="the answer")
    assert "hearth-page:" in w.wiki.page.toHtml(), w.wiki.page.toPlainText()  # it cites the page
    return w


def test_a_citation_before_a_colon_goes_with_its_source(qtbot, qloop, ui_pod) -> None:
    """Before, "Her sizes [1]:" over a list showed [1] as a link to its source, but memory did not read a "[n]"
    followed by a colon as a citation: deleting the source left "Her sizes [1]:" on the page with only [2] under
    Sources, its words still found by search and its [1] opening nothing. Now the sentence goes with its source."""
    scope = f"private/{ui_pod.person.id}"

    def seed_sizes():
        a = ui_pod.memory.add_source("Clara's shoe size is 38 and her dress size is 10.", scope=scope)
        b = ui_pod.memory.add_source("Clara loves orchids.", scope=scope)
        # the person's own correction, as Edit -> Save writes it: each [n] on the line it supports
        ui_pod.memory.write_page(Page(title="Clara", scope=scope, category="family", citations={1: a, 2: b},
                                      body="Her sizes [1]:\n\n- shoes 38 [1]\n- dress 10 [1]\n\n"
                                           "She loves orchids [2]."),
                                 author=f"person:{ui_pod.person.id}")
        return a

    a = qloop.run(ui_pod.in_memory_thread(seed_sizes))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "Clara"))
    assert w.wiki.page.toHtml().count(f"hearth-source:{a}") == 4  # 3 in the text, 1 under Sources

    delete_from_window(qloop, w, a)
    page = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.read_page(scope, "clara")))
    assert page.body == "She loves orchids [2].", page.body
    assert all(int(n) in page.citations for n in re.findall(r"\[(\d+)\]", page.body))
    hits = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.search("sizes", scopes=[scope], mode="keyword")))
    assert not hits, hits
    text = w.wiki.page.toPlainText()
    assert "[1]" not in text and "sizes" not in text and "orchids" in text, text


def test_an_answer_saying_what_a_deletion_took_off_a_page_leaves_the_screen(qtbot, qloop, ui_pod, script) -> None:
    """Before, an Ask memory answer citing the Family page ("Clara's birthday is on 3 June [2]") stayed on screen
    after the person deleted the source the page's claim rested on: the answer still said the deleted fact, its [2]
    opening a page that no longer said it. Now an answer citing a page the deletion changed leaves with it."""
    scope = f"private/{ui_pod.person.id}"

    def two_birthdays():
        clara = ui_pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope)
        tom = ui_pod.memory.add_source("Tom's birthday is on 9 May.", scope=scope)
        ui_pod.memory.write_page(Page("Family", scope, "family", "- Clara's birthday is on 3 June [1]\n"
                                      "- Tom's birthday is on 9 May [2]", {1: clara, 2: tom}),
                                 author="agent:wiki-writer")
        return clara

    sid = qloop.run(ui_pod.in_memory_thread(two_birthdays))

    w = answer_citing_a_page(qtbot, qloop, ui_pod, script, "Family", "Clara's birthday is on 3 June")
    assert f"hearth-source:{sid}" not in w.wiki.page.toHtml()  # it cites the page, not the source

    delete_from_window(qloop, w, sid)
    family = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.read_page(scope, "family")))
    assert family.body == "- Tom's birthday is on 9 May [2]"  # the claim left the page, which stays
    assert "3 June" not in w.wiki.page.toPlainText(), w.wiki.page.toPlainText()


def test_an_answer_citing_a_page_the_deletion_left_alone_stays(qtbot, qloop, ui_pod, script) -> None:
    """An answer citing only pages the deletion did not touch is still true, and stays on screen."""
    scope, sid = seed(qloop, ui_pod)

    def other():
        return ui_pod.memory.add_source("Tom's birthday is on 9 May.", scope=scope)

    other_sid = qloop.run(ui_pod.in_memory_thread(other))
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(
        Page("Tom", scope, "family", "- Tom's birthday is on 9 May [1]", {1: other_sid}), author="agent:wiki-writer")))

    w = answer_citing_a_page(qtbot, qloop, ui_pod, script, "Tom", "Tom's birthday is on 9 May")

    delete_from_window(qloop, w, sid)
    assert "9 May" in w.wiki.page.toPlainText(), w.wiki.page.toPlainText()


def test_a_verified_page_kept_under_its_category_is_shown_there(qtbot, qloop, ui_pod) -> None:
    """Before, deleting the source a verified page's title named kept the person's page as "Health", but the window
    showing it said "The page Peanut allergy was deleted: nothing it cited is left…", offering no way to it: the
    person read that their corrections were gone. Now the window shows the page under its new title."""
    scope = f"private/{ui_pod.person.id}"

    def seed_allergy():
        a = ui_pod.memory.add_source("Clara is allergic to peanuts.", scope=scope)
        b = ui_pod.memory.add_source("Clara sees Dr Patel every spring.", scope=scope)
        ui_pod.memory.write_page(Page("Peanut allergy", scope, "health",
                                      "Clara is allergic to peanuts [1].\n\nShe sees Dr Patel every spring [2].",
                                      {1: a, 2: b}, verified=True), author=f"person:{ui_pod.person.id}")
        return a

    a = qloop.run(ui_pod.in_memory_thread(seed_allergy))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "Peanut allergy"))
    delete_from_window(qloop, w, a)
    kept = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.read_page(scope, "health")))
    assert kept is not None and "Dr Patel" in kept.body and kept.verified  # her page lives on as "Health"
    shown = w.wiki.page.toPlainText()
    assert "was deleted" not in shown and "Dr Patel" in shown and "peanuts" not in shown, shown
    assert shown.lstrip().startswith("Health"), shown
    assert "1 page(s) you verified had a title naming what it said: kept, titled by their category" in \
        w.statusBar().currentMessage()
