"""Safety gates in the Pod: ingress flags, memory writes redacted, egress named on cards, all audited."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.fake_model import Text, ToolCalls

CARD = "4111 1111 1111 1111"


async def test_ingress_flags_personal_data_and_audits_without_the_value(pod, script) -> None:
    script([Text("ok")])
    flagged: list[dict] = []
    pod.subscribe(lambda e: flagged.append(e) if e["type"] == "message.flagged" else None)
    r = await asyncio.wait_for(pod.chat("helper", f"my card is {CARD}, expiry 12/29"), 30)
    assert r.ok and flagged and "payment card" in flagged[0]["message"]
    log = pod.audit_log()
    assert log[0]["phase"] == "ingress" and log[0]["action"] == "allowed" and "payment card" in log[0]["summary"]
    assert CARD not in str(log) and CARD.replace(" ", "") not in str(log)


async def test_memory_writes_are_redacted_before_storing(pod, script) -> None:
    pod.edit_agent("helper", toolkits=["memory"])
    script([ToolCalls([("remember", {"fact": f"Ada pays with card {CARD} and mails ada@example.org"})]),
            lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "remember how I pay"), 60)
    assert "remembered" in r.text
    inst = pod.find_agent("helper")[0]
    stored = pod.memory.search("Ada pays with card", scopes=[f"private/{inst.person_id}"], k=3)
    assert stored and CARD not in stored[0].snippet and "4111" not in stored[0].snippet
    actions = [(e["phase"], e["action"]) for e in pod.audit_log()]
    assert ("memory_write", "redacted") in actions


async def test_per_agent_policy_blocks_email_egress_and_bad_settings_are_refused(pod, script) -> None:
    from runtime_host.store import StoreError

    with pytest.raises(StoreError, match="Unknown safety setting"):
        pod.edit_agent("helper", safety={"egres": {}})
    pod.edit_agent("helper", safety={"egress": {"email": "block"}})
    inst = pod.find_agent("helper")[0]
    d = pod.gate("egress", "write to bob@example.org", person_id=inst.person_id, agent_id=inst.id, agent_name="helper")
    assert d.action.value == "blocked" and "email" in d.message
    other = pod.gate("egress", "write to bob@example.org", person_id=inst.person_id, agent_id=None, agent_name="x")
    assert other.action.value == "asked"  # the default policy asks instead


async def test_reversible_redaction_keeps_its_mapping_in_the_vault_only(pod, script, secure_keyring) -> None:
    pod.edit_agent("helper", toolkits=["memory"], safety={"reversible": True})
    script([ToolCalls([("remember", {"fact": f"Ada's card is {CARD}"})]), lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "remember my card"), 60)
    assert "remembered" in r.text
    inst = pod.find_agent("helper")[0]
    hit = pod.memory.search("Ada's card", scopes=[f"private/{inst.person_id}"], k=1)[0]
    assert "4111" not in hit.snippet
    assert CARD in pod.restore_redactions(hit.snippet) or CARD.replace(" ", "") in pod.restore_redactions(hit.snippet)
    # memory (sources, pages, indexes) never holds the value; the conversation itself is the person's own record
    for f in (pod.home / "memory").rglob("*"):
        if f.is_file():
            assert b"4111 1111 1111 1111" not in f.read_bytes(), f"the card is in plain text in {f}"
