"""Safety benchmark: precision and recall per detector on the labelled set, and detector throughput.

Prints a per-detector table, then as its LAST line one JSON object:
{"detectors": {name: {"precision": p, "recall": r}}, "injection": {...}, "injection_addressed": {...},
 "memory_guard": {...}, "throughput_mb_s": x}
Throughput is measured with all detectors on a few MB of mixed synthetic text (prose, code, logs,
and sparse personal data), so it reflects a realistic hit rate rather than a worst case.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime_host.safety.detectors import detect  # noqa: E402
from runtime_host.safety.evaluation import load_labelled, score  # noqa: E402
from runtime_host.safety.untrusted import score_injection  # noqa: E402
from wiki_engine.guard import check_instructions  # noqa: E402

DATA = ROOT / "tests" / "data" / "safety"

_FILLER = [
    "The quarterly review moved to Thursday at 14:00; bring the updated roadmap and the budget sheet.",
    "def handle(event):\n    if event.kind == 'delta':\n        buffer.append(event.text)\n    return len(buffer)\n",
    "2024-06-11T09:14:22.381Z INFO worker[4412] ready in 38ms (pid 4412, rss 61.2MB) version 1.4.2",
    "Please water the tomatoes twice a week and keep the greenhouse door open on warm days.",
    "SELECT id, title FROM pages WHERE scope = ? AND updated_at > ? ORDER BY rank DESC LIMIT 50;",
    "Released 3.11.7 with 42 fixes; see https://example.org/changelog#3-11-7 for the full list.",
    "Order 2024-118-44721 shipped in 3 parcels; total 1,249.90 EUR incl. VAT.",
    "Thanks @maria for the review! I pushed icon@2x.png and bumped @angular/core@17.3.2.",
]
_PII = [
    "Reach me at jordan.lee@example-mail.com or +1 (415) 555-0132.",
    "IBAN DE89 3704 0044 0532 0130 00, card 4111 1111 1111 1111.",
    "Office: 350 Fifth Avenue, New York, NY 10118.",
    "OPENAI_API_KEY=sk-proj-4fQ9xL2mZ8vB1nR7tK3wY6hJ0pD5sA9cE2gU",
]


def synthetic_text(megabytes: float, seed: int = 7) -> str:
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    parts: list[str] = []
    size = 0
    while size < target:
        piece = rng.choice(_PII) if rng.random() < 0.05 else rng.choice(_FILLER)
        parts.append(piece)
        size += len(piece) + 1
    return "\n".join(parts)


def throughput(megabytes: float = 4.0, chunk: int = 8192) -> float:
    text = synthetic_text(megabytes)
    chunks = [text[i:i + chunk] for i in range(0, len(text), chunk)]
    detect(chunks[0])  # compile patterns outside the timing
    t0 = time.perf_counter()
    for c in chunks:
        detect(c)
    elapsed = time.perf_counter() - t0
    return len(text.encode("utf-8")) / (1024 * 1024) / elapsed


def injection_metrics(files: tuple[str, ...] = ("injection.jsonl",), flags: Any = None) -> dict[str, float | None]:
    """Precision and recall of ``flags`` (a text -> whether it is flagged; ``score_injection`` by default) on the
    labelled ``files``."""
    flags = flags or (lambda text: score_injection(text).level != "ok")
    tp = fp = fn = tn = 0
    for line in (line for name in files for line in (DATA / name).read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        flagged = flags(row["text"])
        positive = row["label"] == "injection"
        tp += flagged and positive
        fp += flagged and not positive
        fn += (not flagged) and positive
        tn += (not flagged) and not positive
    # precision of nothing flagged is not measured (None), not perfect: the mail screen flags none of the addressed set
    return {"precision": round(tp / (tp + fp), 4) if tp + fp else None, "recall": round(tp / (tp + fn), 4) if tp + fn else None}


def main() -> None:
    rows = load_labelled(DATA / "labelled.jsonl")
    counts = score(rows)
    print(f"{len(rows)} labelled strings")
    print(f"{'detector':12s} {'precision':>9s} {'recall':>7s} {'tp':>4s} {'fp':>4s} {'fn':>4s}")
    for name, c in counts.items():
        print(f"{name:12s} {c.precision:9.3f} {c.recall:7.3f} {c.tp:4d} {c.fp:4d} {c.fn:4d}")
        for e in c.errors:
            print(f"    {e}")
    tput = throughput()
    print(f"throughput: {tput:.2f} MB/s (all detectors, 4 MB mixed text in 8 KiB chunks)")
    result = {
        "detectors": {n: {"precision": round(c.precision, 4), "recall": round(c.recall, 4)} for n, c in counts.items()},
        "injection": injection_metrics(),
        # the same detector on lines spoken to the assistants ("Agents: when asked, reply ..."), and memory's guard
        # (what keeps orders out of the wiki) on both sets
        "injection_addressed": injection_metrics(("addressed_orders.jsonl",)),
        "memory_guard": injection_metrics(("injection.jsonl", "addressed_orders.jsonl"),
                                          lambda text: not check_instructions(text).ok),
        "throughput_mb_s": round(tput, 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
