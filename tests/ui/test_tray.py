"""Tray and notifications: in-window fallback offscreen, and a real tray under Xvfb with a tray host."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.main_window import MainWindow
from tests.helpers.fake_model import Text


def test_without_a_tray_notifications_show_in_the_window_and_closing_quits(qtbot, qloop, ui_pod, script) -> None:
    script([Text("weekly report done")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    assert not w.tray.available
    turn_id = ui_pod.create_background_run("helper", "weekly report")
    run = qloop.run(ui_pod.resume_turn(turn_id))
    qloop.run(run.future)
    assert w.notices.isVisible()
    assert w.notices.history[-1] == ("Background run by helper finished", "weekly report done")
    closed: list[bool] = []
    w.closed.connect(lambda: closed.append(True))
    w.close()
    assert closed == [True] and not w.isVisible()


def test_pausing_schedules_from_the_tray_menu_reaches_the_pod(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    assert not ui_pod.schedules_paused
    w.tray.pause_action.trigger()
    assert ui_pod.schedules_paused and w.tray.pause_action.text() == "Resume schedules"
    w.tray.pause_action.trigger()
    assert not ui_pod.schedules_paused


TRAY_PROBE = r"""
import os, sys, asyncio
sys.path.insert(0, os.environ["HEARTH_ROOT"])
import qasync
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
app = QApplication([])
app.setQuitOnLastWindowClosed(False)
loop = qasync.QEventLoop(app); asyncio.set_event_loop(loop)
from app.main_window import MainWindow
from runtime_host.pod import Pod
async def main():
    pod = Pod().first_person()
    w = MainWindow(pod)
    w.show()
    await asyncio.sleep(0.3)
    print("tray", w.tray.available, w.tray.icon is not None and w.tray.icon.isVisible())
    w.close()
    await asyncio.sleep(0.2)
    print("hidden-after-close", not w.isVisible())
    w.tray.open_action.trigger()
    await asyncio.sleep(0.2)
    print("shown-from-tray", w.isVisible())
    w.tray.quit_action.trigger()
    await asyncio.sleep(0.2)
    print("quit", not w.isVisible())
    await pod.close()
with loop:
    loop.run_until_complete(main())
"""


@pytest.mark.skipif(not shutil.which("Xvfb") or not shutil.which("trayer"), reason="needs Xvfb and trayer (make test installs them)")
def test_closing_the_window_keeps_hearth_in_a_real_tray(tmp_path: Path) -> None:
    display = f":{90 + os.getpid() % 50}"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tray = None
    try:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "HEARTH_HOME": str(tmp_path / "h"),
               "HEARTH_ROOT": str(Path(__file__).resolve().parents[2])}
        time.sleep(0.5)
        tray = subprocess.Popen(["trayer", "--edge", "top", "--widthtype", "request"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.8)
        out = subprocess.run([sys.executable, "-c", TRAY_PROBE], env=env, capture_output=True, text=True, timeout=60)
        lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
        assert lines.get("tray") == "True True", out.stdout + out.stderr
        assert lines.get("hidden-after-close") == "True"
        assert lines.get("shown-from-tray") == "True"
        assert lines.get("quit") == "True"
    finally:
        for p in (tray, xvfb):
            if p is not None:
                p.terminate()
                p.wait(5)


def test_a_notify_mail_rule_shows_the_mail_to_its_person_alone(qtbot, qloop, ui_pod) -> None:
    """A rule whose action is "Notify me" made the Pod say so, and the window showed nothing: the person never
    heard of the bank's mail. Bob's window, open on the same Hearth, shows nothing of Alice's mail."""
    from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
    from tests.integration.test_mail_pod import _plain_inbox

    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        acct = _plain_inbox(ui_pod, d, s, rules=[{"id": "bank", "name": "From the bank", "when": [
            {"field": "from", "op": "contains", "value": "bank@"}], "then": [{"action": "notify"}]}])
        w = MainWindow(ui_pod)
        qtbot.addWidget(w)
        w.show()
        ui_pod.add_person("Bob")
        bob = MainWindow(ui_pod.pod.unlock("Bob"))
        qtbot.addWidget(bob)
        d.deliver(make_mail("Your statement", "Your statement is ready.", sender="Bank <bank@example.org>"))
        qloop.run(ui_pod.mail.poll(acct))
        qtbot.waitUntil(lambda: bool(w.notices.history) and w.notices.history[-1][0].startswith("Mail from"), timeout=5000)
        assert w.notices.history[-1] == ("Mail from Bank <bank@example.org>", "Your statement")
        assert not [n for n in bob.notices.history if "Mail" in n[0]]
    finally:
        s.stop()
        d.stop()


@pytest.fixture
def bank_mail(qloop, ui_pod):
    """The first person's inbox on real mail servers, with a "Notify me" rule for the bank's mail; calling the value
    delivers the bank's "Overdraft warning" and polls the inbox, so the rule fires."""
    from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
    from tests.integration.test_mail_pod import _plain_inbox

    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        acct = _plain_inbox(ui_pod, d, s, rules=[{"id": "bank", "name": "From the bank", "when": [
            {"field": "from", "op": "contains", "value": "bank@"}], "then": [{"action": "notify"}]}])

        def overdraft() -> None:
            d.deliver(make_mail("Overdraft warning", "Your account is overdrawn.", sender="Bank <bank@example.org>"))
            qloop.run(ui_pod.mail.poll(acct))
            qloop.run(asyncio.sleep(0.3))

        yield overdraft
    finally:
        s.stop()
        d.stop()


def test_a_notify_mail_rule_that_fires_while_bob_is_shown_reaches_alice_when_she_is_back(qtbot, qloop, ui_pod,
                                                                                          bank_mail) -> None:
    """Alice's "Notify me" rule fired while Bob used the window: the window rightly showed Bob nothing, but the Pod
    tells a rule's notification once, so Alice never heard of the bank's mail, not even when she switched back.
    Now it waits for her and shows when she is back; Bob is never told, then or later."""
    me = ui_pod.person.name
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    bank_mail()
    assert not [n for n in w.notices.history if "Overdraft" in n[1]] and not w.notices.isVisible()
    assert w.switch_person(me)
    assert ("Mail from Bank <bank@example.org>", "Overdraft warning") in w.notices.history
    assert w.notices.isVisible() and "While you were away" in w.notices.label.text()
    assert "Overdraft warning" in w.notices.label.text()
    assert w.switch_person("Bob")  # told to Alice once, and never to Bob
    assert w.switch_person(me) and not w.notices.history
    assert w.switch_person("Bob") and not w.notices.history and not w.notices.isVisible()


def test_alices_notification_kept_while_bob_was_shown_survives_a_quit_and_reaches_her_alone(qtbot, qloop, ui_pod,
                                                                                            home, bank_mail) -> None:
    """Alice's "Notify me" rule fired while Bob used the window, and Bob closed Hearth: what was kept for her lived
    in the window's memory alone, so she never learned of the bank's mail. Now it waits in pod.db and shows when she
    is next shown, after a restart, once, and never to Bob; and only the newest 50 of a person's are kept."""
    from runtime_host.pod import Pod

    me = ui_pod.person.name
    bob = ui_pod.add_person("Bob")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    for n in range(55):  # Bob's own, while Alice is shown: kept for him, the newest 50
        ui_pod.emit({"type": "mail.rule_failed", "person": bob["id"], "rule": "Bills", "text": f"Bob's mail {n}."})
    w.refresh_people()
    assert w.switch_person("Bob")
    assert [t for _, t in w.notices.history] == [f"Bob's mail {n}." for n in range(5, 55)]
    bank_mail()
    assert not [n for n in w.notices.history if "Overdraft" in n[1]]
    w.close()  # Bob closes Hearth
    qloop.run(ui_pod.close())

    again = Pod(home).first_person()  # Hearth starts again, showing Alice
    try:
        w2 = MainWindow(again)
        qtbot.addWidget(w2)
        w2.show()
        assert again.person.name == me
        assert ("Mail from Bank <bank@example.org>", "Overdraft warning") in w2.notices.history
        assert w2.notices.isVisible() and "While you were away" in w2.notices.label.text()
        assert "Overdraft warning" in w2.notices.label.text()
        assert w2.switch_person("Bob")  # never shown to Bob, and his own were told once
        assert not w2.notices.history and not w2.notices.isVisible()
        assert w2.switch_person(me) and not w2.notices.history  # told to Alice once
    finally:
        qloop.run(again.close())


def test_alices_kept_notification_waits_for_her_when_hearth_starts_in_the_tray(qtbot, qloop, ui_pod, home,
                                                                             monkeypatch) -> None:
    """Hearth started at login with --tray: the window was built but not shown, yet it took Alice's kept "Overdraft
    warning" out of pod.db into its hidden bar, where "Hearth is running" replaced it; she never saw it. Now it waits
    in pod.db until she opens the window, then shows under "While you were away", and a later notification shows
    above it without replacing it. Bob's own stays his."""
    import sqlite3

    from PySide6.QtWidgets import QSystemTrayIcon

    from runtime_host.pod import Pod

    bob = ui_pod.add_person("Bob")
    # Bob used the window while Alice's "Notify me" rule fired, and Alice's while his failed: each kept in pod.db
    ui_pod.pod.keep_notice(ui_pod.person.id, "Mail from Bank <bank@example.org>", "Overdraft warning")
    ui_pod.pod.keep_notice(bob["id"], "Mail rule 'Bills' failed", "Acme invoice could not be labelled.")
    qloop.run(ui_pod.close())

    def kept() -> list[str]:
        return [t for (t,) in sqlite3.connect(home / "pod.db").execute("SELECT text FROM kept_notice ORDER BY text")]

    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    again = Pod(home).first_person()  # Hearth starts at login, showing Alice
    try:
        w = MainWindow(again)  # as app/__main__.py does with --tray: built, not shown
        qtbot.addWidget(w)
        assert w.tray.available and not w.isVisible()
        w.tray.notify("Hearth is running", "Schedules and mail go on; open Hearth from the tray icon.")
        assert kept() == ["Acme invoice could not be labelled.", "Overdraft warning"]  # a quit now loses nothing
        w.tray.open_requested.emit()  # Alice opens Hearth from the tray
        assert w.isVisible() and w.notices.isVisible()
        assert "While you were away" in w.notices.label.text() and "Overdraft warning" in w.notices.label.text()
        assert kept() == ["Acme invoice could not be labelled."]  # told to Alice once; Bob's is not hers
        assert "Acme invoice" not in w.notices.label.text()
        w.tray.notify("Scheduled run by Assistant finished", "Weekly report done")  # before she read it
        shown = w.notices.label.text()
        assert "Weekly report done" in shown and "While you were away" in shown and "Overdraft warning" in shown
        w.notices.dismiss()  # she read it and dismissed the bar: the next one shows alone
        w.tray.notify("Scheduled run by Assistant finished", "Monthly report done")
        assert w.notices.isVisible() and "Overdraft warning" not in w.notices.label.text()
        w.refresh_people()
        assert w.switch_person("Bob") and "Acme invoice could not be labelled." in w.notices.label.text()
        assert "Overdraft warning" not in w.notices.label.text() and kept() == []
    finally:
        qloop.run(again.close())


def _bob_with_a_key_and_alice_shown(qtbot, ui_pod, key: str) -> tuple[dict, MainWindow]:
    """Bob, with a provider of his own whose key is ``key``, and the window showing Alice."""
    bob = ui_pod.add_person("Bob")
    ui_pod.pod.add_provider(bob["id"], "bobs", kind="openai-compatible", base_url="http://127.0.0.1:9/v1", key=key)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    return bob, w


def test_a_notification_kept_for_bob_never_writes_his_key_into_pod_db(qtbot, qloop, ui_pod, home) -> None:
    """Bob's memory model failed while Alice was shown, his provider's 401 quoting the key it was sent. Every other
    pod.db row goes through the key redactor ("Keys and passwords are never written there"); the notification kept
    for Bob was written raw. Now the key is hidden in pod.db, and Bob, when shown, still learns what failed."""
    import sqlite3

    key = "sk-bob-live-7f3a9c2e11d04b5f"
    bob, w = _bob_with_a_key_and_alice_shown(qtbot, ui_pod, key)
    # providers/http.py keeps up to 300 characters of the provider's message in the error
    ui_pod.emit({"type": "memory.failed", "person": bob["id"], "job": "memory.producer",
                 "error": f"The extraction model failed: Provider 'bobs' (m) refused the key (HTTP 401: Incorrect API "
                          f"key provided: {key}). Check or replace the key in Settings → Providers."})
    rows = list(sqlite3.connect(home / "pod.db").execute("SELECT title, text FROM kept_notice"))
    assert len(rows) == 1 and key not in rows[0][0] + rows[0][1], rows
    assert not w.notices.isVisible()  # nothing shown to Alice
    w.refresh_people()
    assert w.switch_person("Bob")
    shown = w.notices.label.text()
    assert w.notices.isVisible() and "Memory could not read your new chat and mail" in shown
    assert "Incorrect API key provided: [secret hidden]" in shown and key not in shown


def test_a_timed_memory_run_whose_model_fails_is_told_to_its_person_once(qtbot, qloop, ui_pod, script) -> None:
    """The person's extraction model answered no JSON on the 5-minute timer: the failure went to the ledger and a
    log line, and the window said nothing, run after run, while memory stopped learning their chat. Now they are
    told, once (again only after a run worked), and Bob's window says nothing of it."""
    from datetime import UTC, datetime

    from sqlalchemy import text

    from tests.helpers.fake_model import Text

    inst = ui_pod.find_agent("helper")[0]
    conv = ui_pod.store.create_conversation(inst.id, "Family")
    ui_pod.store.add_message(conv.id, "user", "My sister Clara's birthday is on 3 June and she loves orchids.")
    ui_pod.set_role_model("extraction", "fake/fake-1")
    script([Text("Sure! I would keep the first one, it matters."),  # a real model words its failure anew each time
            Text("Of course. The first message is worth keeping."), Text("I think item 1 should be kept.")],
           repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    ui_pod.add_person("Bob")
    bob = MainWindow(ui_pod.pod.unlock("Bob"))
    qtbot.addWidget(bob)
    pod = ui_pod.pod
    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:
        t = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC).timestamp()
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"), {"t": t})
    for minute in (5, 10, 15):  # three timed runs failing
        qloop.run(pod.tick(datetime(2030, 1, 1, 0, minute, 10, tzinfo=UTC)), timeout=60)
    told = [n for n in w.notices.history if n[0].startswith("Memory could not read")]
    assert len(told) == 1 and "JSON" in told[0][1]
    assert not [n for n in bob.notices.history if "Memory" in n[0]]


def test_a_timed_ingest_shows_a_lost_note_file_in_its_persons_window_alone_and_once(qtbot, qloop, ui_pod) -> None:
    """Bob's note file was lost: the ingest timer left the note in the inbox every 30 minutes, and no window said so.
    Now Bob's window names the file and what to do, in full, once; Alice's window says nothing of it."""
    from datetime import UTC, datetime

    from sqlalchemy import text

    from tests.integration.test_memory_pod import bob_with_his_own_provider
    from wiki_engine import Scope
    from wiki_engine.sources import FIX

    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    bob, as_bob = bob_with_his_own_provider(ui_pod)
    as_bob.set_role_model("ingest", "fake/bob-model")
    bobs = MainWindow(as_bob)
    qtbot.addWidget(bobs)
    pod = ui_pod.pod

    def lose() -> object:
        sid = pod.memory.add_source("Bob's bike lock code is 3090.", scope=f"private/{bob['id']}")
        path = pod.memory.sources.path_for(Scope.parse(f"private/{bob['id']}"), pod.memory.get_source(sid).sha)
        path.chmod(0o644)
        path.unlink()
        return path

    path = qloop.run(pod.in_memory_thread(lose))
    pod.ensure_memory_timers()
    with pod.store.engine.begin() as c:
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"),
                  {"t": datetime(2030, 1, 1, 0, 20, tzinfo=UTC).timestamp()})
        c.execute(text("UPDATE schedules SET paused = 1 WHERE kind != 'memory.ingest'"))
    for hour, minute in ((0, 30), (1, 0)):  # two timed ingests, the file still lost
        qloop.run(pod.tick(datetime(2030, 1, 1, hour, minute, 10, tzinfo=UTC)), timeout=60)
    [(title, said)] = [n for n in bobs.notices.history if str(path) in n[1]]
    assert title == "A note of yours could not be read" and said.endswith(
        "Until then it waits in the inbox; the other notes were written into the wiki."), said
    assert f"A note in Me is missing from disk: {path}." in said and FIX in said, said
    assert not [n for n in w.notices.history if "note" in n[0] or str(path) in n[1]], w.notices.history


def test_a_tray_popup_shows_a_notifications_words_as_written(qtbot, qloop, ui_pod) -> None:
    """The tray's popup was given a mail's subject or a model's words as they were: a Linux notification server
    reads the body as markup, so "<!--" hid the rest of it and "<b>" changed it. Now it shows the words as written."""
    from PySide6.QtGui import QTextDocument

    w = MainWindow(ui_pod, use_tray=False)
    qtbot.addWidget(w)
    shown: list[tuple[str, str]] = []

    class Popup:  # the desktop's notification server, which renders the body as rich text on Linux
        def showMessage(self, title: str, body: str, *_a: object) -> None:  # noqa: N802
            doc = QTextDocument()
            doc.setHtml(body)
            shown.append((title, doc.toPlainText() if sys.platform.startswith("linux") else body))

    w.tray.icon = Popup()  # type: ignore[assignment]
    said = "Lunch <b>Tuesday</b> <!-- and the rest: call the bank & Dr Ames"
    w.tray.notify("Mail from Bank <bank@example.org>", said)
    assert shown == [("Mail from Bank <bank@example.org>", said)]
    assert w.notices.history[-1] == ("Mail from Bank <bank@example.org>", said)


def test_a_key_quoted_near_a_notifications_cut_is_not_half_kept_in_pod_db(qtbot, qloop, ui_pod, home) -> None:
    """Bob's memory model failed while Alice was shown; his provider's 401 quoted his key around the 200th character,
    where a notification's text is cut: the cut key was no longer recognised, and 38 of its 44 characters were
    written to pod.db and shown to him under "While you were away"."""
    import sqlite3

    key = "sk-bob-live-7f3a9c2e11d04b5f9e8d7c6b5a4f3e2d"
    bob, w = _bob_with_a_key_and_alice_shown(qtbot, ui_pod, key)
    # As providers/http.py builds it: a LiteLLM-style proxy quoting the key it was sent, after a longer model name
    error = ("The extraction model failed: Provider 'bobs' (gpt-4o-mini) refused the key "
             "(HTTP 401: Authentication Error, Invalid proxy server token passed. Received API Key = "
             f"{key}, Key Hash (Token) = 1f2e. Unable to find token in cache or the database). "
             "Check or replace the key in Settings → Providers.")
    assert 150 < error.index(key) < 200 < error.index(key) + len(key)  # the key straddles the 200th character
    ui_pod.emit({"type": "memory.failed", "person": bob["id"], "job": "memory.producer", "error": error})
    rows = list(sqlite3.connect(home / "pod.db").execute("SELECT title, text FROM kept_notice"))
    assert len(rows) == 1
    stored = rows[0][0] + rows[0][1]
    leaked = key[:16]  # "sk-bob-live-7f3a": the first 16 characters of Bob's key
    assert leaked not in stored, f"part of Bob's key written to pod.db: {stored!r}"
    w.refresh_people()
    assert w.switch_person("Bob")
    assert leaked not in w.notices.label.text()


def test_a_runs_notification_kept_for_bob_goes_when_he_deletes_the_runs_conversation(qtbot, qloop, ui_pod,
                                                                                      script) -> None:
    """Alice is shown; Bob's scheduled run answers and its notification is kept for him. From his terminal he deletes
    the run's conversation (README: a deleted conversation leaves its words in no file of Hearth's folder). Before,
    the answer stayed in pod.db's kept_notice and was shown to him under "While you were away" after the delete."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import text

    from tests.people.conftest import BOB_PASS

    script([Text("Reminder: your appointment with Dr Lee about the biopsy results is at 15:00.")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    ui_pod.add_person("Bob", BOB_PASS)
    bob = ui_pod.pod.unlock("Bob", BOB_PASS)
    fake = next(p for p in ui_pod.list_providers() if p["name"] == "fake")
    bob.add_provider("fake", kind=fake["kind"], base_url=fake["base_url"], model=fake["model"])
    bob.add_agent("bobs", provider="fake")
    bob.add_schedule("bobs", "* * * * *", "Remind me of today's appointments", tz="UTC", name="Appointments")
    qloop.run(ui_pod.tick(datetime.now(UTC) + timedelta(minutes=2)))
    for run in list(ui_pod.pod.turn_driver.active.values()):
        qloop.run(run.future, timeout=60)
    qtbot.wait(200)
    assert not any("biopsy" in t for _, t in w.notices.history)  # not shown to Alice

    def kept() -> list[str]:
        with ui_pod.store.engine.connect() as c:
            return [r[0] for r in c.execute(text("SELECT text FROM kept_notice"))]

    assert any("biopsy" in t for t in kept())  # kept for Bob while Alice is shown
    for conv in bob.list_conversations("bobs"):  # `--person Bob conversations delete ID --yes`
        qloop.run(bob.delete_conversation(conv["id"]))
    assert not any("biopsy" in t for t in kept())
    w.refresh_people()
    assert w.switch_person("Bob", BOB_PASS)
    qtbot.wait(200)
    assert not [t for _, t in w.notices.history if "biopsy" in t]
