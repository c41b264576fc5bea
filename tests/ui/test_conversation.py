"""The conversation as a person uses it: each answer with its own tool-call tree (in history too), message
actions, code blocks, early-end markers, following the stream, switching agents mid-answer, and the
conversation list (rename, delete, export, search, scheduled runs grouped). Real worker, real SQLite,
real widgets offscreen; the model is the loopback fake."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication

from app.main_window import MainWindow
from tests.helpers.fake_model import Text, ToolCalls
from tests.ui.conftest import answer_confirm
from tests.ui.test_main_window import send

SLOW = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma " * 4


def answered(w: MainWindow) -> bool:
    return "answered by" in w.header.text()


def click(w: MainWindow, href: str) -> None:
    """Clicks a link in the conversation (step toggles, message actions, copy links)."""
    assert href in w.chat.document().toHtml(), f"no link {href!r} in the conversation"
    w.chat.anchorClicked.emit(QUrl(href))


def sub_agent_script(req):
    system = req.messages[0]["content"]
    if system.startswith("You are a sub-agent"):
        if not req.tool_results:
            return ToolCalls([("calculate", {"expression": "6*7"})])
        return Text(f"part {req.tool_results[-1]}")
    if "split" in req.last_user and not req.tool_results:
        return ToolCalls([("delegate", {"task": "compute six times seven"})])
    if "multiply" in req.last_user and not req.tool_results:
        return ToolCalls([("calculate", {"expression": "3*3"})])
    return Text("Done: " + ", ".join(req.tool_results))


def test_each_answer_keeps_its_own_tool_tree_with_sub_agents_nested_also_when_reopened(qtbot, qloop, ui_pod,
                                                                                          fake_model) -> None:
    ui_pod.add_agent("lead", provider="fake", profile="research")
    fake_model.script = sub_agent_script
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.open_conversation("lead", None)
    send(qtbot, w, "please multiply")
    qloop.wait_until(lambda: answered(w), what="the first answer")
    send(qtbot, w, "now split the work")
    qloop.wait_until(lambda: "Done: part 42" in w.chat.toPlainText(), what="the second answer")
    # the answer shows while it streams: history is read once both turns are stored as finished
    qloop.wait_until(lambda: all(t["status"] not in ("pending", "running") for t in ui_pod.turns(w.conversation_id)),
                     what="both turns to be stored")

    fresh = MainWindow(ui_pod)  # as after a restart: history only
    qtbot.addWidget(fresh)
    fresh.open_conversation("lead", w.conversation_id)
    # in history each answer's tree is folded to one line and opens on demand
    text = fresh.chat.toPlainText()
    assert "tool delegate" not in text and text.count(" steps · ") == 2
    click(fresh, f"hearth-steps:{ui_pod.turns(w.conversation_id)[1]['id']}")
    text = fresh.chat.toPlainText()
    # the delegate call with the sub-agent's own calls under it
    assert "tool delegate task=compute six times seven ✓" in text
    assert text.index("tool delegate") < text.index("tool calculate expression=6*7") < text.index("Done: part 42")
    # the earlier answer keeps its own tree, still folded
    assert "please multiply" in text and "tool calculate expression=3*3" not in text
    first_turn = ui_pod.turns(w.conversation_id)[0]["id"]
    click(fresh, f"hearth-steps:{first_turn}")
    text = fresh.chat.toPlainText()
    assert text.index("please multiply") < text.index("tool calculate expression=3*3 ✓") < text.index("now split")
    # details (arguments and result) open on demand, not in the line
    step = next(s for s in ui_pod.turns(w.conversation_id)[0]["steps"] if s["name"] == "calculate")
    assert "Result: 9" not in fresh.chat.toPlainText()
    click(fresh, f"hearth-step:{step['id']}")
    assert "Result: 9" in fresh.chat.toPlainText() and '"expression": "3*3"' in fresh.chat.toPlainText()


def test_copy_regenerate_edit_and_branch(qtbot, qloop, ui_pod, script) -> None:
    script([Text("first answer"), Text("second answer"), Text("regenerated answer"), Text("answer to the edit")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "question one")
    qloop.wait_until(lambda: "first answer" in w.chat.toPlainText(), what="the first answer")
    qloop.wait_until(lambda: answered(w), what="the first answer to finish")
    send(qtbot, w, "question two")
    qloop.wait_until(lambda: "second answer" in w.chat.toPlainText() and answered(w), what="the second answer")
    conv = w.conversation_id
    # Copy puts the message's markdown on the clipboard
    click(w, "hearth-act:copy:3")
    assert QGuiApplication.clipboard().text() == "second answer"
    # Regenerate the last answer: replaced in place
    msgs = ui_pod.conversation(conv)["messages"]
    click(w, f"hearth-act:regenerate:{msgs[-1]['id']}")
    qloop.wait_until(lambda: "regenerated answer" in w.chat.toPlainText() and answered(w), what="the new answer")
    contents = [m["content"] for m in ui_pod.conversation(conv)["messages"]]
    assert contents == ["question one", "first answer", "question two", "regenerated answer"]
    assert "second answer" not in w.chat.toPlainText()
    # Edit the first question and send it again: an earlier message continues in a branch, the original stays
    first_q = ui_pod.conversation(conv)["messages"][0]["id"]
    click(w, f"hearth-act:edit:{first_q}")
    assert w.composer.toPlainText() == "question one"
    w.composer.clear()  # emptying the box cancels the edit; Edit again
    assert w._editing is None
    click(w, f"hearth-act:edit:{first_q}")
    w.composer.setPlainText("question one, edited")
    w.send()
    qloop.wait_until(lambda: w.conversation_id != conv and "answer to the edit" in w.chat.toPlainText(),
                     what="the answer to the edit in a branch")
    branch = [m["content"] for m in ui_pod.conversation(w.conversation_id)["messages"]]
    assert branch == ["question one, edited", "answer to the edit"]
    assert [m["content"] for m in ui_pod.conversation(conv)["messages"]] == contents
    # Branch from here: a new conversation up to that message
    w.load_conversation(conv)
    click(w, f"hearth-act:branch:{ui_pod.conversation(conv)['messages'][1]['id']}")
    assert w.conversation_id not in (conv, None)
    assert [m["content"] for m in ui_pod.conversation(w.conversation_id)["messages"]] == ["question one", "first answer"]
    assert "(branch)" in w.conversations.rows()[0]


def test_code_blocks_are_highlighted_and_copied(qtbot, qloop, ui_pod, script) -> None:
    script([Text("Here:\n\n```python\ndef f(x):\n    return x * 2\n```\n")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "code please")
    qloop.wait_until(lambda: answered(w), what="the answer")
    html = w.chat.document().toHtml()
    assert "color:#" in html.replace(" ", "")  # pygments colours the tokens
    assert "Copy code" in w.chat.toPlainText()
    click(w, "hearth-copy:1:0")
    assert QGuiApplication.clipboard().text() == "def f(x):\n    return x * 2\n"


def test_a_link_in_an_answer_shows_where_it_goes_and_opens_only_once_the_person_says_yes(qtbot, qloop, ui_pod,
                                                                                         script) -> None:
    """A model (one that read a stranger's mail, say) wrote "[your bank](https://…)": the chat showed "your bank"
    alone and a click opened the address in the browser at once, whatever it carried; a link to a file or a share
    went to the desktop's handler too, and a link written to a Hearth address ("hearth-act:…") ran a message action.
    Now the address shows after the words, a web link opens only after the person says yes to the address itself,
    other kinds are never opened (the status bar says so), and a Hearth address in the text is no link."""
    from PySide6.QtCore import QObject, Slot
    from PySide6.QtGui import QDesktopServices

    class Browser(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.opened: list[str] = []

        @Slot(QUrl)
        def open(self, url: QUrl) -> None:
            self.opened.append(url.toString())

    bank = "https://bank.example/login?code=7731"
    script([Text(f"Sign in at [your bank]({bank}), see [the notes](smb://files.example/notes) or "
                 "[continue](hearth-act:regenerate:99999), [go on](HEARTH-ACT:branch:99998) or <Hearth-Act:edit:99997>.")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "where do I pay?")
    qloop.wait_until(lambda: answered(w), what="the answer")
    assert f"your bank ({bank})" in w.chat.toPlainText()
    assert "continue (hearth-act:regenerate:99999)" in w.chat.toPlainText()
    made = w.chat.document().toHtml().lower()
    assert not [n for n in ("99999", "99998", "99997") if 'href="hearth-act:' in made and f':{n}"' in made], \
        "a message action in the text (a link's scheme is read in any case)"
    browser = Browser()
    for scheme in ("https", "smb"):
        QDesktopServices.setUrlHandler(scheme, browser, "open")
    try:
        seen = answer_confirm("Cancel")
        w.chat.anchorClicked.emit(QUrl(bank))
        assert seen == ["Open this address outside Hearth?"] and browser.opened == []
        answer_confirm("Open")
        w.chat.anchorClicked.emit(QUrl(bank))
        assert browser.opened == [bank]
        w.chat.anchorClicked.emit(QUrl("smb://files.example/notes"))
        assert browser.opened == [bank]
        assert "does not open this kind of link" in w.statusBar().currentMessage()
        assert "smb://files.example/notes" in w.statusBar().currentMessage()
    finally:
        for scheme in ("https", "smb"):
            QDesktopServices.unsetUrlHandler(scheme)


def test_a_cut_off_answer_says_so(qtbot, qloop, ui_pod, script) -> None:
    script([Text("The list goes on and on and", finish="length")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "list everything")
    qloop.wait_until(lambda: answered(w), what="the answer")
    assert "Cut off: the model reached its length limit" in w.chat.toPlainText()


def test_the_view_follows_new_text_unless_the_person_scrolled_up(qtbot, qloop, ui_pod, script) -> None:
    script([Text("line\n\n" * 200)], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.resize(1000, 600)
    w.show()
    send(qtbot, w, "a long answer")
    qloop.wait_until(lambda: answered(w), what="the first answer")
    bar = w.chat.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()  # followed to the end
    script([Text("more\n\n" * 300, chunk_chars=20, delay_s=0.01)])
    send(qtbot, w, "another one")
    qloop.wait_until(lambda: "more" in w.chat.streaming_text, what="the stream to start")
    bar.setValue(bar.maximum() // 3)  # the person scrolls up to read
    held = bar.value()
    qloop.wait_until(lambda: answered(w), what="the second answer")
    assert bar.value() == held and bar.maximum() > held + 100


def test_streamed_text_is_kept_when_switching_agents_and_back(qtbot, qloop, ui_pod, script) -> None:
    ui_pod.add_agent("other", provider="fake", system="Other.")
    script([Text(SLOW, chunk_chars=4, delay_s=0.03)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.show()
    send(qtbot, w, "tell a long story")
    qloop.wait_until(lambda: "gamma delta" in w.chat.toPlainText(), what="the answer to stream")
    w.select_agent("other")
    assert w.agent == "other" and "gamma" not in w.chat.toPlainText()
    w.select_agent("helper")
    text = w.chat.toPlainText()
    assert "tell a long story" in text and "alpha beta gamma delta" in text and "working" in w.header.text()
    qloop.wait_until(lambda: answered(w), what="the answer to finish")
    assert w.chat.toPlainText().count("omicron pi rho sigma") == 4


def test_rename_delete_with_confirmation_and_export(qtbot, qloop, ui_pod, script, tmp_path) -> None:
    script([Text("Use `pip`.")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "how do I install?")
    qloop.wait_until(lambda: answered(w), what="the answer")
    conv = w.conversation_id
    assert w.rename_conversation(conv, "Installing")
    assert w.conversations.rows() == ["Installing"]
    md, js = tmp_path / "c.md", tmp_path / "c.json"
    assert w.export_conversation(conv, str(md), "markdown") and w.export_conversation(conv, str(js), "json")
    assert md.read_text().startswith("# Installing") and "how do I install?" in md.read_text()
    data = json.loads(js.read_text())
    assert [m["content"] for m in data["messages"]] == ["how do I install?", "Use `pip`."]
    assert data["turns"][0]["steps"][0]["kind"] == "model"
    asked = answer_confirm("Cancel")  # the person says no
    assert not w.delete_conversation(conv, "Installing")
    assert asked and "cannot be undone" in asked[0] and w.conversations.rows() == ["Installing"]
    answer_confirm("Delete")
    assert w.delete_conversation(conv, "Installing")
    qloop.wait_until(lambda: w.statusBar().currentMessage() == "Deleted “Installing”.", what="the deletion")
    assert w.conversations.rows() == [] and ui_pod.list_conversations("helper") == []
    assert "how do I install" not in w.chat.toPlainText()


def test_search_finds_messages_in_every_conversation_and_jumps_to_the_message(qtbot, qloop, ui_pod, script) -> None:
    from runtime_host.store import Message

    ui_pod.add_agent("other", provider="fake", system="Other.")
    inst, _ = ui_pod.find_agent("other")
    conv = ui_pod.store.create_conversation(inst.id, "long one")
    with ui_pod.store.session() as s:
        for i in range(600):
            s.add(Message(conversation_id=conv.id, role="user" if i % 2 == 0 else "assistant",
                          content="the zebra crossing is here" if i == 3 else f"filler {i}", created_at=1000.0 + i))
        s.commit()
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.resize(1000, 700)
    w.show()
    assert w.agent == "helper"
    w.conversation_search.setText("ZEBRA crossing")
    w._on_conversation_search()
    assert w.conversations.topLevelItemCount() == 1
    hit = w.conversations.topLevelItem(0)
    assert "long one · other" in hit.text(0) and "zebra crossing" in hit.text(0)
    w.conversations.open_item(hit)
    assert w.agent == "other" and w.conversation_id == conv.id
    assert w.conversations.topLevelItemCount() == 1  # the results stay while going through them
    # the message was far above the first page: it is loaded and in view
    bar = w.chat.verticalScrollBar()
    assert "the zebra crossing is here" in w.chat.toPlainText()
    cursor = w.chat.document().find("the zebra crossing")
    top = w.chat.document().documentLayout().blockBoundingRect(cursor.block()).top()
    assert bar.value() <= top <= bar.value() + w.chat.viewport().height()
    w.conversation_search.clear()
    assert w.conversations.rows() == ["long one"]


def test_scheduled_runs_are_grouped_and_opening_an_agent_opens_the_last_chat(qtbot, qloop, ui_pod, script) -> None:
    script([Text("hello there"), Text("briefing")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "my own chat")
    qloop.wait_until(lambda: answered(w), what="the chat answer")
    ui_pod.add_schedule("helper", "0 8 * * *", "Morning briefing", name="Morning briefing")
    for day in (2, 3, 4):
        qloop.run(ui_pod.tick(datetime(2030, 1, day, 8, 0, 30, tzinfo=UTC)))
    qloop.wait_until(lambda: all(t["status"] == "done" for t in ui_pod.runs()) and len(ui_pod.runs()) == 3,
                     what="three scheduled runs")
    w.refresh_agents()
    w.select_agent("helper")
    rows = w.conversations.rows()
    assert rows == ["Runs of “Morning briefing” (3 runs)", "my own chat"] or rows == [
        "my own chat", "Runs of “Morning briefing” (3 runs)"]
    assert "my own chat" in w.chat.toPlainText() and "briefing" not in w.chat.toPlainText().replace("Morning", "")
    group = next(w.conversations.topLevelItem(i) for i in range(2)
                 if w.conversations.topLevelItem(i).childCount())
    assert group.childCount() == 3
    w.conversations.open_item(group.child(0))
    assert "Morning briefing" in w.chat.toPlainText()


def test_a_scheduled_run_is_regenerated_as_that_run_and_its_prompt_is_hearths_not_yours(qtbot, qloop, ui_pod,
                                                                                        script) -> None:
    """README: an answer has Regenerate, your message Edit; runs of a schedule are grouped apart from your chats.
    A scheduled run's prompt used to show as "You" with Edit, and Regenerate on its answer turned the run into a
    chat: it left "Runs of “Morning briefing”" and became the chat the agent opens with."""
    script([Text("hello there"), Text("briefing v1"), Text("briefing v2")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "my own chat")
    qloop.wait_until(lambda: answered(w), what="the chat answer")
    ui_pod.add_schedule("helper", "0 8 * * *", "Morning briefing", name="Morning briefing")
    qloop.run(ui_pod.tick(datetime(2030, 1, 2, 8, 0, 30, tzinfo=UTC)))
    qloop.wait_until(lambda: [t["status"] for t in ui_pod.runs()] == ["done"], what="the scheduled run")
    [row] = [r for r in ui_pod.schedule_ledger() if r["outcome"] == "ran"]
    w.open_conversation("helper", row["conversation_id"])
    prompt, answer = ui_pod.conversation(row["conversation_id"])["messages"]
    html = w.chat.document().toHtml()
    assert f"hearth-act:edit:{prompt['id']}" not in html and f"hearth-act:branch:{prompt['id']}" in html
    assert w.chat.toPlainText().startswith("Hearth")  # the prompt is Hearth's words, not "You"
    click(w, f"hearth-act:regenerate:{answer['id']}")
    qloop.wait_until(lambda: "briefing v2" in w.chat.toPlainText() and answered(w), what="the regenerated run")
    assert w.conversation_id == row["conversation_id"] and "briefing v1" not in w.chat.toPlainText()
    w.refresh_agents()
    w.select_agent("helper")  # opening the agent opens the last chat, not the run
    assert "my own chat" in w.chat.toPlainText() and "briefing v2" not in w.chat.toPlainText()
    assert sorted(w.conversations.rows()) == ["Runs of “Morning briefing” (1 run)", "my own chat"]


def test_a_new_agent_opens_ready_to_chat_and_answers_the_first_message(qtbot, qloop, ui_pod, script) -> None:
    from app.dialogs import AddAgentDialog

    script([Text("old agent answer"), Text("hello from the new agent")])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "to the first agent")
    qloop.wait_until(lambda: answered(w), what="the first answer")
    dlg = AddAgentDialog(ui_pod, w)
    dlg.name.setText("fresh")
    dlg._save()
    assert dlg.created
    w.agent_created(dlg.created["name"])
    assert w.agent == "fresh" and w.conversation_id is None and "to the first agent" not in w.chat.toPlainText()
    assert w.pages.currentIndex() == 0
    send(qtbot, w, "hi new agent")
    qloop.wait_until(lambda: answered(w) or "failed" in w.header.text(), what="the new agent's answer")
    assert "hello from the new agent" in w.chat.toPlainText(), w.chat.toPlainText()
    assert ui_pod.list_conversations("fresh")[0]["title"] == "hi new agent"


def test_line_length_stays_readable_when_maximized_and_the_layout_holds_at_900_px(qtbot, qloop, ui_pod, script) -> None:
    script([Text("word " * 400)])
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.resize(3840, 2000)
    w.show()
    send(qtbot, w, "a long paragraph")
    qloop.wait_until(lambda: answered(w), what="the answer")
    doc = w.chat.document()
    block = doc.find("word word").block()
    line = block.layout().lineAt(0)
    assert line.naturalTextWidth() <= w.chat.max_content_width()
    assert w.chat.viewport().width() > 2 * w.chat.max_content_width()  # the window really is wide
    # at 900 px the sidebar and the chat page fit side by side (other pages are their own)
    side = w.agents.parentWidget().minimumSizeHint().width()
    assert side + w.pages.widget(0).minimumSizeHint().width() + 40 <= 900
    chat_page = w.pages.widget(0)
    chat_page.resize(900 - side - 40, 600)
    qloop.run(__import__("asyncio").sleep(0.05))
    assert w.chat.width() >= 400 and w.composer.width() >= 300


def test_emoji_and_the_tree_symbols_have_a_font(qapp) -> None:
    """A stock Linux desktop draws emoji only with a colour emoji font: the package list brings one, and
    every symbol the conversation uses has a glyph in some installed font."""
    from pathlib import Path

    from PySide6.QtGui import QFont, QFontDatabase, QFontMetrics

    listed = (Path(__file__).resolve().parents[2] / "packaging" / "debian-packages.txt").read_text().split()
    assert "fonts-noto-color-emoji" in listed
    families = QFontDatabase.families()
    for ch in "😀🎉👍✓✗⚠■▸▾…→":
        assert any(QFontMetrics(QFont(f)).inFontUcs4(ord(ch)) for f in families), f"no installed font draws {ch!r}"


def test_delete_and_forget_takes_what_memory_learned_from_the_conversation(qtbot, qloop, ui_pod, script) -> None:
    """Deleting a conversation used to keep what memory had learned from it, with no way to drop that but finding
    each source in the wiki; "Delete and forget" deletes the conversation and its memory sources. Another
    conversation's memory, and plain "Delete", keep theirs."""
    script([Text("Noted.")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "My locker combination at the gym is 4471 and the locker is number 88.")
    qloop.wait_until(lambda: answered(w), what="the answer")
    secret = w.conversation_id
    assert qloop.run(ui_pod.chat("helper", "Our allotment is plot 42 behind the church.", new_conversation=True)).ok
    qloop.run(ui_pod.memory_produce())
    found = lambda q: [h.snippet for h in qloop.run(ui_pod.memory_search(q, k=5, mode="keyword"))]  # noqa: E731
    assert any("4471" in s for s in found("locker combination gym"))
    answer_confirm("Delete and forget")
    assert w.delete_conversation(secret, "Locker")
    qloop.wait_until(lambda: "forgot" in w.statusBar().currentMessage(), what="the deletion")
    assert re.search(r"forgot [1-9]\d* memory source", w.statusBar().currentMessage())
    assert not any("4471" in s for s in found("locker combination gym"))
    assert any("plot 42" in s for s in found("allotment plot"))
    assert [c["id"] for c in ui_pod.list_conversations("helper")] != [secret] and len(ui_pod.list_conversations("helper")) == 1


def test_a_delete_finishing_after_a_switch_is_not_told_to_the_next_person(qtbot, qloop, ui_pod, script,
                                                                        monkeypatch) -> None:
    """Delete runs in the background, after memory's thread (busy with an import, say): Me switched to Bob
    meanwhile, and Bob's status bar read 'Deleted “Divorce lawyer plan”.', Me's conversation's title."""
    import threading

    import wiki_engine.memory as memory

    script([Text("Noted.")], repeat_last=True)
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    send(qtbot, w, "Which divorce lawyer should I call?")
    qloop.wait_until(lambda: "answered by" in w.header.text(), what="the answer")
    conv = w.conversation_id
    qloop.run(ui_pod.memory_search("lawyer", k=1, mode="keyword"))  # memory open: Delete works on its thread
    entered, release = threading.Event(), threading.Event()
    real = memory.Memory.drop_skips

    def busy(self, scope, keys):  # memory's thread held as a long import holds it
        entered.set()
        release.wait(10)
        return real(self, scope, keys)

    monkeypatch.setattr(memory.Memory, "drop_skips", busy)
    ui_pod.add_person("Bob")
    w.refresh_people()
    answer_confirm("Delete")
    assert w.delete_conversation(conv, "Divorce lawyer plan")
    qloop.wait_until(entered.is_set, what="the deletion under way")
    assert w.switch_person("Bob")
    w.statusBar().clearMessage()
    release.set()
    qloop.wait_until(lambda: not any(c["id"] == conv for c in ui_pod.list_conversations("helper")),
                     what="Me's conversation deleted")
    qloop.wait_until(lambda: not w._tasks, what="the delete done")
    assert "Divorce" not in w.statusBar().currentMessage()
