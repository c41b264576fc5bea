"""Server-sent events: turns a byte stream's lines into (event, data) pairs. Stdlib only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def iter_sse(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Yields (event name, data) for each event; multi-line data is joined with newlines."""
    event = ""
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event or "message", "\n".join(data)
