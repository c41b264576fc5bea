"""Mail in the window: rules edited in a form (JSON one toggle away), remove an inbox (asks first), and every
button says what happened."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from app.main_window import MainWindow
from runtime_host.mail import ledger
from tests.ui.conftest import answer_confirm


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _inbox(pod):
    port = _dead_port()
    return pod.mail.add_account(pod.person.id, "me@example.test",
                                imap={"host": "127.0.0.1", "port": port, "username": "me", "security": "none"},
                                smtp={"host": "127.0.0.1", "port": port, "username": "me", "security": "none"},
                                password="mail-secret-1")


def test_rules_are_edited_in_a_form_and_saved_as_the_engine_reads_them(qtbot, qloop, ui_pod, secure_keyring) -> None:
    acct = _inbox(ui_pod)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.pages.setCurrentWidget(w.mail)
    ed = w.mail.rules
    assert ed.list.count() == 0
    ed.add_rule.click()
    ed.name.setText("Invoices")
    ed.name.textEdited.emit("Invoices")
    field, test, value = (ed.conditions.cellWidget(0, c) for c in range(3))
    field.setCurrentIndex(field.findData("from"))
    value.setText("@billing.example.com")
    value.textEdited.emit(value.text())
    ed.add_condition.click()
    field2, test2, value2 = (ed.conditions.cellWidget(1, c) for c in range(3))
    test2.setCurrentIndex(test2.findData("not_contains"))
    value2.setText("newsletter")
    value2.textEdited.emit(value2.text())
    kind, agent, detail = (ed.actions.cellWidget(0, c) for c in range(3))
    kind.setCurrentIndex(kind.findData("hand"))
    agent.setCurrentIndex(agent.findData("helper"))
    detail.setText("File this invoice.")
    detail.textEdited.emit(detail.text())
    w.mail.save_rules.click()
    assert "Saved 1 rule(s)" in w.mail.message.text()
    saved = ledger.get_account(ui_pod.store.engine, acct.id).rules
    assert saved == [{"id": "rule-1", "name": "Invoices", "match": "all", "enabled": True, "stop": False,
                      "when": [{"field": "from", "op": "contains", "value": "@billing.example.com"},
                               {"field": "subject", "op": "contains", "not": True, "value": "newsletter"}],
                      "then": [{"action": "hand", "agent": "helper", "prompt": "File this invoice."}]}]

    # the JSON stays available, and an edit there comes back into the form
    ed.json_toggle.setChecked(True)
    assert json.loads(ed.json.toPlainText()) == saved
    edited = [{**saved[0], "name": "Bills"}]
    ed.json.setPlainText(json.dumps(edited))
    ed.json_toggle.setChecked(False)
    assert ed.list.item(0).text() == "Bills" and ed.name.text() == "Bills"
    # a rule the engine refuses is not saved, and the message names the problem
    ed.conditions.cellWidget(0, 2).setText("")
    ed.conditions.cellWidget(0, 2).textEdited.emit("")
    w.mail.save_rules.click()
    assert "Rules not saved" in w.mail.message.text() and "non-empty" in w.mail.message.text()
    assert ledger.get_account(ui_pod.store.engine, acct.id).rules == saved


def test_check_now_reports_a_dead_server_and_remove_asks_then_forgets_the_inbox(qtbot, qloop, ui_pod,
                                                                                secure_keyring) -> None:
    acct = _inbox(ui_pod)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.pages.setCurrentWidget(w.mail)
    w.mail.poll.click()
    qloop.wait_until(lambda: "Could not check me@example.test" in w.mail.message.text(), what="the poll's outcome")
    assert w.mail.poll.isEnabled()
    shown = answer_confirm("Cancel")
    w.mail.remove.click()
    assert shown == ["Remove the inbox me@example.test?"] and w.mail.message.text() == "Nothing removed."
    answer_confirm("Remove")
    w.mail.remove.click()
    qloop.wait_until(lambda: "Removed me@example.test" in w.mail.message.text(), what="the removal")
    assert ui_pod.mail.accounts(ui_pod.person.id) == [] and w.mail.accounts.count() == 0
    assert ui_pod.vault().get(f"mail/{acct.id}/imap") is None


def _mail_shown(w) -> str:
    ed = w.mail.rules
    parts = [w.mail.accounts.item(i).text() for i in range(w.mail.accounts.count())]
    parts += [ed.list.item(i).text() for i in range(ed.list.count())]
    parts += [ed.name.text(), ed.json.toPlainText()]
    for r in range(ed.conditions.rowCount()):
        cell = ed.conditions.cellWidget(r, 2)
        parts.append(cell.text() if cell is not None and hasattr(cell, "text") else "")
    parts += [w.mail.recent.item(i).text() for i in range(w.mail.recent.count())]
    return " | ".join(parts)


def test_switching_person_on_the_mail_page_shows_nothing_of_the_first(qtbot, qloop, ui_pod, secure_keyring) -> None:
    """With the Mail page showing, a switch left the first person's inbox and the rule they were typing on screen."""
    _inbox(ui_pod)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.pages.setCurrentWidget(w.mail)
    ed = w.mail.rules
    ed.add_rule.click()
    ed.name.setText("Divorce lawyer")
    ed.name.textEdited.emit("Divorce lawyer")
    value = ed.conditions.cellWidget(0, 2)
    value.setText("@harper-family-law.example")
    value.textEdited.emit(value.text())
    assert "Divorce lawyer" in _mail_shown(w) and "me@example.test" in _mail_shown(w)
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.run(asyncio.sleep(0.3))
    shown = _mail_shown(w)
    assert "me@example.test" not in shown and "Divorce" not in shown and "harper" not in shown, shown


def test_switching_person_on_the_mail_page_shows_the_next_persons_inboxes(qtbot, qloop, ui_pod, secure_keyring) -> None:
    """A switch on the Mail page cleared the first person's inboxes but never read the next person's: the page stayed
    empty until they left it and came back."""
    port = _dead_port()
    ui_pod.add_person("Bob")
    bob = ui_pod.store.get_person("Bob")
    ui_pod.mail.add_account(ui_pod.person.id, "me@example.test",
                            imap={"host": "127.0.0.1", "port": port, "username": "me", "security": "none"},
                            smtp={"host": "127.0.0.1", "port": port, "username": "me", "security": "none"},
                            password="mail-secret-1")
    ui_pod.mail.add_account(bob.id, "bob@example.test",
                            imap={"host": "127.0.0.1", "port": port, "username": "bob", "security": "none"},
                            smtp={"host": "127.0.0.1", "port": port, "username": "bob", "security": "none"},
                            password="mail-secret-2")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.pages.setCurrentWidget(w.mail)
    assert w.mail.accounts.count() == 1
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.run(asyncio.sleep(0.3))
    assert w.pages.currentWidget() is w.mail
    shown = [w.mail.accounts.item(i).text() for i in range(w.mail.accounts.count())]
    assert any("bob@example.test" in s for s in shown), (shown, w.mail.add_box.isVisible())


def test_a_rule_that_could_not_act_is_shown_in_its_owners_mail_view_alone(qtbot, qloop, ui_pod) -> None:
    """Alice's rule "hand invoices to Bookkeeper" failed (she has no agent of that name): the Mail view showed the
    invoice among the recent mail and nothing else, so she never learned the rule did nothing. Now the Mail view lists
    the rule, the mail, why and what to do, and a notification says so; Bob, on the same Hearth with an inbox of his
    own, sees none of it."""
    from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
    from tests.integration.test_mail_pod import _plain_inbox

    d = Dovecot({"alice": "secret", "bob": "bobsecret"}).start()
    s = SmtpSink().start()
    try:
        _plain_inbox(ui_pod, d, s, rules=[{"id": "invoices", "name": "Invoices to Bookkeeper", "when": [
            {"field": "subject", "op": "contains", "value": "invoice"}],
            "then": [{"action": "hand", "agent": "Bookkeeper", "prompt": "File this invoice."}]}])
        ui_pod.add_person("Bob")
        as_bob = ui_pod.pod.unlock("Bob")
        as_bob.mail.add_account(
            as_bob.person.id, "bob@example.org",
            imap={"host": "127.0.0.1", "port": d.port, "username": "bob", "security": "none", "timeout_s": 10},
            smtp={"host": "127.0.0.1", "port": s.port, "security": "none"}, password="bobsecret", start_at="all")
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.show()
        bob = MainWindow(as_bob)
        qtbot.addWidget(bob)
        bob.show()
        d.deliver(make_mail("Invoice 4471", "Please pay invoice 4471.", sender="Billing <billing@example.org>"))
        w.pages.setCurrentWidget(w.mail)
        w.mail.poll.click()
        qloop.wait_until(lambda: w.mail.problems.count() == 1, what="the rule's problem in the Mail view")
        shown = w.mail.problems.item(0).text()
        assert shown.startswith("Rule 'Invoices to Bookkeeper' did not hand “Invoice 4471” from Billing"), shown
        assert "'Bookkeeper'" in shown and "hand it on yourself" in shown
        assert w.mail.problems.isVisible()
        assert ("Mail rule 'Invoices to Bookkeeper' failed", shown) in w.notices.history

        bob.pages.setCurrentWidget(bob.mail)
        bob.mail.poll.click()
        qloop.wait_until(lambda: "new message" in bob.mail.message.text(), what="Bob's check")
        assert bob.mail.problems.count() == 0 and not bob.mail.problems.isVisible()
        assert not [n for n in bob.notices.history if "Invoice" in n[1] or "rule" in n[0].lower()], bob.notices.history
    finally:
        s.stop()
        d.stop()


def test_a_senders_and_subjects_direction_overrides_are_not_obeyed_in_the_mail_view(qtbot, qloop, ui_pod) -> None:
    """A stranger's name "\u202emoc.knab@ecivres" showed as "service@bank.com" in Recent mail, in the rule problem
    and in the notification (a right-to-left override turns the rest of the line around), and a subject "Invoice
    \u202efdp.exe" as "Invoice exe.pdf". Now each shows as it is stored, without the overrides, as the wiki does."""
    from email.header import Header
    from email.utils import formataddr

    from app.markdown import without_overrides
    from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
    from tests.integration.test_mail_pod import _plain_inbox

    name, subject = "\u202emoc.knab@ecivres", "Invoice \u202efdp.exe\u202c now"
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        _plain_inbox(ui_pod, d, s, rules=[
            {"id": "all", "name": "Everything", "when": [{"field": "from", "op": "contains", "value": "@"}],
             "then": [{"action": "notify"}, {"action": "hand", "agent": "Bookkeeper", "prompt": "File it."}]}])
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.show()
        d.deliver(make_mail(Header(subject, "utf-8").encode(), "Please pay.",
                            sender=formataddr((name, "billing@lookalike.example"), charset="utf-8")))
        w.pages.setCurrentWidget(w.mail)
        w.mail.poll.click()
        qloop.wait_until(lambda: w.mail.problems.count() == 1 and w.mail.recent.count() == 1,
                         what="the mail and its rule's problem in the Mail view")
        qloop.wait_until(lambda: any(t.startswith("Mail from") for t, _ in w.notices.history), what="the notice")
        listed = w.mail.recent.item(0).text()
        assert listed == f"{without_overrides(name)} <billing@lookalike.example> — Invoice fdp.exe now", listed
        shown = [listed, w.mail.problems.item(0).text(), *(t + " " + x for t, x in w.notices.history),
                 w.notices.label.text()]
        assert not [t for t in shown if without_overrides(t) != t], shown
        assert "moc.knab@ecivres" in w.mail.problems.item(0).text() and "fdp.exe" in w.notices.label.text()
    finally:
        s.stop()
        d.stop()


def _add_in_the_window(qloop, w, port: int, read_existing: bool) -> str:
    """Mail → Add an inbox, typed as a person types it, on the loopback IMAP server; what the window said after."""
    m = w.mail
    m.add_toggle.setChecked(True)
    m.address.setText("alice@example.org")
    for host, port_box in ((m.imap_host, m.imap_port), (m.smtp_host, m.smtp_port)):
        host.setText("127.0.0.1")
        port_box.setValue(port)
    m.security.setCurrentIndex(m.security.findData("none"))
    m.username.setText("alice")
    m.password.setText("secret")
    m.read_existing.setChecked(read_existing)
    m.add.click()
    qloop.wait_until(lambda: "new message(s)" in m.message.text() or "Could not" in m.message.text(),
                     what="the first check")
    return m.message.text()


@pytest.mark.parametrize("read_existing", [True, False])
def test_an_inbox_added_in_the_window_reads_the_mail_already_in_it_when_asked(qtbot, qloop, ui_pod, secure_keyring,
                                                                              read_existing) -> None:
    """An inbox added in the window was read from "now" only, with no way to choose otherwise and no word of it: its
    first check said "0 new message(s)" and none of the mail already in it ever reached memory (README: "A first
    check of a big inbox … is remembered over the next runs"). Ticking "Also read the mail already in this inbox"
    keeps it, and memory learns from it; unticked, the window says the mail already there is left alone."""
    from tests.helpers.mailservers import Dovecot, make_mail

    d = Dovecot({"alice": "secret"}).start()
    try:
        for i, (subject, body) in enumerate([("Allotment", "Plot 14 at the Larkmead allotment is yours."),
                                             ("Dentist", "Your Larkmead dental check-up is on 3 July at 10:00.")]):
            d.deliver(make_mail(subject, body, sender="Ana <ana@example.org>", message_id=f"<b{i}@example.org>"))
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.pages.setCurrentWidget(w.mail)
        said = _add_in_the_window(qloop, w, d.port, read_existing)
        assert not w.mail.read_existing.isChecked()  # the next inbox is asked anew
        qloop.run(ui_pod.memory_produce(), timeout=60)
        found = qloop.run(ui_pod.memory_search("Larkmead", mode="keyword"))
    finally:
        d.stop()
    if read_existing:
        assert said.startswith("Inbox added; Hearth checks it every minute. 2 new message(s)"), said
        assert len(found) == 2, found
    else:
        assert "0 new message(s)" in said and "the mail already in the inbox is left alone" in said, said
        assert found == [], found
