"""Two people through the CLI (real processes, SQLite and PostgreSQL): providers of the same name stay each
person's own, turns are listed only to their person, a schedule runs with its owner's key, and every
attempt on the other person's things exits 2, changes nothing and is audited."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.helpers.fake_model import Text
from tests.integration.test_cli import cli
from tests.people.conftest import BOB_KEY, BOB_PASS, ME_KEY, keys_sent


def as_bob(home: Path, *args: str, extra: str = "", timeout: float = 60):
    return cli(home, "--person", "Bob", "--passphrase-stdin", *args, stdin=BOB_PASS + "\n" + extra, timeout=timeout)


def audited_denials(home: Path, name: str) -> list[dict]:
    import os

    from runtime_host.store import Store

    store = Store(os.environ.get("HEARTH_DATABASE_URL") or home / "pod.db")
    try:
        person = store.get_person(name)
        assert person is not None
        return [a for a in store.list_audit(person.id, kind="access") if a["action"] == "denied"]
    finally:
        store.close()


def test_two_people_through_the_cli(home, backend, fake_model, script, secure_keyring) -> None:
    script([Text("noted")], repeat_last=True)
    ok = cli(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "fake-1", "--key-from-stdin",
             stdin=ME_KEY + "\n")
    assert ok.returncode == 0, ok.stderr
    assert cli(home, "agent", "add", "helper", "--provider", "fake").returncode == 0
    assert cli(home, "--passphrase-stdin", "person", "add", "Bob", stdin=BOB_PASS + "\n").returncode == 0
    # Bob adds a provider of the same name: his own address, model and key
    r = as_bob(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "bobs-model",
               "--key-from-stdin", extra=BOB_KEY + "\n")
    assert r.returncode == 0, r.stderr
    assert as_bob(home, "agent", "add", "helper", "--provider", "fake").returncode == 0
    mine = json.loads(cli(home, "provider", "list", "--json").stdout)
    assert [(p["name"], p["model"]) for p in mine if not p["builtin"]] == [("fake", "fake-1")]
    # Me's chat goes with Me's key; Bob's with Bob's
    assert cli(home, "chat", "helper", "Me's secret plans").returncode == 0
    assert as_bob(home, "chat", "helper", "Bob's shopping list").returncode == 0
    assert keys_sent(fake_model, "Me's secret plans") == {f"Bearer {ME_KEY}"}
    assert keys_sent(fake_model, "Bob's shopping list") == {f"Bearer {BOB_KEY}"}
    assert {r.body["model"] for r in fake_model.requests if "Bob's shopping" in r.last_user} == {"bobs-model"}
    # search by meaning is one index for everyone: Bob is told who chooses its model, and nothing changes
    r = as_bob(home, "models", "set", "embedding", "local/minilm")
    assert r.returncode == 2 and "chosen by the person who set Hearth up (Settings → Models as Me;" in r.stderr, r.stderr
    assert "role embedding\tchosen by the person who set Hearth up for everyone (static)" in as_bob(home, "models").stdout
    # turns --json lists only the person's own turns
    my_turns = json.loads(cli(home, "turns", "--json").stdout)
    bobs_turns = json.loads(as_bob(home, "turns", "--json").stdout)
    assert len(my_turns) == 1 and len(bobs_turns) == 1 and my_turns[0]["id"] != bobs_turns[0]["id"]
    assert "Me's secret" not in json.dumps(bobs_turns) and "Bob's shopping" not in json.dumps(my_turns)
    # Bob asks for Me's conversation, and tries to stop Me's turn: refused, nothing shown, audited
    refused = as_bob(home, "turns", "--json", "--conversation", my_turns[0]["conversation_id"])
    assert refused.returncode == 2 and "No conversation" in refused.stderr and "secret" not in refused.stdout
    stopped = as_bob(home, "stop", my_turns[0]["id"])
    assert stopped.returncode == 2 and "No turn" in stopped.stderr
    assert len(audited_denials(home, "Bob")) == 2
    # without the passphrase, or with a wrong one: refused and audited
    assert cli(home, "--person", "Bob", "turns", "--json").returncode == 2
    assert cli(home, "--person", "Bob", "--passphrase-stdin", "turns", stdin="guess\n").returncode == 2
    assert len(audited_denials(home, "Bob")) == 4
    # each person's schedule runs with their own key, whoever runs the tick
    assert cli(home, "schedule", "add", "helper", "* * * * *", "Me's briefing", "--tz", "UTC").returncode == 0
    assert as_bob(home, "schedule", "add", "helper", "* * * * *", "Bob's briefing", "--tz", "UTC").returncode == 0
    when = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    tick = cli(home, "tick", "--now", when, timeout=120)
    assert tick.returncode == 0, tick.stderr
    assert keys_sent(fake_model, "Me's briefing") == {f"Bearer {ME_KEY}"}
    assert keys_sent(fake_model, "Bob's briefing") == {f"Bearer {BOB_KEY}"}
    assert all("Me's briefing" not in r["prompt"] for r in json.loads(as_bob(home, "runs", "--json").stdout))


def test_memory_proposals_are_listed_only_to_their_person(home, secure_keyring) -> None:
    """An agent's edit of Bob's verified page waits for Bob: Me's `memory proposals` shows nothing of it."""
    import asyncio

    from runtime_host.pod import Pod
    from wiki_engine import Page

    async def bobs_proposal() -> None:
        pod = Pod(home)
        try:
            pod.first_person()
            pod.add_person("Bob", BOB_PASS)
            bob = pod.unlock("Bob", BOB_PASS)
            scope = f"private/{bob.person_id}"
            src = pod.memory.add_source("Bob's biopsy result comes back on Friday.", scope=scope)
            pod.memory.write_page(Page("Health", scope, "health", "- Biopsy result due [1]", {1: src}),
                                  author="person:bob")
            pod.memory.set_verified(scope, "Health")
            assert pod.memory.write_page(Page("Health", scope, "health", "- Biopsy result due Friday [1]", {1: src}),
                                         author="agent:wiki-writer").status == "proposed"
        finally:
            await asyncio.wait_for(pod.close(), 20)

    asyncio.run(bobs_proposal())
    mine = cli(home, "memory", "proposals")
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout) == []
    his = as_bob(home, "memory", "proposals")
    assert his.returncode == 0, his.stderr
    [p] = json.loads(his.stdout)
    assert p["scope"] == "Me" and "Biopsy result due Friday" in p["proposed_text"]
