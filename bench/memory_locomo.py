"""Memory retrieval on data we did not write: LoCoMo's long multi-session chats (../shared/memory-eval/
locomo-dev.json by default), one turn per source through the public API — ``open_memory``, ``add_source(text,
scope=..., source_id=..., ts=...)`` and ``search(q, scopes=..., k=...)`` in the default mode — scored by
LoCoMo's own scorer (locomo_retrieval.py, shipped next to the data): did the gold evidence turns come back?

Then the same search is timed at scale: the memory of the last conversation grows to ``--scale`` sources
(100,000 by default) with filler made from the OTHER dev conversations' turns (sentences reshuffled across
turns, speakers and dates), so the timed questions search real-looking chat without being helped by it.

Prints one JSON object as its last line: ``recall_at_5``, ``recall_at_10``, ``mrr`` (all questions with
evidence, as the scorer's ``all`` row), ``ranked_ms_p95`` (search at ``--scale`` sources), and extras.
Usage: python bench/memory_locomo.py [--data PATH] [--limit N] [--embedder static|minilm] [--scale 100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import LOCOMO_DEV, load_locomo_scorer, pct  # noqa: E402
from wiki_engine import Item, open_memory  # noqa: E402

DEFAULT_DATA = LOCOMO_DEV
SCOPE = "private/reader"




def turn_ts(doc: dict[str, Any], n: int) -> float:
    """The session's time, plus a second per turn so turns keep their order (a chat's pace)."""
    # LoCoMo's session times are the speakers' own clock, with no zone: read as this machine's, whose days memory
    # names, so "8 May 2023" is indexed as 8 May in any zone the bench runs in
    base = datetime.fromisoformat(doc["ts"]).timestamp() if doc.get("ts") else 1.6e9
    return base + n


class ConversationMemory:
    def __init__(self, docs: list[dict[str, Any]], folder: Path, embedder: str):
        self.memory = open_memory(folder, embedder=embedder)
        session_start: dict[int, int] = {}
        for n, d in enumerate(docs):
            session_start.setdefault(d["session"], n)
            self.memory.add_source(d["text"], scope=SCOPE, source_id=d["id"], ts=turn_ts(d, n - session_start[d["session"]]))

    def retrieve(self, question: str, k: int) -> list[str]:
        return [h.id for h in self.memory.search(question, scopes=[SCOPE], k=k)]


def filler_texts(data: list[dict[str, Any]], scorer: Any, exclude: str, n: int, seed: int = 7) -> list[tuple[str, float]]:
    """``n`` (text, ts) chat turns made from conversations other than ``exclude``: sentences of their turns
    shuffled into new turns, with their speakers, at random times within two years before the data."""
    rng = random.Random(seed)
    sentences: list[str] = []
    speakers: list[str] = []
    for sample in data:
        if sample.get("sample_id") == exclude:
            continue
        for d in scorer.build_docs(sample):
            speakers.append(d["speaker"])
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", d["text"].split(": ", 1)[-1]) if len(s) > 3]
    out = []
    t0 = datetime(2021, 1, 1, tzinfo=UTC).timestamp()
    ts = t0
    for _ in range(n):
        ts += rng.choice((1.0, 1.0, 1.0, 30.0, 86400.0 * rng.random()))  # chats with pauses between them
        out.append((f"{rng.choice(speakers)}: {' '.join(rng.sample(sentences, rng.randint(1, 3)))}", ts))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--embedder", default="static", choices=["static", "minilm"])
    ap.add_argument("--scale", type=int, default=100_000, help="sources for the timing (0: no timing)")
    ap.add_argument("--queries", type=int, default=300, help="questions timed at scale")
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"No LoCoMo data at {args.data}: pass --data PATH/locomo-dev.json.")
    scorer = load_locomo_scorer(args.data)
    full = json.loads(args.data.read_text("utf-8"))
    data = full[: args.limit]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hearth-locomo-") as tmp:
        memories: dict[int, ConversationMemory] = {}
        last: list[Any] = []

        def retrieve(docs: list[dict[str, Any]], question: str, k: int) -> list[str]:
            cm = memories.get(id(docs))
            if cm is None:
                for old in memories.values():
                    old.memory.close()
                memories.clear()
                cm = memories[id(docs)] = ConversationMemory(docs, Path(tmp) / f"c{len(last)}", args.embedder)
                last.append((docs[0]["conversation"], Path(tmp) / f"c{len(last)}"))
            return cm.retrieve(question, k)

        per_q, _stats = scorer.evaluate(data, retrieve, ks=(5, 10))
        for m in memories.values():
            m.memory.close()
        eval_s = time.perf_counter() - t0
        agg = scorer.aggregate(per_q, ks=(5, 10))
        by_conv: dict[str, list[dict[str, Any]]] = {}
        for row in per_q:
            by_conv.setdefault(str(row["conv"]), []).append(row)
        per_conv = {c: {"R@5": round(sum(r["R@5"] for r in rows) / len(rows), 3),
                        "R@10": round(sum(r["R@10"] for r in rows) / len(rows), 3)} for c, rows in by_conv.items()}
        print("per conversation:", json.dumps(per_conv), file=sys.stderr)
        print("per category:", json.dumps({c: {"n": v["n"], "R@5": round(v["R@5"], 3), "R@10": round(v["R@10"], 3)}
                                           for c, v in agg.items()}), file=sys.stderr)

        ranked_ms: list[float] = []
        build_s = 0.0
        sources = 0
        if args.scale and last:
            conv_id, folder = last[-1]
            sample = next(s for s in data if s.get("sample_id") == conv_id)
            mem = open_memory(folder, embedder=args.embedder)
            have = mem.count_sources(SCOPE)
            fill = filler_texts(full, scorer, conv_id, max(0, args.scale - have))
            tb = time.perf_counter()
            for start in range(0, len(fill), 5000):
                chunk = [Item(text=t, scope=SCOPE, ts=ts, kind="note", key=f"filler-{start + n}")
                         for n, (t, ts) in enumerate(fill[start : start + 5000])]
                mem.add_items(chunk, to_inbox=False)
            build_s = time.perf_counter() - tb
            sources = mem.count_sources(SCOPE)
            questions = [qa["question"] for qa in sample["qa"]][: args.queries]
            # The filler texts are this script's inputs, not the app's: keep the collector from walking them
            # (and the scorer's data) during the timed questions.
            del fill
            gc.collect()
            gc.freeze()
            for q in questions[:10]:  # warm up: vectors loaded, caches filled
                mem.search(q, scopes=[SCOPE], k=10)
            for q in questions:
                t = time.perf_counter()
                mem.search(q, scopes=[SCOPE], k=10)
                ranked_ms.append((time.perf_counter() - t) * 1000)
            mem.close()
    allrow = agg["all"]
    out = {
        "data": args.data.name, "conversations": len(data), "questions": allrow["n"],
        "recall_at_5": round(allrow["R@5"], 4), "recall_at_10": round(allrow["R@10"], 4), "mrr": round(allrow["MRR"], 4),
        "ranked_ms_p50": pct(ranked_ms, 0.5) if ranked_ms else None,
        "ranked_ms_p95": pct(ranked_ms, 0.95) if ranked_ms else None,
        "scale_sources": sources, "scale_build_s": round(build_s, 1),
        "embedder": args.embedder, "mode": "hybrid (default)", "eval_s": round(eval_s, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
