"""The HTTP side every wire format shares: one connection-level retry, errors people can act on.

Rule (ARCHITECTURE.md): a connection failure gets exactly one retry; an HTTP error answer is never
retried, so a retry can never repeat a side effect on the provider's side.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from runtime_host.providers import ProviderError, Route, check_address_allowed

TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=10.0)
_clients: dict[bool, httpx.Client] = {}


def client() -> httpx.Client:
    """One pooled client per worker process (keep-alive makes warm turns fast)."""
    c = _clients.get(True)
    if c is None:
        c = _clients[True] = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    return c


def _retry_after(resp: httpx.Response, info: _ErrorInfo | None = None) -> float | None:
    """Seconds to wait: the Retry-After header (OpenAI, Anthropic), else the body's RetryInfo (Google)."""
    value = resp.headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass  # an HTTP-date: rare for model APIs; fall through to the body
    if info is not None and info.retry_delay is not None:
        return info.retry_delay
    return None


class _ErrorInfo:
    """What an error body says, whichever vendor shaped it.

    OpenAI: {"error": {"message", "type", "code"}}; Anthropic: {"type": "error", "error": {"type",
    "message"}}; Google: {"error": {"code", "message", "status", "details": [...]}} (a JSON list of
    those when a non-SSE stream fails).
    """

    def __init__(self, message: str = "", code: str = "", reasons: tuple[str, ...] = (), retry_delay: float | None = None):
        self.message = message
        self.code = code
        self.reasons = reasons
        self.retry_delay = retry_delay


def _parse_error(body: bytes) -> _ErrorInfo:
    text = body[:4000].decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return _ErrorInfo(text[:200])
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]
    if not isinstance(obj, dict):
        return _ErrorInfo(text[:200])
    err = obj.get("error")
    if isinstance(err, str):
        return _ErrorInfo(err[:300])
    if not isinstance(err, dict):
        return _ErrorInfo(str(obj.get("message") or text)[:300])
    code = str(err.get("status") or err.get("type") or err.get("code") or "")
    reasons: list[str] = []
    delay: float | None = None
    for d in err.get("details") or []:
        if not isinstance(d, dict):
            continue
        if d.get("reason"):
            reasons.append(str(d["reason"]))
        if str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = _duration_seconds(d.get("retryDelay"))
    message = str(err.get("message") or code or "")[:300]
    return _ErrorInfo(message, code, tuple(reasons), delay)


def _duration_seconds(value: Any) -> float | None:
    """Parses a protobuf Duration in JSON form ("37s", "1.5s")."""
    if not isinstance(value, str) or not value.endswith("s"):
        return None
    try:
        return max(0.0, float(value[:-1]))
    except ValueError:
        return None


def error_from_response(route: Route, resp: httpx.Response, body: bytes) -> ProviderError:
    """Maps an HTTP error answer to a ProviderError whose message says what to do next."""
    info = _parse_error(body)
    detail = info.message
    who = f"Provider {route.provider!r} ({route.model or 'default model'})"
    status = resp.status_code
    # Google answers a wrong key with 400 INVALID_ARGUMENT + reason API_KEY_INVALID, not 401.
    bad_key = status == 400 and ("API_KEY_INVALID" in info.reasons or "API key not valid" in detail)
    if status in (401, 403) or bad_key:
        return ProviderError(
            "auth",
            f"{who} refused the key (HTTP {status}{': ' + detail if detail else ''}). "
            f"Check or replace the key in Settings → Providers, or run "
            f"`python -m runtime_host provider add {route.provider} --key-from-stdin`.",
            status=status,
        )
    if status == 429:
        ra = _retry_after(resp, info)
        wait = f" Try again in {ra:g} s." if ra is not None else " Try again in a moment."
        return ProviderError(
            "rate_limit",
            f"{who} is rate-limiting requests (HTTP 429{': ' + detail if detail else ''}).{wait}",
            status=status,
            retry_after=ra,
        )
    if status == 404:
        return ProviderError(
            "not_found",
            f"{who} does not know this model or address (HTTP 404{': ' + detail if detail else ''}). "
            "Check the model name and base URL in Settings → Providers.",
            status=status,
        )
    if status >= 500:
        # Anthropic's 529 overloaded_error lands here too: a server-side condition, so a fallback may try.
        return ProviderError(
            "server",
            f"{who} had a server error (HTTP {status}{': ' + detail if detail else ''}). "
            "Hearth does not retry an error answer, so nothing ran twice; try again later.",
            status=status,
        )
    return ProviderError(
        "bad_request",
        f"{who} rejected the request (HTTP {status}{': ' + detail if detail else ''}).",
        status=status,
    )


def _error_detail(body: bytes) -> str:
    """The human part of an error body in any vendor's shape (kept for callers of the old name)."""
    return _parse_error(body).message


def stream_error(provider: str, err: Any) -> ProviderError:
    """An error reported inside a 200 stream (Anthropic `event: error`, an OpenAI/Google error chunk)."""
    if isinstance(err, dict):
        code = str(err.get("type") or err.get("status") or err.get("code") or "")
        msg = str(err.get("message") or code or "unknown error")
    else:
        code, msg = "", str(err)
    if code in ("rate_limit_error", "RESOURCE_EXHAUSTED", "rate_limit_exceeded", "429"):
        kind = "rate_limit"
    elif code in ("authentication_error", "permission_error", "UNAUTHENTICATED", "PERMISSION_DENIED"):
        kind = "auth"
    elif code in ("invalid_request_error", "INVALID_ARGUMENT", "request_too_large"):
        kind = "bad_request"
    else:  # overloaded_error, api_error, INTERNAL, UNAVAILABLE, unknown: the provider's side
        kind = "server"
    label = f" ({code})" if code else ""
    return ProviderError(
        kind,
        f"Provider {provider!r} reported an error in the middle of its answer{label}: {msg[:300]}. "
        "Try again, or pick another model.",
    )


# One model answer is bounded whatever the model sends: its size on the wire and how long it streams.
MAX_ANSWER_WIRE_CHARS = 32 * 1024 * 1024
MAX_ANSWER_S = 600.0
# Of an error answer only the start is read: it names the error (error_from_response looks at 4000 chars).
ERROR_BODY_BYTES = 64 * 1024


def _check_bounds(route: Route, size: int, start: float, max_bytes: int, max_s: float) -> None:
    """Raises the "cut it off" error once one answer passed its size or its time bound."""
    if size > max_bytes:
        raise ProviderError("too_long", f"Provider {route.provider!r} sent an answer of more than "
                            f"{max_bytes / 1048576:g} MB without ending it, so Hearth cut it off. "
                            "Ask for something shorter, or pick another model.")
    if time.monotonic() - start > max_s:
        raise ProviderError("too_long", f"Provider {route.provider!r} kept sending one answer for more than "
                            f"{max_s:g} s without ending it, so Hearth cut it off. Try again, or pick "
                            "another model.")


def bounded_lines(resp: httpx.Response, route: Route) -> Iterator[str]:
    """The lines of a streamed answer, ended with a clear error if it passes its size or time bound."""
    start = time.monotonic()
    size = 0
    for line in resp.iter_lines():
        size += len(line) + 1
        _check_bounds(route, size, start, MAX_ANSWER_WIRE_CHARS, MAX_ANSWER_S)
        yield line


def bounded_body(resp: httpx.Response, route: Route, *, max_bytes: int | None = None,
                 max_s: float | None = None, head: int | None = None) -> bytes:
    """The whole body of a one-piece answer (a non-streaming call, a model list), under the same bounds as a
    stream: past ``max_bytes`` (default 32 MB) or ``max_s`` (default 600 s) it ends with a clear error.
    With ``head``, only the first ``head`` bytes are wanted: reading stops there without an error."""
    limit = MAX_ANSWER_WIRE_CHARS if max_bytes is None else max_bytes
    seconds = MAX_ANSWER_S if max_s is None else max_s
    start = time.monotonic()
    parts: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if head is not None and size >= head:
            return b"".join(parts)[:head]
        _check_bounds(route, size, start, limit, seconds)
    return b"".join(parts)


@contextmanager
def open_stream(route: Route, url: str, headers: dict[str, str], body: dict[str, Any],
                timeout: float | None = None) -> Iterator[httpx.Response]:
    """POSTs and yields a streaming response with a 2xx status; raises ProviderError otherwise.
    ``timeout`` (seconds) bounds each phase of this one request instead of the client's TIMEOUT."""
    check_address_allowed(url)
    payload = json.dumps(body).encode()
    attempt = 0
    while True:
        attempt += 1
        try:
            req = client().build_request("POST", url, headers=headers, content=payload,
                                         timeout=httpx.Timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT)
            resp = client().send(req, stream=True)
            break
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            if attempt == 1:
                time.sleep(0.2)
                continue
            raise ProviderError(
                "unreachable",
                f"Could not connect to provider {route.provider!r} at {route.base_url} ({_short(exc)}), "
                "also after one retry. Is the server running and the address right?",
            ) from None
        except httpx.TimeoutException as exc:
            raise ProviderError(
                "timeout", f"Provider {route.provider!r} did not answer in time ({_short(exc)})."
            ) from None
    try:
        if resp.status_code >= 400:
            raise error_from_response(route, resp, bounded_body(resp, route, head=ERROR_BODY_BYTES))
        yield resp
    except httpx.TimeoutException:
        raise ProviderError(
            "timeout",
            f"Provider {route.provider!r} stopped sending in the middle of its answer (read timeout).",
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ProviderError(
            "malformed",
            f"Provider {route.provider!r} broke off its answer ({_short(exc)}). Try again.",
        ) from None
    finally:
        resp.close()


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]
