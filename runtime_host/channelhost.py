"""Channels in the Pod: one card arbiter for the app and every channel, and Telegram when a bot
token is in the vault.

Every approval card (mail to send, a hand-off) is recorded in the channel store when it is created,
so a decision made on the phone and one made in the app resolve the same card once: whichever
comes first wins, the other is told it was already decided.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from runtime_host.channels.base import ChannelError
from runtime_host.channels.hub import ChannelHub
from runtime_host.channels.podport import PodChannelPort, card_body
from runtime_host.channels.telegram import DEFAULT_BASE_URL, TelegramChannel, load_bot_token, save_bot_token

if TYPE_CHECKING:
    from runtime_host.ports import ChannelPod

log = logging.getLogger("hearth.channels")


class AlreadyDecided(Exception):
    """The card was decided elsewhere first (on the phone, or in another window)."""


class ChannelsHost:
    def __init__(self, pod: ChannelPod, *, telegram_base_url: str = DEFAULT_BASE_URL, **telegram_options: Any):
        self.pod = pod
        self.port = PodChannelPort(pod)
        self.port.on_card_decided(self._on_card_decided)
        self._unfollow = pod.subscribe(self._on_pod_event)
        self.telegram_base_url = telegram_base_url
        self.telegram_options = telegram_options
        self.telegram: TelegramChannel | None = None
        self.hub: ChannelHub | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- cards: the one arbiter
    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        if ev.get("type") == "card.created" and ev.get("card_id"):
            cid = str(ev["card_id"])
            if self.port.get_card(cid) is None and ev.get("person"):  # every card names its person
                self.port.open_card(str(ev["person"]), str(ev.get("kind") or "send"),
                                    str(ev.get("summary") or "Approval needed"), card_body(ev), card_id=cid)
        elif ev.get("type") == "card.decided" and ev.get("state") == "failed" and self.telegram is not None:
            # An approved send that failed: the phone shows the reason and a Retry, wherever it was approved.
            if not ev.get("person"):  # every card names its person
                return
            task = asyncio.ensure_future(self.telegram.send_failed(
                str(ev["card_id"]), str(ev["person"]),
                str(ev.get("summary") or "An approved send"), str(ev.get("error") or "Not sent.")))
            self._tasks.add(task)
            task.add_done_callback(self._done)

    def claim(self, card_id: str, approve: bool, decided_by: str) -> None:
        """Records a decision made in the app; raises AlreadyDecided when the phone was first."""
        if self.port.get_card(card_id) is None:
            return  # a card from before channels existed: the outbox's own state machine decides
        if not self.port.decide_card(card_id, approve, decided_by):
            card = self.port.get_card(card_id)
            if card is not None and card.decided_by == decided_by and (card.state == "approved") == approve:
                return  # the same decision again from the same place: harmless (a double click)
            who = (card.decided_by or "another device") if card else "another device"
            where = "on Telegram" if who.startswith("telegram") else f"by {who}"
            raise AlreadyDecided(f"This card was already {card.state if card else 'decided'} {where}.")

    def _on_card_decided(self, card: Any) -> None:
        """A decision from a channel (the phone): carry it out. The app carries out its own."""
        if (card.decided_by or "").startswith("app"):
            return
        if card.kind == "partner":
            try:
                self.pod.decide_partner_send(card.card_id, card.state == "approved", card.decided_by or "phone")
            except Exception as exc:  # the send timed out meanwhile
                log.warning("partner card %s: %s", card.card_id, exc)
            return
        if card.kind == "handoff":
            from runtime_host import tasks

            t = tasks.get(self.pod.store.engine, card.card_id)
            if t is None:
                return
            coro = self.pod._carry_out_task(t, card.state == "approved", card.decided_by or "phone")
        else:
            mail = self.pod.mail
            coro = (mail.approve(card.card_id, card.person_id, _decided=True) if card.state == "approved"
                    else mail.reject(card.card_id, card.person_id, "rejected on the phone", _decided=True))
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("a card decided on a channel could not be carried out: %s", task.exception())

    # -- telegram: one bot per Hearth; its token is in the vault of the person who pasted it
    def save_telegram_token(self, person_id: str, token: str) -> None:
        save_bot_token(self.pod.vault_for(person_id), token)
        self.pod.store.set_meta("telegram_token_person", person_id)

    async def start(self) -> bool:
        """Starts Telegram polling when a bot token is in the vault; False when there is none."""
        if self.hub is not None:
            return True
        keeper = self.pod.store.meta("telegram_token_person") or self.pod.store.default_person().id
        try:
            token = load_bot_token(self.pod.vault_for(keeper))
        except ChannelError:
            return False
        agents = self.pod.list_agents(keeper)
        self.telegram = TelegramChannel(self.port, self.port.store, token, base_url=self.telegram_base_url,
                                        default_agent=agents[0]["name"] if agents else None, **self.telegram_options)
        self.hub = ChannelHub(self.port, [self.telegram])
        await self.hub.start()
        return True

    async def close(self) -> None:
        if self.hub is not None:
            await self.hub.stop()
            self.hub = None
        self._unfollow()
        self.port.close()
