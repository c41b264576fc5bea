"""Word error rate against a reference text, after normalising case and punctuation."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_KEEP = re.compile(r"[^\w\s']")


def normalize_words(text: str) -> list[str]:
    """Lower-case words with punctuation removed ("Hello, world!" → ["hello", "world"])."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    text = _KEEP.sub(" ", text.replace("-", " "))
    return [w.strip("'") for w in text.split() if w.strip("'")]


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions, deletions)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of one hypothesis; 0.0 for two empty texts, 1.0 for any words against an empty reference."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)


def corpus_word_error_rate(pairs: Iterable[tuple[str, str]]) -> float:
    """Total word errors over total reference words, across (reference, hypothesis) pairs."""
    errors = words = 0
    for reference, hypothesis in pairs:
        ref, hyp = normalize_words(reference), normalize_words(hypothesis)
        errors += edit_distance(ref, hyp)
        words += len(ref)
    return errors / words if words else 0.0
