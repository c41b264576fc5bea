"""Learns the weights of ranked search's last step (wiki_engine/rerank.py) on LoCoMo's dev conversations.

For each local embedding model, every question's first ``rerank.POOL`` candidates are described by
``rerank.FEATURES`` through the public ``Memory.ranking_features``; a linear model is trained with a pairwise
logistic loss (each evidence turn against the first 40 other candidates). It is measured leave-one-
conversation-out (each conversation ranked by weights learned on the other four), then trained on all five;
``--write`` stores those weights in wiki_engine/data/ranker.json. Per model it prints ``pool_recall`` (the share of
the evidence among the first step's best ``rerank.POOL``: all the learned step can reach), the first step's recall
and the held-out recall. The last line is one JSON object.

    .venv/bin/python bench/train_ranker.py            # measure only
    .venv/bin/python bench/train_ranker.py --write    # measure, then write the weights
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import LOCOMO_DEV, load_locomo_scorer
from memory_locomo import SCOPE, ConversationMemory

from wiki_engine import rerank

NEGATIVES = 40  # candidates each evidence turn is weighed against: the first-step's best other ones
L2 = 1e-2
STEPS = 300
RATE = 0.05


Row = tuple[str, list[str], np.ndarray, np.ndarray, set[str]]  # conversation, candidate ids, features, answers, evidence


def collect(data: list[dict[str, Any]], scorer: Any, kind: str, tmp: Path) -> list[Row]:
    rows: list[Row] = []
    for sample in data:
        docs = scorer.build_docs(sample)
        valid = {d["id"] for d in docs}
        cm = ConversationMemory(docs, tmp / f"{kind}-{sample['sample_id']}", kind)
        try:
            for qa in sample["qa"]:
                gold, _ = scorer.normalise_evidence(qa.get("evidence", []), valid)
                if not gold:
                    continue
                ids, feats, answer = cm.memory.ranking_features(qa["question"], scopes=[SCOPE])
                rows.append((str(sample["sample_id"]), ids, feats, answer, set(gold)))
        finally:
            cm.memory.close()
    return rows


def train(rows: list[Row]) -> dict[str, list[float]]:
    """Pairwise logistic regression on standardised features, full-batch Adam from zero (deterministic)."""
    allx = np.vstack([f for _, _, f, _, _ in rows if len(f)])
    mean, scale = allx.mean(0), allx.std(0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    diffs = []
    for _, ids, feats, _, gold in rows:
        z = (feats - mean) / scale
        pos = [n for n, i in enumerate(ids) if i in gold]
        neg = [n for n, i in enumerate(ids) if i not in gold][:NEGATIVES]
        for p in pos:
            if neg:
                diffs.append(z[p] - z[neg])
    d = np.vstack(diffs)
    w = np.zeros(d.shape[1])
    m1, m2 = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, STEPS + 1):
        p = 1.0 / (1.0 + np.exp(np.clip(d @ w, -30, 30)))
        g = -(d * p[:, None]).mean(0) + L2 * w
        m1 = 0.9 * m1 + 0.1 * g
        m2 = 0.999 * m2 + 0.001 * g * g
        w -= RATE * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-8)
    return {"mean": mean.round(6).tolist(), "scale": scale.round(6).tolist(), "weights": w.round(6).tolist()}


def recall(rows: list[Row], model: dict[str, list[float]] | None) -> tuple[float, float]:
    r5, r10 = [], []
    for _, ids, feats, answer, gold in rows:
        if model is None or not len(feats):
            order = list(range(len(ids)))
        else:
            s = ((feats - np.asarray(model["mean"])) / np.asarray(model["scale"])) @ np.asarray(model["weights"])
            order = rerank.answers_first(list(np.argsort(-s, kind="stable")), answer)
        ranked = [ids[n] for n in order]
        r5.append(len(gold & set(ranked[:5])) / len(gold))
        r10.append(len(gold & set(ranked[:10])) / len(gold))
    return float(np.mean(r5)), float(np.mean(r10))


def pool_recall(rows: list[Row]) -> float:
    """Share of the evidence among the first step's best ``rerank.POOL`` (all the learned step can reach)."""
    return float(np.mean([len(gold & set(ids)) / len(gold) for _, ids, _, _, gold in rows]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=LOCOMO_DEV)
    ap.add_argument("--embedders", default="static,minilm")
    ap.add_argument("--write", action="store_true", help="store the weights learned on all conversations")
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"No LoCoMo data at {args.data}: pass --data PATH/locomo-dev.json.")
    scorer = load_locomo_scorer(args.data)
    data = json.loads(args.data.read_text("utf-8"))
    out: dict[str, Any] = {"data": args.data.name, "pool": rerank.POOL, "features": len(rerank.FEATURES)}
    models: dict[str, dict[str, list[float]]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hearth-ranker-") as tmp:
        for kind in args.embedders.split(","):
            rows = collect(data, scorer, kind, Path(tmp))
            convs = sorted({c for c, _, _, _, _ in rows})
            held: list[Row] = []
            scores5, scores10 = [], []
            for c in convs:
                model = train([r for r in rows if r[0] != c])
                test = [r for r in rows if r[0] == c]
                a, b = recall(test, model)
                scores5 += [a] * len(test)
                scores10 += [b] * len(test)
                held += test
            first5, first10 = recall(rows, None)
            out[kind] = {"pool_recall": round(pool_recall(rows), 4),
                         "first_step_recall_at_5": round(first5, 4), "first_step_recall_at_10": round(first10, 4),
                         "held_out_recall_at_5": round(float(np.mean(scores5)), 4),
                         "held_out_recall_at_10": round(float(np.mean(scores10)), 4), "questions": len(rows)}
            print(kind, json.dumps(out[kind]), file=sys.stderr, flush=True)
            models[kind] = train(rows)
    out["train_s"] = round(time.perf_counter() - t0, 1)
    if args.write:
        rerank.RANKER_FILE.write_text(json.dumps({
            "about": "Weights of ranked search's last step, learned by bench/train_ranker.py on LoCoMo's dev "
                     "conversations (pairwise logistic loss); one model per local embedding kind.",
            "features": list(rerank.FEATURES), "pool": rerank.POOL, "models": models,
        }, indent=1) + "\n", encoding="utf-8")
        out["written"] = str(rerank.RANKER_FILE.relative_to(rerank.RANKER_FILE.parents[2]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
