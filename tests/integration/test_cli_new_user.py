"""What a new user meets trying the README's memory promises from the terminal (python -m runtime_host): words, not
Python reprs; no person taken for another; sizes that show by how much a file is over the limit."""

from __future__ import annotations

import json
import re

from tests.integration.test_cli import cli, setup_agent

PY_REPR = re.compile(r"\bNone\b|Tampered\(|PosixPath\(")


def test_models_lists_each_role_without_a_python_none(home, fake_model) -> None:
    """README: Settings → Models (or `models set ROLE MODEL`, `models --json`) shows only those roles. The text form
    printed `role extraction  embedded/None` and `role chat  each agent's own model (set per agent)/None`."""
    setup_agent(home, fake_model.base_url)
    r = cli(home, "models")
    assert r.returncode == 0, r.stderr
    roles = [line for line in r.stdout.splitlines() if line.startswith("role ")]
    assert roles, r.stdout
    bad = [line for line in roles if PY_REPR.search(line)]
    assert not bad, f"a Python None reaches the user: {bad}"


def test_memory_verify_reports_a_tampered_source_in_words(home, fake_model, tmp_path) -> None:
    """`memory verify` (README: one of the memory commands) printed a dataclass repr for each tampered source:
    `tampered: Tampered(scope='private/<id>', sha='…', path=PosixPath('…'), problem='modified')`."""
    setup_agent(home, fake_model.base_url)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dentist.txt").write_text("My dentist is Dr Moreau on Rue Cler.\n")
    assert cli(home, "folder", "add", str(notes)).returncode == 0
    hit = json.loads(cli(home, "memory", "search", "dentist", "--mode", "keyword").stdout)[0]
    (src,) = [p for p in (home / "memory").rglob(f"{hit['id']}.md")]
    src.write_text(src.read_text().replace("Moreau", "Evilson"))
    r = cli(home, "memory", "verify")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert not PY_REPR.search(r.stderr), f"a Python repr reaches the user: {r.stderr!r}"
    assert "modified" in r.stderr


def test_an_empty_person_name_is_refused_not_taken_as_the_first_person(home, fake_model, tmp_path) -> None:
    """README: every command acts for one named person (`--person NAME`). `--person ""` (a script's `--person "$WHO"`
    with WHO unset) silently acted as the first person: Bob's script forgot the first person's memory."""
    setup_agent(home, fake_model.base_url)
    assert cli(home, "person", "add", "Bob").returncode == 0
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dentist.txt").write_text("My dentist is Dr Moreau on Rue Cler.\n")
    assert cli(home, "folder", "add", str(notes)).returncode == 0  # the first person's folder
    r = cli(home, "--person", "", "memory", "forget-me", "--yes")
    assert r.returncode == 2 and "person" in r.stderr.lower(), (r.returncode, r.stdout, r.stderr)
    still = json.loads(cli(home, "memory", "search", "dentist", "--mode", "keyword").stdout)
    assert still, "the first person's memory was forgotten by a command naming no person"


def test_a_too_large_file_says_by_how_much_it_is_over_the_limit(home, fake_model, tmp_path, monkeypatch) -> None:
    """README: every file gets a status, *skipped* with the reason (too large (25 MB by default,
    HEARTH_IMPORT_MAX_MB) ...). A 1.2 MB file over a 1 MB limit read "too large (1 MB; the limit is 1 MB, ...)", and a
    limit of 0.5 MB read "the limit is 0 MB": the reason contradicts itself, so the user cannot tell what to set."""
    setup_agent(home, fake_model.base_url)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "big.txt").write_text("The plumber is Jonas Vidal. " * 45000)  # about 1.2 MB
    for limit in ("1", "0.5"):
        monkeypatch.setenv("HEARTH_IMPORT_MAX_MB", limit)
        r = cli(home, "folder", "rescan") if limit != "1" else cli(home, "folder", "add", str(notes))
        assert r.returncode == 0, r.stderr
        (row,) = json.loads(cli(home, "folder", "status", str(notes), "--json").stdout)
        assert row["status"] == "skipped", row
        size, lim = re.search(r"too large \(([\d.]+) MB; the limit is ([\d.]+) MB", row["reason"]).groups()
        assert float(size) > float(lim) > 0, f"limit {limit}: {row['reason']!r}"
