"""Memory pipeline quality on data we did not write: LoCoMo's long multi-session chats
(../shared/memory-eval/locomo-dev.json by default) go through what Hearth does with chat when no model is
chosen — personal-data redaction, the instruction filter, the keep/skip rules, immutable sources — via the
public API (``run_producer`` on ``open_memory``), then LoCoMo's own scorer asks its questions through
``Memory.search``. The figures say whether the pipeline loses the evidence answers depend on.

Prints one JSON object as its last line: ``items``, ``kept``, ``skipped``, ``quarantined``, ``redacted_items``,
``evidence_kept_rate`` (gold evidence turns the producer kept), and turn-level ``recall_at_5``,
``recall_at_10``, ``mrr`` of search over what was kept (default mode). Retrieval over every turn, the search
engine's own figure, is ``bench/memory_locomo.py``. The in-house set we wrote is a test
(tests/wiki/test_bench_and_layering.py), not a headline.
Usage: python bench/memory_quality.py [--data PATH] [--limit N] [--embedder static|minilm]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import LOCOMO_DEV, load_locomo_scorer  # noqa: E402
from runtime_host.memory_jobs import redactor  # noqa: E402
from wiki_engine import Item, open_memory  # noqa: E402
from wiki_engine.pipeline import rules_decide, run_producer  # noqa: E402

DEFAULT_DATA = LOCOMO_DEV
SCOPE = "private/reader"




def _ts(doc: dict[str, Any], n: int) -> float:
    # LoCoMo's session times are the speakers' own clock, with no zone: read as this machine's, whose days memory
    # names, so "8 May 2023" is indexed as 8 May in any zone the bench runs in
    base = datetime.fromisoformat(doc["ts"]).timestamp() if doc.get("ts") else 1.6e9
    return base + n * 1e-3  # turns of one session share its time; keep their order


class PipelineMemory:
    """One conversation's turns through the producer into a fresh memory; search maps hits back to turn ids."""

    def __init__(self, docs: list[dict[str, Any]], folder: Path, embedder: str, counts: dict[str, int]):
        self.memory = open_memory(folder, embedder=embedder)
        red = redactor(None)
        redacted = 0

        def counting(text: str, scope: str) -> str:
            nonlocal redacted
            out = red(text, scope)
            redacted += out != text
            return out

        self.memory.redactor = counting
        items = [Item(text=d["text"], scope=SCOPE, ts=_ts(d, n), kind="chat", key=d["id"],
                      author=d["speaker"]) for n, d in enumerate(docs)]
        # The rules judge what was said (as in the app, where a chat message carries no "Speaker: " prefix);
        # the stored text keeps the speaker, as LoCoMo gives it and as bench/memory_locomo.py stores it.
        rep = run_producer(self.memory, scope=SCOPE, origin="chat", fetch=lambda mark: items,
                           decide=lambda its: rules_decide([replace(i, text=i.text.split(": ", 1)[-1]) for i in its]))
        self.to_turn = {r[0]: r[1] for r in self.memory.catalog.query("SELECT id, item_key FROM sources")}
        self.kept_turns = set(self.to_turn.values())
        counts["items"] += len(items)
        counts["kept"] += len(rep.kept)
        counts["skipped"] += len(rep.skipped)
        counts["quarantined"] += len(rep.quarantined)
        counts["redacted_items"] += redacted

    def retrieve(self, question: str, k: int) -> list[str]:
        hits = self.memory.search(question, scopes=[SCOPE], k=k, kinds=("source",))
        return [self.to_turn[h.id] for h in hits if h.id in self.to_turn]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--embedder", default="static", choices=["static", "minilm"])
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"No LoCoMo data at {args.data}: pass --data PATH/locomo-dev.json.")
    scorer = load_locomo_scorer(args.data)
    data = json.loads(args.data.read_text("utf-8"))[: args.limit]
    counts = {"items": 0, "kept": 0, "skipped": 0, "quarantined": 0, "redacted_items": 0}
    evidence = kept_evidence = 0
    t0 = time.perf_counter()
    kept_by_conv: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="hearth-memq-") as tmp:
        memories: dict[int, PipelineMemory] = {}

        def retrieve(docs: list[dict[str, Any]], question: str, k: int) -> list[str]:
            nonlocal evidence, kept_evidence
            pm = memories.get(id(docs))
            if pm is None:
                for old in memories.values():
                    old.memory.close()
                memories.clear()
                pm = memories[id(docs)] = PipelineMemory(docs, Path(tmp) / f"c{len(kept_by_conv)}", args.embedder, counts)
                kept_by_conv[str(docs[0]["conversation"])] = pm.kept_turns
            return pm.retrieve(question, k)

        per_q, _stats = scorer.evaluate(data, retrieve, ks=(5, 10))
        for m in memories.values():
            m.memory.close()
    # Evidence the producer kept: every gold turn of every question, against the turns that became sources.
    for sample in data:
        valid = {d["id"] for d in scorer.build_docs(sample)}
        kept = kept_by_conv.get(str(sample.get("sample_id")), set())
        for qa in sample["qa"]:
            gold, _ = scorer.normalise_evidence(qa.get("evidence", []), valid)
            evidence += len(gold)
            kept_evidence += len(set(gold) & kept)
    agg = scorer.aggregate(per_q, ks=(5, 10))["all"]
    out = {
        "data": args.data.name, "conversations": len(data), "questions": agg["n"], **counts,
        "evidence_kept_rate": round(kept_evidence / evidence, 4) if evidence else 0.0,
        "recall_at_5": round(agg["R@5"], 4), "recall_at_10": round(agg["R@10"], 4), "mrr": round(agg["MRR"], 4),
        "embedder": args.embedder, "seconds": round(time.perf_counter() - t0, 1),
        "retrieval_over_every_turn": "bench/memory_locomo.py",
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
