"""Memory reads chat and mail in the order they were written (a number each gets as it is kept), not by the clock:
an upgrade carries the watermarks kept as a time and an id over to that order, reading nothing twice and skipping
nothing, each person's and each inbox's on its own."""

from __future__ import annotations

import asyncio
import time
import uuid

from sqlalchemy import text as sql

import runtime_host.store as store_module
from runtime_host.mail import ledger
from runtime_host.store import Store
from tests.integration.test_memory_pipeline import keeping_all_unless
from tests.integration.test_memory_pod import _say, bob_with_his_own_provider

SETTINGS = {"imap": {"host": "127.0.0.1", "port": 1, "username": "u", "security": "none"},
            "smtp": {"host": "127.0.0.1", "port": 1, "security": "none"}}


def _message(pod, conv, inst, text: str, at: float) -> str:
    """A chat line as the Hearth before the upgrade kept it (no number: its table had no column for one)."""
    turn = pod.store.create_turn(conv.id, inst.id)
    mid = uuid.uuid4().hex
    with pod.store.engine.begin() as c:
        c.execute(sql("INSERT INTO message (id, conversation_id, turn_id, role, content, created_at) "
                      "VALUES (:i, :c, :t, 'user', :x, :a)"), {"i": mid, "c": conv.id, "t": turn.id, "x": text, "a": at})
    return mid


def _mail(pod, account_id: str, subject: str, body: str, at: float) -> str:
    """A mail as the Hearth before the upgrade kept it."""
    mid = uuid.uuid4().hex
    with pod.store.engine.begin() as c:
        c.execute(sql(
            "INSERT INTO mail_messages (id, account_id, mailbox, uidvalidity, uid, message_id, from_addr, to_addrs, "
            "subject, sent_date, size, body_text, headers, attachments, notes, matches, received_at) VALUES (:i, :a, "
            "'INBOX', 1, :u, :m, 'Shop <shop@example.org>', '[]', :s, NULL, 100, :b, '{}', '[]', '[]', '[]', :t)"),
            {"i": mid, "a": account_id, "u": int(at * 1000) % 2**31, "m": f"<{mid}@example.org>", "s": subject,
             "b": body, "t": at})
    return mid


async def test_an_upgrade_carries_each_watermark_over_reading_nothing_twice_and_skipping_nothing(
        home, fake_model, monkeypatch) -> None:
    """Before the upgrade, the person and Bob chatted and had mail, and memory had pulled some of it: its watermarks
    were a time and an id. The person's clock had run an hour ahead for their last two lines, which they delete after
    the upgrade, then go on chatting at the right time. The first run after the upgrade pulls exactly what was not
    pulled before: the person's new line (its time is behind their watermark's), Bob's second line (his watermark
    is behind the person's), the mail after each inbox's watermark; a second run pulls nothing."""
    import wiki_engine.catalog as catalog_module
    from runtime_host.pod import Pod

    with monkeypatch.context() as old:  # the schema of memory and of the store before this change
        old.setattr(store_module, "MIGRATIONS", [m for m in store_module.MIGRATIONS if m[0] != "0021_memory_order"])
        old.setattr(catalog_module, "MIGRATIONS", [m for m in catalog_module.MIGRATIONS
                                                   if m[0] != "0011_watermark_seq"])
        p = Pod(home).first_person()
        p.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
        p.add_agent("helper", provider="fake", system="You are a helpful test agent.")
        bob, as_bob = bob_with_his_own_provider(p)
        as_bob.add_agent("bobs", provider="fake")
        mine, his = p.find_agent("helper")[0], as_bob.find_agent("bobs")[0]
        me, scratch = p.store.create_conversation(mine.id, "Home"), p.store.create_conversation(mine.id, "Scratch")
        bobs = p.store.create_conversation(his.id, "Garden")
        t0 = time.time() - 3600
        a1 = _message(p, me, mine, "The window cleaner comes every second Friday of the month.", t0 + 1)
        b1 = _message(p, bobs, his, "My allotment is plot 42 at the Rosebank gardens.", t0 + 1.5)
        a2 = _message(p, me, mine, "The recycling bins go out on Tuesday evenings.", t0 + 2)
        b2 = _message(p, bobs, his, "The allotment committee meets on the first Monday of each month.", t0 + 2.5)
        a3 = _message(p, scratch, mine, "Scratch line one about the garden hose length.", t0 + 7200)  # an hour ahead
        a4 = _message(p, scratch, mine, "Scratch line two about the garden hose colour.", t0 + 7201)
        acct = p.mail.add_account(p.person_id, "me@example.org", password="secret", **SETTINGS)
        bob_acct = p.mail.add_account(bob["id"], "bob@example.org", password="secret", **SETTINGS)
        ma1 = _mail(p, acct.id, "Parcel one", "Your parcel number one arrives on Monday.", t0 + 1)
        mb1 = _mail(p, bob_acct.id, "Seeds", "Your seed order ships on Wednesday morning.", t0 + 1.5)
        ma2 = _mail(p, acct.id, "Parcel two", "Your parcel number two arrives on Tuesday.", t0 + 2)
        ma3 = _mail(p, acct.id, "Parcel three", "Your parcel number three arrives on Thursday.", t0 + 3)
        mine_scope, bobs_scope = f"private/{p.person_id}", f"private/{bob['id']}"

        def pulled_before() -> None:  # what memory had pulled: each origin's watermark, as a time and an id
            with p.memory.catalog.tx() as db:
                db.executemany("INSERT INTO watermarks (scope, origin, ts, item_key) VALUES (?,?,?,?)", [
                    (mine_scope, "chat", t0 + 7201, a4), (bobs_scope, "chat", t0 + 1.5, b1),
                    (mine_scope, f"mail:{acct.id}", t0 + 2, ma2)])

        await p.in_memory_thread(pulled_before)
        await asyncio.wait_for(p.close(), 20)

    p = Pod(home).first_person()  # the upgrade
    try:
        as_bob = p.pod.unlock("Bob")
        await p.delete_conversation(scratch.id)
        conv = p.store.create_conversation(mine.id, "Pool")
        _say(p, conv, mine, "My locker combination at the pool is the zorblat code 4471.")
        [a5] = [m.id for m in p.store.list_messages(conv.id) if m.role == "user"]
        reports = {r["scope"]: r for r in await p.pod.memory_produce()}
        assert reports[mine_scope]["mail"] == 1 and reports[bobs_scope]["mail"] == 1, reports

        def keys(scope: str) -> set[str]:
            return {r[0] for r in p.memory.catalog.query(
                "SELECT item_key FROM sources WHERE scope = ? UNION SELECT item_key FROM skips WHERE scope = ?",
                (scope, scope))}

        mine_read, bobs_read = await p.in_memory_thread(lambda: (keys(mine_scope), keys(bobs_scope)))
        said = {m.id for m in p.store.list_messages(conv.id)}  # the line and the agent's "Noted."
        assert mine_read == said | {ma3}, f"read twice: {mine_read & {a1, a2, ma1, ma2}}, skipped: {said - mine_read}"
        assert bobs_read == {b2, mb1}, f"Bob's: read twice {bobs_read & {b1}}, skipped {({b2, mb1}) - bobs_read}"
        assert a5 in mine_read and not {a3, a4} & mine_read
        again = await p.pod.memory_produce()
        assert [r["pulled"] for r in again] == [0, 0], again
        assert await p.memory_search("zorblat locker", mode="keyword")
        assert await as_bob.memory_search("allotment committee", mode="keyword")
    finally:
        await asyncio.wait_for(p.close(), 20)


def test_the_upgrade_numbers_what_was_kept_in_the_order_memory_read_it_on_every_backend(db_url, monkeypatch) -> None:
    """Migration 0021 on SQLite and PostgreSQL: messages and mail kept before are numbered by (time, id), a
    watermark kept as a time and an id is carried over among those alone, and what is kept after follows them
    whatever its time."""
    with monkeypatch.context() as old:
        old.setattr(store_module, "MIGRATIONS", [m for m in store_module.MIGRATIONS if m[0] != "0021_memory_order"])
        s = Store(db_url)
        person = s.default_person()
        inst = s.add_agent(person.id, "ada", provider=None, model=None, system="")
        conv = s.create_conversation(inst.id)
        with s.engine.begin() as c:
            for mid, at in (("m0", 50.0), ("m1", 10.0), ("m2", 30.0), ("m3", 30.0)):  # out of time order; two alike
                c.execute(sql("INSERT INTO message (id, conversation_id, role, content, created_at) VALUES "
                              "(:i, :c, 'user', 'x', :a)"), {"i": mid, "c": conv.id, "a": at})
            for mid, acct, at in (("x1", "A", 20.0), ("x2", "B", 5.0), ("x3", "A", 10.0)):
                c.execute(sql(
                    "INSERT INTO mail_messages (id, account_id, mailbox, uidvalidity, uid, from_addr, to_addrs, "
                    "subject, size, body_text, headers, attachments, notes, received_at) VALUES (:i, :a, 'INBOX', 1, "
                    ":u, 'f', '[]', 's', 1, 'b', '{}', '[]', '[]', :t)"), {"i": mid, "a": acct, "u": ord(mid[1]),
                                                                             "t": at})
        s.close()
    s = Store(db_url)
    with s.engine.connect() as c:
        seqs = dict(c.execute(sql("SELECT id, seq FROM message")).all())
        mail = dict(c.execute(sql("SELECT id, seq FROM mail_messages")).all())
    assert seqs == {"m1": 1, "m2": 2, "m3": 3, "m0": 4}, seqs  # (10), (30, m2), (30, m3), (50)
    assert mail == {"x2": 1, "x3": 2, "x1": 3}, mail
    assert s.carried_seq((30.0, "m2")) == 2 and s.carried_seq((5.0, "")) == 0 and s.carried_seq((99.0, "")) == 4
    assert ledger.carried_seq(s.engine, "A", (10.0, "x3")) == 2 and ledger.carried_seq(s.engine, "B", (10.0, "x3")) == 1
    new = s.add_message(conv.id, "user", "said after the upgrade")
    assert new.seq == 5 and s.carried_seq((1e12, "")) == 4  # not among what was read by time: it never was
    assert [m.id for m, _t, _i in s.messages_after([inst.id], 2, 10)] == ["m3", "m0", new.id]
    assert [r["id"] for r in ledger.kept_after(s.engine, "A", 2)] == ["x1"]
    s.close()


async def test_mail_kept_after_a_clock_that_ran_ahead_reaches_memory_and_bobs_inbox_goes_on_its_own(
        pod, fake_model, servers, monkeypatch) -> None:
    """Mail is read in the order it was kept too: the person's inbox was checked while the clock ran two hours ahead
    and after it was put right, and both mails reach memory. Bob's inbox has a place in that order of its own: his
    mail, kept before the person's second one and left for a later run (his model failed), is still pulled although
    the person's run went past its number."""
    from types import SimpleNamespace

    from tests.helpers.mailservers import make_mail
    from tests.integration.test_memory_pod import produced_for

    d, s = servers
    bob, as_bob = bob_with_his_own_provider(pod)
    as_bob.set_role_model("extraction", "fake/bob-model")
    bobs_model_fails = [False]

    fake_model.script = keeping_all_unless(bobs_model_fails)
    clock = [time.time() + 2 * 3600]
    monkeypatch.setattr(ledger, "time", SimpleNamespace(time=lambda: clock[0]))  # the mail ledger's clock
    imap = {"host": "127.0.0.1", "port": d.port, "security": "none", "timeout_s": 30}
    smtp = {"host": "127.0.0.1", "port": s.port, "security": "none"}
    mine = pod.mail.add_account(pod.person_id, "alice@example.org", imap={**imap, "username": "alice"}, smtp=smtp,
                                password="secret", rules=[], start_at="all")
    his = pod.mail.add_account(bob["id"], "bob@example.org", imap={**imap, "username": "bob"}, smtp=smtp,
                               password="bobsecret", rules=[], start_at="all")
    d.deliver(make_mail("Boiler", "The boiler engineer Kasimir Wendt comes on Friday.", sender="Jo <jo@example.org>"))
    await asyncio.wait_for(pod.mail.poll(mine.id), 60)
    assert (await pod.memory_produce())[0]["mail"] == 1
    clock[0] = time.time()  # NTP put the clock right
    bobs_model_fails[0] = True
    d.deliver(make_mail("Seeds", "Your quoxite seed order ships on Wednesday morning.", to="bob@example.org",
                        sender="Shop <shop@example.org>"), user="bob")
    await asyncio.wait_for(pod.mail.poll(his.id), 60)
    d.deliver(make_mail("Pool", "Your locker at the pool has the zorblat code 4471 from now on.",
                        sender="Pool <pool@example.org>"))
    await asyncio.wait_for(pod.mail.poll(mine.id), 60)
    bob_done = produced_for(pod, bob["id"])
    assert (await pod.memory_produce())[0]["mail"] == 1
    await asyncio.wait_for(bob_done.wait(), 30)  # his part failed: his mail waits for his next run
    bobs_model_fails[0] = False
    assert [r["mail"] for r in await as_bob.memory_produce()] == [1]
    assert await pod.memory_search("zorblat locker", mode="keyword")
    assert await as_bob.memory_search("quoxite seed order", mode="keyword")
    assert [r["mail"] for r in await pod.pod.memory_produce()] == [0, 0]  # nothing pulled twice


async def test_what_is_said_after_forgetting_while_the_clock_ran_ahead_reaches_memory(pod, monkeypatch) -> None:
    """The person pressed Forget everything about me while the machine's clock ran two hours ahead, then the clock
    was put right. Memory kept the time of the forget and took everything said before that time for forgotten:
    nothing they said over the next two hours was remembered. A forget keeps where chat and mail stood in the order
    they were written: what was said before it stays forgotten, what is said after is remembered."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 2 * 3600)  # the machine's clock, two hours ahead
    inst = pod.find_agent("helper")[0]
    _say(pod, pod.store.create_conversation(inst.id, "Before"), inst,
         "The boiler engineer is Kasimir Wendt from Lindenau.")
    assert (await pod.memory_produce())[0]["kept"] >= 1
    _say(pod, pod.store.create_conversation(inst.id, "Unread"), inst, "The spare key hangs behind the quoxite mirror.")
    await pod.memory_forget_me()  # the spare key line was said before it, never pulled: it stays forgotten too
    monkeypatch.undo()  # NTP put the clock right
    _say(pod, pod.store.create_conversation(inst.id, "After"), inst,
         "My locker combination at the pool is the zorblat code 4471.")
    await pod.memory_produce()
    assert await pod.memory_search("zorblat locker", mode="keyword"), "said after the forget: never remembered"
    assert not await pod.memory_search("Kasimir boiler", mode="keyword")
    assert not await pod.memory_search("spare key quoxite mirror", mode="keyword")
