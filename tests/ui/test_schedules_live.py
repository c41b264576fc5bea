"""Schedules and runs update live from pod events; a run opens its conversation and can be answered there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.main_window import MainWindow
from tests.helpers.fake_model import Text
from tests.ui.test_main_window import send


def test_a_scheduled_run_appears_live_opens_its_conversation_and_takes_a_reply(qtbot, qloop, ui_pod, script) -> None:
    def answer(req):
        last = req.body["messages"][-1]["content"]
        return Text("Moved the 10:00 one." if "10:00" in str(last) else "Good morning: three meetings today.")

    script([answer], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.pages.setCurrentWidget(w.schedules)
    ui_pod.add_schedule("helper", "* * * * *", "Morning briefing", name="Briefing")
    qloop.wait_until(lambda: w.schedules.table.rowCount() == 1, what="the new schedule to show")  # no refresh call
    qloop.run(ui_pod.tick(datetime.now(UTC) + timedelta(minutes=2)))
    ledger = w.schedules.ledger
    qloop.wait_until(lambda: ledger.rowCount() >= 1 and all(ledger.item(i, 3).text() == "ran"
                                                            for i in range(ledger.rowCount())),
                     what="the run to show as done")
    assert w.schedules.ledger.item(0, 2).text() == "Briefing" and w.schedules.ledger.item(0, 1).text() == "helper"
    # columns fit: the prompt column takes the rest, the others their content
    header = w.schedules.table.horizontalHeader()
    assert header.sectionSize(3) > header.sectionSize(0)

    w.schedules.ledger.selectRow(0)
    w.schedules.open_run_button.click()
    assert w.pages.currentIndex() == 0  # the chat
    assert "three meetings today" in w.chat.toPlainText()
    conversation = w.conversation_id
    send(qtbot, w, "Move the 10:00 one")
    qloop.wait_until(lambda: "Moved the 10:00" in w.chat.toPlainText(), what="the reply's answer")
    assert w.conversation_id == conversation
    contents = [m.content for m in ui_pod.store.list_messages(conversation)]
    assert contents[-2:] == ["Move the 10:00 one", "Moved the 10:00 one."] and "Morning briefing" in contents[0]
    # the Runs tab under the chat opens a run's conversation too
    w.new_conversation()
    item = w.runs.topLevelItem(0)
    assert item is not None and item.text(1) == "schedule"
    w.runs.itemDoubleClicked.emit(item, 0)
    assert w.conversation_id in {r["conversation_id"] for r in ui_pod.runs()}
    assert "three meetings today" in w.chat.toPlainText()


def test_pause_and_delete_go_through_the_pod_for_the_person_shown_only(qtbot, qloop, ui_pod) -> None:
    import pytest

    from runtime_host.store import StoreError
    from tests.ui.conftest import answer_confirm

    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.pages.setCurrentWidget(w.schedules)
    mine = ui_pod.add_schedule("helper", "0 9 * * *", "Morning briefing", name="Briefing")
    view = w.schedules
    qloop.wait_until(lambda: view.table.rowCount() == 1, what="the schedule to show")
    view.table.selectRow(0)
    view.pause.click()
    assert view.table.item(0, 4).text() == "paused" and ui_pod.schedules()[0]["paused"]
    view.pause.click()
    assert view.table.item(0, 4).text() == "active" and not ui_pod.schedules()[0]["paused"]

    # Another person's schedule is not theirs to pause or delete, whatever its id.
    ui_pod.add_person("Bob")
    bob = ui_pod.unlock("Bob")
    with pytest.raises(StoreError, match="does not exist"):
        bob.pause_schedule(mine["id"], True)
    with pytest.raises(StoreError, match="does not exist"):
        bob.delete_schedule(mine["id"])
    assert len(ui_pod.schedules()) == 1 and not ui_pod.schedules()[0]["paused"]

    view.refresh()
    view.table.selectRow(0)
    answer_confirm("Delete")
    view.delete.click()
    qloop.wait_until(lambda: view.table.rowCount() == 0, what="the deleted schedule to go")
    assert ui_pod.schedules() == [] and "deleted" in view.message.text()


def test_a_deleted_schedules_run_stays_in_the_ledger_and_still_opens(qtbot, qloop, ui_pod, script) -> None:
    """The delete dialog says "its past runs stay in the ledger": they went with the schedule. Now the run stays,
    marked as the deleted schedule's, and opens its conversation; Bob's window never shows it."""
    script([Text("Good morning: three meetings today.")], repeat_last=True)
    ui_pod.add_person("Bob")
    bob = ui_pod.unlock("Bob")
    from sqlalchemy import text

    from tests.ui.conftest import answer_confirm

    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.pages.setCurrentWidget(w.schedules)
    view = w.schedules
    ui_pod.add_schedule("helper", "0 9 * * *", "Morning briefing", tz="UTC", name="Briefing")
    qloop.wait_until(lambda: view.table.rowCount() == 1, what="the new schedule to show")
    with ui_pod.store.engine.begin() as c:  # made the evening before: this morning's run is due
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t"),
                  {"t": datetime(2030, 1, 1, 20, 0, tzinfo=UTC).timestamp()})
    qloop.run(ui_pod.tick(datetime(2030, 1, 2, 9, 0, 20, tzinfo=UTC)))
    qloop.wait_until(lambda: view.ledger.rowCount() == 1 and view.ledger.item(0, 3).text() == "ran",
                     what="the run to show as done")
    view.table.selectRow(0)
    answer_confirm("Delete")
    view.delete.click()
    qloop.wait_until(lambda: view.table.rowCount() == 0, what="the deleted schedule to go")
    assert view.ledger.rowCount() == 1, "its past run went from the ledger"
    assert [view.ledger.item(0, j).text() for j in (1, 2, 3)] == ["helper", "Briefing (deleted)", "ran"]
    assert bob.schedule_ledger() == []
    view.ledger.selectRow(0)
    view.open_run_button.click()
    assert w.pages.currentIndex() == 0 and "three meetings today" in w.chat.toPlainText()
