"""Deterministic rendering of kept items (chat, mail, note, summary) into source markdown. No model.

The same item always renders to the same bytes, so a source's sha256 names it stably.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field

KINDS = ("chat", "mail", "note", "summary", "remember")


@dataclass(frozen=True)
class Item:
    """One thing that may be remembered, as pulled from chat, mail or notes.

    ``key`` identifies the item in its origin (message id, turn id) and orders items that share a
    timestamp; ``ts`` is epoch seconds. ``importance`` is 0..1 or None for the default. ``seq``, where the origin
    numbers its items in the order they were written (no clock moves that order), is the item's number: the
    producer then goes by it instead of ``ts`` (a clock that ran ahead, then was put right, reorders times).
    """

    text: str
    scope: str
    ts: float
    kind: str = "note"
    key: str = ""
    author: str = ""
    subject: str = ""
    participants: tuple[str, ...] = ()
    importance: float | None = None
    owner: str = ""
    agent: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    seq: int | None = None

    def item_key(self) -> str:
        """The origin key, or a content hash when the origin gave none."""
        if self.key:
            return self.key
        h = hashlib.sha256(f"{self.scope}\n{self.kind}\n{self.ts!r}\n{self.text}".encode()).hexdigest()
        return f"h:{h[:32]}"

    def said(self) -> str:
        """Everything of the item a model reads as said: who wrote it and who took part (a mail's sender's display
        name, free text anyone can set), its subject and its text. The instruction filter reads it all."""
        return "\n".join(part for part in (self.author, *self.participants, self.subject, self.text) if part)


def iso_utc(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [ln.rstrip() for ln in text.split("\n")]
    return "\n".join(lines).strip("\n")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", _clean(text)).strip()


def render_item(item: Item) -> str:
    """Renders an item to source markdown: a fixed header block, then the verbatim text."""
    if item.kind not in KINDS:
        raise ValueError(f"Unknown item kind {item.kind!r}: use one of {', '.join(KINDS)}.")
    head = [
        "---",
        f"kind: {item.kind}",
        f"scope: {item.scope}",
        f"date: {iso_utc(item.ts)}",
        f"key: {_one_line(item.item_key())}",
    ]
    if item.owner:
        head.append(f"owner: {_one_line(item.owner)}")
    if item.agent:
        head.append(f"agent: {_one_line(item.agent)}")
    if item.author:
        head.append(f"author: {_one_line(item.author)}")
    if item.participants:
        head.append("participants: " + ", ".join(sorted(_one_line(p) for p in item.participants)))
    if item.subject:
        head.append(f"subject: {_one_line(item.subject)}")
    if item.importance is not None:
        head.append(f"importance: {item.importance:.3f}")
    for k in sorted(item.meta):
        head.append(f"{_one_line(k)}: {_one_line(item.meta[k])}")
    head.append("---")
    title = _one_line(item.subject) if item.subject else f"{item.kind.capitalize()} {iso_utc(item.ts)}"
    body = _clean(item.text)
    return "\n".join(head) + f"\n\n# {title}\n\n{body}\n"


_KEY_LINE = re.compile(r"^key: .*\n", re.M)
_DATE_LINE = re.compile(r"^date: .*\n", re.M)
_SENT_LINE = re.compile(r"^sent: .*\n", re.M)
_MAIL_KIND = re.compile(r"^kind: mail\n", re.M)
_SUBJECT_LINE = re.compile(r"^subject: .*\n", re.M)
_TITLE_LINE = re.compile(r"\A---\n\n# .*\n")  # the title line right after the header


def content_print(markdown: str, *, named: bool = False) -> str:
    """A rendered source's fingerprint without its origin key: the same text read again from a changed file (whose
    items' keys carry the file's version) prints the same. A watched file's part (key "file:...") is dated by the
    file's time of change, which any edit moves: its date is left out too, and so are its subject and title, which
    hold the file's path and the part's number (a file renamed or moved, or a part shifted by an edit above it,
    prints the same). So is a mail's date: it is dated by when Hearth read it, and the same mail read again (moved
    to another folder and back, or its inbox added again) prints the same. Its own date (the Date header, ``sent:``)
    or, lacking one, its Message-ID (hashed, ``message-print:``) stays, so the same words sent on another day (or
    as another message), or by someone else, print apart. ``named``: the print earlier Hearths made, a file's part
    with its subject and title (what a person deleted then is stored with it, see ``content_prints``)."""
    head_end = markdown.find("\n---\n", 4)
    if head_end <= 0:
        return hashlib.sha256(markdown.encode("utf-8")).hexdigest()
    head, rest = markdown[:head_end + 1], markdown[head_end + 1:]
    key = _KEY_LINE.search(head)
    of_file = key is not None and key.group(0).startswith("key: file:")
    if of_file or _SENT_LINE.search(head) or _MAIL_KIND.search(head):
        head = _DATE_LINE.sub("", head, count=1)
    if of_file and not named:
        head = _SUBJECT_LINE.sub("", head, count=1)
        rest = _TITLE_LINE.sub("---\n", rest, count=1)
    head = _KEY_LINE.sub("", head, count=1)
    return hashlib.sha256((head + rest).encode("utf-8")).hexdigest()


def content_prints(markdown: str) -> tuple[str, ...]:
    """The prints a rendered source may have been stored under: ``content_print``'s, and, for a watched file's
    part, the one with its name that earlier Hearths stored (a part deleted before an upgrade stays deleted)."""
    now, named = content_print(markdown), content_print(markdown, named=True)
    return (now,) if named == now else (now, named)


def parse_source(markdown: str) -> tuple[dict[str, str], str]:
    """Splits rendered source markdown back into its header fields and verbatim body."""
    if not markdown.startswith("---\n"):
        return {}, markdown
    end = markdown.find("\n---\n", 4)
    if end < 0:
        return {}, markdown
    fields: dict[str, str] = {}
    for line in markdown[4:end].split("\n"):
        k, sep, v = line.partition(": ")
        if sep:
            fields[k] = v
    rest = markdown[end + 5 :].lstrip("\n")
    if rest.startswith("# "):
        rest = rest.split("\n", 1)[1] if "\n" in rest else ""
    return fields, rest.strip("\n")


def said_in(markdown: str) -> str:
    """What a rendered source says: its text, its subject and who said it (a page may name any of them)."""
    fields, body = parse_source(markdown)
    return "\n".join([*(fields.get(k, "") for k in ("author", "participants", "subject")), body])
