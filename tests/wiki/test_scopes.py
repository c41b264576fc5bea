"""Scopes: physically separate folders and indexes; search and typeahead never leak another person's items."""

from __future__ import annotations

from pathlib import Path

from wiki_engine import Memory, Viewer, open_memory


def _seed(mem: Memory) -> dict[str, str]:
    return {
        "pub": mem.add_source("Dentist Dr Patel's clinic phone is 0161 555 0100.", scope="public"),
        "alice": mem.add_source("Alice's dentist appointment is on 3 March at Brightsmile.", scope="private/alice"),
        "bob": mem.add_source("Bob's dentist appointment is on 9 March at Castle Dental; secret anniversary trip.", scope="private/bob"),
        "bob_agent": mem.add_source("Bob dentist anxiety: book morning slots only.", scope="agent/bob/coach"),
        "alice_agent": mem.add_source("Alice prefers dentist reminders a day ahead.", scope="agent/alice/helper"),
    }


def test_each_scope_has_its_own_folders_and_index(mem: Memory) -> None:
    _seed(mem)
    for scope in ("public", "private/alice", "private/bob", "agent/bob/coach"):
        assert any((mem.root / "sources" / scope).rglob("*.md")), scope
        assert (mem.root / "index" / scope / "tantivy").is_dir(), scope
        assert (mem.root / "index" / scope / "meta.db").is_file(), scope
    # Bob's index holds only Bob's private sources.
    assert mem.index("private/bob").count() == 1
    assert mem.index("private/alice").count() == 1


def test_search_across_scopes_never_leaks_a_private_item(mem: Memory) -> None:
    ids = _seed(mem)
    alice = Viewer("alice", "helper")
    for mode in ("hybrid", "keyword", "meaning"):
        hits = mem.search("Bob dentist appointment anniversary Castle Dental", scopes=alice, k=10, mode=mode)
        got = {h.id for h in hits}
        assert ids["bob"] not in got and ids["bob_agent"] not in got, mode
        assert {h.scope for h in hits} <= set(alice.scope_names()), mode
        assert ids["alice"] in got or ids["pub"] in got, mode
    bob_hits = mem.search("secret anniversary trip", scopes=["private/bob"], mode="keyword")
    assert [h.id for h in bob_hits] == [ids["bob"]]
    # Without the agent, Alice does not see her agent's own notes either.
    assert ids["alice_agent"] not in {h.id for h in mem.search("dentist reminders", scopes=Viewer("alice"), k=10)}


def test_typeahead_stays_in_scope(mem: Memory) -> None:
    _seed(mem)
    titles = [h.title for h in mem.typeahead("Bob's den", scopes=Viewer("alice"))]
    assert titles == []
    assert any("Castle" in h.title for h in mem.typeahead("bob's dent", scopes=["private/bob"]))


def test_search_of_a_scope_with_nothing_creates_nothing(tmp_path: Path) -> None:
    m = open_memory(tmp_path / "m")
    try:
        assert m.search("anything", scopes=["private/nobody"]) == []
        assert not (tmp_path / "m" / "index" / "private" / "nobody").exists()
    finally:
        m.close()


def test_remember_writes_only_into_scopes_the_agent_may_see(mem: Memory) -> None:
    import pytest

    sid = mem.remember("Alice wants the briefing short.", person="alice", agent="helper", scope="agent/alice/helper")
    assert sid in mem.inbox()
    with pytest.raises(PermissionError, match="cannot remember into private/bob"):
        mem.remember("Bob's secret.", person="alice", agent="helper", scope="private/bob")
    with pytest.raises(PermissionError):
        mem.remember("note", person="alice", agent="helper", scope="agent/alice/other")
    # Forgetting the agent removes what it remembered into Alice's private tree as well.
    other = mem.remember("Alice's usual shop is the Co-op.", person="alice", agent="helper", scope="private/alice")
    mem.forget_agent("alice", "helper")
    assert mem.search("usual shop Co-op briefing", scopes=Viewer("alice", "helper"), mode="keyword") == []
    assert other not in mem.inbox()
