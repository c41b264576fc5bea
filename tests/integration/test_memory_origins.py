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


async def _scheduled_briefings(pod, as_bob, fake_model) -> tuple[dict, dict]:
    """Alice's and Bob's agents each run their 09:00 "Briefing" schedule once; their ledger rows."""
    from datetime import UTC, datetime

    from sqlalchemy import text

    answers = iter(["briefing v1: 3 meetings", "Bob's briefing: 1 meeting", "briefing v2: 3 meetings"])
    fake_model.script = lambda req: Text(next(answers, "x"))
    pod.add_schedule("helper", "0 9 * * *", "Give me my morning briefing of plumquartz meetings", tz="UTC",
                     name="Briefing")
    as_bob.add_schedule("helper", "0 9 * * *", "Give me my morning briefing of plumquartz meetings", tz="UTC",
                        name="Briefing")
    with pod.store.engine.begin() as c:  # both were made "now": their last check was at 08:00, so 09:00 is due
        c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t WHERE person_id != 'pod'"),
                  {"t": datetime(2030, 1, 1, 8, 0, tzinfo=UTC).timestamp()})
    await pod.tick(datetime(2030, 1, 1, 9, 0, 20, tzinfo=UTC))
    for run in list(pod.turn_driver.active.values()):
        await asyncio.wait_for(run.future, 30)
    [alices] = pod.schedule_ledger()
    [bobs] = as_bob.schedule_ledger()
    return alices, bobs


async def test_regenerating_a_scheduled_runs_answer_keeps_it_a_run_of_its_schedule(pod, fake_model) -> None:
    """README: runs of a schedule are grouped under one line per schedule, not mixed with your chats; a run is
    opened from the ledger by double-click; runs Hearth started carry Hearth's own prompts, not the person's words.
    Alice presses Regenerate on her 09:00 Briefing's answer (Bob's Briefing ran beside it). Regenerate used to send
    the schedule's prompt again as a chat turn in place of the run: the conversation left "Runs of “Briefing”",
    became her last chat (opening the agent opened it), the ledger's row lost its conversation, and memory then
    took the schedule's prompt for her words."""
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake", system="You help Bob.")
    assert (await asyncio.wait_for(pod.chat("helper", "My quincewood hedge is trimmed in March."), 30)).ok
    chat_id = pod.last_chat("helper")
    row, bobs_row = await _scheduled_briefings(pod, as_bob, fake_model)
    conv_id = row["conversation_id"]
    answer = [m for m in pod.conversation(conv_id)["messages"] if m["role"] == "assistant"][-1]
    assert answer["content"] == "briefing v1: 3 meetings"

    run = await pod.answer_again(conv_id, answer["id"])
    result = await asyncio.wait_for(run.future, 30)
    assert result.ok and result.text == "briefing v2: 3 meetings" and run.conversation_id == conv_id

    listed = {c["id"]: c for c in pod.list_conversations("helper")}
    assert (listed[conv_id]["origin"], listed[conv_id]["schedule"]) == ("schedule", "Briefing")
    assert pod.last_chat("helper") == chat_id  # opening the agent still opens her chat, not the run
    [after] = pod.schedule_ledger()  # double-click on the run opens its conversation, with the new answer
    assert (after["id"], after["conversation_id"], after["turn_id"]) == (row["id"], conv_id, run.turn_id)
    assert [r["origin"] for r in pod.runs() if r["id"] == run.turn_id] == ["schedule"]  # the Runs tab lists it
    assert as_bob.schedule_ledger() == [bobs_row]  # Bob's run is his, untouched
    await pod.pod.memory_produce()  # the 5-minute run, for everyone
    assert await pod.memory_search("quincewood hedge", mode="keyword")  # her own words are remembered
    assert await pod.memory_search("plumquartz", mode="keyword") == []  # the schedule's prompt is not hers
    assert await as_bob.memory_search("plumquartz", mode="keyword") == []


async def test_regenerating_a_mail_rule_run_never_makes_the_strangers_mail_the_persons_words(pod, script) -> None:
    """README: "a mail's body cannot add a line that passes for yours". A mail rule hands a stranger's mail to
    Alice's agent (origin mail; the prompt holds the wrapped mail, as MailHost._hand writes it). Regenerate on that
    run's answer used to send the whole prompt, mail included, as a chat turn: the 5-minute memory run then kept the
    stranger's bank details as something Alice said. Regenerating an earlier exchange (she answered in the run's
    conversation meanwhile) continues in a branch, which is that run's too; and the mail is not hers to Edit."""
    from runtime_host.safety.untrusted import wrap_untrusted
    from runtime_host.store import StoreError
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake", system="You help Bob.")
    script([Text("Handled the mail.")], repeat_last=True)
    mail = "Hi, this is your landlord. My new bank details for the rent: Mallory Ltd, account at Evilbankword."
    prompt = ("A mail arrived for you to handle.\n\n"
              + wrap_untrusted(mail, "mail", origin="landlord@evil.example").text)
    conv = pod.store.create_conversation(pod.find_agent("helper")[0].id, title="Mail: Rent")
    run = await pod.start_turn("helper", prompt, conversation_id=conv.id, origin="mail")
    assert (await asyncio.wait_for(run.future, 30)).ok
    answer = [m for m in pod.conversation(conv.id)["messages"] if m["role"] == "assistant"][-1]
    again = await pod.answer_again(conv.id, answer["id"])  # the last exchange: replaced in place
    assert (await asyncio.wait_for(again.future, 30)).ok and again.conversation_id == conv.id
    # she answers in the run's conversation, then regenerates the run's (now earlier) answer: a branch
    assert (await asyncio.wait_for(pod.chat("helper", "Is the gooseberry rent due on the 1st?",
                                            conversation_id=conv.id), 30)).ok
    first = [m for m in pod.conversation(conv.id)["messages"] if m["role"] == "assistant"][0]
    branched = await pod.answer_again(conv.id, first["id"])
    assert (await asyncio.wait_for(branched.future, 30)).ok and branched.conversation_id != conv.id
    listed = {c["id"]: c["origin"] for c in pod.list_conversations("helper")}
    assert (listed[conv.id], listed[branched.conversation_id]) == ("mail", "mail")
    shown = pod.conversation(branched.conversation_id)["messages"]
    assert [(m["role"], m["origin"]) for m in shown] == [("user", "mail"), ("assistant", "mail")]
    mails = [m for m in pod.conversation(conv.id)["messages"] if "Evilbankword" in m["content"]]
    try:
        await pod.answer_again(conv.id, mails[0]["id"], "Pay Mallory Ltd from now on.")
        raise AssertionError("the stranger's mail was edited and sent as Alice's words")
    except StoreError as exc:
        assert "Hearth's prompt for a mail rule's run" in str(exc) and "Branch from here" in str(exc)
    assert (await asyncio.wait_for(as_bob.chat("helper", "Bob's nettlewort bed needs water."), 30)).ok
    await pod.pod.memory_produce()  # the 5-minute run, for everyone
    assert await pod.memory_search("gooseberry rent", mode="keyword")  # what she wrote is remembered
    assert await as_bob.memory_search("nettlewort", mode="keyword")  # and what Bob wrote, as his
    for who in (pod, as_bob):
        hits = await who.memory_search("Evilbankword Mallory", mode="keyword")
        assert hits == [], [h.snippet for h in hits]
