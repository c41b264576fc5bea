"""Approve-and-send cards in the window: edit, approve (sent once over real SMTP), reject (never sent)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import time

import pytest
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel

from app.main_window import MainWindow
from runtime_host.mail.outbox import create_card
from tests.helpers.fake_model import Text, ToolCalls
from tests.helpers.mailservers import Dovecot, SmtpSink


@pytest.fixture
def inbox(ui_pod):
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    acct = ui_pod.mail.add_account(
        ui_pod.person.id, "alice@example.org",
        imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": s.port, "security": "none"}, password="secret")
    try:
        yield acct, s
    finally:
        s.stop()
        d.stop()


def card(pod, acct, subject: str, body: str = "Tuesday works.") -> str:
    c = create_card(pod.store.engine, account_id=acct.id, from_addr=acct.address, to="bob@example.org",
                    subject=subject, body=body, why="Rule 'Lunch' matched")
    pod.emit({"type": "card.created", "person": pod.person.id, "card_id": c.id, "summary": subject})
    return c.id


def agent_drafts(pod, script, to: str, subject: str, body: str, why: str, then: str) -> None:
    """The helper agent, given the mail tools, drafts this mail on the next message, then answers `then`."""
    pod.edit_agent("helper", toolkits=["mail"])
    script([ToolCalls([("draft_mail", {"to": to, "subject": subject, "body": body, "why": why})]),
            lambda req: Text(then)])


def above(w: MainWindow) -> list[str]:
    """The bodies of the cards shown above the window's composer."""
    return [c.body.toPlainText() for c in w._inline.values() if c.isVisibleTo(w)]


def chatting(qtbot, pod, text: str) -> MainWindow:
    """The window, shown on the chat page, with `text` sent to the agent shown."""
    w = MainWindow(pod)
    qtbot.addWidget(w)
    w.show()
    w.show_chat()
    w.composer.setPlainText(text)
    w.send()
    return w


def test_edit_then_approve_sends_once_and_reject_sends_nothing(qtbot, qloop, ui_pod, inbox) -> None:
    acct, sink = inbox
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    first, second = card(ui_pod, acct, "Lunch"), card(ui_pod, acct, "Dinner")
    qloop.wait_until(lambda: w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals (2)", what="the cards")
    assert "Waiting for your approval" in w.notices.history[-1][0]
    cw = w.cards.widgets[first]
    cw.body.setPlainText("Tuesday works. See you at noon!")
    cw.approve.click()
    qloop.wait_until(lambda: first not in w.cards.widgets, what="the send")
    assert w.statusBar().currentMessage() == "“Lunch”: sent."
    (got,) = sink.messages
    assert str(email.message_from_bytes(got.data).get_payload()).strip() == "Tuesday works. See you at noon!"
    other = w.cards.widgets[second]
    other.reject.click()
    qloop.wait_until(lambda: second not in w.cards.widgets, what="the rejection")
    assert "nothing was sent" in w.statusBar().currentMessage()
    assert len(sink.messages) == 1
    qloop.wait_until(lambda: w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals", what="the count")


def test_mail_page_adds_an_inbox_saves_rules_and_polls_into_a_card(qtbot, qloop, ui_pod, script) -> None:
    import json

    from tests.helpers.mailservers import make_mail

    script([Text("Yes, Friday works.")], repeat_last=True)
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.pages.setCurrentWidget(w.mail)
        v = w.mail
        v.address.setText("alice@example.org")
        v.imap_host.setText("127.0.0.1")
        v.imap_port.setValue(d.port)
        v.smtp_host.setText("127.0.0.1")
        v.smtp_port.setValue(s.port)
        v.security.setCurrentIndex(v.security.findData("none"))
        v.username.setText("alice")
        v.password.setText("secret")
        v.add.click()
        assert v.accounts.count() == 1
        qloop.wait_until(lambda: "Inbox added" in v.message.text(), what="the first check")
        v.rules.json_toggle.setChecked(True)  # the advanced view: rules as JSON
        v.rules.json.setPlainText("[{not json")
        v.save_rules.click()
        assert "Rules not saved" in v.message.text()
        v.rules.json.setPlainText(json.dumps([{"id": "fri", "name": "Friday", "when": [
            {"field": "subject", "op": "contains", "value": "Friday"}], "then": [{"action": "draft", "agent": "helper"}]}]))
        v.save_rules.click()
        assert v.message.text().startswith("Saved 1 rule(s) for alice@example.org")
        d.deliver(make_mail("Drinks on Friday?", "Are you in?", sender="Bob <bob@example.org>"))
        v.message.setText("")
        v.poll.click()
        qloop.wait_until(lambda: "handled by rules" in v.message.text(), what="the poll")
        qloop.wait_until(lambda: len(w.cards.widgets) == 1, what="the card")
        assert list(w.cards.widgets.values())[0].body.toPlainText() == "Yes, Friday works."
        assert v.recent.count() == 1 and "Drinks on Friday?" in v.recent.item(0).text()
    finally:
        s.stop()
        d.stop()


def test_a_card_from_this_conversation_shows_inline_and_can_be_approved_there(qtbot, qloop, ui_pod, inbox, script) -> None:
    from PySide6.QtCore import Qt

    acct, sink = inbox
    agent_drafts(ui_pod, script, "bob@example.org", "Tuesday", "Tuesday works.", why="you asked me to confirm",
                 then="I drafted it; it waits for your approval.")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.composer.setPlainText("confirm Tuesday with Bob")
    qtbot.keyClick(w.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qloop.wait_until(lambda: len(w._inline) == 1, what="the inline card")
    inline = next(iter(w._inline.values()))
    assert inline.body.toPlainText() == "Tuesday works." and "you asked me to confirm" in inline.findChildren(
        type(w.header))[0].text()
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    inline.approve.click()
    qloop.wait_until(lambda: not w._inline, what="the card to go")
    assert len(sink.messages) == 1


def test_alices_inline_card_above_the_composer_is_gone_when_bob_takes_the_window(qtbot, qloop, ui_pod, inbox,
                                                                                  script) -> None:
    """Alice's agent drafted a mail during her chat: the card showed above the composer. She switched the window to
    Bob: her draft (recipient, subject, body) stayed above Bob's composer, with Approve and Reject."""
    agent_drafts(ui_pod, script, "clinic@example.org", "Rescheduling my therapy",
                 "I need to move Thursday's session; things at home are bad.", why="you asked me to",
                 then="Drafted; it waits for your approval.")
    w = chatting(qtbot, ui_pod, "move my therapy session")
    qloop.wait_until(lambda: len(w._inline) == 1, what="the inline card")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    qloop.wait_until(lambda: not w._cards_soon.isActive(), what="the card list read after the card's event")
    me = ui_pod.person.name
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.run(asyncio.sleep(0.3))
    w.show_chat()
    assert not above(w), f"Bob's chat shows Alice's draft above the composer: {above(w)}"
    assert w.switch_person(me)  # back on her conversation, her card is above the composer again
    w.show_chat()
    qloop.wait_until(lambda: above(w), what="her inline card back")


def test_a_draft_card_above_the_composer_belongs_to_its_conversation(qtbot, qloop, ui_pod, inbox, script) -> None:
    """The agent drafted a mail in one chat: its card showed above the composer. Opening another conversation (or a
    new one) kept it there, over a chat that never spoke of it; it shows again when its own chat is opened, and it
    stays in Approvals all along."""
    agent_drafts(ui_pod, script, "plumber@example.org", "Leak under the sink",
                 "Could you come on Friday morning?", why="you asked me to", then="Drafted; it waits for your approval.")
    w = chatting(qtbot, ui_pod, "ask the plumber to come friday")
    qloop.wait_until(lambda: len(w._inline) == 1, what="the inline card")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    qloop.wait_until(lambda: not w._cards_soon.isActive(), what="the card list read after the card's event")
    drafted_in = w.conversation_id
    w.load_conversation(None)  # a new conversation
    assert above(w) == [], above(w)
    inst, _ = ui_pod.find_agent("helper")
    w.load_conversation(ui_pod.store.create_conversation(inst.id, "Holiday plans").id)
    assert above(w) == [], above(w)
    assert len(w.cards.widgets) == 1  # still waiting in Approvals
    w.load_conversation(drafted_in)
    qloop.wait_until(lambda: above(w) == ["Could you come on Friday morning?"], what="the card back above the composer")


def test_a_mail_rules_card_made_while_a_chat_answers_is_not_put_above_that_chat(qtbot, qloop, ui_pod, inbox,
                                                                               script) -> None:
    """Alice asked her helper about the weekend; while it answered, a mail rule drafted a reply to Bob's lunch mail
    (in its own conversation). The card was put above the composer of the weekend chat, which never spoke of it,
    and came back whenever that chat was opened. It waits in Approvals alone."""
    acct, _ = inbox
    script([Text("The weekend looks sunny on Saturday and rainy on Sunday, so plan the picnic early.",
                 chunk_chars=2, delay_s=0.05)])
    w = chatting(qtbot, ui_pod, "what's the weather this weekend?")
    qloop.wait_until(lambda: w._live_turn is not None, what="the answer being written")
    card(ui_pod, acct, "Re: Lunch on Tuesday")  # a mail rule's draft, announced as mailhost._card_created does
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer", timeout=30)
    qloop.wait_until(lambda: not w._cards_soon.isActive() and len(w.cards.widgets) == 1, what="the card list read")
    assert above(w) == [], f"a mail rule's card shows above the weekend chat's composer: {above(w)}"
    weekend = w.conversation_id
    w.load_conversation(None)
    w.load_conversation(weekend)  # opened again: still not there
    assert above(w) == []
    assert w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals (1)"


def test_alices_chat_card_made_while_bob_was_shown_is_above_her_chat_when_she_is_back(qtbot, qloop, ui_pod, inbox,
                                                                                     script) -> None:
    """Alice asked her helper to write to the plumber; Bob took the window while it worked, and it drafted the mail
    then. Back on that chat, her card waited in Approvals only, never above the chat it was made in (the window
    filed a card under its chat only as it saw it made). Bob never sees it, in Approvals or above his composer."""
    ui_pod.edit_agent("helper", toolkits=["mail"])
    draft = ToolCalls([("draft_mail", {"to": "plumber@example.org", "subject": "Leak under the sink",
                                       "body": "Could you come on Friday morning?", "why": "you asked me to"})])
    script([lambda req: (time.sleep(1.5), draft)[1], lambda req: Text("Drafted; it waits for your approval.")])
    w = chatting(qtbot, ui_pod, "ask the plumber to come friday")
    qloop.wait_until(lambda: w._live_turn is not None, what="the answer being written")
    drafted_in, alice = w.conversation_id, ui_pod.person
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")  # Bob takes the window while her agent still works on her chat
    assert ui_pod.mail.cards(alice.id) == []  # not drafted yet
    w.show_chat()
    qloop.wait_until(lambda: any(t.status == "done" for t in ui_pod.store.list_turns(conversation_id=drafted_in)),
                     what="her turn done", timeout=30)
    assert len(ui_pod.mail.cards(alice.id)) == 1
    qloop.run(asyncio.sleep(0.5))  # the card's event read, and the card list
    assert above(w) == [] and not w.cards.widgets, "Bob is shown Alice's draft"
    assert w.switch_person(alice.name)
    w.show_chat()
    w.load_conversation(drafted_in)
    qloop.wait_until(lambda: len(w.cards.widgets) == 1, what="her card in Approvals")
    qloop.run(asyncio.sleep(0.3))
    assert above(w) == ["Could you come on Friday morning?"], \
        f"the card her agent drafted in this chat is not above its composer: {above(w)}"


def test_a_chat_card_is_above_its_chat_after_hearth_restarts(qtbot, qloop, ui_pod, inbox, script) -> None:
    """The agent drafted a mail in Alice's chat; after Hearth restarted, opening that chat showed no card above the
    composer (the card waited in Approvals only). It shows there again, and never above Bob's composer."""
    agent_drafts(ui_pod, script, "plumber@example.org", "Leak under the sink",
                 "Could you come on Friday morning?", why="you asked me to", then="Drafted; it waits for your approval.")
    w = chatting(qtbot, ui_pod, "ask the plumber to come friday")
    qloop.wait_until(lambda: len(w._inline) == 1, what="the inline card")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    drafted_in, alice = w.conversation_id, ui_pod.person.name
    ui_pod.add_person("Bob")
    w.close()
    again = MainWindow(ui_pod)  # the window made anew, as at Hearth's next start (the same pod.db)
    qtbot.addWidget(again)
    again.show()
    again.show_chat()
    again.load_conversation(drafted_in)
    qloop.wait_until(lambda: len(again.cards.widgets) == 1, what="the card in Approvals")
    qloop.run(asyncio.sleep(0.3))
    assert above(again) == ["Could you come on Friday morning?"], above(again)
    assert again.switch_person("Bob")
    again.show_chat()
    qloop.run(asyncio.sleep(0.3))
    assert above(again) == [] and not again.cards.widgets, "Bob is shown Alice's draft"
    assert again.switch_person(alice)
    again.show_chat()
    again.load_conversation(drafted_in)
    qloop.wait_until(lambda: above(again) == ["Could you come on Friday morning?"], what="her card back above her chat")


def test_alices_card_being_sent_is_not_shown_in_bobs_approvals_nor_how_it_went(qtbot, qloop, ui_pod, inbox) -> None:
    """Alice approved a drafted reply and her mail server was slow to answer; she switched the window to Bob: her
    card (recipient, subject, whole body) stayed in Bob's Approvals, and "“Divorce papers”: sent." landed in Bob's
    status bar. Now Bob sees neither, the mail is still sent, once, and Alice is told so when she is back."""
    acct, sink = inbox
    sink.delay_s = 1.5
    cid = card(ui_pod, acct, "Divorce papers")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    qloop.wait_until(lambda: cid in w.cards.widgets, what="the card")
    w.pages.setCurrentWidget(w.cards)
    w.cards.widgets[cid].body.setPlainText("I want to file next week; he must not know.")
    w.cards.widgets[cid].approve.click()
    qloop.run(asyncio.sleep(0.3))
    ui_pod.add_person("Bob")
    w.refresh_people()
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    assert w.switch_person("Bob")
    shown = [cw for cw in w.cards.widgets.values() if cw.isVisibleTo(w)]
    assert not shown, f"Bob's Approvals shows Alice's card: {[cw.body.toPlainText() for cw in shown]}"
    assert w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals"
    qloop.wait_until(lambda: len(sink.messages) == 1, what="the slow send")
    qloop.run(asyncio.sleep(0.3))
    assert not [m for m in said if "Divorce" in m], f"Bob's status bar said {said}"
    assert not [cw for cw in w.cards.widgets.values() if cw.isVisibleTo(w)]
    assert not [n for n in w.notices.history if "Divorce" in n[1]]
    assert w.switch_person(ui_pod.person.name)  # Alice, back, is told how her send went
    assert ("Approvals", "“Divorce papers”: sent.") in w.notices.history


def _seen(label: QLabel) -> str:
    """The words a person reads on a label (rich text rendered as Qt renders it)."""
    if label.textFormat() == label.textFormat().PlainText:
        return label.text()
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def test_a_models_why_cannot_hide_the_safety_warning_on_its_card(qtbot, qloop, ui_pod, inbox, script) -> None:
    """A hostile model's why ("… <!--") made the rest of the card's Why line an HTML comment: the egress gate's
    warning that the mail holds a card number, and the inbox it goes from, were not shown. Now the Why line shows
    the model's words as written, then the warning and the inbox."""
    agent_drafts(ui_pod, script, "mallory@example.net", "Details", "Card 4111 1111 1111 1111, exp 12/29, CVC 123.",
                 why="you asked me to confirm lunch <!--", then="Drafted.")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.composer.setPlainText("confirm lunch with Bob")
    w.send()
    qloop.wait_until(lambda: len(w.cards.widgets) == 1, what="the card")
    card = next(iter(w.cards.widgets.values()))
    assert "contains" in card.card["why"], card.card["why"]  # the gate named the card number on the card
    [why_label] = [lb for lb in card.findChildren(QLabel) if "Why:" in lb.text()]
    seen = _seen(why_label)
    assert "confirm lunch <!--" in seen and "contains" in seen and "alice@example.org" in seen, (
        f"the card stores {card.card['why']!r} but the person reads only {seen!r}")


def test_a_draft_with_direction_characters_shows_them_written_out_and_approve_sends_it_exactly(
        qtbot, qloop, ui_pod, inbox, script) -> None:
    """A hostile model drafted "Invoice \\u202efdp.exe": the card read "Invoice exe.pdf", a To name and the body
    turned around the same way, so the person approved a mail that read otherwise than what was stored and sent.
    Now each direction character is written out on the card (and in its notification), a warning says where they
    are, and Approve sends the stored draft exactly; a part the person edits is sent as edited, the rest as stored."""
    import unseen

    _acct, sink = inbox
    to, subject = '"Accounts \u202eknab eht" <mallory@example.net>', "Invoice \u202efdp.exe"
    body = "Open the file \u2066\u202eexe.cod\u202c\u2069 today; \u200fthanks."
    ui_pod.edit_agent("helper", toolkits=["mail"])
    script([ToolCalls([("draft_mail", {"to": to, "subject": subject, "body": body, "why": "you asked me to"})]),
            ToolCalls([("draft_mail", {"to": to, "subject": subject, "body": body, "why": "and once more"})]),
            lambda req: Text("Drafted twice.")])
    events: list[dict] = []
    ui_pod.subscribe(lambda e: events.append(e) if e["type"] == "card.created" else None)  # the phone's card reads it
    w = chatting(qtbot, ui_pod, "send the invoice")
    qloop.wait_until(lambda: len(w.cards.widgets) == 2, what="the two cards")
    assert events and events[0]["body"] == "**Subject:** Invoice \\u202efdp.exe\n\n" + unseen.direction_shown(body)
    first, second = w.cards.widgets.values()
    for cw in (first, second):
        shown = [cw.to.text(), cw.subject.text(), cw.body.toPlainText()] + [lb.text() for lb in cw.findChildren(QLabel)]
        assert not [t for t in shown if unseen.has_direction(t)], f"the card obeys a direction character: {shown!r}"
    assert first.subject.text() == "Invoice \\u202efdp.exe"
    assert first.to.text() == '"Accounts \\u202eknab eht" <mallory@example.net>'
    assert first.body.toPlainText() == "Open the file \\u2066\\u202eexe.cod\\u202c\\u2069 today; \u200fthanks."
    assert first.direction.isVisibleTo(first) and "To, Subject and Body" in first.direction.text()
    told = [text for title, text in w.notices.history if title == "Waiting for your approval"]
    assert told and "Invoice \\u202efdp.exe" in told[-1] and not unseen.has_direction(told[-1]), told

    first.approve.click()
    qloop.wait_until(lambda: len(sink.messages) == 1 and not first.sending, what="the first send")
    sent = email.message_from_bytes(sink.messages[0].data, policy=email.policy.default)
    assert (str(sent["Subject"]), sent.get_content().strip()) == (subject, body), (sent["Subject"], sent.get_content())
    assert "\u202eknab eht" in str(sent["To"]) and sink.messages[0].rcpt_tos == ["mallory@example.net"]

    second.subject.setText("Invoice fdp.exe")  # the person deletes the one in the Subject
    assert "To and Body" in second.direction.text() and "Subject" not in second.direction.text()
    second.approve.click()
    qloop.wait_until(lambda: len(sink.messages) == 2 and not second.sending, what="the second send")
    sent = email.message_from_bytes(sink.messages[1].data, policy=email.policy.default)
    assert str(sent["Subject"]) == "Invoice fdp.exe" and sent.get_content().strip() == body
    assert "\u202eknab eht" in str(sent["To"])


def test_a_right_to_left_mark_in_hebrew_stays_text_without_a_warning(qtbot, qloop, ui_pod, inbox) -> None:
    """A Hebrew subject with a RIGHT-TO-LEFT MARK after its "!" (Hebrew keyboards and mail clients put one there so
    the "!" stays at the sentence's end) showed as "שלום\\u200f!" under the red warning that words read in another
    order: a mark reorders no letters. It reads as text, with no warning, and an edited subject keeps it."""
    acct, sink = inbox
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    subject, body = "שלום\u200f! נתראה ביום שלישי", "תודה רבה\u200f. \u061cمرحبا\u200e"
    cid = card(ui_pod, acct, subject, body)
    qloop.wait_until(lambda: cid in w.cards.widgets, what="the card")
    cw = w.cards.widgets[cid]
    assert (cw.subject.text(), cw.body.toPlainText()) == (subject, body)
    assert not cw.direction.isVisibleTo(cw), cw.direction.text()
    cw.subject.setText(cw.subject.text() + " ok")
    cw.approve.click()
    qloop.wait_until(lambda: len(sink.messages) == 1 and not cw.sending, what="the send")
    sent = email.message_from_bytes(sink.messages[0].data, policy=email.policy.default)
    assert (str(sent["Subject"]), sent.get_content().strip()) == (subject + " ok", body)


def test_a_backslash_u_the_person_types_on_a_card_is_sent_as_typed(qtbot, qloop, ui_pod, inbox) -> None:
    """Alice answers a colleague's question about Unicode: she types the six characters \\u202e into the Body and
    approves. The card showed what she typed, but it was read back over the whole field as a hidden RIGHT-TO-LEFT
    OVERRIDE: the mail sent read the rest of her line backwards. What she types is sent as typed; a hidden one the
    card wrote out and she kept (on the second card, in the Subject) is still sent as the character it stood for."""
    acct, sink = inbox
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    first = card(ui_pod, acct, "Re: unicode question")
    second = card(ui_pod, acct, "Invoice \u202efdp.exe", "Please pay.")
    qloop.wait_until(lambda: {first, second} <= set(w.cards.widgets), what="the cards")
    cw = w.cards.widgets[first]
    typed = "To flip a line, put \\u202e before it (in Python: '\\u202e' + text)."
    cw.body.setPlainText(typed)
    assert cw.body.toPlainText() == typed and not cw.direction.isVisibleTo(cw)  # what she sees, and approves
    cw.approve.click()
    qloop.wait_until(lambda: len(sink.messages) == 1 and not cw.sending, what="the first send")
    sent = email.message_from_bytes(sink.messages[0].data, policy=email.policy.default)
    assert sent.get_content().strip() == typed, repr(sent.get_content())

    cw = w.cards.widgets[second]
    assert cw.subject.text() == "Invoice \\u202efdp.exe" and cw.direction.isVisibleTo(cw)
    cw.subject.setText("Invoice \\u202efdp.exe (write \\u202e as text)")
    cw.body.setPlainText("Please pay \\u202e.")
    assert "Subject" in cw.direction.text() and "Body" not in cw.direction.text()
    cw.approve.click()
    qloop.wait_until(lambda: len(sink.messages) == 2 and not cw.sending, what="the second send")
    sent = email.message_from_bytes(sink.messages[1].data, policy=email.policy.default)
    assert (str(sent["Subject"]), sent.get_content().strip()) == (
        "Invoice \u202efdp.exe (write \\u202e as text)", "Please pay \\u202e."), (sent["Subject"], sent.get_content())
