"""Mail as a channel: the same interface as Telegram, served by the Pod's inboxes.

An inbox is "linked" when it is added (its password in the vault); mail arriving there reaches agents
through the rules. What a channel pushes (a scheduled result) becomes an approve-and-send card to the
person's own address, because nothing leaves the machine without their allow; approval cards of other
kinds stay in the app and on the phone, since a mail cannot carry buttons.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime_host.channels.base import Channel, ChannelStatus, LinkOffer
from runtime_host.channels.store import Card, ChannelLink

if TYPE_CHECKING:
    from runtime_host.mailhost import MailHost

CHANNEL = "mail"


class MailChannel(Channel):
    name = CHANNEL

    def __init__(self, mail: MailHost):
        self.mail = mail
        self._status = ChannelStatus(CHANNEL, "stopped")
        self._failures: dict[str, str] = {}
        self._unsubscribe = mail.pod.subscribe(self._on_event)

    def _on_event(self, ev: dict[str, Any]) -> None:
        if ev.get("type") == "mail.failed":
            self._failures[str(ev.get("account"))] = str(ev.get("error"))
            self._status = ChannelStatus(CHANNEL, "retrying", f"{ev.get('account')}: {ev.get('error')}")
        elif ev.get("type") == "mail.polled":
            self._failures.pop(str(ev.get("account")), None)
            if not self._failures:
                self._status = ChannelStatus(CHANNEL, "connected", "Inboxes are being watched.")

    async def start(self) -> None:
        self.mail.start()
        if self._status.state == "stopped":
            self._status = ChannelStatus(CHANNEL, "starting", "Checking the inboxes…")

    async def stop(self) -> None:
        await self.mail.close()
        self._unsubscribe()
        self._status = ChannelStatus(CHANNEL, "stopped")

    async def deliver_answer(self, person_id: str, text: str, *, title: str | None = None,
                             conversation_id: str = "") -> int:
        from runtime_host.mail.outbox import create_card

        count = 0
        for acct in self.mail.accounts(person_id):
            card = create_card(self.mail.engine, account_id=acct.id, from_addr=acct.address, to=acct.address,
                               subject=title or "From your Hearth agents", body=text,
                               why="a result Hearth would send to your own inbox")
            self.mail._card_created(acct, card)
            count += 1
        return count

    async def deliver_card(self, card: Card) -> int:
        return 0  # a mail cannot carry approve/reject buttons: the card waits in the app and on the phone

    async def card_decided(self, card: Card) -> None:
        return None

    def begin_link(self, person_id: str, ttl_s: float = 600.0) -> LinkOffer:
        return LinkOffer(CHANNEL, "", time.time() + ttl_s,
                         "Add your inbox in Hearth → Mail (address, servers, password): the inbox itself is the link.")

    def links(self, person_id: str | None = None) -> list[ChannelLink]:
        from runtime_host.mail import ledger

        return [ChannelLink(CHANNEL, i, 0, a.person_id, None, True, a.created_at)
                for i, a in enumerate(ledger.list_accounts(self.mail.engine, person_id)) if not a.paused]

    def unlink(self, chat_id: int) -> bool:
        from sqlalchemy import text

        from runtime_host.mail import ledger

        accounts = [a for a in ledger.list_accounts(self.mail.engine) if not a.paused]
        if not 0 <= chat_id < len(accounts):
            return False
        with self.mail.engine.begin() as c:
            c.execute(text("UPDATE mail_accounts SET paused = :p WHERE id = :i"), {"p": True, "i": accounts[chat_id].id})
        return True

    @property
    def status(self) -> ChannelStatus:
        return self._status
