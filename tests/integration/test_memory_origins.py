"""How conversations reach memory (the producer and summaries) through branches, edits, forgetting, runs Hearth
started and a second person: only what the person said, once, and never what they forgot or deleted. Each case
below once broke that."""

from __future__ import annotations

import asyncio
import time

from tests.helpers.fake_model import Text


def _say(pod, conv, inst, text: str, answer: str = "Noted.", origin: str = "chat") -> None:
    turn = pod.store.create_turn(conv.id, inst.id, origin=origin)
    pod.store.add_message(conv.id, "user", text, turn_id=turn.id)
    pod.store.add_message(conv.id, "assistant", answer, turn_id=turn.id)


async def found_after_a_branch(pod, conversation_id: str, query: str) -> list[str]:
    """The person branches the conversation from its last message, the producer runs: what search then finds."""
    msgs = pod.store.list_messages(conversation_id)
    pod.branch_conversation(conversation_id, msgs[-1].id)
    await pod.memory_produce()
    return [h.snippet for h in await pod.memory_search(query, mode="keyword")]


async def test_hearth_started_runs_never_become_the_persons_words(pod, script) -> None:
    """Schedules, mail, hand-offs and background runs carry Hearth's prompts: never pulled."""
    script([Text("Done with it.")], repeat_last=True)
    for origin in ("schedule", "mail", "handoff"):
        run = await pod.start_turn("helper", f"HEARTHPROMPT{origin} do the nightly thing", new_conversation=True,
                                   origin=origin)
        assert (await asyncio.wait_for(run.future, 30)).ok
    await pod.memory_produce()
    hits = await pod.memory_search("HEARTHPROMPTschedule HEARTHPROMPTmail HEARTHPROMPThandoff", mode="keyword")
    assert hits == []


async def test_branching_a_scheduled_runs_conversation_puts_hearths_prompt_in_memory_as_the_persons_words(
        pod, script) -> None:
    """README: runs Hearth started (schedules, mail, hand-offs) carry Hearth's own prompts and are not the person's
    words. The person opens a scheduled run and presses Branch from here on its answer (to ask a follow-up): the
    branch's copies have no turn, so the producer takes the schedule's prompt as said by the person."""
    script([Text("Here is your weekly digest.")], repeat_last=True)
    run = await pod.start_turn("helper", "Compile the weekly digest of kestrelword headlines for the household.",
                               new_conversation=True, origin="schedule")
    assert (await asyncio.wait_for(run.future, 30)).ok
    await pod.memory_produce()
    assert await pod.memory_search("kestrelword", mode="keyword") == []  # as promised, before the branch
    assert await found_after_a_branch(pod, run.conversation_id, "kestrelword") == []


async def test_a_branch_is_not_remembered_twice(pod, script) -> None:
    """README: weeks of chat are remembered "none skipped and none twice". Branch from here copies the messages
    into a new conversation: the producer stores each of them again as a new source."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Garden")
    _say(pod, conv, inst, "The quincewood hedge gets trimmed every March by Olek.", "Noted: March, Olek.")
    await pod.memory_produce()
    before = await pod.memory_search("quincewood hedge", mode="keyword")
    assert len(before) == 1
    after = await found_after_a_branch(pod, conv.id, "quincewood hedge")
    assert len(after) == 1, after


async def test_forget_me_is_undone_by_branching_an_old_conversation(pod) -> None:
    """README: "What you forgot is not pulled back from your chats". The person presses Forget everything about
    me, later opens an old conversation and presses Branch from here: every forgotten message is pulled back."""
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Health")
    _say(pod, conv, inst, "My ptarmigan allergy was diagnosed by Dr Haas in 2019.")
    await pod.memory_produce()
    await pod.memory_forget_me()
    assert await pod.memory_search("ptarmigan allergy", mode="keyword") == []
    assert await found_after_a_branch(pod, conv.id, "ptarmigan allergy") == []


async def test_delete_and_forget_forgets_an_edited_messages_old_text(pod, script) -> None:
    """README: Delete and forget deletes "the sources memory made of its messages". The person's message was
    remembered, then they edited it (Edit replaces the last exchange in place); Delete and forget later leaves
    the old text (and the old answer) in memory: they are found by search and cited on pages."""
    script([Text("Noted your code.")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", "The storage unit gate code is 9913 wagtailword."), 30)
    assert r.ok
    await pod.memory_produce()
    assert await pod.memory_search("wagtailword", mode="keyword")
    mine = next(m for m in pod.store.list_messages(r.conversation_id) if m.role == "user")
    run = await pod.answer_again(r.conversation_id, mine.id, "What time does the storage unit open?")
    assert (await asyncio.wait_for(run.future, 30)).ok
    await pod.delete_conversation_and_forget(r.conversation_id)
    hits = await pod.memory_search("wagtailword", mode="keyword")
    assert hits == [], [h.snippet for h in hits]


async def test_the_persons_message_in_a_queued_scheduled_runs_conversation_reaches_memory(pod, script) -> None:
    """The person writes into a scheduled run's conversation while the run waits for its agent (busy with another
    answer): their message joins the schedule's turn, so the producer takes it for Hearth's prompt and it never
    reaches memory, though the person wrote it."""
    def slow(req):
        time.sleep(1.5)
        return Text("Done.")

    script([slow, Text("Digest ready."), Text("Noted.")], repeat_last=True)
    busy = await pod.start_turn("helper", "Draft a long letter to the council.", new_conversation=True)
    await asyncio.sleep(0.3)
    sched = await pod.start_turn("helper", "Compile the weekly digest.", new_conversation=True, origin="schedule")
    mine = await pod.start_turn("helper", "Also: my heronword passport expires on 4 May 2027.",
                                conversation_id=sched.conversation_id)
    for run in (busy, sched, mine):
        await asyncio.wait_for(run.future, 30)
    await pod.memory_produce()
    hits = await pod.memory_search("heronword passport", mode="keyword")
    assert hits, "the person's own message was never remembered"


async def test_bobs_telegram_chat_with_his_own_helper_reaches_only_his_memory_with_names(pod, script) -> None:
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    script([Text("Noted.")], repeat_last=True)
    bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake", system="You help Bob.")
    r = await asyncio.wait_for(as_bob.chat("helper", "My godson Teodor plays the bassoonword on Sundays. Alice knows.",
                                           origin="telegram", new_conversation=True, title="Telegram chat"), 30)
    assert r.ok
    assert (await asyncio.wait_for(pod.chat("helper", "The cellarword key hangs by the door."), 30)).ok
    await pod.pod.memory_produce()  # the 5-minute run, for everyone
    alice_scope, bob_scope = f"private/{pod.person.id}", f"private/{bob['id']}"
    rows = pod.memory.catalog.query("SELECT id, scope, title FROM sources")
    assert await pod.memory_search("bassoonword", mode="keyword") == []  # Alice does not find Bob's words
    bobs = await as_bob.memory_search("bassoonword", mode="keyword")
    assert bobs and all(h.scope == bob_scope for h in bobs)
    assert alice_scope not in {h.scope for h in bobs}
    for _sid, _scope, title in rows:  # titled by names, never by ids
        assert bob["id"] not in title and pod.person.id not in title


async def test_a_deleted_summary_is_not_written_again_by_the_next_summary(pod) -> None:
    """README: "a summary you delete stays deleted". The person deletes the summary memory wrote of a long
    conversation (it said something they do not want remembered); once the conversation grows by 30 more messages,
    the next summary reads the whole conversation from its start again and writes the deleted summary's facts back."""
    from runtime_host.memory_jobs import SUMMARY_EVERY

    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "Health")
    for i in range(SUMMARY_EVERY // 2):
        _say(pod, conv, inst, "I was diagnosed with ptarmigan diabetes by Dr Haas." if i == 3 else f"ok {i}")
    assert (await pod.memory_produce())[0]["summaries"] == 1
    scope = f"private/{pod.person.id}"
    assert [r[0] for r in pod.memory.catalog.query("SELECT id FROM sources WHERE scope=? AND item_key LIKE 'summary-%'",
                                                     (scope,))]  # one summary
    # the chat message's own source too: the person deletes both, as the Wiki lets them
    while hits := await pod.memory_search("ptarmigan diabetes", mode="keyword"):  # the message's takes the summary
        await pod.memory_delete_source(hits[0].id)
    assert await pod.memory_search("ptarmigan diabetes", mode="keyword") == []
    for i in range(SUMMARY_EVERY // 2):  # the conversation goes on
        _say(pod, conv, inst, "The boiler service is booked for June." if i == 2 else f"later {i}")
    assert (await pod.memory_produce())[0]["summaries"] == 1
    assert await pod.memory_search("boiler service June", mode="keyword")
    hits = await pod.memory_search("ptarmigan diabetes", mode="keyword")
    assert hits == [], [h.snippet for h in hits]


async def test_editing_the_last_message_forgets_the_summary_that_quoted_its_old_text(pod, script) -> None:
    """The person pasted their gate code into a long conversation; memory's summary of its first 30 messages
    quoted it; they Edit that message (the last exchange, replaced in place). The message's own note left memory,
    but the summary kept the old text for good: search found it, and the next summary (key by message count)
    never replaced it. Now a summary that covered a removed message goes with it; earlier ones stay."""
    from runtime_host.memory_jobs import SUMMARY_EVERY

    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "House")
    for i in range(SUMMARY_EVERY // 2):  # 30 messages: the first summary
        _say(pod, conv, inst, "The roof was fixed by a plover firm." if i == 1 else f"ok {i}")
    assert (await pod.memory_produce())[0]["summaries"] == 1
    for i in range(SUMMARY_EVERY // 2 - 1):  # 28 more, then the code and its answer: the second, to message 60
        _say(pod, conv, inst, f"later {i}")
    script([Text("Noted your code.")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", "The storage gate code is 9913 wagtailword.", conversation_id=conv.id), 30)
    assert r.ok
    assert (await pod.memory_produce())[0]["summaries"] == 1
    assert any(h.id.startswith("summary-") for h in await pod.memory_search("wagtailword", mode="keyword"))
    mine = pod.store.list_messages(conv.id)[-2]
    assert mine.role == "user" and "wagtailword" in mine.content
    run = await pod.answer_again(conv.id, mine.id, "What time does the storage unit open?")
    assert (await asyncio.wait_for(run.future, 30)).ok
    hits = await pod.memory_search("wagtailword", mode="keyword")
    assert hits == [], [(h.id, h.snippet) for h in hits]
    assert any(h.id.startswith("summary-") for h in await pod.memory_search("roof plover firm", mode="keyword"))
    # the conversation reaches 60 messages again: its summary is written anew, from what it says now
    assert (await pod.memory_produce())[0]["summaries"] == 1
    assert any(h.id.startswith("summary-") for h in await pod.memory_search("storage unit open", mode="keyword"))
    assert await pod.memory_search("wagtailword", mode="keyword") == []


async def test_editing_the_last_exchange_while_its_summary_is_being_written(pod, fake_model) -> None:
    """README: what memory kept of an edited last exchange goes with it, and a run that read it before stores
    none of it after. The person pasted their gate code as message 29; the 5-minute producer's summary model is
    reading messages 1-30; the person edits that message. The summary lands after, quoting the old code."""
    import json
    import threading

    from runtime_host.memory_jobs import SUMMARY_EVERY
    from tests.integration.test_memory_pod import files_holding

    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id, "House")
    for i in range(SUMMARY_EVERY // 2 - 1):  # 28 messages
        _say(pod, conv, inst, f"later {i}")
    asked, go = threading.Event(), threading.Event()

    def model(req):
        if req.system.startswith("Summarise this conversation"):
            asked.set()
            go.wait(60)  # the summary model thinks for a while
            lines = [ln for ln in req.last_user.splitlines() if "gate code" in ln or "storage" in ln]
            return Text("- " + "\n- ".join(lines or ["nothing much"]))
        if req.system.startswith("You decide"):
            n = len([ln for ln in req.last_user.splitlines() if ln[:1].isdigit()])
            return Text(json.dumps([{"n": i + 1, "keep": True, "reason": "fact"} for i in range(n)]))
        return Text("Noted your message.")

    fake_model.script = model
    pod.set_role_model("extraction", "fake/summariser")
    r = await asyncio.wait_for(pod.chat("helper", "The storage gate code is 9913 wagtailword.",
                                        conversation_id=conv.id), 30)
    assert r.ok and len(pod.store.list_messages(conv.id)) == SUMMARY_EVERY
    job = asyncio.create_task(pod.memory_summarize())
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        mine = pod.store.list_messages(conv.id)[-2]
        assert "wagtailword" in mine.content
        run = await pod.answer_again(conv.id, mine.id, "What time does the storage unit open?")
        assert (await asyncio.wait_for(run.future, 30)).ok
    finally:
        go.set()
    await asyncio.wait_for(job, 60)
    await pod.memory_produce()
    hits = await pod.memory_search("wagtailword", mode="keyword")
    quoted = [(h.id, h.snippet) for h in hits if "wagtailword" in h.snippet.lower()]
    assert quoted == [], quoted
    assert files_holding(pod.home / "memory", "wagtailword") == []
