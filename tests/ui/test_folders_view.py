"""The wiki page's watched folders and ingest bar, as a person uses them: real widgets offscreen, a real Pod,
real files in a temporary folder, and the fake model on loopback where a model writes pages."""

from __future__ import annotations

import json
import os
import re
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.dialogs import SettingsDialog
from app.main_window import MainWindow
from tests.helpers.fake_model import FakeModelServer, Script, Text
from tests.ui.conftest import answer_confirm


def test_watched_folder_imports_in_the_background_with_progress_and_file_status(qtbot, qloop, ui_pod, tmp_path) -> None:
    docs = tmp_path / "Documents"
    for i in range(700):  # several batches
        sub = docs / f"topic-{i % 7}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:04d}.md").write_text(f"Note {i}: the allotment shed number {i} needs a new padlock.\n")
    (docs / "blob.txt").write_bytes(b"\x00\x01" + os.urandom(3000))
    (docs / "photo.jpg").write_bytes(b"\xff\xd8\xff" + os.urandom(100))
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    seen: list[tuple[int, int, bool]] = []
    ui_pod.subscribe(lambda ev: seen.append((ev["done"], ev["total"], view.progress.isVisibleTo(view)))
                     if ev.get("type") == "folders.progress" and ev["phase"] == "importing" else None)
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(5)
    task = view.add_folder(str(docs))
    assert task is not None
    qloop.run(task, timeout=120)
    timer.stop()
    # progress was shown batch by batch, and the window kept running meanwhile (the work is off its thread)
    assert [d for d, t, _ in seen][-1] == 702 and len(seen) >= 4 and all(t == 702 for _, t, _ in seen)
    assert any(shown for *_, shown in seen[1:])
    # the window's timer kept firing all along: no pause of a second or more while 700 files were imported
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) >= 20 and max(gaps) < 1.0, f"the window froze for {max(gaps):.2f} s"
    assert not view.progress.isVisibleTo(view)
    assert "700 indexed, 2 skipped." in view.progress_label.text()
    assert view.folders.count() == 1 and "700 indexed" in view.folders.item(0).text()
    assert view.files.topLevelItemCount() == 702
    view.only.setCurrentIndex(view.only.findData("skipped"))
    rows = {view.files.topLevelItem(i).text(0): view.files.topLevelItem(i).text(2)
            for i in range(view.files.topLevelItemCount())}
    assert set(rows) == {"blob.txt", "photo.jpg"}
    assert "binary" in rows["blob.txt"] and ".jpg" in rows["photo.jpg"]
    hits = qloop.run(ui_pod.memory_search("allotment shed 123 padlock", k=3))
    assert hits and "topic-4/note-0123.md" in [h.title for h in hits]
    # another person sees no folder and none of its files
    ui_pod.add_person("Bob")
    view.pod = ui_pod.unlock("Bob")  # what the window does when Bob is chosen
    view.refresh()
    assert view.folders.count() == 0 and view.files.topLevelItemCount() == 0
    view.pod = ui_pod
    view.refresh()
    # removing asks first, then deletes what the folder imported
    view.folders.setCurrentRow(0)
    answer_confirm("Cancel")
    view.remove.click()
    assert view.folders.count() == 1
    answer_confirm("Remove")
    view.remove.click()
    qloop.wait_until(lambda: view.folders.count() == 0, what="the folder to go")
    qloop.wait_until(lambda: "No longer watching" in view.progress_label.text(), what="the removal's outcome")
    assert "700 imported source(s) deleted" in view.progress_label.text()
    assert qloop.run(ui_pod.memory_search("allotment padlock", mode="keyword")) == []


def test_a_folder_that_cannot_be_watched_says_why(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    view = w.wiki.folders
    assert view.add_folder(str(ui_pod.home)) is None
    assert "Hearth's own data" in view.progress_label.text()
    assert view.folders.count() == 0


def test_bob_adding_a_folder_alice_watches_is_told_to_choose_another(qtbot, qloop, ui_pod, tmp_path) -> None:
    """Bob's window: *Add folder…* on the folder holding Alice's watched diary. It imported her files into his
    memory; it is refused in the tab's line, naming neither Alice nor her folder, and nothing is listed."""
    diary = tmp_path / "shared" / "alice-diary"
    diary.mkdir(parents=True)
    (diary / "d.md").write_text("Alice's diary: I am planning to leave my job at Initech in March.\n")
    ui_pod.folders.add(diary)
    ui_pod.add_person("Bob")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to load for Bob")
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    assert view.add_folder(str(diary.parent)) is None
    said = view.progress_label.text()
    assert said == (f"Not added: {diary.parent} is watched by someone else on this Hearth (it, a folder inside it or "
                    "one it is in): choose another folder."), said
    assert "alice-diary" not in said and "Alice" not in said
    assert view.folders.count() == 0


def test_empty_wiki_explains_itself_and_offers_an_ingest_model(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    panel = w.wiki.ingest_panel
    qloop.wait_until(lambda: "No wiki pages yet" in w.wiki.page.toPlainText(), what="the empty state")
    text = w.wiki.page.toPlainText()
    assert "Pages are written once an ingest model is chosen" in text and "Memory holds nothing yet" in text
    assert panel.next_label.text() == ""  # no time for an ingest that would write nothing of hers
    assert panel.no_model.isVisibleTo(w) and panel.find_local.isVisibleTo(w) and panel.choose.isVisibleTo(w)
    # a model server on this machine is found and chosen for ingest in two clicks
    from runtime_host.providers.vendors import Vendor, discover_local

    with FakeModelServer(Script([]), wire="openai", models=["llama3.2:1b"]) as local:
        ollama = Vendor("ollama", "Ollama", "openai", f"http://127.0.0.1:{local.port}/v1", "", needs_key=False,
                        local=True)
        qloop.run(panel.find_server(lambda: discover_local(servers=(ollama,))))
        assert panel.use_local.isVisibleTo(w) and "llama3.2:1b" in panel.use_local.text()
        panel.use_local.click()
        qloop.wait_until(lambda: not panel._tasks, what="the server asked again and chosen")
    route = ui_pod.role_route("ingest")
    assert (route["provider"], route["model"]) == ("ollama", "llama3.2:1b")
    assert not panel.no_model.isVisibleTo(w) and not panel.use_local.isVisibleTo(w)
    assert panel.next_label.text().startswith("Next ingest at "), panel.next_label.text()
    # "Choose a provider…" opens Settings on its Models page
    ui_pod.store.set_role_model(ui_pod.person.id, "ingest", "", "")  # back to none
    panel.refresh()
    assert panel.choose.isVisibleTo(w)
    panel.choose.click()
    assert panel.settings_dialog.isVisible()
    assert panel.settings_dialog.tabs.currentWidget() is panel.settings_dialog.models
    panel.settings_dialog.close()


def test_ingest_now_writes_pages_with_the_chosen_model(qtbot, qloop, ui_pod, fake_model) -> None:
    scope = f"private/{ui_pod.person.id}"
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.add_source(
        "We fly to Lisbon on 4 May and stay in the Alfama flat.", scope=scope)))
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    qloop.wait_until(lambda: "Memory holds 1 source(s)" in w.wiki.page.toPlainText(), what="the empty state")
    panel = w.wiki.ingest_panel
    # without an ingest model, Ingest now says what is missing and writes nothing
    messages: list[str] = []
    w.wiki.status.connect(messages.append)
    qloop.run(panel.ingest())
    assert "ingest model is chosen" in messages[-1] and w.wiki.tree.topLevelItemCount() == 0
    ui_pod.set_role_model("ingest", "fake/fake-1")
    panel.refresh()
    assert not panel.no_model.isVisibleTo(w)
    fake_model.script = Script([Text(json.dumps([{"title": "Lisbon trip", "scope": scope, "category": "travel",
                                                  "body": "- We fly to Lisbon on 4 May [1]",
                                                  "citations": {"1": "S1"}}]))])
    panel.ingest_now.click()
    qloop.wait_until(lambda: w.wiki.tree.topLevelItemCount() == 1, what="the written page in the tree")
    assert "Ingest wrote 1 page(s)" in messages[-1]
    assert w.wiki.tree.topLevelItem(0).child(0).child(0).text(0) == "Lisbon trip"


def test_switching_person_takes_the_previous_persons_import_line_and_progress_off_the_tab(qtbot, qloop, ui_pod,
                                                                                          tmp_path) -> None:
    """The Watched folders tab kept Alice's import line (her folder's path and counts) after a switch to Bob, and an
    import of hers still running left its progress bar ("Reading n of m file(s) in <her path>…") on his screen for
    good: its end is her event, which his view rightly ignores."""
    bob_docs = tmp_path / "BobNotes"
    bob_docs.mkdir()
    (bob_docs / "b.md").write_text("Bob's bike is in the shed.\n")
    ui_pod.add_person("Bob")
    ui_pod.unlock("Bob").folders.add(bob_docs)
    small, big = tmp_path / "AliceTaxReturns", tmp_path / "AliceReceipts"
    small.mkdir()
    (small / "t.md").write_text("The tax return is filed with Mr Berg every April.\n")
    for i in range(600):  # several batches of 250
        (big / f"y{i % 3}").mkdir(parents=True, exist_ok=True)
        (big / f"y{i % 3}" / f"n{i:04d}.md").write_text(f"Receipt {i} for the tax return.\n")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    qloop.run(view.add_folder(str(small)))
    assert "AliceTaxReturns: 1 indexed" in view.progress_label.text()
    task = view.add_folder(str(big))
    qloop.wait_until(lambda: view.progress.isVisibleTo(view), what="the import's progress bar")
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to reload for Bob")
    assert view.folders.count() == 1 and "BobNotes" in view.folders.item(0).text()  # his own list
    qloop.run(task, timeout=120)  # her import ends while Bob is shown
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to settle")
    assert not view.progress.isVisibleTo(view)
    assert "Alice" not in view.progress_label.text() and not any("Alice" in s for s in said), said


def test_settings_opened_from_the_wiki_bar_closes_when_another_person_takes_over(qtbot, qloop, ui_pod) -> None:
    """Me opens "Choose a provider…" (a window beside the main one) and the window is switched to Bob: Me's Settings
    stayed open, listing her providers (names, addresses) for Bob to read and act on."""
    ui_pod.add_provider("alices-work-llm", kind="openai-compatible", base_url="http://127.0.0.1:9/v1", model="m-1")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.show_wiki()
    panel = w.wiki.ingest_panel
    panel.choose.click()
    mine = panel.settings_dialog
    assert mine.isVisible()
    panel.choose.click()  # a second click brings the same window forward
    assert panel.settings_dialog is mine
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to load for Bob")
    assert not [d for d in QApplication.topLevelWidgets() if isinstance(d, SettingsDialog) and d.isVisible()]
    panel.choose.click()  # Bob's own Settings, with his providers only
    listed = [panel.settings_dialog.providers.list.item(i).text()
              for i in range(panel.settings_dialog.providers.list.count())]
    assert panel.settings_dialog is not mine and not any("alices-work-llm" in t for t in listed), listed
    panel.settings_dialog.close()


def test_removing_a_watched_folder_takes_its_files_out_of_the_search_results_on_screen(qtbot, qloop, ui_pod,
                                                                                       tmp_path) -> None:
    """Remove deletes what the folder imported, yet its files stayed in the search results on screen (their text in
    the tooltip, clickable): the reload after the removal kept the results."""
    from PySide6.QtCore import Qt

    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "allotment.md").write_text("The allotment shed padlock code is 7741.\n")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.show_wiki()
    view = w.wiki.folders
    qloop.run(view.add_folder(str(docs)), timeout=60)
    w.wiki.search.setText("allotment padlock")
    w.wiki._on_search()

    def shown() -> str:
        return " ".join(f"{w.wiki.results.item(i).text()} {w.wiki.results.item(i).toolTip()}"
                        for i in range(w.wiki.results.count())
                        if w.wiki.results.item(i).data(Qt.ItemDataRole.UserRole) is not None)

    qloop.wait_until(lambda: "7741" in shown(), what="the folder's file in the results")
    w.wiki.tabs.setCurrentWidget(view)
    view.folders.setCurrentRow(0)
    answer_confirm("Remove")
    view.remove.click()
    qloop.wait_until(lambda: "No longer watching" in view.progress_label.text(), what="the removal")
    assert not [h for h in qloop.run(ui_pod.memory_search("allotment padlock")) if "7741" in h.snippet]
    qloop.wait_until(lambda: "7741" not in shown(), timeout=5, what="the removed file to leave the results")


def receipts(root, n: int):
    """A folder of ``n`` notes in three sub-folders."""
    for i in range(n):
        (root / f"y{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"y{i % 3}" / f"n{i:04d}.md").write_text(f"Note {i}: the receipt {i} for the tax return.\n")
    return root


def test_rescan_of_an_imported_folder_says_its_files_are_unchanged(qtbot, qloop, ui_pod, tmp_path) -> None:
    """After Rescan of a folder imported before, the import line and the status bar said "Receipts: 0 indexed, 0
    skipped, 0 failed, 0 removed." (its 30 files are indexed; the command line says "30 unchanged")."""
    docs = receipts(tmp_path / "Receipts", 30)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    qloop.run(view.add_folder(str(docs)), timeout=60)
    assert view.progress_label.text().endswith("Receipts: 30 indexed.")
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    view.folders.setCurrentRow(0)
    view.rescan.click()
    qloop.wait_until(lambda: not view._tasks, timeout=60, what="the rescan")
    assert view.progress_label.text().endswith("Receipts: 30 unchanged."), view.progress_label.text()
    assert said and said[-1].endswith("Receipts: 30 unchanged.") and not any("0 indexed" in s for s in said), said
    (docs / "y0" / "n0000.md").rename(docs / "y0" / "renamed.md")  # its sources go with it (not deleted plus new)
    view.rescan.click()
    qloop.wait_until(lambda: not view._tasks, timeout=60, what="the rescan")
    assert view.progress_label.text().endswith("Receipts: 29 unchanged, 1 moved."), view.progress_label.text()
    rows = {view.files.topLevelItem(i).text(0): (view.files.topLevelItem(i).text(1), view.files.topLevelItem(i).text(2))
            for i in range(view.files.topLevelItemCount())}
    assert "y0/n0000.md" not in rows and rows["y0/renamed.md"][0] == "indexed", rows.get("y0/renamed.md")
    assert "moved from y0/n0000.md" in rows["y0/renamed.md"][1]
    (docs / "y0" / "renamed.md").write_text("Receipt for a new kettle.\n")  # moved and changed: deleted plus new
    (docs / "y0" / "renamed.md").rename(docs / "y0" / "kettle.md")
    view.rescan.click()
    qloop.wait_until(lambda: not view._tasks, timeout=60, what="the rescan")
    assert view.progress_label.text().endswith("Receipts: 1 indexed, 29 unchanged, 1 removed.")


def test_removing_a_folder_while_its_import_runs_says_only_that_it_is_no_longer_watched(qtbot, qloop, ui_pod,
                                                                                        tmp_path) -> None:
    """Remove during a folder's import: the status bar then said "…/Receipts: 250 indexed, 0 skipped, 0 failed." of
    the folder just removed (the import's stop was reported as its end)."""
    docs = receipts(tmp_path / "Receipts", 1200)  # several batches of 250
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    ends: list[str] = []  # the import line as the import's end left it (this slot runs after the view's own)
    view.bridge.event.connect(lambda ev: ends.append(view.progress_label.text())
                              if ev.get("type") == "folders.progress" and ev.get("phase") == "done" else None)
    task = view.add_folder(str(docs))
    qloop.wait_until(lambda: view.progress.isVisibleTo(view) and view.progress.value() > 0, what="the import's progress")
    view.folders.setCurrentRow(0)
    answer_confirm("Remove")
    view.remove.click()
    qloop.run(task, timeout=120)
    qloop.wait_until(lambda: not view._tasks, timeout=60, what="the removal")
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to reload")
    assert view.folders.count() == 0 and ui_pod.memory.count_sources(f"private/{ui_pod.person.id}") == 0
    assert view.progress_label.text().startswith("No longer watching") and not view.progress.isVisibleTo(view)
    assert not any("indexed" in s for s in said), said
    assert ends == [f"No longer watching {docs}."], ends  # not its files counted, while the removal deletes them


def test_a_big_mail_export_shows_how_far_into_it_the_import_is(qtbot, qloop, ui_pod, tmp_path) -> None:
    """A mail export of 2,500 messages (five steps of 500) said "Reading 0 of 1 file(s)" until it was all read:
    only finished files were counted."""
    from tests.integration.test_folders import diary_export

    docs = tmp_path / "MailExport"
    docs.mkdir()
    diary_export(docs / "all.mbox")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    shown: list[str] = []  # the import line after each of the import's events (this slot runs after the view's own)
    view.bridge.event.connect(lambda ev: shown.append(view.progress_label.text())
                              if ev.get("type") == "folders.progress" else None)
    events: list[dict] = []
    ui_pod.subscribe(lambda ev: events.append(ev) if ev.get("type") == "folders.progress" else None)
    qloop.run(view.add_folder(str(docs)), timeout=300)
    qloop.wait_until(lambda: len(shown) == len(events), what="the last event shown")
    within = [s.split(" in ")[0] for s in shown if s.startswith("Reading all.mbox")]
    assert within == [f"Reading all.mbox: {n:,} messages so far (0 of 1 file(s) done)"
                      for n in (500, 1000, 1500, 2000, 2500)], shown
    assert len(events) < 20  # one event a step of 500 messages, not one a message
    assert view.progress_label.text().endswith("MailExport: 1 indexed.")


def _import_mail_export(qtbot, qloop, ui_pod, tmp_path, name: str) -> tuple[object, list[str]]:
    """A mail export of 600 messages named ``name`` added in the Wiki's folders tab (more parts than one step: the
    import line names the file being read); the view and every import line it showed."""
    docs = tmp_path / "MailExport"
    docs.mkdir()
    with (docs / name).open("w") as fh:
        for i in range(600):
            fh.write(f"From a@example.org Tue Mar  3 10:00:00 2026\nFrom: Ana <a@example.org>\nSubject: Diary {i}\n"
                     f"Date: Tue, 03 Mar 2026 10:00:00 +0000\n\nDay {i}: Leo practised the piano piece number {i}.\n\n")
    _, view = _folders_tab(qtbot, ui_pod)
    shown: list[str] = []
    view.bridge.event.connect(lambda ev: shown.append(view.progress_label.text())
                              if ev.get("type") == "folders.progress" else None)
    qloop.run(view.add_folder(str(docs)), timeout=300)
    return view, shown


def test_a_file_named_like_html_is_shown_by_its_name_in_the_import_line(qtbot, qloop, ui_pod, tmp_path) -> None:
    """The import line names the file read inside a big export: a file named "<img src=x> all.mbox" made the
    label lay itself out as HTML (its name not shown, and Qt asked to load an image)."""
    from PySide6.QtCore import Qt

    view, shown = _import_mail_export(qtbot, qloop, ui_pod, tmp_path, "<img src=x> all.mbox")
    qloop.wait_until(lambda: any(t.startswith("Reading <img") for t in shown), what="the file named")
    assert view.progress_label.textFormat() == Qt.TextFormat.PlainText


def _folders_tab(qtbot, ui_pod):
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.show_wiki()
    view = w.wiki.folders
    w.wiki.tabs.setCurrentWidget(view)
    return w, view


def test_removing_the_last_folder_keeps_saying_what_became_of_its_imports(qtbot, qloop, ui_pod, tmp_path) -> None:
    """Remove of the only watched folder: "No longer watching …; 3 imported source(s) deleted." flashed and was at
    once replaced by "No watched folders yet" (the removal's own event refreshed the list, now empty)."""
    import asyncio

    d = tmp_path / "Notes"
    d.mkdir()
    for i in range(3):
        (d / f"n{i}.md").write_text(f"Note {i} about the allotment.\n")
    w, view = _folders_tab(qtbot, ui_pod)
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    qloop.run(view.add_folder(str(d)))
    view.folders.setCurrentRow(0)
    answer_confirm("Remove")
    view.remove.click()
    qloop.wait_until(lambda: view.folders.count() == 0 and not view._tasks, what="the removal")
    qloop.run(asyncio.sleep(1.0))  # the pod's events of the removal arrive
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to settle")
    shown = view.progress_label.text()
    assert shown == f"No longer watching {d}; 3 imported source(s) deleted.", shown
    assert shown in said, said  # the status bar says it too


def test_the_file_being_read_in_the_list_stays_selected_while_another_folder_imports(qtbot, qloop, ui_pod,
                                                                                     tmp_path) -> None:
    """During a long import the person reads another folder's file list (a file selected, the list scrolled to it):
    every two seconds the list was rebuilt, the selection gone and the list back at its top."""
    small = tmp_path / "Letters"
    small.mkdir()
    for i in range(300):
        (small / f"letter-{i:03d}.md").write_text(f"Letter {i} about the roof.\n")
    big = receipts(tmp_path / "Archive", 1500)
    w, view = _folders_tab(qtbot, ui_pod)
    qloop.run(view.add_folder(str(small)), timeout=60)
    view.folders.setCurrentRow(0)
    qloop.wait_until(lambda: view.files.topLevelItemCount() == 300, what="the letters listed")
    task = view.add_folder(str(big))
    qloop.wait_until(lambda: view.progress.isVisibleTo(view), what="the import under way")
    # the person goes back to the letters and reads one far down the list
    for i in range(view.folders.count()):
        if "Letters" in view.folders.item(i).text():
            view.folders.setCurrentRow(i)
    item = view.files.topLevelItem(250)
    view.files.setCurrentItem(item)
    view.files.scrollToItem(item)
    at = view.files.verticalScrollBar().value()
    assert at > 0
    t0 = time.monotonic()
    qloop.wait_until(lambda: time.monotonic() - t0 > 4.5 or task.done(), timeout=30, what="a few seconds of import")
    assert "Letters" in view.folders.currentItem().text()
    cur = view.files.currentItem()
    assert cur is not None and cur.text(0) == "letter-250.md", cur and cur.text(0)
    assert view.files.verticalScrollBar().value() == at
    qloop.run(task, timeout=180)


def test_a_rescan_of_the_folder_shown_keeps_the_file_being_read(qtbot, qloop, ui_pod, tmp_path) -> None:
    """Rescan of the folder whose files the person reads rebuilds its list: the file selected and the scroll stay."""
    docs = receipts(tmp_path / "Receipts", 300)
    w, view = _folders_tab(qtbot, ui_pod)
    qloop.run(view.add_folder(str(docs)), timeout=60)
    view.folders.setCurrentRow(0)
    item = view.files.topLevelItem(250)
    rel = item.text(0)
    view.files.setCurrentItem(item)
    view.files.scrollToItem(item)
    at = view.files.verticalScrollBar().value()
    assert at > 0
    view.rescan.click()
    qloop.wait_until(lambda: not view._tasks and "unchanged" in view.progress_label.text(), timeout=60,
                     what="the rescan")
    cur = view.files.currentItem()
    assert cur is not None and cur.text(0) == rel, cur and cur.text(0)
    assert view.files.verticalScrollBar().value() == at


def test_tooltips_show_a_file_name_or_reason_with_markup_as_written(qtbot, qloop, ui_pod, tmp_path) -> None:
    """A folder's tooltip (its path) and a file's skip reason (quoting its extension) are a stranger's text: with
    "<img src=…>" in them, Qt laid the tooltip out as HTML (the text not shown, and an image asked for)."""
    from PySide6.QtGui import Qt, QTextDocument

    def as_shown(tip: str) -> str:
        if not Qt.mightBeRichText(tip):
            return tip
        doc = QTextDocument()
        doc.setHtml(tip)
        return doc.toPlainText().strip()

    docs = tmp_path / "<img src=x> Notes"
    docs.mkdir()
    (docs / "scan.<img src=y>").write_text("a scan\n")
    (docs / "note.md").write_text("The allotment shed.\n")
    w, view = _folders_tab(qtbot, ui_pod)
    qloop.run(view.add_folder(str(docs)), timeout=60)
    view.folders.setCurrentRow(0)
    assert as_shown(view.folders.item(0).toolTip()) == str(docs)
    rows = {view.files.topLevelItem(i).text(0): view.files.topLevelItem(i) for i in range(view.files.topLevelItemCount())}
    reason = rows["scan.<img src=y>"].text(2)
    assert "(.<img src=y>)" in reason
    assert as_shown(rows["scan.<img src=y>"].toolTip(2)) == reason


def test_ingest_now_names_a_lost_note_file_and_writes_the_rest(qtbot, qloop, ui_pod, fake_model) -> None:
    """A note's file lost (a backup restored in part): Ingest now said "Ingest stopped: [Errno 2] ..." and wrote no
    page. Now the other notes' page is written and the status says which file, and what to do."""
    from wiki_engine import Scope

    scope = f"private/{ui_pod.person.id}"

    def seed() -> object:
        ui_pod.memory.add_source("We fly to Lisbon on 4 May and stay in the Alfama flat.", scope=scope)
        lost = ui_pod.memory.add_source("My bike lock code is 3090 and the spare key is under the heron.", scope=scope)
        return ui_pod.memory.sources.path_for(Scope.parse(scope), ui_pod.memory.get_source(lost).sha)

    path = qloop.run(ui_pod.in_memory_thread(seed))
    path.unlink()
    ui_pod.set_role_model("ingest", "fake/fake-1")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show_wiki()
    messages: list[str] = []
    w.wiki.status.connect(messages.append)
    fake_model.script = Script([Text(json.dumps([{"title": "Lisbon trip", "scope": scope, "category": "travel",
                                                  "body": "- We fly to Lisbon on 4 May [1]",
                                                  "citations": {"1": "S1"}}]))])
    qloop.run(w.wiki.ingest_panel.ingest())
    assert "Ingest wrote 1 page(s)" in messages[-1], messages
    assert f"A note in Me is missing from disk: {path}. Put the file back from a backup" in messages[-1], messages


_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _shown_plainly(text: str) -> bool:
    """No direction override/embedding reaches the screen unless the name is isolated (FSI ... PDI)."""
    bare = _BIDI.sub("", text.replace("\u2068", "").replace("\u2069", ""))
    overrides = re.findall("[\u202a-\u202e]", text)
    return not overrides or ("\u2068" in text and "\u2069" in text and bare)


def test_a_file_name_with_a_right_to_left_override_is_not_shown_reversed(qtbot, qloop, ui_pod, tmp_path) -> None:
    """A file name with a right-to-left override (U+202E) is shown raw in the watched-folders window: the file list
    shows "invoice<RLO>fdp.mbox" as "invoicexobm.pdf", and the import line after the name reads backwards. The CLI
    escapes these characters (runtime_host/cli.py) and page titles drop them (Memory.clean_page), the window does not."""
    view, shown = _import_mail_export(qtbot, qloop, ui_pod, tmp_path, "invoice\u202efdp.mbox")
    view.folders.setCurrentRow(0)
    rows = [view.files.topLevelItem(i).text(0) for i in range(view.files.topLevelItemCount())]
    reading = [t for t in shown if t.startswith("Reading invoice")]
    assert rows and reading
    # what the person sees: the list row reads "invoicexobm.pdf", the import line reads backwards after the name
    assert all(_shown_plainly(r) for r in rows), f"file list shows a raw direction override: {rows!r}"
    assert all(_shown_plainly(t) for t in reading), f"import line shows a raw direction override: {reading[0]!r}"


def test_remove_on_a_folder_removed_in_a_terminal_says_so_and_lists_what_is_watched(
        qtbot, qloop, ui_pod, home, tmp_path) -> None:
    """The person removed a watched folder with `folder remove` in a terminal (another process: the window hears
    nothing of it) while the Wiki's Watched folders tab still listed it; Remove… there did nothing they could see
    (an error raised in the click's handler). It says the folder is no longer watched, and the list is read anew."""
    from tests.integration.test_cli import cli
    from tests.ui.test_wiki_view import wiki_window

    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "boiler.txt").write_text("The boiler service is due in March; call Sam.")
    w = wiki_window(qtbot, ui_pod, shown=True)
    view = w.wiki.folders
    qloop.run(view.add_folder(str(docs)), timeout=120)
    assert view.folders.count() == 1
    r = cli(home, "folder", "remove", view.current_id(), timeout=120)
    assert r.returncode == 0, r.stderr
    said: list[str] = []
    view.status.connect(said.append)
    view.remove.click()  # no "Stop watching …?" for a folder no longer watched
    qloop.wait_until(lambda: not view._tasks, timeout=30, what="the removal")
    assert said and "no longer watched" in said[-1] and "no longer watched" in view.progress_label.text(), said
    assert view.folders.count() == 0  # the list as it is now

    # the same while the confirmation is open: the terminal's removal comes between it and the click on Remove
    qloop.run(view.add_folder(str(docs)), timeout=120)
    fid = view.current_id()
    said.clear()
    assert cli(home, "folder", "remove", fid, timeout=120).returncode == 0
    qloop.run(view.remove_folder(fid))
    assert said and "no longer watched" in said[-1] and view.folders.count() == 0, said


def test_rescan_on_a_folder_removed_in_a_terminal_says_so_and_drops_it(qtbot, qloop, ui_pod, home, tmp_path) -> None:
    """`folder remove` in a terminal, then Rescan on the folder the window still listed ("1 indexed"): the window
    said "The folder could not be read: No watched folder 'e1ce…' of yours. `folder list` shows them." (an id and a
    terminal command) and kept listing the removed folder and its files. It says what Remove… says, and the list is
    read anew."""
    from tests.integration.test_cli import cli
    from tests.ui.test_wiki_view import wiki_window

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "safe.md").write_text("The spare key is under the blue flowerpot by the shed.\n")
    w = wiki_window(qtbot, ui_pod, shown=True)
    view = w.wiki.folders
    qloop.run(view.add_folder(str(docs)), timeout=120)
    assert view.folders.count() == 1 and view.files.topLevelItemCount() == 1
    assert cli(home, "folder", "remove", str(docs), timeout=120).returncode == 0
    said: list[str] = []
    view.status.connect(said.append)
    view.rescan.click()
    qloop.wait_until(lambda: not view._tasks, timeout=30, what="the rescan")
    shown = view.progress_label.text()
    assert "removed elsewhere" in shown and "`folder list`" not in shown and "could not be read" not in shown, shown
    assert said and "no longer watched" in said[-1], said
    assert view.folders.count() == 0 and view.files.topLevelItemCount() == 0 and not view.progress.isVisible()
