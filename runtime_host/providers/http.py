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


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_response(route: Route, resp: httpx.Response, body: bytes) -> ProviderError:
    """Maps an HTTP error answer to a ProviderError whose message says what to do next."""
    detail = _error_detail(body)
    who = f"Provider {route.provider!r} ({route.model or 'default model'})"
    status = resp.status_code
    if status in (401, 403):
        return ProviderError(
            "auth",
            f"{who} refused the key (HTTP {status}{': ' + detail if detail else ''}). "
            f"Check or replace the key in Settings → Providers, or run "
            f"`python -m runtime_host provider add {route.provider} --key-from-stdin`.",
            status=status,
        )
    if status == 429:
        ra = _retry_after(resp)
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
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return text[:200]
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err.get("type") or "")[:300]
    if isinstance(err, str):
        return err[:300]
    if isinstance(obj, dict) and obj.get("message"):
        return str(obj["message"])[:300]
    return text[:200]


@contextmanager
def open_stream(route: Route, url: str, headers: dict[str, str], body: dict[str, Any]) -> Iterator[httpx.Response]:
    """POSTs and yields a streaming response with a 2xx status; raises ProviderError otherwise."""
    check_address_allowed(url)
    payload = json.dumps(body).encode()
    attempt = 0
    while True:
        attempt += 1
        try:
            req = client().build_request("POST", url, headers=headers, content=payload)
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
            body_bytes = resp.read()
            raise error_from_response(route, resp, body_bytes)
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
