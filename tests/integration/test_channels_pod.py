"""The phone and the app decide the same mail card once: approve on Telegram sends over SMTP once, and
the app is then told it was already approved (and the other way round)."""

from __future__ import annotations

import asyncio

import pytest

from runtime_host.channelhost import ChannelsHost
from runtime_host.store import StoreError
from tests.channels.conftest import OWNER, link_owner, sent, until
from tests.helpers.fake_model import Text
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail
from tests.integration.test_mail_pod import RULES


@pytest.fixture
def world(pod):
    tg = FakeTelegram().start()
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    pod._channels = ChannelsHost(pod.pod, telegram_base_url=tg.base_url, poll_timeout_s=1.0, http_grace_s=1.0,
                                 backoff_s=(0.05, 0.4))
    try:
        yield tg, d, s
    finally:
        s.stop()
        d.stop()
        tg.stop()


async def setup(pod, tg, d, s, mail=None):
    """The phone linked and Alice's inbox on the loopback servers, with one mail in (``mail``, else Bob's lunch
    question) that her rule drafts a reply to; the card it made."""
    pod.channels.save_telegram_token(pod.person_id, tg.token)
    assert await pod.channels.start()
    await link_owner(pod.channels.telegram, tg, pod.person.id)
    acct = pod.mail.add_account(
        pod.person.id, "alice@example.org",
        imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": s.port, "security": "none"}, password="secret", rules=RULES, start_at="all")
    d.deliver(mail or make_mail("Lunch on Friday?", "Lunch on Friday?", sender="Bob <bob@example.org>"))
    await pod.mail.poll(acct.id)
    (card,) = pod.mail.cards(pod.person.id)
    return card


async def test_approved_on_the_phone_sends_once_and_the_app_is_told(pod, script, world) -> None:
    tg, d, s = world
    script([Text("Friday works!")], repeat_last=True)
    card = await setup(pod, tg, d, s)
    shown = (await sent(tg, OWNER, 2))[-1]
    assert "Send mail to" in shown.text and "Friday works!" in shown.text
    tg.press(OWNER, shown, f"c:{card['id']}:a")
    await until(tg, lambda: len(s.messages) == 1, "the mail to be sent")
    await asyncio.sleep(0.2)
    assert pod.mail.cards(pod.person.id, state="sent")[0]["id"] == card["id"]
    with pytest.raises(StoreError, match="already approved on Telegram"):
        await pod.mail.approve(card["id"], pod.person.id)
    assert len(s.messages) == 1
    await pod.channels.close()
    pod._channels = None


async def test_rejected_in_the_app_is_not_sent_from_the_phone(pod, script, world) -> None:
    tg, d, s = world
    script([Text("Sure.")], repeat_last=True)
    card = await setup(pod, tg, d, s)
    shown = (await sent(tg, OWNER, 2))[-1]
    await pod.mail.reject(card["id"], pod.person.id)
    # the phone's buttons turn into the outcome: nothing left to approve there
    await until(tg, lambda: [b["text"] for b in tg.messages[(OWNER, shown.message_id)].buttons()]
                == ["✖ Rejected in the app"], "the phone's buttons to update")
    with pytest.raises(StoreError, match="rejected"):
        await pod.mail.approve(card["id"], pod.person.id)
    assert s.messages == []
    await pod.channels.close()
    pod._channels = None


async def test_the_phone_card_and_the_notification_warn_of_a_hidden_direction_character(pod, script, world) -> None:
    """A rule drafts a reply to "Lunch invoice \\u202efdp.exe": the phone's card (which can Approve) and the
    notification wrote the character out but said nothing of it, while the window's card and `cards` warn. Both now
    carry the same warning, above the words; a card without such a character carries none."""
    from app.tray import notification_for

    tg, d, s = world
    script([Text("Paid in full.")], repeat_last=True)
    events: list[dict] = []
    pod.subscribe(lambda e: events.append(e) if e["type"] == "card.created" else None)
    await setup(pod, tg, d, s, make_mail("Lunch invoice \u202efdp.exe", "Please pay.", sender="Billing <billing@example.net>"))
    shown = (await sent(tg, OWNER, 2))[-1]
    assert "\\u202efdp.exe" in shown.text and "\u202e" not in shown.text, shown.text
    warning = "Hidden direction characters in its Subject are shown here as \\u202e"
    assert warning in shown.text and shown.text.index(warning) < shown.text.index("Paid in full."), shown.text
    assert [b["text"] for b in shown.buttons()][0] == "✅ Approve"
    title, text = notification_for(events[-1])
    assert title == "Waiting for your approval" and "\\u202efdp.exe" in text and warning in text, text

    d.deliver(make_mail("Lunch on Friday?", "Lunch on Friday?", sender="Bob <bob@example.org>"))
    await pod.mail.poll(pod.mail.accounts(pod.person.id)[0].id)
    plain = (await sent(tg, OWNER, 3))[-1]
    assert "Lunch on Friday?" in plain.text and "direction" not in plain.text.lower(), plain.text
    assert "direction" not in notification_for(events[-1])[1].lower()
    await pod.channels.close()
    pod._channels = None
