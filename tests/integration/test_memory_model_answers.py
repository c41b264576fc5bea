"""How the memory jobs read their models' answers: a small model that decides only part of a long list, answers in
another JSON shape, and a reasoning model on a local server writing <think>…</think> before its answer."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from runtime_host.memory_jobs import (
    DECIDE_SYSTEM,
    RECONCILE_SYSTEM,
    SUMMARY_EVERY,
    SUMMARY_SYSTEM,
    MemoryModelError,
)
from tests.helpers.fake_model import Text
from tests.integration.test_folders import MBOX

# What a reasoning model (Qwen3, DeepSeek-R1 on LM Studio or llama.cpp with no reasoning parser) writes first.
THINK = ("<think>\nOkay, the user wants keep or skip. Item [1] is about Clara's birthday, a fact, keep. "
         "Item [2] is small talk. Maybe the user is bored of the kids.\n</think>\n\n")
# The chat template opened the thinking (DeepSeek-R1): the model writes only its end.
THOUGHT = "Item [1] looks like a fact; maybe the user is bored of the kids.\n</think>\n\n"


def _say(pod, conv, inst, text: str, reply: str = "Noted, I will keep that in mind for you.") -> None:
    turn = pod.store.create_turn(conv.id, inst.id)
    pod.store.add_message(conv.id, "user", text, turn_id=turn.id)
    pod.store.add_message(conv.id, "assistant", reply, turn_id=turn.id)


def _shown(req) -> int:
    """How many items a keep-or-skip request lists."""
    return len(re.findall(r"^\d+\. \(", req.last_user, re.M))


def _all_kept(req) -> Text:
    return Text(json.dumps([{"n": n, "keep": True, "reason": "a fact"} for n in range(1, _shown(req) + 1)]))


async def test_a_model_that_decides_only_the_first_items_has_those_stored_and_is_asked_the_rest(pod, fake_model) -> None:
    """A small local model with a backlog of 40 chat messages decided the first 10 and stopped: every 5-minute run
    failed "gave no decision for item(s) [11, …]", nothing was kept, the same items went again each run (the
    repeated failure told once): memory was stuck for good. Now the decided items are stored and the rest asked for
    in the next step of the same run, each item shown to the model once."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    for i in range(20):
        _say(pod, conv, inst, f"My cousin number {i} lives in the town of Zebrafield{i} near the river.")
    pod.set_role_model("extraction", "fake/small")
    fake_model.script = lambda req: Text(json.dumps([{"n": n, "keep": True, "reason": "a fact"}
                                                     for n in range(1, min(10, _shown(req)) + 1)]))
    [rep] = await asyncio.wait_for(pod.memory_produce(), 60)
    assert "error" not in rep and rep["pulled"] == 40 and rep["kept"] == 40, rep
    asks = [r for r in fake_model.requests if r.system == DECIDE_SYSTEM]
    assert [_shown(r) for r in asks] == [40, 30, 20, 10]  # each item asked about once
    for i in (0, 10, 19):
        assert await pod.memory_search(f"cousin Zebrafield{i} river", mode="keyword"), i


async def test_decisions_after_a_gap_are_asked_again_and_none_for_the_first_item_fails_saying_what_to_do(
        pod, fake_model) -> None:
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    _say(pod, conv, inst, "My sister Clara's birthday is on 3 June and she loves orchids.", "Lovely, noted.")
    pod.set_role_model("extraction", "fake/small")
    fake_model.script = lambda req: Text(json.dumps([{"n": 2, "keep": True, "reason": "a fact"}]))
    with pytest.raises(MemoryModelError) as e:
        await asyncio.wait_for(pod.memory_produce(), 60)
    said = str(e.value)
    assert "Settings → Models" in said and "models set" in said and "next run asks again" in said, said
    assert "item(s) [" not in said and "first of the 2" in said, said
    assert await pod.memory_search("Clara orchids birthday", mode="keyword") == []
    # 1 and 3 decided, 2 not: 1 is stored, 2 and 3 are asked again (3's first answer is not taken)
    _say(pod, conv, inst, "The boiler code is 7731, written on the blue card.", "Got it.")
    answers = iter([Text(json.dumps([{"n": 1, "keep": True, "reason": "a birthday"},
                                     {"n": 3, "keep": False, "reason": "first answer"}]))])
    fake_model.script = lambda req: next(answers, None) or Text(json.dumps(
        [{"n": n, "keep": n != 2, "reason": "second answer"} for n in range(1, _shown(req) + 1)]))
    [rep] = await asyncio.wait_for(pod.memory_produce(), 60)
    assert rep["pulled"] == 4 and rep["kept"] == 3, rep
    assert [s["reason"] for s in rep["skipped"]] == ["second answer"]
    asks = [r for r in fake_model.requests if r.system == DECIDE_SYSTEM][-2:]
    assert [_shown(r) for r in asks] == [4, 3] and "Lovely, noted." in asks[1].last_user.split("\n")[1]
    assert await pod.memory_search("Clara orchids birthday", mode="keyword")


async def test_a_model_cut_off_at_its_token_limit_has_its_whole_decisions_stored(pod, fake_model) -> None:
    """A local server's token limit cut the list ('[{…}, {…}, {"n": 3, "ke'): the run failed as JSON not a list."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    for i in range(3):
        _say(pod, conv, inst, f"My cousin number {i} lives in the town of Zebrafield{i} near the river.")
    pod.set_role_model("extraction", "fake/small")

    def cut(req):  # more than 2 items: half of them whole, then the next cut off
        shown = _shown(req)
        whole = shown if shown <= 2 else shown // 2
        said = json.dumps([{"n": n, "keep": True, "reason": "a fact"} for n in range(1, whole + 1)])
        return Text(said if whole == shown else said[:-1] + f', {{"n": {whole + 1}, "keep": tr')

    fake_model.script = cut
    [rep] = await asyncio.wait_for(pod.memory_produce(), 60)
    assert rep["kept"] == 6 and "error" not in rep, rep
    asks = [r for r in fake_model.requests if r.system == DECIDE_SYSTEM]
    assert [_shown(r) for r in asks] == [6, 3, 2]  # 3, then 1 of them whole in the cut answers, then all


@pytest.mark.parametrize("answer", [
    {"decisions": [{"n": 1, "keep": True, "reason": "a birthday"}, {"n": 2, "keep": False, "reason": "chatter"}]},
    [{"n": "1", "keep": "yes", "reason": "a birthday"}, {"n": "2", "keep": "no", "reason": "chatter"}],
    [{"n": 1, "keep": "keep", "reason": "a birthday"}, {"n": 2, "keep": "Skip", "reason": "chatter"}],
])
async def test_decisions_in_the_shapes_models_write_are_read(pod, fake_model, answer) -> None:
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    _say(pod, conv, inst, "My sister Clara's birthday is on 3 June and she loves orchids.", "Lovely, noted.")
    pod.set_role_model("extraction", "fake/small")
    fake_model.script = lambda req: Text(json.dumps(answer))
    [rep] = await asyncio.wait_for(pod.memory_produce(), 60)
    assert rep["kept"] == 1 and [s["reason"] for s in rep["skipped"]] == ["chatter"], rep


@pytest.mark.parametrize("answer", [{"verdict": "keep them all"}, "[{\"n\": 1, \"keep\": tr", [{"n": 1, "keep": 1}]])
async def test_an_answer_of_the_wrong_shape_is_told_with_what_to_do(pod, fake_model, answer) -> None:
    """"The extraction model's JSON is not a list of decisions; nothing was stored." said nothing of what to do."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    _say(pod, conv, inst, "My sister Clara's birthday is on 3 June and she loves orchids.")
    pod.set_role_model("extraction", "fake/small")
    fake_model.script = lambda req: Text(answer if isinstance(answer, str) else json.dumps(answer))
    with pytest.raises(MemoryModelError) as e:
        await asyncio.wait_for(pod.memory_produce(), 60)
    said = str(e.value)
    assert "Settings → Models" in said and "models set" in said and "next run asks again" in said, said
    assert "Settings" not in e.value.plain() and "nothing was stored" in e.value.plain()  # the ledger's words
    assert await pod.memory_search("Clara orchids birthday", mode="keyword") == []


@pytest.mark.parametrize("thinking", [THINK, THOUGHT], ids=["think", "closing-tag-only"])
async def test_keep_or_skip_by_a_reasoning_model(pod, fake_model, thinking) -> None:
    """The first bracket of the thinking ("Item [1] …") was read as the answer: every run failed."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    _say(pod, conv, inst, "My sister Clara's birthday is on 3 June and she loves orchids.", "Lovely, noted.")
    pod.set_role_model("extraction", "fake/qwen3")
    fake_model.script = lambda req: Text(thinking + json.dumps([{"n": 1, "keep": True, "reason": "a birthday"},
                                                                {"n": 2, "keep": False, "reason": "small talk"}]))
    [rep] = await asyncio.wait_for(pod.memory_produce(), 60)
    assert rep["kept"] == 1 and "error" not in rep, rep


async def test_a_model_that_only_thought_gave_no_answer(pod, fake_model) -> None:
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Facts")
    _say(pod, conv, inst, "My sister Clara's birthday is on 3 June and she loves orchids.")
    pod.set_role_model("extraction", "fake/qwen3")
    fake_model.script = lambda req: Text('<think>Item 1 is [{"n": 1, "keep": true}] so I answer')  # cut off
    with pytest.raises(MemoryModelError) as e:
        await asyncio.wait_for(pod.memory_produce(), 60)
    assert "gave no answer" in str(e.value) and "Settings → Models" in str(e.value), str(e.value)
    assert await pod.memory_search("Clara orchids birthday", mode="keyword") == []


async def test_a_reasoning_models_thinking_is_not_stored_as_the_summary(pod, fake_model) -> None:
    """The whole thinking was stored as the conversation's summary: searchable, and shown to the wiki writer."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Holiday")
    for i in range(SUMMARY_EVERY // 2):
        _say(pod, conv, inst, "The Lisbon trip is from 3 to 10 May with the kids." if i == 3 else f"ok {i}", "Noted.")
    pod.set_role_model("extraction", "fake/qwen3")

    def model(req):
        if req.system == SUMMARY_SYSTEM:
            return Text(THINK + "- Lisbon trip from 3 to 10 May with the kids.")
        return Text(json.dumps([{"n": n, "keep": False, "reason": "chatter"} for n in range(1, _shown(req) + 1)]))

    fake_model.script = model
    await asyncio.wait_for(pod.memory_produce(), 60)
    [hit] = [h for h in await pod.memory_search("Lisbon trip May", mode="keyword") if h.id.startswith("summary-")]
    text = pod.memory.get_source(hit.id).text
    assert "Lisbon trip from 3 to 10 May" in text and "bored" not in text and "think>" not in text, text


async def test_a_reasoning_wiki_writer_and_contradiction_check(pod, fake_model) -> None:
    """Their answers, thinking first, failed as JSON not found (or a bracket in the thinking taken as the answer)."""
    scope = f"private/{pod.person.id}"
    sid = await pod.in_memory_thread(lambda: pod.memory.add_source("The boiler code is 7731.", scope=scope))
    pod.set_role_model("ingest", "fake/qwen3")
    fake_model.script = lambda req: Text(THINK + json.dumps(
        [{"title": "Boiler", "scope": scope, "category": "home", "body": "- The boiler code is 7731 [1]",
          "citations": {"1": "S1"}}]))
    out = await asyncio.wait_for(pod.memory_ingest(), 60)
    assert out["rejected"] == [] and pod.memory.read_page(scope, "boiler").citations == {1: sid}, out

    from wiki_engine import Page

    def two_dates() -> tuple[str, str]:
        old = pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope, ts=time.time() - 86400 * 30)
        new = pod.memory.add_source("Correction: Clara's birthday is on 4 June.", scope=scope, ts=time.time())
        pod.memory.write_page(Page("Family", scope, "family", "- Clara's birthday is on 3 June [1]\n"
                                   "- Clara's birthday is on 4 June [2]", {1: old, 2: new}), author="agent:writer")
        return old, new

    _old, new = await pod.in_memory_thread(two_dates)

    def model(req):
        if req.system == RECONCILE_SYSTEM:
            return Text(THOUGHT + json.dumps({"changed": True, "body": "- Clara's birthday is on 4 June [2]",
                                              "dropped": {"1": 2}, "why": "the newer source corrects the date"}))
        return Text(THINK + "[]")

    fake_model.script = model
    out = await asyncio.wait_for(pod.memory_nightly(), 60)
    assert [r.split(":")[0] for r in out["reconciled"]] == [f"{scope}/family"], out
    page = pod.memory.read_page(scope, "family")
    assert "3 June" not in page.body and page.citations[2] == new, page


async def test_an_import_model_deciding_only_the_first_message_is_asked_for_the_rest(pod, tmp_path, fake_model) -> None:
    """Keep or skip of a mail export's messages: the folder's file failed "the import model failed" each scan."""
    pod.set_role_model("import", "fake/fake-1")
    docs = tmp_path / "mail"
    docs.mkdir()
    (docs / "old.mbox").write_bytes(MBOX)
    fake_model.script = lambda req: Text(json.dumps([{"n": 1, "keep": "Piano" in req.last_user.split("\n")[1],
                                                      "reason": "a plan" if "Piano" in req.last_user.split("\n")[1]
                                                      else "advertising"}]))  # [0] is today's date
    folder = pod.folders.add(docs)
    await asyncio.wait_for(pod.folders.scan(folder.id), 60)
    assert len(fake_model.requests) == 2
    [status] = pod.folders.files(folder.id)
    assert status.status == "indexed" and "advertising" in status.reason, status
    assert any("piano" in h.snippet.lower() for h in await pod.memory_search("piano lessons Leo", mode="keyword"))


@pytest.mark.parametrize("answer", [{"verdict": "keep them all"}, "I cannot decide on mail.", [{"n": 2, "keep": True}]])
async def test_a_watched_folders_import_model_that_answered_badly_is_named_with_where_to_change_it(
        pod, tmp_path, fake_model, answer) -> None:
    """A mail export's keep-or-skip answer that could not be used told the person "The extraction model's JSON is
    not a list…" and to pick a model "for this role": the folder's mail is decided by the import model, so changing
    the extraction model (what the message named) changed nothing."""
    pod.set_role_model("import", "fake/fake-1")
    docs = tmp_path / "mail"
    docs.mkdir()
    (docs / "old.mbox").write_bytes(MBOX)
    fake_model.script = lambda req: Text(answer if isinstance(answer, str) else json.dumps(answer))
    folder = pod.folders.add(docs)
    await asyncio.wait_for(pod.folders.scan(folder.id), 60)
    [status] = pod.folders.files(folder.id)
    said = status.reason
    assert status.status != "indexed" and "The import model" in said, said
    assert "Settings → Models → import" in said and "models set import PROVIDER/MODEL" in said, said
    assert "extraction" not in said, said
