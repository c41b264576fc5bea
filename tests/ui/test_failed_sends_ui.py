"""An approved card whose send failed stays on the Approvals page (and inline) with the reason and a Retry;
against the real loopback SMTP server stopped and started again, Retry sends it once."""

from __future__ import annotations

from app.main_window import MainWindow
from tests.helpers.mailservers import Dovecot, SmtpSink
from tests.ui.test_cards import card


def test_a_failed_send_stays_with_the_reason_and_retry_sends_it_once(qtbot, qloop, ui_pod) -> None:
    d, s = Dovecot({"alice": "secret"}).start(), SmtpSink().start()
    try:
        acct = ui_pod.mail.add_account(
            ui_pod.person.id, "alice@example.org",
            imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
            smtp={"host": "127.0.0.1", "port": s.port, "security": "none", "timeout_s": 5}, password="secret")
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        cid = card(ui_pod, acct, "Lunch")
        s.stop()
        qloop.wait_until(lambda: cid in w.cards.widgets, what="the card")
        cw = w.cards.widgets[cid]
        cw.approve.click()
        qloop.wait_until(lambda: "cannot reach the mail server" in cw.message.text(), what="the failed send")
        qloop.wait_until(lambda: True)
        assert w.cards.widgets.get(cid) is cw  # it did not vanish
        assert cw.approve.text() == "Retry send" and cw.approve.isEnabled()
        assert w.pages.tabText(w.pages.indexOf(w.cards)) == "Approvals (1)"
        # a window opened later shows it the same way
        w2 = MainWindow(ui_pod)
        qtbot.addWidget(w2)
        w2.cards.refresh()
        later = w2.cards.widgets[cid]
        assert "cannot reach the mail server" in later.message.text() and later.approve.text() == "Retry send"
        s.start()
        cw.approve.click()
        qloop.wait_until(lambda: cid not in w.cards.widgets, what="the retried send")
        assert w.statusBar().currentMessage() == "“Lunch”: sent."
        assert len(s.messages) == 1
    finally:
        s.stop()
        d.stop()
