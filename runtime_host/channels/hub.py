"""`ChannelHub`: runs the person's channels together and routes what the Pod produces to them:
new approval cards to every channel, a decision (from anywhere) to every channel so stale buttons go
away, and scheduled runs' results to the chats that accept pushed results."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from runtime_host.channels.base import Channel, ChannelStatus
from runtime_host.channels.podport import PodChannelPort, RunResult
from runtime_host.channels.store import Card

log = logging.getLogger("hearth.channels")


class ChannelHub:
    def __init__(self, port: PodChannelPort, channels: list[Channel] | None = None,
                 push_origins: tuple[str, ...] = ("schedule",)):
        self.port = port
        self.channels: list[Channel] = list(channels or [])
        self._unsubs: list[Callable[[], None]] = []
        self._push_origins = push_origins

    async def start(self) -> None:
        self._unsubs = [self.port.on_card_opened(self._on_card_opened),
                        self.port.on_card_decided(self._on_card_decided),
                        self.port.on_run_finished(self._on_run_finished, self._push_origins)]
        for ch in self.channels:
            await ch.start()

    async def stop(self) -> None:
        for unsub in self._unsubs:
            unsub()
        self._unsubs = []
        for ch in self.channels:
            try:
                await ch.stop()
            except Exception:
                log.exception("channel %s did not stop cleanly", ch.name)

    def statuses(self) -> list[ChannelStatus]:
        return [ch.status for ch in self.channels]

    async def _each(self, what: str, call: Callable[[Channel], Awaitable[object]]) -> None:
        """Runs `call` on every channel; one channel failing does not keep the others from it."""
        for ch in self.channels:
            try:
                await call(ch)
            except Exception:
                log.exception("channel %s could not %s", ch.name, what)

    async def _on_card_opened(self, card: Card) -> None:
        await self._each("show a card", lambda ch: ch.deliver_card(card))

    async def _on_card_decided(self, card: Card) -> None:
        await self._each("update a decided card", lambda ch: ch.card_decided(card))

    async def _on_run_finished(self, run: RunResult) -> None:
        if run.status == "done":
            text = run.text or "(no output)"
        else:
            text = f"The run did not finish: {run.error or run.status}"
        title = f"Scheduled run · {run.agent}" if run.origin == "schedule" else f"{run.origin.capitalize()} run · {run.agent}"
        await self._each("push a run result", lambda ch: ch.deliver_answer(run.person_id, text, title=title,
                                                                                conversation_id=run.conversation_id))
