"""Scoring detectors against a labelled set: span matching by overlap, precision and recall per detector.

Used by tests/safety and bench/safety.py. A predicted span matches an expected span of the same detector
when their intersection over union is at least `min_iou`; each expected span is matched at most once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_host.safety.detectors import DETECTOR_NAMES, Finding, detect


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def load_labelled(path: str | Path) -> list[dict[str, Any]]:
    """Reads a labelled JSONL file; raises ValueError naming the line when a span does not match its text."""
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            for s in row.get("spans", []):
                if row["text"][s["start"]:s["end"]] != s["text"]:
                    raise ValueError(
                        f"{path}:{lineno} ({row.get('id')}): span {s['start']}..{s['end']} is "
                        f"{row['text'][s['start']:s['end']]!r}, label says {s['text']!r}; fix the offsets."
                    )
            rows.append(row)
    return rows


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def score(
    rows: Iterable[dict[str, Any]],
    *,
    detectors: Sequence[str] = DETECTOR_NAMES,
    min_iou: float = 0.5,
    predictions: dict[str, list[Finding]] | None = None,
) -> dict[str, Counts]:
    """Precision/recall counts per detector over all rows (every detector is scored on every row)."""
    counts = {d: Counts() for d in detectors}
    for row in rows:
        found = predictions[row["id"]] if predictions is not None else detect(row["text"])
        for det in detectors:
            gold = [(s["start"], s["end"]) for s in row["spans"] if s["detector"] == det]
            pred = [f for f in found if f.detector == det]
            used: set[int] = set()
            for f in pred:
                best, best_iou = -1, 0.0
                for gi, g in enumerate(gold):
                    if gi in used:
                        continue
                    v = _iou((f.start, f.end), g)
                    if v > best_iou:
                        best, best_iou = gi, v
                if best >= 0 and best_iou >= min_iou:
                    used.add(best)
                    counts[det].tp += 1
                else:
                    counts[det].fp += 1
                    counts[det].errors.append({"id": row["id"], "kind": "fp", "found": f.text, "as": f.kind})
            for gi, g in enumerate(gold):
                if gi not in used:
                    counts[det].fn += 1
                    counts[det].errors.append({"id": row["id"], "kind": "fn", "missed": row["text"][g[0]:g[1]]})
    return counts
