"""Providers benchmark: stream-parsing cost per wire format, and the embedded offline model.

parse_us_per_token: synthetic SSE streams (one text token per event, in each vendor's real event
shape, ending with a parallel tool call) are split into lines and fed through iter_sse and each
wire's parser, with no network; median µs per streamed token over several runs.
The embedded model is measured in a child process (a fresh interpreter, as in a worker):
embedded_load_ms (engine load, after the sha256 check, which is embedded_verify_ms),
embedded_tokens_per_s (generation after the first token), embedded_first_token_ms, embedded_rss_mb
(the child's resident memory after one answer).
Prints one JSON object as its last line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["HEARTH_LOOPBACK_ONLY"] = "1"

TOKENS = 4000
RUNS = 7
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", " Ça", " va", " 🙂"]


def _tokens() -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(TOKENS)]


def openai_stream() -> bytes:
    out = []

    def chunk(d: dict[str, Any], finish: str | None = None) -> None:
        obj = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "gpt-bench",
               "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        out.append(f"data: {json.dumps(obj)}\n\n")

    chunk({"role": "assistant", "content": ""})
    for t in _tokens():
        chunk({"content": t})
    for i, city in enumerate(("Oslo", "Lima")):
        chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                               "function": {"name": "get_weather", "arguments": '{"city": '}}]})
        chunk({"tool_calls": [{"index": i, "function": {"arguments": f'"{city}"}}'}}]})
    chunk({}, "tool_calls")
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def anthropic_stream() -> bytes:
    out = []

    def event(name: str, obj: dict[str, Any]) -> None:
        out.append(f"event: {name}\ndata: {json.dumps(obj)}\n\n")

    event("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-bench", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})
    event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    event("ping", {"type": "ping"})
    for t in _tokens():
        event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
    event("content_block_stop", {"type": "content_block_stop", "index": 0})
    for i, city in enumerate(("Oslo", "Lima"), start=1):
        event("content_block_start", {"type": "content_block_start", "index": i,
                                      "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "get_weather", "input": {}}})
        for piece in ("", '{"city": ', f'"{city}"}}'):
            event("content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "input_json_delta", "partial_json": piece}})
        event("content_block_stop", {"type": "content_block_stop", "index": i})
    event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                            "usage": {"output_tokens": TOKENS}})
    event("message_stop", {"type": "message_stop"})
    return "".join(out).encode()


def gemini_stream() -> bytes:
    out = []

    def response(parts: list[dict[str, Any]], finish: str | None = None) -> None:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        obj = {"candidates": [cand], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 11},
               "modelVersion": "gemini-bench", "responseId": "bench"}
        out.append(f"data: {json.dumps(obj)}\r\n\r\n")

    for t in _tokens():
        response([{"text": t}])
    response([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2lnbmF0dXJl"},
              {"functionCall": {"name": "get_weather", "args": {"city": "Lima"}}}], "STOP")
    return "".join(out).encode()


def parse_cost(make_stream: Callable[[], bytes], make_parser: Callable[[], Any]) -> float:
    from runtime_host.providers import TextDelta, ToolCall
    from runtime_host.providers.sse import iter_sse

    lines = make_stream().decode().splitlines()
    runs = []
    for _ in range(RUNS):
        parser = make_parser()
        n_text = n_calls = 0
        t0 = time.perf_counter()
        for _event, data in iter_sse(lines):
            for ev in parser.feed(data):
                if isinstance(ev, TextDelta):
                    n_text += 1
                elif isinstance(ev, ToolCall):
                    n_calls += 1
            if parser.done:
                break
        for ev in parser.close():
            n_calls += isinstance(ev, ToolCall)
        runs.append((time.perf_counter() - t0) * 1e6 / TOKENS)
        assert n_text == TOKENS and n_calls == 2, (n_text, n_calls)
    return round(statistics.median(runs), 2)


def embedded_child() -> None:
    """Runs in a fresh interpreter: load, verify, answer, and report."""
    import psutil

    from runtime_host.providers import embedded as emb

    path = emb.model_file()
    t0 = time.perf_counter()
    emb.verify_sha256(path)
    verify_ms = (time.perf_counter() - t0) * 1000
    model = emb.EmbeddedModel(path)
    prompt = [{"role": "user", "content": "Write a short paragraph about why people like autumn."}]
    rates, firsts = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        first = None
        usage: dict[str, Any] = {}
        for item in model.generate(prompt):
            if first is None:
                first = time.perf_counter()
            if isinstance(item, dict):
                usage = item
        end = time.perf_counter()
        assert first is not None
        firsts.append((first - t0) * 1000)
        if usage.get("completion_tokens", 0) > 1:
            rates.append((usage["completion_tokens"] - 1) / max(1e-6, end - first))
    print(json.dumps({
        "embedded_verify_ms": round(verify_ms, 1),
        "embedded_load_ms": round(model.load_seconds * 1000, 1),
        "embedded_tokens_per_s": round(statistics.median(rates), 1) if rates else 0.0,
        "embedded_first_token_ms": round(statistics.median(firsts), 1),
        "embedded_rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "embedded_threads": model.threads,
    }))


def main() -> None:
    from runtime_host.providers.anthropic import AnthropicStreamParser
    from runtime_host.providers.gemini import GeminiStreamParser
    from runtime_host.providers.openai_compat import OpenAIStreamParser

    parse = {
        "openai": parse_cost(openai_stream, lambda: OpenAIStreamParser("bench", "gpt-bench")),
        "anthropic": parse_cost(anthropic_stream, lambda: AnthropicStreamParser("bench", "claude-bench")),
        "gemini": parse_cost(gemini_stream, lambda: GeminiStreamParser("bench", "gemini-bench")),
    }
    for wire, us in parse.items():
        print(f"{wire:10s} {us:6.2f} µs parsing per streamed token ({TOKENS} tokens, median of {RUNS})")
    child = subprocess.run([sys.executable, __file__, "--embedded-child"], capture_output=True, text=True, timeout=600)
    if child.returncode != 0:
        sys.stderr.write(child.stderr)
        raise SystemExit(f"embedded model benchmark failed (exit {child.returncode})")
    emb = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"embedded: load {emb['embedded_load_ms']} ms (+ sha256 {emb['embedded_verify_ms']} ms), "
          f"{emb['embedded_tokens_per_s']} tokens/s, first token {emb['embedded_first_token_ms']} ms, "
          f"RSS {emb['embedded_rss_mb']} MB")
    print(json.dumps({"parse_us_per_token": parse, **emb}))


if __name__ == "__main__":
    if "--embedded-child" in sys.argv:
        embedded_child()
    else:
        main()
