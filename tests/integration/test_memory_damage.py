"""Memory's files damaged or lost: an index is derived data, made again from the catalog and the sources, so a
damaged or deleted index, or one lost source file, costs no search. Found by review; each failed before."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import wiki_engine
from tests.integration.test_cli import cli
from wiki_engine import Page
from wiki_engine.catalog import CatalogDamaged


def _damaged_setup(home: Path):
    assert cli(home, "memory", "search", "peanuts").returncode == 0
    from runtime_host.pod import Pod

    scope = Pod(home).first_person().person_scopes()[1]
    with wiki_engine.open_memory(home / "memory") as mem:
        bob = mem.add_source("Bob is allergic to peanuts.", scope=scope)
        mem.add_source("Clara's birthday is on 3 June.", scope=scope)
        mem.write_page(Page("Bob", scope, "people", "- Bob is allergic to peanuts [1]", {1: bob}), author="agent:w")
        bob_file = mem.sources.path_for(wiki_engine.scopes.Scope.parse(scope), mem.catalog.query(
            "SELECT sha FROM sources WHERE id=?", (bob,))[0][0])
    return scope, bob_file


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_search_over_a_corrupt_meta_db_finds_what_the_sources_hold(home, how) -> None:
    """An index is derived data: a damaged meta.db made every search a traceback until a nightly rebuilt it."""
    scope, _ = _damaged_setup(home)
    meta = home / "memory" / "index" / scope / "meta.db"
    data = meta.read_bytes()
    meta.write_bytes(b"garbage" * 3000 if how == "garbage" else data[: len(data) // 2])
    for f in meta.parent.glob("meta.db-*"):
        f.unlink()
    r = cli(home, "memory", "search", "birthday")
    assert "Traceback" not in r.stderr, r.stderr[-400:]
    assert r.returncode == 0 and "Clara" in r.stdout, (r.stdout, r.stderr[-400:])


def test_search_after_the_index_folder_was_deleted_still_finds_the_sources(home) -> None:
    """With the index folder gone, search found nothing and said nothing, though the catalog and sources were whole."""
    scope, _ = _damaged_setup(home)
    shutil.rmtree(home / "memory" / "index")  # derived data: "rebuilt from the sources"
    r = cli(home, "memory", "search", "birthday")
    assert r.returncode == 0 and "Clara" in r.stdout, (r.stdout, r.stderr[-400:])
    with wiki_engine.open_memory(home / "memory") as mem:  # and the pages are found again too
        assert [h.title for h in mem.search("peanuts", scopes=[scope], kinds=("page",))] == ["Bob"]


def test_one_missing_source_file_does_not_take_the_whole_scope_down(home) -> None:
    """One lost source file failed the rebuild of its whole scope: every search of it was a traceback after."""
    _, bob_file = _damaged_setup(home)
    bob_file.unlink()  # one file lost (a killed delete, a disk error); `memory verify` names it
    shutil.rmtree(home / "memory" / "index")  # and the index has to be made again
    r = cli(home, "memory", "nightly")
    assert "Traceback" not in r.stderr, r.stderr[-600:]
    r = cli(home, "memory", "search", "birthday")
    assert "Traceback" not in r.stderr, r.stderr[-600:]
    assert r.returncode == 0 and "Clara" in r.stdout, (r.stdout, r.stderr[-400:])


def _damage_catalog(home: Path, how: str) -> None:
    db = home / "memory" / "memory.db"
    assert db.exists()
    if how == "garbage":
        db.write_bytes(b"this is not a database, a disk error wrote here " * 200)
    elif how == "empty":
        db.write_bytes(b"")  # cut to nothing (the machine lost power before its data reached the disk)
    else:
        data = db.read_bytes()
        db.write_bytes(data[:100])  # truncated in its header
    for f in (home / "memory").glob("memory.db-*"):
        f.unlink()


@pytest.mark.parametrize("how", ["garbage", "truncated"])
@pytest.mark.parametrize("action", [["search", "peanuts"], ["pages"], ["verify"]])
def test_cli_memory_on_a_damaged_catalog_says_what_happened_without_a_traceback(home, how, action) -> None:
    """A damaged memory.db made every memory command a sqlite traceback."""
    assert cli(home, "memory", "search", "peanuts").returncode == 0  # memory exists and works
    _damage_catalog(home, how)
    r = cli(home, "memory", *action)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr[-600:]
    assert "memory.db" in r.stderr and "damaged" in r.stderr and "backup" in r.stderr, r.stderr


def test_a_catalog_cut_to_nothing_is_said_and_nothing_is_forgotten(home) -> None:
    """memory.db cut to zero bytes (a crash before its data reached the disk, a sync tool's empty copy) opened as a
    new, empty memory: every note was gone from search, the index dropped them to match, and `memory verify` said
    all was well. Now it is said like any other damage, nothing is written, and the backup brings everything back."""
    scope, bob_file = _damaged_setup(home)
    with wiki_engine.open_memory(home / "memory") as mem:
        mem.add_source("The recycling goes out on Tuesdays.", scope="public")  # the household's, not only mine
    db = home / "memory" / "memory.db"
    backup = db.read_bytes()
    _damage_catalog(home, "empty")
    for action in (["search", "birthday"], ["search", "recycling"], ["pages"], ["verify"], ["ingest"]):
        r = cli(home, "memory", *action)
        assert r.returncode != 0 and "Traceback" not in r.stderr, (action, r.stdout, r.stderr[-600:])
        said = r.stderr
        assert "memory.db" in said and "empty" in said and "backup" in said and "3 notes" in said, said
    assert db.stat().st_size == 0  # nothing written over it: the person restores it
    assert bob_file.exists()
    with pytest.raises(CatalogDamaged, match="memory.db"):  # and so is a program opening it
        wiki_engine.open_memory(home / "memory", embedder=None)
    db.write_bytes(backup)  # restored from the backup: every note and page as before
    for q, found in (("birthday", "Clara"), ("recycling", "Tuesdays")):
        r = cli(home, "memory", "search", q)
        assert r.returncode == 0 and found in r.stdout, (r.stdout, r.stderr[-400:])
    with wiki_engine.open_memory(home / "memory") as mem:
        assert [h.title for h in mem.search("peanuts", scopes=[scope], kinds=("page",))] == ["Bob"]


def test_a_new_memory_and_one_that_never_stored_anything_still_open(tmp_path) -> None:
    """A catalog with nothing in it (or none) is only damage when memory's folder holds what it should have listed."""
    root = tmp_path / "memory"
    with wiki_engine.open_memory(root, embedder=None) as mem:  # brand new
        assert mem.search("anything", scopes=["public"], mode="keyword") == []
    (root / "memory.db").write_bytes(b"")  # empty folders and an empty index beside it: nothing to lose
    for f in root.glob("memory.db-*"):
        f.unlink()
    with wiki_engine.open_memory(root, embedder=None) as mem:
        sid = mem.add_source("Clara's birthday is on 3 June.", scope="public")
        assert [h.id for h in mem.search("birthday", scopes=["public"], mode="keyword")] == [sid]
    (root / "memory.db").unlink()  # now it holds a note: a catalog deleted is said, and no new one is made
    with pytest.raises(CatalogDamaged, match="missing while memory's folder holds 1 note"):
        wiki_engine.open_memory(root, embedder=None)
    assert not (root / "memory.db").exists()


def test_an_index_locked_by_another_process_is_never_taken_for_damaged(tmp_path, monkeypatch) -> None:
    """A damaged meta.db is made again; one another process holds locked (or a full disk) is not damaged: it must
    not be deleted and rebuilt (sqlite's 'database is locked' is a DatabaseError too)."""
    import sqlite3

    from wiki_engine import index as index_module

    root = tmp_path / "memory"
    with wiki_engine.open_memory(root, embedder=None) as mem:
        mem.add_source("Clara's birthday is on 3 June.", scope="public")
    meta = root / "index" / "public" / "meta.db"
    before = meta.stat().st_ino
    real = index_module.ScopeIndex.__init__

    def locked(self, folder, embedder):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(index_module.ScopeIndex, "__init__", locked)
    with wiki_engine.open_memory(root, embedder=None) as mem, pytest.raises(sqlite3.OperationalError):
        mem.search("birthday", scopes=["public"], mode="keyword")
    monkeypatch.setattr(index_module.ScopeIndex, "__init__", real)
    assert meta.stat().st_ino == before  # the same index file, not deleted and made again


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_deleted_or_emptied_keyword_index_folder_is_made_again(home, how) -> None:
    """The README promises an index "is made again ... when it is damaged or deleted"; with only its keyword
    folder (tantivy/) deleted or emptied by hand or a sync tool, keyword search found nothing and said nothing until
    a nightly pass, though meta.db held every document."""
    scope, _ = _damaged_setup(home)
    words = home / "memory" / "index" / scope / "tantivy"
    if how == "deleted":
        shutil.rmtree(words)
    else:
        for f in words.iterdir():
            f.unlink()
    for _ in range(2):  # found, and found again on the next run (the index made again is kept)
        r = cli(home, "memory", "search", "birthday", "--mode", "keyword")
        assert r.returncode == 0 and "Clara" in r.stdout, (r.stdout, r.stderr[-400:])
    with wiki_engine.open_memory(home / "memory") as mem:  # the page too
        assert [h.title for h in mem.search("peanuts", scopes=[scope], kinds=("page",), mode="keyword")] == ["Bob"]


def test_a_zero_byte_index_meta_db_keeps_the_scopes_pages_searchable(home) -> None:
    """meta.db cut to zero bytes (the machine lost power before its data reached the disk): the notes came back
    from the catalog, but the scope's pages were found no more until a nightly pass."""
    scope, _ = _damaged_setup(home)
    meta = home / "memory" / "index" / scope / "meta.db"
    meta.write_bytes(b"")
    for f in meta.parent.glob("meta.db-*"):
        f.unlink()
    r = cli(home, "memory", "search", "birthday", "--mode", "keyword")
    assert r.returncode == 0 and "Clara" in r.stdout, (r.stdout, r.stderr[-400:])
    with wiki_engine.open_memory(home / "memory") as mem:
        assert [h.title for h in mem.search("peanuts", scopes=[scope], kinds=("page",), mode="keyword")] == ["Bob"]
