"""Markdown to the HTML subset QTextBrowser renders, with syntax-highlighted code blocks. Raw HTML in messages
is shown as text, never rendered."""

from __future__ import annotations

import functools
import html
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(["table", "strikethrough"])
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


_md.add_render_rule("fence", _code_rule)
_md.add_render_rule("code_block", _code_rule)
_md.add_render_rule("image", _image_rule)


def render_with_code(text: str, copy_href: str | None = None) -> tuple[str, list[str]]:
    """Renders `text`; returns the HTML and the code blocks' text in order. With `copy_href`, each code block
    gets a Copy link to `{copy_href}{n}`."""
    env: dict[str, Any] = {"codes": [], "copy_href": copy_href}
    return _md.render(text, env), env["codes"]


def render(text: str) -> str:
    return render_with_code(text)[0]


def escape(text: str) -> str:
    return html.escape(text)


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip shows it: word for word. Qt renders a tooltip as rich text whenever it looks like HTML
    (Qt.mightBeRichText), and would then load an <img src> it names from disk on the GUI thread (a named pipe hangs
    the window); every tooltip showing words someone else wrote (a mail, a file, a model) goes through this."""
    return f"<p>{html.escape(text, quote=False).replace(chr(10), '<br>')}</p>" if text else ""
