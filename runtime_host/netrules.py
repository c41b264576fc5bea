"""Address rules shared by every outbound path (models, channels, mail). Stdlib only."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refused_by_loopback_switch(url: str) -> str | None:
    """The host `url` names when HEARTH_LOOPBACK_ONLY=1 (the tests' switch) forbids it, else None."""
    if os.environ.get("HEARTH_LOOPBACK_ONLY") != "1":
        return None
    host = urlsplit(url).hostname or ""
    return None if is_loopback(host) else host
