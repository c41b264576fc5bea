"""A remembered fact's identity (``wiki_engine.memory.fact_words``): "the same fact is stored once" held only for
spacing and case, so the same fact written with a typographic apostrophe, a full stop, a zero-width space or its
accents decomposed got a new key: stored again, and one the person deleted came back with the other apostrophe.
Facts an earlier Hearth stored or the person deleted keep the key they had, and the same text remembered again
still finds them. Real SQLite catalog and files. Each failed on the code before it."""

from __future__ import annotations

import hashlib

import pytest

from wiki_engine import Item, Memory
from wiki_engine.memory import fact_words, remembered_key, remembered_keys

BASE = "Bob's dentist appointment is on Tuesday 14 March at 10:00"
VARIANTS = [
    "Bob\u2019s dentist appointment is on Tuesday 14 March at 10:00",  # typographic apostrophe
    "Bob\u02bcs dentist appointment is on Tuesday 14 March at 10:00",  # the modifier letter apostrophe
    BASE + ".",  # full stop
    BASE + "\u2026",  # an ellipsis
    "  bob's DENTIST appointment is on Tuesday 14 March at 10:00!  ",
    "Bob's dentist appointment is on Tuesday\u00a014\u202fMarch at 10:00",  # non-breaking and narrow spaces
    "Bob's dentist\u200b appointment is on Tuesday 14 March at 10:00",  # zero-width space
    "Bob's den\u00adtist appointment is on Tuesday 14 March at 10:00",  # soft hyphen
    "Bob's dentist appointment is on Tuesday 14 March at \uff11\uff10:\uff10\uff10",  # full-width digits
]
OTHER_FACTS = [
    "Bob's dentist appointment is on Tuesday 14 March at 11:00",
    "Bob's dentist appointment is on Tuesday 4 March at 10:00",
    "Bobs dentist appointment is on Tuesday 14 March at 10:00",
    "Bob's dentist appointment is on Tuesday 14 March at 10:00 and 11:00",
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_same_fact_written_another_way_has_the_same_key(variant: str) -> None:
    assert remembered_key("private/alice", variant) == remembered_key("private/alice", BASE), repr(variant)


@pytest.mark.parametrize("other", OTHER_FACTS)
def test_another_fact_has_another_key(other: str) -> None:
    assert remembered_key("private/alice", other) != remembered_key("private/alice", BASE), repr(other)
    assert remembered_key("private/bob", BASE) != remembered_key("private/alice", BASE)


def test_accents_composed_or_not_quotes_and_dashes() -> None:
    assert fact_words("Zoë's café is on Rue Émile") == fact_words("Zoe\u0308's cafe\u0301 is on Rue E\u0301mile")
    assert fact_words("The \u201cblue\u201d key opens the shed \u2013 not the \u00abgreen\u00bb one") == \
        fact_words('The "blue" key opens the shed - not the "green" one')
    assert fact_words("Straße") == fact_words("STRASSE")
    assert fact_words("The PIN is 3.") != fact_words("The PIN is 3.5")


def _key_before(scope: str, text: str) -> str:
    """The key Hearth gave a remembered fact before: its words split on spacing and casefolded."""
    said = f"{scope}\n{' '.join(text.split()).casefold()}".encode()
    return "remember:" + hashlib.sha256(said).hexdigest()[:32]


def test_facts_kept_under_the_earlier_key_are_found(mem: Memory) -> None:
    """A fact an earlier Hearth stored (under its earlier key) is already remembered when the same text comes again,
    and one the person deleted then stays deleted; a variant of either is a new fact (the earlier key holds no more
    than the text spacing and case aside)."""
    scope, text = "private/alice", "Bob\u2019s dentist appointment is on Tuesday 14 March at 10:00."
    assert remembered_keys(scope, text) == (remembered_key(scope, text), _key_before(scope, text))
    old = mem.add_items([Item(text=text, scope=scope, ts=1.0, kind="remember", key=_key_before(scope, text),
                              owner="alice", agent="helper")])[0]
    assert mem.remembered("  bob\u2019s DENTIST appointment is on Tuesday 14 March at 10:00. ", scope) == old
    assert mem.remembered(BASE, scope) is None  # an earlier Hearth's key knew no apostrophes

    gone = "The spare key is under the blue pot."
    sid = mem.add_items([Item(text=gone, scope=scope, ts=2.0, kind="remember", key=_key_before(scope, gone),
                              owner="alice", agent="helper")])[0]
    mem.delete_source(sid)
    assert mem.remember(gone, person="alice", agent="helper", scope=scope) == ""
    assert mem.remember("the spare key is under the  blue pot.", person="alice", agent="helper", scope=scope) == ""
    assert mem.count_sources(scope) == 1


def test_a_deleted_fact_stays_deleted_written_another_way(mem: Memory) -> None:
    scope = "private/alice"
    sid = mem.remember(BASE, person="alice", agent="helper", scope=scope)
    for variant in VARIANTS:
        assert mem.remembered(variant, scope) == sid, repr(variant)
    mem.delete_source(sid)
    for variant in VARIANTS:
        assert mem.remember(variant, person="alice", agent="helper", scope=scope) == "", repr(variant)
    assert mem.count_sources(scope) == 0
