"""A provider that echoes the key in its 401 answer ("Incorrect API key provided: sk-...") never gets that key
stored, logged or printed: the turn's error, its steps, the worker's log, the database and what the CLI
prints all carry the redactor's placeholder instead."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from tests.helpers.fake_model import Error, Text
from tests.integration.test_cli import KEY, cli, setup_agent

PLACEHOLDER = "[secret hidden]"
NEW_KEY = "sk-test-Rt55-rotated-value-9931"


def echo_the_key(req) -> Error:
    presented = req.headers["authorization"].removeprefix("Bearer ")
    return Error(401, f"Incorrect API key provided: {presented}. You can find your API key in your account.")


def _files_with_key(home: Path) -> list[str]:
    return [str(f) for f in home.rglob("*") if f.is_file() and KEY.encode() in f.read_bytes()]


def test_a_key_echoed_in_a_401_is_never_stored_logged_or_printed(home, fake_model, script, secure_keyring) -> None:
    setup_agent(home, fake_model.base_url)
    script([echo_the_key], repeat_last=True)
    r = cli(home, "chat", "helper", "hi")
    assert r.returncode != 0
    assert KEY in fake_model.requests[0].headers["authorization"]  # the provider did echo the real key
    assert KEY not in r.stdout + r.stderr, "the CLI printed the key"
    assert "refused the key" in r.stderr and PLACEHOLDER in r.stderr
    turns = cli(home, "turns", "--json")
    assert turns.returncode == 0 and KEY not in turns.stdout
    turn = json.loads(turns.stdout)[0]
    assert PLACEHOLDER in turn["error"] and PLACEHOLDER in json.dumps(turn["steps"])
    assert _files_with_key(home) == [], "the key reached the disk (database, WAL or a log)"


async def test_the_pod_redacts_what_reaches_the_store_events_and_log(home, fake_model, script, secure_keyring,
                                                                     caplog) -> None:
    from runtime_host.pod import Pod

    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1", key=KEY)
    pod.add_agent("helper", provider="fake")
    events: list[dict] = []
    pod.subscribe(events.append)
    script([echo_the_key], repeat_last=True)
    try:
        with caplog.at_level(logging.DEBUG):
            result = await asyncio.wait_for(pod.chat("helper", "hi"), 60)
            # a text with the key reaching the store by any path is cleaned there too
            pod.store.update_turn(result.turn_id, error=f"copied: {KEY}")
            pod.audit(person_id=pod.person.id, agent="helper", kind="test", action="noted", summary=f"saw {KEY}",
                      detail={"body": KEY})
        assert result.status == "failed" and KEY not in (result.error or "") and PLACEHOLDER in (result.error or "")
        assert KEY not in json.dumps(events, default=str)
        assert KEY not in json.dumps(pod.turns(), default=str)
        assert KEY not in json.dumps(pod.audit_log(), default=str)
        assert KEY not in caplog.text
    finally:
        await pod.close()
    assert _files_with_key(home) == []


def test_a_key_pasted_as_the_first_line_of_a_chat_is_not_its_title(home, fake_model, script, secure_keyring) -> None:
    setup_agent(home, fake_model.base_url)
    r = cli(home, "chat", "helper", f"{KEY} is my key, keep it safe\nthanks")
    assert r.returncode == 0, r.stderr
    convs = cli(home, "conversations", "list", "helper", "--json")
    assert convs.returncode == 0, convs.stderr
    titles = [c["title"] for c in json.loads(convs.stdout)]
    assert titles and all(KEY not in t for t in titles) and PLACEHOLDER in titles[0], titles
    conv_id = json.loads(convs.stdout)[0]["id"]
    renamed = cli(home, "conversations", "rename", conv_id, f"key {KEY}")
    assert renamed.returncode == 0 and KEY not in renamed.stdout, renamed.stdout + renamed.stderr
    assert _files_with_key(home) == [], "the key reached the disk (a conversation's title)"


def test_a_key_pasted_into_a_background_runs_prompt_is_not_kept(home, fake_model, script, secure_keyring) -> None:
    """`run AGENT PROMPT` kept the key in clear in its conversation's title ("Background: sk-...") and prompt: a fresh
    process did not yet know the person's keys. Whatever a person's entry point, the keys are known first."""
    setup_agent(home, fake_model.base_url)
    r = cli(home, "run", "helper", f"{KEY} is my key, keep it safe", "--detach")
    assert r.returncode == 0, r.stderr
    convs = cli(home, "conversations", "list", "helper", "--json")
    titles = [c["title"] for c in json.loads(convs.stdout)]
    assert titles and all(KEY not in t for t in titles), titles
    assert _files_with_key(home) == [], "the key reached the disk (a background run's title and prompt)"


async def test_a_key_added_by_another_hearth_process_is_hidden_in_the_running_one(home, fake_model, script,
                                                                                 secure_keyring) -> None:
    """The window runs; the person adds a provider on the command line (later replaces its key there), then pastes
    the key into a chat in the window: the running Pod had read the person's keys once, so the new key was kept in
    clear (message and title)."""
    from runtime_host.pod import Pod

    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1", key=None)
    pod.add_agent("helper", provider="fake")
    script([Text("Noted.")], repeat_last=True)
    try:
        assert (await asyncio.wait_for(pod.chat("helper", "hello"), 60)).ok  # the running Pod knows the keys now
        added = await asyncio.to_thread(cli, home, "provider", "add", "work", "--base-url", fake_model.base_url,
                                        "--model", "fake-1", "--key-from-stdin", stdin=KEY + "\n")
        assert added.returncode == 0, added.stderr
        await asyncio.wait_for(pod.chat("helper", f"{KEY} is my work key", new_conversation=True), 60)
        assert KEY not in json.dumps(pod.list_conversations("helper"), default=str)
        # and its key replaced on the command line ("provider add" adds or updates)
        rotated = await asyncio.to_thread(cli, home, "provider", "add", "work", "--base-url", fake_model.base_url,
                                          "--model", "fake-1", "--key-from-stdin", "--no-check", stdin=NEW_KEY + "\n")
        assert rotated.returncode == 0, rotated.stderr
        await asyncio.wait_for(pod.chat("helper", f"{NEW_KEY} is my new key", new_conversation=True), 60)
        assert NEW_KEY not in json.dumps(pod.list_conversations("helper"), default=str)
    finally:
        await pod.close()
    assert _files_with_key(home) == [], "the key reached the disk (a message or a title)"
    assert not [f for f in home.rglob("*") if f.is_file() and NEW_KEY.encode() in f.read_bytes()]
