"""The last step of ranked search: a learned linear model that re-orders the best ``POOL`` candidates.

The first step (``Memory._ranked``) scores every document with hand-set weights. This step describes each of
its best ``POOL`` candidates by ``FEATURES`` (that first score and its parts, how much of the question's
rarer words the source and the sources said around it hold, how close in meaning those neighbours are, its
length, how well its words match the question's by their static word vectors (MaxSim), whether it holds the kind
of answer the question asks for: a name, a number, a place; how well the sources said up to two before or after it
match; whether it opens its conversation, says when, speaks of its speaker) and orders them by a weighted sum of
the standardised features. The weights are learned per local embedding model (``data/ranker.json``, written by
``bench/train_ranker.py`` from LoCoMo's dev conversations, pairwise logistic loss; nothing in them names a person,
an id or a word). A model without weights (a provider's embeddings) keeps the first step's order.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .index import _STOP, ScopeIndex, own_words, stems, words

if TYPE_CHECKING:
    from .embed import StaticEmbedder

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
    "soft",  # soft match of the question's words to the source's (see soft_matches), idf-weighted mean
    "soft_window",  # ... to the words of the source and the sources said just before and after it
    "answer_type",  # the question asks who / how many (much, long...) / where and the source holds such an answer
    "nearby",  # the best first-step score among the sources said up to two before or after it, as a share of the best
    "coverage_nearby",  # share of the question's words (idf-weighted) held by those five sources together
    "opens",  # the source opens its conversation (none said just before it)
    "says_when",  # the source says when something happened, whatever the question asks
    "first_person",  # the source speaks of its speaker (I, my, me...)
)
_FIRST_PERSON = re.compile(r"\b(?:i|my|me|mine|myself)\b", re.I)  # a source that speaks of its speaker (I'm, I've...)

# What a question asks for, and what a source that answers it holds (plain English patterns, no names).
_ASKS_WHO = re.compile(r"\b(who|whom|whose)\b", re.I)
_ASKS_NUMBER = re.compile(r"\bhow (many|much|long|old|often|far)\b|\bwhat (number|amount|age)\b", re.I)
_ASKS_WHERE = re.compile(r"\bwhere\b", re.I)
_NAME_INSIDE = re.compile(r"[a-z,;]\s+(?!I\b)[A-Z][a-z]+")  # a capitalised word inside a sentence
_NUMBER = re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|"
                     r"thousand|dozen|couple|several|once|twice|half)\b", re.I)
_PLACE = re.compile(r"\b(in|at|to|from|near|visit|visited|visiting)\s+(the\s+)?[A-Z][a-z]+")

# Soft matching's caches, each emptied when full: a word's unit vector (half precision, 512 bytes) and its stem,
# and a source text's words (at most about 30 MB in all).
_WORD_ROW: dict[str, int] = {}
_WORD_MAT = np.zeros((0, 0), dtype=np.float16)  # made when the first word is (_WORD_CACHE_MAX rows)
_WORD_STEM: dict[str, str] = {}
_WORD_CACHE_MAX = 50_000
_BODY_CACHE_MAX = 20_000


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


def word_stem(w: str) -> str:
    got = _WORD_STEM.get(w)
    if got is None:
        if len(_WORD_STEM) >= _WORD_CACHE_MAX:
            _WORD_STEM.clear()
        st = stems(w)
        got = _WORD_STEM[w] = st[0] if st else w
    return got


def word_vectors(ws: list[str]) -> np.ndarray | None:
    """Unit vectors of lower-case words: the mean of their WordLlama token vectors (the static embedder's,
    whatever model embeds the scope), cached per word as a row of one half-precision matrix; None if WordLlama
    cannot be loaded."""
    global _WORD_MAT
    miss = [w for w in dict.fromkeys(ws) if w not in _WORD_ROW]
    if miss:
        from .embed import ModelFileError, load_embedder

        try:
            e = load_embedder("static")
        except (ModelFileError, OSError, ImportError, ValueError):
            return None
        every = list(dict.fromkeys(ws))
        if len(every) > _WORD_CACHE_MAX:  # more words than the cache holds (a pasted log): made for this call alone
            row = {w: n for n, w in enumerate(every)}
            return _unit_sums(e, every)[[row[w] for w in ws]].astype(np.float32)
        if len(_WORD_ROW) + len(miss) > _WORD_CACHE_MAX:
            _WORD_ROW.clear()
            miss = every  # the words cached before are gone too
        if _WORD_MAT.shape[1] != e.matrix.shape[1]:
            _WORD_MAT = np.zeros((_WORD_CACHE_MAX, e.matrix.shape[1]), dtype=np.float16)
        first = len(_WORD_ROW)
        _WORD_MAT[first:first + len(miss)] = _unit_sums(e, miss)
        for n, w in enumerate(miss):
            _WORD_ROW[w] = first + n
    return _WORD_MAT[[_WORD_ROW[w] for w in ws]].astype(np.float32) if ws else None


def _unit_sums(e: StaticEmbedder, ws: list[str]) -> np.ndarray:
    """Each word's token vectors summed in one pass (the mean's direction is the sum's), made unit length."""
    vocab = e.matrix.shape[0]
    ids = [[i for i in enc.ids if i < vocab] for enc in e.tokenizer.encode_batch(ws, add_special_tokens=False)]
    starts = np.cumsum([0] + [max(1, len(x)) for x in ids[:-1]])
    sums = np.add.reduceat(e.matrix[np.concatenate([x or [0] for x in ids])], starts, axis=0)
    sums[[n for n, x in enumerate(ids) if not x]] = 0.0  # a word of no known token has no direction
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0)


_BODY_WORDS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
_BODY_STEMS: dict[str, tuple[frozenset[str], int]] = {}


def body_stems(body: str) -> tuple[frozenset[str], int]:
    """The stems of a source's own words and how many words it has, cached per text."""
    got = _BODY_STEMS.get(body)
    if got is None:
        toks = stems(own_words(body))
        if len(_BODY_STEMS) >= _BODY_CACHE_MAX:
            _BODY_STEMS.clear()
        got = _BODY_STEMS[body] = (frozenset(toks), len(toks))
    return got


def body_words(body: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The stems of a source's own words and those words (stop words left out), cached per text."""
    got = _BODY_WORDS.get(body)
    if got is None:
        ws = tuple(dict.fromkeys(w for w in words(own_words(body)) if w not in _STOP))
        if len(_BODY_WORDS) >= _BODY_CACHE_MAX:
            _BODY_WORDS.clear()
        got = _BODY_WORDS[body] = (frozenset(word_stem(w) for w in ws), ws)
    return got


def soft_matches(qvecs: np.ndarray, qst: list[str], bodies: dict[tuple[int, int], str]) -> dict[tuple[int, int], np.ndarray]:
    """For each body, each question word's (``qvecs`` its unit vector, ``qst`` its stem) best cosine to a word of
    the body (stop words left out; 1.0 where the same stem is there), in [0, 1]: ColBERT's MaxSim on static word
    vectors, one product for the words of all the bodies. Empty if the vectors cannot be had."""
    held = {at: body_words(body) for at, body in bodies.items()}
    vocab = list(dict.fromkeys(w for _, ws in held.values() for w in ws))
    vecs = word_vectors(vocab)
    if vecs is None:
        return {}  # WordLlama cannot be loaded: no soft match anywhere
    sims = np.clip(qvecs @ vecs.T, 0.0, 1.0)
    col = {w: i for i, w in enumerate(vocab)}
    out = {}
    for at, (st_held, ws) in held.items():
        best = sims[:, [col[w] for w in ws]].max(axis=1) if ws else np.zeros(len(qst))
        for i, st in enumerate(qst):
            if st in st_held:
                best[i] = 1.0
        out[at] = best
    return out


def answer_kinds(query: str) -> list[re.Pattern[str]]:
    """What would answer the question: a name if it asks who, a number if how many / much / long..., a place if
    where (the patterns a source holding such an answer matches)."""
    return [held for asks, held in ((_ASKS_WHO, _NAME_INSIDE), (_ASKS_NUMBER, _NUMBER), (_ASKS_WHERE, _PLACE))
            if asks.search(query)]


def answer_type(kinds: list[re.Pattern[str]], text: str) -> float:
    """1 if ``text`` holds one of the kinds of answer the question asks for (``answer_kinds``)."""
    return float(any(k.search(text) for k in kinds))


def features(cands: list[tuple[PartScores, int]], qstems: list[str], idf: dict[str, float],
             terms: list[str] | None = None, query: str = "") -> np.ndarray:
    """The ``FEATURES`` of each candidate (part, row), given in the first step's order; ``terms`` (the
    question's words) and ``query`` (as asked) serve soft matching and the answer type."""
    out = np.zeros((len(cands), len(FEATURES)), dtype=np.float64)
    if not cands:
        return out
    best = max(p.score[r] for p, r in cands) or 1.0
    total_idf = sum(idf.values()) or 1.0
    held_words: dict[tuple[int, int], frozenset[str]] = {}
    lengths: dict[tuple[int, int], int] = {}
    by_part: dict[int, tuple[PartScores, set[int]]] = {}
    near: list[list[int]] = []  # per candidate: the rows of the sources said up to two before and after it
    close: set[tuple[int, int]] = set()  # the candidates and the sources said just before and after them
    for p, r in cands:
        prev, nxt = p.idx.adjacent()
        b, a = int(prev[r]), int(nxt[r])
        near.append([x for x in (b, int(prev[b]) if b >= 0 else -1, a, int(nxt[a]) if a >= 0 else -1) if x >= 0])
        close.update((id(p), x) for x in (r, b, a) if x >= 0)
        rows = by_part.setdefault(id(p), (p, set()))[1]
        rows.add(r)
        rows.update(near[-1])
    # One question word per stem the idf weighs, for soft matching.
    qword: dict[str, str] = {}
    for t in terms or ():
        st = word_stem(t)
        if st in idf and st not in qword:
            qword[st] = t
    qst = [st for st in qstems if st in qword]
    qw = np.array([idf[st] for st in qst], dtype=np.float64)
    qvecs = word_vectors([qword[st] for st in qst]) if qst else None
    kinds: dict[tuple[int, int], float] = {}
    firsts: dict[tuple[int, int], float] = {}  # the source speaks of its speaker (read for the candidates alone)
    chosen = {(id(p), r) for p, r in cands}
    wanted = answer_kinds(query)
    texts: dict[tuple[int, int], str] = {}
    for key, (p, rows) in by_part.items():
        for r, body in p.idx.bodies(sorted(rows)).items():
            held_words[(key, r)], lengths[(key, r)] = body_stems(body)
            if (key, r) in close:  # soft matching and the answer type are only read for these
                own_text = own_words(body)
                kinds[(key, r)] = answer_type(wanted, own_text) if wanted else 0.0
                if (key, r) in chosen:
                    firsts[(key, r)] = float(_FIRST_PERSON.search(own_text) is not None)
                texts[(key, r)] = body
    soft = soft_matches(qvecs, qst, texts) if qvecs is not None else {}
    no_match = np.zeros(len(qst))

    def soft_at(key: int, r: int) -> np.ndarray:
        return soft.get((key, r), no_match) if r >= 0 else no_match

    def held(key: int, r: int) -> frozenset[str]:
        return held_words.get((key, r), frozenset()) if r >= 0 else frozenset()

    def share(found: frozenset[str]) -> float:
        return sum(idf[t] for t in qstems if t in found) / total_idf

    nq = max(1, len(qstems))
    for n, (p, r) in enumerate(cands):
        key = id(p)
        prev, nxt = p.idx.adjacent()
        b, a = int(prev[r]), int(nxt[r])
        own, wb, wa = held(key, r), held(key, b), held(key, a)
        cos_after = float(p.cosine[a]) if a >= 0 else 0.0
        so = soft_at(key, r)
        sw = np.maximum(so, np.maximum(soft_at(key, b), soft_at(key, a)))
        out[n] = (
            p.score[r] / best, 1.0 / (1 + n), p.keywords[r], p.meaning[r], p.cosine[r], p.before[r], p.after[r],
            p.before[r] if p.asked[r] else 0.0, float(p.idx.asks[r]), p.conversation[r], float(p.by_named[r]),
            float(p.when[r]), sum(1 for t in qstems if t in own) / nq, share(own), share(wb), share(wa),
            share(own | wb | wa), math.log1p(lengths.get((key, r), 0)),
            float(p.cosine[b]) if b >= 0 else 0.0, cos_after, cos_after if p.idx.asks[r] else 0.0,
            float(so @ qw) / total_idf, float(sw @ qw) / total_idf, kinds.get((key, r), 0.0),
            max((p.score[x] for x in near[n]), default=0.0) / best,
            share(own.union(*(held(key, x) for x in near[n]))),
            float(p.idx.is_source[r] and b < 0), float(p.idx.says_when[r]), firsts.get((key, r), 0.0),
        )
    return out
