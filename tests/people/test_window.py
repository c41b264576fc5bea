"""Two people in the window (real widgets offscreen): choosing Bob hides Me's conversations, opening one
of them by id shows nothing and is audited; Me's schedule that runs while Bob is shown uses Me's key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.main_window import MainWindow
from tests.helpers.fake_model import Text
from tests.people.conftest import BOB_KEY, BOB_PASS, ME_KEY, denials, keys_sent
from tests.ui.test_main_window import send


def test_choosing_another_person_hides_everything_of_the_first(qtbot, qloop, ui_pod, script, fake_model,
                                                                 secure_keyring) -> None:
    script([Text("the private answer")], repeat_last=True)
    ui_pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1", key=ME_KEY)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "Me's diary entry")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    mine = w.conversation_id
    assert mine and w.conversations.topLevelItemCount() >= 1
    ui_pod.add_person("Bob", BOB_PASS)
    w.refresh_people()
    assert not w.switch_person("Bob", "wrong-guess")
    assert w.pod.person.name == ui_pod.person.name  # still Me
    assert w.switch_person("Bob", BOB_PASS)
    bob = w.pod
    assert bob.person.name == "Bob"
    assert w.conversations.topLevelItemCount() == 0 and w.agents.count() == 0
    assert "diary" not in w.chat.toPlainText()
    w.load_conversation(mine)  # what a stale item or a pasted id would do
    assert "diary" not in w.chat.toPlainText() and "private answer" not in w.chat.toPlainText()
    assert w.steps.topLevelItemCount() == 0 and w.conversation_id is None
    assert any(mine in d["summary"] for d in denials(bob))
    assert any(d["rule"] == "person.passphrase" for d in denials(bob))
    # Me's schedule comes due while Bob is shown: it runs with Me's key, not Bob's "fake"
    bob.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1", key=BOB_KEY)
    ui_pod.add_schedule("helper", "* * * * *", "Me's scheduled digest", tz="UTC")
    qloop.run(ui_pod.tick(datetime.now(UTC) + timedelta(minutes=1)))
    for run in list(ui_pod.pod.turn_driver.active.values()):
        qloop.run(run.future, timeout=60)
    assert keys_sent(fake_model, "Me's scheduled digest") == {f"Bearer {ME_KEY}"}
    assert w.runs.topLevelItemCount() == 0 and not w.notices.history  # nothing of it shown to Bob


def test_a_locked_first_person_is_asked_before_the_window_shows_anything(qtbot, qloop, ui_pod) -> None:
    """On a shared computer, starting Hearth never shows a locked person's conversations: the start-up
    asks for the passphrase, audits a wrong one, and a Cancel opens nothing."""
    from app.main_window import open_first_person
    from tests.people.conftest import denials

    ui_pod.set_passphrase("first-person-pass")
    core = ui_pod.pod
    asked: list[tuple[str, str | None]] = []
    answers = iter(["not-the-passphrase", "first-person-pass"])

    def ask(name: str, error: str | None) -> str | None:
        asked.append((name, error))
        return next(answers)

    me = open_first_person(core, ask)
    assert me is not None and me.person_id == ui_pod.person_id
    assert [n for n, _ in asked] == [ui_pod.person.name] * 2 and asked[0][1] is None
    assert asked[1][1] and "passphrase" in asked[1][1].lower()  # the second prompt says why it asks again
    assert denials(me), "the wrong passphrase is in the person's Activity"
    assert open_first_person(core, lambda name, error: None) is None  # Cancel: no window, no person
