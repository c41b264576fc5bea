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
``direction_read``) where a person approves words as they will be sent: an approval card, its notification, the CLI.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache

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
# A subdivision flag (England, Scotland, Wales): the black flag, its region's code in tag letters and digits (its
# region's two letters or three digits and one to four more, as CLDR's subdivision ids), then the cancel tag. Too short to say anything: kept.
_FLAG = re.compile("\U0001F3F4[\U000E0030-\U000E0039\U000E0061-\U000E007A]{3,7}\U000E007F")
_TAG = re.compile("[\U000E0001\U000E0020-\U000E007F]")


def spelled(text: str) -> str:
    """``text`` with what tag characters hide written out: each one of U+E0020–E007E as the ASCII character it stands
    for (U+E0041 as "A"), the language and cancel tags dropped, so words in them are seen by a person and read by the
    memory guard as a model reads them. A subdivision flag's tags (\U0001F3F4 then "gbsct" in tags) stay: they
    draw the flag and spell no words."""
    if not has_tags(text):
        return text
    flags = [m.span() for m in _FLAG.finditer(text)]
    if not flags:
        return text.translate(_SPELLS)
    out, at = [], 0
    for start, end in flags:
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
def _direction_res() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(a direction character or its code with the backslashes before it, a code with its backslashes, one)"""
    one = char_class(DIRECTION)
    return (re.compile(rf"(\\*)(?:({one})|({_CODE}))"), re.compile(rf"(\\+)({_CODE})"), re.compile(one))


def has_direction(text: str) -> bool:
    """Whether ``text`` holds a character that turns around the words after it (``DIRECTION``)."""
    return _direction_res()[2].search(text) is not None


def direction_shown(text: str) -> str:
    """``text`` with each direction character written out as ``\\u202e`` and the like, so words read in the order they
    are stored and the character is seen where it is. A backslash of the text's own before such a code is written
    twice ("\\\\u202e" is the six characters "\\u202e" as written), so ``direction_read`` gives back exactly ``text``."""

    def one(m: re.Match[str]) -> str:
        slashes, char, code = m.groups()
        if char is not None:
            return "\\" * (2 * len(slashes) + 1) + f"u{ord(char):04x}"
        return "\\" * (2 * len(slashes)) + code

    return _direction_res()[0].sub(one, text) if "\\" in text or has_direction(text) else text


def direction_read(shown: str) -> str:
    """The text ``direction_shown`` wrote out as ``shown`` (or a person edited there): an odd run of backslashes
    before a direction character's code stands for that character after half the backslashes before it, an even run
    for half the backslashes and the code as written."""

    def one(m: re.Match[str]) -> str:
        slashes, code = m.groups()
        half = "\\" * (len(slashes) // 2)
        return half + (chr(int(code[1:], 16)) if len(slashes) % 2 else code)

    return _direction_res()[1].sub(one, shown) if "\\" in shown else shown
