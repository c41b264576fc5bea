"""Safety gates in the Pod: ingress flags, memory writes redacted, egress named on cards, all audited."""

from __future__ import annotations

import asyncio

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
