"""Settings → People in the window (real widgets offscreen): Remove… says what goes, counted, and that it cannot be
undone; it is confirmed by the person's passphrase (removing themselves) or by typing the name (the person who set
Hearth up removing another); the window then shows a person who remains."""

from __future__ import annotations

from typing import Any

from app.main_window import MainWindow
from tests.people.conftest import BOB_PASS
from tests.ui.conftest import answer_confirm
from tests.ui.test_person_name import prompts_answered


def _bob(ui_pod: Any, base_url: str) -> Any:
    ui_pod.rename("Alice")
    ui_pod.pod.add_person("Bob", BOB_PASS)
    bob = ui_pod.pod.unlock("Bob", BOB_PASS)
    bob.add_provider("fake", kind="openai-compatible", base_url=base_url, model="fake-1")
    bob.add_agent("helper", provider="fake", system="You help Bob.")
    inst = bob.find_agent("helper")[0]
    for title in ("Plans", "Garden"):
        bob.pod.store.create_conversation(inst.id, title)
    return bob


def _choose(dlg: Any, name: str) -> None:
    people = dlg.people.list
    people.setCurrentRow(next(i for i in range(people.count()) if people.item(i).data(0x0100) == name))


def test_bob_removes_himself_and_the_window_shows_alice(qtbot, qloop, ui_pod, fake_model, secure_keyring) -> None:
    bob_id = _bob(ui_pod, fake_model.base_url).person_id
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    assert w.switch_person("Bob", BOB_PASS)
    dlg = w.settings_dialog()
    qtbot.addWidget(dlg)
    dlg.show()
    _choose(dlg, "Bob")
    typed = prompts_answered(["not-his-passphrase"])
    shown = answer_confirm("Remove…", details=True)
    dlg.people.remove.click()
    qloop.wait_until(lambda: "not your passphrase" in dlg.people.message.text(), what="the refusal")
    assert typed == ["Your passphrase, to confirm that you remove yourself:"]
    assert shown[0].startswith("Remove yourself from this Hearth?\nEverything of yours goes: 2 conversation(s), "
                               "1 agent(s)"), shown[0]
    assert "0 inbox(es)" in shown[0] and shown[0].endswith("This cannot be undone.")
    assert ui_pod.pod.store.get_person_by_id(bob_id) is not None and w.pod.person.name == "Bob"

    prompts_answered([BOB_PASS])
    answer_confirm("Remove…")
    dlg.people.remove.click()
    qloop.wait_until(lambda: w.pod.person.name == "Alice", what="the window to show Alice")
    assert ui_pod.pod.store.get_person_by_id(bob_id) is None
    assert [w.person_box.itemData(i) for i in range(w.person_box.count())] == ["Alice"]
    assert w.statusBar().currentMessage() == "Bob was removed. Now using Hearth as Alice."
    assert not dlg.isVisible()  # Bob's settings closed with him
    assert [a["name"] for a in w.pod.list_agents()] == ["helper"] and w.agents.count() == 1  # Alice's own


def test_the_owner_removes_bob_by_typing_his_name(qtbot, qloop, ui_pod, fake_model, secure_keyring) -> None:
    bob_id = _bob(ui_pod, fake_model.base_url).person_id
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    dlg = w.settings_dialog()
    qtbot.addWidget(dlg)
    _choose(dlg, "Bob")
    shown = answer_confirm("Cancel", details=True)
    dlg.people.remove.click()
    qloop.wait_until(lambda: dlg.people.message.text() == "Nobody removed.", what="the cancel")
    assert shown[0].startswith("Remove Bob from this Hearth?\nEverything of Bob's goes: 2 conversation(s)"), shown
    typed = prompts_answered(["bob"])
    answer_confirm("Remove…")
    dlg.people.remove.click()
    qloop.wait_until(lambda: "exactly" in dlg.people.message.text(), what="the refusal")
    assert typed == ["Type Bob to confirm:"] and ui_pod.pod.store.get_person_by_id(bob_id) is not None

    prompts_answered(["Bob"])
    answer_confirm("Remove…")
    dlg.people.remove.click()
    qloop.wait_until(lambda: dlg.people.message.text() == "Removed Bob with everything theirs.", what="the removal")
    assert ui_pod.pod.store.get_person_by_id(bob_id) is None
    assert [dlg.people.list.item(i).text() for i in range(dlg.people.list.count())] == ["Alice (you)"]
    assert [w.person_box.itemData(i) for i in range(w.person_box.count())] == ["Alice"] and w.pod.person.name == "Alice"


def test_after_bob_removes_himself_a_locked_alice_is_asked_for_her_passphrase(qtbot, qloop, ui_pod, fake_model,
                                                                               secure_keyring) -> None:
    _bob(ui_pod, fake_model.base_url)
    ui_pod.set_passphrase("alice-passphrase")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    assert w.switch_person("Bob", BOB_PASS)
    dlg = w.settings_dialog()
    qtbot.addWidget(dlg)
    _choose(dlg, "Bob")
    asked = prompts_answered([BOB_PASS, "a-wrong-guess", "alice-passphrase"])
    answer_confirm("Remove…")
    dlg.people.remove.click()
    qloop.wait_until(lambda: w.pod.person.name == "Alice", what="the window to show Alice")
    assert asked[1:] == ["Bob was removed from this Hearth.\n\nPassphrase for Alice:",
                         "That passphrase does not unlock Alice. Try again.\n\nPassphrase for Alice:"], asked
    assert [w.person_box.itemData(i) for i in range(w.person_box.count())] == ["Alice"]
