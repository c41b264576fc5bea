"""Hearth's memory: immutable sources, wiki pages with citations, search. Qt-free, imports nothing of ours.

Start with ``open_memory(path)``; the producer / ingest / nightly pieces are in ``wiki_engine.pipeline``.
"""

from .guard import Verdict, check_instructions
from .memory import (
    CitationError,
    Hit,
    InstructionRefused,
    Memory,
    PageChanged,
    PageRefused,
    PageWrite,
    Proposal,
    SourceConflict,
    SourceRecord,
    UnknownSource,
    open_memory,
)
from .pages import Page, PageFormatError, PageWriteError, parse_page, slugify
from .render import Item, render_item
from .scopes import Scope, ScopeError, Viewer
from .sources import SourceUnreadable, Tampered

__all__ = [
    "CitationError", "Hit", "InstructionRefused", "Item", "Memory", "Page", "PageChanged", "PageFormatError", "PageRefused", "PageWrite",
    "PageWriteError",
    "Proposal", "Scope", "ScopeError", "SourceConflict", "SourceRecord", "SourceUnreadable", "Tampered", "UnknownSource", "Verdict", "Viewer",
    "check_instructions", "open_memory", "parse_page", "render_item", "slugify",
]
