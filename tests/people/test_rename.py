"""The first person was "Me" for good: Hearth never asked their name and nothing renamed a person, so Bob read
"chosen by Me for everyone" in Settings → Models (as if he had chosen it), was told to run `--person Me …`, and the
memory models were told "chat, said by Me" and "Me's private memory", writing pages about someone called Me.
Now a person renames themselves (never another: it is their own action, no agent tool reaches it), under the
rules a new person's name follows; until the first person gives a name, others and the models are told of
"the person who set Hearth up"."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from runtime_host.store import UNNAMED, UNNAMED_AS, StoreError
from tests.helpers.fake_model import FakeModelServer, Text
from tests.integration.test_cli import cli
from tests.people.conftest import BOB_PASS


async def test_bob_is_not_told_that_me_chose_the_shared_model(two: Any) -> None:
    me, bob = two
    assert me.person.name == UNNAMED
    assert bob.models()["roles"]["embedding"]["shared_by"] == UNNAMED_AS
    with pytest.raises(StoreError) as refused:
        bob.set_role_model("embedding", "local/minilm")
    said = str(refused.value)
    assert f"chosen by {UNNAMED_AS} (Settings → Models as Me; in a terminal: `--person 'Me' models set" in said, said

    assert me.rename("  Alice ") == "Alice" and me.person.name == "Alice"
    assert bob.models()["roles"]["embedding"]["shared_by"] == "Alice"  # read afresh: Bob's handle is older
    with pytest.raises(StoreError, match=r"chosen by Alice, who set Hearth up \(Settings → Models as Alice; in a "
                                         r"terminal: `--person 'Alice' models"):
        bob.set_role_model("embedding", "local/minilm")
    assert [p["name"] for p in bob.people()] == ["Alice", "Bob"]
    assert me.pod.unlock("Alice").person_id == me.person_id
    assert [a["summary"] for a in me.audit_log(kind="access") if a["action"] == "renamed"] == ["Me is now called Alice"]


async def test_a_name_follows_the_rules_of_adding_a_person(two: Any) -> None:
    me, bob = two
    refusals = {
        "bob": "already a person named 'Bob'",  # another's name, in any case
        "BOB ": "already a person named 'Bob'",
        "   ": "needs a name",
        "A" * 61: "at most 60",
        "Ali\u202ece": "direction",  # a direction override turns around what follows it
        "Ali\nce": "line break",
        "Ali\u200bce": "invisible",  # looks like "Alice"
        "me": "has not given a name",
    }
    for name, why in refusals.items():
        with pytest.raises(StoreError, match=why):
            me.rename(name)
        with pytest.raises(StoreError, match=why):
            me.pod.add_person(name)
    assert [p["name"] for p in me.people()] == [UNNAMED, "Bob"]
    assert bob.rename("bob") == "bob"  # their own name in another case is theirs to take
    assert me.rename("Alice") and me.pod.store.get_person("Alice").id == me.person_id
    with pytest.raises(StoreError, match="already a person named 'Alice'"):
        bob.rename("ALICE")
    with pytest.raises(StoreError, match="already a person named 'Alice'"):
        me.pod.add_person("alice")


async def test_the_wiki_writer_is_told_the_name_the_person_gave(two: Any, fake_model: FakeModelServer) -> None:
    me, _bob = two
    scope = f"private/{me.person.id}"
    me.set_role_model("ingest", "fake/fake-1")
    prompts: list[str] = []

    def model(req: Any) -> Text:
        if "maintain a personal wiki" in json.dumps(req.body):
            prompts.append(req.last_user)
            label = re.findall(r"\b(S\d+)\b", req.last_user)[0]
            return Text(json.dumps([{"title": "Clara", "scope": scope, "category": "family",
                                     "body": "- Clara's birthday is on 3 June [1]", "citations": {"1": label}}]))
        return Text("Noted.")

    fake_model.script = model
    assert (await me.chat("helper", "My sister Clara's birthday is on 3 June.", new_conversation=True)).ok
    await me.memory_produce()
    await me.memory_ingest()
    assert prompts and f"said by {UNNAMED_AS}" in prompts[0] and f"{UNNAMED_AS}'s private memory" in prompts[0]
    assert "said by Me" not in prompts[0] and "Me's private memory" not in prompts[0], prompts[0]

    me.rename("Alice")
    assert (await me.chat("helper", "My brother Dan lives in Porto.", new_conversation=True)).ok
    await me.memory_produce()
    await me.memory_ingest()
    assert len(prompts) == 2 and "chat, said by Alice" in prompts[1] and "Alice's private memory" in prompts[1], prompts[1]


def test_a_person_renames_themselves_in_the_cli_and_never_another(home, fake_model, secure_keyring) -> None:
    assert cli(home, "--passphrase-stdin", "person", "add", "Bob", stdin=BOB_PASS + "\n").returncode == 0
    r = cli(home, "person", "rename", "Alice")  # the first person, as the CLI acts by default
    assert r.returncode == 0 and r.stdout.strip() == "Me is now called Alice.", (r.stdout, r.stderr)
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "person", "rename", "alice", stdin=BOB_PASS + "\n")
    assert r.returncode == 2 and "There is already a person named 'Alice' on this Hearth: choose another name." in r.stderr
    r = cli(home, "--person", "Bob", "--passphrase-stdin", "person", "rename", "Robert", stdin=BOB_PASS + "\n")
    assert r.returncode == 0 and "Bob is now called Robert: use --person 'Robert' from now on." in r.stdout, r.stdout
    # no one renames another: rename takes only a name, and acts as the person the CLI unlocked
    r = cli(home, "--person", "Robert", "person", "rename", "Bobby")
    assert r.returncode == 2 and "protected by a passphrase" in r.stderr, r.stderr
    assert [p["name"] for p in json.loads(cli(home, "person", "list", "--json").stdout)] == ["Alice", "Robert"]
