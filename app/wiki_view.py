"""The wiki browser, fully offline: pages by scope and category, search with typeahead, rendered pages
with [[links]] and numbered citations that open the verbatim source, a verification toggle, Edit (the person
corrects a page's text; it is saved as theirs and verified), Ask memory's answers with linked citations, and
the proposals agents made to verified pages, side by side, to approve or reject."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import functools
import html
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from PySide6.QtCore import QModelIndex, QStringListModel, Qt, QTimer, QUrl, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QCompleter,
    QDialog,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QTreeWidgetItemIterator,
    QVBoxLayout,
    QWidget,
)

from app.bridge import PodBridge
from app.folders_view import FoldersView
from app.markdown import STYLE, makes_links, plain_label, plain_tooltip, render, without_overrides
from app.memory_status import IngestPanel
from app.when import local_time
from runtime_host.keptcorrections import KEPT_CORRECTIONS
from runtime_host.person import source_line
from runtime_host.safety.policy import MappingStoreFailed, keep_placeholders, reversible_placeholders
from runtime_host.store import StoreError

log = logging.getLogger("hearth.app")

# Why a person's change to a page (Save, Verified, Approve) was not made: memory's writer lease held longer than a
# moment by another writer. Each caller says what was not done before it, and when to try again after it.
WRITERS_BUSY = "another process is writing memory's pages now (an ingest or the nightly pass, in a terminal say)."

# Events after which what the Wiki page shows (pages, Held back, the empty state) may have changed.
MEMORY_CHANGED = ("memory.produced", "memory.ingested", "memory.quarantined", "memory.remembered", "folders.changed")


@functools.cache
def _marks() -> re.Pattern[str]:
    """A page link or a citation, as the text of a page or an answer holds them. A link may name a part of its page
    ([[Family#Birthdays]]: memory reads it as a link to Family, wiki_engine/pages.py _LINK); one to a part alone
    ([[#Birthdays]], within the page) has no page to open. A citation is what memory reads as one
    (wiki_engine.pages.CITE: "Her sizes [1]:" too), so that every [n] shown as a link goes when its source does. Read
    once memory is used (this module loads without it)."""
    from wiki_engine.pages import CITE

    return re.compile(r"\[\[(?P<page>[^\[\]|#]*)(?P<part>#[^\[\]|]*)?(?:\|(?P<label>[^\[\]]+))?\]\]|" + CITE.pattern)


_EMPHASIS = re.compile(r"^([*_]{1,3})(.+?)\1$")  # a link's words in bold or italic: "**Clara**"
_NAME = Qt.ItemDataRole.UserRole + 1  # a proposal's page, by its title
_FOLD = Qt.ItemDataRole.UserRole + 2  # a scope or a category in the list of pages (what stays folded)


def _refill(view: QListWidget, rows: list[tuple[str, Any, dict[int, Any]]]) -> bool:
    """Shows ``rows`` (text, the item's data with an ``id``, further roles) in ``view``. A list that shows the same
    already is left alone, and a list rebuilt keeps the item selected (by its id) and its place: memory's 5-minute
    run and every import reload the Wiki page, and the note or proposal being read must stay. Whether the item
    that was selected (if any) is still there and selected."""
    shown = [(view.item(i).text(), view.item(i).data(Qt.ItemDataRole.UserRole).id) for i in range(view.count())]
    if shown == [(text, data.id) for text, data, _ in rows]:
        for i, (_, data, roles) in enumerate(rows):  # the same notes: their data anew (what they hold may have changed)
            view.item(i).setData(Qt.ItemDataRole.UserRole, data)
            for role, value in roles.items():
                view.item(i).setData(role, value)
        return True
    current = view.currentItem()
    was = current.data(Qt.ItemDataRole.UserRole).id if current is not None else None
    at = view.verticalScrollBar().value()
    view.blockSignals(True)  # the note being read is not cleared and shown again: it stays as it is
    try:
        view.clear()
        again = None
        for text, data, roles in rows:
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, data)
            for role, value in roles.items():
                item.setData(role, value)
            view.addItem(item)
            again = item if was is not None and data.id == was else again
        if again is not None:
            view.setCurrentItem(again)
    finally:
        view.blockSignals(False)
    view.doItemsLayout()
    view.verticalScrollBar().setValue(at)
    return was is None or again is not None


def page_href(scope: str, title_or_slug: str) -> str:
    """The link to a page: `hearth-page:<scope>|<title>`, percent-encoded (titles have spaces; a markdown
    link target may not). `WikiView._on_anchor` decodes it."""
    return "hearth-page:" + quote(f"{scope}|{title_or_slug}", safe="/")


_SOURCE_GONE = ("That source was deleted (by you, by a forget, or with its watched folder); search again to see "
                "what memory holds now.")

_SOURCE_ALREADY_GONE = ("That source was already deleted (from another window, by a forget, or with its watched "
                        "folder); the wiki now shows what memory holds.")

# A source's kind in words (its window says what it is, never the file's field).
_SOURCE_KINDS = {"chat": "From a conversation", "mail": "A mail", "note": "A note",
                 "summary": "A conversation's summary", "remember": "Remembered by an agent"}

_UNREADABLE = re.compile(r"^(?P<path>.+?\.md)(?:, (?P<line>line \d+))?: (?P<reason>.+)$", re.DOTALL)


def unreadable_label(message: str, scope_names: dict[str, str]) -> tuple[str, str]:
    """A skipped page file's line in the tree, by file name and reason ("⚠ holiday-plans (unreadable: the
    front matter is not closed)"; a scope in the reason by its name), and its tooltip: the whole message,
    with the file's full path and the fix."""
    m = _UNREADABLE.match(message)
    if m is None:
        return "⚠ a page file (unreadable)", message
    name = m["path"].replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    reason = m["reason"].split(". ", 1)[0].rstrip(".")
    for scope, label in sorted(scope_names.items(), key=lambda kv: -len(kv[0])):
        reason = reason.replace(scope, label)
    if len(reason) > 80:
        reason = reason[:79] + "…"
    if m["line"]:
        reason = f"{m['line']}: {reason}"
    return f"⚠ {name} (unreadable: {reason})", message


def page_html(body: str, citations: dict[int, str], scope: str, restore: Any = lambda text: text) -> str:
    """Markdown body to HTML with [[Title]] as page links and [n] as links to the cited source (in the text only:
    code shows as written), ``restore``'s values shown exactly as stored, and each web link's address shown."""
    from wiki_engine.pages import links_fit_tables

    hrefs = {n: f"hearth-source:{sid}" for n, sid in citations.items()}
    # a writer's "[[Title|label]]" in a table row: its "|" would end the cell, and the row lose its last cell
    return render(links_fit_tables(body), links=_wiki_links(hrefs, scope), restore=restore, addresses=True)


def _wiki_links(hrefs: dict[int, str], scope: str | None) -> Any:
    """The text's [n] as links to hrefs[n] (a number with no target stays text) and, with a page's ``scope``, its
    [[Title]], [[Title#part]] and [[Title|label]] as links to that page: markdown.render's ``links``."""

    def links(text: str) -> list[str | tuple[str, str]]:
        out: list[str | tuple[str, str]] = []
        at = 0
        for m in _marks().finditer(text):
            if m["cite"]:
                href = hrefs.get(int(m["cite"]))
                if href is None:
                    continue
                label = f"[{m['cite']}]"
            elif scope is None:
                continue
            elif not m["page"].strip():  # a part of this page, or nothing: its words, no link
                words = (m["label"] or (m["part"] or "").removeprefix("#")).strip()
                if not words:
                    continue
                out += [text[at:m.start()], words]
                at = m.end()
                continue
            else:  # a writer's bold or italic name ("[[**Clara**]]") is its words (its file is the same)
                label = _EMPHASIS.sub(r"\2", (m["label"] or m["page"] + (m["part"] or "")).strip())
                href = page_href(scope, m["page"].strip())
            out += [text[at:m.start()], (label, href)]
            at = m.end()
        return [*out, text[at:]] if out else [text]

    return links


def answer_html(question: str, result: Any, scope_label: Any, restore: Any = lambda text: text,
                said: dict[str, str] | None = None) -> str:
    """Ask memory's answer: its [n] as links to the page or source each cites (opened in the view like a
    page's citations), and a Sources list under it, never by id: a page by its title, a source by its words, what
    it is and who said it (``said``, PersonPod.memory_said: "mail from Ana <…>, subject “…”", as the model was told;
    else the answer's own ``cited_as``) and the day (a conversation's sources share its title). The answer is
    marked as the model's and makes no heading, rule or direction override of its own: nothing in it reads as
    Hearth's question or Sources list. ``restore`` puts the person's own redacted values back in the answer and the
    titles (the model saw only their placeholders)."""
    said = said or {}
    question = without_overrides(question)
    if not result.ok:
        return (f"<h3>{html.escape(question)}</h3>"
                f"<p>The question could not be answered: {html.escape(result.error)}</p>")
    hits = {h.id: h for h in result.hits}
    hrefs: dict[int, str] = {}
    items = []
    for n, ref in sorted(result.citations.items()):
        h = hits.get(ref)
        if ref.startswith("page:"):
            scope, _, slug = ref.removeprefix("page:").rpartition("/")
            hrefs[n] = page_href(scope, slug)
            title = restore(h.title if h else "") or slug.replace("-", " ").capitalize()
            where = f" — page in {scope_label(scope)}"
        else:  # by its words, who said it and when: a conversation's sources share its title
            hrefs[n] = f"hearth-source:{ref}"
            title, about = source_line(without_overrides(restore(h.snippet if h else "")),
                                       without_overrides(restore(said.get(ref) or result.cited_as.get(n, ""))),
                                       h.ts if h else 0)
            title = title or f"Source {n}"
            where = " — " + " · ".join(w for w in (about, scope_label(h.scope) if h and h.scope else "") if w)
        items.append(f"<li>[{n}] <a href='{html.escape(hrefs[n], quote=True)}'>{html.escape(without_overrides(title))}"
                     f"</a>{html.escape(without_overrides(where.removesuffix(' — ')))}</li>")
    sources = f"<h4>Sources</h4><ul>{''.join(items)}</ul>" if items else ""
    by = f" by {result.answered_by}" if result.answered_by else ""
    said = f"<p class='detail'><i>{html.escape(f'The answer{by}, from what memory holds:')}</i></p>"
    answer = render(_as_words(result.text, hrefs), links=_wiki_links(hrefs, None), restore=restore, answer=True)
    return f"<h3>{html.escape(question)}</h3>{said}{answer}{sources}"


def _as_words(markdown: str, cited: Iterable[int]) -> str:
    """The model's brackets as text: besides its [n] citations (``cited``), an answer makes no link or image (an
    autolink, a reference link or image, a link definition in a quote or list, a bracketed number it did not cite),
    so the only links shown are Hearth's. Code is kept as written (a backslash in it would be shown)."""
    keep = {str(n) for n in cited}

    def word(m: re.Match[str]) -> str:
        if m["cite"] is None:  # a bracket or "<" (escaped), or a character its writer escaped already (as it is)
            return m.group() if m.group().startswith("\\") else f"\\{m.group()}"
        if m["n"] not in keep:
            return f"{m['bang']}\\[{m['n']}\\]{m['colon']}"
        # "![1]" would make the citation an image, and "[1]: http://…" a definition turning each [1] into a web link
        return ("\\!" if m["bang"] else "") + f"[{m['n']}]" + ("\\:" if m["colon"] else "")

    def words(text: str) -> str:
        return _WORDS.sub(word, text)

    out: list[str] = []
    at = 0
    for start, end in _code_spans(markdown):  # code makes no link, and a backslash in it is shown: kept as written
        out += [words(markdown[at:start]), markdown[start:end]]
        at = end
    out.append(words(markdown[at:]))
    shown = "".join(out)
    # Code that CommonMark ends where _code_spans does not (across a table's rows, say): no link all the same, and
    # the brackets in the answer's code show their backslashes.
    return words(markdown) if makes_links(shown) else shown


# What _as_words escapes outside code: a character escaped already, a citation, or a bracket or "<".
_WORDS = re.compile(r"\\[\s\S]|(?P<cite>(?P<bang>!?)\[(?P<n>\d+)\](?!\()(?P<colon>:?))|[\[\]<]")
_FENCE_OPEN = re.compile(r" {0,3}(?:(`{3,}+)[^`]*+|(~{3,}+).*+)")
# A line that starts a block of its own (a heading, a quote, a list item, a rule or an underline): a code span
# does not go on across it (nor across a blank line or a table's row, a line with "|")
_BLOCK_START = re.compile(r" {0,3}(?:#{1,6}(?:[ \t]|$)|>|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|[-=]++[ \t]*+$"
                          r"|[_*][ \t_*]*+$)")
_TICKS = re.compile(r"`+")


def _code_spans(markdown: str) -> list[tuple[int, int]]:
    """Where code is in ``markdown``, in order, as CommonMark reads it: a fenced block (to its closing fence, or the
    end) and a code span (a run of backticks to the next run of exactly as many in its paragraph; a backtick its
    writer escaped opens none). In linear time: an answer is a model's text, read on the window's thread."""
    spans: list[tuple[int, int]] = []
    para = at = 0  # where the paragraph being read starts; where the next line starts
    fence: tuple[str, int, int] | None = None  # the open fence: its character, its length, where it starts
    for line in markdown.split("\n"):
        start, at = at, at + len(line) + 1
        row = line.removesuffix("\r")
        if fence is not None:
            char, n, begun = fence
            body = row.lstrip(" ")
            closing = body.rstrip(" \t")
            if len(row) - len(body) <= 3 and len(closing) >= n and not closing.strip(char):
                spans.append((begun, start + len(row)))
                fence, para = None, min(at, len(markdown))
            continue
        opened = _FENCE_OPEN.fullmatch(row)
        if opened or not row.strip() or _BLOCK_START.match(row) or "|" in row:
            _code_in(markdown, para, start, spans)  # the paragraph ends before this line
            para = start
        if opened:
            ticks = opened[1] or opened[2]
            fence = (ticks[0], len(ticks), start)
    if fence is not None:
        spans.append((fence[2], len(markdown)))
    else:
        _code_in(markdown, para, len(markdown), spans)
    return spans


def _code_in(markdown: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    """The code spans of one paragraph (``markdown[start:end]``) added to ``spans``: each run of backticks is
    looked for once, and where a run of each length comes next is kept as the walk moves on."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(markdown, start, end)]
    by_length: dict[int, list[int]] = {}  # the runs of each length, in order (by index in runs)
    for i, (s, e) in enumerate(runs):
        by_length.setdefault(e - s, []).append(i)
    seen = dict.fromkeys(by_length, 0)  # for each length, the first of its runs not behind the walk
    i, text = 0, start  # the run looked at; where the text after the last code span starts
    while i < len(runs):
        s, e = runs[i]
        k = s
        while k > text and markdown[k - 1] == "\\":
            k -= 1
        s += (s - k) % 2  # "\``": its first backtick is escaped, the run opens with the rest
        later = by_length.get(e - s, [])
        p = seen.get(e - s, 0)
        while p < len(later) and later[p] <= i:
            p += 1
        seen[e - s] = p
        if s < e and p < len(later):
            spans.append((s, runs[later[p]][1]))
            text, i = runs[later[p]][1], later[p] + 1
        else:
            i += 1


class SourceDialog(QDialog):
    """The verbatim source a citation points at (read-only: sources are immutable; the owner may delete it).

    Signals:
    delete_requested(): the owner asked to delete this source.
    """

    delete_requested = Signal()

    def __init__(self, title: str, text: str, parent: QWidget | None = None, about: str = "", not_yours: str = ""):
        super().__init__(parent)
        self.setWindowTitle(f"Source — {title}")
        layout = QVBoxLayout(self)
        self.text = QPlainTextEdit(text)
        self.text.setReadOnly(True)
        self.text.setAccessibleName("Source text")
        self.about = plain_label(about)  # what it is, whose memory holds it, and when, in words
        self.about.setVisible(bool(about))
        layout.addWidget(self.about)
        layout.addWidget(plain_label("The exact text Hearth stored; it cannot be edited, only deleted by its owner."))
        layout.addWidget(self.text)
        self.delete = QPushButton("Delete this source")
        self.delete.clicked.connect(self._on_delete)
        layout.addWidget(self.delete)
        if not_yours:  # another person's household note: why it is not theirs to delete, and no Delete
            self.delete.setVisible(False)
            self.not_yours = plain_label(not_yours)
            self.not_yours.setWordWrap(True)
            layout.addWidget(self.not_yours)
        self.resize(620, 420)

    def _on_delete(self) -> None:
        from app.confirm import confirm

        if not confirm(self, "Delete source", "Delete this source for good?", "Delete",
                       "It leaves search, and pages that cite it are written again without it. This cannot be undone."):
            return
        self.delete_requested.emit()
        self.accept()


@dataclasses.dataclass(frozen=True)
class _Refused:
    """A correction memory did not save, kept for its owner while the editor no longer holds it (another person was
    shown when it failed): the editor as they left it when they clicked Save, and why it was not saved. It is kept
    in pod.db too, sealed with the owner's key (runtime_host/keptcorrections.py), so a quit does not lose it."""

    page: tuple[str, str]  # (scope, slug)
    title: str
    typed: str  # the editor's text, as they typed it
    opened: str  # the text the editor showed when it opened
    base: tuple[str, dict[int, str]]
    restored: dict[str, str]
    why: str = ""
    kept: str = ""  # its row in pod.db ("" while it is not kept there)
    forgets: str | None = None  # the token of the owner's last forget when it was kept (keptcorrections.still_kept)

    def fields(self) -> dict[str, Any]:
        """As it is sealed in pod.db (JSON)."""
        return {"page": list(self.page), "title": self.title, "typed": self.typed, "opened": self.opened,
                "base": [self.base[0], {str(n): src for n, src in self.base[1].items()}],
                "restored": self.restored, "why": self.why}

    @classmethod
    def from_fields(cls, f: dict[str, Any], kept: str) -> _Refused:
        """One read back from pod.db; raises ValueError for anything not shaped as ``fields`` writes it."""
        title, typed, opened, why = (f.get(k) for k in ("title", "typed", "opened", "why"))
        page, base, restored = f.get("page"), f.get("base"), f.get("restored")
        if not (isinstance(title, str) and isinstance(typed, str) and isinstance(opened, str) and isinstance(why, str)
                and isinstance(page, list) and len(page) == 2 and all(isinstance(p, str) for p in page)
                and isinstance(base, list) and len(base) == 2 and isinstance(base[0], str) and isinstance(base[1], dict)
                and isinstance(restored, dict)
                and all(isinstance(v, str) for v in [*base[1].values(), *restored.keys(), *restored.values()])):
            raise ValueError("not shaped as a kept correction")
        return cls((page[0], page[1]), title, typed, opened, (base[0], {int(n): v for n, v in base[1].items()}),
                   dict(restored), why, kept)


class WikiView(QWidget):
    """Signals:
    status(str): something the person should read in the status bar.
    """

    status = Signal(str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self.current: tuple[str, str] | None = None  # (scope, slug)
        self._placeholder: str | None = None  # the empty state or the pointer to the pages, as last shown
        self._shown_page: Any = None  # the page shown, as it was read
        self._opening: object = None  # the latest page asked for (see _open)
        self._asking: asyncio.Task[Any] | None = None  # the question to memory being answered (Ask is Stop meanwhile)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reads: set[asyncio.Task[Any]] = set()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search memory — Enter for results, typing suggests titles")
        self.search.setAccessibleName("Search memory")
        self._suggestions = QStringListModel(self)
        completer = QCompleter(self._suggestions, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.activated.connect(self._on_suggestion)
        self.search.setCompleter(completer)
        self.search.textEdited.connect(self._on_typed)
        self.search.returnPressed.connect(self._on_search)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setAccessibleName("Wiki pages")
        self.tree.itemActivated.connect(self._on_tree_item)
        self.tree.itemClicked.connect(self._on_tree_item)
        self._tree_was: Any = None  # the page selected in the list before the last click (Keep editing goes back)
        self.tree.currentItemChanged.connect(self._on_tree_current)
        self.results = QListWidget()
        self.results.setAccessibleName("Search results")
        self.results.itemActivated.connect(self._on_result)
        self.results.itemClicked.connect(self._on_result)
        self._result_was = -1  # the result selected before the last click (Keep editing goes back to it)
        self.results.currentItemChanged.connect(self._on_result_current)
        self.ask = QPushButton("Ask memory")
        self.ask.setToolTip("An agent answers the question in the search box from memory, with citations")
        self.ask.clicked.connect(self._on_ask)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        search_row = QHBoxLayout()
        search_row.addWidget(self.search, 1)
        search_row.addWidget(self.ask)
        ll.addLayout(search_row)
        ll.addWidget(self.tree, 2)
        ll.addWidget(self.results, 1)

        self.page = QTextBrowser()
        self.page.setOpenLinks(False)
        self.page.setAccessibleName("Wiki page")
        self.page.document().setDefaultStyleSheet(STYLE.replace("<style>", "").replace("</style>", ""))
        self.page.anchorClicked.connect(self._on_anchor)
        # A household page is everyone's: whoever on this Hearth marked it verified, it is verified for all of them
        self.verified = QCheckBox("Verified — agents can only propose changes to this page")
        self.verified.setAccessibleName("Verified")
        self.verified.setEnabled(False)
        self.verified.clicked.connect(self._on_verified)
        self.edit = QPushButton("Edit")
        self.edit.setToolTip("Correct this page's text yourself; agents can then only propose changes to it")
        self.edit.setEnabled(False)
        self.edit.clicked.connect(self._on_edit)
        self.editor = QPlainTextEdit()
        self.editor.setAccessibleName("Page text")
        self.save_edit = QPushButton("Save")
        self.save_edit.clicked.connect(self._on_save_edit)
        self.cancel_edit = QPushButton("Cancel")
        self.cancel_edit.clicked.connect(self._on_cancel_edit)
        edit_note = plain_label("Correct the text below. A number like [1] points at a source listed under the page: keep it "
                                "on the line it supports. Saving marks the page verified, so the next ingest proposes "
                                "its changes instead of rewriting your correction.")
        edit_note.setWordWrap(True)
        self.edit_refused = plain_label()  # why a correction given back to its owner was not saved (see _give_back)
        self.edit_refused.setAccessibleName("Why not saved")
        self.edit_refused.setWordWrap(True)
        self.edit_refused.setVisible(False)
        edit_box = QWidget()
        el = QVBoxLayout(edit_box)
        el.setContentsMargins(0, 0, 0, 0)
        el.addWidget(edit_note)
        el.addWidget(self.edit_refused)
        el.addWidget(self.editor)
        edit_btns = QHBoxLayout()
        edit_btns.addStretch(1)
        edit_btns.addWidget(self.cancel_edit)
        edit_btns.addWidget(self.save_edit)
        el.addLayout(edit_btns)
        self.page_stack = QStackedWidget()
        self.page_stack.addWidget(self.page)
        self.page_stack.addWidget(edit_box)
        self._editing: tuple[str, str] | None = None  # (scope, slug) of the page in the editor
        self._answer: tuple[object, set[str]] = (None, set())  # the Ask memory answer shown: its ticket, what it cites
        self._edit_base: tuple[str, dict[int, str]] = ("", {})  # its body and citations when the editor opened
        self._edit_text = ""  # the text the editor showed when it opened: anything else is an unsaved correction
        self._edit_title = ""  # the title of the page in the editor, as the person reads it
        self._edit_restored: dict[str, str] = {}  # the owner's values the editor shows, by their placeholder
        self._refused: dict[str, list[_Refused]] = {}  # corrections not saved, by owner, to give back (_give_back)
        self._sides: asyncio.Task[Any] | None = None  # the read showing the chosen proposal beside its page
        self._sides_shown: int | None = None  # the proposal shown beside its page, both sides readable (Approve)
        self._kept_read: set[str] = set()  # the people whose corrections kept in pod.db were read into _refused
        self._shown_values: dict[str, str] = {}  # the owner's values suggestions and results show, by placeholder
        self._tree_shown: Any = None  # what the list of pages shows (see _fill_tree)
        page_box = QWidget()
        pl = QVBoxLayout(page_box)
        pl.setContentsMargins(0, 0, 0, 0)
        page_row = QHBoxLayout()
        page_row.addWidget(self.verified, 1)
        page_row.addWidget(self.edit)
        pl.addLayout(page_row)
        pl.addWidget(self.page_stack)

        self.proposals = QListWidget()
        self.proposals.setAccessibleName("Proposals")
        self.proposals.currentItemChanged.connect(self._on_proposal)
        self.diff_old = QTextBrowser()
        self.diff_new = QTextBrowser()
        self.diff_old.setAccessibleName("Current page")
        self.diff_new.setAccessibleName("Proposed page")
        self.approve = QPushButton("Approve")
        self.reject = QPushButton("Reject")
        self.approve.clicked.connect(self._on_approve)
        self.reject.clicked.connect(self._on_reject)
        prop_box = QWidget()
        prl = QVBoxLayout(prop_box)
        prl.addWidget(self.proposals, 1)
        diffs = QHBoxLayout()
        diffs.addWidget(self.diff_old)
        diffs.addWidget(self.diff_new)
        prl.addLayout(diffs, 3)
        btns = QHBoxLayout()
        btns.addStretch(1)
        btns.addWidget(self.reject)
        btns.addWidget(self.approve)
        prl.addLayout(btns)

        self.held = QListWidget()
        self.held.setAccessibleName("Held back notes")
        self.held.currentItemChanged.connect(self._on_held)
        held_note = plain_label("These notes were not remembered because they read like orders to the assistant "
                                "(\u201cignore your instructions\u201d, \u201cfrom now on always\u2026\u201d). Keep one if "
                                "it is only something you wanted remembered; discard the rest.")
        held_note.setWordWrap(True)
        self.held_text = QTextBrowser()
        self.held_text.setAccessibleName("Held back note")
        self.held_why = plain_label()  # the reason quotes the held text
        self.held_why.setWordWrap(True)
        self.keep_held = QPushButton("Keep it")
        self.keep_held.setToolTip("Store this note in memory after all; it reaches your pages at the next ingest.")
        self.discard_held = QPushButton("Discard")
        self.keep_held.clicked.connect(lambda: self._decide_held(True))
        self.discard_held.clicked.connect(lambda: self._decide_held(False))
        held_box = QWidget()
        hl = QVBoxLayout(held_box)
        hl.addWidget(held_note)
        hl.addWidget(self.held, 1)
        hl.addWidget(self.held_why)
        hl.addWidget(self.held_text, 2)
        held_btns = QHBoxLayout()
        held_btns.addStretch(1)
        held_btns.addWidget(self.discard_held)
        held_btns.addWidget(self.keep_held)
        hl.addLayout(held_btns)
        self._show_held(None)

        forget_box = QWidget()
        fl = QVBoxLayout(forget_box)
        note = plain_label("Forgetting deletes the stored sources and takes them out of search; pages that cited them "
                           "are marked to be written again. It cannot be undone.")
        note.setWordWrap(True)
        fl.addWidget(note)
        self.forget_agent_name = QLineEdit()
        self.forget_agent_name.setPlaceholderText("agent name")
        self.forget_agent_name.setAccessibleName("Agent to forget")
        self.forget_agent = QPushButton("Forget everything this agent learned")
        self.forget_agent.clicked.connect(self._on_forget_agent)
        self.forget_me = QPushButton("Forget everything about me")
        self.forget_me.clicked.connect(self._on_forget_me)
        fl.addWidget(self.forget_agent_name)
        fl.addWidget(self.forget_agent)
        fl.addWidget(self.forget_me)
        fl.addStretch(1)
        self.tabs = QTabWidget()
        self.tabs.addTab(page_box, "Page")
        self.tabs.addTab(prop_box, "Proposals")
        self.tabs.addTab(held_box, "Held back")
        self.tabs.addTab(forget_box, "Forget")
        self.folders = FoldersView(pod)
        self.folders.status.connect(self.status)
        self.tabs.addTab(self.folders, "Watched folders")
        self.ingest_panel = IngestPanel(pod)
        self.ingest_panel.status.connect(self.status)
        self.ingest_panel.ingested.connect(self.refresh)
        self.ingest_panel.clock.timeout.connect(self._on_clock)  # the empty state names the next ingest too
        # What memory gained or held back meanwhile (a folder import, the producer's timer, an agent's note) is
        # shown without a click: one reload per burst of such events, only while the page is on screen (showing
        # it reloads anyway).
        self._memory_soon = QTimer(self)
        self._memory_soon.setSingleShot(True)
        self._memory_soon.setInterval(300)
        self._memory_soon.timeout.connect(self._memory_changed)
        self.bridge = PodBridge(pod, self)
        self.bridge.event.connect(self._on_pod_event)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.tabs)
        split.setSizes([300, 700])
        layout = QVBoxLayout(self)
        layout.addWidget(self.ingest_panel)
        layout.addWidget(split)

    # -- async plumbing
    def _run(self, coro: Any) -> asyncio.Task[Any]:
        """Runs a change (verify, delete, approve, ...): it finishes even if the person is switched meanwhile."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        person = self.pod.person.id
        task.add_done_callback(lambda t: self._said_if_failed(t, person))
        return task

    def _said_if_failed(self, task: asyncio.Task[Any], person: str) -> None:
        """A read or change that failed unforeseen (memory's files damaged, say) is said to the person it was for,
        not left to the log; after a switch, the next person hears nothing of it."""
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        log.error("memory work for the Wiki page failed", exc_info=exc)
        said = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # a KeyError's text without quotes
        self._say(person, f"Memory could not do that: {said}")

    def _say(self, person: str, text: str) -> bool:
        """Says ``text`` (about work started for ``person``) in the status bar if that person is still the one shown;
        after a switch the next person hears nothing of it (it may name the first one's pages). Whether it was said."""
        if self.pod.person.id != person:
            return False
        self.status.emit(text)
        return True

    def _show(self, coro: Any) -> asyncio.Task[Any]:
        """Runs a read that fills the view; `reset` cancels it, so nothing of one person lands in another's view."""
        task = self._run(coro)
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        return task

    def reset(self) -> None:
        """Forgets everything shown for the previous person: page, Verified box, search, suggestions, answers,
        proposals and the tree; reads still running for them are cancelled."""
        for task in list(self._reads):
            task.cancel()
        self._opening = object()  # nothing asked for before (a question being answered) is shown after this
        self._asking = None
        self.current = None
        self._close_editor()
        self.page.clear()
        self.verified.setChecked(False)
        self._page_actions(False)
        self.search.setText("")  # setText, not clear(): Ctrl+Z brings nothing of the previous person back
        self._suggestions.setStringList([])
        self._shown_values.clear()
        self.search.completer().popup().hide()
        self.results.clear()
        self.tree.clear()
        self._tree_shown = None
        self.proposals.clear()
        self.tabs.setTabText(1, "Proposals")
        self.held.clear()
        self._show_held(None)
        self.tabs.setTabText(2, "Held back")
        self.diff_old.clear()
        self.diff_new.clear()
        self._sides, self._sides_shown = None, None
        self.approve.setEnabled(True)
        self.forget_agent_name.setText("")
        self.folders.reset()
        self.ingest_panel.reset()
        self.__dict__.pop("source_dialog", None)
        for dialog in self.findChildren(SourceDialog):  # every source window left open, not only the last one
            dialog.close()
            dialog.deleteLater()

    def _mine(self, scope: str) -> bool:
        return scope in self.pod.person_scopes()

    def _not_mine(self, what: str) -> None:
        self._page_actions(False)
        self.status.emit(f"{what}: this page is not in {self.pod.person.name}'s memory. "
                         "Open one of your own pages from the list first.")

    def _page_actions(self, enabled: bool) -> None:
        """Verified and Edit act on the page shown; with no page of the person's shown, they are off."""
        self.verified.setEnabled(enabled)
        self.edit.setEnabled(enabled)

    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if kind == "memory.forgot" and ev.get("what") == "me":  # whoever is shown: their kept corrections go too
            self._refused.pop(str(ev.get("person")), None)
        if kind == "schedules.paused":  # Pause/Resume from the tray (everyone's): the next ingest moves or stops
            self.ingest_panel.show_next()
            self._on_clock()  # the empty page names it too
            return
        # Another person's memory: nothing of it is shown here. Nightly's event (counts only) is everyone's: it
        # rewrites and reconciles pages of every scope; so does another person's ingest for the household's pages
        # (the page being read, the list, their proposals), which are this person's too: read again, as their own.
        if kind not in ("memory.nightly", "memory.ingested") and ev.get("person") != self.pod.person.id:
            return
        if kind in ("memory.nightly", "memory.ingested"):
            self._memory_soon.start()
            return
        if kind in MEMORY_CHANGED or (kind == "folders.progress" and ev.get("phase") == "done"):
            self._memory_soon.start()

    def _on_clock(self) -> None:
        """The empty state names the next ingest: it moves on with the bar (nothing else is reloaded, so a held
        note or a proposal being read stays selected)."""
        if not self.isVisible() or self._placeholder is None or self.page.toPlainText() != self._placeholder \
                or self.tree.topLevelItemCount():
            return
        scopes = self.pod.person_scopes()

        async def again() -> None:
            sources = await self._mem(lambda: sum(self.pod.memory.count_sources(s) for s in scopes))
            held = len(await self.pod.memory_held())
            if self.current is None and self.page.toPlainText() == self._placeholder:
                self.page.setHtml(self.ingest_panel.empty_html(sources, held))
                self._placeholder = self.page.toPlainText()

        self._show(again())

    def _memory_changed(self) -> None:
        if self.isVisible():
            self.refresh()

    def _mem(self, fn: Any) -> Any:
        return self.pod.in_memory_thread(fn)

    async def _past_writers(self, job: Callable[[], Awaitable[Any]]) -> Any:
        """Runs ``job``, a person's change to a page that memory checks and writes under the whole wiki's writer lease
        (Save, Verified, Approve): while another process holds that lease for a moment's work (one scope's ingest
        writing its pages), tried again every 50 ms, off memory's thread, for as long as one ingest waits for
        another's writing; LeaseBusy once it is held longer (a nightly pass, `memory ingest` in a terminal), for the
        caller to say so (``WRITERS_BUSY``)."""
        from wiki_engine.pipeline import PEN_WAIT_S, LeaseBusy

        until = time.monotonic() + PEN_WAIT_S
        while True:
            try:
                return await job()
            except LeaseBusy as busy:
                if not busy.moment or time.monotonic() >= until:
                    raise
            await asyncio.sleep(0.05)

    # -- loading
    def refresh(self) -> asyncio.Task[Any]:
        return self._show(self._load())

    def _reload(self, person: str) -> None:
        """After a change made for ``person`` (Keep, Discard, Verified, a delete, a forget, a decided proposal): the
        Wiki page read again for them, as a read a person switch cancels; after a switch, nothing (the view was
        reset and loaded for the person shown)."""
        if self.pod.person.id == person:
            self._show(self._load())

    def _switched(self, person: str) -> bool:
        """Whether another person than ``person`` (whose read this is) is shown now: what was read is dropped."""
        return self.pod.person.id != person

    async def _load(self) -> None:
        person, scopes = self.pod.person.id, self.pod.person_scopes()
        me = self.pod

        def read() -> list[tuple[str, list[Any], list[str]]]:
            found = [(s, *me.memory.list_pages(s)) for s in scopes]
            me.read_redactions(*(p.title for _, pages, _ in found for p in pages))  # off the window's thread
            return found

        listing = await self._mem(read)
        if self._switched(person):
            return
        self._fill_tree(listing, scopes)
        self.ingest_panel.refresh()
        self.folders.refresh()
        # The empty state, or once pages exist a pointer to them, takes a blank page area (or replaces the other),
        # never an answer, a source or a page the person is reading.
        has_pages = any(pages for _, pages, _ in listing)
        sources = 0 if has_pages else await self._mem(lambda: sum(self.pod.memory.count_sources(s) for s in scopes))
        held = 0 if has_pages else len(await self.pod.memory_held())
        if self._switched(person):
            return
        shown = self.page.toPlainText()
        if self.current is None and (not shown.strip() or shown == self._placeholder):
            self.page.setHtml("<p>Open a page from the list, or search your memory above.</p>" if has_pages
                              else self.ingest_panel.empty_html(sources, held))
            self._placeholder = self.page.toPlainText()
        await self._reopen_if_rewritten()
        await self._load_proposals()
        await self._load_held()
        await self._drop_gone()

    async def _load_and_open(self, scope: str, slug: str) -> None:
        """The Wiki page read again, then the page just corrected shown anew."""
        await self._load()
        await self._open(scope, slug, reload=True)

    def _fill_tree(self, listing: list[tuple[str, list[Any], list[str]]], scopes: list[str]) -> None:
        """The list of pages by scope and category, titles with the person's own values put back. It is rebuilt only
        when what it shows changed (memory's 5-minute run mostly finds nothing new), and then the page selected
        stays selected, the categories the person folded stay folded and the list keeps its place."""
        restore = self.pod.restore_redactions
        labels = {s: self.pod.scope_label(s) for s in scopes}
        shown = []
        for scope, pages, corrupt in listing:
            if not pages and not corrupt:
                continue
            cats: dict[str, list[tuple[str, tuple[str, str]]]] = {}
            for title, p in sorted(((restore(pg.title), pg) for pg in pages), key=lambda tp: (tp[1].category, tp[0])):
                cats.setdefault(p.category, []).append((("✔ " if p.verified else "") + title, (scope, p.slug)))
            shown.append((scope, labels[scope], cats, [unreadable_label(m, labels) for m in corrupt]))
        if shown == self._tree_shown:
            return
        self._tree_shown = shown
        folded, selected = set(), None
        it = QTreeWidgetItemIterator(self.tree)
        while it.value() is not None:
            item = it.value()
            if item.childCount() and not item.isExpanded():
                folded.add(item.data(0, _FOLD))
            if item is self.tree.currentItem():
                ref = item.data(0, Qt.ItemDataRole.UserRole)
                selected = ("page", ref) if ref else ("fold", item.data(0, _FOLD))
            it += 1
        at = self.tree.verticalScrollBar().value()
        self.tree.blockSignals(True)  # what was selected before the person's last click stays known (Keep editing)
        try:
            self.tree.clear()
            again = None
            for scope, label, cats, bad in shown:
                top = QTreeWidgetItem([label])
                top.setData(0, _FOLD, scope)
                self.tree.addTopLevelItem(top)
                for category, items in cats.items():
                    cat = QTreeWidgetItem([category])
                    cat.setData(0, _FOLD, (scope, category))
                    top.addChild(cat)
                    for text, ref in items:
                        item = QTreeWidgetItem([text])
                        item.setData(0, Qt.ItemDataRole.UserRole, ref)
                        cat.addChild(item)
                        again = item if ("page", ref) == selected else again
                    cat.setExpanded((scope, category) not in folded)
                    again = cat if ("fold", (scope, category)) == selected else again
                for text, detail in bad:
                    item = QTreeWidgetItem([text])
                    item.setToolTip(0, plain_tooltip(f"{detail}\nThis page file could not be read; it is skipped "
                                                     "until fixed or rebuilt."))
                    top.addChild(item)
                top.setExpanded(scope not in folded)
                again = top if ("fold", scope) == selected else again
            if again is not None:
                self.tree.setCurrentItem(again)
        finally:
            self.tree.blockSignals(False)
        self.tree.doItemsLayout()  # the scroll bar's range as the list is now, for its place to be kept
        self.tree.verticalScrollBar().setValue(at)

    async def _drop_gone(self) -> None:
        """Search results and an Ask memory answer citing what is gone meanwhile (a watched folder removed with its
        files, a source deleted from the CLI) leave the screen, as after a delete made here."""
        shown = {h.id for h in (self.results.item(i).data(Qt.ItemDataRole.UserRole)
                                for i in range(self.results.count())) if h is not None} | self._answer[1]
        if not shown:
            return

        import wiki_engine

        def gone() -> set[str]:
            out = set()
            for ref in shown:
                if not ref.startswith("page:"):
                    if self.pod.memory.source_scope(ref) is None:
                        out.add(ref)
                    continue
                scope, _, slug = ref.removeprefix("page:").rpartition("/")
                try:
                    if self.pod.memory.read_page(scope, slug) is None:
                        out.add(ref)
                except wiki_engine.PageFormatError:
                    continue  # unreadable, yet there: the tree says so
            return out

        missing = await self._mem(gone)
        if missing:
            self._drop_forgotten(missing)

    async def _reopen_if_rewritten(self) -> None:
        """The page being read, shown anew if ingest or nightly rewrote (or deleted) it meanwhile, at the same
        place; never under the person's own edit, nor over a page they opened while this read."""
        if self.current is None or self._editing is not None:
            return
        (scope, slug), shown, opening = self.current, self._shown_page, self._opening
        page = await self._mem(lambda: self.pod.memory.view_page(scope, slug, self._viewer(scope)))
        if (self.current, self._shown_page, self._opening) != ((scope, slug), shown, opening) \
                or self._editing is not None:
            return
        if page is not None and page == shown:
            return
        if page is None:  # deleted meanwhile: by nightly (nothing it cited is left, or merged into another) or by hand
            title = self.pod.restore_redactions(shown.title) if shown is not None else slug
            self.page.setHtml(f"<p>The page <b>{html.escape(title)}</b> was deleted: nothing it cited is left in "
                              "memory, or it was merged into another page. Search your memory above, or open a "
                              "page from the list.</p>")
            self._page_actions(False)
            self.current = None
            return
        at, tab = self.page.verticalScrollBar().value(), self.tabs.currentIndex()
        await self._open(scope, slug, reload=True)
        self.page.verticalScrollBar().setValue(at)
        self.tabs.setCurrentIndex(tab)

    async def _load_held(self) -> None:
        from runtime_host.memory_jobs import held_from

        person = self.pod.person.id
        held = await self.pod.memory_held()  # the person's own and their agents', as on the CLI
        if self._switched(person):
            return
        rows = []
        from_whom = held_from(self.pod, held)  # "from you", "mail from Ana Quintero <ana@…>", …
        for q, who in zip(held, from_whom, strict=True):
            said = f"{q.subject}: {q.text}" if q.subject else q.text  # a held mail or file part: named first
            first = " ".join(self.pod.restore_redactions(said).split())  # the owner's own values put back
            rows.append((without_overrides(f"{first[:80]}{'…' if len(first) > 80 else ''} — "
                                           f"{self.pod.restore_redactions(who)}, for {self.pod.scope_label(q.scope)}"),
                         q, {}))
        if not _refill(self.held, rows):
            self._show_held(None)  # the note being read is gone (kept or discarded from the CLI, or forgotten)
        self.tabs.setTabText(2, f"Held back ({self.held.count()})" if self.held.count() else "Held back")

    def _show_held(self, q: Any) -> None:
        """Shows one held note as plain text (never as HTML: it is text that tried to give orders)."""
        restore = self.pod.restore_redactions  # the person's own held notes: their redacted values put back
        head = "".join(f"{label}: {without_overrides(restore(value))}\n" for label, value in
                       (("From", q.author), ("Subject", q.subject)) if value) if q else ""
        self.held_text.setPlainText(f"{head}\n{restore(q.text)}" if head else restore(q.text) if q else "")
        self.held_why.setText(f"Held because it {restore(q.reason.removeprefix('Quarantined: the item '))}" if q else "")
        self.keep_held.setEnabled(q is not None)
        self.discard_held.setEnabled(q is not None)

    def _on_held(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        self._show_held(item.data(Qt.ItemDataRole.UserRole) if item is not None else None)

    def _decide_held(self, keep: bool) -> None:
        item = self.held.currentItem()
        if item is None:
            return
        q = item.data(Qt.ItemDataRole.UserRole)
        pod, person = self.pod, self.pod.person.id  # whose note: what is said is said to them only

        async def go() -> None:
            try:
                if keep:
                    await pod.memory_release(q.id)
                else:
                    await pod.memory_discard(q.id)
            except Exception as exc:  # released meanwhile from the CLI, or forgotten
                self._say(person, f"Nothing changed: {exc}")
            else:
                self._say(person, "Kept the note; it reaches your pages at the next ingest." if keep
                          else "Discarded the note.")
            if not self._switched(person):
                self._show(self._load_held())

        self._run(go())

    async def _load_proposals(self) -> None:
        person = self.pod.person.id
        props = await self.pod.memory_proposals()  # the person's own, as on the CLI
        names = {p.id: proposed.title for p in props
                 if (proposed := _proposed_page(p.proposed_text)) is not None and proposed.title.strip()}
        if len(names) < len(props):  # a proposal that does not parse: named by the page it is for
            memory = self.pod.memory
            names |= await self._mem(lambda: {p.id: _page_name(memory, p) for p in props if p.id not in names})
        if self._switched(person):
            return
        restore = self.pod.restore_redactions  # the person's own titles: their redacted values put back
        rows = []
        for p in props:
            author = p.author.removeprefix("agent:").replace("-", " ")
            name = restore(names[p.id])
            rows.append((f"{name} ({self.pod.scope_label(p.scope)}) — by {author}", p, {_NAME: name}))
        if not _refill(self.proposals, rows):
            self.diff_old.clear()  # the proposal being read is gone (decided from the CLI, or withdrawn)
            self.diff_new.clear()
        self.tabs.setTabText(1, f"Proposals ({self.proposals.count()})" if self.proposals.count() else "Proposals")

    def open_page(self, scope: str, slug_or_title: str, link: bool = False) -> asyncio.Task[Any]:
        """Shows a page. A ``link`` ([[Title]] on a page, made with that page's scope) names a title the person may
        have in another scope they read: that one is opened when the link's own scope has none."""
        if not self._leave_editor():  # the person keeps editing: nothing else is opened over their correction
            return self._show(asyncio.sleep(0))
        ticket = self._opening = object()  # taken now: whatever is shown after this click (an answer) wins over it
        return self._show(self._open(scope, slug_or_title, ticket, link=link))

    def _viewer(self, scope: str) -> Any:
        """Who reads a page of ``scope``: the person, through the agent an agent scope names; ScopeError for a
        scope that is none (a link the wiki writer made up)."""
        import wiki_engine

        return wiki_engine.Viewer(self.pod.person.id, wiki_engine.Scope.parse(scope).agent)

    def _source_titles(self, sids: Any) -> dict[str, str]:
        """Titles of cited sources (in the memory thread); a source that is gone has none."""
        out = {}
        for sid in set(sids):
            try:
                out[sid] = self.pod.memory.get_source(sid).title
            except (KeyError, LookupError, OSError, ValueError):
                continue
        return out

    async def _open(self, scope: str, slug_or_title: str, ticket: object = None, reload: bool = False,
                    link: bool = False) -> None:
        """Shows a page. A ``reload`` (the page shown, read again after a save or a rewrite) gives way to the editor
        the person opened meanwhile: their Edit came after it, and closing the editor under them would lose it."""
        if ticket is None:  # the page opened last is the one shown, whichever read ends first
            ticket = self._opening = object()

        def stale() -> bool:
            return ticket is not self._opening or (reload and self._editing is not None)
        import wiki_engine

        def read_in(where: str) -> Any:
            try:
                return self.pod.memory.view_page(where, slug_or_title, self._viewer(where))
            except wiki_engine.ScopeError:  # a link naming no real scope (`hearth-page:agent`): no such page either
                return None

        def find() -> tuple[str, Any]:
            page = read_in(scope)
            if page is None and link:  # the person's own scopes alone (their private first), never another's
                mine = self.pod.person_scopes()
                for where in sorted(mine, key=lambda s: (not s.startswith("private/"), mine.index(s))):
                    if where != scope and (page := read_in(where)) is not None:
                        return where, page
            return scope, page

        def read() -> tuple[str, Any]:
            where, page = find()
            if page is not None:  # the owner's values read from the vault here, never on the window's thread
                me.read_redactions(page.title, page.body)
            return where, page

        me = self.pod
        scope, page = await self._mem(read)
        if stale():
            return
        self._close_editor()
        if page is None:
            self.page.setHtml(f"<p>No page <b>{html.escape(slug_or_title or scope)}</b> here yet.</p>")
            self._page_actions(False)
            self.current = None
            return
        self.current = (scope, page.slug)
        self._shown_page = page
        meta = f"<p><i>{html.escape(self.pod.scope_label(scope))} · {html.escape(page.category)} · updated {html.escape(local_time(page.updated, '%d %b %Y %H:%M'))}</i></p>"

        def source_titles() -> dict[str, str]:
            found = self._source_titles(page.citations.values())
            me.read_redactions(*found.values())
            return found

        titles = await self._mem(source_titles)
        if stale():
            return
        restore = self.pod.restore_redactions  # the owner's own view: redacted values put back, shown as stored
        sources = "".join(f"<li>[{n}] <a href='hearth-source:{sid}'>"
                          f"{html.escape(restore(titles.get(sid) or '') or f'Source {n}')}</a></li>"
                          for n, sid in sorted(page.citations.items()))
        body = page_html(page.body, page.citations, scope, restore)
        self.page.setHtml(f"<h2>{html.escape(restore(page.title))}</h2>{meta}{body}"
                          + (f"<h4>Sources</h4><ul>{sources}</ul>" if sources else ""))
        self._page_actions(True)
        self.verified.setChecked(page.verified)
        self.verified.setToolTip(
            "A household page, shared by everyone on this Hearth: any of you may correct it, mark it verified, and "
            "approve or reject what agents propose for it." if scope == "public" else
            "Your page: only you correct it, mark it verified, and decide what agents propose for it.")
        self.tabs.setCurrentIndex(0)

    # -- slots
    def _on_tree_item(self, item: QTreeWidgetItem, _col: int = 0) -> None:
        ref = item.data(0, Qt.ItemDataRole.UserRole)
        if ref:
            self.open_page(*ref)

    def _on_anchor(self, url: QUrl) -> None:
        target = unquote(url.toString())
        if target.startswith("hearth-page:"):
            scope, _, title = target.removeprefix("hearth-page:").partition("|")
            self.open_page(scope, title, link=True)
        elif target.startswith("hearth-source:"):
            self._show(self._show_source(target.removeprefix("hearth-source:")))
        else:  # a web link a page or an answer holds: Hearth stays offline, the address is the person's to open
            address = url.toString(QUrl.ComponentFormattingOption.FullyEncoded)
            self.status.emit(f"Hearth does not open web links from memory: {address} (select it on the page and "
                             "copy it to open it yourself).")

    async def _show_source(self, sid: str) -> None:
        scopes = set(self.pod.person_scopes())
        memory = self.pod.memory
        scope, owner = await self._mem(lambda: (memory.source_scope(sid), memory.source_owner(sid)))
        if scope is None:
            self.status.emit(_SOURCE_GONE)
            return
        if scope not in scopes:
            self.status.emit("That source is not yours to see.")
            return
        from wiki_engine import SourceUnreadable

        not_yours = self.pod.source_not_deletable(scope, owner or "")
        try:
            rec = await self._mem(lambda: self.pod.memory.get_source(sid))
        except LookupError:  # deleted in the meantime
            self.status.emit(_SOURCE_GONE)
            return
        except SourceUnreadable as exc:  # its file lost or damaged: said, and its Delete offered as the message advises
            self._source_dialog(sid, "A note memory cannot read", str(exc), self.pod.scope_label(scope), not_yours)
            return
        # Its text as stored, without the file's front matter (scope and key name the person by id; its date is UTC):
        # what it is, where and when are said in words above it.
        restore = self.pod.restore_redactions  # the owner's own view: redacted values put back
        stored = local_time(datetime.fromtimestamp(rec.ts, UTC).isoformat(), "%d %b %Y %H:%M")
        about = f"{_SOURCE_KINDS.get(rec.kind, 'A source')} · {self.pod.scope_label(scope)} · {stored}"
        self._source_dialog(sid, restore(rec.title) or "untitled source", restore(rec.text), about, not_yours)

    def _source_dialog(self, sid: str, title: str, text: str, about: str, not_yours: str = "") -> None:
        dlg = SourceDialog(title, text, self, about=about, not_yours=not_yours)
        dlg.source_id = sid
        dlg.delete_requested.connect(self._on_delete_source)
        dlg.show()
        self.source_dialog = dlg

    def _on_delete_source(self) -> None:
        sid = getattr(self.sender(), "source_id", None)
        if not sid:
            return

        pod, person = self.pod, self.pod.person.id  # whose source: what is said is said to them only

        async def go() -> None:
            changed: list[str] = []  # the pages that cited it
            moved: dict[str, str] = {}  # those the person verified, kept under their category's name
            try:
                deleted = await pod.memory_delete_source(sid)
            except (StoreError, LookupError):  # gone meanwhile: another source window, a terminal, a folder removed
                said = _SOURCE_ALREADY_GONE
            else:
                changed, moved = list(deleted), deleted.moved
                said = f"Source deleted; {len(changed)} page(s) will be written again without it." + (
                    f" {len(moved)} page(s) you verified had a title naming what it said: kept, titled by their "
                    "category." if moved else "")
            if self._say(person, said):  # after a switch, the next person's results and answer stay
                # an answer or a result citing a page that said it goes too: the page no longer says what it quoted
                self._drop_forgotten({sid, *changed})
                read = f"page:{self.current[0]}/{self.current[1]}" if self.current is not None else ""
                if read in moved:  # the page read is kept under another title: shown there, not said to be deleted
                    scope, _, slug = moved[read].removeprefix("page:").rpartition("/")
                    self.current = (scope, slug)
                self._reload(person)

        self._run(go())

    def _on_verified(self) -> None:
        checked = self.verified.isChecked()
        if self.current is None:
            return
        scope, slug = self.current
        if not self._mine(scope):
            self.verified.setChecked(not checked)
            self._not_mine("Not changed")
            return

        memory, person, shown = self.pod.memory, self.pod.person.id, self._shown_page
        read = (shown.body, dict(shown.citations)) if shown is not None else None  # what the person vouches for

        from wiki_engine import PageChanged
        from wiki_engine.pipeline import LeaseBusy

        async def go() -> None:
            try:
                await self._past_writers(lambda: self._mem(lambda: memory.set_verified(scope, slug, checked, read=read)))
            except PageChanged:  # rewritten since it was shown (a timed ingest, `memory ingest` in a terminal)
                if self._say(person, "Not verified: this page changed since it was shown (an ingest or another correction wrote it). It "
                                     "is shown again as it reads now: read it, then mark it verified."):
                    self.verified.setChecked(not checked)
                    self._reload(person)
                return
            except LeaseBusy:
                if self._say(person, f"{'Not verified' if checked else 'Still verified'}: {WRITERS_BUSY} Click "
                                     "Verified again in a minute."):
                    self.verified.setChecked(not checked)
                return
            self._say(person, f"Page {'verified: agents now propose changes instead of writing' if checked else 'no longer verified'}.")
            self._reload(person)

        self._run(go())

    # -- correcting a page by hand
    def _on_edit(self) -> None:
        if self.current is None:
            return
        scope, slug = self.current
        if not self._mine(scope):
            self._not_mine("Not opened for editing")
            return

        def read() -> Any:
            page = me.memory.read_page(scope, slug)
            if page is not None:  # the owner's values read from the vault here, never on the window's thread
                me.read_redactions(page.title, page.body)
            return page

        me = self.pod

        async def go() -> None:
            page = await self._mem(read)
            if page is None:
                self.status.emit("This page is gone (deleted or rebuilt meanwhile); choose it again from the list.")
                return
            restore = self.pod.restore_redactions
            self.editor.setPlainText(restore(page.body))  # the owner's own values
            self._editing = (scope, slug)
            self._edit_text, self._edit_title = self.editor.toPlainText(), restore(page.title)
            self._edit_base = (page.body, dict(page.citations))  # what the person's [n] refer to
            # each value put back, by its placeholder: saved again as that placeholder unless the person changed it
            self._edit_restored = {ph: restore(ph) for ph in reversible_placeholders(page.body)}
            self.page_stack.setCurrentIndex(1)
            self.edit.setEnabled(False)
            self.editor.setFocus()

        self._show(go())

    def _close_editor(self) -> None:
        self._editing = None
        self.editor.clear()
        self.edit_refused.clear()
        self.edit_refused.setVisible(False)
        self.page_stack.setCurrentIndex(0)

    def _leave_editor(self) -> bool:
        """Whether the view may move on from the editor (another page, an answer): yes if it is closed or holds
        nothing typed (it then closes), or once the person chose to discard their correction. Keep editing leaves
        everything as it was: the editor, its text, and what was selected in the list and the results."""
        if self._editing is None:
            return True
        if self.keeps_correction():
            self._select_again()
            return False
        self._close_editor()
        return True

    def has_unsaved_correction(self) -> bool:
        return self._editing is not None and self.editor.toPlainText() != self._edit_text

    def keeps_correction(self) -> bool:
        """Whether an unsaved correction is open and the person, asked, chose to keep editing it (before anything
        would throw it away: another page, a person switch, quitting). The editor then has the focus."""
        if not self.has_unsaved_correction():
            return False
        from app.confirm import choose

        if choose(self, "Unsaved correction", f"Discard your correction to {self._edit_title or 'this page'}?",
                  ["Discard"], "What you typed in the editor is not saved. Keep editing to Save it first.",
                  cancel="Keep editing") == "Discard":
            return False
        self.editor.setFocus()
        return True

    def _on_tree_current(self, _item: Any, prev: QTreeWidgetItem | None) -> None:
        self._tree_was = prev.data(0, Qt.ItemDataRole.UserRole) if prev is not None else None

    def _on_result_current(self, _item: Any, prev: QListWidgetItem | None) -> None:
        self._result_was = self.results.row(prev) if prev is not None else -1

    def _select_again(self) -> None:
        """The list and the results select what they did before the click the person took back (Keep editing)."""
        was, found = self._tree_was, None
        it = QTreeWidgetItemIterator(self.tree)
        while was is not None and found is None and it.value() is not None:
            if it.value().data(0, Qt.ItemDataRole.UserRole) == was:
                found = it.value()
            it += 1
        if found is not None:
            self.tree.setCurrentItem(found)
        else:
            self.tree.setCurrentIndex(QModelIndex())
            self.tree.clearSelection()
        self.results.setCurrentRow(self._result_was)
        if self._result_was < 0:
            self.results.clearSelection()

    def _on_cancel_edit(self) -> None:
        self._close_editor()
        self.edit.setEnabled(self.current is not None)
        self.status.emit("Nothing changed.")
        self._show(self._reopen_if_rewritten())  # an ingest may have rewritten it while the editor was open
        self.give_back()  # another correction of the person's that was not saved: its turn now

    def _on_save_edit(self) -> None:
        if self._editing is None:
            return
        scope, slug = self._editing
        if not self._mine(scope):
            self._close_editor()
            self._not_mine("Not saved")
            return
        body = self.editor.toPlainText().strip()
        if not body:
            self.status.emit("Not saved: the page would be empty. Type its text, or Cancel.")
            return
        # The owner's values the editor showed go back as their placeholders: memory would redact them again, for
        # good (a card kept as "[CARD_1]" no one can read back), though only another line was corrected.
        body = keep_placeholders(body, self._edit_restored)
        # Whose correction it is, taken now: a save waiting for memory (busy with an import) is done for them even
        # if the window shows someone else by then, their values kept in their keyring, and said to them only.
        pod = self.pod
        person = pod.person.id
        author = f"person:{person}"
        base = self._edit_base
        left = _Refused((scope, slug), self._edit_title, self.editor.toPlainText(), self._edit_text, base,
                        dict(self._edit_restored))

        def refused(why: str) -> None:
            self._not_saved(person, dataclasses.replace(left, why=why))

        redacted: list[str] = []

        def write() -> Any:
            import wiki_engine
            from runtime_host.memory_jobs import citations_as_marks

            # a value typed anew: kept for its owner to read back, not lost to "[CARD_1]". The keyring is read (a
            # prompt, if it is locked) before the page is: what is compared below is what is written, no later
            if not redacted:
                redacted.append(citations_as_marks(pod.redact_own(body)))
            page = pod.memory.read_page(scope, slug)
            if page is None:
                return None
            if (page.body, page.citations) != base:
                return "changed"  # an ingest rewrote it meanwhile: the person's [n] may now name other sources
            fixed = dataclasses.replace(page, body=redacted[0], verified=True)
            unknown = [n for n in fixed.cited_numbers() if n not in fixed.citations]
            if unknown:
                return unknown
            # a claim the person took out takes its source off the page's list (nothing on it rests there now)
            cited = fixed.cited_numbers()  # as the page shows them ("[1]: 9 May" too)
            fixed = dataclasses.replace(fixed, citations={n: src for n, src in fixed.citations.items() if n in cited})
            try:  # written only onto the page as it was read, whichever process writes memory meanwhile
                return pod.memory.write_page(fixed, author=author, expected=base)
            except wiki_engine.PageChanged:
                return "changed"
            except KeyError:
                return None

        async def go() -> None:
            from wiki_engine.pipeline import LeaseBusy

            try:
                done = await self._past_writers(lambda: self._mem(write))
            except LeaseBusy:
                refused(f"Not saved: {WRITERS_BUSY} Your text is still in the editor: Save again in a minute.")
                return
            except (OSError, ValueError, MappingStoreFailed) as exc:  # the disk, a citation refused, the vault
                refused(f"Not saved: {exc} Your text is still in the editor: fix it and Save again, or Cancel.")
                return
            if done is None:
                refused("Not saved: this page is gone (deleted or rebuilt meanwhile). Copy your text, then open "
                        "the page again from the list.")
                return
            if done == "changed":
                refused("Not saved: this page changed while you were editing it (an ingest or another correction wrote it). Your text "
                        "is still in the editor: copy it, Cancel, and Edit the page again.")
                return
            if isinstance(done, list):
                numbers = ", ".join(f"[{n}]" for n in done)
                refused(f"Not saved: {numbers} points at no source of this page. Use a number listed under "
                        "Sources, or take it out.")
                return
            if not self._say(person, "Correction saved. The page is now verified: the next ingest proposes changes "
                                     "to it (under Proposals) instead of rewriting your text."):
                return  # another person is shown now
            if self._editing != (scope, slug):
                return  # the person moved on (another page, another person) while it saved
            self._close_editor()
            self.give_back()  # another correction of theirs that was not saved: its turn now
            self._show(self._load_and_open(scope, slug))  # a read: a switch cancels it

        self._run(go())

    def _not_saved(self, person: str, refused: _Refused) -> None:
        """Says why a correction was not saved, to its owner only. While the editor still holds it, that is all
        (their text is there to fix). Otherwise (another person is shown, or the owner closed the editor or switched
        away and back meanwhile) it is kept for them and given back, never shown to anyone else."""
        if self.pod.person.id == person and self._editing == refused.page:
            self.status.emit(refused.why)
            return
        from runtime_host import keptcorrections

        try:  # in pod.db too, sealed for them: a quit before they are back does not lose it
            refused = dataclasses.replace(refused, kept=keptcorrections.keep(self.pod, person, refused.fields()))
        except Exception as exc:  # noqa: BLE001 - their vault did not open (a locked keyring): kept until Hearth quits
            log.warning("a wiki correction not saved is kept until Hearth quits only: %s", type(exc).__name__)
            with contextlib.suppress(Exception):  # a forget of theirs after this one lets it go (_still_kept)
                refused = dataclasses.replace(refused, forgets=keptcorrections.still_kept(self.pod, person)[1])
        waiting = self._refused.setdefault(person, [])
        waiting.append(refused)
        if len(waiting) > KEPT_CORRECTIONS:  # as in pod.db: the newest few
            log.warning("%d older wiki correction(s) not saved were dropped (%d are kept per person)",
                        len(waiting) - KEPT_CORRECTIONS, KEPT_CORRECTIONS)
            del waiting[:-KEPT_CORRECTIONS]
        if self.pod.person.id == person:
            self.give_back()

    def _read_kept(self) -> None:
        """The person shown's corrections kept in pod.db (before a quit) join those waiting here, once per window.
        One that cannot be read is dropped with a line in the log; pod.db or the vault not answering leaves them
        there for their next show. Nothing of another person's is read."""
        from runtime_host import keptcorrections

        person = self.pod.person.id
        try:
            rows = keptcorrections.kept(self.pod, person)
        except Exception as exc:  # noqa: BLE001 - the window starts all the same
            log.warning("wiki corrections kept for the person shown wait for their next show: %s", type(exc).__name__)
            return
        self._kept_read.add(person)
        here = {r.kept for r in self._refused.get(person, [])}
        read: list[_Refused] = []
        for row_id, fields in rows:
            if row_id in here:
                continue
            try:
                read.append(_Refused.from_fields(fields, row_id))
            except (ValueError, TypeError) as exc:
                log.warning("a kept wiki correction could not be read and is dropped (%s)", type(exc).__name__)
                with contextlib.suppress(Exception):  # pod.db not answering now: it is skipped again next time
                    keptcorrections.drop(self.pod, person, row_id)
        if read:
            self._refused[person] = read + self._refused.get(person, [])

    def _still_kept(self, person: str) -> list[_Refused]:
        """The person's corrections waiting here, less those forgotten meanwhile by any process (`memory forget-me`
        in a terminal: its kept row is gone from pod.db, or, for one pod.db never held, their forget token changed)
        or given back elsewhere. pod.db not answering leaves them all waiting, as they were."""
        from runtime_host import keptcorrections

        waiting = self._refused.get(person)
        if not waiting:
            return []
        try:
            rows, token = keptcorrections.still_kept(self.pod, person)
        except Exception as exc:  # noqa: BLE001 - not known to be gone: given back as before
            log.warning("could not check the wiki corrections kept for the person shown: %s", type(exc).__name__)
            return waiting
        waiting[:] = [r for r in waiting if (r.kept in rows if r.kept else r.forgets == token)]
        if not waiting:
            del self._refused[person]
        return waiting

    def give_back(self) -> bool:
        """A correction of the person shown that was not saved while the editor no longer held it (kept in pod.db
        across a quit) reopens in the editor with the text they typed, and they are told why (above the editor, and
        in the status bar); it is forgotten then. It waits while the editor holds another correction. Whether one
        was given back."""
        if self.pod.person.id not in self._kept_read:
            self._read_kept()
        waiting = self._still_kept(self.pod.person.id)
        if not waiting:
            return False
        if self._editing is not None:
            self.status.emit(f"Your correction to {waiting[0].title or 'a page'} was not saved; it reopens here once "
                             "you Save or Cancel this one.")
            return False
        r = waiting.pop(0)
        if not waiting:
            del self._refused[self.pod.person.id]
        if r.kept:
            from runtime_host import keptcorrections

            try:
                keptcorrections.drop(self.pod, self.pod.person.id, r.kept)
            except Exception as exc:  # noqa: BLE001 - given back all the same; it may be given again after a restart
                log.warning("a wiki correction given back stays in pod.db: %s", type(exc).__name__)
        self._opening = object()  # a page read under way is not shown over the editor
        self.current, self._shown_page = r.page, None
        self.page.clear()
        self._page_actions(False)
        self.editor.setPlainText(r.typed)
        self._editing = r.page
        self._edit_text, self._edit_title, self._edit_base, self._edit_restored = r.opened, r.title, r.base, r.restored
        said = f"Your correction to {r.title or 'this page'} was not saved: {r.why.removeprefix('Not saved: ')}"
        self.edit_refused.setText(said)
        self.edit_refused.setVisible(True)
        self.page_stack.setCurrentIndex(1)
        self.tabs.setCurrentIndex(0)
        self.status.emit(said)
        return True

    def _on_typed(self, text: str) -> None:
        if len(text.strip()) < 2:
            return

        async def suggest() -> None:
            hits = await self._mem(lambda: self.pod.memory.typeahead(text.strip(), scopes=self.pod.person_scopes(), k=8))
            titles = [h.title for h in hits if h.title]
            self._shown_values.update(self._values_in(titles))
            restore = self.pod.restore_redactions  # the person's own titles: their redacted values put back
            self._suggestions.setStringList([restore(t) for t in titles])

        self._show(suggest())

    def _values_in(self, texts: list[str]) -> dict[str, str]:
        """The person's own values behind the reversible placeholders in ``texts`` (what the view shows them)."""
        return {ph: self.pod.restore_redactions(ph) for t in texts for ph in reversible_placeholders(t)}

    def _on_suggestion(self, title: str) -> None:
        self.search.setText(title)
        self._on_search()

    def _on_search(self) -> None:
        # A value shown in a suggestion or result is searched as the placeholder memory holds: the index matches
        # it, and a redacted card never goes to the provider that embeds the question.
        query = keep_placeholders(self.search.text().strip(), self._shown_values)
        if not query:
            return

        async def go() -> None:
            hits = await self.pod.memory_search(query, k=20)
            said = await self.pod.memory_said(hits)  # "chat, said by Alice", "mail from Ana <ana@…>"
            self._shown_values.update(self._values_in([*(f"{h.title} {h.snippet}" for h in hits), *said.values()]))
            restore = self.pod.restore_redactions  # the person's own results: their redacted values put back
            self.results.clear()
            for h in hits:
                where = self.pod.scope_label(h.scope)
                if h.kind == "page":  # a page by its title
                    line = f"📄 {' '.join(without_overrides(restore(h.title or h.snippet)).split())[:80]} — {where}"
                else:  # a source by its words, who said it and when: one conversation's share its title
                    words, about = source_line(without_overrides(restore(h.snippet)),
                                               without_overrides(restore(said.get(h.id, ""))), h.ts)
                    words = words or " ".join(without_overrides(restore(h.title)).split())[:80]
                    line = f"· {words} — {' · '.join(w for w in (about, where) if w)}"
                item = QListWidgetItem(line)
                # its title (a conversation's, a mail's subject) above its words: a stranger's words, never HTML
                item.setToolTip(plain_tooltip("\n".join(w for w in (restore(h.title), restore(h.snippet)) if w)))
                item.setData(Qt.ItemDataRole.UserRole, h)
                self.results.addItem(item)
            if not hits:
                self.results.addItem("Nothing found.")

        self._show(go())

    def _on_ask(self) -> None:
        if self._asking is not None and not self._asking.done():  # the button reads Stop: the person gives up on it
            self._asking.cancel()
            return
        # A value shown in a suggestion or result is asked about as the placeholder memory holds (as Search does): a
        # redacted card never goes to the Ask memory model or the provider that embeds the question.
        question = keep_placeholders(self.search.text().strip(), self._shown_values)
        if not question:
            self.status.emit("Type a question in the search box, then Ask memory.")
            return
        if not self._leave_editor():  # the person keeps editing: nothing is asked, nothing on screen changes
            return
        shown = self.pod.restore_redactions(question)  # to the person, with their own values put back
        self.page.setHtml(f"<p><i>Asking memory: {html.escape(shown)}…</i></p>")
        self.current = None  # the view shows an answer now, not a page to verify or edit
        # What is shown last is what was asked for last: a page whose read is under way is not shown over the
        # answer, and a page clicked while the answer comes is not replaced by it.
        ticket = self._opening = object()
        self._close_editor()
        self._page_actions(False)
        self.tabs.setCurrentIndex(0)

        async def go() -> None:
            try:
                result = await self.pod.ask_memory(question)
            except asyncio.CancelledError:
                if ticket is self._opening:
                    self.page.setHtml(f"<p>Stopped asking memory: {html.escape(shown)}</p>")
                raise
            except Exception as exc:  # no agent yet, say
                if ticket is self._opening:
                    self.page.setHtml(f"<p>{html.escape(str(exc))}</p>")
                return
            cited = set((getattr(result, "citations", None) or {}).values())
            said = await self.pod.memory_said([h for h in result.hits if h.id in cited]) if result.ok else {}
            if ticket is self._opening:
                self.page.setHtml(answer_html(shown, result, self.pod.scope_label, self.pod.restore_redactions, said))
                self._answer = (ticket, set((getattr(result, "citations", None) or {}).values()))

        def asked(_task: Any) -> None:
            self._asking = None
            with contextlib.suppress(RuntimeError):  # the window closed meanwhile
                self.ask.setText("Ask memory")
                self.ask.setToolTip("An agent answers the question in the search box from memory, with citations")

        self._asking = self._show(go())
        self.ask.setText("Stop")
        self.ask.setToolTip("Stop waiting for this answer")
        self._asking.add_done_callback(asked)

    def _on_result(self, item: QListWidgetItem) -> None:
        h = item.data(Qt.ItemDataRole.UserRole)
        if h is None:
            return
        if h.kind == "page":
            self.open_page(h.scope, h.id.split("/")[-1])
        else:
            self._show(self._show_source(h.id))

    def _on_proposal(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        if item is None:
            return
        p = item.data(Qt.ItemDataRole.UserRole)
        self._sides_shown = None
        self.approve.setEnabled(True)
        memory = self.pod.memory

        async def show() -> None:
            page, raw, why = await self._mem(lambda: _current_side(memory, p))
            proposed = _proposed_page(p.proposed_text)
            cited = [*(page.citations.values() if page else ()), *(proposed.citations.values() if proposed else ())]
            titles = await self._mem(lambda: self._source_titles(cited))
            restore = self.pod.restore_redactions  # the person's own proposals: their redacted values put back
            old = restore(_as_read(page, titles) if page else raw or "")
            new = restore(_as_read(proposed, titles) if proposed else p.proposed_text)
            above = f"<p><b>{html.escape(why)}</b></p>" if why else ""
            self.diff_old.setHtml(above + _side(old, new, "old"))
            self.diff_new.setHtml(_side(old, new, "new"))
            if page is None and raw is None and why:  # what approving would replace cannot be shown: not approved
                self.approve.setEnabled(False)
                return
            self._sides_shown = p.id

        self._sides = self._show(show())

    def _decide(self, approve: bool) -> None:
        item = self.proposals.currentItem()
        if item is None:
            return
        p = item.data(Qt.ItemDataRole.UserRole)

        import wiki_engine
        from wiki_engine.pipeline import LeaseBusy

        page = item.data(_NAME) or p.slug  # as the list names it: the page's title
        pod, person = self.pod, self.pod.person.id  # whose proposal: what is said is said to them only
        sides = self._sides

        async def go() -> None:
            if approve:  # approved as she sees it: the two sides shown first, and never what cannot be shown
                if sides is not None and not sides.done():
                    await asyncio.wait([sides])
                if self._sides_shown != p.id:
                    self._say(person, f"Not approved: {page} as it is now could not be shown beside the proposal "
                                      "(see the left side). Mend its file, or Reject the proposal.")
                    return
            try:
                if approve:
                    await self._past_writers(lambda: pod.memory_approve_proposal(p.id))
                else:
                    await pod.memory_reject_proposal(p.id)
            except LeaseBusy:  # nothing changed: the proposal stays open and shown beside the page, to approve again
                self._say(person, f"Not approved: {WRITERS_BUSY} Approve it again in a minute.")
                return
            except KeyError:  # decided meanwhile from the CLI or another window
                said = (f"Nothing changed: the proposal for {page} was already approved or rejected elsewhere. The "
                        "list now shows what is still open.")
            except wiki_engine.PageWriteError as exc:  # its folder is read-only, the disk is full
                said = f"Not approved: {exc}"
            except (wiki_engine.CitationError, wiki_engine.PageFormatError):
                said = (f"Not approved: the proposed {page} cites a source that is no longer stored, or cannot be "
                        "read. Reject it; the next ingest proposes again.")
            except ValueError:  # memory refuses to approve over a page that changed since the proposal was made
                said = (f"Not approved: {page} changed after this proposal was made (you corrected it, or another "
                        "proposal was approved). Compare the two sides, then Reject it; the next ingest proposes "
                        "again from the page as it is now.")
            except OSError as exc:
                said = f"Nothing changed: {exc} Try again once that is fixed."
            else:
                said = f"Proposal for {page} {'approved' if approve else 'rejected'}."
            if not self._say(person, said):
                return  # another person is shown now: their view was reset and loaded for them
            self.diff_old.clear()
            self.diff_new.clear()
            self._reload(person)

        self._run(go())

    def _drop_forgotten(self, sids: set[str] | None) -> None:
        """What is on screen of deleted sources or pages (``sids``: their ids and keys; a page that cited a deleted
        source is among them) or of a forget (None: any item may be gone) goes: their search results, the search
        box's suggestions (the next letter typed asks memory again), and an Ask memory answer citing them (the empty
        state or the pointer takes its place)."""
        self._suggestions.setStringList([])
        self.search.completer().popup().hide()
        for row in reversed(range(self.results.count())):
            h = self.results.item(row).data(Qt.ItemDataRole.UserRole)
            if sids is None or (h is not None and h.id in sids):
                self.results.takeItem(row)
        ticket, cited = self._answer
        if ticket is self._opening and self.current is None and (sids is None or cited & sids):
            self._opening = object()
            self._answer = (None, set())
            self.page.clear()  # blank: the reload that follows shows the empty state or the pointer

    def _forget(self, coro: Any, what: str, also: str = "") -> None:
        person = self.pod.person.id  # who clicked: told to them only; another person shown by then keeps their view

        async def go() -> None:
            try:
                n = await coro
            except Exception as exc:  # an unknown agent name, say
                self._say(person, f"Nothing forgotten: {exc}")
                return
            if self._say(person, f"Forgot {n} item(s) {what}{also}."):
                self._drop_forgotten(None)
                self._reload(person)

        self._run(go())

    def _on_forget_agent(self) -> None:
        from app.confirm import confirm

        name = self.forget_agent_name.text().strip()
        if not name:
            self.status.emit("Type the agent's name first.")
            return
        if not confirm(self, "Forget", f"Forget everything {name} learned?", "Forget",
                       "Its sources are deleted and taken out of search, and its own notes emptied. This cannot be "
                       "undone."):
            self.status.emit("Nothing forgotten.")
            return
        self._forget(self.pod.memory_forget_agent(name), f"learned by {name}")

    def _on_forget_me(self) -> None:
        from app.confirm import confirm

        watched = len(self.pod.folders.list_folders())  # forgetting stops them, or they would import it all again
        folders = (f" Your {watched} watched folder(s) are no longer watched (their files stay where they are; add "
                   "a folder again to import it anew)." if watched else "")
        if not confirm(self, "Forget", f"Forget everything remembered about {self.pod.person.name}?", "Forget everything",
                       "Every source about you is deleted and taken out of search, and your agents' own notes "
                       f"emptied.{folders} This cannot be undone."):
            self.status.emit("Nothing forgotten.")
            return
        self._forget(self.pod.memory_forget_me(), "about you",
                     f"; stopped watching {watched} folder(s)" if watched else "")

    def _on_approve(self) -> None:
        self._decide(True)

    def _on_reject(self) -> None:
        self._decide(False)


def _page_name(memory: Any, p: Any) -> str:
    """The page a proposal that does not parse is for, as a person reads it (in the memory thread): the current
    page's title, else its slug."""
    import wiki_engine

    try:
        page = memory.read_page(p.scope, p.slug)
    except (wiki_engine.PageFormatError, OSError, ValueError):
        page = None
    return str(page.title) if page is not None and page.title.strip() else str(p.slug)


def _current_side(memory: Any, p: Any) -> tuple[Any, str | None, str]:
    """What a proposal is shown beside (in the memory thread): the page it would replace, or, for a page file that
    no longer parses (a hand edit gone wrong), its text as the file holds it, with a line saying so and where; for
    a file that cannot be read at all, only that line. (page, file text, the line)."""
    import wiki_engine

    try:
        return memory.read_page(p.scope, p.slug), None, ""
    except wiki_engine.PageFormatError as exc:
        why = _parse_error(str(exc))
    try:
        raw = memory.pages.read_text(wiki_engine.Scope.parse(p.scope), p.slug)
    except (wiki_engine.PageFormatError, OSError) as exc:
        return None, None, f"This page's file cannot be read: {_parse_error(str(exc))}"
    return None, raw or "", f"This page's file does not parse ({why}): shown as the file holds it."


def _parse_error(message: str) -> str:
    """A page file's error without the file's path ("line 3: expected 'key: value' ..."): the reason, and where."""
    m = _UNREADABLE.match(message)
    if m is None:
        return message
    return f"{m['line']}: {m['reason']}" if m["line"] else m["reason"]


def _proposed_page(text: str) -> Any:
    """A proposal is kept as the whole page file: the page it proposes, or None for text that does not parse."""
    import wiki_engine

    try:
        return wiki_engine.parse_page(text, where="the proposal")
    except wiki_engine.PageFormatError:
        return None


def _as_read(page: Any, titles: dict[str, str]) -> str:
    """A page as a diff compares it: what a person reads and what approving changes (title, category, the text,
    and what each [n] cites, by title), never its file's front matter or source ids."""
    sources = [f"[{n}] {titles.get(sid) or 'a source that is gone'}" for n, sid in sorted(page.citations.items())]
    return "\n".join([f"{page.title} · {page.category}", "", page.body, "", "Sources:", *sources])


def _side(old: str, new: str, which: str) -> str:
    """One side of a side-by-side diff: removed lines red on the old side, added lines green on the new."""
    a, b = old.splitlines(), new.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        lines = a[i1:i2] if which == "old" else b[j1:j2]
        color = "" if tag == "equal" else ("#f8d7da" if which == "old" else "#d4edda")
        for ln in lines:
            style = f" style='background-color:{color}'" if color else ""
            out.append(f"<div{style}>{html.escape(ln) or '&nbsp;'}</div>")
    return "<pre>" + "".join(out) + "</pre>"
