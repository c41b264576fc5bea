"""Two people through a real `serve` process: each token acts as the person who made it; one person's
turns, conversations and stops are refused to the other (404) and audited."""

from __future__ import annotations

import asyncio

import pytest

from runtime_host.serve import RemoteError, RemotePod
from tests.helpers.fake_model import Text
from tests.helpers.serve import running_serve
from tests.integration.test_cli import cli
from tests.people.conftest import BOB_KEY, BOB_PASS, ME_KEY, keys_sent
from tests.people.test_cli import as_bob, audited_denials


def test_each_token_acts_as_its_person(home, fake_model, script, secure_keyring) -> None:
    script([Text("served")], repeat_last=True)
    assert cli(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "fake-1",
               "--key-from-stdin", stdin=ME_KEY + "\n").returncode == 0
    assert cli(home, "agent", "add", "helper", "--provider", "fake").returncode == 0
    assert cli(home, "--passphrase-stdin", "person", "add", "Bob", stdin=BOB_PASS + "\n").returncode == 0
    assert as_bob(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--key-from-stdin",
                  extra=BOB_KEY + "\n").returncode == 0
    assert as_bob(home, "agent", "add", "bobs-helper", "--provider", "fake").returncode == 0
    my_token = cli(home, "serve", "--new-token").stdout.strip()
    bobs_token = as_bob(home, "serve", "--new-token").stdout.strip()
    assert my_token.startswith("hth_") and bobs_token.startswith("hth_") and my_token != bobs_token
    with running_serve(home) as base:

        async def talk() -> None:
            me = RemotePod(base, my_token)
            bob = RemotePod(base, bobs_token)
            try:
                assert [a["name"] for a in await me.agents()] == ["helper"]
                assert [a["name"] for a in await bob.agents()] == ["bobs-helper"]
                r = await me.chat("helper", "Me's private question")
                assert r["status"] == "done", r
                b = await bob.chat("bobs-helper", "Bob's own question")
                assert b["status"] == "done", b
                assert [t["id"] for t in await me.turns()] == [r["turn_id"]]
                assert [t["id"] for t in await bob.turns()] == [b["turn_id"]]
                with pytest.raises(RemoteError, match="No conversation"):
                    await bob.turns(r["conversation_id"])
                with pytest.raises(RemoteError, match="No turn"):
                    await bob.cancel(r["turn_id"])
                with pytest.raises(RemoteError):
                    await bob.chat("helper", "let me in", r["conversation_id"])
            finally:
                await me.close()
                await bob.close()

        asyncio.run(talk())
    assert keys_sent(fake_model, "Me's private question") == {f"Bearer {ME_KEY}"}
    assert keys_sent(fake_model, "Bob's own question") == {f"Bearer {BOB_KEY}"}
    assert len(audited_denials(home, "Bob")) >= 2
