"""The in-house memory harness (a test fixture, not product code): runs producer and ingest over the small
dataset we wrote ourselves (tests/data/memory), snapshots the wiki and measures it. Its writer's category
words fit that dataset only; figures on data we did not write come from bench/memory_quality.py.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wiki_engine.memory import Memory, SourceRecord, open_memory
from wiki_engine.pages import Page, PageFormatError, parse_page
from wiki_engine.pipeline import (
    Decide,
    IngestBatch,
    Synthesize,
    Watermark,
    rules_decide,
    run_ingest,
    run_producer,
)
from wiki_engine.render import Item
from wiki_engine.scopes import Scope, Viewer

DATASET = Path(__file__).resolve().parents[1] / "data" / "memory" / "memory_dataset.json"


def load_dataset(path: Path = DATASET) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"The in-house memory dataset {path} is missing (it lives in tests/data/memory).") from None
    return data


def dataset_items(data: dict[str, Any]) -> list[Item]:
    return [
        Item(text=x["text"], scope=x["scope"], ts=float(x["ts"]), kind=x["kind"], key=x["key"], author=x.get("author", ""),
             subject=x.get("subject", ""), importance=x.get("importance"))
        for x in data["items"]
    ]


# ---- test stand-ins for the model's parts ---------------------------------------------------------
# A one-page-per-category writer whose category words were written for this in-house set: it stays here,
# in the tests, and never in Hearth itself (which writes no pages until an ingest model is chosen).

baseline_decide = rules_decide

CATEGORIES: dict[str, tuple[str, ...]] = {
    "health": ("allerg", "doctor", "dr.", "dentist", "dental", "medic", "mg", "mcg", "blood", "heart", "thyroid", "eye test",
               "surgery", "pressure", "penicillin", "vaccin", "caffeine", "coffee", "sleep"),
    "home": ("wifi", "boiler", "key", "stopcock", "water", "meter", "electric", "roof", "shed", "alarm", "recycl", "bin",
             "garage", "loft", "insurance", "broadband", "mower", "kitchen", "collect"),
    "family": ("birthday", "grandma", "mum", "kids", "school", "emma", "leo", "anniversary", "brother", "gift", "piano",
               "swimming", "bed at"),
    "pets": ("vet", "dog", "biscuit"),
    "travel": ("holiday", "cottage", "passport", "flight", "seat", "lisbon", "travel"),
    "money": ("pounds", "savings", "pension", "premium", "budget", "price", "owe", "account number"),
    "work": ("manager", "review", "project", "warehouse", "finance team", "go-live"),
    "fitness": ("run", "10k", "yoga", "cycling", "ride", "training", "gym", "heart rate"),
    "shopping": ("grocer", "delivery", "shop", "co-op"),
    "car": ("car", "mot", "tyres", "petrol"),
    "preferences": ("prefer", "likes", "does not want", "briefing", "means"),
}


def categorize(text: str) -> str:
    low = text.lower()
    scores = {c: sum(1 for w in words if w in low) for c, words in CATEGORIES.items()}
    best = max(scores, key=lambda c: (scores[c], -list(CATEGORIES).index(c)))
    return best if scores[best] > 0 else "misc"


def _first_sentence(text: str, width: int = 240) -> str:
    """The item's statement as one line (a chat speaker prefix dropped), cut at a word near ``width``."""
    flat = re.sub(r"\s+", " ", re.sub(r"^\w+:\s+", "", text.strip()))
    return flat if len(flat) <= width else flat[:width].rsplit(" ", 1)[0] + "…"


def baseline_synthesize(batch: IngestBatch) -> list[Page]:
    """Deterministic stand-in for the wiki writer: one page per (scope, category), one cited claim per
    source, and [[links]] to the scope's other category pages. An existing page of the same title is
    extended, never rewritten from scratch."""
    groups: dict[tuple[str, str], list[SourceRecord]] = {}
    for src in batch.sources:
        groups.setdefault((src.scope, categorize(f"{src.title} {src.text}")), []).append(src)
    titles_by_scope: dict[str, set[str]] = {s: {p.title for p in ps} for s, ps in batch.existing_pages.items()}
    for scope, cat in groups:
        titles_by_scope.setdefault(scope, set()).add(_page_title(scope, cat))
    pages: list[Page] = []
    for (scope, cat), srcs in sorted(groups.items()):
        title = _page_title(scope, cat)
        old = next((p for p in batch.existing_pages.get(scope, []) if p.title == title), None)
        citations: dict[int, str] = dict(old.citations) if old else {}
        lines = [ln for ln in old.body.splitlines() if ln.startswith("- ")] if old else []
        for src in sorted(srcs, key=lambda s: s.ts):
            if src.id in citations.values():
                continue
            n = max(citations, default=0) + 1
            citations[n] = src.id
            lines.append(f"- {_first_sentence(src.text)} [{n}]")
        others = sorted(titles_by_scope[scope] - {title})
        body = "\n".join(lines)
        if others:
            body += "\n\nSee also: " + ", ".join(f"[[{t}]]" for t in others)
        pages.append(Page(title=title, scope=scope, category=cat, body=body, citations=citations))
    return pages


def _page_title(scope: str, category: str) -> str:
    sc = Scope.parse(scope)
    owner = {"public": "Household", "private": f"{sc.person.capitalize() if sc.person else ''}'s",
             "agent": f"{sc.agent.capitalize() if sc.agent else ''} notes:"}[sc.kind]
    return f"{owner} {category}"


# ---- the harness -----------------------------------------------------------------------------------


def _viewer(v: dict[str, str]) -> Viewer:
    return Viewer(v["person"], v.get("agent"))


def run_pipeline(memory: Memory, items: Sequence[Item], *, decide: Decide, synthesize: Synthesize) -> dict[str, Any]:
    """Producer per (scope, origin), then one ingest. Returns the raw reports as counts."""
    groups: dict[tuple[str, str], list[Item]] = {}
    for it in items:
        groups.setdefault((it.scope, it.kind), []).append(it)
    kept = skipped = quarantined = 0
    skip_reasons: Counter[str] = Counter()
    quarantine_rules: Counter[str] = Counter()
    quarantined_keys: list[str] = []
    for (scope, origin), its in sorted(groups.items()):
        def fetch(mark: Watermark | None, its: list[Item] = its) -> list[Item]:
            return [i for i in its if mark is None or not mark.covers(i)]

        rep = run_producer(memory, scope=scope, origin=origin, fetch=fetch, decide=decide)
        kept += len(rep.kept)
        skipped += len(rep.skipped)
        quarantined += len(rep.quarantined)
        skip_reasons.update(r for _, r in rep.skipped)
        quarantined_keys += [k for k, _ in rep.quarantined]
    for q in memory.quarantine():
        quarantine_rules[q.rule] += 1
    ing = run_ingest(memory, synthesize)
    return {
        "items": len(items), "kept": kept, "skipped": skipped, "quarantined": quarantined,
        "skip_reasons": dict(sorted(skip_reasons.items())), "quarantine_rules": dict(sorted(quarantine_rules.items())),
        "quarantined_keys": sorted(quarantined_keys),
        "pages_written": len(ing.written), "pages_proposed": len(ing.proposed), "pages_rejected": len(ing.rejected),
        "rejections": ing.rejected, "left_in_inbox": len(ing.left_in_inbox),
    }


def wiki_metrics(wiki_root: Path, memory: Memory) -> dict[str, Any]:
    """Measures a wiki folder: pages, front-matter failures, categories, sizes, citations."""
    files = sorted(wiki_root.rglob("*.md")) if wiki_root.exists() else []
    pages: list[Page] = []
    failures: list[str] = []
    for f in files:
        try:
            pages.append(parse_page(f.read_text("utf-8"), where=str(f.relative_to(wiki_root))))
        except (PageFormatError, UnicodeDecodeError) as e:
            failures.append(str(e))
    sizes = [len(p.to_markdown().encode()) for p in pages]
    claim_lines = [ln for p in pages for ln in p.body.splitlines() if ln.strip().startswith(("-", "*")) or re.search(r"[.!?]\s*(\[\d+\])*\s*$", ln)]
    cited_lines = [ln for ln in claim_lines if re.search(r"\[\d+\]", ln)]
    cited_sources = {sid for p in pages for sid in p.citations.values()}
    all_sources = {r[0] for r in memory.catalog.query("SELECT id FROM sources")}
    dangling = sum(1 for p in pages for sid in p.citations.values() if sid not in all_sources)
    buckets = Counter("<500B" if s < 500 else "<2KB" if s < 2048 else "<8KB" if s < 8192 else ">=8KB" for s in sizes)
    return {
        "pages": len(pages),
        "pages_by_scope": dict(sorted(Counter(p.scope.split("/")[0] for p in pages).items())),
        "empty_front_matter_failures": len(failures),
        "front_matter_errors": failures[:20],
        "category_distribution": dict(sorted(Counter(p.category for p in pages).items())),
        "page_bytes": {"min": min(sizes, default=0), "median": int(statistics.median(sizes)) if sizes else 0,
                       "max": max(sizes, default=0), "buckets": dict(sorted(buckets.items()))},
        "links": sum(len(p.links) for p in pages),
        "claim_citation_coverage": round(len(cited_lines) / len(claim_lines), 4) if claim_lines else 0.0,
        "source_citation_coverage": round(len(cited_sources & all_sources) / len(all_sources), 4) if all_sources else 0.0,
        "dangling_citations": dangling,
    }


def retrieval_metrics(memory: Memory, data: dict[str, Any], *, k: int = 5) -> dict[str, Any]:
    """recall@k (any answer source in the top k sources) per mode, MRR, and leaks across scopes."""
    key_to_id = {r[0]: r[1] for r in memory.catalog.query("SELECT item_key, id FROM sources")}
    out: dict[str, Any] = {}
    leaks = 0
    answerable = [q for q in data["questions"] if q["answers"]]
    for mode in ("hybrid", "keyword", "meaning"):
        found = 0
        rr = 0.0
        misses: list[str] = []
        for q in data["questions"]:
            viewer = _viewer(q["viewer"])
            hits = memory.search(q["q"], scopes=viewer, k=k, mode=mode, kinds=("source",))
            leaks += sum(1 for h in hits if not viewer.may_see(h.scope))
            want = {key_to_id[a] for a in q["answers"] if a in key_to_id}
            if not q["answers"]:
                continue
            ranks = [n for n, h in enumerate(hits, 1) if h.id in want]
            if ranks:
                found += 1
                rr += 1.0 / ranks[0]
            else:
                misses.append(q["q"])
        out[f"recall_at_{k}_{mode}"] = round(found / len(answerable), 4) if answerable else 0.0
        out[f"mrr_at_{k}_{mode}"] = round(rr / len(answerable), 4) if answerable else 0.0
        out[f"misses_{mode}"] = misses
    out["questions"] = len(answerable)
    out["scope_leaks"] = leaks
    # Questions whose answer lives only in a scope the viewer may not see must find nothing of it.
    private_hits = 0
    for q in data["questions"]:
        if q["answers"]:
            continue
        viewer = _viewer(q["viewer"])
        for mode in ("hybrid", "keyword"):
            for h in memory.search(q["q"], scopes=viewer, k=k, mode=mode):
                if not viewer.may_see(h.scope):
                    private_hits += 1
    out["cross_person_leaks"] = private_hits
    return out


def run_harness(out_dir: Path, *, scoreboard: Path | None = None, embedder: str = "static", label: str = "",
                decide: Decide = baseline_decide, synthesize: Synthesize = baseline_synthesize,
                dataset: Path = DATASET, k: int = 5) -> dict[str, Any]:
    """Runs the whole harness into ``out_dir/<run>/`` and appends the metrics to ``scoreboard``."""
    data = load_dataset(dataset)
    items = dataset_items(data)
    run_id = time.strftime("%Y%m%dT%H%M%S") + f"-{embedder}"
    run_dir = Path(out_dir) / run_id
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    memory = open_memory(run_dir / "memory", embedder=embedder)
    try:
        pipe = run_pipeline(memory, items, decide=decide, synthesize=synthesize)
        build_s = time.perf_counter() - t0
        snapshot = run_dir / "snapshot"
        shutil.copytree(memory.root / "wiki", snapshot / "wiki", dirs_exist_ok=True)
        wiki = wiki_metrics(snapshot / "wiki", memory)
        t1 = time.perf_counter()
        retrieval = retrieval_metrics(memory, data, k=k)
        search_s = time.perf_counter() - t1
        tampered = len(memory.verify())
    finally:
        memory.close()
    injected = sorted(x["key"] for x in data["items"] if x["key"].startswith("i"))
    caught = sorted(set(pipe["quarantined_keys"]) & set(injected))
    metrics: dict[str, Any] = {
        "run": run_id, "label": label, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "dataset": dataset.name, "dataset_version": data.get("version"), "embedder": embedder,
        **{k2: v for k2, v in pipe.items() if k2 not in ("quarantined_keys", "rejections")},
        "injections_caught": f"{len(caught)}/{len(injected)}",
        "false_quarantines": sorted(set(pipe["quarantined_keys"]) - set(injected)),
        **wiki, **retrieval,
        "tampered_sources": tampered, "pipeline_s": round(build_s, 3), "retrieval_s": round(search_s, 3),
        "snapshot": str(run_dir / "snapshot"),
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1), "utf-8")
    if scoreboard is not None:
        scoreboard.parent.mkdir(parents=True, exist_ok=True)
        with open(scoreboard, "a", encoding="utf-8") as f:
            f.write(json.dumps(metrics, sort_keys=True) + "\n")
    return metrics
