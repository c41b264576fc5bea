"""An ingest model's answer of no page at all: the notes wait for a later (stronger) model, and a batch that never
becomes a page stops asking the model at every run after NO_PAGE_TRIES answers of none."""

from __future__ import annotations

import asyncio

from tests.helpers.fake_model import Text


async def test_notes_no_model_writes_a_page_of_leave_the_inbox_after_the_last_try_and_the_person_is_told(
        pod, fake_model) -> None:
    """Before, one answer of "[]" took every note out of the inbox for good. A note that waits instead must not
    wait for ever either: a model that never writes a page of it was asked again every 30 minutes, without end."""
    from wiki_engine.pipeline import NO_PAGE_TRIES

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
