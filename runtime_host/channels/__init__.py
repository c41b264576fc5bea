"""Channels: reach your agents from outside the window (Telegram now; mail fits the same interface).

Qt-free. `base` holds the interface and the Pod port protocol, `store` the durable state (the
"0006_channels" migration), `podport` the port on the real Pod, `hub` the routing of cards and
scheduled results, `telegram` the Bot API channel, `markup` markdown to Telegram HTML.
"""

from __future__ import annotations

from runtime_host.channels.base import (
    Channel,
    ChannelError,
    ChannelStatus,
    LinkOffer,
    PodPort,
    TurnLike,
    check_channel_address,
)
from runtime_host.channels.store import MIGRATION, Card, ChannelLink, ChannelStore, LinkCodeError

__all__ = [
    "MIGRATION",
    "Card",
    "Channel",
    "ChannelError",
    "ChannelLink",
    "ChannelStatus",
    "ChannelStore",
    "LinkCodeError",
    "LinkOffer",
    "PodPort",
    "TurnLike",
    "check_channel_address",
]
