"""The Wiki page's results, suggestions and Ask memory's Sources after months of one conversation, or of one
newsletter: every hit of a conversation carries its title, and the list read "· Daily planning — Me" twenty times,
typeahead offered "Daily planning" eight times and Ask memory listed "[1] Daily planning", "[2] Daily planning".
A source now reads as its words, who said it and the day it was said; a page keeps its title; a title is suggested
once. A second person, Bob, keeps a conversation of the same title about the same things: none of it is shown."""

from __future__ import annotations

import re
import time
from datetime import datetime

from app.main_window import MainWindow
from tests.helpers.fake_model import Text
from wiki_engine import Item, Page

PLACES = ["the gym", "the office", "the pool", "the station", "the library", "the dentist", "the bakery",
          "the garage", "the school", "the market", "the park", "the cinema"]
DAY = 86400


def say(person, agent: str, title: str, lines: list[str], answer: str = "Got it: {}") -> None:
    """A conversation titled ``title`` with the person's agent: each line, and the agent's answer to it."""
    inst = person.find_agent(agent)[0]
    conv = person.store.create_conversation(inst.id, title)
    for line in lines:
        turn = person.store.create_turn(conv.id, inst.id, origin="chat")
        person.store.add_message(conv.id, "user", line, turn_id=turn.id)
        person.store.add_message(conv.id, "assistant", answer.format(line.lower()), turn_id=turn.id)


def months_of_daily_planning(qloop, alice) -> tuple[object, list[float]]:
    """Alice (the first person) and Bob each keep a conversation "Daily planning" saying where their zorblat bag
    is; Alice also gets a newsletter, "Weekly digest", about the bag's maker, one issue a week. Returns Bob and the
    times the issues came."""
    alice.store.rename_person(alice.person.id, "Alice")
    say(alice, "helper", "Daily planning", [f"My zorblat bag is at {p} today." for p in PLACES])
    alice.add_person("Bob")
    bob = alice.pod.for_person(alice.store.get_person("Bob"))
    bob.add_provider("fake", kind="openai-compatible", base_url=alice.list_providers()[0]["base_url"], model="fake-1")
    bob.add_agent("helper", provider="fake", system="Test agent.")
    say(bob, "helper", "Daily planning", ["My zorblat bag is in Bob's locker 77 at the quarry.",
                                          "Daily vitamins: Bob's zorblat pills."])
    came = [time.time() - (5 - n) * 7 * DAY for n in range(5)]
    scope = f"private/{alice.person.id}"
    qloop.run(alice.in_memory_thread(lambda: alice.memory.add_items(
        [Item(text=f"Weekly digest {n}: the zorblat bag makers open a shop in town number {n}.", scope=scope, ts=ts,
              kind="mail", key=f"digest-{n}", author="Zorblat News <news@zorblat.example>", subject="Weekly digest")
         for n, ts in enumerate(came)], check=False, to_inbox=False)))
    qloop.run(alice.memory_produce(), timeout=120)
    return bob, came


def wiki(qtbot, pod) -> MainWindow:
    w = MainWindow(pod)
    qtbot.addWidget(w)
    w.show_wiki()
    return w


def results(qloop, w, query: str) -> list[tuple[str, str]]:
    """What the person reads after searching ``query``: each result's line and its tooltip."""
    w.wiki.results.clear()
    w.wiki.search.setText(query)
    w.wiki._on_search()
    qloop.wait_until(lambda: w.wiki.results.count() > 0 and not w.wiki._tasks, what="the results")
    return [(w.wiki.results.item(i).text(), w.wiki.results.item(i).toolTip()) for i in range(w.wiki.results.count())]


def local_day(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%d %b %Y")


def test_the_results_of_one_conversation_read_as_their_words_who_said_them_and_when(qtbot, qloop, ui_pod) -> None:
    bob, came = months_of_daily_planning(qloop, ui_pod)
    w = wiki(qtbot, ui_pod)
    shown = results(qloop, w, "where is my zorblat bag")
    lines = [line for line, _ in shown]
    assert len(lines) >= 12 and len(set(lines)) == len(lines), lines
    chat = [line for line in lines if "said by" in line]
    today = local_day(time.time())
    # her own lines and her agent's answers, each by its words, who said it and the day (today: said just now)
    mine = [line for line in chat if line.endswith(f"— chat, said by Alice, {today} · Me")]
    answers = [line for line in chat if line.endswith(f"— chat, said by the agent helper, {today} · Me")]
    assert len(mine) + len(answers) == len(chat) and len(mine) >= 6 and answers, chat
    for line in mine:
        assert re.fullmatch(r"· My zorblat bag is at the \w+ today\. — .*", line), line
    assert all("Daily planning" not in line for line in lines)  # the title is what they share: its tooltip says it
    assert all(tip.startswith("<p>Daily planning<br>") for line, tip in shown if "said by" in line), shown
    # the newsletter: each issue by its words, its sender and the day it came
    digest = sorted(line for line, _ in results(qloop, w, "zorblat bag makers shop") if "Weekly digest" in line)
    assert len(digest) == 5 and all(  # the address as memory keeps it (no inbox of hers holds this mail)
        re.fullmatch(rf"· Weekly digest {n}: the zorblat bag makers open a shop in town number {n}\. — mail from "
                     rf"Zorblat News <[^<>]+>, subject “Weekly digest”, {local_day(ts)} · Me", line)
        for line, (n, ts) in zip(digest, enumerate(came), strict=True)), digest
    everything = " ".join(f"{line} {tip}" for line, tip in shown)
    assert "locker 77" not in everything and "Bob" not in everything, everything  # Bob's are his alone
    # Bob, in the same window, finds his own and reads none of Alice's
    bob_shown = " ".join(f"{line} {tip}" for line, tip in results(qloop, wiki(qtbot, bob), "where is my zorblat bag"))
    assert "locker 77" in bob_shown and "said by Bob" in bob_shown
    assert not any(p in bob_shown for p in PLACES) and "Alice" not in bob_shown and "digest" not in bob_shown


def test_a_page_hit_keeps_its_title(qtbot, qloop, ui_pod) -> None:
    scope = f"private/{ui_pod.person.id}"

    def write() -> None:
        sid = ui_pod.memory.add_source("The zorblat bag hangs by the door.", scope=scope)
        ui_pod.memory.write_page(Page("Zorblat bag", scope, "things", "- It hangs by the door [1]", {1: sid}),
                                 author="agent:wiki-writer")

    qloop.run(ui_pod.in_memory_thread(write))
    lines = [line for line, _ in results(qloop, wiki(qtbot, ui_pod), "zorblat bag door")]
    assert "📄 Zorblat bag — Me" in lines, lines
    assert f"· The zorblat bag hangs by the door. — note, {local_day(time.time())} · Me" in lines, lines


def test_typeahead_offers_a_conversations_title_once_and_others_after_it(qtbot, qloop, ui_pod) -> None:
    bob, _ = months_of_daily_planning(qloop, ui_pod)
    scope = f"private/{ui_pod.person.id}"
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.add_source("Daily vitamins: one with breakfast.",
                                                                       scope=scope)))
    w = wiki(qtbot, ui_pod)
    w.wiki._on_typed("Dail")
    qloop.wait_until(lambda: w.wiki._suggestions.rowCount() > 0 and not w.wiki._tasks, what="suggestions")
    assert sorted(w.wiki._suggestions.stringList()) == ["Daily planning", "Daily vitamins: one with breakfast."]
    w.wiki._on_typed("Weekly d")
    qloop.wait_until(lambda: "Weekly digest" in w.wiki._suggestions.stringList() and not w.wiki._tasks,
                     what="the newsletter's title")
    assert w.wiki._suggestions.stringList() == ["Weekly digest"]
    # a suggestion chosen searches its words: the newsletter's issues, each its own line
    w.wiki._on_suggestion("Weekly digest")
    qloop.wait_until(lambda: w.wiki.results.count() > 0 and not w.wiki._tasks, what="the results")
    lines = [w.wiki.results.item(i).text() for i in range(w.wiki.results.count())]
    assert sum("Weekly digest" in line for line in lines) == 5 and len(set(lines)) == len(lines), lines


def test_ask_memorys_sources_of_one_conversation_are_told_apart(qtbot, qloop, ui_pod, script) -> None:
    months_of_daily_planning(qloop, ui_pod)
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("It was at the gym [1], the office [2] and the pool [3].")])
    w = wiki(qtbot, ui_pod)
    w.wiki.search.setText("where is my zorblat bag")
    w.wiki.ask.click()
    qloop.wait_until(lambda: "Sources" in w.wiki.page.toPlainText(), what="the answer")
    listed = w.wiki.page.toPlainText().split("Sources", 1)[1].strip().splitlines()
    assert len(listed) == 3 and len(set(listed)) == 3, listed
    assert all(re.fullmatch(r"\[\d\] .*zorblat.* — (chat, said by (Alice|the agent helper)|mail from Zorblat News "
                            r"<[^<>]+>, subject “Weekly digest”), \d\d \w\w\w \d{4} · Me", line) for line in listed), listed
    assert "locker 77" not in w.wiki.page.toPlainText()
