"""Ingest now as a new user meets it: a weak model's answer of no page, chat said a moment ago, and household notes
that wait for the first person's model."""

from __future__ import annotations

import asyncio
import json
import re

from tests.helpers.fake_model import Text
from tests.ui.test_wiki_view import wiki_window


def _press_ingest_now(qloop, w) -> str:
    panel = w.wiki.ingest_panel
    panel.ingest_now.click()
    qloop.wait_until(lambda: not panel._tasks, what="Ingest now")
    said = w.statusBar().currentMessage()
    qloop.run(asyncio.sleep(0.2))
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki")
    return said


def _writer(scope: str, title: str, line: str):
    """A writer that makes one page from the first source it is shown (its label), and no page when shown none."""
    def answer(req):
        labels = re.findall(r"\b(S\d+)\b", req.last_user or "")
        if "maintain a personal wiki" not in json.dumps(req.body) or not labels:
            return Text("[]" if "maintain a personal wiki" in json.dumps(req.body) else "Noted.")
        return Text(json.dumps([{"title": title, "scope": scope, "category": "family", "body": f"- {line} [1]",
                                 "citations": {"1": labels[0]}}]))
    return answer


def test_a_writer_answering_no_page_leaves_the_notes_for_a_stronger_model(qtbot, qloop, ui_pod, fake_model) -> None:
    """A small local model answered "[]" (no page) to the writer's prompt, and both notes left the inbox as if
    written: "Ingest wrote 0 page(s) ...; 0 item(s) left in the inbox", and a stronger model chosen afterwards never
    wrote a page of them. Now they wait, the status says the model wrote no page from them and where to choose a
    stronger one, and the next model writes them."""
    pod = ui_pod
    scope = f"private/{pod.person.id}"
    qloop.run(pod.in_memory_thread(lambda: [pod.memory.add_source(t, scope=scope) for t in (
        "My sister Clara's birthday is on 3 June.", "The dentist is Dr Okafor, Tuesdays at 9.")]))
    pod.set_role_model("ingest", "fake/fake-1")
    w = wiki_window(qtbot, pod, shown=True)
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki")

    fake_model.script = lambda req: Text("[]")
    said = _press_ingest_now(qloop, w)
    assert "2 item(s) left in the inbox" in said and "wrote no page from 2 note(s)" in said, said
    assert "Settings → Models" in said, said
    assert qloop.run(pod.in_memory_thread(lambda: pod.memory.inbox_count([scope]))) == 2

    fake_model.script = _writer(scope, "Clara", "Clara's birthday is on 3 June")
    said = _press_ingest_now(qloop, w)
    assert [p.title for p in pod.memory.list_pages(scope)[0]] == ["Clara"], said
    assert "1 page(s)" in said and "0 item(s) left" in said, said


def test_ingest_now_right_after_chatting_writes_the_chat(qtbot, qloop, ui_pod, fake_model) -> None:
    """Ingest now wrote only what the 5-minute memory read had already pulled in: right after chatting it said
    "Ingest wrote 0 page(s) ...; 0 item(s) left in the inbox" and the Wiki "Memory holds nothing yet: chat with an
    agent..." though the person had just chatted. It reads their new chat first now."""
    pod = ui_pod
    scope = f"private/{pod.person.id}"
    pod.set_role_model("ingest", "fake/fake-1")
    fake_model.script = _writer(scope, "Clara", "Clara's birthday is on 3 June")
    assert qloop.run(pod.chat("helper", "My sister Clara's birthday is on 3 June.", new_conversation=True)).ok
    w = wiki_window(qtbot, pod, shown=True)
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki")
    said = _press_ingest_now(qloop, w)
    assert [p.title for p in pod.memory.list_pages(scope)[0]] == ["Clara"], (said, w.wiki.page.toPlainText())
    assert "Memory holds nothing yet" not in w.wiki.page.toPlainText()


def test_bobs_household_note_left_in_the_inbox_says_whose_model_it_waits_for(qtbot, qloop, home, fake_model) -> None:
    """Bob chose his own model for wiki pages; the first person never chose one. His agent's household note stayed
    in the inbox at every Ingest now with no word of why: household pages are written by the first person's model."""
    from runtime_host.pod import Pod

    me = Pod(home).first_person()
    try:
        me.rename("Alice")
        me.add_person("Bob")
        bob = me.pod.unlock("Bob")
        bob.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
        bob.add_agent("helper", provider="fake", system="Test agent.")
        bob.set_role_model("ingest", "fake/fake-1")
        inst = next(i for i, _ in me.pod.store.list_agents(bob.person.id))
        qloop.run(bob.in_memory_thread(lambda: bob.memory.remember(
            "The recycling goes out on Thursdays.", person=bob.person.id, agent=inst.id, scope="public")))
        fake_model.script = _writer("public", "Recycling", "Out on Thursdays")
        w = wiki_window(qtbot, me, shown=True)
        w.refresh_people()
        assert w.switch_person("Bob")
        w.show_wiki()
        qloop.wait_until(lambda: not w.wiki._tasks, what="Bob's wiki")
        said = _press_ingest_now(qloop, w)
        assert "1 item(s) left in the inbox" in said, said
        assert "1 household note(s) wait for the ingest model of Alice, who set Hearth up" in said, said
        assert "once they choose one in Settings → Models" in said, said
        assert not me.memory.list_pages("public")[0]
    finally:
        qloop.run(me.close())
