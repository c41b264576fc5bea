"""A mail rule of one person hands mail to their agent with their own key, whoever used Hearth last, and
the other person sees neither the mail's turn nor its cards (real Dovecot and aiosmtpd on loopback)."""

from __future__ import annotations

import asyncio

from tests.helpers.fake_model import Text
from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
from tests.people.conftest import BOB_KEY, ME_KEY, keys_sent

RULES = [{"id": "boss", "name": "From the boss", "when": [{"field": "from", "op": "contains", "value": "boss@"}],
          "then": [{"action": "hand", "agent": "helper", "prompt": "Summarise this mail for me."}]}]


async def test_a_mail_rule_runs_with_its_owners_key_whoever_acted_last(two, fake_model, script) -> None:
    me, bob = two
    script([Text("Summary: the report is due.")], repeat_last=True)
    d = Dovecot({"bob": "secret"}).start()
    s = SmtpSink().start()
    try:
        acct = bob.mail.add_account(
            bob.person_id, "bob@example.org",
            imap={"host": "127.0.0.1", "port": d.port, "username": "bob", "security": "none", "timeout_s": 10},
            smtp={"host": "127.0.0.1", "port": s.port, "security": "none"},
            password="secret", rules=RULES, start_at="all")
        assert (await asyncio.wait_for(me.chat("helper", "Me was here last"), 30)).ok  # Me acted last
        d.deliver(make_mail("Q3 report", "The Q3 report is due on Friday.", sender="The Boss <boss@example.org>"), user="bob")
        finished = asyncio.Event()
        bob.subscribe(lambda e: finished.set() if e["type"] == "turn.finished" and e.get("origin") == "mail" else None)
        await bob.mail.poll(acct.id)
        await asyncio.wait_for(finished.wait(), 30)
    finally:
        s.stop()
        d.stop()
    assert keys_sent(fake_model, "Q3 report") == {f"Bearer {BOB_KEY}"}  # never Me's key of the same name
    assert f"Bearer {ME_KEY}" in keys_sent(fake_model, "Me was here last")
    mine = [t for t in me.list_conversations("helper")]
    assert not any("Q3" in (c.get("title") or "") for c in mine)
    assert me.mail.cards(me.person_id) == []
