"""The channel tables: the migration runs once (alone or from the store's list), one-time codes,
offsets that only move forward, handled updates never queued twice, and the card compare-and-set."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from runtime_host.channels.store import MIGRATION, MIGRATION_NAME, ChannelStore, LinkCodeError


@pytest.fixture
def store(tmp_path: Path) -> ChannelStore:
    return ChannelStore.open(tmp_path / "pod.db")


def test_migration_applies_once_and_fits_the_store_list(tmp_path: Path) -> None:
    from runtime_host.store import Store

    s = Store(tmp_path / "pod.db")
    cs = ChannelStore(s.engine)
    assert MIGRATION_NAME in s.applied_migrations()
    assert cs.ensure_schema() is False  # already there
    assert MIGRATION[0] == "0006_channels" and all(isinstance(x, str) for x in MIGRATION[1])
    s.close()


def test_link_codes_are_one_time_and_expire(store: ChannelStore) -> None:
    code = store.create_link_code("telegram", "p1")
    link = store.redeem_link_code("telegram", code.lower(), chat_id=5, user_id=5, default_agent="helper")
    assert (link.person_id, link.agent) == ("p1", "helper")
    with pytest.raises(LinkCodeError, match="already used"):
        store.redeem_link_code("telegram", code, chat_id=6, user_id=6)
    old = store.create_link_code("telegram", "p1", ttl_s=-1)
    with pytest.raises(LinkCodeError, match="expired"):
        store.redeem_link_code("telegram", old, chat_id=6, user_id=6)
    other = store.create_link_code("mail", "p1")
    with pytest.raises(LinkCodeError, match="not valid"):  # a code is for one channel only
        store.redeem_link_code("telegram", other, chat_id=6, user_id=6)
    with store.engine.connect() as conn:  # only hashes are kept
        rows = conn.exec_driver_sql("SELECT code_hash FROM channel_link_code").all()
    assert all(code not in r[0] and len(r[0]) == 64 for r in rows)


def test_concurrent_redemptions_link_once(store: ChannelStore) -> None:
    code = store.create_link_code("telegram", "p1")
    wins: list[int] = []

    def redeem(uid: int) -> None:
        try:
            store.redeem_link_code("telegram", code, chat_id=uid, user_id=uid)
            wins.append(uid)
        except LinkCodeError:
            pass

    threads = [threading.Thread(target=redeem, args=(i,)) for i in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and [lk.chat_id for lk in store.links("telegram")] == wins


def test_offsets_only_move_forward_and_handled_updates_queue_once(store: ChannelStore) -> None:
    assert store.get_offset("telegram") == 0
    items = store.finish_update("telegram", 10, 5, [{"text": "a"}, {"text": "b"}])
    assert [i.body["text"] for i in items] == ["a", "b"]
    assert store.finish_update("telegram", 10, 5, [{"text": "a"}]) == []  # seen again after a crash: nothing new
    assert store.is_handled("telegram", 10)
    store.commit_offset("telegram", 11)
    store.commit_offset("telegram", 7)
    assert store.get_offset("telegram") == 11
    assert not store.is_handled("telegram", 10)  # marks below the offset are forgotten
    assert [i.body["text"] for i in store.pending_outbox("telegram")] == ["a", "b"]
    store.mark_retry(items[0], 60)
    assert [i.body["text"] for i in store.pending_outbox("telegram")] == ["b"]
    store.mark_sent(items[1], 99)
    assert store.pending_outbox("telegram") == []


def test_card_decided_once(store: ChannelStore) -> None:
    card = store.open_card("p1", "send", "Send mail")
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def decide(i: int) -> None:
        barrier.wait()
        results.append(store.decide_card(card.card_id, i % 2 == 0, f"d{i}"))

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True]
    final = store.get_card(card.card_id)
    assert final is not None and not final.pending and final.decided_by is not None
    assert store.decide_card("no-such-card", True, "app") is False


def test_sent_rows_keep_no_words_and_a_deleted_conversation_takes_its_chats_waiting_answers(
        store: ChannelStore) -> None:
    """A sent (or given up) row is never sent again and keeps no text; deleting a chat's conversation drops that
    chat's waiting answers and its mapping, keeps its waiting cards, and leaves every other chat alone."""
    from sqlalchemy import text

    def bodies() -> dict[int, list[str]]:
        with store.engine.connect() as c:
            out: dict[int, list[str]] = {}
            for chat, body in c.execute(text("SELECT chat_id, body FROM channel_outbox ORDER BY created_at, part")):
                out.setdefault(int(chat), []).append(body)
            return out

    store.set_conversation("telegram:5", "helper", "conv-alice")
    store.set_conversation("telegram:6", "helper", "conv-bob")
    sent_a, failed_a = store.finish_update("telegram", 1, 5, [{"text": "alice sent"}, {"text": "alice failed"}])
    store.finish_update("telegram", 2, 5, [{"text": "alice waiting"}])
    store.queue_messages("telegram", 5, [{"text": "alice card"}], card_id="card1")
    (sent_b,) = store.finish_update("telegram", 3, 6, [{"text": "bob sent"}])
    store.finish_update("telegram", 4, 6, [{"text": "bob waiting"}])
    store.mark_sent(sent_a, 10)
    store.mark_failed(failed_a, "Forbidden: bot was blocked by the user")
    store.mark_sent(sent_b, 11)
    assert not any("sent" in b or "failed" in b for bs in bodies().values() for b in bs)
    assert store.failed_outbox("telegram") == [(5, "Forbidden: bot was blocked by the user")]
    assert store.finish_update("telegram", 1, 5, [{"text": "alice sent"}]) == []  # still answered only once

    store.forget_conversations(["conv-alice"])
    assert store.conversation_for("telegram:5", "helper") is None
    assert store.conversation_for("telegram:6", "helper") == "conv-bob"
    left = bodies()
    assert not any("alice waiting" in b for b in left[5]) and any("alice card" in b for b in left[5])
    assert any("bob waiting" in b for b in left[6])
    assert [i.body["text"] for i in store.pending_outbox("telegram")] == ["alice card", "bob waiting"]
