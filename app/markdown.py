"""Markdown to the HTML subset QTextBrowser renders, with syntax-highlighted code blocks. Raw HTML in messages
is shown as text, never rendered."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel, QWidget

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(["table", "strikethrough"])
# A model's answer under Hearth's own headings (the question, "Sources"): it makes no heading or rule of its own, so
# it cannot add a "Sources" list or a question that reads as Hearth's; "#### Sources" shows as written
_md_answer = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(
    ["table", "strikethrough"]).disable(["heading", "lheading", "hr"])
# Direction overrides and isolates: "\u202e4321" shows as "1234", a word made to read as another
_DIRECTION = re.compile("[\u202a-\u202e\u2066-\u2069]")
_formatters = {False: HtmlFormatter(nowrap=True, noclasses=True, style="friendly"),
               True: HtmlFormatter(nowrap=True, noclasses=True, style="github-dark")}


def _dark() -> bool:
    """Code colours follow the window's light or dark appearance."""
    from PySide6.QtGui import QGuiApplication, QPalette

    app = QGuiApplication.instance()
    return app is not None and QGuiApplication.palette().color(QPalette.ColorRole.Base).lightness() < 128

# One type scale for messages and wiki pages: body at the window's font size, headings by a fixed ratio,
# a generous line height, and quiet labels.
STYLE = """
<style>
body { line-height: 145%; }
p { margin-top: 0px; margin-bottom: 8px; }
h1 { font-size: 150%; margin-top: 14px; margin-bottom: 8px; }
h2 { font-size: 130%; margin-top: 12px; margin-bottom: 6px; }
h3 { font-size: 115%; margin-top: 10px; margin-bottom: 4px; }
pre { background-color: rgba(127,127,127,0.12); padding: 8px; font-family: monospace; margin-top: 0px; }
code { font-family: monospace; background-color: rgba(127,127,127,0.12); }
table { border-collapse: collapse; margin-bottom: 8px; }
th, td { border: 1px solid rgba(127,127,127,0.5); padding: 3px 6px; }
.role { font-weight: bold; margin-top: 18px; margin-bottom: 4px; }
.actions { font-weight: normal; font-size: 85%; }
.codebar { font-size: 85%; margin-bottom: 0px; margin-top: 4px; }
.steps { font-size: 90%; margin-bottom: 2px; margin-top: 0px; }
.detail { font-size: 85%; }
.marker { font-size: 90%; font-style: italic; color: #a0522d; }
.error { color: #c0392b; }
</style>
"""


@functools.lru_cache(maxsize=64)
def _lexer(lang: str) -> Any:
    try:
        return get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        return None


def _highlight(code: str, lang: str) -> str:
    lexer = _lexer(lang.lower())
    return highlight(code, lexer, _formatters[_dark()]) if lexer is not None else html.escape(code)


def _code_rule(_self: Any, tokens: Any, idx: int, _options: Any, env: Any) -> str:
    token = tokens[idx]
    lang = token.info.strip().split()[0] if token.info and token.info.strip() else ""
    codes = env.setdefault("codes", [])
    n = len(codes)
    codes.append(token.content)
    bar = ""
    if env.get("copy_href") is not None:
        label = f" · {html.escape(lang)}" if lang else ""
        bar = f'<p class="codebar"><a href="{env["copy_href"]}{n}">Copy code</a>{label}</p>'
    return f"{bar}<pre>{_highlight(token.content.rstrip(chr(10)), lang)}</pre>\n"


def _image_rule(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An image is shown as its words: Qt would read its source from disk as the text is laid out (any file the
    person can read, /dev/zero until memory runs out), and what a model or a stranger wrote must never do that."""
    alt = self.renderInlineAsText(tokens[idx].children or [], options, env)
    return html.escape(f"[image: {alt}]" if alt.strip() else "[image]")


# Splits a run of plain text into words (str) and links ((label, href)): how the wiki makes its [[Title]] and [n].
Links = Callable[[str], list[str | tuple[str, str]]]


def _links_rule(state: StateCore) -> None:
    """``env["links"]`` on the text only: never in code, never in a link's own words, never in a character its
    writer escaped (``\\[1]``: this runs before escapes join the text around them)."""
    links: Links | None = state.env.get("links")
    if links is None:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        inside = 0
        for tok in block.children:
            inside += tok.nesting if tok.type in ("link_open", "link_close") else 0
            if tok.type != "text" or inside:
                out.append(tok)
                continue
            for part in links(tok.content):
                if isinstance(part, str):
                    if part:
                        out.append(Token("text", "", 0, content=part, level=tok.level))
                else:
                    out += [Token("link_open", "a", 1, attrs={"href": part[1]}, level=tok.level, meta={"own": True}),
                            Token("text", "", 0, content=part[0], level=tok.level + 1),
                            Token("link_close", "a", -1, level=tok.level)]
        block.children = out


# A [[link]] as memory reads one (wiki_engine/pages.py _LINK): on one line, no "[" or "]" in it, touching no code.
_WIKI_LINK = re.compile(r"\[\[[^\[\]\n`]*\]\]")


def _wiki_link_rule(state: StateInline, silent: bool) -> bool:
    """With ``env["links"]``: a [[link]] is read whole, as memory reads it, for ``links`` to make: a "**" in it makes
    no bold ("[[**Clara**]]" showed as "[[Clara]]" in bold, no link) and a "\\|" is its label's "|", as a table row
    needs it written (outside a table it showed as "[[Title|label]]", no link)."""
    if state.env.get("links") is None or not state.src.startswith("[[", state.pos):
        return False
    m = _WIKI_LINK.match(state.src, state.pos)
    if m is None:
        return False
    if not silent:
        state.push("text", "", 0).content = m.group(0).replace("\\|", "|")
    state.pos = m.end()
    return True


def _hearth_address(href: str) -> bool:
    """Whether ``href`` is one of Hearth's own addresses (a page, a source, a message action), in whatever case it is
    written: a link's scheme is read without regard to case ("HEARTH-ACT:…" is clicked as "hearth-act:…")."""
    return href.strip().lower().startswith("hearth-")


def _shown_rule(state: StateCore) -> None:
    """Once the markdown is read: ``env["restore"]`` puts values back in the words and code shown (a restored
    "Sun*shine*" is not read as markdown, it shows as it is), and with ``env["addresses"]`` each link that leaves
    Hearth shows its address, after its words and as its tooltip."""
    restore: Callable[[str], str] | None = state.env.get("restore")
    for tok in state.tokens:
        if restore is not None and tok.type in ("fence", "code_block"):
            tok.content = restore(tok.content)
        if tok.children:
            tok.children = _shown_inline(tok.children, restore, bool(state.env.get("addresses")),
                                         bool(state.env.get("hearth_in_text")))


def _shown_inline(tokens: list[Token], restore: Callable[[str], str] | None, addresses: bool,
                  hearth_in_text: bool = False) -> list[Token]:
    """See _shown_rule; ``hearth_in_text``: a link to a Hearth address written in the text stays a link (a wiki
    writer's link to a page, checked when clicked), else its words are shown without it."""
    out: list[Token] = []
    opened: list[tuple[Token, list[str]]] = []  # the web links being read, each with its words
    for tok in tokens:
        if restore is not None and tok.type in ("text", "code_inline"):
            tok.content = restore(tok.content)
        if tok.children:
            tok.children = _shown_inline(tok.children, restore, False, hearth_in_text)
        out.append(tok)
        if not addresses:
            continue
        if tok.type == "link_open":
            opened.append((tok, []))
            if not tok.meta.get("own") and not hearth_in_text and _hearth_address(str(tok.attrGet("href") or "")):
                out.pop()  # a Hearth address written in the text: its words stay, as words
        elif tok.type in ("text", "code_inline") and opened:
            opened[-1][1].append(tok.content)
        elif tok.type == "link_close" and opened:
            link, words = opened.pop()
            href = str(link.attrGet("href") or "")
            if link.meta.get("own") or (hearth_in_text and _hearth_address(href)):
                continue  # Hearth's own: a page or a source, named by its words (never by its id)
            if _hearth_address(href):  # written to look like Hearth's own (a page, an action): no link
                out.pop()
            else:
                link.attrSet("title", href)
            if "".join(words).strip() not in (href, href.removeprefix("mailto:")):
                out.append(Token("text", "", 0, content=f" ({href})", level=tok.level))
    return out


for _parser in (_md, _md_answer):
    _parser.add_render_rule("fence", _code_rule)
    _parser.add_render_rule("code_block", _code_rule)
    _parser.add_render_rule("image", _image_rule)
    _parser.inline.ruler.before("link", "hearth_wiki_link", _wiki_link_rule)
    _parser.core.ruler.after("inline", "hearth_links", _links_rule)
    _parser.core.ruler.push("hearth_shown", _shown_rule)


def render_with_code(text: str, copy_href: str | None = None) -> tuple[str, list[str]]:
    """Renders a conversation's message `text`; returns the HTML and the code blocks' text in order. With
    `copy_href`, each code block gets a Copy link to `{copy_href}{n}`. Each web link shows its address after its
    words where they differ, and a link to a Hearth address written in the text (a message action, say) is no link."""
    env: dict[str, Any] = {"codes": [], "copy_href": copy_href, "addresses": True}
    return _md.render(without_overrides(text), env), env["codes"]


def render(text: str, links: Links | None = None, restore: Callable[[str], str] | None = None,
           addresses: bool = False, answer: bool = False) -> str:
    """``text`` as HTML. ``links`` makes links of the plain text (see _links_rule); ``restore`` puts the owner's
    values back once the markdown is read, so each shows exactly as stored; ``addresses`` shows where each web
    link goes (see _shown_rule); ``answer``: a model's answer shown under Hearth's headings, with none of its own."""
    env: dict[str, Any] = {"codes": [], "copy_href": None, "links": links, "restore": restore,
                           "addresses": addresses, "hearth_in_text": True}
    return (_md_answer if answer else _md).render(without_overrides(text), env)


def without_overrides(text: str) -> str:
    """``text`` without direction overrides and isolates (U+202A–202E, U+2066–2069), as the CLI prints it: words a
    model or a stranger wrote read in the window as they are stored (the window lays out right-to-left script
    itself)."""
    return _DIRECTION.sub("", text)


def makes_links(text: str) -> bool:
    """Whether ``text``, read as markdown, makes a link or an image of its own (before any Hearth adds)."""
    return any(tok.type in ("link_open", "image") for block in _md.parse(text, {}) for tok in block.children or ())


def escape(text: str) -> str:
    return html.escape(text)


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip shows it: word for word. Qt renders a tooltip as rich text whenever it looks like HTML
    (Qt.mightBeRichText), and would then load an <img src> it names from disk on the GUI thread (a named pipe hangs
    the window); every tooltip showing words someone else wrote (a mail, a file, a model) goes through this."""
    return f"<p>{html.escape(text, quote=False).replace(chr(10), '<br>')}</p>" if text else ""


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A label that shows ``text`` word for word, now and after every setText. A QLabel guesses by default
    (Qt.mightBeRichText): a provider's error body, a file's or a person's name, a model's words holding
    '<img src=…>' would load that file from disk on the GUI thread (a named pipe hangs the window), '<a href>'
    would make a link and 'display:none' hide words next to a button. Every label in Hearth is this one, or
    ``rich_label`` for markup Hearth wrote itself."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    label = QLabel(text, parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def rich_label(markup: str) -> QLabel:
    """A label showing markup Hearth wrote (a bold heading, a paragraph of help); any words from outside put in it
    go through ``escape`` first. Its links are never followed by the label itself."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    label = QLabel(markup)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label
