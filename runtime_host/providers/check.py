"""Checking a provider before it is saved: does the address answer, is the key accepted, which models it has.

One GET of the wire format's model list (OpenAI-compatible `GET {base}/models` with a Bearer key,
Anthropic `GET {base}/models` with x-api-key, Gemini `GET {base}/models` with x-goog-api-key). A
refused connection is reported at once (no retry: a check is not a turn); errors say what to do next.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runtime_host.providers import ProviderError, Route, check_address_allowed

CONNECT_S = 3.0
READ_S = 10.0
BODY_S = 30.0  # the whole model list (a cloud vendor's can be a few hundred KB)


@dataclass
class CheckResult:
    """What a check found: the models the server lists and whether a key was sent and accepted."""

    models: list[str] = field(default_factory=list)
    key_tested: bool = False

    def summary(self, name: str) -> str:
        shown = ", ".join(self.models[:8]) + (f" and {len(self.models) - 8} more" if len(self.models) > 8 else "")
        key = " The key was accepted." if self.key_tested else ""
        return (f"{name} answered with {len(self.models)} model(s){': ' + shown if shown else ''}.{key}")


def _request(kind: str, base_url: str, key: str | None) -> tuple[str, dict[str, str]]:
    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if key:
        if kind == "anthropic":
            headers["x-api-key"] = key
        elif kind == "gemini":
            headers["x-goog-api-key"] = key
        else:
            headers["Authorization"] = f"Bearer {key}"
    if kind == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
    return url, headers


def _model_ids(kind: str, data: Any) -> list[str]:
    if kind == "gemini":
        items = data.get("models") if isinstance(data, dict) else None
        return [str(m["name"]).removeprefix("models/") for m in items or [] if isinstance(m, dict) and m.get("name")]
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError("no model list")
    return [str(m["id"]) for m in items if isinstance(m, dict) and m.get("id")]


def check_provider(name: str, kind: str, base_url: str, key: str | None = None) -> CheckResult:
    """Lists the server's models with the key; raises ProviderError (unreachable, auth, ...) with advice."""
    import httpx

    from runtime_host.providers.http import ERROR_BODY_BYTES, _short, bounded_body, error_from_response

    if not base_url.startswith(("http://", "https://")):
        raise ProviderError("bad_request", f"The base URL must start with http:// or https:// (got {base_url!r}).")
    url, headers = _request(kind, base_url, key)
    check_address_allowed(url)
    timeout = httpx.Timeout(connect=CONNECT_S, read=READ_S, write=READ_S, pool=CONNECT_S)
    route = Route(name, kind, base_url, "", key)
    try:
        with httpx.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=False) as resp:
            body = bounded_body(resp, route, max_s=BODY_S,
                                head=ERROR_BODY_BYTES if resp.status_code >= 400 else None)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ProviderError("unreachable", f"Nothing answers at {base_url} ({_short(exc)}). Is the server running "
                                           "and the address right?") from None
    except httpx.TimeoutException:
        raise ProviderError("timeout", f"{base_url} accepted the connection but did not answer in {READ_S:g} s.") from None
    except httpx.HTTPError as exc:
        raise ProviderError("unreachable", f"Could not reach {base_url} ({_short(exc)}).") from None
    if resp.status_code >= 400:
        err = error_from_response(route, resp, body)
        if err.kind == "not_found":
            err = ProviderError("not_found", f"{base_url} answered but has no model list there (HTTP 404): check that "
                                             "the base URL ends where the API starts (often …/v1).", status=404)
        raise err
    try:
        models = _model_ids(kind, json.loads(body))
    except ValueError:
        raise ProviderError("malformed", f"{base_url} answered, but not like a {kind} model server (no model list). "
                                         "Check the address and the wire format.") from None
    return CheckResult(sorted(models), key_tested=bool(key))
