"""`memory pages`, `nightly` and `ingest` with odd entries in memory's wiki folder, as a person runs them."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess

from tests.helpers.fake_model import Text
from tests.integration.test_cli import cli, setup_agent
from tests.integration.test_storage import read_only


def _me(home) -> str:
    db = sqlite3.connect(home / "pod.db")
    try:
        return db.execute("SELECT id FROM person ORDER BY rowid LIMIT 1").fetchone()[0]
    finally:
        db.close()


def _seed(home, base_url: str, pages: bool = True) -> tuple[str, str, str]:
    """Me with an agent; a shared note and one of mine; with ``pages``, a shared page and one of mine."""
    import wiki_engine
    from wiki_engine import Page

    setup_agent(home, base_url)
    priv = f"private/{_me(home)}"
    with wiki_engine.open_memory(home / "memory") as mem:
        pub = mem.add_source("We fly to Lisbon on 4 May and stay in the Alfama flat.", scope="public")
        own = mem.add_source("My bike lock code is 3090 and the spare key is under the heron statue.", scope=priv)
        if pages:
            mem.write_page(Page("Trips", "public", "travel", "- We fly to Lisbon on 4 May [1]", {1: pub}),
                           author="person:me")
            mem.write_page(Page("Bike", priv, "things", "- The bike lock code is 3090 [1]", {1: own}),
                           author="person:me")
    return priv, pub, own


def test_a_folder_and_a_named_pipe_among_the_pages_are_named_and_pages_and_nightly_go_on(home, fake_model) -> None:
    """A folder `notes.md` (a sync tool's) ended `memory pages` and `memory nightly` in an IsADirectoryError
    traceback, for everyone since it was among the shared pages; a named pipe `pipe.md` left both waiting for good.
    Now the pages are listed with each odd entry named, and nightly runs through."""
    _seed(home, fake_model.base_url)
    folder = home / "memory" / "wiki" / "public"
    (folder / "notes.md").mkdir()
    os.mkfifo(folder / "pipe.md")
    try:
        for job in ("pages", "nightly"):
            try:
                r = cli(home, "memory", job, timeout=60)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"`memory {job}` hung on a named pipe among the pages") from None
            assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-1500:]
            if job == "pages":
                assert "Trips" in r.stdout and "Bike" in r.stdout, r.stdout
                assert f"{folder / 'notes.md'}: a folder, not a page file. Move it out of {folder}" in r.stdout
                assert f"{folder / 'pipe.md'}: a named pipe, not a page file" in r.stdout
            else:
                corrupt = json.loads(r.stdout)["corrupt"]
                assert sorted(c.partition(":")[0] for c in corrupt) == [str(folder / "notes.md"),
                                                                         str(folder / "pipe.md")]
    finally:
        with_writer = os.open(folder / "pipe.md", os.O_RDWR | os.O_NONBLOCK)  # never leave a reader stuck
        os.close(with_writer)


def _writer(req):
    """A wiki writer: one page for whatever scope it is given, citing S1."""
    scope = re.search(r"^- ([a-z]+(?:/\w+)*): ", req.last_user, re.M).group(1)
    return Text(json.dumps([{"title": "Trips" if scope == "public" else "Bike", "scope": scope, "category": "notes",
                             "body": "- What was said [1]", "citations": {"1": "S1"}}]))


def test_a_read_only_shared_wiki_folder_is_said_and_its_notes_wait(home, fake_model, script) -> None:
    """The shared pages' folder was made read-only (a sync tool, a restore): `memory ingest` printed a
    PermissionError traceback on `trips.tmpNNN`. Now it names the folder and what to do, my own page is written and
    the shared note waits in the inbox for the next ingest."""
    import wiki_engine

    priv, pub, _own = _seed(home, fake_model.base_url, pages=False)
    assert cli(home, "models", "set", "ingest", "fake/fake-1").returncode == 0
    folder = home / "memory" / "wiki" / "public"
    folder.mkdir(parents=True)
    script([_writer], repeat_last=True)
    with read_only(folder):
        r = cli(home, "memory", "ingest")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2500:]
    out = json.loads(r.stdout)
    assert [x["title"] for x in out["rejected"]] == ["Trips"], out
    why = out["rejected"][0]["why"]
    assert str(folder) in why and "read-only" in why and "Make the folder writable again" in why, why
    assert out["written"] == [f"page:{priv}/bike"] and out["left_in_inbox"] == 1, out
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem:
        assert mem.read_page(priv, "Bike") is not None and mem.inbox() == [pub]
    r = cli(home, "memory", "ingest")
    assert r.returncode == 0 and "page:public/trips" in json.loads(r.stdout)["written"], r.stderr[-1500:]
