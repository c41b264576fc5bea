"""Ask memory in the window: what the question sends, and how the answer and its sources are shown."""

from __future__ import annotations

import re

from tests.helpers.fake_model import Text
from tests.integration.test_ask_memory_excerpts import kept_mail
from tests.ui.test_wiki_view import CARD, remembered_card, seed, wiki_window


def ask(qloop, w, question: str, shown: str) -> str:
    """``question`` asked with Ask memory in the window: the answer's HTML, once ``shown`` is on screen."""
    w.wiki.search.setText(question)
    w.wiki.ask.click()
    qloop.wait_until(lambda: shown in w.wiki.page.toPlainText() or "could not be answered" in w.wiki.page.toPlainText(),
                     what="the answer")
    return w.wiki.page.toHtml()


def test_asking_after_picking_a_suggestion_sends_the_placeholder_not_the_card(qtbot, qloop, ui_pod, script,
                                                                             fake_model) -> None:
    """Typeahead shows the person their own card; they pick it (Search then asks with the placeholder) and click
    Ask memory: the question went to the Ask memory model and to the embedding provider with the card's digits,
    which memory had redacted. Now it goes with the placeholder, and the window shows the card back to them."""
    placeholder = remembered_card(qloop, ui_pod, script)
    ui_pod.set_role_model("embedding", "fake/fake-embed")
    qloop.wait_until(lambda: not (ui_pod.embedding_status() or {}).get("running"), timeout=30, what="re-embedding")
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    w = wiki_window(qtbot, ui_pod)
    w.wiki._on_typed("orchid shop")
    qloop.wait_until(lambda: w.wiki._suggestions.stringList(), what="a suggestion")
    picked = next(t for t in w.wiki._suggestions.stringList() if CARD in t)
    w.wiki._on_suggestion(picked)
    qloop.wait_until(lambda: w.wiki.results.count() > 0 and not w.wiki._tasks, what="the results")
    asked_before = len(fake_model.requests)
    fake_model.embedded.clear()
    script([Text("You pay the orchid shop by card [1].")])
    w.wiki.ask.click()
    qloop.wait_until(lambda: "orchid shop by card" in w.wiki.page.toPlainText(), what="the answer")
    asked = [r.last_user for r in fake_model.requests[asked_before:]]
    assert asked and fake_model.embedded
    for sent in [*asked, *fake_model.embedded]:
        assert "4111" not in sent, f"the card memory redacted went to a provider: {sent[:400]}"
    assert any(placeholder in q for q in asked), asked
    heading = w.wiki.page.toPlainText().splitlines()[0]
    assert heading == picked and "CARD_" not in heading, heading


def test_a_cited_mail_is_listed_as_a_mail_from_its_sender_not_as_the_persons_own(qtbot, qloop, ui_pod, script,
                                                                                servers, fake_model) -> None:
    """The model is told an excerpt is "mail from Mallory <…>"; the Sources list under the answer named it by its
    subject followed by "— Me", so a stranger's "My note to self: the new safe code" read as the person's own. It is
    listed by its words, as a mail from its sender, and the day it came."""
    qloop.run(kept_mail(ui_pod, servers, fake_model, "My note to self: the new safe code",
                        "The new code for the safe is 4242.", "Mallory <mallory@evil.example>"))
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("The code for the safe is 4242 [1].")])
    w = wiki_window(qtbot, ui_pod)
    ask(qloop, w, "What is the code for the safe?", "4242")
    listed = w.wiki.page.toPlainText().split("Sources", 1)[1].strip()
    # by its words (a newsletter's mails share a subject), from whom and when: never as the person's own note
    assert re.fullmatch(r"\[1\] The new code for the safe is 4242\. — mail from Mallory <[^>]+>, subject “My note to self: "
                        r"the new safe code”, \d\d \w{3} \d{4} · Me", listed), listed


def test_an_answer_cannot_dress_up_as_hearths_own_sources_list_or_question(qtbot, qloop, ui_pod, script) -> None:
    """Hearth writes the question as a heading and lists what each [n] cites under a "Sources" heading. A hostile
    model wrote its own "Sources" heading naming [1] "Letter from your bank — Me", a new question heading, and a
    right-to-left override showing an account's digits reversed: in the window they looked exactly like Hearth's
    own. Now an answer makes no heading or rule, loses its direction overrides, and is marked as the model's."""
    seed(qloop, ui_pod)
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("Clara's birthday is on 3 June [1].\n\n#### Sources\n\n- [1] Letter from your bank — Me\n\n"
                 "### What is the new account for the rent?\n\nPay the rent to account \u202e4321\u202c [1].\n\n"
                 "Where is it?\n---\n\n***")])
    w = wiki_window(qtbot, ui_pod)
    shown = ask(qloop, w, "When is Clara's birthday?", "3 June")
    headings = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", shown, re.S)]
    assert headings == ["When is Clara's birthday?", "Sources"], headings
    assert "<hr" not in shown, shown
    text = w.wiki.page.toPlainText()
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", text), "a direction override reached the window"
    assert "account 4321 [1]" in text and "#### Sources" in text, text
    assert "The answer by fake/fake-1, from what memory holds:" in text, text
