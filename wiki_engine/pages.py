"""Wiki pages: markdown with a small YAML-style front matter, [[links]] and numbered [n] citations.

A page file looks like::

    ---
    title: Bob's allergies
    scope: private/alice
    category: health
    updated: 2025-03-01T10:00:00Z
    verified: false
    ---

    Bob is allergic to peanuts [1]. See [[Family]].

    ## Sources

    [1]: 9f2c...   (a source id)

Pages live in ``wiki/<scope>/<slug>.md``. A corrupt file raises PageFormatError with the path and
what to fix; listing a scope skips such files and reports them instead of failing. So is anything there that is not
a file (a folder or a named pipe named like a page: never opened to wait on) or cannot be read. A page that cannot be
written (a read-only folder, a full disk) raises PageWriteError, naming the folder and what to do.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import re
import stat
import time
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .render import iso_utc
from .scopes import Scope

REQUIRED = ("title", "scope", "category", "updated", "verified")
_CITE_DEF = re.compile(r"^\[(\d{1,6})\]:\s*(\S+)\s*$", re.M)
# A citation in a page's text (a model's, an answer's): "[n]" wherever it stands, before a colon too ("Her sizes
# [1]:" over a list, "To read it [1]:" over code), as the window links it to its source; a claim resting on it goes
# with it. A markdown link's words ("[1](https://…)") are no citation. A page file's own Sources list ("[1]: <id>"
# under its last "## Sources") is read apart from its text (_CITE_DEF), and a model's own "[1]: …" list leaves its
# text before it is read (runtime_host.memory_jobs.tidy_body).
CITE = re.compile(r"\[(?P<cite>\d{1,6})\](?!\()")
# A link to a page ([[Title]], [[Title|label]], [[Title#part]]) on one line, as the window makes it (never across a
# line break); any link, to a page or within this one ([[#part]]). Neither spans a "[". Read outside code only
# (``_outside_code``). In a table row a link's label is written "[[Title\\|label]]" (a bare "|" there ends the
# cell: ``links_fit_tables``), and read so anywhere.
_LINK = re.compile(r"\[\[([^\[\]|#\n]+?)(?:(?:\\\||[|#])[^\[\]\n]*)?\]\]")
_ANY_LINK = re.compile(r"\[\[[^\[\]\n]*\]\]")
_SOURCES_HEADING = "\n## Sources\n"


class PageFormatError(ValueError):
    """A page file could not be read as a page; the message names the file and what to fix."""


class PageWriteError(ValueError):
    """A page file could not be written or removed (its folder is read-only, the disk is full); the message names
    the file, its folder and what to do. Nothing of the page is changed."""


_BEYOND_AZ = re.compile(r"[^\W\d_a-z]")  # a letter other than a-z: an accented Latin one, or of another script


def _own_letters(low: str) -> str:
    """A lower-case title as a file name of its own letters and digits, "-" between words, at most 80 letters and
    200 bytes (a file name holds 255)."""
    s = re.sub(r"[\W_]+", "-", low).strip("-")[:80]
    while len(s.encode("utf-8")) > 200:
        s = s[:-1]
    return s.strip("-") or "page"


def slugify(title: str) -> str:
    """The page's file name: ASCII for a title of letters a-z (as it always was), the title's own letters, NFC and
    lower-case, for any other ("Þór" is ``þór``, "Søren Holm" ``søren-holm``; a Cyrillic, Greek, Arabic or CJK
    title used to become "page", and a Latin one lost its accented letters: "Þór" and "Ýr" were both ``r``, and the
    second was titled "Ýr 2"). At most 80 letters and 200 bytes (a file name holds 255)."""
    low = unicodedata.normalize("NFC", title.lower())
    if _BEYOND_AZ.search(low):
        return _own_letters(low)
    s = re.sub(r"[^a-z0-9]+", "-", low).strip("-")
    return s[:80] or "page"


_OTHER_SCRIPT = re.compile(r"[^\W\d_a-z\u00C0-\u024F]")  # a letter of a script other than Latin


def earlier_slug(title: str) -> str:
    """The file name a page of ``title`` had before Latin titles kept their accented letters (``slugify`` then):
    what ``PageStore.renamed_once`` renames."""
    low = title.lower()
    if _OTHER_SCRIPT.search(low):
        return _own_letters(low)
    s = re.sub(r"[^a-z0-9]+", "-", low).strip("-")
    return s[:80] or "page"


@dataclass(frozen=True)
class Page:
    """One wiki page. ``citations`` maps citation number to source id; ``body`` excludes the Sources list."""

    title: str
    scope: str
    category: str
    body: str
    citations: dict[int, str] = field(default_factory=dict)
    updated: str = ""
    verified: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return slugify(self.title)

    @property
    def key(self) -> str:
        """The page id used in search hits: ``page:<scope>/<slug>``."""
        return f"page:{self.scope}/{self.slug}"

    @property
    def links(self) -> list[str]:
        return links_in(self.body)

    def cited_numbers(self) -> list[int]:
        return sorted({int(n) for n in CITE.findall(self.body)})

    def to_markdown(self) -> str:
        fm = [
            "---",
            f"title: {self.title}",
            f"scope: {self.scope}",
            f"category: {self.category}",
            f"updated: {self.updated or iso_utc(time.time())}",
            f"verified: {'true' if self.verified else 'false'}",
        ]
        fm += [f"{k}: {v}" for k, v in sorted(self.extra.items())]
        fm.append("---")
        out = "\n".join(fm) + "\n\n" + self.body.strip() + "\n"
        # The file's own Sources list is its last "## Sources" heading: one inside the body stays body text.
        if self.citations or _SOURCES_HEADING in "\n" + self.body.strip() + "\n":
            out += _SOURCES_HEADING + "\n" + "\n".join(f"[{n}]: {sid}" for n, sid in sorted(self.citations.items())) + "\n"
        return out

    def visible_to(self, may_see_source: Callable[[str], bool]) -> Page:
        """This page as a viewer sees it: citations whose source the viewer may not see are removed."""
        hidden = {n for n, sid in self.citations.items() if not may_see_source(sid)}
        if not hidden:
            return self
        body = CITE.sub(lambda m: "" if int(m.group(1)) in hidden else m.group(0), self.body)
        return replace(self, body=body, citations={n: s for n, s in self.citations.items() if n not in hidden})


    def without_sources(self, gone: set[str]) -> Page:
        """This page without every claim that rests on the ``gone`` sources: a sentence (or list item) that
        cites one of them is removed, even if it also cites a kept source (which of its words came from the
        gone one cannot be told apart, and left citing only the kept source it would put the gone source's
        words in that one's mouth; the page stays marked for re-synthesis from what is left). Uncited sentences
        just before a citation rest on it (a paragraph is often cited once, at its end, and may be wrapped over
        several lines) and go with it. No citation to a gone source, and none of its words, is left behind."""
        dead = {n for n, sid in self.citations.items() if sid in gone}
        if not dead:
            return self
        lines: list[str] = []
        for block in paragraphs(self.body.split("\n")):  # a paragraph, list item or quote with its wrapped lines
            lines.extend(_drop_cited(block, dead))
        body = without_empty_sections(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n"))
        return replace(self, body=body, citations={n: s for n, s in self.citations.items() if n not in dead})

    def without_names(self, names_gone: Callable[[str], bool]) -> Page:
        """This page without the names it gives to what only deleted sources said: each [[link]] and each heading
        that cites nothing, whose text (a link's title and label) ``names_gone`` holds. Of a list of links the others
        stay; a paragraph or list item that cites nothing and is left with none of its links goes (its "See also:"
        with it); the lines under a heading stay. A sentence that cites a kept source keeps its words. A table stays a
        table: a link that goes leaves its cell, empty if nothing else is in it; a row of it so left with no link and
        no citation goes, and its heading and delimiter rows go with the last such row."""
        out: list[str] = []
        all_lines = self.body.split("\n")
        fenced, code = _fenced(all_lines), _code_by_line(self.body)
        at = 0
        rows_went = False
        for part, block in blocks(all_lines):
            at += len(block)
            if any(fenced[at - len(block):at]):
                out.extend(block)  # code is shown as written: a "[[" or "#" in it names nothing
                continue
            if part:  # a table's row: each cell on its own (a "|" between two links is no list of them)
                row = row_with_cells(block[0], lambda cell: _without_links(cell, names_gone))
                if part == "row" and row != block[0] and not links_in(row) and not CITE.search(row):
                    rows_went = True
                    continue
                out.append(row)
                continue
            if is_heading(block[0]) and not CITE.search(block[0]) and names_gone(block[0]):
                continue
            lines = [_without_links(line, names_gone, code[at - len(block) + i]) for i, line in enumerate(block)]
            if lines != block and not links_in("\n".join(lines)) and not CITE.search("\n".join(lines)):
                continue  # a line of links that named the forgotten, and its label
            out.extend(lines)
        body = "\n".join(out)
        body = re.sub(r"\n{3,}", "\n\n", without_empty_tables(body) if rows_went else body).strip("\n")
        return self if body == self.body else replace(self, body=body)

    def relinked(self, to: Callable[[str], str | None]) -> Page:
        """This page with each [[link]] whose title ``to`` maps to another title pointing there instead, reading as
        it did: [[Old]] becomes [[New|Old]] ([[New\\|Old]] in a table row); [[Old|label]] and [[Old#part]] keep their
        label and part. A title a link cannot hold ("[", "]", "|", "#" in it) is left alone, and so is code, shown as
        written."""
        def one(m: re.Match[str]) -> str:
            name = m.group(1).strip()
            new = to(name)
            if new is None or re.search(r"[\[\]|#]", new):
                return m.group(0)
            rest = m.group(0)[2 + len(m.group(1)):-2]  # "|label", "\\|label", "#part" or nothing
            return f"[[{new}{rest or '|' + name}]]"

        body = _replaced(self.body, _outside_code(_LINK, self.body), one)
        # in a table row, "[[New\\|Old]]": a bare "|" there would end the cell, and the row lose its last cell
        return self if body == self.body else replace(self, body=links_fit_tables(body))


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+>|]|\d+[.)])\s*")
# A code fence: three or more backticks or tildes (in a list item or a quote too), with what follows it.
_FENCE = re.compile(r"^[ \t]*(?:>[ \t]?)*(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")


def _fenced(lines: list[str]) -> list[bool]:
    """Whether each line belongs to a fenced code block, its fences included. As CommonMark (and so the window)
    reads them: a fence of backticks or tildes (three or more; a backtick fence's words after it hold no backtick,
    else the line is inline code) is closed by a fence of the same character at least as long with nothing after
    it, or by the end of the page."""
    out: list[bool] = []
    fence = ""
    for line in lines:
        m = _FENCE.match(line) if "``" in line or "~~" in line else None
        if fence:
            out.append(True)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = ""
        elif m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            out.append(True)
        else:
            out.append(False)
    return out


def _inline_code(text: str, at: int, out: list[tuple[int, int]]) -> None:
    """Adds the `code spans` of one block of text (a paragraph, a list item), at offset ``at``, to ``out``: a run of
    backticks opens one that the next run of as many closes; a run with no such partner is a backtick shown as it
    is, and so is one escaped by a backslash."""
    runs = [m.span() for m in _TICKS.finditer(text)]
    by_size: dict[int, list[int]] = {}
    for i, (s, e) in enumerate(runs):
        by_size.setdefault(e - s, []).append(i)
    i = 0
    while i < len(runs):
        s, e = runs[i]
        b = s
        while b and text[b - 1] == "\\":
            b -= 1
        if (s - b) % 2:  # an escaped first backtick opens nothing
            s += 1
        later = by_size.get(e - s, [])
        k = bisect_right(later, i)
        j = later[k] if s < e and k < len(later) else None
        if j is None:
            i += 1
            continue
        out.append((at + s, at + runs[j][1]))
        i = j + 1


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """Where ``text`` (a page body, or a line of one) holds code, in order: its fenced blocks, line by line, and its
    `code spans` (which may run on over the lines of their paragraph). A [[link]] or "#" there is code, shown as
    written: the one reading of code for everything that reads links."""
    if "`" not in text and "~~~" not in text:
        return []
    lines = text.split("\n")
    out: list[tuple[int, int]] = []
    at, run = 0, []  # run: the lines outside a fence since the last one, each with its offset
    for line, fenced in zip([*lines, ""], [*_fenced(lines), True], strict=True):
        if not fenced:
            run.append((at, line))
        else:
            start = 0
            for block in paragraphs([ln for _, ln in run]):
                first = run[start][0]
                _inline_code("\n".join(block), first, out)
                start += len(block)
            run = []
            if at < len(text):
                out.append((at, at + len(line)))
        at += len(line) + 1
    return sorted(out)


def _outside_code(pattern: re.Pattern[str], text: str,
                  code: list[tuple[int, int]] | None = None) -> list[re.Match[str]]:
    """The matches of ``pattern`` (a link) in ``text`` that touch no code (``code``: its ranges, if known)."""
    code = _code_ranges(text) if code is None else code
    found = list(pattern.finditer(text))
    if not code or not found:
        return found
    starts = [s for s, _ in code]
    return [m for m in found
            if not ((i := bisect_right(starts, m.end() - 1)) and code[i - 1][1] > m.start())]


def _replaced(text: str, found: list[re.Match[str]], by: Callable[[re.Match[str]], str]) -> str:
    """``text`` with each match ``found`` in it replaced by what ``by`` makes of it."""
    parts, last = [], 0
    for m in found:
        parts += (text[last:m.start()], by(m))
        last = m.end()
    return "".join(parts) + text[last:] if parts else text


def _code_by_line(body: str) -> list[list[tuple[int, int]]]:
    """``_code_ranges(body)``, each line's part of it relative to the line."""
    lines = body.split("\n")
    out: list[list[tuple[int, int]]] = [[] for _ in lines]
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    for s, e in _code_ranges(body):
        n = bisect_right(starts, s) - 1
        while n < len(lines) and starts[n] < e:
            out[n].append((max(s, starts[n]) - starts[n], min(e, starts[n] + len(lines[n])) - starts[n]))
            n += 1
    return out


# A table's row as markdown-it reads one: its cells' "|" (one its writer escaped, "\\|", is a "|" in a cell), a
# delimiter row's cell ("---", ":--:"), and a line that ends a table's rows as it starts a block of its own (a heading,
# a quote, a list item, a rule, a fence).
_CELL_EDGE = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r":?-+:?")
_TABLE_END = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|>|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|([-*_])(?:[ \t]*\1){2,}[ \t]*$"
                        r"|`{3,}|~{3,})")


def _rule_columns(line: str) -> int:
    """How many columns a table's delimiter row ("|---|:--:|", "--- | ---") sets out; 0 for a line that is none."""
    s = line.strip()
    if len(s) < 2 or s[0] not in "|-:" or (s[0] == "-" and s[1] in " \t") or s.strip("|-: \t"):
        return 0
    cells = [c.strip() for c in s.split("|")]
    if any(not c for c in cells[1:-1]) or not all(_RULE_CELL.fullmatch(c) for c in cells if c):
        return 0
    return sum(1 for c in cells if c)


def _row_columns(line: str) -> int:
    """How many cells a table row holds, its [[links]]' own "|" not ending one (``links_fit_tables`` escapes them)."""
    cells = _CELL_EDGE.split(_ANY_LINK.sub("[[]]", line.strip()))
    return len(cells) - (cells[0] == "") - (len(cells) > 1 and cells[-1] == "")


def table_rows(lines: list[str]) -> list[str]:
    """Each line's part in a Markdown table as the window reads tables: "head" (a line with a "|" over a delimiter
    row of as many columns), "rule" (that delimiter row), "row" (each line after them up to a blank line or a line
    that starts another block), or "" (none: a line of no table)."""
    fenced = _fenced(lines)
    out = [""] * len(lines)
    i = 1
    while i < len(lines):
        head, rule = lines[i - 1], lines[i]
        n = 0 if fenced[i - 1] or fenced[i] or "|" not in head else _rule_columns(rule)
        if not n or _row_columns(head) != n:
            i += 1
            continue
        out[i - 1], out[i] = "head", "rule"
        i += 1
        while i < len(lines) and lines[i].strip() and not fenced[i] and not _TABLE_END.match(lines[i]):
            out[i] = "row"
            i += 1
        i += 1
    return out


def blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """``lines`` as ``paragraphs`` reads them, a table's lines one block each with its part (``table_rows``: "head",
    "rule", "row"); every other block with "". A table row is a row of its table, never a line of a paragraph: what
    is taken off a page is taken off a row by its cells, and the table stays a table."""
    parts = table_rows(lines)
    out: list[tuple[str, list[str]]] = []
    at = 0
    for block in paragraphs(lines):
        run: list[str] = []
        for i, line in enumerate(block, at):
            if not parts[i]:
                run.append(line)
                continue
            if run:
                out.append(("", run))
                run = []
            out.append((parts[i], [line]))
        if run:
            out.append(("", run))
        at += len(block)
    return out


def row_cells(line: str) -> list[str]:
    """A table row's pieces between its cells' "|" (a [[link]]'s own "|" ends none): "| a | [[B|b]] |" is "",
    " a ", " [[B|b]] ", ""; joined with "|" they give the row back."""
    out, start = [], 0
    for m in _CELL_EDGE.finditer(_ANY_LINK.sub(lambda m: "x" * len(m.group(0)), line)):
        out.append(line[start:m.start()])
        start = m.end()
    return [*out, line[start:]]


def row_with_cells(line: str, cell: Callable[[str], str]) -> str:
    """A table row with each of its cells that holds anything as ``cell`` makes it, between the same "|": the row
    keeps its columns, each cell its padding. A cell made empty reads " "; a first cell made empty in a row written
    without a leading "|" gets one ("[[A]] | b" is "| | b", never " | b", which the window reads as a row of one
    cell, b)."""
    cells = row_cells(line)
    made = []
    for was in cells:
        now = cell(was).strip() if was.strip() else ""
        made.append(was if not was.strip() else was[:len(was) - len(was.lstrip())] + now + was[len(was.rstrip()):]
                    if now else " ")
    if cells[0].strip() and not made[0].strip():
        made[0] = "| "
    return "|".join(made)


def without_empty_tables(body: str) -> str:
    """``body`` without a table's heading and delimiter rows left over no row, when its heading cites nothing: like
    a heading over nothing, they would name what no line under them says."""
    lines = body.split("\n")
    parts = table_rows(lines)
    drop: set[int] = set()
    for i, part in enumerate(parts):  # a heading row is followed by its delimiter row, then its first row if any
        if part == "head" and not CITE.search(lines[i]) and parts[i + 2:i + 3] != ["row"]:
            drop |= {i, i + 1}
    if not drop:
        return body
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop)


def links_fit_tables(body: str) -> str:
    """``body`` with each [[link]] in a Markdown table row written as a table needs it, "[[Title\\|label]]": a bare
    "|" there ends the cell, and the row showed "[[Title" and "label]]" as words and lost its last cell (with its
    citation). Memory reads a link either way; code is left as written."""
    if "[[" not in body or "|" not in body:
        return body
    lines = body.split("\n")
    rows = table_rows(lines)
    if not any(rows):
        return body
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1

    def one(m: re.Match[str]) -> str:
        in_row = rows[bisect_right(starts, m.start()) - 1]
        return _CELL_EDGE.sub(r"\\|", m.group(0)) if in_row else m.group(0)

    return _replaced(body, _outside_code(_ANY_LINK, body), one)


def links_in(text: str) -> list[str]:
    """The titles ``text`` links to ([[Title]], [[Title|label]], [[Title#part]] all name Title), outside code."""
    return [m.group(1).strip() for m in _outside_code(_LINK, text)]


def has_link(text: str) -> bool:
    """Whether ``text`` holds a [[link]] of any kind outside code: to a page, or to a part of this one ([[#part]])."""
    return bool(_outside_code(_ANY_LINK, text))


def names_in(body: str) -> list[str]:
    """What ``body`` names rather than states: its [[links]] (title and label) and its headings that cite nothing."""
    lines = body.split("\n")
    heads = [ln for ln, level in zip(lines, _heading_levels(lines), strict=True)
             if level is not None and not CITE.search(ln)]
    return [m.group(0)[2:-2] for m in _outside_code(_LINK, body)] + heads


def prose(body: str) -> str:
    """What ``body`` states in its own words: without its [[links]] (code keeps its own) and its headings that cite
    nothing."""
    lines = _replaced(body, _outside_code(_LINK, body), lambda m: " ").split("\n")
    return "\n".join(ln for ln, level in zip(lines, _heading_levels(body.split("\n")), strict=True)
                     if level is None or CITE.search(ln))


# A run of links with only separators between them ("[[A]], [[B]] and [[C]]").
_LINK_RUN = re.compile(rf"{_LINK.pattern}(?:(?:\s*[,;·|/&]\s*|\s+(?:and|or)\s+){_LINK.pattern})*")


def _without_links(line: str, names_gone: Callable[[str], bool], code: list[tuple[int, int]] | None = None) -> str:
    """``line`` without its links whose text ``names_gone`` holds; each kept link keeps the separator before it.
    Code (``code``: its ranges in the line, if known) is left as written."""
    def run(m: re.Match[str]) -> str:
        text = m.group(0)
        links = list(_LINK.finditer(text))
        kept = [n for n, link in enumerate(links) if not names_gone(link.group(0)[2:-2])]
        if len(kept) == len(links):
            return text
        return "".join((text[links[n - 1].end():links[n].start()] if k else "") + links[n].group(0)
                       for k, n in enumerate(kept))

    out = _replaced(line, _outside_code(_LINK_RUN, line, code), run)
    if out == line:
        return line
    lead = out[: len(out) - len(out.lstrip())]  # a nested list item's indent stays
    rest = re.sub(r"\s+(?=[.,;:!?](?:\s|$))", "", re.sub(r"[ \t]{2,}", " ", out[len(lead):]))
    return (lead + rest).rstrip()


def is_heading(line: str) -> bool:
    """A markdown heading ("## Title"; "#Title", with no space, is a paragraph)."""
    return _HEADING.match(line) is not None


def paragraphs(lines: list[str]) -> list[list[str]]:
    """``lines`` as markdown blocks: a paragraph's (or list item's) wrapped lines together, and a quote's lines
    together; a blank line, a heading, a list item, a new quote or a table row starts a block of its own."""
    out: list[list[str]] = []
    for line in lines:
        last = out[-1][-1] if out else ""
        quoted = _QUOTE.match(line) is not None and _QUOTE.match(last) is not None
        if line.strip() and last.strip() and (quoted or not _BLOCK_START.match(line)) and not is_heading(last):
            out[-1].append(line)
        else:
            out.append([line])
    return out


def says_anything(line: str) -> bool:
    """Whether a line states something: a word or number of its own, besides [[links]], [n] citations and its
    list marker. A line of links alone points to other pages and claims nothing."""
    line = _LIST_MARK.sub("", line, count=1)
    return bool(re.search(r"\w", CITE.sub("", _replaced(line, _outside_code(_LINK, line), lambda m: ""))))


def holds_something(line: str) -> bool:
    """Whether a line is content: it cites a source, or states something of its own."""
    return bool(CITE.search(line)) or says_anything(line)


def as_claim(line: str, citations: Mapping[int, str]) -> str:
    """A page's line with its [n] read as the source it cites, without the spaces around it: the same claim whatever
    its number, and however much space a writer left at its end."""
    return CITE.sub(lambda m: f"[{citations.get(int(m.group(1)), m.group(1))}]", line).strip()


def _heading_levels(lines: list[str]) -> list[int | None]:
    """Each line's heading level, or None (not a heading, or inside a code fence, where "#" is a comment)."""
    out: list[int | None] = []
    for line, fenced in zip(lines, _fenced(lines), strict=True):
        m = None if fenced else _HEADING.match(line)
        out.append(len(m.group(1)) if m else None)
    return out


def without_empty_sections(body: str) -> str:
    """``body`` without headings over nothing: a heading that cites no source itself and whose section (up to the
    next heading of its level or above) holds no line of content (one that cites, or says something). A heading
    alone states what no sentence under it backs (a forgotten claim's heading, or a model's uncited one)."""
    lines = body.split("\n")
    levels = _heading_levels(lines)
    keep = [True] * len(lines)
    for i, level in enumerate(levels):
        if level is None or CITE.search(lines[i]):
            continue
        keep[i] = False
        for j in range(i + 1, len(lines)):
            under = levels[j]
            if under is not None and under <= level:
                break
            if under is None and holds_something(lines[j]):
                keep[i] = True
                break
    return re.sub(r"\n{3,}", "\n\n", "\n".join(ln for ln, k in zip(lines, keep, strict=True) if k)).strip("\n")


# A line that starts a block of its own: a list item, a heading, a quote or a table row.
_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|>|\|)")
_QUOTE = re.compile(r"^\s*>\s?")


_CLOSERS = "*_\"'”’)」』）"  # what may close a sentence after its stop: emphasis, a quote, a bracket
_CITES_AFTER = r"(?:\s*\[\d{1,6}\](?!:))*+"  # the citations of the sentence just ended ("fever. [1]", "发烧了。[2]")
# Where a sentence ends: after . ! ? and a space, or after a Chinese or Japanese full stop (no space needed), each
# with what closes it and the citations right after it. A citation inside a sentence ("Dr Haas [1] said") ends
# none: the words after it are the same claim's. Citations ending a line of a paragraph end its sentence too, with
# no stop ("Tea with Ana [1]" then "Coffee with Sam [2]" on the next line are two claims).
_SENTENCE_END = re.compile(rf"(?:[.!?][{_CLOSERS}]*{_CITES_AFTER}(?=\s+\S)|[。！？．][{_CLOSERS}]*{_CITES_AFTER}(?=\s*\S)"
                           rf"|\[\d{{1,6}}\](?!:){_CITES_AFTER}[ \t]*(?=\n))\s*")


def _sentences(text: str) -> list[str]:
    """``text`` cut into its sentences, each with the space that follows it (joined, they give ``text`` back)."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    return [*out, text[start:]] if start < len(text) else out


def _drop_cited(block: list[str], dead: set[int]) -> list[str]:
    """One paragraph or list item (its lines) without the sentences that rest on ``dead`` citations; untouched
    when it cites none of them."""
    if not block or not any(int(n) in dead for line in block for n in CITE.findall(line)):
        return block
    return _drop_sentences(block, lambda sentence: bool({int(n) for n in CITE.findall(sentence)} & dead))[0]


def _block_text(block: list[str]) -> tuple[str, str]:
    """A paragraph, list item or quote (its lines) as its marker ("- ", "> ", "") and its text, the lines joined."""
    prefix = re.match(r"^\s*(?:[-*+]|\d+[.)]|>)?\s*", block[0])
    head = prefix.group(0) if prefix else ""
    rest_lines = [_QUOTE.sub("", line, count=1) for line in block[1:]] if head.strip() == ">" else block[1:]
    return head, "\n".join(line.strip() for line in [block[0][len(head):], *rest_lines])


def _claims(text: str) -> list[list[str]]:
    """A paragraph's, list item's or quote's ``text`` (``_block_text``) as its claims, each its sentences: a cited
    sentence with the uncited ones just before it, which rest on its citation; the uncited sentences ending the block
    are one more."""
    out: list[list[str]] = []
    claim: list[str] = []
    for sentence in _sentences(text):
        claim.append(sentence)
        if CITE.search(sentence):
            out.append(claim)
            claim = []
    return [*out, claim] if claim else out


def _as_written(claim: list[str]) -> str:
    """A claim (its sentences) as one line: its words, each run of space, line break or indent one space."""
    return " ".join("".join(claim).split())


def _drop_sentences(block: list[str], drop: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """One paragraph or list item (its lines) without the claims one of whose sentences ``drop`` is true of; untouched
    when it drops none. A claim is a cited sentence with the uncited ones just before it, which rest on its citation
    (or the uncited sentences ending the block). Also what went, each claim as written. ``drop`` is asked of a
    claim's sentences in turn until it says true: once a claim."""
    return _drop_claims(block, lambda claim: any(drop(part) for part in claim))


def _drop_claims(block: list[str], drop: Callable[[list[str]], bool]) -> tuple[list[str], list[str]]:
    """One paragraph or list item (its lines) without the claims (``_claims``) ``drop`` is true of, asked of each
    claim's sentences; untouched when it drops none. Also what went, each claim as written."""
    head, text = _block_text(block)
    kept: list[str] = []
    gone: list[str] = []
    for claim in _claims(text):
        if drop(claim):
            gone.append(_as_written(claim))
        else:
            kept += claim
    if not gone:
        return block, []
    rest = re.sub(r"[ \t]*\n[ \t]*", " ", "".join(kept).strip())  # each keeps the space after it (none after 。)
    return ([head + rest] if rest else []), gone


def claims(body: str) -> list[str]:
    """The claims of a page's ``body`` as ``without_sentences`` reads them, each as written on one line (its marker
    off): of each paragraph, list item or quote, a cited sentence with the uncited ones just before it (a claim may
    be wrapped over several lines), and the uncited sentences ending it; a heading and a table row are one each."""
    return [_as_written(claim) for block in paragraphs(body.split("\n")) if block[0].strip()
            for claim in _claims(_block_text(block)[1])]


def without_claims(body: str, gone: Collection[str]) -> str:
    """A page's ``body`` without each of its claims (as ``claims`` gives them) that ``gone`` holds, all its lines
    with it; headings left over nothing go."""
    out: list[str] = []
    for block in paragraphs(body.split("\n")):
        out.extend(_drop_claims(block, lambda claim: _as_written(claim) in gone)[0] if block[0].strip() else block)
    return without_empty_sections(re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n"))


def sentences(body: str) -> list[str]:
    """The sentences of a page's ``body`` as ``without_sentences`` reads them: each paragraph's, list item's or
    quote's (its lines joined, its marker off), a heading's and a table row's, with their citations."""
    return [sentence for block in paragraphs(body.split("\n")) if block[0].strip()
            for sentence in _sentences(_block_text(block)[1])]


def without_sentences(body: str, drop: Callable[[str], bool]) -> tuple[str, list[str]]:
    """A page's ``body`` without each claim one of whose sentences ``drop`` is true of (a cited sentence with the
    uncited ones just before it, which rest on its citation), read as ``Page.without_sources`` reads a page; then
    without each paragraph, list item or quote that ``drop`` is still true of as a whole (what two of its claims say
    together); headings left over nothing go. Also what went, as written: one piece each time ``drop`` said true, in
    that order."""
    out: list[str] = []
    gone: list[str] = []
    for block in paragraphs(body.split("\n")):
        if not block[0].strip():
            out.extend(block)
            continue
        lines, went = _drop_sentences(block, drop)
        gone += went
        if lines and len(_sentences(_block_text(lines)[1])) > 1 and drop(_block_text(lines)[1]):
            gone.append(" ".join(_block_text(lines)[1].split()))
            continue
        out.extend(lines)
    if not gone:
        return body, []
    return without_empty_sections(re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")), gone


def parse_page(text: str, *, where: str = "page") -> Page:
    """Parses page markdown; raises PageFormatError saying what is wrong and how to fix it."""
    if not text.startswith("---\n"):
        raise PageFormatError(f"{where}: no front matter. Start the file with a '---' block holding {', '.join(REQUIRED)}.")
    end = text.find("\n---\n", 4)
    if end < 0 and text.endswith("\n---"):
        end = len(text) - 4
    if end < 0:
        raise PageFormatError(f"{where}: the front matter is not closed. Add a line '---' after it.")
    meta: dict[str, str] = {}
    for n, line in enumerate(text[4:end].split("\n"), start=2):
        if not line.strip():
            continue
        k, sep, v = line.partition(":")
        if not sep or not k.strip():
            raise PageFormatError(f"{where}, line {n}: expected 'key: value' in the front matter, found {line!r}.")
        meta[k.strip()] = v.strip()
    missing = [k for k in REQUIRED if not meta.get(k)]
    if missing:
        raise PageFormatError(f"{where}: the front matter has no {', '.join(missing)}. Fill them in or delete the file.")
    if meta["verified"].lower() not in ("true", "false"):
        raise PageFormatError(f"{where}: 'verified' must be true or false, found {meta['verified']!r}.")
    try:
        Scope.parse(meta["scope"])
    except ValueError as e:
        raise PageFormatError(f"{where}: {e}") from None
    rest = text[end + 5 :]
    body, _, sources = rest.rpartition(_SOURCES_HEADING) if _SOURCES_HEADING in rest else (rest, "", "")
    citations = {int(n): sid for n, sid in _CITE_DEF.findall(sources)}
    extra = {k: v for k, v in meta.items() if k not in REQUIRED}
    return Page(
        title=meta["title"],
        scope=meta["scope"],
        category=meta["category"],
        body=body.strip(),
        citations=citations,
        updated=meta["updated"],
        verified=meta["verified"].lower() == "true",
        extra=extra,
    )


def text_without_sources(text: str, gone: set[str]) -> str | None:
    """A page file that does not parse (a hand edit gone wrong) without the claims resting on the ``gone`` sources,
    as ``Page.without_sources`` takes them off a page, everything else left as written; None if none rests on them.
    Its Sources list is read after its last "## Sources" heading, its body after the front matter if that closes."""
    end = text.find("\n---\n", 4) if text.startswith("---\n") else -1
    head, rest = (text[: end + 5], text[end + 5 :]) if end >= 0 else ("", text)
    body, heading, sources = rest.rpartition(_SOURCES_HEADING) if _SOURCES_HEADING in rest else (rest, "", "")
    cites = {int(n): sid for n, sid in _CITE_DEF.findall(sources)}
    if not set(cites.values()) & gone:
        return None
    kept = Page("", "public", "", body, cites).without_sources(gone)
    sources = "\n".join(line for line in sources.split("\n")
                         if not ((m := _CITE_DEF.match(line)) and m.group(2) in gone))
    return (head + "\n" if head else "") + kept.body.strip() + "\n" + heading + sources


def unified_diff(old: str, new: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), fromfile=f"a/{name}", tofile=f"b/{name}")
    )


class PageStore:
    """Reads and writes page files under ``wiki/<scope>/``. Policy (verified pages) is in ``Memory``."""

    def __init__(self, root: Path):
        self.root = root
        # Called as before_change(scope, slug) before a page file is written or deleted: Memory marks the page as
        # owed to its scope's search index, so a process killed before the index takes the change is caught up.
        self.before_change: Callable[[Scope, str], None] | None = None

    def path_for(self, scope: Scope, slug: str) -> Path:
        return self.root / scope.relpath / f"{slug}.md"

    def read(self, scope: Scope, slug: str) -> Page | None:
        path = self.path_for(scope, slug)
        text = self.read_text(scope, slug)
        if text is None:
            return None
        page = parse_page(text, where=str(path))
        if page.scope != str(scope):
            raise PageFormatError(f"{path}: front matter says scope {page.scope!r} but the file is in {scope}. Move the file or fix the scope.")
        return page

    def read_text(self, scope: Scope, slug: str) -> str | None:
        """The page file's text (None if there is none); PageFormatError if it is not a file, cannot be read or is
        not UTF-8 (saved by an editor in another encoding: a model's rewrite is then refused, naming the file)."""
        path = self.path_for(scope, slug)
        data = read_page_file(path)
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError:
            raise PageFormatError(f"{path}: not UTF-8 text. Re-save it as UTF-8 or delete it.") from None

    def read_bytes(self, scope: Scope, slug: str) -> bytes | None:
        """The page file's bytes as they are (None if there is none); PageFormatError as ``read_text``."""
        return read_page_file(self.path_for(scope, slug))

    def write(self, page: Page) -> Path:
        return self.write_text(Scope.parse(page.scope), page.slug, page.to_markdown())

    def write_text(self, scope: Scope, slug: str, text: str) -> Path:
        """Replaces the page file at once (a reader sees the old file or the new one, never half of one)."""
        path = self.path_for(scope, slug)
        if self.before_change is not None:
            self.before_change(scope, slug)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(text.encode("utf-8", "surrogateescape"))  # a hand edit's odd bytes, kept as they were
            os.replace(tmp, path)
        except BaseException as e:  # a full disk, say: no copy of the text stays behind (a crash's: remove_dead_temps)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            if isinstance(e, OSError):
                raise PageWriteError(_not_written(path, e, "written")) from e
            raise
        return path

    def delete(self, scope: Scope, slug: str) -> None:
        path = self.path_for(scope, slug)
        if self.before_change is not None and path.exists():
            self.before_change(scope, slug)
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise PageWriteError(_not_written(path, e, "deleted")) from e

    def earlier_names(self, scope: Scope) -> list[tuple[str, str, str]]:
        """(file name, earlier slug, slug) of each page of ``scope`` whose title's file name is no longer what it was
        before Latin titles kept their accented letters (``earlier_slug``), with its file under either name: the file
        still to rename (its name compared in NFC: a file system may hand names back decomposed), or renamed
        already. A page whose new name another file has is left where it is."""
        base = self.root / scope.relpath
        try:
            names = sorted(e.name[:-3] for e in os.scandir(base) if e.name.endswith(".md"))
        except OSError:
            return []
        taken = {unicodedata.normalize("NFC", n) for n in names}
        out = []
        for name in names:
            try:
                page = self.read(scope, name)
            except PageFormatError:
                continue  # named by no title it can be told by
            if page is None:
                continue
            here, before, now = unicodedata.normalize("NFC", name), earlier_slug(page.title), page.slug
            if before == now or here not in (before, now) or (here == before and now in taken):
                continue
            taken.add(now)
            out.append((name, before, now))
        return out

    def rename(self, scope: Scope, old: str, new: str) -> None:
        """Gives the page file ``old`` the name ``new`` (a file there already is never replaced); PageWriteError if
        it cannot be renamed. Done already (by another process) is done."""
        src, dst = self.path_for(scope, old), self.path_for(scope, new)
        if self.before_change is not None:
            self.before_change(scope, old)
            self.before_change(scope, new)
        if not src.is_file() and dst.is_file():
            return
        if dst.exists():
            raise PageWriteError(f"{src}: the page could not be renamed to {dst.name}: a file of that name is in the "
                                 f"way. Move one of them out of {src.parent}.")
        try:
            os.rename(src, dst)
        except OSError as e:
            raise PageWriteError(_not_written(src, e, "renamed")) from e

    def scopes(self) -> list[Scope]:
        """The scopes that have pages (a folder ``wiki/<scope>/`` holding a ``.md`` file)."""
        out: list[Scope] = []
        for folder in (self.root / "public", *self.root.glob("private/*"), *self.root.glob("agent/*/*")):
            with contextlib.suppress(ValueError):  # a folder named as no scope is (ScopeError) holds no pages
                if folder.is_dir() and next(folder.glob("*.md"), None) is not None:
                    out.append(Scope.parse(folder.relative_to(self.root).as_posix()))
        return sorted(out, key=str)

    def scan(self, scope: Scope) -> tuple[list[Page], list[str]]:
        """All readable pages of a scope, and one message per file that was skipped as corrupt."""
        base = self.root / scope.relpath
        pages: list[Page] = []
        errors: list[str] = []
        if not base.exists():
            return pages, errors
        for path in sorted(base.glob("*.md")):
            try:
                page = self.read(scope, path.stem)
            except PageFormatError as e:  # a hand edit gone wrong, or a folder or pipe named like a page
                errors.append(str(e))
                continue
            if page is not None:
                pages.append(page)
        return pages, errors


def read_page_file(path: Path) -> bytes | None:
    """The bytes of the page file at ``path``, or None if there is none. Only a regular file is read: it is opened
    without waiting (a named pipe would block its reader for good) and checked once open (fstat), so a folder, a
    pipe or a device named like a page, or a file that cannot be read, is a PageFormatError saying what to do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise PageFormatError(f"{path}: cannot be read ({e.strerror}). Check the file's permissions, or restore it "
                              "from a backup.") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise PageFormatError(f"{path}: a folder, not a page file. Move it out of {path.parent}, or rename it "
                                  "so that its name does not end in .md.")
        what = "a named pipe" if stat.S_ISFIFO(mode) else "a special file (a socket or a device)"
        raise PageFormatError(f"{path}: {what}, not a page file; it is never read. Move it out of {path.parent} "
                              "or delete it.")
    with open(fd, "rb") as f:
        try:
            return f.read()
        except OSError as e:
            raise PageFormatError(f"{path}: cannot be read ({e.strerror}). Restore it from a backup, or delete "
                                  "it.") from None


def _not_written(path: Path, e: OSError, done: str) -> str:
    """What a person reads when a page file could not be ``done`` ("written", "deleted") there, and what to do."""
    folder = path.parent
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{path}: the page could not be {done}: the disk is full. Free some space, then try again."
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"{path}: the page could not be {done}: its folder {folder} is read-only ({e.strerror}). Make the "
                "folder writable again (its permissions, or the sync or backup tool that locked it), then try again.")
    if isinstance(e, IsADirectoryError):
        return f"{path}: the page could not be {done}: a folder of that name is in the way. Move it out of {folder}."
    return f"{path}: the page could not be {done} ({e.strerror or e}). Check the folder {folder}, then try again."
