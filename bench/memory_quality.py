"""Memory quality benchmark: runs the memory harness (producer, ingest, snapshot, metrics) over the
dataset shipped in wiki_engine/data and appends the metrics to a JSON-lines scoreboard.

Prints one JSON object as its last line, including recall_at_5_hybrid and recall_at_5_keyword.
Usage: python bench/memory_quality.py [--scoreboard bench/results/memory_scoreboard.jsonl] [--embedder static|minilm]
       [--out bench/results/memory] [--label TEXT] [--also-minilm]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wiki_engine.bench import run_harness  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scoreboard", type=Path, default=ROOT / "bench" / "results" / "memory_scoreboard.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "memory")
    ap.add_argument("--embedder", default="static", choices=["static", "minilm"])
    ap.add_argument("--label", default="")
    ap.add_argument("--also-minilm", action="store_true", help="also run with the MiniLM embedder and report its hybrid recall")
    args = ap.parse_args()
    metrics = run_harness(args.out, scoreboard=args.scoreboard, embedder=args.embedder, label=args.label)
    if args.also_minilm and args.embedder != "minilm":
        other = run_harness(args.out, scoreboard=args.scoreboard, embedder="minilm", label=args.label)
        metrics["recall_at_5_hybrid_minilm"] = other["recall_at_5_hybrid"]
        metrics["mrr_at_5_hybrid_minilm"] = other["mrr_at_5_hybrid"]
    metrics["hybrid_beats_keyword"] = metrics["recall_at_5_hybrid"] > metrics["recall_at_5_keyword"]
    metrics["scoreboard"] = str(args.scoreboard)
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
