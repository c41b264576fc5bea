"""When each thing in memory was said, as its models read it: Ask memory's excerpts and an agent's search_memory
hits each carry their day (on this machine's calendar), and today's date comes with them. Both dentists came with
no date and no today: the model could not tell which was the current one, nor answer "when did I…"."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from zoneinfo import ZoneInfo

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
