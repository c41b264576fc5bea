"""Which of a person's pages the wiki writer is shown, on data we did not write: LoCoMo's long chats
(../shared/memory-eval/locomo-dev.json) made into one person's wiki, a page per speaker and session of LoCoMo's own
observations, one per session of its summary and one per speaker and session of its events (500 pages), and batches
of a session's first 20 turns as the notes waiting. Through the real ingest's reading of a batch (``_ingest_batch``)
and the real writer's prompt (``model_synthesize`` asking a fake model server on 127.0.0.1).

Prints one JSON object as its last line: ``session_page_shown_rate`` (of the batches, how many had a page of their
own session among the pages shown), ``session_pages_shown`` (the share of their session's pages shown),
``prompt_chars`` (the writer's prompt for a batch of 20 notes and 500 pages), ``batch_ms_500`` / ``batch_ms_5000``
(reading a batch: its notes, the scope's pages, which to show first) and ``pages_first_ms_500`` /
``pages_first_ms_5000`` (the choice of the pages shown first alone, where the code has it).
Usage: python bench/writer_pages.py [--data PATH] [--batches N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import LOCOMO_DEV  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402
from wiki_engine import Page, open_memory, pipeline  # noqa: E402

SCOPE = "private/reader"
BATCH = 20  # notes in a batch


def _sessions(data: list[dict[str, Any]]) -> list[tuple[str, int, str, list[str]]]:
    """(conversation, session, date, its turns as notes) of every session."""
    out = []
    for conv in data:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                n = int(key.split("_")[1])
                date = c.get(f"{key}_date_time", "").split(" on ")[-1]
                out.append((conv["sample_id"], n, date, [f"{t['speaker']}: {t['text']}" for t in turns]))
    return out


def _pages(data: list[dict[str, Any]], sid: str) -> list[tuple[Page, tuple[str, int]]]:
    """LoCoMo's own observations, summaries and events as pages, each with the (conversation, session) it is of."""
    out = []
    for conv in data:
        c, cid = conv["conversation"], conv["sample_id"]
        for key, by_speaker in conv["observation"].items():
            n = int(key.split("_")[1])
            date = c.get(f"session_{n}_date_time", "").split(" on ")[-1]
            for speaker, facts in by_speaker.items():
                if facts:
                    body = "\n".join(f"- {f[0]} [1]" for f in facts)
                    out.append((Page(f"{speaker}, {date}", SCOPE, "people", body, {1: sid}), (cid, n)))
        for key, summary in conv["session_summary"].items():
            n = int(key.split("_")[1])
            date = c.get(f"session_{n}_date_time", "").split(" on ")[-1]
            title = f"{c['speaker_a']} and {c['speaker_b']}, {date}"
            out.append((Page(title, SCOPE, "conversations", f"{summary} [1]", {1: sid}), (cid, n)))
        for key, events in conv["event_summary"].items():
            n = int(key.split("_")[-1])
            for speaker, said in events.items():
                if speaker != "date" and said:
                    body = "\n".join(f"- {e} [1]" for e in said)
                    out.append((Page(f"{speaker}'s events, {events['date']}", SCOPE, "events", body, {1: sid}), (cid, n)))
    return out


def _timed_batches(mem: Any, sessions: list[tuple[str, int, str, list[str]]], runs: int) -> tuple[float, float | None]:
    """Median ms of reading a batch, and of choosing its pages shown first (None where the code has no such step)."""
    whole, first = [], []
    for *_session, turns in sessions[:runs]:
        for t in turns[:BATCH]:
            mem.add_source(t, scope=SCOPE)
        with mem._lock:
            t0 = time.perf_counter()
            batch, _ = pipeline._ingest_batch(mem, 200, None)
            whole.append((time.perf_counter() - t0) * 1000)
            if hasattr(pipeline, "_pages_first") and batch is not None:
                pages, _ = mem.list_pages(SCOPE)
                t0 = time.perf_counter()
                pipeline._pages_first(mem, SCOPE, pages, batch.sources, [])
                first.append((time.perf_counter() - t0) * 1000)
        with mem.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM inbox")
    return round(statistics.median(whole), 1), round(statistics.median(first), 1) if first else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=LOCOMO_DEV)
    ap.add_argument("--batches", type=int, default=200)
    args = ap.parse_args()
    data = json.loads(args.data.read_text())
    sessions = _sessions(data)
    from runtime_host.memory_jobs import model_synthesize
    from runtime_host.providers import Route

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(lambda req: Text("[]")) as srv:
        mem = open_memory(Path(tmp) / "memory", embedder=None)
        seed = mem.add_source("LoCoMo's observations, summaries and events of its chats.", scope=SCOPE)
        made = _pages(data, seed)[:500]
        mem.write_pages([p for p, _ in made], author="agent:wiki-writer")
        of = {p.key: at for p, at in made}
        hits, shares = [], []
        for cid, n, _date, turns in sessions[: args.batches]:
            with mem.catalog.tx(immediate=True) as db:
                db.execute("DELETE FROM inbox")
            for t in turns[:BATCH]:
                mem.add_source(t, scope=SCOPE)
            with mem._lock:
                batch, _ = pipeline._ingest_batch(mem, 200, None)
            assert batch is not None
            mine = {k for k, at in of.items() if at == (cid, n)}
            shown = {p.key for p in batch.existing_pages[SCOPE][:50]}
            if mine:
                hits.append(bool(mine & shown))
                shares.append(len(mine & shown) / len(mine))
            if "prompt_chars" not in out and len(batch.sources) == BATCH:
                model_synthesize(Route("fake", "openai-compatible", srv.base_url, "fake-1", None))(batch)
                out["prompt_chars"] = len(srv.requests[-1].last_user)
        with mem.catalog.tx(immediate=True) as db:
            db.execute("DELETE FROM inbox")
        out["session_page_shown_rate"] = round(sum(hits) / len(hits), 3)
        out["session_pages_shown"] = round(sum(shares) / len(shares), 3)
        out["batches"] = len(hits)
        out["batch_ms_500"], out["pages_first_ms_500"] = _timed_batches(mem, sessions, 10)
        more = [Page(f"{p.title} ({k})", SCOPE, p.category, p.body, p.citations) for k in range(1, 10) for p, _ in made]
        mem.write_pages(more, author="agent:wiki-writer")
        out["pages"] = len(mem.list_pages(SCOPE)[0])
        out["batch_ms_5000"], out["pages_first_ms_5000"] = _timed_batches(mem, sessions, 10)
        mem.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
