"""Markdown answers to Telegram HTML (parse_mode HTML), split into messages that fit.

Telegram renders a small HTML subset: <b>, <i>, <s>, <code>, <pre>, <a href>, <blockquote>. Bold,
italics, strikethrough, inline code, code blocks, links and quotes map to it; headings become bold,
lists become bullet lines; everything else (tables, raw HTML, images) stays plain text, escaped.
Long answers are cut at paragraph, then line, then word boundaries so that each message's visible
text is at most 4096 UTF-16 units; a cut never breaks a tag (tags open at the cut are closed and
reopened in the next message).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

MESSAGE_LIMIT = 4096
SAFE_SCHEMES = ("http", "https", "tg", "mailto")

_md = MarkdownIt("commonmark").enable("strikethrough")
_EMPTY_TAG = re.compile(r"<(\w+)(?: [^>]*)?></\1>")


@dataclass(frozen=True)
class Part:
    """One message: Telegram HTML, and the same visible text for a plain-text retry."""

    html: str
    plain: str


# items: ("t", text) | ("o", tag, open_html) | ("c", tag)
_Item = tuple[str, ...]


class _Builder:
    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.visible: list[str] = []
        self.quote_depth = 0
        self.pre = False

    @property
    def tail(self) -> str:
        return "".join(self.visible[-3:])[-2:]

    def text(self, s: str) -> None:
        if s:
            self.items.append(("t", s))
            self.visible.append(s)

    def open(self, tag: str, attrs: str = "") -> None:
        self.items.append(("o", tag, f"<{tag}{attrs}>"))

    def close(self, tag: str) -> None:
        self.items.append(("c", tag))

    def blank_line(self) -> None:
        """Separates blocks by one empty line (nothing at the very start)."""
        if not self.visible:
            return
        tail = self.tail
        if tail.endswith("\n\n"):
            return
        self.text("\n" if tail.endswith("\n") else "\n\n")

    def newline(self) -> None:
        if self.visible and not self.tail.endswith("\n"):
            self.text("\n")


def _safe_href(href: str) -> str | None:
    try:
        scheme = urlsplit(href).scheme.lower()
    except ValueError:
        return None
    return href if scheme in SAFE_SCHEMES else None


def _inline(b: _Builder, children: list[Token]) -> None:
    link_open: list[bool] = []
    for t in children:
        kind = t.type
        if kind == "text":
            b.text(t.content)
        elif kind in ("softbreak", "hardbreak"):
            b.text("\n")
        elif kind == "code_inline":
            b.open("code")
            b.text(t.content)
            b.close("code")
        elif kind in ("em_open", "strong_open", "s_open"):
            b.open({"em_open": "i", "strong_open": "b", "s_open": "s"}[kind])
        elif kind in ("em_close", "strong_close", "s_close"):
            b.close({"em_close": "i", "strong_close": "b", "s_close": "s"}[kind])
        elif kind == "link_open":
            href = _safe_href(str(t.attrGet("href") or ""))
            link_open.append(href is not None)
            if href is not None:
                b.open("a", f' href="{html.escape(href, quote=True)}"')
        elif kind == "link_close":
            if link_open and link_open.pop():
                b.close("a")
        elif kind == "image":
            b.text(t.content or "")
        else:  # html_inline and anything unknown: shown as written, escaped
            b.text(t.content)


def _build(markdown: str) -> _Builder:
    b = _Builder()
    lists: list[list[int]] = []  # per open list: [kind (0 bullet, 1 ordered), next number]
    item_start = False
    for t in _md.parse(markdown):
        kind = t.type
        if kind == "paragraph_open":
            if item_start:
                item_start = False
            elif lists and t.hidden:
                b.newline()
            else:
                b.blank_line()
        elif kind == "paragraph_close" or kind == "heading_close":
            if kind == "heading_close":
                b.close("b")
        elif kind == "heading_open":
            b.blank_line()
            b.open("b")
        elif kind == "inline":
            _inline(b, t.children or [])
        elif kind in ("bullet_list_open", "ordered_list_open"):
            if lists:
                b.newline()
            else:
                b.blank_line()
            start = int(t.attrGet("start") or 1) if kind == "ordered_list_open" else 0
            lists.append([1 if kind == "ordered_list_open" else 0, start])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            b.newline()
            top = lists[-1]
            marker = f"{top[1]}. " if top[0] else "• "
            top[1] += 1
            b.text("    " * (len(lists) - 1) + marker)
            item_start = True
        elif kind == "list_item_close":
            item_start = False
        elif kind == "blockquote_open":
            b.blank_line()
            if b.quote_depth == 0:
                b.open("blockquote")
            b.quote_depth += 1
        elif kind == "blockquote_close":
            b.quote_depth -= 1
            if b.quote_depth == 0:
                b.close("blockquote")
        elif kind in ("fence", "code_block"):
            b.blank_line() if not item_start else None
            item_start = False
            lang = re.sub(r"[^\w+#.-]", "", (t.info or "").split(" ")[0])
            b.open("pre")
            if lang:
                b.open("code", f' class="language-{lang}"')
            b.text(t.content.rstrip("\n") or " ")
            if lang:
                b.close("code")
            b.close("pre")
        elif kind == "hr":
            b.blank_line()
            b.text("———")
        elif kind == "html_block":
            b.blank_line()
            b.text(t.content.rstrip("\n"))
    return b


def _u16(ch: str) -> int:
    return 2 if ord(ch) > 0xFFFF else 1


def utf16_len(s: str) -> int:
    return sum(_u16(c) for c in s)


def _ranges(text: str, limit: int) -> list[tuple[int, int]]:
    """Where to cut the visible text: (start, end) per message, whitespace at the edges left out."""
    out: list[tuple[int, int]] = []
    n = len(text)
    s = 0
    while s < n and text[s].isspace():
        s += 1
    while s < n:
        e, units = s, 0
        while e < n and units + _u16(text[e]) <= limit:
            units += _u16(text[e])
            e += 1
        cut = e
        if e < n:
            window = text[s:e]
            for sep in ("\n\n", "\n", " "):
                k = window.rfind(sep)
                if k >= max(1, limit // 4):
                    cut = s + k
                    break
        end = cut
        while end > s and text[end - 1].isspace():
            end -= 1
        if end > s:
            out.append((s, end))
        s = cut
        while s < n and text[s].isspace():
            s += 1
    return out


def _render_all(items: list[_Item], ranges: list[tuple[int, int]]) -> list[str]:
    """The HTML of each range of the visible text, in one pass over the items: each message reopens the tags open
    at its start and closes those open at its end (a message used to walk every item from the first: a long answer
    of short bold words took minutes)."""
    parts: list[str] = []
    i, pos, stack = 0, 0, []  # where the next range starts reading: an item, its offset, the tags open before it
    for s, e in ranges:
        out: list[str] = []
        st, p, k = list(stack), pos, i
        started = False
        while k < len(items):
            it = items[k]
            if not started and p >= s and it[0] != "c":
                started = True
                out.extend(h for _, h in st)
            k += 1
            if it[0] == "t":
                a, bnd = p, p + len(it[1])
                lo, hi = max(a, s), min(bnd, e)
                if lo < hi:
                    if not started:
                        started = True
                        out.extend(h for _, h in st)
                    out.append(html.escape(it[1][lo - a:hi - a], quote=False))
                if bnd >= e:  # the last text of this range: the next one starts within it, or after it
                    i, pos, stack = k - 1, a, list(st)
                    break
                p = bnd
            elif it[0] == "o":
                if started:
                    out.append(it[2])
                st.append((it[1], it[2]))
            else:
                if started:
                    out.append(f"</{it[1]}>")
                if st:
                    st.pop()
        out.extend(f"</{tag}>" for tag, _ in reversed(st))
        rendered = "".join(out)
        while True:
            cleaned = _EMPTY_TAG.sub("", rendered)
            if cleaned == rendered:
                break
            rendered = cleaned
        parts.append(rendered)
    return parts


def to_telegram(markdown: str, limit: int = MESSAGE_LIMIT) -> list[Part]:
    """Converts a markdown answer to Telegram HTML messages, each at most `limit` visible UTF-16 units."""
    b = _build(markdown or "")
    visible = "".join(b.visible)
    ranges = _ranges(visible, limit)
    return [Part(h, visible[s:e]) for h, (s, e) in zip(_render_all(b.items, ranges), ranges, strict=True)]


def plain_parts(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Plain text split the same way (no parse_mode): for notices and for retries after a parse error."""
    return [text[s:e] for s, e in _ranges(text, limit)]


def escape(text: str) -> str:
    """Escapes text for Telegram HTML (<, > and &)."""
    return html.escape(text, quote=False)
