"""An ingest model's answer of no page at all: the notes wait for a later (stronger) model, and a batch that never
becomes a page stops asking the model at every run after NO_PAGE_TRIES answers of none."""

from __future__ import annotations

import asyncio

from tests.helpers.fake_model import Text
from wiki_engine.pipeline import NO_PAGE_TRIES


async def test_notes_no_model_writes_a_page_of_leave_the_inbox_after_the_last_try_and_the_person_is_told(
        pod, fake_model) -> None:
    """Before, one answer of "[]" took every note out of the inbox for good. A note that waits instead must not
    wait for ever either: a model that never writes a page of it was asked again every 30 minutes, without end."""
    scope = f"private/{pod.person.id}"
    await pod.in_memory_thread(lambda: [pod.memory.add_source(t, scope=scope) for t in (
        "My sister Clara's birthday is on 3 June.", "The dentist is Dr Okafor, Tuesdays at 9.")])
    pod.set_role_model("ingest", "fake/fake-1")
    asked: list[str] = []
    fake_model.script = lambda req: (asked.append(req.last_user), Text("[]"))[1]
    for run in range(1, NO_PAGE_TRIES):
        out = await asyncio.wait_for(pod.memory_ingest(), 60)
        assert (out["left_in_inbox"], out["consumed"], len(asked)) == (2, 0, run), out
        assert "fake/fake-1 wrote no page from 2 note(s): they wait in the inbox" in out["message"], out
    out = await asyncio.wait_for(pod.memory_ingest(), 60)
    assert out["left_in_inbox"] == 0 and len(asked) == NO_PAGE_TRIES, out
    assert f"2 note(s) left the inbox unwritten: fake/fake-1 answered with no page for them {NO_PAGE_TRIES} times" \
        in out["message"], out
    assert "wrote no page from" not in out["message"], out
    out = await asyncio.wait_for(pod.memory_ingest(), 60)  # the model is not asked again about them
    assert len(asked) == NO_PAGE_TRIES and out["left_in_inbox"] == 0, out
    hits = await pod.memory_search("dentist Okafor", mode="keyword")
    assert hits, "a note left unwritten is still in memory"


def _writes_every_note(req) -> Text:
    """A stronger writer: one page of each note it is shown (its label, S1, S2 ...), in the scope it is told."""
    import json
    import re

    labels = re.findall(r"\b(S\d+)\b", req.last_user or "")
    scope = re.search(r"\b((?:private|agent)/[\w/-]+|public)\b", req.last_user or "")
    return Text(json.dumps([{"title": f"Note {label}", "scope": scope.group(1) if scope else "public",
                             "category": "family", "body": f"- what {label} says [1]", "citations": {"1": label}}
                            for label in dict.fromkeys(labels)]))


async def _given_up(person, fake_model, scope: str, texts: tuple[str, ...]) -> None:
    """``person``'s notes of ``scope``, each answered with no page NO_PAGE_TRIES times by their Ingest now."""
    await person.in_memory_thread(lambda: [person.memory.add_source(t, scope=scope) for t in texts])
    fake_model.script = lambda req: Text("[]")
    for _ in range(NO_PAGE_TRIES):
        out = await asyncio.wait_for(person.memory_ingest(), 60)
    assert out["left_in_inbox"] == 0 and "left the inbox unwritten" in out["message"], out


async def test_notes_left_unwritten_are_written_once_the_person_chooses_another_ingest_model(
        pod, fake_model, home, secure_keyring) -> None:
    """Notes a weak ingest model answered no page for three times left the inbox for good: the person was told to
    choose a stronger model, chose one (Settings → Models, or `models set ingest` in a terminal), and it never wrote
    them. Choosing another model now puts that person's notes back in the inbox, and the next ingest writes them;
    another person's stay as they were until they choose one themselves. The timer's run, which tells no one,
    leaves the words in Activity."""
    from tests.integration.test_cli import cli
    from tests.integration.test_memory_pod import bob_with_his_own_provider

    alice_scope = f"private/{pod.person.id}"
    bob, as_bob = bob_with_his_own_provider(pod)
    bob_scope = f"private/{bob['id']}"
    pod.set_role_model("ingest", "fake/fake-1")
    as_bob.set_role_model("ingest", "fake/fake-1")
    await _given_up(pod, fake_model, alice_scope, ("My sister Clara's birthday is on 3 June.",
                                                   "The dentist is Dr Okafor, Tuesdays at 9."))
    await _given_up(as_bob, fake_model, bob_scope, ("Bob's allotment is plot 42.",))
    waiting = lambda scope: pod.in_memory_thread(lambda: pod.memory.inbox_count([scope]))  # noqa: E731

    # Alice chooses another model in a terminal (another process, its memory not open) while her window runs
    r = cli(home, "models", "set", "ingest", "fake/fake-2")
    assert r.returncode == 0, r.stderr
    assert (await waiting(alice_scope), await waiting(bob_scope)) == (2, 0)
    fake_model.script = _writes_every_note
    out = await asyncio.wait_for(pod.memory_ingest(), 60)
    assert out["consumed"] == 2 and await waiting(alice_scope) == 0, out
    pages = await pod.in_memory_thread(lambda: pod.memory.list_pages(alice_scope)[0])
    assert len(pages) == 2, out
    assert await waiting(bob_scope) == 0  # hers wrote none of Bob's, and his stay left unwritten

    as_bob.set_role_model("ingest", "fake/fake-1")  # the same model again: nothing changes
    assert await waiting(bob_scope) == 0
    as_bob.set_role_model("ingest", "fake/fake-2")  # his own choice, in his window (memory open)
    assert await waiting(bob_scope) == 1

    # the timer's run gives up on a note of Alice's: Activity says so in words, with what to do
    fake_model.script = lambda req: Text("[]")
    await pod.in_memory_thread(lambda: pod.memory.add_source("The boiler was serviced in March.", scope=alice_scope))
    for _ in range(NO_PAGE_TRIES):
        await asyncio.wait_for(pod.pod.memory_ingest(), 60)
    said = [e["summary"] for e in pod.audit_log(kind="memory") if e["action"] == "left_unwritten"]
    assert said and "1 note(s) left the inbox unwritten" in said[0], said
    assert "choose another model" in said[0] and "Settings → Models" in said[0], said

