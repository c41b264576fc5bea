"""The words a regular expression's every match holds, read from the pattern itself, so that a text lacking them
is not searched at all. Looking for a word with ``in`` costs a few hundredths of a regex search (a regex of
alternatives is tried at every character of the text); a pattern that cannot match a text need not read it.

``needs(pattern)`` is a test of a ``lowered`` text: False only where no match can exist. What it does not know how
to read (a character class of categories, a back-reference, a letter beyond ASCII) it takes as needing nothing,
so it never changes what a search finds, only whether a hopeless one is run. It reads the pattern with the parser
re.compile itself uses (``re._parser``, private, in the standard library since Python 3.11).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Union

try:  # private modules of the standard library: a Python without them (or with another shape) gets no skipping
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.11 and 3.12 have them
    _c = _p = None

# Letters beyond ASCII that IGNORECASE matches to an ASCII letter but whose lower case is not it (dotted and
# dotless i, long s): read as that letter. Every other character an ASCII letter matches lowers to it.
_AS_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
_MANY = 200  # the most spellings of one run of a pattern that are kept (beyond it the run is cut in two)

# A formula: True (nothing needed), a word, or ("and" | "or", parts)
Formula = Union[bool, str, tuple[str, tuple["Formula", ...]]]  # noqa: UP007  (a recursive alias)


def lowered(text: str) -> str:
    """``text`` as ``needs`` reads it: in lower case, with the letters IGNORECASE reads as ASCII ones made so."""
    return text.lower() if text.isascii() else text.translate(_AS_ASCII).lower()


def _ascii(code: int) -> str | None:
    return chr(code).lower() if code < 128 else None


def _chars(items: list[tuple[Any, Any]]) -> set[str] | None:
    """The characters a class of plain ASCII characters and ranges matches, in lower case; None for any other."""
    out: set[str] = set()
    for op, av in items:
        if op is _c.LITERAL and av < 128:
            out.add(chr(av).lower())
        elif op is _c.RANGE and av[1] < 128 and av[1] - av[0] <= 30:
            out |= {chr(c).lower() for c in range(av[0], av[1] + 1)}
        else:
            return None
    return out


def _shortest(words: set[str]) -> tuple[str, ...]:
    """The words without those holding another of them (holding "ignore", a text holds "ignorez" or not: no matter)."""
    kept: list[str] = []
    for w in sorted(words, key=len):
        if not any(k in w for k in kept):
            kept.append(w)
    return tuple(kept)


def _all(parts: list[Formula]) -> Formula:
    flat: list[Formula] = []
    for p in parts:
        if p is not True:
            flat += p[1] if isinstance(p, tuple) and p[0] == "and" else [p]
    flat = list(dict.fromkeys(flat))
    return True if not flat else flat[0] if len(flat) == 1 else ("and", tuple(flat))


def _any(parts: list[Formula]) -> Formula:
    if any(p is True for p in parts):
        return True
    flat: list[Formula] = []
    for p in parts:
        flat += p[1] if isinstance(p, tuple) and p[0] == "or" else [p]
    words = [p for p in flat if isinstance(p, str)]
    flat = [p for p in flat if not (isinstance(p, str) and any(w != p and w in p for w in words))]
    flat = list(dict.fromkeys(flat))
    return flat[0] if len(flat) == 1 else ("or", tuple(flat))


def _words(spellings: set[str]) -> Formula:
    return _any(list(_shortest(spellings)))


def _sequence(items: list[tuple[Any, Any]]) -> tuple[Formula, set[str] | None]:
    """(what a match of the items needs beyond their spellings, every text they can match if few, else None)."""
    parts: list[Formula] = []
    run: set[str] = {""}  # the spellings of the items read so far since the last one of no known spelling
    whole: set[str] | None = {""}
    for op, av in items:
        need, spell = _node(op, av)
        parts.append(need)
        if spell is not None and len(run) * len(spell) <= _MANY:
            run = {a + b for a in run for b in spell}
        else:
            if "" not in run:
                parts.append(_words(run))
            run = set(spell) if spell is not None else {""}
        if whole is not None and spell is not None and len(whole) * len(spell) <= _MANY:
            whole = {a + b for a in whole for b in spell}
        else:
            whole = None
    if whole is not None:
        return True, whole
    if "" not in run:
        parts.append(_words(run))
    return _all(parts), None


def _node(op: Any, av: Any) -> tuple[Formula, set[str] | None]:
    """(what a match of one item needs beyond its spellings, its spellings if few, else None). An item whose
    spellings are known needs nothing more: the sequence holding it reads them in its run."""
    if op is _c.LITERAL:
        ch = _ascii(av)
        return True, ({ch} if ch is not None else None)
    if op is _c.IN:
        return True, _chars(av)
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return True, {""}  # a place, not a character: what a look-around needs is not asked
    if op is _c.SUBPATTERN:
        return _sequence(av[3].data)  # a case-sensitive part is looked for lowered too: no less is found
    if op is _c.ATOMIC_GROUP:
        return _sequence(av.data)
    if op is _c.BRANCH:
        alternatives = [_sequence(b.data) for b in av[1]]
        spell: set[str] | None = None
        if all(s is not None for _, s in alternatives):
            spell = set().union(*(s for _, s in alternatives if s is not None))
            if len(spell) <= _MANY:
                return True, spell
        return _any([_all([n, _words(s)]) if s is not None and "" not in s else n for n, s in alternatives]), None
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        least, most, sub = av
        need, once = _sequence(sub.data)
        if once is not None and most != _c.MAXREPEAT and most <= 4:
            spellings, so_far = ({""} if least == 0 else set()), {""}
            for n in range(1, most + 1):
                so_far = {a + b for a in so_far for b in once}
                if len(so_far) > _MANY:
                    break
                if n >= least:
                    spellings |= so_far
            else:
                if len(spellings) <= _MANY:
                    return True, spellings
        if least == 0:
            return True, None
        return (_all([need, _words(once)]) if once is not None and "" not in once else need), None
    return True, None  # any character, a category, a back-reference, a condition: nothing known


def formula(pattern: re.Pattern[str]) -> Formula:
    """What every match of ``pattern`` needs a ``lowered`` text to hold (True: nothing that can be told)."""
    if _p is None:
        return True
    try:
        need, spell = _sequence(_p.parse(pattern.pattern, pattern.flags).data)
    except (AttributeError, TypeError, ValueError, IndexError, re.error):  # a parser of another shape: run it always
        return True
    return _all([need, _words(spell)]) if spell is not None and "" not in spell else need


def _cost(f: Formula) -> tuple[int, int]:
    """How soon to look at a part of an "and": one likelier missing (its shortest word longer) and cheaper first."""
    if f is True or f is False:
        return (0, 0)
    if isinstance(f, str):
        return (-len(f), 1)
    costs = [_cost(p) for p in f[1]]
    if f[0] == "or":
        return (max(c[0] for c in costs), sum(c[1] for c in costs))
    return (min(c[0] for c in costs), min(c[1] for c in costs))


def _test(f: Formula) -> Callable[[str], bool]:
    if f is True:
        return lambda text: True
    if isinstance(f, str):
        return lambda text: f in text
    assert isinstance(f, tuple)
    if f[0] == "or":
        words = tuple(p for p in f[1] if isinstance(p, str))
        rest = tuple(_test(p) for p in f[1] if not isinstance(p, str))

        def either(text: str) -> bool:
            for w in words:
                if w in text:
                    return True
            for t in rest:
                if t(text):
                    return True
            return False

        return either
    tests = tuple(_test(p) for p in sorted(f[1], key=_cost))

    def every(text: str) -> bool:
        for t in tests:
            if not t(text):
                return False
        return True

    return every


def needs(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """A test of a ``lowered`` text, False only where ``pattern`` cannot match it (``pattern.search`` finds
    nothing in the text it was lowered from)."""
    return _test(formula(pattern))
