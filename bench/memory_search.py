"""Memory search benchmark: builds a wiki of 10,000 pages and 100,000 sources (generated
deterministically), then times the fast path (full-text search, typeahead), the ranked path
(meaning + keywords + importance + recency) and, for scale, a naive scan in the same run.

Prints one JSON object as its last line: pages, sources, search_ms_p50, search_ms_p95,
typeahead_ms_p95, ranked_ms_p50, ranked_ms_p95, index_build_s, naive_scan_ms_p50 (and a few extras).
Usage: python bench/memory_search.py [--sources 100000] [--pages 10000] [--queries 400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wiki_engine import Item, Page, Viewer, open_memory  # noqa: E402

NAMES = ["Alice", "Bob", "Emma", "Leo", "Sam", "Priya", "Marek", "Rose", "Tom", "Jenna", "Sandra", "Omar", "Mia", "Noah",
         "Grace", "Ivan", "Lucia", "Kofi", "Hana", "Yusuf"]
PLACES = ["the dentist", "the garage", "school", "the leisure centre", "the Olive Tree", "the vet", "the office", "Lisbon",
          "Cornwall", "the bank", "the library", "the park", "the allotment", "the gym", "Mill Lane", "the station"]
THINGS = ["boiler", "car", "passport", "wifi router", "bike", "laptop", "insurance", "piano", "tent", "lawnmower",
          "smoke alarm", "fridge", "roof", "pension", "mortgage", "phone contract", "tyres", "vaccination", "budget", "invoice"]
EVENTS = ["birthday", "appointment", "meeting", "lesson", "renewal", "service", "party", "trip", "review", "match",
          "delivery", "inspection", "concert", "dinner", "deadline"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
TEMPLATES = [
    "{n}'s {e} is on {d} {day} {m} at {p}.",
    "Remember the {t} needs attention before {m}; {n} said {p} can help.",
    "{n}: I moved the {t} to {p}, it was in the way.",
    "The {e} with {n} moved to {day} at {h} o'clock.",
    "We paid {x} pounds for the {t} {e} last {m}.",
    "{n} prefers {p} for the {e}, not {p2}.",
    "Note: the {t} code is {x}{d} and {n} has a spare.",
    "{n} and {n2} are planning a {e} in {m} near {p}.",
    "The {t} broke again on {day}; call {n} from {p}.",
    "Reminder from {p}: your {t} {e} is due on {d} {m}.",
]


def words_from_tokenizer(limit: int = 6000) -> list[str]:
    """A realistic-size English vocabulary: whole-word entries of the shipped MiniLM tokenizer."""
    vocab = json.loads((ROOT / "wiki_engine" / "data" / "minilm-tokenizer.json").read_text())["model"]["vocab"]
    words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if re.fullmatch(r"[a-z]{3,12}", w)]
    return words[:limit]


class Generator:
    def __init__(self, seed: int = 20261202):
        self.rng = random.Random(seed)
        self.vocab = words_from_tokenizer()
        # Zipf-like weights so some words are common and most are rare, as in real text.
        self.weights = [1.0 / (r + 10) for r in range(len(self.vocab))]

    def sentence(self) -> str:
        r = self.rng
        t = r.choice(TEMPLATES)
        return t.format(n=r.choice(NAMES), n2=r.choice(NAMES), p=r.choice(PLACES), p2=r.choice(PLACES), t=r.choice(THINGS),
                        e=r.choice(EVENTS), d=r.randint(1, 28), day=r.choice(DAYS), m=r.choice(MONTHS), h=r.randint(1, 12),
                        x=r.randint(10, 999))

    def filler(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(self.vocab, weights=self.weights, k=self.rng.randint(lo, hi)))

    def source_text(self) -> str:
        parts = [self.sentence() for _ in range(self.rng.randint(1, 3))]
        parts.insert(self.rng.randint(0, len(parts)), self.filler(4, 18).capitalize() + ".")
        return " ".join(parts)

    def question(self) -> str:
        r = self.rng
        forms = [
            f"when is {r.choice(NAMES)}'s {r.choice(EVENTS)}",
            f"where did {r.choice(NAMES)} put the {r.choice(THINGS)}",
            f"how much did we pay for the {r.choice(THINGS)}",
            f"what did {r.choice(NAMES)} say about {r.choice(PLACES)}",
            f"is the {r.choice(THINGS)} {r.choice(EVENTS)} in {r.choice(MONTHS)}",
            f"who can help with the {r.choice(THINGS)} {self.filler(1, 2)}",
        ]
        return r.choice(forms)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--embedder", default="static", choices=["static", "minilm"])
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it")
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="hearth-memsearch-"))
    if args.keep and work.exists():
        shutil.rmtree(work)
    gen = Generator()
    # Scopes a viewer (Alice through her helper agent) searches, plus Bob's tree that must stay out of it.
    split = {"public": 0.4, "private/alice": 0.35, "agent/alice/helper": 0.15, "private/bob": 0.10}
    base_ts = 1735689600.0
    items: list[Item] = []
    n = 0
    for scope, share in split.items():
        for _ in range(int(args.sources * share)):
            n += 1
            items.append(Item(text=gen.source_text(), scope=scope, ts=base_ts + gen.rng.random() * 3e7, kind="chat",
                              key=f"b{n}", importance=round(gen.rng.random(), 2) if gen.rng.random() < 0.3 else None))
    while len(items) < args.sources:
        n += 1
        items.append(Item(text=gen.source_text(), scope="public", ts=base_ts, kind="note", key=f"b{n}"))

    mem = open_memory(work / "memory", embedder=args.embedder)
    t0 = time.perf_counter()
    ids: dict[str, list[str]] = {}
    for start in range(0, len(items), 5000):
        chunk = items[start : start + 5000]
        for it, sid in zip(chunk, mem.add_items(chunk, to_inbox=False), strict=True):
            ids.setdefault(it.scope, []).append(sid)
    t_sources = time.perf_counter() - t0
    page_scopes = ["public"] * 6 + ["private/alice"] * 3 + ["private/bob"]
    pages: list[Page] = []
    for p in range(args.pages):
        scope = page_scopes[p % len(page_scopes)]
        cites = {c + 1: gen.rng.choice(ids[scope]) for c in range(gen.rng.randint(1, 4))}
        body = "\n".join(f"- {gen.sentence()} [{c}]" for c in cites) + "\n\n" + gen.filler(20, 60) + f"\n\nSee [[{gen.rng.choice(THINGS).title()}]]."
        title = f"{gen.rng.choice(NAMES)} {gen.rng.choice(THINGS)} {gen.rng.choice(EVENTS)} {p}"
        pages.append(Page(title=title, scope=scope, category=gen.rng.choice(EVENTS), body=body, citations=cites))
    for start in range(0, len(pages), 1000):
        mem.write_pages(pages[start : start + 1000], author="agent:bench")
    index_build_s = time.perf_counter() - t0

    # The bench itself holds 110,000 generated Item/Page objects; keep the garbage collector from walking
    # them during the timed queries (the app holds none of these: they are this script's inputs).
    gc.collect()
    gc.freeze()
    viewer = Viewer("alice", "helper")
    questions = [gen.question() for _ in range(args.queries)]
    prefixes = []
    for _ in range(args.queries):
        w = gen.rng.choice(NAMES + THINGS + EVENTS + gen.vocab[:2000]).lower()
        prefixes.append(w[: gen.rng.randint(2, min(6, len(w)))])
    for q in questions[:20]:  # warm caches, load vectors
        mem.search(q, scopes=viewer, mode="keyword")
        mem.search(q, scopes=viewer, mode="hybrid")
        mem.typeahead(q[:3], scopes=viewer)

    def timed(fn, inputs) -> tuple[list[float], list]:  # type: ignore[no-untyped-def]
        out, res = [], []
        for x in inputs:
            t = time.perf_counter()
            res.append(fn(x))
            out.append((time.perf_counter() - t) * 1000)
        return out, res

    search_ms, search_res = timed(lambda q: mem.search(q, scopes=viewer, k=10, mode="keyword"), questions)
    typeahead_ms, _ = timed(lambda p: mem.typeahead(p, scopes=viewer, k=8), prefixes)
    ranked_ms, ranked_res = timed(lambda q: mem.search(q, scopes=viewer, k=10, mode="hybrid"), questions)
    leaks = sum(1 for hits in search_res + ranked_res for h in hits if h.scope == "private/bob")

    # The naive way, in the same run: scan every text the viewer may see and count query-term hits.
    corpus = [(it.scope, it.text.lower()) for it in items if viewer.may_see(it.scope)]
    corpus += [(p.scope, f"{p.title}\n{p.body}".lower()) for p in pages if viewer.may_see(p.scope)]
    from wiki_engine.index import query_terms

    def naive(q: str) -> list[int]:
        terms = query_terms(q)
        scores = [(sum(text.count(t) for t in terms), i) for i, (_, text) in enumerate(corpus)]
        return [i for s, i in sorted(scores, reverse=True)[:10] if s > 0]

    naive_ms, _ = timed(naive, questions[:20])
    pages_count = sum(1 for _ in (work / "memory" / "wiki").rglob("*.md"))
    result = {
        "pages": pages_count,
        "sources": mem.count_sources(),
        "search_ms_p50": pct(search_ms, 0.5),
        "search_ms_p95": pct(search_ms, 0.95),
        "typeahead_ms_p50": pct(typeahead_ms, 0.5),
        "typeahead_ms_p95": pct(typeahead_ms, 0.95),
        "ranked_ms_p50": pct(ranked_ms, 0.5),
        "ranked_ms_p95": pct(ranked_ms, 0.95),
        "index_build_s": round(index_build_s, 2),
        "sources_build_s": round(t_sources, 2),
        "naive_scan_ms_p50": round(statistics.median(naive_ms), 1),
        "viewer_docs": len(corpus),
        "queries": len(questions),
        "embedder": args.embedder,
        "private_leaks": leaks,
    }
    mem.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
