"""Channel test fixtures: the fake Bot API on loopback, a port on the real Pod, and a Telegram channel
tuned for tests (1 s long polls, short back-off). The fake is thread-based, so async tests wait on it
through `asyncio.to_thread` and never block the loop the channel runs on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from runtime_host.channels.podport import PodChannelPort
from runtime_host.channels.telegram import TelegramChannel
from tests.helpers.fake_telegram import BotMessage, FakeTelegram

OWNER = 424242  # the person's own Telegram account
STRANGER = 999001


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    srv = FakeTelegram().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def port(pod: Any) -> AsyncIterator[PodChannelPort]:
    p = PodChannelPort(pod.pod)
    try:
        yield p
    finally:
        p.close()


ChannelFactory = Callable[..., TelegramChannel]


@pytest.fixture
async def make_channel(port: PodChannelPort, tg: FakeTelegram) -> AsyncIterator[ChannelFactory]:
    made: list[TelegramChannel] = []

    def make(port_: Any = None, **kw: Any) -> TelegramChannel:
        opts: dict[str, Any] = {"base_url": tg.base_url, "default_agent": "helper", "poll_timeout_s": 1.0,
                                "http_grace_s": 1.0, "backoff_s": (0.05, 0.4), **kw}
        ch = TelegramChannel(port_ or port, port.store, tg.token, **opts)
        made.append(ch)
        return ch

    try:
        yield make
    finally:
        for ch in made:
            await asyncio.wait_for(ch.stop(), 10)


async def sent(tg: FakeTelegram, chat_id: int, count: int, timeout: float = 15.0) -> list[BotMessage]:
    return await asyncio.to_thread(tg.wait_sent, chat_id, count, timeout)


async def until(tg: FakeTelegram, predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    await asyncio.to_thread(tg.wait_for, predicate, timeout, what)


async def link_owner(channel: TelegramChannel, tg: FakeTelegram, person_id: str, user_id: int = OWNER) -> None:
    """Links `user_id`'s private chat with a fresh code, as a person does from the app."""
    offer = channel.begin_link(person_id)
    before = len(tg.sent_to(user_id))
    tg.send_text(user_id, f"/link {offer.code}")
    msgs = await sent(tg, user_id, before + 1)
    assert msgs[-1].text.startswith("Linked."), msgs[-1].text
