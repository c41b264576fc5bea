"""Markdown to the HTML subset QTextBrowser renders. Raw HTML in messages is shown as text, never rendered."""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(["table", "strikethrough"])

STYLE = """
<style>
pre { background-color: rgba(127,127,127,0.12); padding: 6px; font-family: monospace; }
code { font-family: monospace; background-color: rgba(127,127,127,0.12); }
table { border-collapse: collapse; }
th, td { border: 1px solid rgba(127,127,127,0.5); padding: 3px 6px; }
.role { font-weight: bold; color: palette(mid); }
.error { color: #c0392b; }
</style>
"""


def render(text: str) -> str:
    return _md.render(text)


def escape(text: str) -> str:
    return html.escape(text)
