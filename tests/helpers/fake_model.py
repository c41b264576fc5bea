"""A scriptable fake model: a real HTTP server on 127.0.0.1 speaking a provider's wire format.

The script is a function from the request (parsed JSON body, plus headers) to the next answer:
Text, ToolCalls, Error, Raw (any bytes, for malformed streams), or Hang. `Script([...])` answers
from a list in order. Every request is recorded, so tests can count model calls.

Wire formats: "openai" (chat completions, SSE with data: [DONE]).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Text:
    text: str
    chunk_chars: int = 4
    delay_s: float = 0.0  # between chunks


@dataclass
class ToolCalls:
    calls: list[tuple[str, dict[str, Any]]]
    text: str = ""


@dataclass
class Error:
    status: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Raw:
    body: bytes
    content_type: str = "text/event-stream"


@dataclass
class Hang:
    seconds: float


Answer = Text | ToolCalls | Error | Raw | Hang


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def last_user(self) -> str:
        for m in reversed(self.messages):
            if m.get("role") == "user":
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
        return ""

    @property
    def tool_results(self) -> list[str]:
        return [m.get("content", "") for m in self.messages if m.get("role") == "tool"]


class Script:
    """Answers from a list in order; the last answer repeats when the list runs out (if repeat_last)."""

    def __init__(self, answers: list[Answer | Callable[[Request], Answer]], repeat_last: bool = False):
        self.answers = list(answers)
        self.repeat_last = repeat_last
        self.i = 0
        self.lock = threading.Lock()

    def __call__(self, req: Request) -> Answer:
        with self.lock:
            if self.i >= len(self.answers):
                if self.repeat_last and self.answers:
                    a = self.answers[-1]
                else:
                    return Error(500, f"fake model script ran out of answers after {self.i}")
            else:
                a = self.answers[self.i]
                self.i += 1
        return a(req) if callable(a) else a


def echo(req: Request) -> Answer:
    return Text(f"You said: {req.last_user}")


class FakeModelServer:
    def __init__(self, script: Callable[[Request], Answer] = echo, wire: str = "openai", port: int = 0):
        self.script = script
        self._port = port
        self.wire = wire
        self.requests: list[Request] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeModelServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                fake.requests.append(req)
                answer = fake.script(req)
                fake._answer(self, req, answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- wire format: openai
    def _answer(self, h: BaseHTTPRequestHandler, req: Request, answer: Answer) -> None:
        if isinstance(answer, Hang):
            time.sleep(answer.seconds)
            return self._send(h, 504, b'{"error": {"message": "hung"}}', "application/json")
        if isinstance(answer, Error):
            body = json.dumps({"error": {"message": answer.message, "type": "fake_error"}}).encode()
            return self._send(h, answer.status, body, "application/json", answer.headers)
        if isinstance(answer, Raw):
            return self._send(h, 200, answer.body, answer.content_type)
        model = req.body.get("model") or "fake-model"
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        stream = bool(req.body.get("stream"))
        if not stream:
            return self._send(h, 200, json.dumps(self._full(answer, model, cid)).encode(), "application/json")
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def chunk(obj: dict[str, Any] | str) -> None:
            data = obj if isinstance(obj, str) else json.dumps(obj)
            payload = f"data: {data}\n\n".encode()
            h.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            h.wfile.flush()

        def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

        try:
            chunk(delta({"role": "assistant", "content": ""}))
            if isinstance(answer, Text):
                t = answer.text
                for i in range(0, len(t), max(1, answer.chunk_chars)):
                    chunk(delta({"content": t[i:i + answer.chunk_chars]}))
                    if answer.delay_s:
                        time.sleep(answer.delay_s)
                chunk(delta({}, "stop"))
            else:
                if answer.text:
                    chunk(delta({"content": answer.text}))
                for idx, (name, args) in enumerate(answer.calls):
                    arg_text = json.dumps(args)
                    half = len(arg_text) // 2
                    chunk(delta({"tool_calls": [{"index": idx, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                                                 "function": {"name": name, "arguments": arg_text[:half]}}]}))
                    chunk(delta({"tool_calls": [{"index": idx, "function": {"arguments": arg_text[half:]}}]}))
                chunk(delta({}, "tool_calls"))
            chunk("[DONE]")
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _full(answer: Answer, model: str, cid: str) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(answer, Text):
            msg["content"] = answer.text
        elif isinstance(answer, ToolCalls):
            msg["content"] = answer.text or None
            msg["tool_calls"] = [
                {"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for n, a in answer.calls
            ]
            finish = "tool_calls"
        return {"id": cid, "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(body)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main() -> None:
    """`python -m tests.helpers.fake_model`: an echoing fake model for trying the app by hand."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = FakeModelServer(echo, port=args.port).start()
    print(srv.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
