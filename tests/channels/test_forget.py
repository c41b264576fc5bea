"""A Telegram chat deleted in the app (Delete and forget, or deleting its agent) leaves its words in no file of
Hearth's folder: the agent's answers and a voice note's echoed transcript were kept in pod.db's channel outbox
after they were sent. Another person's chat with the same bot stays as it was."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace
from typing import Any

import pytest

from runtime_host.channels.podport import PodChannelPort
from runtime_host.channels.telegram import CHANNEL
from tests.channels.conftest import OWNER, ChannelFactory, link_owner, sent
from tests.helpers.fake_model import Text
from tests.helpers.fake_telegram import FakeTelegram
from tests.integration.test_memory_pod import bob_with_his_own_provider, files_holding

BOB_TG = 515151


class FakeSpeech:
    """Hears the same words in every voice note."""

    async def atranscribe(self, data: bytes) -> Any:
        return SimpleNamespace(text="my gate code is quokka fifty five")

    def close(self) -> None:
        pass


def outbox_bodies(home: Any) -> list[str]:
    db = sqlite3.connect(home / "pod.db")
    try:
        return [r[0] for r in db.execute("SELECT body FROM channel_outbox")]
    finally:
        db.close()


@pytest.mark.parametrize("how", ["delete and forget", "delete agent"])
async def test_a_deleted_telegram_conversation_leaves_no_words_and_another_persons_chat_stays(
        pod: Any, tg: FakeTelegram, make_channel: ChannelFactory, script: Any, how: str) -> None:
    _bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.add_agent("helper", provider="fake")
    p = PodChannelPort(pod.pod, speech=FakeSpeech())
    ch = make_channel(p)
    await ch.start()
    await link_owner(ch, tg, pod.person.id)
    await link_owner(ch, tg, as_bob.person_id, user_id=BOB_TG)
    script([Text("Noted: your locker code is wombatcode 7731."), Text("Noted the gate."), Text("Noted, Bob.")],
           repeat_last=True)
    tg.send_text(OWNER, "My locker code is wombatcode 7731, please remember it.")
    await sent(tg, OWNER, 2)
    tg.send_voice(OWNER, b"OggS" + b"\0" * 64, duration=2)
    await sent(tg, OWNER, 4)  # the transcript echoed back, then the answer
    tg.send_text(BOB_TG, "Bob here: my allotment is plot ibisword 12.")
    await sent(tg, BOB_TG, 2)
    key = f"{CHANNEL}:{OWNER}"
    conv = p.store.conversation_for(key, "helper")
    bobs = p.store.conversation_for(f"{CHANNEL}:{BOB_TG}", "helper")
    assert conv and bobs and conv != bobs
    if how == "delete and forget":
        await pod.memory_produce()
        assert await pod.memory_search("wombatcode", mode="keyword")
        await pod.delete_conversation_and_forget(conv)
        assert await pod.memory_search("wombatcode", mode="keyword") == []
    else:
        await pod.delete_agent("helper")
    assert not [b for b in outbox_bodies(pod.home) if "wombatcode" in b or "quokka" in b]
    assert files_holding(pod.home, "wombatcode") == []
    assert files_holding(pod.home, "quokka") == []
    assert p.store.conversation_for(key, "helper") is None
    # Bob's chat goes on in the same conversation, his words still there.
    assert p.store.conversation_for(f"{CHANNEL}:{BOB_TG}", "helper") == bobs
    assert "ibisword" in " ".join(m.content for m in as_bob.messages(bobs))
    tg.send_text(BOB_TG, "And the shed key is under the pot.")
    await sent(tg, BOB_TG, 3)
    assert p.store.conversation_for(f"{CHANNEL}:{BOB_TG}", "helper") == bobs
    assert len(as_bob.messages(bobs)) == 4
    p.close()


async def test_deleting_a_scheduled_runs_conversation_drops_its_result_not_pushed_yet(pod, tg, port, make_channel,
                                                                                      script) -> None:
    """The 7:00 run's result waits in the outbox while Telegram cannot be reached; Alice deletes that run's
    conversation in the app. Before, the pushed result (queued with no conversation) stayed in pod.db and was sent to
    her phone once Telegram was back (README: deleting a conversation drops its answers not sent yet)."""
    import asyncio
    from datetime import UTC, datetime

    from sqlalchemy import text

    from runtime_host.channels.hub import ChannelHub

    def waiting() -> list[str]:
        db = sqlite3.connect(pod.home / "pod.db")
        try:
            return [r[0] for r in db.execute("SELECT body FROM channel_outbox WHERE sent_at IS NULL") if "biopsy" in r[0]]
        finally:
            db.close()

    script([Text("Your biopsy results appointment with Dr Lee is at 15:00.")], repeat_last=True)
    ch = make_channel()
    hub = ChannelHub(port, [ch])
    await hub.start()
    try:
        await link_owner(ch, tg, pod.person.id)
        before = len(tg.sent_to(OWNER))
        tg.down()  # the network drops
        pod.add_schedule("helper", "0 7 * * *", "Remind me of today's appointments", tz="UTC", name="Appointments")
        with pod.store.engine.begin() as c:
            c.execute(text("UPDATE schedules SET last_checked = :t, created_at = :t WHERE person_id != 'pod'"),
                      {"t": datetime(2030, 1, 1, 6, 0, tzinfo=UTC).timestamp()})
        await pod.tick(datetime(2030, 1, 1, 7, 0, 20, tzinfo=UTC))
        for run in list(pod.turn_driver.active.values()):
            await asyncio.wait_for(run.future, 30)
        for _ in range(50):
            if waiting():
                break
            await asyncio.sleep(0.1)
        assert waiting(), "the result was not queued for the phone"
        [row] = pod.schedule_ledger()
        await pod.delete_conversation(row["conversation_id"])
        left = waiting()
        tg.up()
        await asyncio.sleep(4)
        pushed = [m.text for m in tg.sent_to(OWNER)[before:] if "biopsy" in m.text]
        assert not left and not pushed, f"after the delete, outbox: {left}; sent to the phone: {pushed}"
    finally:
        await hub.stop()
