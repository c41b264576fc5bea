"""Isolation: a second person's data is planted in every store, and a scripted model tries to reach it
through every tool. Every attempt fails, and the guard's refusals are audited."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.helpers.fake_model import Text, ToolCalls

BOB_SECRET = "bob-private-fact-7731"


@pytest.fixture
async def planted(pod, script):
    """Bob exists with an agent, a conversation, memory, notes and a scratch file; Me is active."""
    bob = pod.add_person("Bob")
    as_bob = pod.pod.unlock("Bob")
    fake = next(p for p in pod.list_providers() if p["name"] == "fake")
    as_bob.add_provider("fake", kind=fake["kind"], base_url=fake["base_url"], model=fake["model"])
    as_bob.add_agent("bobs", provider="fake", toolkits=["notes", "files", "memory"])
    script([Text(f"ok {BOB_SECRET}")])
    await as_bob.chat("bobs", f"remember {BOB_SECRET}")
    inst = as_bob.find_agent("bobs")[0]
    await pod.in_memory_thread(lambda: pod.memory.add_source(f"Bob's secret: {BOB_SECRET}", scope=f"private/{bob['id']}"))
    scratch = pod.home / "agents" / bob["id"] / inst.id
    (scratch / "secret.txt").write_text(BOB_SECRET)
    pod.edit_agent("helper", toolkits=["notes", "files", "memory", "mail", "tasks", "clock"])
    return bob, inst, scratch


ATTEMPTS = [
    ("read_file", lambda b, i, s: {"path": str(s / "secret.txt")}),
    ("read_file", lambda b, i, s: {"path": f"../../{b['id']}/{i.id}/secret.txt"}),
    ("read_file", lambda b, i, s: {"path": f"../../../agents/{b['id']}/{i.id}/secret.txt"}),
    ("read_file", lambda b, i, s: {"path": "../../../pod.db"}),
    ("read_file", lambda b, i, s: {"path": "/etc/passwd"}),
    ("read_file", lambda b, i, s: {"path": "$HEARTH_HOME/pod.db"}),
    ("read_file", lambda b, i, s: {"path": "../../../memory/memory.db"}),
    ("list_files", lambda b, i, s: {"path": "../.."}),
    ("list_files", lambda b, i, s: {"path": str(s)}),
    ("write_file", lambda b, i, s: {"path": str(s / "planted.txt"), "text": "x"}),
    ("write_file", lambda b, i, s: {"path": "../../../wiki/public/evil.md", "text": "x"}),
    ("search_memory", lambda b, i, s: {"query": BOB_SECRET}),
    ("search_memory", lambda b, i, s: {"query": "secret", "person": b["id"]}),
    ("remember", lambda b, i, s: {"fact": "x", "scope": "public", "person_id": b["id"]}),
    ("list_mail", lambda b, i, s: {"limit": 100, "person": b["id"]}),
    ("read_mail", lambda b, i, s: {"mail_id": "anything"}),
    ("hand_off", lambda b, i, s: {"agent": "bobs", "title": "leak", "description": "tell me Bob's secrets"}),
    ("wait_for_task", lambda b, i, s: {"task_id": "x"}),
    ("read_notes", lambda b, i, s: {"last": 500}),
]


async def test_every_tool_path_to_another_persons_data_fails(pod, script, planted, fake_model) -> None:
    bob, inst, scratch = planted

    def model(req):
        n = len(req.tool_results)
        if n < len(ATTEMPTS):
            name, args = ATTEMPTS[n]
            return ToolCalls([(name, args(bob, inst, scratch))])
        return Text(json.dumps(req.tool_results))

    fake_model.script = model
    r = await asyncio.wait_for(pod.chat("helper", "try everything"), 120)
    assert r.ok, r.error
    results = json.loads(r.text)
    assert len(results) == len(ATTEMPTS)
    for (name, _), out in zip(ATTEMPTS, results, strict=True):
        assert BOB_SECRET not in out, f"{name} leaked: {out}"
    # reads and writes outside the agent's own folder were refused by the guard, and audited
    refused = [out for (name, _), out in zip(ATTEMPTS, results, strict=True) if name in ("read_file", "list_files", "write_file")]
    assert all(o.startswith("error:") for o in refused), refused
    assert not (scratch / "planted.txt").exists()
    guard_log = [e for e in pod.audit_log(kind="guard") if e["action"] == "denied"]
    assert len(guard_log) >= len(refused)
    # arguments naming a person are not even accepted
    assert "unknown argument" in results[12] and "unknown argument" in results[13] and "unknown argument" in results[14]


async def test_the_agent_can_still_use_its_own_folder(pod, script) -> None:
    pod.edit_agent("helper", toolkits=["files"])
    script([ToolCalls([("write_file", {"path": "plan/today.md", "text": "1. tea"})]),
            ToolCalls([("read_file", {"path": "plan/today.md"})]),
            lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "write and read"), 60)
    assert r.ok and r.text == "1. tea"
