"""When each thing in memory was said, as its models read it: Ask memory's excerpts and an agent's search_memory
hits each carry their day (on this machine's calendar), and today's date comes with them. Both dentists came with
no date and no today: the model could not tell which was the current one, nor answer "when did I…"."""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.helpers.fake_model import Text
from wiki_engine import Item
from wiki_engine.index import date_words

NZ = ZoneInfo("Pacific/Auckland")
# Monday mornings in Auckland: on UTC's calendar both were Sundays
LINDQVIST = datetime(2026, 2, 9, 8, 30, tzinfo=NZ).timestamp()
OKAFOR = datetime(2026, 11, 16, 8, 30, tzinfo=NZ).timestamp()


def _alice_and_bob_said(pod, kind: str = "note") -> str:
    """(In memory's thread.) Alice's two dentists, months apart, and Bob's own dentist in his private memory; her
    helper agent's id."""
    bob = pod.add_person("Bob")
    agent = next(i for i, _ in pod.store.list_agents(pod.person.id)).id
    mine = f"private/{pod.person.id}"

    def said(text: str, ts: float, scope: str = mine, owner: str = pod.person.id, key: str = "") -> Item:
        return Item(text=text, scope=scope, ts=ts, kind=kind, key=key or f"k-{ts}", author="Alice", owner=owner,
                    agent=agent if owner == pod.person.id else "", subject="Health")

    pod.memory.add_items([said("Our family dentist is now Dr Lindqvist at the Harwick clinic.", LINDQVIST),
                          said("We switched dentists: our family dentist is Dr Okafor.", OKAFOR),
                          said("Our family dentist is Dr Bergstrom.", OKAFOR, f"private/{bob['id']}", bob["id"],
                               "k-bob")])
    return agent


async def test_ask_memory_shows_its_model_the_day_of_each_excerpt_and_today(pod, fake_model, script,
                                                                            in_zone) -> None:
    in_zone("Pacific/Auckland")
    await pod.in_memory_thread(lambda: _alice_and_bob_said(pod))
    pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("Your family dentist is Dr Okafor [1].")])
    before = len(fake_model.requests)
    assert (await asyncio.wait_for(pod.ask_memory("Who is our family dentist?"), 60)).ok
    prompt = fake_model.requests[before].last_user
    assert prompt.startswith(f"Today is {date_words(time.time())}.\n"), prompt
    lines = {ln.split(":", 1)[1].split()[-1]: ln for ln in prompt.splitlines() if "dentist" in ln and "[" in ln}
    assert ", Monday 9 February 2026): " in lines["clinic."], prompt  # the person's day, not UTC's Sunday
    assert ", Monday 16 November 2026): " in lines["Okafor."], prompt
    assert "Bergstrom" not in prompt  # Bob's memory is his own


async def test_an_agents_memory_search_says_the_day_of_each_hit_and_today(pod, in_zone) -> None:
    in_zone("Pacific/Auckland")
    agent = await pod.in_memory_thread(lambda: _alice_and_bob_said(pod, "chat"))
    found = await pod.pod.memory_host._tool_search_memory(pod.person.id, agent, {"query": "who is our family dentist"})
    assert found.startswith(f"Today is {date_words(time.time())}.\n"), found
    lines = {ln.split()[-1]: ln for ln in found.splitlines() if "dentist" in ln}
    assert ", Monday 9 February 2026 · Health] " in lines["clinic."], found  # the person's day, not UTC's Sunday
    assert ", Monday 16 November 2026 · Health] " in lines["Okafor."], found
    assert "Bergstrom" not in found


# ---- the models that decide, summarise, write and check memory see each thing's day and today's ------------------
# A page said "Alice's dentist is Dr Lindqvist" and later "Alice's dentist is Dr Okafor" without knowing which was the
# newer, and wrote "next Tuesday" from a months-old chat as if it were this week: the keep-or-skip model, the summary
# model, the wiki writer and the nightly check were shown who said each thing, never when, nor today's date.

LINDQVIST_SAID = "Our family dentist is Dr Lindqvist at the Harwick clinic."
OKAFOR_SAID = "We switched dentists: our family dentist is Dr Okafor, first check-up next Tuesday."
BOB_SAID = "Our family dentist is Dr Bergstrom."


def _chatted(pod, who, agent: str, said: list[tuple[str, str, float]]) -> None:
    """A conversation of ``who`` with their agent, each message (role, text) stamped at its time."""
    from sqlalchemy import text

    inst = who.find_agent(agent)[0]
    conv = pod.store.create_conversation(inst.id, "Dentist")
    stamped = []
    for role, words, ts in said:
        turn = pod.store.create_turn(conv.id, inst.id)
        stamped.append((pod.store.add_message(conv.id, role, words, turn_id=turn.id).id, ts))
    with pod.store.engine.begin() as c:
        for mid, ts in stamped:
            c.execute(text("UPDATE message SET created_at = :t WHERE id = :i"), {"t": ts, "i": mid})


def _bob_on_the_same_server(pod):
    """Bob, unlocked, with his own agent and his own models (bob-x keeps or skips, bob-w writes) on the fake server;
    Alice's are alice-x and alice-w."""
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    pod.rename("Alice")
    _, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("bobs", provider="fake")
    for who, name in ((pod, "alice"), (as_bob, "bob")):
        who.set_role_model("extraction", f"fake/{name}-x")
        who.set_role_model("ingest", f"fake/{name}-w")
    return as_bob


def _listed(prompt: str, words: str) -> str:
    (line,) = [ln for ln in prompt.splitlines() if words in ln]
    return line


async def test_the_keep_or_skip_and_summary_models_see_each_messages_day_and_today(pod, fake_model, in_zone) -> None:
    """Alice told her agent of Dr Lindqvist in February and of Dr Okafor ("next Tuesday") in November; Bob of his own
    dentist. Her keep-or-skip model and her summary model are shown each message's day, on her machine's calendar
    (Auckland's Monday, UTC's Sunday), and today's date; none of Bob's words reach her models."""
    from runtime_host.memory_jobs import DECIDE_SYSTEM, SUMMARY_EVERY, SUMMARY_SYSTEM

    in_zone("Pacific/Auckland")
    as_bob = _bob_on_the_same_server(pod)
    filler = [("user" if i % 2 else "assistant", f"ok {i}", OKAFOR) for i in range(SUMMARY_EVERY - 3)]
    _chatted(pod, pod, "helper", [("user", LINDQVIST_SAID, LINDQVIST), ("assistant", "Noted.", LINDQVIST),
                                  ("user", OKAFOR_SAID, OKAFOR), *filler])
    _chatted(pod, as_bob, "bobs", [("user", BOB_SAID, OKAFOR), *filler, *filler[:2]])

    def model(req):
        if req.system == SUMMARY_SYSTEM:
            return Text("- The family dentist is Dr Okafor.")
        items = re.findall(r"^(\d+)\. \((.*)$", req.last_user, re.M)
        return Text(json.dumps([{"n": int(n), "keep": "dentist" in line, "reason": "-"} for n, line in items]))

    fake_model.script = model
    await asyncio.wait_for(pod.pod.memory_produce(folders=False), 60)
    await asyncio.wait_for(pod.pod.memory_summarize(), 60)
    today = f"Today is {date_words(time.time())}.\n"
    for system in (DECIDE_SYSTEM, SUMMARY_SYSTEM):
        asked = {r.model: r.last_user for r in fake_model.requests if r.system == system}
        assert set(asked) == {"alice-x", "bob-x"}, asked
        alices = asked["alice-x"]
        assert alices.startswith(today), alices
        assert "Bergstrom" not in alices and "Bergstrom" in asked["bob-x"]  # Bob's dentist reaches his model alone
        if system == DECIDE_SYSTEM:  # 1. (chat, said by Alice, Monday 9 February 2026): Our family dentist is …
            assert ", said by Alice, Monday 9 February 2026): " in _listed(alices, LINDQVIST_SAID), alices
            assert ", said by Alice, Monday 16 November 2026): " in _listed(alices, OKAFOR_SAID), alices
        else:  # Alice (Monday 9 February 2026): Our family dentist is …
            assert _listed(alices, LINDQVIST_SAID).startswith("Alice (Monday 9 February 2026): "), alices
            assert _listed(alices, OKAFOR_SAID).startswith("Alice (Monday 16 November 2026): "), alices
    assert "day it was said" in SUMMARY_SYSTEM and "from the day it was said, never from today" in SUMMARY_SYSTEM


def _note(pod, text: str, ts: float, key: str, person: str = "") -> None:
    """(In memory's thread.) A note of ``person`` (Alice) said at ``ts``, in the inbox for their writer."""
    person = person or pod.person.id
    pod.memory.add_items([Item(text=text, scope=f"private/{person}", ts=ts, kind="note", key=key, owner=person)])


async def test_the_writer_and_the_nightly_check_see_each_sources_day_and_today(pod, fake_model, in_zone) -> None:
    """Alice's page says Dr Lindqvist (February); her note of November says Dr Okafor. Her wiki writer is shown the
    new note's day, the day of the source each claim of the page cites, today's date and the instruction that the
    newer holds and that "next Tuesday" is counted from the note's day; the nightly check is shown today's date with
    its sources' days. A page written from the two (the writer following that) is kept, citing both. Bob's note
    reaches his writer only."""
    from runtime_host.memory_jobs import RECONCILE_SYSTEM, SYNTH_SYSTEM

    in_zone("Pacific/Auckland")
    as_bob = _bob_on_the_same_server(pod)
    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: _note(pod, LINDQVIST_SAID, LINDQVIST, "lindqvist"))
    fake_model.script = lambda req: Text(json.dumps([{"title": "Family dentist", "scope": scope, "category": "health",
                                                      "body": f"- {LINDQVIST_SAID} [1]", "citations": {"1": "S1"}}]))
    await asyncio.wait_for(pod.memory_ingest(), 60)  # February's page
    old = pod.memory.read_page(scope, "family-dentist").citations[1]
    await pod.in_memory_thread(lambda: (_note(pod, OKAFOR_SAID, OKAFOR, "okafor"),
                                        _note(pod, BOB_SAID, OKAFOR, "bob", as_bob.person_id)))
    before = len(fake_model.requests)
    body = ("- Our family dentist was Dr Lindqvist at the Harwick clinic [1]\n"
            "- Since Monday 16 November 2026 our family dentist is Dr Okafor; first check-up Tuesday 24 November "
            "2026 [2]")

    def model(req):
        if req.system == RECONCILE_SYSTEM:
            return Text(json.dumps({"changed": False, "why": "no contradiction"}))
        if req.model == "alice-w":
            return Text(json.dumps([{"title": "Family dentist", "scope": scope, "category": "health", "body": body,
                                     "citations": {"1": "P1-1", "2": "S1"}}]))
        return Text("[]")

    fake_model.script = model
    await asyncio.wait_for(pod.pod.memory_ingest(), 60)
    asked = {r.model: r for r in fake_model.requests[before:] if r.system == SYNTH_SYSTEM}
    assert set(asked) == {"alice-w", "bob-w"}, asked
    prompt = asked["alice-w"].last_user
    assert prompt.startswith(f"Today is {date_words(time.time())}.\n"), prompt
    assert _listed(prompt, OKAFOR_SAID).startswith(f"- S1 (scope {scope}; note of Alice's, Monday 16 November 2026): ")
    assert "Its citations: [1] = P1-1 (Monday 9 February 2026)" in prompt, prompt  # the page's claim: February's
    assert "Bergstrom" not in prompt and "Bergstrom" in asked["bob-w"].last_user
    told = " ".join(asked["alice-w"].system.split())
    assert "the newer one holds, unless the older one is the person's own correction" in told
    assert '("tomorrow", "next Tuesday", "in two weeks") as the date it means, counted from the day it was said' in told
    page = pod.memory.read_page(scope, "family-dentist")
    assert page.body == body and page.citations[1] == old, page

    await asyncio.wait_for(pod.pod.memory_nightly(), 60)
    checks = [r for r in fake_model.requests if r.system == RECONCILE_SYSTEM]
    assert checks and all(r.model == "alice-w" for r in checks), [r.model for r in checks]
    prompt = checks[-1].last_user
    assert prompt.startswith(f"Today is {date_words(time.time())}.\nPage “Family dentist”:"), prompt
    assert "[1] (Monday 9 February 2026) " in prompt and "[2] (Monday 16 November 2026) " in prompt, prompt
    assert "Bergstrom" not in prompt


# The writer's new instructions, as a broken or hostile writer hands them back as a page
TOLD = ["Each one says the day it is from, after who said it, and today's date comes first.",
        "A page's citations say the day of each of its sources.",
        "Where two sources disagree, or a source and a page, the newer one holds, unless the older one is the "
        "person's own correction of what the newer says.",
        'Write a day said relative to when it was said ("tomorrow", "next Tuesday", "in two weeks") as the date it '
        "means, counted from the day it was said, never from today."]


@pytest.mark.parametrize("sentence", TOLD)
async def test_a_writer_handing_back_its_dates_instructions_writes_no_page(pod, fake_model, sentence) -> None:
    """A model that parrots the writer's instructions about days back as a page: no page is written, the note stays
    in the inbox for the next run."""
    from runtime_host.memory_jobs import MemoryModelError

    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: pod.memory.add_items([Item(text=OKAFOR_SAID, scope=scope, ts=OKAFOR,
                                                                  kind="note", key="okafor", owner=pod.person.id)]))
    pod.set_role_model("ingest", "fake/writer")
    fake_model.script = lambda req: Text(json.dumps([{"title": "Family dentist", "scope": scope, "category": "health",
                                                      "body": f"- {sentence} [1]", "citations": {"1": "S1"}}]))
    with pytest.raises(MemoryModelError, match="repeated its instructions"):
        await asyncio.wait_for(pod.memory_ingest(), 60)
    assert pod.memory.list_pages(scope)[0] == []
    assert await pod.in_memory_thread(lambda: [sid for sid, _ in pod.memory.waiting(10)])


@pytest.mark.parametrize("sentence", ["Each message says the day it was said, after who said it, and today's date comes "
                                      "first.", TOLD[3]])
async def test_a_summary_model_handing_back_its_dates_instructions_writes_no_summary(pod, fake_model,
                                                                                    sentence) -> None:
    """A summary model that answers with its instructions about days: the summary is the person's own lines, as
    Hearth's rules keep them, never the instructions."""
    from runtime_host import memory_jobs

    route = {"kind": "openai-compatible", "provider": "fake", "model": "fake-1", "base_url": fake_model.base_url,
             "key": "k"}
    fake_model.script = lambda req: Text(f"- {sentence}")
    out = memory_jobs.summarize(route, "the conversation with helper",
                                [("Alice", "Our family dentist is Dr Okafor.", OKAFOR), ("helper", "Noted.", OKAFOR)],
                                "Alice")
    assert "day" not in out and "Dr Okafor" in out, out


# A stranger's mail dated the last second of year 9999 at UTC-12: 1 January 10000 in UTC, past the calendar
PAST_THE_CALENDAR = "Fri, 31 Dec 9999 23:59:59 -1200"


def test_one_mail_dated_past_year_9999_keeps_no_other_mail_of_its_export_out_of_memory(home, tmp_path, fake_model,
                                                                                     secure_keyring) -> None:
    """A mail export (mbox) in a watched folder held one stranger's mail dated 31 Dec 9999 23:59:59 -1200. The whole
    file failed "could not be stored (ValueError: year 10000 is out of range); the next scan tries again", every
    scan for good, and none of its other mails reached memory. A date past the calendar is now no date: the file
    is stored, the good mail is found, and the stranger's too (dated as the file is)."""
    from tests.integration.test_cli import cli, setup_agent

    docs = tmp_path / "docs"
    docs.mkdir()
    good = ("From a@example.org Tue Mar  3 10:00:00 2026\nFrom: Priya <a@example.org>\nSubject: Boiler\n"
            "Date: Tue, 03 Mar 2026 10:00:00 +0000\nMessage-ID: <good-1@example.org>\n\n"
            "The boiler code is 7731, says the engineer.\n\n")
    bad = ("From b@example.org Tue Mar  3 11:00:00 2026\nFrom: Spammer <b@spam.example>\nSubject: Offer\n"
           f"Date: {PAST_THE_CALENDAR}\nMessage-ID: <bad-1@spam.example>\n\n"
           "Thank you for being a customer of the orchid club; your membership card is ready.\n\n")
    (docs / "export.mbox").write_text(good + bad)
    setup_agent(home, fake_model.base_url)
    assert cli(home, "folder", "add", str(docs)).returncode == 0
    status = cli(home, "folder", "status", str(docs)).stdout
    assert "out of range" not in status and "could not be stored" not in status, status
    assert "7731" in cli(home, "memory", "search", "boiler code engineer", "--mode", "keyword").stdout, status
    assert "orchid club" in cli(home, "memory", "search", "orchid club membership", "--mode", "keyword").stdout


async def test_an_inbox_mail_dated_past_year_9999_is_kept_with_no_date(pod, servers, fake_model, monkeypatch) -> None:
    """The same stranger's mail in the person's inbox. It reached memory before too (dated when it was kept), but
    its date was a time no calendar holds: an agent reading it (read_mail) was told "Date: 9999-12-31T23:59:59-12:00".
    It is now read as the export's is: kept and found, its date unknown, and the mail says its Date header could not
    be read."""
    from runtime_host.mail import ledger
    from tests.helpers import mailservers
    from tests.integration.test_ask_memory_excerpts import kept_mail

    made = mailservers.make_mail
    monkeypatch.setattr(mailservers, "make_mail", lambda *a, **k: made(*a, **k).replace(
        b"Date: Mon, 03 Jun 2024 09:00:00 +0000", f"Date: {PAST_THE_CALENDAR}".encode()))
    await kept_mail(pod, servers, fake_model, "Offer", "Your orchid club membership card is ready.",
                    "Spammer <b@spam.example>")
    [acct] = ledger.list_accounts(pod.store.engine, pod.person.id)
    [row] = ledger.list_messages(pod.store.engine, acct.id)
    mail = ledger.get_message(pod.store.engine, row["id"]).mail
    assert mail.date is None and "Date header could not be read" in mail.notes, (mail.date, mail.notes)
    assert "Date: unknown" in mail.for_agent() and "9999" not in mail.for_agent()
    hits = await pod.memory_search("orchid club membership", mode="keyword")
    assert any("membership card" in h.snippet for h in hits), [h.snippet for h in hits]
