"""The characters text shows nothing for: the one definition that everything reading text as a person sees it
uses (the memory guard, the wrapper around text from strangers, the personal-data detectors). Stdlib only and
imports nothing of ours, so the core packages and the worker may all import it.

Unicode's default-ignorable characters (DerivedCoreProperties.txt): format characters (Cf), the variation
selectors and the others the standard names (the combining grapheme joiner, Hangul fillers, ...), less the marks
shown as a sign before digits (Arabic number signs) and the Egyptian hieroglyph format controls. Read from the
character database of the Python that runs (no Cf lies elsewhere than the ranges scanned). The interlinear
annotation controls (U+FFF9–FFFB) are added: the standard leaves them out for a reader that lays out annotations,
but the window (Qt), terminals and browsers show nothing for them, so they hide what they split as well as any.

Among them, the direction characters (``DIRECTION``) are written out and read back here (``direction_shown``,
``direction_read``) where a person approves words as they will be sent: an approval card, its notification, the CLI;
``as_json`` writes them (and C1 control codes) as JSON escapes in every JSON the CLI prints.
"""

from __future__ import annotations

import bisect
import difflib
import json
import os
import re
import unicodedata
from collections.abc import Iterable
from functools import cache
from typing import Any

_OTHER_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2065, 0x2065), (0x3164, 0x3164),
                    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000), (0xE0002, 0xE001F),
                    (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF))
VARIATION_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_SHOWN_FORMAT = ((0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
                 (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F))


def _each(ranges: Iterable[tuple[int, int]]) -> set[int]:
    return {c for a, b in ranges for c in range(a, b + 1)}


@cache
def codes() -> frozenset[int]:
    """The code points text shows nothing for (see above)."""
    formats = {c for c in (*range(0x20000), *range(0xE0000, 0xE1000)) if unicodedata.category(chr(c)) == "Cf"}
    return frozenset((formats | _each(_OTHER_IGNORABLE) | _each(VARIATION_SELECTORS)) - _each(_SHOWN_FORMAT))


def char_class(chars: Iterable[int]) -> str:
    """A regex character class of the code points, as ranges (a class of hundreds of single characters is slow)."""
    ranges: list[list[int]] = []
    for c in sorted(chars):
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "[" + "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges) + "]"


@cache
def pattern() -> re.Pattern[str]:
    """One character text shows nothing for."""
    return re.compile(char_class(codes()))


# The tag characters that stand for printable ASCII (U+E0020 space to U+E007E tilde): shown as nothing, read by a
# language model as the letters they stand for, so a whole order can be written in them ("ASCII smuggling").
TAGS = (0xE0020, 0xE007E)
_SPELLS = {c: chr(c - 0xE0000) for c in range(TAGS[0], TAGS[1] + 1)} | {0xE0001: None, 0xE007F: None}
# A subdivision flag: the black flag, its region's code in tag letters, then the cancel tag. Only those of Unicode's
# recommended emoji set (RGI: England, Scotland, Wales) are drawn as flags, so only they are kept: any other run of tag
# letters after a black flag draws nothing a person can read and may spell a word a model reads ("ignore").
_FLAG = re.compile("\U0001F3F4\U000E0067\U000E0062(?:\U000E0065\U000E006E\U000E0067|\U000E0073\U000E0063\U000E0074"
                   "|\U000E0077\U000E006C\U000E0073)\U000E007F")
_TAG = re.compile("[\U000E0001\U000E0020-\U000E007F]")


def spelled(text: str, *, flags: bool = True) -> str:
    """``text`` with what tag characters hide written out: each one of U+E0020–E007E as the ASCII character it stands
    for (U+E0041 as "A"), the language and cancel tags dropped, so words in them are seen by a person and read by the
    memory guard as a model reads them. A real subdivision flag's tags (\U0001F3F4 then "gbsct" in tags: England,
    Scotland, Wales) stay, as they draw the flag; with ``flags`` False they are written out too (what a model reads)."""
    if not has_tags(text):
        return text
    spans = [m.span() for m in _FLAG.finditer(text)] if flags else []
    if not spans:
        return text.translate(_SPELLS)
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start].translate(_SPELLS), text[start:end]]
        at = end
    return "".join([*out, text[at:].translate(_SPELLS)])


def has_tags(text: str) -> bool:
    """Whether ``text`` holds a tag character (see ``spelled``)."""
    return _TAG.search(text) is not None


def without(text: str) -> str:
    """``text`` without the characters it shows nothing for."""
    return pattern().sub("", text)


# The characters that turn around the words after them: an embedding, override or isolate (U+202A–202E,
# U+2066–2069; "Invoice \u202efdp.exe" reads as "Invoice exe.pdf"). The marks (U+200E, U+200F, U+061C) are left out:
# they reorder no letters, only move the punctuation or digits beside them, and Hebrew and Arabic keyboards and mail
# clients put them in ordinary text ("שלום\u200f!"), so they stay text. Each is one of ``codes()``.
DIRECTION = frozenset({*range(0x202A, 0x202F), *range(0x2066, 0x206A)})
_CODE = "u(?:202[a-e]|206[6-9])"  # how one is written out: \u202e


@cache
def _direction_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a direction character or its code with the backslashes before it, one direction character)"""
    one = char_class(DIRECTION)
    return re.compile(rf"(\\*)(?:({one})|({_CODE}))"), re.compile(one)


def has_direction(text: str) -> bool:
    """Whether ``text`` holds a character that turns around the words after it (``DIRECTION``)."""
    return _direction_res()[1].search(text) is not None


EDITABLE = "Approve sends them as they are; delete one to leave it out, or reject."
AS_THEY_ARE = "Approve sends them as they are; to leave them out, reject."
HANDED_AS_THEY_ARE = "Approve hands the task on with them as they are; to leave them out, reject."


def direction_warning(parts: dict[str, str], then: str = EDITABLE) -> str:
    """What a card (and its notification, the phone's card, `cards`) says when the words it sends hold direction
    characters: which of ``parts`` (name: words as stored) hold one, what they do, and ``then``; "" when none does."""
    where = [name for name, words in parts.items() if has_direction(words)]
    if not where:
        return ""
    named = " and ".join([", ".join(where[:-1]), where[-1]] if len(where) > 1 else where)
    return (f"Hidden direction characters in its {named} are shown here as \\u202e and the like: where it is read, "
            "they make the words around them read in another order, so a name, an address or a file name reads as "
            f"another (\"Invoice \\u202efdp.exe\" reads \"Invoice exe.pdf\"). {then}")


def _shown_units(text: str) -> list[tuple[str, str]]:
    """``text`` as ``direction_shown`` writes it, in pieces (as shown, as stored): a written-out character, or a code
    with its backslashes, is one piece; each stretch between them another, the same shown as stored."""
    units: list[tuple[str, str]] = []
    at = 0
    for m in _direction_res()[0].finditer(text):
        if m.start() > at:
            units.append((text[at:m.start()],) * 2)
        units.append((_one_shown(m), m.group()))
        at = m.end()
    if at < len(text):
        units.append((text[at:],) * 2)
    return units


def _one_shown(m: re.Match[str]) -> str:
    slashes, char, code = m.groups()
    if char is not None:
        return "\\" * (2 * len(slashes) + 1) + f"u{ord(char):04x}"
    return "\\" * (2 * len(slashes)) + code


def direction_shown(text: str) -> str:
    """``text`` with each direction character written out as ``\\u202e`` and the like, so words read in the order they
    are stored and the character is seen where it is. A backslash of the text's own before such a code is written
    twice ("\\\\u202e" is the six characters "\\u202e" as written), so ``direction_read`` gives back exactly ``text``."""
    return _direction_res()[0].sub(_one_shown, text) if "\\" in text or has_direction(text) else text


def direction_read(stored: str, edited: str) -> str:
    """What to send for ``edited``, a person's edit of ``direction_shown(stored)``: a written-out character the shown
    text held and she kept stands for that character again; everything she typed is taken as typed, so a "\\u202e"
    she writes herself is sent as those six characters, never as a hidden character (the kept and typed parts are
    found by comparing the shown and the edited text, as difflib does)."""
    units = _shown_units(stored)
    shown = "".join(u for u, _s in units)
    if edited == shown:
        return stored
    starts, at = [], 0
    for u, _s in units:
        starts.append(at)
        at += len(u)
    # The usual edit changes one stretch: compare only what lies between the common start and end.
    head = len(os.path.commonprefix([shown, edited]))
    tail = len(os.path.commonprefix([shown[head:][::-1], edited[head:][::-1]]))
    kept = [(0, 0, head)]
    matcher = difflib.SequenceMatcher(None, shown[head:len(shown) - tail], edited[head:len(edited) - tail],
                                      autojunk=False)
    kept += [(head + a, head + b, n) for a, b, n in matcher.get_matching_blocks() if n]
    kept.append((len(shown) - tail, len(edited) - tail, tail))
    out, done = [], 0  # done: how far into ``edited`` is written
    for a, b, n in kept:
        if not n:
            continue
        out.append(edited[done:b])  # typed by the person
        i = bisect.bisect_right(starts, a) - 1
        while i < len(units) and starts[i] < a + n:
            u, s = units[i]
            lo, hi = max(a, starts[i]), min(a + n, starts[i] + len(u))
            out.append(s if (lo, hi) == (starts[i], starts[i] + len(u)) else u[lo - starts[i]:hi - starts[i]])
            i += 1
        done = b + n
    out.append(edited[done:])
    return "".join(out)


_JSON_ESCAPED = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def as_json(obj: Any, indent: int | None = None) -> str:
    """``obj`` as JSON for a person's terminal or a script: a C1 control code or a direction character (which a
    terminal acts on, or which would make the line read otherwise, so the CLI leaves them out of what it prints) is
    written as its JSON escape (``\\u202e``), so the text reads back exactly and the terminal shows it as text."""
    return _JSON_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}",
                             json.dumps(obj, indent=indent, ensure_ascii=False, default=str))
