"""A scriptable fake model: a real HTTP server on 127.0.0.1 speaking a provider's wire format.

The script is a function from the request (parsed JSON body, plus headers) to the next answer:
Text, ToolCalls, Error, Raw (any bytes, for malformed streams), or Hang. `Script([...])` answers
from a list in order. Every model request is recorded, so tests can count model calls.

Wire formats, each built from the vendor's published documentation:
- "openai": POST /v1/chat/completions; SSE `data: {chunk}` ... `data: [DONE]`; tool-call arguments
  in fragments keyed by index; errors {"error": {"message", "type", "code"}}.
- "anthropic": POST /v1/messages (x-api-key + anthropic-version headers); SSE events message_start,
  content_block_start/delta/stop (text_delta, input_json_delta), ping, message_delta, message_stop;
  errors {"type": "error", "error": {"type", "message"}}.
- "gemini": POST /v1beta/models/{model}:generateContent or :streamGenerateContent?alt=sse
  (x-goog-api-key); each SSE event is a whole GenerateContentResponse, the last with finishReason;
  function calls arrive whole, the first carrying a thoughtSignature; without alt=sse the stream is
  one JSON array; errors {"error": {"code", "message", "status", "details"}} (a wrong key is a 400
  with reason API_KEY_INVALID, as Google answers).
GET {base_url}/models lists `models` in the wire's own shape (local-server discovery probes this). With `shows`
(model -> what Ollama's POST /api/show answers of it: "capabilities", "details" with "family"), that too is answered.
`list_fault` (an Error) makes the model list answer that error instead, in the wire's error shape.

Embeddings: POST /v1/embeddings (openai: {"model", "input": [...]} -> {"object": "list", "data":
[{"object": "embedding", "embedding": [...], "index": i}], "model", "usage"}) and POST
/v1beta/models/{model}:batchEmbedContents (gemini: {"requests": [{"model", "content": {"parts": [{"text"}]}}]}
-> {"embeddings": [{"values": [...]}]}). Vectors are a normalised hashed bag of words (with a few words
sharing a concept, see CONCEPTS), so search by meaning works in tests. `embedded` records every input
embedded (`embed_requests` the requests); `embed_fault` makes the endpoint fail: an Error, a Hang, or "wrong-dims", "nan", "wrong-count",
"half-size" (every vector of half the usual size), "drip" (headers at once, then the body a byte every half second).
`embed_faults` fails the embedding requests to come, in order, each entry once (an Error or a Hang; None answers),
before `embed_fault`: a provider that asks once, part-way, to slow down.
`embed_per_text_s` makes each text of a request add that long before the answer (a model server on a CPU).
`embed_max_chars` makes it refuse a request holding a longer input (HTTP 400, as real providers refuse an input
past their model's context: OpenAI's 8,192 tokens, Gemini's 2,048), the other inputs of that request with it.

Like the real APIs, every wire refuses (HTTP 400, before any model runs) a conversation whose tool
calls and results do not pair: a call with no result right after it, or a result with no call
before it. `pairing_errors` keeps the refusals, so a test or benchmark can count them.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WIRES = ("openai", "anthropic", "gemini")


@dataclass
class Text:
    text: str
    chunk_chars: int = 4
    delay_s: float = 0.0  # between chunks
    finish: str = "stop"  # "length": the answer was cut off at the model's limit (openai wire)


@dataclass
class ToolCalls:
    calls: list[tuple[str, dict[str, Any]]]
    text: str = ""


@dataclass
class Error:
    status: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)
    retry_after_s: float | None = None  # 429: Retry-After header (openai, anthropic) or RetryInfo in the body (gemini)


@dataclass
class Raw:
    body: bytes
    content_type: str = "text/event-stream"


@dataclass
class Hang:
    seconds: float


@dataclass
class Endless:
    """A text answer that never ends: `chunk` again and again until the client hangs up (openai wire)."""
    chunk: str = "and on "
    delay_s: float = 0.0


Answer = Text | ToolCalls | Error | Raw | Hang | Endless


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    wire: str = "openai"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the wire sent it: messages (openai, anthropic) or contents (gemini)."""
        if self.wire == "gemini":
            return self.body.get("contents", [])
        return self.body.get("messages", [])

    @property
    def model(self) -> str:
        if self.wire == "gemini":
            m = re.search(r"/models/([^/:]+):", self.path)
            return m.group(1) if m else ""
        return self.body.get("model") or ""

    @property
    def streaming(self) -> bool:
        if self.wire == "gemini":
            return ":streamGenerateContent" in self.path
        return bool(self.body.get("stream"))

    @property
    def system(self) -> str:
        if self.wire == "anthropic":
            s = self.body.get("system") or ""
            return s if isinstance(s, str) else "".join(b.get("text", "") for b in s)
        if self.wire == "gemini":
            parts = (self.body.get("systemInstruction") or {}).get("parts") or []
            return "".join(p.get("text", "") for p in parts)
        return "\n".join(m.get("content") or "" for m in self.messages if m.get("role") == "system")

    @property
    def last_user(self) -> str:
        for m in reversed(self.messages):
            if m.get("role") != "user":
                continue
            if self.wire == "gemini":
                texts = [p["text"] for p in m.get("parts", []) if "text" in p]
            else:
                c = m.get("content")
                if isinstance(c, str):
                    return c
                if self.wire != "anthropic":
                    return json.dumps(c)
                texts = [b.get("text", "") for b in c or [] if b.get("type") == "text"]
            if texts:
                return "".join(texts)
        return ""

    @property
    def tool_results(self) -> list[str]:
        out: list[str] = []
        for m in self.messages:
            if self.wire == "openai" and m.get("role") == "tool":
                out.append(m.get("content", ""))
            elif self.wire == "anthropic" and m.get("role") == "user" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        c = b.get("content", "")
                        out.append(c if isinstance(c, str) else "".join(x.get("text", "") for x in c))
            elif self.wire == "gemini":
                for p in m.get("parts", []):
                    if "functionResponse" in p:
                        resp = p["functionResponse"].get("response") or {}
                        out.append(str(resp.get("output", resp.get("error", json.dumps(resp)))))
        return out


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


TOOL_ASK = re.compile(r"/tool (\w+) (\{.*\})", re.S)


def _answers_a_tool(req: Request) -> bool:
    """Whether the request's last message carries a tool's result (the model is asked to go on after its call)."""
    last = req.messages[-1] if req.messages else {}
    if req.wire == "openai":
        return last.get("role") == "tool"
    if req.wire == "anthropic":
        content = last.get("content")
        return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    return any("functionResponse" in p for p in last.get("parts", []))


def echo_tools(req: Request) -> Answer:
    """`echo`, and a person's message `/tool NAME {json arguments}` makes the model call that tool; the tool's
    result comes back whole as its answer (the bundle's self-test reads a household page in a frozen worker so)."""
    if _answers_a_tool(req):
        return Text(req.tool_results[-1])
    asked = TOOL_ASK.fullmatch(req.last_user.strip())
    if asked:
        return ToolCalls([(asked.group(1), json.loads(asked.group(2)))])
    return echo(req)


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
    413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}


EMBED_DIM = 64
# Words the fake embedding model treats as one concept, so a question can find a note by meaning alone.
CONCEPTS = {"dentist": "tooth", "dental": "tooth", "teeth": "tooth", "tooth": "tooth", "doctor": "tooth",
            "plumber": "pipe", "leak": "pipe", "pipes": "pipe", "pipe": "pipe", "sink": "pipe"}


def fake_vector(text: str, dim: int = EMBED_DIM) -> list[float]:
    """The fake embedding of a text: each word (or its concept) hashed to a dimension, then normalised."""
    import hashlib
    import math

    vec = [0.0] * dim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        key = CONCEPTS.get(word, word)
        vec[int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a test that stopped reading a broken stream) is not an error here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def fake_signature() -> str:
    """An opaque base64 value like Gemini's thoughtSignature."""
    return base64.b64encode(uuid.uuid4().bytes * 3).decode()


class FakeModelServer:
    def __init__(self, script: Callable[[Request], Answer] = echo, wire: str = "openai", port: int = 0,
                 key: str | None = None, models: list[str] | None = None, shows: dict[str, dict[str, Any]] | None = None):
        if wire not in WIRES:
            raise ValueError(f"unknown wire format {wire!r}; known: {', '.join(WIRES)}")
        self.script = script
        self._port = port
        self.wire = wire
        self.key = key  # when set, requests must carry it the way the wire expects
        self.models = models or ["fake-model"]
        self.shows = shows  # when set, POST /api/show answers as Ollama does: what it says of each model it lists
        self.requests: list[Request] = []
        self.signatures: list[str] = []  # gemini: thoughtSignatures handed out, in order
        self.pairing_errors: list[str] = []  # requests refused because tool calls and results did not pair
        self.embedded: list[str] = []  # every text the embeddings endpoint received, in order
        self.embed_requests: list[Request] = []  # the embedding requests answered (headers show the key sent)
        self.embed_fault: Error | Hang | str | None = None  # see the module docstring
        self.embed_faults: list[Error | Hang | None] = []  # see the module docstring
        self.list_fault: Error | None = None  # see the module docstring
        self.embed_delay_s = 0.0  # each embedding answer waits this long (to watch progress)
        self.embed_per_text_s = 0.0  # and this long more for each text it embeds
        self.embed_max_chars: int | None = None  # see the module docstring
        self.embed_refused: list[str] = []  # the inputs too long for it (each time it refused one)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        prefix = "/v1beta" if self.wire == "gemini" else "/v1"
        return f"http://127.0.0.1:{self.port}{prefix}"

    def start(self) -> FakeModelServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                fake._list_models(self)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body, fake.wire)
                if fake.shows is not None and urlsplit(self.path).path == "/api/show":
                    shown = fake.shows.get(str(body.get("model")))
                    if shown is None:
                        return fake._send(self, 404, json.dumps({"error": f"model '{body.get('model')}' not found"}).encode(),
                                          "application/json")
                    return fake._send(self, 200, json.dumps(shown).encode(), "application/json")
                if re.search(r"(/embeddings|:batchEmbedContents)$", urlsplit(self.path).path):
                    return fake._embeddings(self, req)
                refusal = fake._refuse(req)
                if refusal is not None:
                    return fake._send(self, *refusal)
                fake.requests.append(req)
                answer = fake.script(req)
                fake._answer(self, req, answer)

        self._server = _QuietServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-model", daemon=True)
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

    # -- requests the real API would refuse before any model runs (not recorded as model calls)
    def _refuse(self, req: Request) -> tuple[int, bytes, str] | None:
        path = urlsplit(req.path).path
        if self.wire == "openai":
            if not path.endswith("/chat/completions"):
                return self._error_body(Error(404, f"Unknown request URL: POST {path}"))[:3]
            if self.key and req.headers.get("authorization") != f"Bearer {self.key}":
                return self._error_body(Error(401, "Incorrect API key provided"))[:3]
        elif self.wire == "anthropic":
            if not path.endswith("/messages"):
                return self._error_body(Error(404, "Not Found"))[:3]
            if self.key and req.headers.get("x-api-key") != self.key:
                return self._error_body(Error(401, "invalid x-api-key"))[:3]
            if not req.headers.get("anthropic-version"):
                return self._error_body(Error(400, "anthropic-version: header is required"))[:3]
            if not req.body.get("max_tokens"):
                return self._error_body(Error(400, "max_tokens: Field required"))[:3]
        elif not re.search(r"/models/[^/:]+:(generateContent|streamGenerateContent)$", path):
            return self._error_body(Error(404, f"Method not found: {path}"))[:3]
        else:
            if self.key and req.headers.get("x-goog-api-key") != self.key:
                body = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                  "status": "INVALID_ARGUMENT",
                                  "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                               "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
                return 400, json.dumps(body).encode(), "application/json"
        unpaired = unpaired_tool_calls(req)
        if unpaired:
            self.pairing_errors.append(unpaired)
            return self._error_body(Error(400, unpaired))[:3]
        return None

    def _list_models(self, h: BaseHTTPRequestHandler) -> None:
        if not urlsplit(h.path).path.rstrip("/").endswith("/models"):
            return self._send(h, 404, b'{"error": {"message": "not found"}}', "application/json")
        if self.list_fault is not None:
            status, body_bytes, ctype, headers = self._error_body(self.list_fault)
            return self._send(h, status, body_bytes, ctype, headers)
        if self.key:  # like the real servers: listing models needs the key too
            sent = {"openai": (h.headers.get("authorization") or "").removeprefix("Bearer "),
                    "anthropic": h.headers.get("x-api-key"), "gemini": h.headers.get("x-goog-api-key")}[self.wire]
            if sent != self.key:
                status, body_bytes, ctype = self._error_body(Error(401, "Incorrect API key provided"))[:3]
                return self._send(h, status, body_bytes, ctype)
        if self.wire == "gemini":
            body: dict[str, Any] = {"models": [{"name": f"models/{m}", "supportedGenerationMethods": ["generateContent"]}
                                               for m in self.models]}
        elif self.wire == "anthropic":
            body = {"data": [{"type": "model", "id": m, "display_name": m} for m in self.models], "has_more": False}
        else:
            body = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]}
        self._send(h, 200, json.dumps(body).encode(), "application/json")

    # -- embeddings
    def _embeddings(self, h: BaseHTTPRequestHandler, req: Request) -> None:
        gemini = self.wire == "gemini"
        sent = req.headers.get("x-goog-api-key") if gemini else (req.headers.get("authorization") or "").removeprefix("Bearer ")
        if self.key and sent != self.key:
            return self._send(h, *self._error_body(Error(401, "Incorrect API key provided")))
        if gemini:
            texts = ["".join(p.get("text", "") for p in (r.get("content") or {}).get("parts", []))
                     for r in req.body.get("requests") or []]
        else:
            raw = req.body.get("input")
            texts = [raw] if isinstance(raw, str) else list(raw or [])
        if not texts or not all(isinstance(t, str) for t in texts):
            return self._send(h, *self._error_body(Error(400, "'input' must be a string or a list of strings")))
        fault = self.embed_faults.pop(0) if self.embed_faults else None
        fault = fault or self.embed_fault
        if isinstance(fault, Error | Hang):
            return self._answer(h, req, fault)
        if self.embed_max_chars is not None and (long := [t for t in texts if len(t) > self.embed_max_chars]):
            self.embed_refused.extend(long)
            tokens = max(len(t) for t in long) // 4
            limit = self.embed_max_chars // 4
            return self._send(h, *self._error_body(Error(400, (
                f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({limit})." if gemini
                else f"This model's maximum context length is {limit} tokens, however you requested {tokens} tokens "
                     f"({tokens} in your prompt). Please reduce your prompt."))))
        if self.embed_delay_s or self.embed_per_text_s:
            time.sleep(self.embed_delay_s + self.embed_per_text_s * len(texts))
        self.embedded.extend(texts)
        self.embed_requests.append(req)
        vecs = [fake_vector(t) for t in texts]
        if fault == "wrong-dims":
            vecs = [v[: 8 + n % 2] for n, v in enumerate(vecs)]
        elif fault == "nan":
            vecs = [[float("nan")] * len(v) for v in vecs]
        elif fault == "wrong-count":
            vecs = vecs[:-1]
        elif fault == "half-size":
            vecs = [fake_vector(t, EMBED_DIM // 2) for t in texts]
        if gemini:
            body: dict[str, Any] = {"embeddings": [{"values": v} for v in vecs]}
        else:
            tokens = sum(len(t.split()) for t in texts)
            body = {"object": "list", "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vecs)],
                    "model": req.body.get("model") or "fake-embed", "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        payload = json.dumps(body, allow_nan=True).encode()
        if fault == "drip":
            return self._drip(h, payload)
        self._send(h, 200, payload, "application/json")

    @staticmethod
    def _drip(h: BaseHTTPRequestHandler, body: bytes) -> None:
        """A whole answer announced at once, then sent a byte every half second (no read ever times out)."""
        try:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            for b in body:
                h.wfile.write(bytes([b]))
                h.wfile.flush()
                time.sleep(0.5)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- answers
    def _error_body(self, e: Error) -> tuple[int, bytes, str, dict[str, str]]:
        headers = dict(e.headers)
        if self.wire == "anthropic":
            body: dict[str, Any] = {"type": "error",
                                    "error": {"type": _ANTHROPIC_ERROR_TYPES.get(e.status, "api_error"), "message": e.message},
                                    "request_id": "req_" + uuid.uuid4().hex[:20]}
        elif self.wire == "gemini":
            err: dict[str, Any] = {"code": e.status, "message": e.message, "status": _GOOGLE_STATUS.get(e.status, "UNKNOWN")}
            if e.retry_after_s is not None:
                err["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{e.retry_after_s:g}s"}]
            body = {"error": err}
        else:
            body = {"error": {"message": e.message, "type": "fake_error"}}
        if e.retry_after_s is not None and self.wire != "gemini":
            headers.setdefault("retry-after", f"{e.retry_after_s:g}")
        return e.status, json.dumps(body).encode(), "application/json", headers

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, answer: Answer) -> None:
        if isinstance(answer, Hang):
            time.sleep(answer.seconds)
            return self._send(h, 504, b'{"error": {"message": "hung"}}', "application/json")
        if isinstance(answer, Error):
            return self._send(h, *self._error_body(answer))
        if isinstance(answer, Raw):
            return self._send(h, 200, answer.body, answer.content_type)
        if isinstance(answer, Endless):
            return self._answer_endless(h, req, answer)
        if self.wire == "anthropic":
            return self._answer_anthropic(h, req, answer)
        if self.wire == "gemini":
            return self._answer_gemini(h, req, answer)
        return self._answer_openai(h, req, answer)

    # -- wire format: openai
    def _answer_openai(self, h: BaseHTTPRequestHandler, req: Request, answer: Text | ToolCalls) -> None:
        model = req.body.get("model") or "fake-model"
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        if not req.streaming:
            return self._send(h, 200, json.dumps(self._full(answer, model, cid)).encode(), "application/json")
        self._begin_stream(h)

        def chunk(obj: dict[str, Any] | str) -> None:
            data = obj if isinstance(obj, str) else json.dumps(obj)
            self._chunk(h, f"data: {data}\n\n".encode())

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
                chunk(delta({}, answer.finish))
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
            self._end_stream(h)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _answer_endless(self, h: BaseHTTPRequestHandler, req: Request, answer: Endless) -> None:
        self._begin_stream(h)
        piece = {"id": "chatcmpl-endless", "object": "chat.completion.chunk", "model": req.model or "fake-model",
                 "choices": [{"index": 0, "delta": {"content": answer.chunk}, "finish_reason": None}]}
        data = f"data: {json.dumps(piece)}\n\n".encode()
        try:
            while self._server is not None:
                self._chunk(h, data)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
        except (BrokenPipeError, ConnectionResetError, OSError):
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

    # -- wire format: anthropic (Messages API)
    def _answer_anthropic(self, h: BaseHTTPRequestHandler, req: Request, answer: Text | ToolCalls) -> None:
        model = req.body.get("model") or "fake-model"
        mid = "msg_" + uuid.uuid4().hex[:24]
        text = answer.text
        calls = answer.calls if isinstance(answer, ToolCalls) else []
        tool_ids = [f"toolu_{uuid.uuid4().hex[:24]}" for _ in calls]
        stop = "tool_use" if calls else "end_turn"
        usage = {"input_tokens": 10, "output_tokens": max(1, len(text) // 4 + 5 * len(calls))}
        if not req.streaming:
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            content += [{"type": "tool_use", "id": tid, "name": n, "input": a} for tid, (n, a) in zip(tool_ids, calls, strict=True)]
            body = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                    "stop_reason": stop, "stop_sequence": None, "usage": usage}
            return self._send(h, 200, json.dumps(body).encode(), "application/json")
        self._begin_stream(h)

        def event(name: str, obj: dict[str, Any]) -> None:
            self._chunk(h, f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())

        try:
            event("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})
            index = 0
            if text:
                event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
                event("ping", {"type": "ping"})
                step = max(1, answer.chunk_chars) if isinstance(answer, Text) else len(text)
                for i in range(0, len(text), step):
                    event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": text[i:i + step]}})
                    if isinstance(answer, Text) and answer.delay_s:
                        time.sleep(answer.delay_s)
                event("content_block_stop", {"type": "content_block_stop", "index": 0})
                index = 1
            for tid, (name, args) in zip(tool_ids, calls, strict=True):
                event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}})
                arg_text = json.dumps(args)
                half = len(arg_text) // 2
                for piece in ("", arg_text[:half], arg_text[half:]):
                    event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "input_json_delta", "partial_json": piece}})
                event("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                    "usage": {"output_tokens": usage["output_tokens"]}})
            event("message_stop", {"type": "message_stop"})
            self._end_stream(h)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- wire format: gemini (generateContent / streamGenerateContent)
    def _answer_gemini(self, h: BaseHTTPRequestHandler, req: Request, answer: Text | ToolCalls) -> None:
        model = req.model or "fake-model"
        rid = uuid.uuid4().hex[:16]
        usage = {"promptTokenCount": 10, "candidatesTokenCount": max(1, len(answer.text) // 4), "totalTokenCount": 20}

        def response(parts: list[dict[str, Any]], finish: str | None, with_usage: bool) -> dict[str, Any]:
            cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            obj: dict[str, Any] = {"candidates": [cand], "modelVersion": model, "responseId": rid}
            if with_usage:
                obj["usageMetadata"] = usage
            return obj

        def call_parts() -> list[dict[str, Any]]:
            parts: list[dict[str, Any]] = []
            for i, (name, args) in enumerate(answer.calls if isinstance(answer, ToolCalls) else []):
                part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
                if i == 0:  # Gemini 3 signs the first function call of a step
                    sig = fake_signature()
                    self.signatures.append(sig)
                    part["thoughtSignature"] = sig
                parts.append(part)
            return parts

        if isinstance(answer, Text):
            step = max(1, answer.chunk_chars)
            pieces = [answer.text[i:i + step] for i in range(0, len(answer.text), step)] or [""]
            chunks = [response([{"text": p}], "STOP" if i == len(pieces) - 1 else None, i == len(pieces) - 1)
                      for i, p in enumerate(pieces)]
            delay = answer.delay_s
        else:
            chunks = []
            if answer.text:
                chunks.append(response([{"text": answer.text}], None, False))
            chunks.append(response(call_parts(), "STOP", True))
            delay = 0.0
        if not req.streaming:
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"] if p.get("text") != ""]
            merged = response(_merge_text(parts), "STOP", True)
            return self._send(h, 200, json.dumps(merged).encode(), "application/json")
        if parse_qs(urlsplit(req.path).query).get("alt") != ["sse"]:
            # Without alt=sse the REST stream is one JSON array, written as it grows.
            return self._send(h, 200, json.dumps(chunks).encode(), "application/json")
        self._begin_stream(h)
        try:
            for c in chunks:
                self._chunk(h, f"data: {json.dumps(c)}\r\n\r\n".encode())
                if delay:
                    time.sleep(delay)
            self._end_stream(h)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- HTTP plumbing
    @staticmethod
    def _begin_stream(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, payload: bytes) -> None:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        h.wfile.flush()

    @staticmethod
    def _end_stream(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

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


def unpaired_tool_calls(req: Request) -> str | None:
    """The provider's own 400 message when tool calls and results do not pair, else None."""
    if req.wire == "anthropic":
        return _unpaired_anthropic(req.messages)
    if req.wire == "gemini":
        return _unpaired_gemini(req.messages)
    return _unpaired_openai(req.messages)


def _unpaired_openai(messages: list[dict[str, Any]]) -> str | None:
    waiting: list[str] = []
    for m in messages:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        f"with 'tool_calls' (tool_call_id {m.get('tool_call_id')!r}).")
            waiting.remove(m.get("tool_call_id"))
            continue
        if waiting:
            break
        if m.get("role") == "assistant":
            waiting = [tc.get("id") for tc in m.get("tool_calls") or []]
    if waiting:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")
    return None


def _unpaired_anthropic(messages: list[dict[str, Any]]) -> str | None:
    asked: list[str] = []
    for i, m in enumerate(messages):
        blocks = m.get("content") if isinstance(m.get("content"), list) else []
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if m.get("role") == "user":
            for j, rid in enumerate(results):
                if rid not in asked:
                    return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {rid}. "
                            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
        missing = [a for a in asked if a not in results]
        if missing:
            return (f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                    "next message.")
        asked = [b.get("id") for b in blocks if b.get("type") == "tool_use"] if m.get("role") == "assistant" else []
    if asked:
        return (f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(asked)}. Each `tool_use` block must have a corresponding `tool_result` block in "
                "the next message.")
    return None


def _unpaired_gemini(contents: list[dict[str, Any]]) -> str | None:
    calls = 0
    for c in contents:
        parts = c.get("parts") or []
        responses = sum(1 for p in parts if "functionResponse" in p)
        if responses and not calls:
            return "Please ensure that function response turn comes immediately after a function call turn."
        if calls and responses != calls:
            return ("Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.")
        calls = sum(1 for p in parts if "functionCall" in p) if c.get("role") == "model" else 0
    if calls:
        return ("Please ensure that the number of function response parts is equal to the number of function call "
                "parts of the function call turn.")
    return None


def _merge_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text parts as one, the way a non-streamed Gemini answer arrives."""
    out: list[dict[str, Any]] = []
    for p in parts:
        if "text" in p and out and "text" in out[-1] and len(out[-1]) == 1:
            out[-1] = {"text": out[-1]["text"] + p["text"]}
        else:
            out.append(dict(p))
    return out


def main() -> None:
    """`python -m tests.helpers.fake_model`: an echoing fake model (``echo_tools``) for trying the app by hand and
    for the bundle's self-test (packaging/smoke.py)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--wire", choices=WIRES, default="openai")
    args = ap.parse_args()
    srv = FakeModelServer(echo_tools, wire=args.wire, port=args.port).start()
    print(srv.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
