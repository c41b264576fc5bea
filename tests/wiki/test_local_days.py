"""Days in words are the person's own: memory indexes a source's day on this machine's calendar (Hearth is a desktop
app: its time zone is the household's), not UTC's. A person in Auckland asking about their Sunday found what they
said on their Monday morning (its UTC day was Sunday)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from wiki_engine import open_memory
from wiki_engine.index import date_words

NZ = ZoneInfo("Pacific/Auckland")
SUNDAY = datetime(2026, 12, 6, 8, 30, tzinfo=NZ).timestamp()  # Sunday morning on the person's clock (UTC: Saturday)
MONDAY = datetime(2026, 12, 7, 8, 30, tzinfo=NZ).timestamp()  # Monday morning (UTC: Sunday 6 December, 19:30)
QUESTION = "What happened with the zorblat parcel on Sunday 6 December?"


def _said_sunday_and_monday(path: Path) -> tuple:
    mem = open_memory(path)
    sunday = mem.add_source("The zorblat parcel arrived at the depot.", scope="private/alice", ts=SUNDAY)
    mem.add_source("I picked up the zorblat parcel from the depot.", scope="private/alice", ts=MONDAY)
    return mem, sunday


def test_a_day_in_words_is_the_day_on_this_machines_calendar(in_zone) -> None:
    in_zone("Pacific/Auckland")
    assert date_words(MONDAY) == "Monday 7 December 2026"
    assert date_words(0) == ""  # no time known: no day
    in_zone("UTC")
    assert date_words(MONDAY) == "Sunday 6 December 2026"


def test_a_question_naming_the_persons_own_day_finds_what_they_said_that_day(in_zone, tmp_path: Path) -> None:
    in_zone("Pacific/Auckland")
    mem, sunday = _said_sunday_and_monday(tmp_path / "m")
    for mode in ("hybrid", "keyword"):
        hits = mem.search(QUESTION, scopes=["private/alice"], k=2, mode=mode)
        assert hits[0].id == sunday, f"{mode}: the top hit is what they said on their Monday: {hits[0].snippet!r}"
    mem.close()


def test_an_index_built_on_another_calendar_reads_its_days_again_once(in_zone, tmp_path: Path) -> None:
    """An index built before days were local (on UTC's calendar), or before the machine moved to another zone, is
    read again on opening, once: its days are then the machine's."""
    in_zone("UTC")
    mem, sunday = _said_sunday_and_monday(tmp_path / "m")
    hits = mem.search(QUESTION, scopes=["private/alice"], k=2, mode="keyword")
    assert hits[0].id != sunday  # on UTC's calendar their Monday morning was Sunday
    mem.close()
    in_zone("Pacific/Auckland")
    mem = open_memory(tmp_path / "m")
    hits = mem.search(QUESTION, scopes=["private/alice"], k=2, mode="keyword")
    assert hits[0].id == sunday, f"the index kept UTC's days: the top hit is {hits[0].snippet!r}"
    index = mem.index("private/alice")
    assert index.meta.execute("SELECT value FROM info WHERE key='days'").fetchone()[0] != "utc"
    assert not index._days_changed()  # read again once: opened again in the same zone, nothing is rebuilt
    mem.close()
