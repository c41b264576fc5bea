"""The channel interface: how a person reaches their agents from outside the window (Telegram, mail),
and the port through which every channel talks to the Pod. Qt-free, no network of its own.

A `Channel` starts and stops, delivers answers and approval cards to the chats linked to a person,
reflects decisions made elsewhere, and offers a one-time way to link a person. A channel never
touches the Pod directly: it gets a `PodPort`, so the same channel runs against the real Pod, a
test double, or another host.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runtime_host.channels.store import Card, ChannelLink


class ChannelError(Exception):
    """A channel problem a person can act on; the message says what to do next."""


@runtime_checkable
class TurnLike(Protocol):
    """What a channel needs from a finished turn (`runtime_host.pod.TurnResult` fits)."""

    @property
    def ok(self) -> bool: ...

    text: str
    error: str | None


@runtime_checkable
class PodPort(Protocol):
    """The Pod as a channel sees it. Conversation keys are "<channel>:<chat id>"."""

    async def send(self, person_id: str, agent_name: str, text: str, conversation_key: str) -> TurnLike:
        """Runs one turn for `person_id` with `agent_name` in the conversation behind `conversation_key`."""
        ...

    def list_agents(self, person_id: str) -> list[str]:
        """The names of the person's agents."""
        ...

    def decide_card(self, card_id: str, approve: bool, decided_by: str) -> bool:
        """Decides a pending card; False if it was decided already (elsewhere) or does not exist."""
        ...

    async def transcribe(self, data: bytes) -> str:
        """Speech to text, locally; raises a ChannelError (or SpeechError) with a readable message."""
        ...


@dataclass(frozen=True)
class LinkOffer:
    """What the app shows a person who wants to link a channel: a one-time code and what to do with it."""

    channel: str
    code: str
    expires_at: float
    instructions: str
    url: str | None = None  # a deep link that links in one tap, when the channel has one


@dataclass(frozen=True)
class ChannelStatus:
    """A channel's health in words a person understands (shown in Settings → Channels)."""

    channel: str
    state: str  # "stopped", "starting", "connected", "retrying", "failed"
    detail: str = ""


StatusListener = Callable[[ChannelStatus], None]


class Channel(abc.ABC):
    """One way to reach a person's agents. Telegram is one module; mail implements the same methods."""

    name: str = ""

    @abc.abstractmethod
    async def start(self) -> None:
        """Begins receiving (polling); returns once running. Safe to call once."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stops receiving and sending; pending answers stay queued for the next start."""

    @abc.abstractmethod
    async def deliver_answer(self, person_id: str, text: str, *, title: str | None = None,
                             conversation_id: str = "") -> int:
        """Sends markdown `text` to every chat of the person that accepts pushed results. Returns how many.
        ``conversation_id``: the run's conversation; what waits unsent goes when it is deleted."""

    @abc.abstractmethod
    async def deliver_card(self, card: Card) -> int:
        """Shows an approval card with approve / reject to the person's linked chats. Returns how many."""

    @abc.abstractmethod
    async def card_decided(self, card: Card) -> None:
        """Reflects a decision made elsewhere (the app, another chat): the buttons go away."""

    @abc.abstractmethod
    def begin_link(self, person_id: str, ttl_s: float = 600.0) -> LinkOffer:
        """A one-time code the person uses from their own account to link it."""

    @abc.abstractmethod
    def links(self, person_id: str | None = None) -> list[ChannelLink]:
        """The linked chats (of one person, or all)."""

    @abc.abstractmethod
    def unlink(self, chat_id: int) -> bool:
        """Removes a link; messages from that chat are ignored from now on."""

    @property
    @abc.abstractmethod
    def status(self) -> ChannelStatus:
        """The current health."""


def check_channel_address(url: str) -> None:
    """Refuses non-loopback channel servers when HEARTH_LOOPBACK_ONLY=1 (the test switch), like model calls."""
    from runtime_host.netrules import refused_by_loopback_switch

    host = refused_by_loopback_switch(url)
    if host is not None:
        raise ChannelError(f"Refusing to reach {host!r}: HEARTH_LOOPBACK_ONLY=1 allows only loopback channel servers "
                           "(tests never reach the internet).")
