"""Hearth's memory: immutable sources, wiki pages with citations, search. Qt-free, imports nothing of ours."""
