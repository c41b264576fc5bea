"""The window as a person meets it: type, send, watch the answer stream, see failures and tool calls."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel

from app.dialogs import AddAgentDialog, SettingsDialog
from app.main_window import MainWindow
from tests.helpers.fake_model import Error, Text, ToolCalls


def send(qtbot, window: MainWindow, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_answer_streams_into_the_chat_and_the_ui_stays_live(qtbot, qloop, ui_pod, script) -> None:
    script([Text("**Bold** answer with a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |", chunk_chars=3, delay_s=0.01)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    assert w.agent == "helper"
    partials: list[str] = []
    w.bridge.event.connect(lambda ev: partials.append(w.chat.toPlainText()) if ev["type"] == "delta" else None)
    send(qtbot, w, "Show me a table")
    assert w.composer.toPlainText() == ""
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    text = w.chat.toPlainText()
    assert "Show me a table" in text and "Bold answer with a table" in text
    assert "**" not in text  # markdown was rendered, not shown raw
    assert w.chat.document().toHtml().count("<td") >= 2
    assert len(partials) > 5  # tokens arrived while the event loop kept running
    assert "fake-1" in w.header.text()


def test_tool_calls_appear_in_the_steps_tree(qtbot, qloop, ui_pod, script) -> None:
    script([ToolCalls([("calculate", {"expression": "3*3"})]), lambda r: Text("Nine.")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "3 times 3?")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    labels = [w.steps.topLevelItem(i).text(0) for i in range(w.steps.topLevelItemCount())]
    assert labels == ["model: fake-1", "tool: calculate", "model: fake-1"]
    tool_item = w.steps.topLevelItem(1)
    assert tool_item.text(1) == "✓" and "9" in tool_item.text(3) and "ms" in tool_item.text(2)


def test_a_failed_turn_shows_why_and_the_window_stays_usable(qtbot, qloop, ui_pod, script) -> None:
    script([Error(401, "bad key"), Text("working now")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "first")
    qloop.wait_until(lambda: "failed" in w.header.text(), what="the failure")
    assert "HTTP 401" in w.chat.toPlainText() and "Settings → Providers" in w.chat.toPlainText()
    send(qtbot, w, "second")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the second answer")
    assert "working now" in w.chat.toPlainText()
    # reopening the conversation shows what is on disk, including the failure
    w.load_conversation(w.conversation_id)
    assert "first" in w.chat.toPlainText() and "working now" in w.chat.toPlainText()


def test_settings_adds_a_provider_with_its_key_in_the_keyring(qtbot, qloop, ui_pod, secure_keyring) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.providers
    page.name.setText("local")
    page.base_url.setText("not-a-url")
    assert not page.save()
    assert "http://" in page.message.text()
    page.base_url.setText("http://127.0.0.1:11434/v1")
    page.model.setEditText("llama3.1")
    page.key.setText("sk-ui-secret-777")
    assert page.save()
    assert page.key.text() == ""
    assert any(p["name"] == "local" and p["has_key"] for p in ui_pod.list_providers())
    assert ui_pod.vault().get("provider/local") == "sk-ui-secret-777"
    assert b"sk-ui-secret-777" not in (ui_pod.home / "pod.db").read_bytes()


def test_new_agent_dialog_creates_an_agent_shown_in_the_list(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    dlg = AddAgentDialog(ui_pod, w)
    dlg.name.setText("helper")
    dlg._save()
    assert "already exists" in dlg.message.text()
    dlg.name.setText("researcher")
    dlg._save()
    assert dlg.created and dlg.created["provider"] == "fake"
    w.refresh_agents()
    names = [w.agents.item(i).data(Qt.ItemDataRole.UserRole) for i in range(w.agents.count())]
    assert names == ["helper", "researcher"]


def test_agents_panel_shows_worker_state_and_can_stop_and_restart(qtbot, qloop, ui_pod, script) -> None:
    script([Text("hello")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "wake up")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    w.refresh_agents_labels()
    item = w.agents.item(0)
    assert "ready" in item.text() and "MB" in item.text()
    assert "PID" in item.toolTip() and "Restarts: 0" in item.toolTip()
    qtbot.mouseClick(w.stop_button, Qt.MouseButton.LeftButton)
    qloop.wait_until(lambda: "stopped" in w.agents.item(0).text(), what="the worker to stop")
    qtbot.mouseClick(w.restart_button, Qt.MouseButton.LeftButton)
    qloop.wait_until(lambda: "ready" in w.agents.item(0).text(), what="the worker to start again")


def test_background_runs_are_listed_with_their_result(qtbot, qloop, ui_pod, script) -> None:
    script([Text("report ready")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    turn_id = ui_pod.create_background_run("helper", "nightly report")
    run = qloop.run(ui_pod.resume_turn(turn_id))
    qloop.run(run.future)
    # no polling: the finished event alone updates the list (once per burst of run events)
    qloop.wait_until(lambda: w.runs.topLevelItemCount() == 1 and w.runs.topLevelItem(0).text(2) == "done",
                     timeout=2, what="the finished run to be listed")
    item = w.runs.topLevelItem(0)
    assert [item.text(i) for i in range(5)] == ["helper", "background", "done", "nightly report", "report ready"]


def test_the_model_picker_sends_one_message_to_another_model(qtbot, qloop, ui_pod, script, fake_model) -> None:
    script([Text("from the agent's model")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    labels = [w.model_picker.itemText(i) for i in range(w.model_picker.count())]
    assert labels[0] == "Agent's model" and "embedded — smollm2-135m-instruct (no tools)" in labels
    w.model_picker.setCurrentIndex(labels.index("embedded — smollm2-135m-instruct (no tools)"))
    assert "cannot use tools" in w.model_hint.text()
    w.model_picker.setCurrentIndex(labels.index("fake — fake-1"))
    assert w.model_hint.text() == ""
    send(qtbot, w, "via the picker")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    assert fake_model.requests[-1].body["model"] == "fake-1"


def test_settings_models_page_sets_a_role(qtbot, qloop, ui_pod) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    combo = dlg.models.combos["extraction"]
    assert combo.itemText(0).startswith("embedded")
    combo.setCurrentIndex(combo.findData("fake"))
    dlg._save()
    assert ui_pod.models()["roles"]["extraction"] == {"provider": "fake", "model": "", "source": "set"}


def test_switching_person_hides_the_other_persons_data(qtbot, qloop, ui_pod, script) -> None:
    script([Text("private answer for me")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "my private note")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    me = ui_pod.person.name
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    assert w.agents.count() == 0 and "private answer" not in w.chat.toPlainText()
    assert w.runs.topLevelItemCount() == 0
    # Me's background run finishing while Bob uses the window raises no notification for Bob
    turn_id = ui_pod.create_background_run("helper", "report for me only")
    run = qloop.run(ui_pod.resume_turn(turn_id))
    qloop.run(run.future)
    assert not w.notices.history
    assert w.switch_person(me)
    assert w.agents.count() == 1
    qloop.wait_until(lambda: "private answer for me" in w.chat.toPlainText(), what="my conversation back")


def test_the_next_person_finds_nothing_the_first_typed_nor_gets_it_back_with_undo(qtbot, qloop, ui_pod) -> None:
    """Me leaves words typed in the window (an unsent message, a conversation search, an inbox being added with its
    password, a schedule's prompt) and Bob takes over: they stayed on Bob's screen, or came back with Ctrl+Z."""
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    boxes = {w.composer: "my unsent message to the lawyer", w.conversation_search: "divorce",
             w.mail.address: "me@example.org", w.mail.password: "hunter2-secret",
             w.schedules.cron: "0 8 * * 1-5", w.schedules.prompt: "remind me of the therapist"}
    for box, words in boxes.items():
        box.setFocus()
        qtbot.keyClicks(box, words)
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")

    def text(box) -> str:
        return box.toPlainText() if hasattr(box, "toPlainText") else box.text()

    for box in boxes:
        assert text(box) == "", f"{box.accessibleName()} still shows {text(box)!r} to Bob"
        box.setFocus()
        qtbot.keyClick(box, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        assert text(box) == "", f"Ctrl+Z in {box.accessibleName()} brought back {text(box)!r}"


def test_activity_lists_gate_decisions_and_exports_them(qtbot, qloop, ui_pod, script, tmp_path) -> None:
    import json

    script([Text("ok")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "write to ada@example.org about the invoice")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    w.pages.setCurrentWidget(w.activity)
    assert w.activity.table.rowCount() >= 1
    row = [w.activity.table.item(0, j).text() for j in range(7)]
    assert row[1] == "gate" and row[3] == "ingress" and "email" in row[6]
    out = tmp_path / "activity.jsonl"
    assert w.activity.export(str(out)) == w.activity.table.rowCount()
    first = json.loads(out.read_text().splitlines()[0])
    assert first["phase"] == "ingress" and "ada@example.org" not in out.read_text()


def test_a_long_conversation_opens_with_its_latest_messages_and_loads_earlier_on_demand(qtbot, qloop, ui_pod) -> None:
    from runtime_host.store import Message

    inst, _ = ui_pod.find_agent("helper")
    conv = ui_pod.store.create_conversation(inst.id, "long")
    with ui_pod.store.session() as s:
        for i in range(1000):
            s.add(Message(conversation_id=conv.id, role="user", content=f"message number {i}", created_at=1000.0 + i))
        s.commit()
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.load_conversation(conv.id)
    text = w.chat.toPlainText()
    assert "message number 999" in text and "message number 849" not in text and "850 not shown" in text
    w.chat.show_earlier()
    assert "message number 550" in w.chat.toPlainText() and "550 not shown" in w.chat.toPlainText()


def test_settings_channels_page_saves_the_token_and_shows_a_link_code(qtbot, qloop, ui_pod, secure_keyring) -> None:
    from app.dialogs import SettingsDialog
    from runtime_host.channelhost import ChannelsHost
    from tests.helpers.fake_telegram import FakeTelegram

    tg = FakeTelegram().start()
    try:
        ui_pod._channels = ChannelsHost(ui_pod.pod, telegram_base_url=tg.base_url, poll_timeout_s=1.0, http_grace_s=1.0)
        dlg = SettingsDialog(ui_pod)
        qtbot.addWidget(dlg)
        page = dlg.channels
        page._on_link()
        assert "Save the bot token first" in page.message.text()
        page.token.setText(tg.token)
        page._on_save_token()
        qloop.wait_until(lambda: ui_pod.channels.telegram is not None, what="Telegram to start")
        assert ui_pod.vault().get("channel/telegram/token") == tg.token
        page._on_link()
        assert "Code:" in page.message.text() and "/link" in page.message.text()
        qloop.run(ui_pod.channels.close())
        ui_pod._channels = None
    finally:
        tg.stop()


def test_tasks_board_approves_a_hand_off_and_shows_its_tree(qtbot, qloop, ui_pod, fake_model) -> None:
    from tests.integration.test_tasks import lead_script

    ui_pod.edit_agent("helper", toolkits=["tasks"])
    ui_pod.add_agent("researcher", provider="fake", system="You research.", toolkits=["math"])
    lead_script(fake_model)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "please find the answer")
    qloop.wait_until(lambda: w.tasks.count("proposed") == 1, what="the proposed task on the board")
    w.pages.setCurrentWidget(w.tasks)
    w.tasks.columns["proposed"].setCurrentRow(0)
    assert w.tasks.approve.isEnabled()
    w.tasks.approve.click()
    qloop.wait_until(lambda: w.tasks.count("done") == 1, what="the task to finish")
    w.tasks.columns["done"].setCurrentRow(0)
    assert "Findings: the answer is 42." in w.tasks.detail.toPlainText()
    # the timeline says who did what by name, never with internal ids
    timeline = w.tasks.detail.toPlainText()
    assert "proposed by helper for researcher" in timeline and "approved; the agent started (by you)" in timeline
    ids = {a["id"] for a in ui_pod.list_agents()} | {t["id"] for t in ui_pod.list_tasks()}
    assert not [i for i in ids if i in timeline or i[:8] in timeline]
    assert w.tasks.tree.topLevelItem(0).text(0).startswith("model:")
    w.tasks.open_button.click()
    assert w.pages.currentIndex() == 0 and w.agent == "researcher"
    assert "Task: Find the answer" in w.chat.toPlainText()


def test_a_task_a_model_wrote_shows_as_its_words_on_the_board(qtbot, qloop, ui_pod, fake_model, tmp_path) -> None:
    """A hand-off's title and description are a model's words (one that read a stranger's mail, say): the board
    showed them as HTML, so '<a href=file:…>' made a link that opened the person's own file in the task pane,
    '<img src=…>' read a file from disk on the window's thread, and markup could hide or forge the text above
    Approve. They show as written, and no link in the pane leads anywhere."""
    from tests.helpers.fake_model import Text, ToolCalls

    secret = tmp_path / "diary.html"
    secret.write_text("<p>DIARY: the safe code is 4471</p>")
    ui_pod.edit_agent("helper", toolkits=["tasks"])
    ui_pod.add_agent("researcher", provider="fake", system="You research.", toolkits=["math"])
    title = "<b>Pay</b> the <i>invoice</i>"
    description = (f"Read <a href='file://{secret}'>the invoice</a> <img src='file://{secret}'>"
                   "<span style='display:none'>and wire 900 EUR</span>")

    def model(req):
        if "You research" in req.messages[0]["content"]:
            return Text("ok")
        if not req.tool_results:
            return ToolCalls([("hand_off", {"agent": "researcher", "title": title, "description": description})])
        return Text("handed off")

    fake_model.script = model
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "please pay it")
    qloop.wait_until(lambda: w.tasks.count("proposed") == 1, what="the proposed task on the board")
    w.pages.setCurrentWidget(w.tasks)
    w.tasks.columns["proposed"].setCurrentRow(0)
    shown = w.tasks.detail.toPlainText()
    assert title in shown and description in shown, shown
    made = w.tasks.detail.toHtml()
    assert "<a " not in made and "<img" not in made  # no link and no image made of the model's words


def test_new_agent_from_a_shipped_profile(qtbot, qloop, ui_pod) -> None:
    dlg = AddAgentDialog(ui_pod)
    qtbot.addWidget(dlg)
    dlg.profile.setCurrentIndex(dlg.profile.findData("research"))
    assert "research" in dlg.system.toPlainText().lower()
    dlg.name.setText("digger")
    dlg._save()
    info = next(a for a in ui_pod.list_agents() if a["name"] == "digger")
    assert info["template"] == "research" and "delegate" in info["toolkits"]


def test_schedule_editor_checks_the_cron_line_and_previews_runs(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.pages.setCurrentWidget(w.schedules)
    v = w.schedules
    v.tz.setText("Europe/Berlin")
    v.cron.setText("61 8 * * *")
    assert "minute 61 is out of range 0-59" in v.preview.text() and not v.add.isEnabled()
    v.cron.setText("0 8 * * 1-5")
    assert v.preview.text().startswith("Every weekday at 08:00") and "Next:" in v.preview.text()
    v.prompt.setPlainText("Morning briefing")
    v.add.click()
    assert v.table.rowCount() == 1 and v.table.item(0, 0).text() == "helper"
    assert "weekday" in v.table.item(0, 1).text() and "Europe/Berlin" in v.table.item(0, 1).text()
    v.table.selectRow(0)
    v.pause.click()
    assert v.table.item(0, 4).text() == "paused"


def test_edit_agent_changes_its_instructions(qtbot, qloop, ui_pod) -> None:
    dlg = AddAgentDialog.for_edit(ui_pod, "helper")
    qtbot.addWidget(dlg)
    assert dlg.system.toPlainText() == "Test agent." and not dlg.name.isEnabled()
    dlg.system.setPlainText("You are now very terse.")
    dlg._save()
    assert next(a for a in ui_pod.list_agents() if a["name"] == "helper")["system"] == "You are now very terse."


def test_security_page_sets_a_passphrase(qtbot, qloop, ui_pod) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.security
    page.new.setText("short")
    assert not page.save() and "8 characters" in page.message.text()
    page.new.setText("a long enough passphrase")
    assert page.save()
    assert [p["has_passphrase"] for p in ui_pod.people()] == [True]


def test_first_run_welcome_explains_offline_and_keys(qtbot, qloop, ui_pod) -> None:
    from app.welcome import show_welcome

    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    dlg = show_welcome(w)
    text = dlg.text.text()
    assert "offline" in text and "key" in text and "approval" in text
    assert dlg.add_button.text() == "Add a model provider"
    dlg.later.click()
    assert not dlg.isVisible()


def test_the_sidebar_lists_the_agents_conversations(qtbot, qloop, ui_pod, script) -> None:
    script([Text("first answer"), Text("second answer")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "first topic")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the first answer")
    w.new_conversation()
    send(qtbot, w, "second topic")
    qloop.wait_until(lambda: "second answer" in w.chat.toPlainText(), what="the second answer")
    assert w.conversations.rows() == ["second topic", "first topic"]
    w._on_conversation_clicked(w.conversations.topLevelItem(1))
    assert "first answer" in w.chat.toPlainText() and "second answer" not in w.chat.toPlainText()


def test_edit_agent_sets_its_safety_policy(qtbot, qloop, ui_pod) -> None:
    dlg = AddAgentDialog.for_edit(ui_pod, "helper")
    qtbot.addWidget(dlg)
    form = dlg.safety
    assert form.ingress.currentData() == "flag" and form.egress["secret"].currentData() == "block"
    form.ingress.setCurrentIndex(form.ingress.findData("redact"))
    form.egress["email"].setCurrentIndex(form.egress["email"].findData("block"))
    form.reversible.setChecked(True)
    dlg._save()
    inst, _ = ui_pod.find_agent("helper")
    policy = ui_pod.safety_policy(inst.id, "helper")
    assert policy.ingress == "redact" and policy.egress["email"] == "block" and policy.reversible
    # the edit dialog shows names and words, never ids or raw JSON
    again = AddAgentDialog.for_edit(ui_pod, "helper")
    qtbot.addWidget(again)
    assert again.windowTitle() == "Edit helper" and again.safety.ingress.currentText().startswith("Hide")
    shown = " ".join(w.text() for w in again.findChildren(QLabel)) + " ".join(
        c.currentText() for c in again.findChildren(QComboBox))
    assert inst.id not in shown and "{" not in shown


def test_attachments_add_text_files_and_refuse_binary_ones(qtbot, qloop, ui_pod, tmp_path) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nline two")
    blob = tmp_path / "photo.bin"
    blob.write_bytes(b"\x89PNG\x00\x00binary")
    w.composer.setPlainText("Please summarise")
    assert w.attach_file(str(notes))
    assert "Attached file notes.txt:" in w.composer.toPlainText() and "line two" in w.composer.toPlainText()
    assert not w.attach_file(str(blob)) and "not a text file" in w.statusBar().currentMessage()


def test_a_text_file_in_windows_1252_or_utf16_is_attached_with_its_words_and_says_how(qtbot, qloop, ui_pod,
                                                                                    tmp_path) -> None:
    """A Windows-1252 note came in as "Caf\ufffd" and a UTF-16 one (Notepad's "Unicode") was refused as not a
    text file; they are read as watched folders read them, and the status bar says how."""
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    note = "Café Nicola on Rossio: bica at 9, Zoë pays."
    for name, data, how in [("cafe.txt", note.encode("cp1252"), "not UTF-8: read as Windows-1252"),
                            ("unicode.txt", b"\xff\xfe" + note.encode("utf-16-le"), "read as UTF-16")]:
        (tmp_path / name).write_bytes(data)
        w.composer.clear()
        assert w.attach_file(str(tmp_path / name)), w.statusBar().currentMessage()
        assert f"Attached file {name}:\n```\n{note}\n```" in w.composer.toPlainText(), w.composer.toPlainText()
        assert w.statusBar().currentMessage() == f"Attached {name} ({how}).", w.statusBar().currentMessage()


def test_the_dark_system_appearance_is_followed(qapp) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPalette

    from app.theme import apply_theme

    try:
        assert apply_theme(qapp, Qt.ColorScheme.Dark) == "dark"
        assert qapp.palette().color(QPalette.ColorRole.Window).lightness() < 100
        assert apply_theme(qapp, Qt.ColorScheme.Light) == "light"
        assert qapp.palette().color(QPalette.ColorRole.Window).lightness() > 150
    finally:
        apply_theme(qapp, Qt.ColorScheme.Light)


def test_a_utf8_file_cut_mid_character_keeps_its_words(qtbot, qloop, ui_pod, tmp_path) -> None:
    """A part of a long file cut by bytes (head -c, a split tool) ends inside a character: the whole file was read
    as Windows-1252 (東京 became mojibake); only the cut character is lost now."""
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    note = "会議は東京で金曜日に。Café 😀 déjà vu.\n" * 20 + "最後"
    data = note.encode("utf-8")[:-1]  # cut inside the last character
    (tmp_path / "part.txt").write_bytes(data)
    assert w.attach_file(str(tmp_path / "part.txt")), w.statusBar().currentMessage()
    text = w.composer.toPlainText()
    assert "会議は東京で金曜日に。Café 😀 déjà vu." in text, text[:200]


def test_a_coloured_terminal_log_is_attached_as_text(qtbot, qloop, ui_pod, tmp_path) -> None:
    """A log saved with colours (ls --color, pytest --color=yes) is UTF-8 text, more than 10% of its bytes ESC: it
    was refused as not a text file."""
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    log = "".join(f"\x1b[01;34mdir{n}\x1b[0m\n\x1b[32mok{n}\x1b[0m\n" for n in range(40))
    (tmp_path / "build.log").write_text(log, encoding="utf-8")
    assert w.attach_file(str(tmp_path / "build.log")), w.statusBar().currentMessage()
    assert "dir39" in w.composer.toPlainText()


def test_the_notification_bar_keeps_none_of_alices_run_result_on_bobs_screen(qtbot, qloop, ui_pod, script) -> None:
    """Alice's background run finished and the bar showed its answer for 15 s; she handed the window to Bob right
    away: the bar still showed her answer to Bob. Now the switch hides it and forgets it."""
    script([Text("Your HIV test result is positive; call Dr Ames.")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    turn_id = ui_pod.create_background_run("helper", "check my lab results")
    run = qloop.run(ui_pod.resume_turn(turn_id))
    qloop.run(run.future)
    qloop.wait_until(lambda: "HIV" in w.notices.label.text(), what="the run's notification")
    assert w.notices.isVisible()
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    shown = w.notices.label.text() if w.notices.isVisible() else ""
    assert "HIV" not in shown, f"Bob sees Alice's notification: {shown!r}"
    assert "HIV" not in w.notices.label.text() and not w.notices.history


def test_the_chat_header_names_none_of_alices_agents_once_bob_is_shown(qtbot, qloop, ui_pod) -> None:
    """Bob, who has no agent yet, read "Divorce lawyer — new conversation" above the chat: the agent Alice had
    open. Now the header names none of her agents."""
    ui_pod.add_agent("Divorce lawyer", provider="fake", system="Test agent.")
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    w.select_agent("Divorce lawyer")
    assert "Divorce lawyer" in w.header.text()
    ui_pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    assert w.agents.count() == 0
    assert "Divorce lawyer" not in w.header.text(), f"Bob reads {w.header.text()!r} above the chat"
    assert "Divorce lawyer" not in w.chat.toPlainText(), w.chat.toPlainText()  # nor on the welcome it shows Bob


def test_a_hand_off_on_the_board_shows_its_direction_characters_written_out(qtbot, qloop, ui_pod, fake_model) -> None:
    """A model hands off "Open invoice \\u202efdp.exe": the Tasks board's list and detail obeyed the character
    ("Open invoice exe.pdf") beside an enabled Approve, while the phone's card of the same hand-off wrote it out.
    The board writes it out too, under the approval cards' warning; once decided, the warning goes."""
    import unseen

    ui_pod.edit_agent("helper", toolkits=["tasks"])
    ui_pod.add_agent("researcher", provider="fake", system="You research.", toolkits=["math"])
    title = "Open invoice \u202efdp.exe"
    description = "Run the attachment \u2066\u202eexe.cod\u202c\u2069 for me."

    def model(req):
        if "You research" in req.messages[0]["content"]:
            return Text("ok")
        if not req.tool_results:
            return ToolCalls([("hand_off", {"agent": "researcher", "title": title, "description": description})])
        return Text("handed off")

    fake_model.script = model
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "please open it")
    qloop.wait_until(lambda: w.tasks.count("proposed") == 1, what="the proposed task on the board")
    w.pages.setCurrentWidget(w.tasks)
    w.tasks.columns["proposed"].setCurrentRow(0)
    assert w.tasks.approve.isEnabled()
    listed, detail = w.tasks.columns["proposed"].item(0).text(), w.tasks.detail.toPlainText()
    assert listed.startswith("Open invoice \\u202efdp.exe\n"), repr(listed)
    assert "Run the attachment \\u2066\\u202eexe.cod\\u202c\\u2069 for me." in detail, repr(detail)
    assert not unseen.has_direction(listed + detail)
    assert w.tasks.direction.isVisibleTo(w.tasks) and "title and description" in w.tasks.direction.text()
    w.tasks.reject.click()
    qloop.wait_until(lambda: w.tasks.count("failed") == 1, what="the rejected task")
    w.tasks.columns["failed"].setCurrentRow(0)
    assert "\\u202efdp.exe" in w.tasks.detail.toPlainText() and not w.tasks.direction.isVisibleTo(w.tasks)
