"""Times as a person reads them: in their own time zone, never as a raw ISO stamp."""

from __future__ import annotations

from datetime import datetime


def local_time(iso: str, fmt: str = "%a %d %b %H:%M") -> str:
    """An ISO 8601 time (``2026-12-05T19:07:31Z``) in the local zone, as ``fmt`` says; text that is not such a
    time is returned as it is (a page file edited by hand may hold anything)."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime(fmt)
    except (TypeError, ValueError):
        return iso
