"""Several people on one Hearth: each unlocks with their own passphrase and sees only their own things."""

from __future__ import annotations

import json

import pytest

from runtime_host.pod import StoreError
from tests.integration.test_cli import cli, setup_agent


async def test_switching_person_shows_nothing_of_the_other(pod, script) -> None:
    from tests.helpers.fake_model import Text

    script([Text("secret plans noted")], repeat_last=True)
    r = await pod.chat("helper", "my surprise party plans")
    me = pod.person.id
    pod.add_person("Bob", "bob-passphrase-1")
    with pytest.raises(StoreError, match="protected by a passphrase"):
        pod.unlock("Bob")
    with pytest.raises(StoreError, match="does not unlock"):
        pod.unlock("Bob", "wrong-passphrase")
    bob = pod.unlock("Bob", "bob-passphrase-1")
    assert bob.list_agents() == []
    assert bob.runs() == []
    with pytest.raises(StoreError, match="No agent named 'helper'"):
        await bob.chat("helper", "show me the plans")
    assert f"private/{bob.person.id}" in bob.person_scopes() and all(me not in s for s in bob.person_scopes())
    bob.add_agent("bobs", provider="embedded")
    assert [a["name"] for a in bob.list_agents()] == ["bobs"]
    assert [a["name"] for a in pod.list_agents()] == ["helper"]
    assert pod.store.list_messages(r.conversation_id)[0].content == "my surprise party plans"


def test_cli_people_and_passphrases(home, fake_model) -> None:
    setup_agent(home, fake_model.base_url)
    r = cli(home, "--passphrase-stdin", "person", "add", "Bob", stdin="correct horse battery\n")
    assert r.returncode == 0, r.stderr
    locked = cli(home, "--person", "Bob", "agent", "list", "--json")
    assert locked.returncode == 2 and "protected by a passphrase" in locked.stderr
    wrong = cli(home, "--person", "Bob", "--passphrase-stdin", "agent", "list", "--json", stdin="nope\n")
    assert wrong.returncode == 2 and "does not unlock" in wrong.stderr
    ok = cli(home, "--person", "Bob", "--passphrase-stdin", "agent", "list", "--json", stdin="correct horse battery\n")
    assert ok.returncode == 0 and json.loads(ok.stdout) == []
    people = json.loads(cli(home, "person", "list", "--json").stdout)
    assert [(p["name"], p["has_passphrase"]) for p in people] == [("Me", False), ("Bob", True)]
    db = (home / "pod.db").read_bytes()
    assert b"correct horse battery" not in db
