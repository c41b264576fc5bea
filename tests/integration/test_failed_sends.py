"""Approved sends that fail stay visible with the reason and a Retry (Pod, CLI, phone), against the real
loopback SMTP server stopped and then started again; a retry sends at most once in all."""

from __future__ import annotations

import asyncio
import email
import email.policy

from runtime_host.channelhost import ChannelsHost
from tests.channels.conftest import OWNER, link_owner, sent, until
from tests.helpers.fake_model import Text
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
from tests.integration.test_cli import cli
from tests.integration.test_mail_pod import add_inbox


async def drafted_card(pod, d: Dovecot, s: SmtpSink) -> dict:
    acct = add_inbox(pod, d, s)
    d.deliver(make_mail("Lunch next week?", "Lunch on Tuesday?", sender="Bob <bob@example.org>"))
    await asyncio.wait_for(pod.mail.poll(acct), 60)
    (card,) = pod.mail.cards(pod.person.id)
    return card


async def test_a_failed_send_stays_with_the_reason_and_a_retry_sends_it_once(pod, script, home) -> None:
    script([Text("Tuesday works. — Alice")], repeat_last=True)
    d, s = Dovecot({"alice": "secret"}).start(), SmtpSink().start()
    try:
        card = await drafted_card(pod, d, s)
        s.stop()  # the mail server is down when the person approves
        out = await pod.mail.approve(card["id"], pod.person.id)
        assert out["state"] == "failed" and "cannot reach the mail server" in out["error"]
        (still,) = pod.mail.cards(pod.person.id)  # it did not vanish: it waits with the reason
        assert still["id"] == card["id"] and still["state"] == "failed" and "cannot reach" in still["error"]
        # the CLI lists it with the reason and how to retry
        listed = cli(home, "cards")
        assert listed.returncode == 0 and "NOT SENT" in listed.stdout and f"card retry {card['id']}" in listed.stdout
        retried = cli(home, "card", "retry", card["id"])  # still down: says so, exit 1
        assert retried.returncode == 1 and "failed" in retried.stdout and "cannot reach" in retried.stdout
        s.start()  # the server is back, on the same address
        retried = cli(home, "card", "retry", card["id"])
        assert retried.returncode == 0 and retried.stdout.strip() == f"Card {card['id']}: sent"
        assert len(s.messages) == 1
        assert "Tuesday works." in str(email.message_from_bytes(s.messages[0].data).get_payload())
        assert pod.mail.cards(pod.person.id) == []
        again = cli(home, "card", "retry", card["id"])
        assert again.returncode == 2 and "nothing to retry" in again.stderr
        assert len(s.messages) == 1
    finally:
        s.stop()
        d.stop()


async def test_a_retry_never_sends_what_the_sent_mailbox_already_has(pod, script) -> None:
    from sqlalchemy import text

    script([Text("See you then.")], repeat_last=True)
    d, s = Dovecot({"alice": "secret"}).start(), SmtpSink().start()
    try:
        card = await drafted_card(pod, d, s)
        assert (await pod.mail.approve(card["id"], pod.person.id))["state"] == "sent"
        assert d.count("Sent") == 1
        # As after a send whose outcome was unknown: marked failed although the server took it.
        with pod.store.engine.begin() as c:
            c.execute(text("UPDATE outbox_cards SET state = 'failed', error = 'Not sure it was sent' WHERE id = :i"),
                      {"i": card["id"]})
        out = await pod.mail.retry(card["id"], pod.person.id)
        assert out["state"] == "sent" and len(s.messages) == 1  # found by its Message-ID: not sent twice
    finally:
        s.stop()
        d.stop()


async def test_the_phone_shows_a_failed_send_with_a_retry_button(pod, script) -> None:
    script([Text("Friday works!")], repeat_last=True)
    tg, d, s = FakeTelegram().start(), Dovecot({"alice": "secret"}).start(), SmtpSink().start()
    pod._channels = ChannelsHost(pod.pod, telegram_base_url=tg.base_url, poll_timeout_s=1.0, http_grace_s=1.0,
                                 backoff_s=(0.05, 0.4))
    try:
        pod.channels.save_telegram_token(pod.person_id, tg.token)
        assert await pod.channels.start()
        await link_owner(pod.channels.telegram, tg, pod.person.id)
        card = await drafted_card(pod, d, s)
        shown = (await sent(tg, OWNER, 2))[-1]
        s.stop()
        tg.press(OWNER, shown, f"c:{card['id']}:a")  # approved on the phone while SMTP is down
        failed = (await sent(tg, OWNER, 3, timeout=30))[-1]
        assert failed.text.startswith("⚠️ Not sent") and "cannot reach the mail server" in failed.text
        assert [b["text"] for b in failed.buttons()] == ["🔁 Retry"]
        assert pod.mail.cards(pod.person.id)[0]["state"] == "failed"  # and the app still shows it
        s.start()
        tg.press(OWNER, failed, f"c:{card['id']}:t")
        await until(tg, lambda: len(s.messages) == 1, "the retried mail to be sent")
        await until(tg, lambda: any(a["text"] == "Sent." for a in tg.callback_answers), "the phone to be told")
        tg.press(OWNER, failed, f"c:{card['id']}:t")  # a second tap sends nothing more
        await until(tg, lambda: any("nothing to retry" in a["text"] for a in tg.callback_answers), "the answer")
        assert len(s.messages) == 1
    finally:
        await pod.channels.close()
        pod._channels = None
        s.stop()
        d.stop()
        tg.stop()


async def test_the_cli_lists_a_card_with_its_direction_characters_written_out_and_approve_sends_it_exactly(
        pod, script, home) -> None:
    """A stranger's subject "Lunch invoice \\u202efdp.exe" (and a model's reply holding direction marks) made `cards` print
    "Re: Lunch invoice fdp.exe" with the character dropped, while the mail sent kept it (and read "exe.pdf" where it is
    read); `cards --json` dropped it too. Now the list writes it out and says so, the JSON reads back exactly, and
    `card approve` sends the stored draft as it is."""
    import json

    reply = "Paid \u2067\u202e3ETON\u202c\u2069 in full."
    script([Text(reply)], repeat_last=True)
    d, s = Dovecot({"alice": "secret"}).start(), SmtpSink().start()
    try:
        acct = add_inbox(pod, d, s)
        d.deliver(make_mail("Lunch invoice \u202efdp.exe", "Please pay.", sender="Billing <billing@example.net>"))
        await asyncio.wait_for(pod.mail.poll(acct), 60)
        (card,) = pod.mail.cards(pod.person.id)
        assert card["subject"] == "Re: Lunch invoice \u202efdp.exe" and card["body"] == reply
        listed = cli(home, "cards")
        assert listed.returncode == 0 and "Re: Lunch invoice \\u202efdp.exe" in listed.stdout, listed.stdout
        assert "HIDDEN DIRECTION CHARACTERS in its subject, body" in listed.stdout, listed.stdout
        assert not [c for c in listed.stdout if "\u200e" <= c <= "\u200f" or "\u202a" <= c <= "\u202e"
                    or "\u2066" <= c <= "\u2069"]
        as_json = cli(home, "cards", "--json")
        assert "\u202e" not in as_json.stdout and [
            (c["subject"], c["body"]) for c in json.loads(as_json.stdout)] == [("Re: Lunch invoice \u202efdp.exe", reply)]
        assert cli(home, "card", "approve", card["id"]).returncode == 0
        sent = email.message_from_bytes(s.messages[0].data, policy=email.policy.default)
        assert (str(sent["Subject"]), sent.get_content().strip()) == ("Re: Lunch invoice \u202efdp.exe", reply)
    finally:
        s.stop()
        d.stop()
