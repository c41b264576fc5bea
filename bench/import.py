"""Watched-folder import benchmark: generates a folder of real text and Markdown files (deterministic sentences,
nested folders), then imports it through a real Pod's watched folders (read, redact, store, index), then
re-scans it unchanged, then re-scans after 1% of the files changed, then removes the folder (every source it
imported deleted). Then, in a fresh process, imports one mail export of about --mbox-mb MB and measures how
much its memory grew at its peak.

Prints one JSON object as its last line: files, files_per_s, import_s, rescan_unchanged_s,
rescan_unchanged_files_per_s, rescan_changed_s, sources, indexed, remove_s, and mbox_mb, mbox_messages,
mbox_s, mbox_sources, mbox_rss_added_mb (the import's peak resident memory above the process's size once memory
was open; the process's earlier peak is reset first) and mbox_rss_peak (how that peak was measured).
Usage: python bench/import.py [--files 10000] [--mbox-mb 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
        t = time.perf_counter()
        removed = await pod.folders.remove(folder.id)
        remove_s = time.perf_counter() - t
        assert removed["sources_deleted"] == sources and not await pod.memory_search("boiler Lisbon Monday", k=5)
        return {"remove_s": round(remove_s, 2), "files": files, "files_per_s": round(files / import_s, 1), "import_s": round(import_s, 2),
                "rescan_unchanged_s": round(rescan_s, 3),
                "rescan_unchanged_files_per_s": round(files / rescan_s, 1),
                "rescan_changed_files": third.indexed, "rescan_changed_s": round(changed_s, 3),
                "indexed": first.indexed, "sources": sources}
    finally:
        await pod.close()


def make_mbox(path: Path, mb: float, seed: int = 11) -> int:
    """A mail export of about ``mb`` MB: diary-like messages of 5 KB each. Returns how many it holds."""
    rng = random.Random(seed)
    n = 0
    with path.open("w") as fh:
        while fh.tell() < mb * 1048576:
            body = "\n".join(sentence(rng) for _ in range(40))
            fh.write(f"From a@example.org Tue Mar  3 10:00:00 2026\nFrom: A <a@example.org>\nSubject: Diary {n}\n"
                     f"Date: Tue, 03 Mar 2026 10:00:00 +0000\n\n{body}\n\n")
            n += 1
    return n


def rss_mb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) // 1024
    return 0


class PeakRss:
    """The highest resident memory from `start()` on: VmHWM is the whole process's peak (setup alone reached
    ~19 MB above the size once memory was open), so it is reset first by writing 5 to /proc/self/clear_refs
    (Linux 4.0 and later). Where that is not allowed, RSS is sampled every 5 ms in a thread instead (a
    shorter spike can be missed); `how` says which."""

    def __init__(self) -> None:
        self.how = ""
        self._sampled = 0
        self._stop: Any = None
        self._thread: Any = None

    def start(self) -> None:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.how = "VmHWM reset at the start"
            return
        except OSError as exc:
            print(f"note: cannot reset the peak ({exc}); sampling RSS every 5 ms instead", file=sys.stderr)
        import threading

        self.how = "RSS sampled every 5 ms"
        self._stop = threading.Event()
        self._sampled = rss_mb("VmRSS")

        def sample() -> None:
            while not self._stop.wait(0.005):
                self._sampled = max(self._sampled, rss_mb("VmRSS"))

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        """The peak in MB since `start()`."""
        if self._thread is None:
            return rss_mb("VmHWM")
        self._stop.set()
        self._thread.join()
        return max(self._sampled, rss_mb("VmRSS"))


async def run_mbox(mb: float, work: Path) -> dict[str, float | int]:
    """One mail export through a real Pod, in this (fresh) process: time and peak memory growth."""
    os.environ["HEARTH_HOME"] = str(work / "home")
    from runtime_host.pod import Pod

    docs = work / "export"
    docs.mkdir(parents=True)
    messages = make_mbox(docs / "all.mbox", mb)
    pod = Pod(work / "home").first_person()
    try:
        folder = pod.folders.add(docs)
        pod.memory  # noqa: B018  (opened before measuring: its indexes and embedding model are not the import's)
        peak = PeakRss()
        peak.start()  # before `before`: the peak starts at the size memory has now
        before = rss_mb("VmRSS")
        t = time.perf_counter()
        rep = await pod.folders.scan(folder.id)
        seconds = time.perf_counter() - t
        added = peak.stop() - before
        assert rep.indexed == 1, pod.folders.files(folder.id)
        return {"mbox_mb": round((docs / "all.mbox").stat().st_size / 1048576, 1), "mbox_messages": messages,
                "mbox_s": round(seconds, 2), "mbox_sources": rep.sources_added,
                "mbox_rss_added_mb": added, "mbox_rss_peak": peak.how}
    finally:
        await pod.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--mbox-mb", type=float, default=10.0)
    ap.add_argument("--mbox-only", action="store_true", help=argparse.SUPPRESS)  # the fresh process
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hearth-import-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.mbox_only:
            out = asyncio.run(run_mbox(args.mbox_mb, work))
        else:
            out = asyncio.run(run(args.files, work / "files"))
            child = subprocess.run([sys.executable, __file__, "--mbox-only", "--mbox-mb", str(args.mbox_mb),
                                    "--keep", str(work / "mbox")], capture_output=True, text=True, check=True)
            out.update(json.loads(child.stdout.strip().splitlines()[-1]))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
