"""A newcomer at the terminal, with memory: what the README and --help say, as real subprocesses (what cannot be
undone asks for --yes, names instead of ids, advice a terminal can follow, usage errors exit 2)."""
from __future__ import annotations

import json

import pytest

from tests.integration.test_cli import cli, setup_agent


def _seed(home, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dentist.md").write_text("My dentist is Dr Alvarez on Rua Augusta.\n")
    r = cli(home, "folder", "add", str(notes))
    assert r.returncode == 0, r.stderr
    return notes


def test_forget_me_asks_first_like_every_other_cli_deletion(home, tmp_path) -> None:
    """README: "What cannot be undone asks first ... forgetting what an agent learned or everything about you."
    `agent delete` and `conversations delete` refuse without --yes; `memory forget-me` deleted all memory and the
    watched folders at once on a bare try."""
    notes = _seed(home, tmp_path)
    r = cli(home, "memory", "forget-me")
    assert r.returncode == 2 and "--yes" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert "Dr Alvarez" in cli(home, "memory", "search", "dentist").stdout
    assert str(notes) in cli(home, "folder", "list").stdout
    assert "stops watching your folders" in r.stderr
    r = cli(home, "memory", "forget-me", "--yes")
    assert r.returncode == 0 and "stopped watching 1 folder(s)" in r.stdout, (r.stdout, r.stderr)
    assert str(notes) not in cli(home, "folder", "list").stdout


def test_forget_agent_asks_first(home, fake_model, script) -> None:
    from tests.helpers.fake_model import Text, ToolCalls

    setup_agent(home, fake_model.base_url)
    assert cli(home, "agent", "edit", "helper", "--toolkits", "memory").returncode == 0
    script([ToolCalls([("remember", {"fact": "The spare key is under the blue pot.", "scope": "person"})]),
            Text("Done.")])
    assert cli(home, "chat", "helper", "remember where the spare key is").returncode == 0
    assert "blue pot" in cli(home, "memory", "search", "spare key blue pot", "--mode", "keyword").stdout
    r = cli(home, "memory", "forget-agent", "helper")
    assert r.returncode == 2 and "--yes" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert "blue pot" in cli(home, "memory", "search", "spare key blue pot", "--mode", "keyword").stdout


def test_person_add_with_passphrase_stdin_as_its_help_says(home) -> None:
    """`person --help`: "add  add a person (with --passphrase-stdin to protect them with a passphrase)".
    `person add Carol --passphrase-stdin` is refused as an unrecognized argument (it only works before `person`)."""
    assert cli(home, "person", "list").returncode == 0
    r = cli(home, "person", "add", "Carol", "--passphrase-stdin", stdin="correct horse\n")
    assert r.returncode == 0 and "with a passphrase" in r.stdout, (r.returncode, r.stderr[-400:])
    locked = cli(home, "--person", "Carol", "memory", "search", "x")
    assert locked.returncode == 2 and "passphrase" in locked.stderr


def test_memory_produce_names_you_not_your_internal_id(home, tmp_path) -> None:
    """`memory search` shows a scope as "Me"; `memory produce` printed "private/<32 hex digits>" for the same
    memory, twice per folder."""
    _seed(home, tmp_path)
    person = json.loads(cli(home, "person", "list", "--json").stdout)[0]
    r = cli(home, "memory", "produce")
    assert r.returncode == 0, r.stderr
    assert person["id"] not in r.stdout, r.stdout


def test_a_terminal_user_is_told_the_command_that_chooses_a_memory_model(home) -> None:
    """With no model for Ask memory, the CLI's only advice was "choose one for “Ask memory” in Settings → Models":
    there is no Settings in a terminal, and the role's CLI name (ask_memory) appears nowhere."""
    r = cli(home, "memory", "ask", "Who is my dentist?")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "models set ask_memory" in r.stderr, r.stderr


def test_an_empty_question_is_a_usage_error(home) -> None:
    """README: usage errors exit 2 (failures exit 1). `memory ask ""` exited 1."""
    r = cli(home, "memory", "ask", "")
    assert r.returncode == 2 and "question" in r.stderr, (r.returncode, r.stderr)


def test_ctrl_c_while_the_extraction_model_thinks_stops_at_once_and_the_next_run_goes_on(home, fake_model,
                                                                                         script) -> None:
    """Ctrl+C during `memory produce` while the extraction model had not answered: the command waited for the
    model's answer (minutes, with a slow provider) before it exited, silently, as asyncio.run waits for its threads."""
    import time

    from tests.helpers.fake_model import Hang, Text
    from tests.integration.test_folders import interrupted_when

    setup_agent(home, fake_model.base_url)
    script([Text("Noted, the plumber comes on Tuesday.")] + [Hang(90)] * 3)
    assert cli(home, "chat", "helper", "The plumber comes on Tuesday at 9.").returncode == 0
    assert cli(home, "models", "set", "extraction", "fake/fake-1").returncode == 0
    asked = len(fake_model.requests)
    started = time.monotonic()
    rc, err = interrupted_when(home, ["memory", "produce"], lambda _err: len(fake_model.requests) > asked)
    assert time.monotonic() - started < 60, "Ctrl+C waited for the model's answer"
    assert rc == 130 and "Traceback" not in err, err[-3000:]
    assert err.splitlines()[-1].startswith("Stopped: what this run finished is kept; the next run (`memory produce`")
    script([Text('[{"n": 1, "keep": true, "reason": "a plan"}, {"n": 2, "keep": false, "reason": "a reply"}]')],
           repeat_last=True)
    r = cli(home, "memory", "produce")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "plumber comes on Tuesday" in cli(home, "memory", "search", "plumber").stdout


@pytest.mark.parametrize("damage", ["lost", "not utf-8"])
def test_ingest_names_a_lost_or_damaged_note_file_and_writes_everyone_elses_pages(home, fake_model, script,
                                                                                   damage) -> None:
    """A note's file lost (a backup restored in part) or changed so it is no longer UTF-8 text: `memory ingest` ended
    in a FileNotFoundError or UnicodeDecodeError traceback and wrote no page for anyone, the shared ones too. Now it
    says which file and what to do, as `memory verify` does, and writes every other page."""
    import re
    import sqlite3

    import wiki_engine
    from tests.helpers.fake_model import Text

    setup_agent(home, fake_model.base_url)
    assert cli(home, "models", "set", "ingest", "fake/fake-1").returncode == 0
    with sqlite3.connect(home / "pod.db") as db:
        me = f"private/{db.execute('SELECT id FROM person ORDER BY rowid LIMIT 1').fetchone()[0]}"
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem:
        mem.add_source("We fly to Lisbon on 4 May and stay in the Alfama flat.", scope="public")
        lock = mem.add_source("My bike lock code is 3090 and the spare key is under the heron statue.", scope=me)
        path = mem.sources.path_for(wiki_engine.Scope.parse(me), mem.get_source(lock).sha)
    path.chmod(0o644)
    if damage == "lost":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes().replace(b"heron", b"h\xe9ron"))

    def writer(req):
        scope = re.search(r"^- ([a-z]+(?:/\w+)*): ", req.last_user, re.M).group(1)
        return Text(json.dumps([{"title": "Trips", "scope": scope, "category": "travel",
                                 "body": "- We fly to Lisbon on 4 May [1]", "citations": {"1": "S1"}}]))

    script([writer], repeat_last=True)
    r = cli(home, "memory", "ingest")
    assert "Traceback" not in r.stderr, r.stderr[-2500:]
    assert r.returncode == 0, r.stderr[-800:]
    assert json.loads(r.stdout)["written"] == ["page:public/trips"]
    what = "is missing from disk" if damage == "lost" else "was modified on disk after it was stored"
    assert f"A note in Me {what}: {path}" in r.stderr, r.stderr
    assert "Put the file back from a backup, or delete that note in the Wiki" in r.stderr, r.stderr
    with wiki_engine.open_memory(home / "memory", embedder=None) as mem:
        assert mem.inbox() == [lock]  # it waits: put back, it is written at the next ingest


def test_memory_delete_removes_one_source_of_yours_and_asks_first(home, tmp_path) -> None:
    """README (watched folders): "A source you delete from memory (Wiki, `memory delete`) leaves its file's status at
    once". There was no `memory delete`: a terminal could not delete one note. It asks for --yes, refuses another
    person's source without saying whose (Bob cannot delete Alice's), and the file's status says it was deleted."""
    notes = _seed(home, tmp_path)
    [hit] = [h for h in json.loads(cli(home, "memory", "search", "dentist Alvarez").stdout) if h["kind"] != "page"]
    r = cli(home, "memory", "delete", hit["id"])
    assert r.returncode == 2 and "--yes" in r.stderr, (r.returncode, r.stderr)
    assert cli(home, "person", "add", "Bob").returncode == 0
    r = cli(home, "--person", "Bob", "memory", "delete", hit["id"], "--yes")
    assert r.returncode != 0 and "No such source of yours" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert "Dr Alvarez" in cli(home, "memory", "search", "dentist Alvarez").stdout
    r = cli(home, "memory", "delete", hit["id"], "--yes")
    assert r.returncode == 0 and r.stdout.startswith("Source deleted;"), (r.stdout, r.stderr)
    assert "Dr Alvarez" not in cli(home, "memory", "search", "dentist Alvarez").stdout
    status = cli(home, "folder", "status", str(notes)).stdout
    assert "deleted from memory before" in status, status
    r = cli(home, "memory", "delete", hit["id"], "--yes")
    assert r.returncode != 0 and "No such source" in r.stderr and "Traceback" not in r.stderr, r.stderr
