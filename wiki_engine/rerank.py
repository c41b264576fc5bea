"""The last step of ranked search: a learned linear model that re-orders the best ``POOL`` candidates.

The first step (``Memory._ranked``) scores every document with hand-set weights. This step describes each of
its best ``POOL`` candidates by ``FEATURES`` (that first score and its parts, how much of the question's
rarer words the source and the sources said around it hold, how close in meaning those neighbours are, its
length) and orders them by a weighted sum of the standardised features. The weights are learned per local
embedding model (``data/ranker.json``, written by ``bench/train_ranker.py`` from LoCoMo's dev conversations,
pairwise logistic loss; nothing in them names a person, an id or a word). A model without weights (a
provider's embeddings) keeps the first step's order.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .index import ScopeIndex, own_words, stems

DATA = Path(__file__).resolve().parent / "data"
RANKER_FILE = DATA / "ranker.json"
# How many of the first step's best candidates the model re-orders.
POOL = 30

FEATURES = (
    "score",  # the first step's score, as a share of the best
    "rank",  # 1 / (1 + the first step's rank)
    "keywords",  # bm25, as a share of the best
    "meaning",  # cosine, scaled between the best and the 100th best
    "cosine",  # cosine as it is
    "before",  # first-step keyword+meaning score of the source said just before
    "after",  # ... and of the one said just after
    "answers",  # "before" when the source before asked a question
    "asks",  # the source ends by asking
    "conversation",  # the best score in the source's conversation
    "speaker",  # said by a speaker the question names
    "when",  # says when, and the question asks when
    "coverage",  # share of the question's words (stems) the source holds
    "coverage_idf",  # ... weighted by how rare each word is
    "coverage_before",  # ... held by the source said just before
    "coverage_after",  # ... held by the source said just after
    "coverage_window",  # ... held by the three together
    "length",  # log(1 + words in the source)
    "cosine_before",  # cosine of the source said just before
    "cosine_after",  # cosine of the source said just after
    "asks_cosine_after",  # cosine of the source said just after, when this one asks
)


@dataclass(frozen=True)
class Ranker:
    """Standardise the features (``mean``, ``scale``), then a weighted sum."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray

    def score(self, feats: np.ndarray) -> np.ndarray:
        return ((feats - self.mean) / self.scale) @ self.weights


@lru_cache(maxsize=1)
def _models() -> dict[str, Ranker]:
    """The weights in ``RANKER_FILE`` that fit ``FEATURES``; a file that is missing, unreadable or of another
    shape gives none (the first step's order stands), and a model with a missing or non-finite value is left
    out."""
    try:
        raw = json.loads(RANKER_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or tuple(raw.get("features", ())) != FEATURES:
        return {}
    models = raw.get("models")
    out = {}
    for kind, m in (models.items() if isinstance(models, dict) else ()):
        try:
            mean, scale, w = (np.asarray(m[key], dtype=np.float64) for key in ("mean", "scale", "weights"))
        except (KeyError, TypeError, ValueError):
            continue
        if (mean.shape == scale.shape == w.shape == (len(FEATURES),) and np.all(scale > 0)
                and all(np.isfinite(a).all() for a in (mean, scale, w))):
            out[str(kind)] = Ranker(mean, scale, w)
    return out


def ranker_for(kind: str | None) -> Ranker | None:
    """The learned weights for a local embedding kind ("static", "minilm"), or None."""
    return _models().get(kind) if kind else None


@dataclass
class PartScores:
    """One scope's first-step arrays (one value per row of ``idx``)."""

    idx: ScopeIndex
    score: np.ndarray
    keywords: np.ndarray
    meaning: np.ndarray
    cosine: np.ndarray
    before: np.ndarray
    after: np.ndarray
    asked: np.ndarray
    conversation: np.ndarray
    by_named: np.ndarray
    when: np.ndarray
    prior: np.ndarray  # importance and recency: added to the learned score too, where they only break near-ties


def answers(cands: list[tuple[PartScores, int]]) -> np.ndarray:
    """For each candidate that asks something, the index of the candidate said just after it (its answer),
    else -1."""
    at = {(id(p), r): n for n, (p, r) in enumerate(cands)}
    out = np.full(len(cands), -1, dtype=np.int64)
    for n, (p, r) in enumerate(cands):
        if p.idx.asks[r]:
            out[n] = at.get((id(p), int(p.idx.adjacent()[1][r])), -1)
    return out


def answers_first(order: list[int], answer: np.ndarray) -> list[int]:
    """``order`` (candidate indexes, best first) with each answer moved just above the turn that asked, where
    it ranked below it: the facts of a chat are in its replies."""
    order = list(order)
    for _ in range(len(order)):
        pos = {c: j for j, c in enumerate(order)}
        late = next(((j, int(answer[c])) for j, c in enumerate(order)
                     if answer[c] >= 0 and pos.get(int(answer[c]), -1) > j), None)
        if late is None:
            break
        order.remove(late[1])
        order.insert(late[0], late[1])
    return order


def question_stems(terms: list[str]) -> list[str]:
    return list(dict.fromkeys(stems(" ".join(terms))))


def idf_weights(parts: list[PartScores], qstems: list[str]) -> dict[str, float]:
    """bm25's idf of each question stem over all searched scopes."""
    total = 0
    df = dict.fromkeys(qstems, 0)
    for p in parts:
        n, got = p.idx.doc_freqs(qstems)
        total += n
        for t, c in got.items():
            df[t] += c
    return {t: math.log(1.0 + (total - df[t] + 0.5) / (df[t] + 0.5)) for t in qstems}


def features(cands: list[tuple[PartScores, int]], qstems: list[str], idf: dict[str, float]) -> np.ndarray:
    """The ``FEATURES`` of each candidate (part, row), given in the first step's order."""
    out = np.zeros((len(cands), len(FEATURES)), dtype=np.float64)
    if not cands:
        return out
    best = max(p.score[r] for p, r in cands) or 1.0
    total_idf = sum(idf.values()) or 1.0
    words: dict[tuple[int, int], set[str]] = {}
    lengths: dict[tuple[int, int], int] = {}
    by_part: dict[int, tuple[PartScores, set[int]]] = {}
    for p, r in cands:
        prev, nxt = p.idx.adjacent()
        rows = by_part.setdefault(id(p), (p, set()))[1]
        rows.update(x for x in (r, int(prev[r]), int(nxt[r])) if x >= 0)
    for key, (p, rows) in by_part.items():
        for r, body in p.idx.bodies(sorted(rows)).items():
            toks = stems(own_words(body))
            words[(key, r)] = set(toks)
            lengths[(key, r)] = len(toks)

    def held(key: int, r: int) -> set[str]:
        return words.get((key, r), set()) if r >= 0 else set()

    def share(found: set[str]) -> float:
        return sum(idf[t] for t in qstems if t in found) / total_idf

    nq = max(1, len(qstems))
    for n, (p, r) in enumerate(cands):
        key = id(p)
        prev, nxt = p.idx.adjacent()
        b, a = int(prev[r]), int(nxt[r])
        own, wb, wa = held(key, r), held(key, b), held(key, a)
        cos_after = float(p.cosine[a]) if a >= 0 else 0.0
        out[n] = (
            p.score[r] / best, 1.0 / (1 + n), p.keywords[r], p.meaning[r], p.cosine[r], p.before[r], p.after[r],
            p.before[r] if p.asked[r] else 0.0, float(p.idx.asks[r]), p.conversation[r], float(p.by_named[r]),
            float(p.when[r]), sum(1 for t in qstems if t in own) / nq, share(own), share(wb), share(wa),
            share(own | wb | wa), math.log1p(lengths.get((key, r), 0)),
            float(p.cosine[b]) if b >= 0 else 0.0, cos_after, cos_after if p.idx.asks[r] else 0.0,
        )
    return out
