"""The memory pipelines as the Pod runs them: chat -> inbox -> pages, with a real model or the rules."""

from __future__ import annotations

import asyncio
import json

from tests.helpers.fake_model import Text


async def chat_some(pod, script) -> None:
    script([Text("Noted.")], repeat_last=True)
    for msg in ["My sister Clara's birthday is on 3 June and she loves orchids.", "hi", "thanks!"]:
        assert (await asyncio.wait_for(pod.chat("helper", msg), 30)).ok


async def test_produce_and_ingest_with_the_rules_when_no_model_is_chosen(pod, script) -> None:
    await chat_some(pod, script)
    reports = await pod.memory_produce()
    rep = reports[0]
    assert rep["decided_by"] == "rules" and rep["pulled"] == 6
    assert rep["kept"] >= 1 and any(s["reason"] == "small talk" for s in rep["skipped"])
    again = await pod.memory_produce()
    assert again[0]["pulled"] == 0  # the watermark moved: nothing is pulled twice
    out = await pod.memory_ingest()
    assert out["written"] and out["consumed"] >= 1
    hits = await pod.memory_search("when is Clara's birthday")
    assert any("3 June" in h.snippet for h in hits)


async def test_produce_with_a_model_that_answers_json(pod, script, fake_model) -> None:
    await chat_some(pod, script)
    pod.set_role_model("extraction", "fake/extractor-1")

    def decide(req):
        n = req.last_user.count("\n") + 1
        return Text(json.dumps([{"n": i + 1, "keep": "orchids" in line, "reason": "fact" if "orchids" in line else "chatter"}
                                for i, line in enumerate(req.last_user.splitlines()[:n])]))

    script([decide])
    rep = (await pod.memory_produce())[0]
    assert rep["decided_by"] == "fake/extractor-1"
    assert rep["kept"] == 1 and len(rep["skipped"]) == 5
    assert fake_model.requests[-1].body["model"] == "extractor-1"


async def test_malformed_model_output_moves_nothing(pod, script) -> None:
    from runtime_host.memory_jobs import MemoryModelError

    await chat_some(pod, script)
    pod.set_role_model("extraction", "fake")
    script([Text("Sure! I think you should keep the first one.")])
    try:
        await pod.memory_produce()
    except MemoryModelError as exc:
        assert "did not answer with JSON" in str(exc)
    else:
        raise AssertionError("malformed output must fail the run")
    pod.store.set_role_model(pod.person.id, "extraction", "embedded", "")
    rep = (await pod.memory_produce())[0]
    assert rep["pulled"] == 6  # the failed run pulled nothing for good: everything is still there
