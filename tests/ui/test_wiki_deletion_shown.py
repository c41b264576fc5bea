"""What the Wiki shows once a source is deleted: no citation the window linked is left dangling on the page, an Ask
memory answer saying what the deletion took off a page leaves the screen, and a verified page kept under its
category's name is shown there, not announced as deleted."""

from __future__ import annotations

import re

from PySide6.QtCore import QUrl

from tests.ui.conftest import answer_confirm
from tests.ui.test_wiki_view import wiki_window
from wiki_engine import Page


def delete_from_window(qloop, w, sid: str) -> None:
    """The person opens a source from the page shown and deletes it, as the window offers."""
    w.wiki._on_anchor(QUrl(f"hearth-source:{sid}"))
    qloop.wait_until(lambda: hasattr(w.wiki, "source_dialog"), what="the source dialog")
    answer_confirm("Delete")
    w.wiki.source_dialog.delete.click()
    qloop.wait_until(lambda: "Source deleted" in w.statusBar().currentMessage() and not w.wiki._tasks,
                     what="the deletion")


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
