"""Watched-folder import benchmark: generates a folder of real text and Markdown files (deterministic
sentences, nested folders), then imports it through a real Pod's watched folders (read, redact, store,
index), then re-scans it unchanged, then re-scans after 1% of the files changed.

Prints one JSON object as its last line: files, files_per_s, import_s, rescan_unchanged_s,
rescan_unchanged_files_per_s, rescan_changed_s, sources, indexed.
Usage: python bench/import.py [--files 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import ROOT as _ROOT  # noqa: E402,F401  (loopback-only switch)

NAMES = ["Alice", "Bob", "Emma", "Leo", "Sam", "Priya", "Marek", "Rose", "Tom", "Jenna", "Omar", "Mia", "Grace"]
THINGS = ["boiler", "car", "passport", "router", "bike", "laptop", "insurance", "piano", "tent", "roof", "pension"]
PLACES = ["the dentist", "the garage", "school", "the library", "the park", "the station", "Lisbon", "the bank"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def sentence(rng: random.Random) -> str:
    return (f"{rng.choice(NAMES)} said the {rng.choice(THINGS)} needs looking at near {rng.choice(PLACES)} "
            f"on {rng.choice(DAYS)} {rng.randint(1, 28)}, before the {rng.choice(THINGS)} is due.")


def make_folder(root: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(n):
        sub = root / f"year-{2015 + i % 10}" / f"topic-{i % 37:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        body = " ".join(sentence(rng) for _ in range(rng.randint(3, 12)))
        if i % 2:
            (sub / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{body}\n\n- {sentence(rng)}\n- {sentence(rng)}\n")
        else:
            (sub / f"note-{i:05d}.txt").write_text(body + "\n")


async def run(files: int, work: Path) -> dict[str, float | int]:
    os.environ["HEARTH_HOME"] = str(work / "home")
    from runtime_host.pod import Pod

    docs = work / "docs"
    make_folder(docs, files)
    pod = Pod(work / "home").first_person()
    try:
        folder = pod.folders.add(docs)
        t = time.perf_counter()
        first = await pod.folders.scan(folder.id)
        import_s = time.perf_counter() - t
        t = time.perf_counter()
        again = await pod.folders.scan(folder.id)
        rescan_s = time.perf_counter() - t
        assert again.indexed == 0 and again.unchanged == files, again
        rng = random.Random(3)
        changed = rng.sample(sorted(docs.rglob("note-*")), max(1, files // 100))
        for p in changed:
            p.write_text(p.read_text() + f"\nUpdated: {sentence(rng)}\n")
        t = time.perf_counter()
        third = await pod.folders.scan(folder.id)
        changed_s = time.perf_counter() - t
        hits = await pod.memory_search("boiler Lisbon Monday", k=5)
        assert hits, "nothing imported is found"
        sources = pod.memory.count_sources(f"private/{pod.person.id}")
        return {"files": files, "files_per_s": round(files / import_s, 1), "import_s": round(import_s, 2),
                "rescan_unchanged_s": round(rescan_s, 3),
                "rescan_unchanged_files_per_s": round(files / rescan_s, 1),
                "rescan_changed_files": third.indexed, "rescan_changed_s": round(changed_s, 3),
                "indexed": first.indexed, "sources": sources}
    finally:
        await pod.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hearth-import-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = asyncio.run(run(args.files, work))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
