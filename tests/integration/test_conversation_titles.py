"""A conversation's title, as Hearth makes it from the first message and as memory uses it (rev96, findings 1 and
2). Hearth titled a conversation with its first message's first 60 characters and memory gave that title as the
subject of EVERY note of the conversation: deleting the first message's note left its words on all the others
(search, typeahead, sources, the catalog, the index, the summary written again), and an edited first message kept
its old text as the title, which memory then stored, a card number the cut had halved in the clear."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from tests.helpers.fake_model import Text
from tests.integration.test_memory_pod import bob_with_his_own_provider

FIRST = "The zorbulate plumber comes on Tuesday to fix the sink in the kitchen."
OLD = "Pay the zorbulate plumber for it, my card: 4111 1111 1111 1111 thanks"  # cut at 60: 14 of the 16 digits
NEW = "Pay the plumber for the sink by bank transfer please."


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


async def _bob_renamed_chat(as_bob) -> str:
    """Bob's own conversation, which he titled "Boiler": a title given stays his notes' subject."""
    r = await asyncio.wait_for(as_bob.chat("helper", "The gas boiler service is booked for Friday morning."), 30)
    assert r.ok
    as_bob.rename_conversation(r.conversation_id, "Boiler")
    return r.conversation_id


async def test_a_deleted_first_message_leaves_nothing_in_memory(pod, script) -> None:
    script([Text("Noted.")], repeat_last=True)
    _bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake", system="You are a helpful test agent.")
    await _bob_renamed_chat(as_bob)
    conv = None
    for m in (FIRST, "The gas meter reading is due next Monday for the annual check."):
        r = await asyncio.wait_for(pod.chat("helper", m, **({"conversation_id": conv} if conv else {})), 30)
        assert r.ok
        conv = conv or r.conversation_id
    await pod.pod.memory_produce()
    await as_bob.memory_produce()
    scope = f"private/{pod.person.id}"
    (sid,) = [h.id for h in await pod.memory_search("zorbulate", mode="keyword") if "zorbulate" in h.snippet]
    await pod.memory_delete_source(sid)

    hits = await pod.memory_search("zorbulate", mode="keyword")
    typed = pod.memory.typeahead("zorbul", scopes=[scope])
    left = files_holding(pod.home / "memory", b"zorbulate")
    assert (hits, typed, left) == ([], [], []), (
        f"search: {[(h.title, h.snippet) for h in hits]}\ntypeahead: {[h.title for h in typed]}\nfiles: {left}")
    # the other note is found by its own words, titled by them
    [meter] = await pod.memory_search("gas meter reading", mode="keyword")
    assert meter.title.startswith("The gas meter reading is due next Monday")
    # Bob's notes keep the title he gave his conversation, and Alice's delete took none of them
    bobs = await as_bob.memory_search("boiler service Friday", mode="keyword")
    assert bobs and {h.title for h in bobs} == {"Boiler"}


async def test_the_summary_written_again_without_the_deleted_message_does_not_name_it(pod, script) -> None:
    """Deleting a message's note deletes the summaries that read it; the next run writes them again, never reading
    a message whose own note they deleted: they were titled with that message's words all the same."""
    from runtime_host.memory_jobs import SUMMARY_EVERY

    script([Text("Noted.")], repeat_last=True)
    inst = pod.find_agent("helper")[0]
    conv = pod.store.create_conversation(inst.id)
    for i in range(SUMMARY_EVERY // 2):
        turn = pod.store.create_turn(conv.id, inst.id)
        pod.store.add_message(conv.id, "user", FIRST if i == 0 else f"The boiler check number {i} went fine today.",
                              turn_id=turn.id)
        pod.store.add_message(conv.id, "assistant", "Noted.", turn_id=turn.id)
    assert (await pod.memory_produce())[0]["summaries"] == 1
    [sid] = [h.id for h in await pod.memory_search("zorbulate", mode="keyword", k=50)
             if "zorbulate" in h.snippet and not h.snippet.startswith("Summary")]
    await pod.memory_delete_source(sid)
    await pod.memory_produce()  # the summary is written again without the deleted message
    summaries = [r for r in pod.memory.catalog.query("SELECT id, item_key FROM sources") if r[1].startswith("summary-")]
    assert summaries, "the summary was written again"
    texts = [pod.memory.get_source(r[0]).markdown for r in summaries]
    assert not [t for t in texts if "zorbulate" in t], [ln for t in texts for ln in t.splitlines() if "zorbulate" in ln]
    assert all("Summary of the conversation with helper" in t for t in texts)  # named by its agent instead
    assert files_holding(pod.home / "memory", b"zorbulate") == []


async def _edit_first_message(pod, script, text: str = NEW) -> str:
    script([Text("Noted.")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", OLD), 30)
    assert r.ok
    conv = r.conversation_id
    title = pod.store.get_conversation(conv).title
    assert "zorbulate" in title and "4111" not in title, title  # redacted, then cut
    await pod.memory_produce()
    first = pod.store.list_messages(conv)[0]
    run = await pod.answer_again(conv, first.id, text)
    assert (await asyncio.wait_for(run.future, 30)).ok
    assert [m.content for m in pod.store.list_messages(conv)] == [text, "Noted."]
    await pod.memory_produce()
    return conv


async def test_edited_away_words_do_not_return_to_memory_or_the_title(pod, script) -> None:
    _bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake", system="You are a helpful test agent.")
    await _bob_renamed_chat(as_bob)
    conv = await _edit_first_message(pod, script)
    assert pod.store.get_conversation(conv).title == NEW  # made again from the message as it is now
    hits = await pod.memory_search("zorbulate", mode="keyword")
    assert hits == [], [(h.title, h.snippet) for h in hits]
    assert [h.title for h in await pod.memory_search("bank transfer", mode="keyword")] == [NEW]
    await as_bob.memory_produce()
    assert {h.title for h in await as_bob.memory_search("boiler service Friday", mode="keyword")} == {"Boiler"}


async def test_a_card_cut_by_the_title_is_stored_nowhere(pod, script) -> None:
    await _edit_first_message(pod, script)
    assert files_holding(pod.home / "memory", b"4111 1111 1111 11") == []
    assert files_holding(pod.home / "memory", b"zorbulate") == []


async def test_a_branch_is_titled_by_its_own_first_message(pod, script) -> None:
    """Editing the first message of a longer conversation continues in a branch: its title was the old text's,
    "(branch)" added; it is made from the branch's own first message."""
    script([Text("Noted.")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", OLD), 30)
    conv = r.conversation_id
    assert (await asyncio.wait_for(pod.chat("helper", "And the boiler next week.", conversation_id=conv), 30)).ok
    first = pod.store.list_messages(conv)[0]
    run = await pod.answer_again(conv, first.id, NEW)
    done = await asyncio.wait_for(run.future, 30)
    assert done.ok
    branch = pod.store.get_conversation(done.conversation_id)
    assert branch.id != conv and branch.title == f"{NEW} (branch)"
    # a branch that copies the first message is titled by it, redacted
    copy = pod.store.get_conversation(_branch(pod, conv, first.id))
    assert copy.title.endswith(" (branch)") and "4111" not in copy.title and "zorbulate" in copy.title
    # a title the person gave is kept, with the mark
    pod.rename_conversation(conv, "Plumber")
    given = pod.store.get_conversation(_branch(pod, conv, first.id))
    assert given.title == "Plumber (branch)"


def _branch(pod, conversation_id: str, message_id: str) -> str:
    from runtime_host import conversations

    return conversations.branch(pod.pod.for_person(pod.person.id), conversation_id, message_id)


def test_titles_older_hearths_made_are_made_again_redacted_once(tmp_path: Path) -> None:
    """Older pod.db files hold titles made from the first message unredacted, cut inside a card: the upgrade makes
    them again (redacted, then cut) and marks them made; a title the person gave stays as it was."""
    from runtime_host.store import TITLE_GIVEN, TITLE_MADE, TITLE_MADE_BRANCH, Store

    path = tmp_path / "pod.db"
    s = Store(path)
    person = s.default_person()
    inst = s.add_agent(person.id, "helper", provider=None, model=None, system="")
    made, renamed, branched = (s.create_conversation(inst.id) for _ in range(3))
    for conv in (made, renamed, branched):
        s.add_message(conv.id, "user", OLD)
    s.close()
    db = sqlite3.connect(path)  # as an older Hearth left it: no record of how, the title cut from the raw text
    db.execute("DELETE FROM schema_migrations WHERE name = '0020_conversation_title_auto'")
    db.execute("ALTER TABLE conversation DROP COLUMN title_auto")
    for conv, title in ((made, OLD[:60]), (renamed, "Plumber"), (branched, f"{OLD[:60]} (branch)")):
        db.execute("UPDATE conversation SET title = ? WHERE id = ?", (title, conv.id))
    db.commit()
    db.close()

    s = Store(path)
    got = {c.id: (c.title, c.title_auto) for c in s.list_conversations(inst.id)}
    s.close()
    assert got[renamed.id] == ("Plumber", TITLE_GIVEN)
    assert got[made.id][1] == TITLE_MADE and got[branched.id][1] == TITLE_MADE_BRANCH
    assert got[branched.id][0] == got[made.id][0] + " (branch)"
    assert "4111" not in got[made.id][0] and got[made.id][0].startswith("Pay the zorbulate plumber for it, my card: ")


def test_the_upgrade_redacts_only_the_start_of_a_long_first_message(tmp_path: Path, monkeypatch) -> None:
    """2,000 old conversations whose first message is a 3 KB paste held the first start after the upgrade 6.5–13 s:
    each whole first message was redacted for the 60 characters of its title (bench-sized; here what the redactor
    is given). The redactor reads a first message's start alone (TITLE_READ characters after its leading blank
    lines), still whole enough that a card wrapped onto its second line is found."""
    import runtime_host.safety.policy as policy
    from runtime_host.store import TITLE_MADE, TITLE_READ, Store

    path = tmp_path / "pod.db"
    s = Store(path)
    inst = s.add_agent(s.default_person().id, "helper", provider=None, model=None, system="")
    paste = "\n\n  Pay the plumber by card 4111 1111\n1111 1111 today please. " + "The garden notes go on. " * 40_000
    convs = [s.create_conversation(inst.id) for _ in range(3)]
    for conv in convs:
        s.add_message(conv.id, "user", paste)
    s.close()
    db = sqlite3.connect(path)  # as an older Hearth left it
    db.execute("DELETE FROM schema_migrations WHERE name = '0020_conversation_title_auto'")
    db.execute("ALTER TABLE conversation DROP COLUMN title_auto")
    db.execute("UPDATE conversation SET title = ?", (paste.strip().splitlines()[0][:60],))
    db.commit()
    db.close()
    read: list[int] = []
    decide = policy.decide
    monkeypatch.setattr(policy, "decide", lambda kind, text, *a, **kw: read.append(len(text)) or decide(kind, text, *a,
                                                                                                         **kw))
    s = Store(path)
    got = [(c.title, c.title_auto) for c in s.list_conversations(inst.id)]
    s.close()
    assert len(read) == 3 and max(read) <= TITLE_READ, read  # not the 960,000 characters of each paste
    assert got == [("Pay the plumber by card [CARD_1] today please. The garden no", TITLE_MADE)] * 3, got
