"""The text a person reads in an HTML mail part (or a page saved in a watched folder), without what it hides from them.

Read in one pass, each character a fixed number of times: a mail of unclosed tags, quotes or a megabyte of style
cannot hold the inbox. Elements are opened and closed as a browser's parser does in the cases mail is written in
(WHATWG HTML 13.2: an end tag stops looking for its element at a cell, a table or a block; a start tag of a block
closes an open paragraph, a cell the cell before it; a formatting element left open is opened again after the block
it was in), so what an element hides ends where a browser ends it. What it hides, as a browser shows it:

- ``display:none``, the ``hidden`` attribute, no opacity, a box of no height or width whose overflow is hidden,
  what a browser never shows (``<template>``, ``<datalist>``, a ``<dialog>`` not open, a closed ``<details>``
  but its first ``<summary>``; script, style, title and the fallback of iframe, noembed and noframes are skipped as
  raw text): nothing inside can show again;
- ``visibility:hidden``: until an element inside says ``visibility:visible`` (CSS lets it);
- a font of 2px or less as computed, by ``font-size`` or the ``font`` shorthand (``0`` in any unit, ``1px``,
  ``0.5pt``, ``0.1em`` of a 16px font): until an element inside sets a font size that is more; small print
  (``0.8em``, ``0.875rem``, ``x-small``) is read;
- text in the colour of what is behind it: the nearest background set on it or around it (``background``,
  ``bgcolor``), or the white page when none is and no style sheet of the mail paints one. A background picture, a
  colour this reader does not know or a text shadow is never judged.

A style's /* comments */ are read as CSS reads them; a <head> whose end tag is left out ends where a browser ends it.
"""

from __future__ import annotations

import html
import math
import re
from typing import NamedTuple

_BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "blockquote", "pre", "hr",
          "details", "summary"}
# Side by side on screen: cells are read apart ("Paid with" and a card joined were no card to the redactor), two that
# show text on one line with " | " between them, as a table reads in plain text: "Password | Kx9mm2qL" is a name and
# its value, not the words "Password Kx9mm2qL" (an empty cell adds nothing)
_CELL = {"td", "th", "dt", "dd"}
CELL_SEPARATOR = " | "
# what a person never reads, up to its own end tag (raw text: no tag inside counts, as in a browser)
_SKIP = ("script", "style", "title", "iframe", "noembed", "noframes")
_SKIP_END = {tag: re.compile(rf"</{tag}\s*>", re.I) for tag in _SKIP}
# what a <head> may hold; any other start tag (or text) ends a head left open, as a browser ends it (13.2.6.4.4)
_IN_HEAD = {"base", "basefont", "bgsound", "link", "meta", "noscript", "template", "head", *_SKIP}
_NEVER_SHOWN = {"template", "datalist", "dialog"}  # a <dialog> shows once it is "open"
_TAG_NAME = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9:-]*)")
_IN_TAG = re.compile(r"[^<>\"']*")
_SPACES = re.compile(r"[ \t\r\f\v\xa0]+")  # &nbsp; too: mail clients write it between groups of digits

# The HTML parser's kinds of element (WHATWG 13.2.4.3): only what decides where an element ends
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
         "basefont", "bgsound", "frame", "keygen", "param"}
_SCOPE = {"applet", "caption", "html", "table", "td", "th", "marquee", "object", "template"}
_MARKER = {"applet", "caption", "td", "th", "marquee", "object", "template"}  # what formatting never outlives
_SPECIAL = _SCOPE | {
    "address", "article", "aside", "blockquote", "body", "button", "center", "colgroup", "dd", "details", "dir",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frameset", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hgroup", "iframe", "li", "listing", "main", "menu", "nav", "noembed", "noframes", "noscript",
    "ol", "p", "plaintext", "pre", "section", "select", "summary", "tbody", "textarea", "tfoot", "thead", "tr", "ul",
    "xmp"}
_FORMATTING = {"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"}
_CLOSES_P = {"address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl", "dd",
             "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
             "hgroup", "hr", "li", "listing", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table",
             "ul", "xmp"}
_TABLE_PARTS = {"caption", "td", "th", "tr", "tbody", "thead", "tfoot"}
_ENDS_OTHERS = _CLOSES_P | _TABLE_PARTS
_AGAIN = "#formatting"  # formatting elements a block closed around, opened again after it (one entry for them all)


# ---- markup --------------------------------------------------------------------------------------

def _without_comments(markup: str) -> str:
    """``markup`` without its <!-- comments --> (one never closed hides the rest, as in a browser), read once.
    "<!-->" and "<!--->" are whole empty comments, and "--!>" ends one, as in a browser (WHATWG 13.2.5.43-52)."""
    out, at, ends = [], 0, {"-->": 0, "--!>": 0}  # where each end is next found (-1: nowhere), each looked up once
    while (start := markup.find("<!--", at)) >= 0:
        out.append(markup[at:start])
        if markup.startswith((">", "->"), start + 4):
            at = markup.find(">", start + 4) + 1
            continue
        for mark, found in ends.items():
            if 0 <= found < start + 4:
                ends[mark] = markup.find(mark, start + 4)
        found = [e + len(mark) for mark, e in ends.items() if e >= 0]
        if not found:
            return "".join(out)
        at = min(found)
    out.append(markup[at:])
    return "".join(out)


def _tag_end(markup: str, at: int, last_quote: dict[str, int]) -> tuple[int, bool]:
    """Where the tag opened at ``at`` ends (just past its ">", True), or where reading it stopped (False): at a "<"
    outside quotes, or the end. A quote is a quote only if it closes later (``last_quote``: each quote's last place)."""
    j, n = at + 1, len(markup)
    while True:
        j = _IN_TAG.match(markup, j).end()  # type: ignore[union-attr]
        if j >= n:
            return j, False
        c = markup[j]
        if c == ">":
            return j + 1, True
        if c == "<":
            return j, False
        j = markup.find(c, j + 1) + 1 if last_quote[c] > j else j + 1  # a quoted value, "<" and ">" and all


_ATTR_NAME = re.compile(r"[^\s\"'>/=]+")
_GAP = re.compile(r"[\s/]*")
_BLANK = re.compile(r"\s*")
_BARE = re.compile(r"[^\s>]*")


def _attributes(tag: str) -> dict[str, str]:
    """The attributes of a start tag ("<p class=x hidden style='...'>"), names in lower case, the first of a name
    kept (as HTML does). The cursor only moves on: each character is read a fixed number of times."""
    attrs: dict[str, str] = {}
    j, n = _TAG_NAME.match(tag).end(), len(tag)  # type: ignore[union-attr]
    while j < n:
        j = _GAP.match(tag, j).end()  # type: ignore[union-attr]
        m = _ATTR_NAME.match(tag, j)
        if m is None:  # a quote or "=" out of place, or the closing ">"
            j += 1
            continue
        name, j, value = m.group().lower(), m.end(), ""
        k = _BLANK.match(tag, j).end()  # type: ignore[union-attr]
        if k < n and tag[k] == "=":
            k = _BLANK.match(tag, k + 1).end()  # type: ignore[union-attr]
            if k < n and tag[k] in "\"'":
                close = tag.find(tag[k], k + 1)
                close = n if close < 0 else close
                value, j = tag[k + 1 : close], close + 1
            else:
                bare = _BARE.match(tag, k)
                value, j = bare.group(), bare.end()  # type: ignore[union-attr]
        attrs.setdefault(name, html.unescape(value) if "&" in value else value)
    return attrs


# ---- what an element shows -----------------------------------------------------------------------

_UNKNOWN = "?"  # a colour or background this reader cannot tell: never judged
Colour = tuple[float, float, float, float] | str | None  # RGBA, _UNKNOWN, or None: not set here (inherited)
_WHITE = (255.0, 255.0, 255.0, 1.0)
_BLACK = (0.0, 0.0, 0.0, 1.0)
_NAMED = {"white": _WHITE, "black": _BLACK, "snow": (255, 250, 250, 1.0), "ghostwhite": (248, 248, 255, 1.0),
          "whitesmoke": (245, 245, 245, 1.0), "ivory": (255, 255, 240, 1.0), "floralwhite": (255, 250, 240, 1.0),
          "seashell": (255, 245, 238, 1.0), "mintcream": (245, 255, 250, 1.0), "azure": (240, 255, 255, 1.0),
          "aliceblue": (240, 248, 255, 1.0), "honeydew": (240, 255, 240, 1.0), "transparent": (0, 0, 0, 0.0)}
_SAME_COLOUR = 10  # at most this far apart on each of red, green, blue (of 255): #f5f5f5 on white is not read
_TINY_FONT_PX = 2.0
_FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0, "x-large": 24.0,
                  "xx-large": 32.0, "xxx-large": 48.0, "initial": 16.0}
_ABSOLUTE_PX = {"px": 1.0, "": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4,
                "q": 96 / 101.6, "rem": 16.0}  # "": a bare number is pixels in the quirks mode mail is read in
_RELATIVE = {"em": 1.0, "%": 0.01, "ex": 0.5, "ch": 0.5}
_BACKGROUND_WORDS = {"none", "repeat", "no-repeat", "repeat-x", "repeat-y", "space", "round", "center", "top",
                     "bottom", "left", "right", "scroll", "fixed", "local", "cover", "contain", "auto", "border-box",
                     "padding-box", "content-box", "inherit", "initial", "unset"}


class _Delta(NamedTuple):
    """What an element's own attributes change for what it holds; None: nothing (inherited from around it)."""

    gone: bool = False  # display:none and the like
    invisible: bool | None = None  # visibility
    font: tuple[bool, float] | None = None  # (True, px) set, or (False, factor) of the font around it
    colour: Colour = None  # of the text
    ground: Colour = None  # painted behind it


_PLAIN = _Delta()


class _Look(NamedTuple):
    gone: bool
    invisible: bool
    font: float  # px
    colour: Colour
    ground: Colour


def _length(value: str) -> tuple[float, str] | None:
    """ "0.875rem" -> (0.875, "rem"); None if no finite number. Strips, never backtracks."""
    number = value.rstrip("abcdefghijklmnopqrstuvwxyz%")
    try:
        v = float(number)
    except ValueError:
        return None
    return (v, value[len(number) :].strip()) if math.isfinite(v) else None


def _font(value: str) -> tuple[bool, float] | None:
    if value in _FONT_KEYWORDS:
        return True, _FONT_KEYWORDS[value]
    if value in ("smaller", "larger"):
        return False, (1 / 1.2 if value == "smaller" else 1.2)
    size = _length(value)
    if size is None:  # calc(), var(): a size this reader cannot work out is taken as readable; nonsense is ignored
        return (True, 16.0) if "(" in value else None
    v, unit = size
    if v < 0:
        return None
    if unit in _ABSOLUTE_PX:
        return True, v * _ABSOLUTE_PX[unit]
    if unit in _RELATIVE:
        return False, v * _RELATIVE[unit]
    return True, (16.0 if v else 0.0)  # vw, vh...: the window's size is unknown


_NOT_A_SIZE = {"deg", "grad", "rad", "turn"}  # an oblique angle in ``font``


def _font_shorthand(value: str) -> tuple[bool, float] | None:
    """The size ``font`` sets ("bold 0/0 a", "italic 1px serif"): the first length or size word (a bare number but
    0 is a weight), before any "/" of a line height. None if it names none (``inherit``, ``caption``)."""
    for word in value.replace("/", " ").split():
        if word in _FONT_KEYWORDS or word in ("smaller", "larger") or word.startswith("calc("):
            return _font(word)
        size = _length(word)
        if size is not None and (size[1] or size[0] == 0) and size[1] not in _NOT_A_SIZE:
            return _font(word)
    return None


_CSS_SKIP = re.compile(r"/\*|\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?", re.S)


def _without_css_comments(style: str) -> str:
    """``style`` with each /* comment */ a space, as CSS reads it (one never closed runs to the end); a "/*" in a
    quoted string is no comment. The cursor only moves on: each character is read a fixed number of times."""
    if "/*" not in style:
        return style
    out, at = [], 0
    while (m := _CSS_SKIP.search(style, at)) is not None:
        if m.group() != "/*":
            out.append(style[at : m.end()])
            at = m.end()
            continue
        out.append(style[at : m.start()] + " ")
        end = style.find("*/", m.end())
        if end < 0:
            return "".join(out)
        at = end + 2
    out.append(style[at:])
    return "".join(out)


def _channel(s: str, whole: float) -> float | None:
    size = _length(s)
    if size is None or size[1] not in ("", "%"):
        return None
    v = size[0] * whole / 100 if size[1] == "%" else size[0]
    return min(max(v, 0.0), whole)


def _colour(value: str, legacy: bool = False) -> Colour:
    """A CSS colour as RGBA; None if it says to inherit; _UNKNOWN if this reader cannot tell. ``legacy``: an
    attribute (bgcolor="ffffff"), where the "#" may be left out."""
    v = value.strip().lower()
    if not v or v in ("inherit", "currentcolor", "unset"):
        return None
    if v in _NAMED:
        return _NAMED[v]
    if legacy and not v.startswith("#") and len(v) in (3, 6) and all(c in "0123456789abcdef" for c in v):
        v = "#" + v
    if v.startswith("#") and len(v) in (4, 5, 7, 9) and all(c in "0123456789abcdef" for c in v[1:]):
        digits = v[1:] if len(v) > 5 else "".join(c * 2 for c in v[1:])
        rgba = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
        return (rgba[0], rgba[1], rgba[2], rgba[3] / 255 if len(rgba) == 4 else 1.0)
    if v.startswith(("rgb(", "rgba(")) and v.endswith(")"):
        parts = [p for p in re.split(r"[\s,/]+", v[v.index("(") + 1 : -1]) if p]
        if len(parts) in (3, 4):
            rgb = [_channel(p, 255.0) for p in parts[:3]]
            alpha = _channel(parts[3], 1.0) if len(parts) == 4 else 1.0
            if None not in rgb and alpha is not None:
                return (rgb[0], rgb[1], rgb[2], alpha)  # type: ignore[return-value]
    return _UNKNOWN


def _ground(value: str) -> Colour:
    """What ``background`` paints: its colour, None if nothing, _UNKNOWN for a picture, a gradient or a colour this
    reader does not know."""
    v = value.strip().lower()
    if "(" in v and not v.startswith(("rgb(", "rgba(")):
        return _UNKNOWN  # url(...), linear-gradient(...), hsl(...)
    colour: Colour = None
    for word in [v] if v.startswith("rgb") else v.split():
        c = _colour(word)
        if isinstance(c, tuple):
            colour = c
        elif word not in _BACKGROUND_WORDS and _length(word) is None:
            return _UNKNOWN
    if isinstance(colour, tuple) and colour[3] < 1:
        return None if colour[3] == 0 else _UNKNOWN  # see-through: what is behind shows
    return colour


def _delta(tag: str, attrs: dict[str, str]) -> _Delta:
    """What the element hides or changes, from its attributes and inline style (read by splitting on ";" and ":",
    each declaration in order, the last one of a property kept: no pattern that can read a character twice)."""
    gone = "hidden" in attrs or (tag in _NEVER_SHOWN and (tag != "dialog" or "open" not in attrs))
    invisible: bool | None = None
    font: tuple[bool, float] | None = None
    said = attrs.get("color") if tag == "font" else attrs.get("text") if tag == "body" else None
    colour: Colour = _colour(said, legacy=True) if said else None
    ground: Colour = None
    if "bgcolor" in attrs:
        ground = _colour(attrs["bgcolor"], legacy=True)
        ground = _UNKNOWN if isinstance(ground, tuple) and ground[3] < 1 else ground
    if attrs.get("background"):
        ground = _UNKNOWN  # a picture
    overflow_hidden, no_box, fill, shadow = False, False, None, False
    for declaration in _without_css_comments(attrs.get("style", "")).split(";"):
        prop, colon, value = declaration.partition(":")
        if not colon:
            continue
        prop, value = prop.strip().lower(), value.partition("!")[0].strip().lower()
        if prop == "display":
            gone = gone or value == "none"
        elif prop == "visibility":
            invisible = True if value in ("hidden", "collapse") else False if value == "visible" else invisible
        elif prop == "opacity":
            size = _length(value)
            if size is not None and size[1] in ("", "%"):
                gone = gone or size[0] / (100 if size[1] == "%" else 1) < 0.05
        elif prop == "font-size":
            font = _font(value) or font
        elif prop == "font":
            font = _font_shorthand(value) or font
        elif prop == "color":
            colour = _colour(value)
        elif prop == "-webkit-text-fill-color":
            fill = _colour(value)
        elif prop == "text-shadow":
            shadow = value not in ("none", "")
        elif prop in ("background", "background-color"):
            ground = _ground(value)
        elif prop == "background-image":
            ground = _UNKNOWN if value not in ("none", "") else ground
        elif prop in ("overflow", "overflow-x", "overflow-y"):
            overflow_hidden = overflow_hidden or any(w in ("hidden", "clip") for w in value.split())
        elif prop in ("height", "max-height", "width", "max-width"):
            size = _length(value)
            no_box = no_box or (size is not None and size[0] == 0)
    colour = fill if fill is not None else colour  # what WebKit mail programs paint the letters in
    colour = _UNKNOWN if shadow else colour
    return _Delta(gone or (overflow_hidden and no_box), invisible, font, colour, ground)


def _compose(outer: _Delta, inner: _Delta) -> _Delta:
    """One delta doing what ``outer`` then ``inner`` do."""
    font = outer.font
    if inner.font is not None:
        absolute, v = inner.font
        font = inner.font if absolute or outer.font is None else (outer.font[0], outer.font[1] * v)
    return _Delta(outer.gone or inner.gone, inner.invisible if inner.invisible is not None else outer.invisible,
                  font, inner.colour if inner.colour is not None else outer.colour,
                  inner.ground if inner.ground is not None else outer.ground)


def _look(around: _Look, d: _Delta) -> _Look:
    font = around.font if d.font is None else d.font[1] if d.font[0] else around.font * d.font[1]
    return _Look(around.gone or d.gone, d.invisible if d.invisible is not None else around.invisible, font,
                 d.colour if d.colour is not None else around.colour,
                 d.ground if d.ground is not None else around.ground)


def _hides(look: _Look) -> bool:
    if look.gone or look.invisible or look.font <= _TINY_FONT_PX:
        return True
    c, g = look.colour, look.ground
    if not isinstance(c, tuple) or not isinstance(g, tuple):
        return False
    a = c[3]  # letters partly see-through show what is behind them
    return all(abs(c[i] * a + g[i] * (1 - a) - g[i]) <= _SAME_COLOUR for i in range(3))


def _sheets(markup: str) -> list[str]:
    """The <style> sheets of the mail, each as written (one not closed runs to the end). Read once."""
    low, at, out = markup.lower(), 0, []
    while (start := low.find("<style", at)) >= 0:
        opened = low.find(">", start)
        end = low.find("</style", start)
        out.append(markup[(opened + 1 if 0 <= opened < (end if end >= 0 else len(low)) else start):
                          end if end >= 0 else len(markup)])
        if end < 0:
            break
        at = end
    return out


def _sheets_paint(sheets: list[str]) -> bool:
    """Whether a <style> sheet of the mail paints a background (its dark theme, a class on a header cell): white
    text is then not judged against the white page."""
    return any("background" in sheet.lower() for sheet in sheets)


# a selector a sheet's rule is read for: an element's name, one class or id, or both ("p", ".pre", "#x", "div.pre")
_SIMPLE_SELECTOR = re.compile(r"([a-zA-Z][a-zA-Z0-9-]*)?(?:([.#])(-?[_a-zA-Z][\w-]*))?")


def _sheet_rules(sheets: list[str]) -> dict[str, _Delta]:
    """What the sheets' rules hide, by selector ("p", ".pre", "#x", "div.pre"): display:none, visibility, no opacity,
    a tiny font (colours are not judged from a sheet). Only rules of a simple selector, outside an at-rule, are
    read: a rule for a phone's screen or a printer (@media), or for elements in a place (".a span", "p:hover"),
    would be a guess, and text a person sees is never left out on a guess. Each brace is read once."""
    rules: dict[str, _Delta] = {}

    def rule(head: str, body: str) -> None:
        hides = _delta("", {"style": body})
        hides = _Delta(hides.gone, hides.invisible, hides.font)
        if hides == _PLAIN:
            return
        for selector in head.split(","):
            m = _SIMPLE_SELECTOR.fullmatch(selector.strip())
            if m and (m.group(1) or m.group(2)):
                key = (m.group(1) or "").lower() + (m.group(2) or "") + (m.group(3) or "")
                rules[key] = _compose(rules[key], hides) if key in rules else hides

    for sheet in sheets:
        css = _without_css_comments(sheet)
        start, depth, head, body, nested = 0, 0, "", 0, False
        for m in _BRACES.finditer(css):
            if depth == 0:
                if m.group() == "{":
                    head, body, depth, nested = css[start:m.start()].strip(), m.end(), 1, False
                else:  # the end of a statement at-rule (@import ...;), or a stray brace
                    start = m.end()
            elif m.group() == "{":
                depth, nested = depth + 1, True
            elif m.group() == "}":
                depth -= 1
                if depth == 0:
                    if not head.startswith("@") and not nested:  # an at-rule's blocks are skipped whole
                        rule(head, css[body:m.start()])
                    start = m.end()
        if depth == 1 and not head.startswith("@"):  # a rule left open at the sheet's end ends there, as in CSS
            rule(head, css[body:])
    return rules


_BRACES = re.compile(r"[{};]")


def _by_sheet(rules: dict[str, _Delta], tag: str, attrs: dict[str, str]) -> _Delta | None:
    """What the sheets' rules do to this element, the element's own name's first, then its classes', then its id's
    (as CSS ranks them); None: no rule names it."""
    keys = [tag]
    for cls in attrs.get("class", "").split():
        keys += [f".{cls}", f"{tag}.{cls}"]
    if attrs.get("id"):
        keys += [f"#{attrs['id']}", f"{tag}#{attrs['id']}"]
    found = [rules[k] for k in keys if k in rules]
    if not found:
        return None
    delta = found[0]
    for d in found[1:]:
        delta = _compose(delta, d)
    return delta


class _Open:
    """The elements open at a point of the markup, each with how what it holds looks. Each element is pushed and
    popped once (formatting ones opened again go in one entry): work in proportion to the markup."""

    def __init__(self, page: _Look, rules: dict[str, _Delta] | None = None) -> None:
        self.rules = rules or {}  # what the mail's style sheets hide, by selector (``_sheet_rules``)
        self.tags: list[str] = []
        self.deltas: list[_Delta] = []
        self.looks: list[_Look] = [page]  # looks[i + 1]: inside tags[i]
        self.hiding: list[bool] = [_hides(page)]  # the same, for what it holds: hidden or not
        self.places: dict[str, list[int]] = {}  # tag -> where it is open, lowest first
        self.scope: list[int] = [-1]  # where the elements an end tag stops looking at are
        self.special: list[int] = [-1]
        self.closed: list[tuple[int, _Look | None]] = []  # each closed <details>: where, and its <summary>'s look

    @property
    def hidden(self) -> bool:
        return self.hiding[-1]

    def _top(self, tag: str, other: str = "") -> int:
        """Where the innermost open ``tag`` (or ``other``) is; -1 if none is open."""
        places, other_places = self.places.get(tag), self.places.get(other) if other else None
        top = places[-1] if places else -1
        return max(top, other_places[-1]) if other_places else top

    def _push(self, tag: str, delta: _Delta, around: _Look | None = None) -> None:
        """Opens ``tag`` inside what is open; ``around``: the look it is in, if not that of the element it is in."""
        at = len(self.tags)
        self.tags.append(tag)
        self.deltas.append(delta)
        if delta is _PLAIN and around is None:
            self.looks.append(self.looks[-1])
            self.hiding.append(self.hiding[-1])
        else:
            look = _look(self.looks[-1] if around is None else around, delta)
            self.looks.append(look)
            self.hiding.append(_hides(look))
        places = self.places.get(tag)
        if places is None:
            self.places[tag] = [at]
        else:
            places.append(at)
        if tag in _SPECIAL:
            self.special.append(at)
            if tag in _SCOPE:
                self.scope.append(at)

    def _pop_to(self, i: int) -> None:
        """Closes the element at ``i`` and all inside it; formatting elements inside (not inside a cell) are opened
        again after it, as a browser does: a <font> hidden and left open in a paragraph hides what follows it."""
        again: _Delta | None = None
        if self.tags[i] not in _MARKER:
            for at in range(i + 1, len(self.tags)):
                tag, delta = self.tags[at], self.deltas[at]
                if tag in _MARKER:
                    break
                if delta is not _PLAIN and (tag in _FORMATTING or tag == _AGAIN):
                    again = delta if again is None else _compose(again, delta)
        for tag in reversed(self.tags[i:]):
            self.places[tag].pop()
        del self.tags[i:], self.deltas[i:], self.looks[i + 1 :], self.hiding[i + 1 :]
        while self.scope[-1] >= i:
            self.scope.pop()
        while self.special[-1] >= i:
            self.special.pop()
        while self.closed and self.closed[-1][0] >= i:
            self.closed.pop()
        if again is not None:
            self._push(_AGAIN, again)

    def start(self, tag: str, markup: str) -> None:
        """A start tag: what it closes, then it opens (unless void, skipped, or self-closed in SVG or MathML: HTML
        ignores "/>" on its own elements, so <div style="display:none"/> opens a hidden div)."""
        if tag in _ENDS_OTHERS:
            self._end_before(tag)
        if tag in _VOID or tag in _SKIP:
            return
        if markup.endswith("/>") and (tag in ("svg", "math") or self._top("svg", "math") >= 0):
            return
        attrs = _attributes(markup) if len(markup) > len(tag) + 2 else {}
        delta = _delta(tag, attrs) if attrs or tag in _NEVER_SHOWN else _PLAIN
        sheet = _by_sheet(self.rules, tag, attrs) if self.rules else None
        if sheet is not None:  # its own style attribute goes over what a sheet says
            delta = sheet if delta is _PLAIN else _compose(sheet, delta)
        around: _Look | None = None
        if tag == "details" and "open" not in attrs:  # closed: it shows its first <summary> alone
            self.closed.append((len(self.tags), _look(self.looks[-1], delta)))
            delta = delta._replace(gone=True)
        elif tag == "summary" and self.closed and self.closed[-1][0] == len(self.tags) - 1:
            around, self.closed[-1] = self.closed[-1][1], (len(self.tags) - 1, None)  # a second one is hidden
        self._push(tag, delta, around)

    def _end_before(self, tag: str) -> None:
        """What a browser closes before it opens ``tag``: an open paragraph before a block, the list item, cell or
        row before another."""
        scope = self.scope[-1]
        if tag in _CLOSES_P and (p := self._top("p")) > scope and p > self._top("button"):
            self._pop_to(p)
        if tag == "li":
            if (li := self._top("li")) > scope and li > self._top("ul", "ol"):
                self._pop_to(li)
        elif tag in ("dd", "dt"):
            if (d := self._top("dd", "dt")) > scope and d > self._top("dl"):
                self._pop_to(d)
        elif tag in _TABLE_PARTS:
            table = self._top("table")
            if tag in ("td", "th"):
                inner = self._top("td", "th")
            elif tag == "tr":
                inner = row if (row := self._top("tr")) > table else self._top("td", "th")
            else:  # tbody, thead, tfoot, caption: all the table holds so far
                inner = table + 1 if 0 <= table < len(self.tags) - 1 else -1
            if inner > table:
                self._pop_to(inner)

    def end(self, tag: str) -> None:
        """An end tag closes its element where a browser's parser would, else nothing. </body> and </html> close
        nothing: what follows them is still in the body."""
        places = self.places.get(tag)
        if not places or tag in ("body", "html"):
            return
        i = places[-1]
        if tag in _TABLE_PARTS:
            ok = i > self._top("table")
        elif tag == "table":
            ok = True
        elif tag in _SPECIAL:
            ok = i >= self.scope[-1]
        else:
            ok = i > self.special[-1]
        if ok:
            self._pop_to(i)


def html_to_text(markup: str) -> str:
    """The text a person reads in an HTML part, read in one pass: a mail of unclosed tags or quotes cannot hold the
    inbox (the standard parser read the rest of the part again at each one: 60 KB took 40 s, and every later check
    started the same mail again). A "<" that opens no tag is text. What an element hides (see the module's
    docstring) is left out up to where a browser ends the element (one never closed hides the rest). Cells shown
    side by side are read apart, by CELL_SEPARATOR where both show text."""
    markup = _without_comments(markup)
    sheets = _sheets(markup)  # a sheet inside a comment is none: a browser reads no rule of it
    page = _Look(False, False, 16.0, _BLACK, _UNKNOWN if _sheets_paint(sheets) else _WHITE)
    last_quote = {q: markup.rfind(q) for q in "\"'"}
    out: list[str] = []
    tree = _Open(page, _sheet_rules(sheets))
    at, in_head = 0, False  # in a <head>: its end tag may be left out, and text or a tag of the body ends it
    line_shows, cell_opened = False, False  # text shown on this line so far; a cell opened since

    def text(piece: str) -> None:
        nonlocal in_head, line_shows, cell_opened
        if in_head and piece.strip():
            in_head = False
        if not tree.hidden and not in_head:
            if piece.strip():
                if cell_opened and line_shows:
                    out.append(CELL_SEPARATOR)
                line_shows, cell_opened = True, False
            out.append(piece)

    while (lt := markup.find("<", at)) >= 0:
        end, closed = _tag_end(markup, lt, last_quote)
        name = _TAG_NAME.match(markup, lt)
        if not closed or (name is None and markup[lt + 1 : lt + 2] not in ("!", "?")):
            text(markup[at:end])  # no tag: what was read is text, never read again
            at = end
            continue
        text(markup[at:lt])
        at = end
        if name is None:  # <!DOCTYPE ...>, <?xml ...?>
            continue
        tag, closing = name.group(2).lower(), bool(name.group(1))
        if tag == "head" or (in_head and (tag not in _IN_HEAD if not closing else tag in ("body", "html", "br"))):
            in_head = tag == "head" and not closing
            if tag == "head":
                continue
        if in_head and tag == "noscript":
            continue
        if closing:
            tree.end(tag)
        else:
            tree.start(tag, markup[lt:end])
        if tag in _BLOCK:
            text("\n")
            line_shows = cell_opened = False
        elif tag in _CELL:
            text(" ")
            cell_opened = cell_opened or not closing
        elif not closing and tag in _SKIP:
            skip = _SKIP_END[tag].search(markup, at)
            at = skip.end() if skip else len(markup)
    text(markup[at:])
    result = _SPACES.sub(" ", html.unescape("".join(out)))
    return re.sub(r"\n\s*\n+", "\n\n", result).strip()
