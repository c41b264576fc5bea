"""Model providers: one module per wire format, translating to and from Hearth's internal form.

Internal messages are dicts: {"role": "system"|"user"|"assistant"|"tool", "content": str, ...};
an assistant message may carry "tool_calls": [{"id", "name", "arguments": dict}], a tool message
carries "tool_call_id" and "name". A provider's `stream()` yields ProviderEvents; `complete()` makes
the same call without streaming (one JSON answer) and yields the same events.

Wire formats (Route.kind): "openai" / "openai-compatible" (openai_compat.py), "anthropic"
(anthropic.py), "gemini" (gemini.py), "embedded" (embedded.py, the offline SmolLM2 model).
Vendors (which kind, base URL and default model each company uses) are data in vendors.py.
Imported by the worker only after it is ready (httpx is not cheap to import).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Finished:
    finish_reason: str
    model: str
    usage: dict[str, Any] = field(default_factory=dict)


ProviderEvent = TextDelta | ToolCall | Finished


class ProviderError(Exception):
    """A model call that failed, with a message a person can act on.

    kind: auth, rate_limit, server, bad_request, not_found, unreachable, timeout, malformed, forbidden
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after

    @property
    def may_fall_back(self) -> bool:
        """Whether the next model in a fallback chain may take the turn."""
        return self.kind in {"rate_limit", "unreachable", "timeout", "server"}


@dataclass
class Route:
    """One model a worker may call: provider name, wire format, address, model and key."""

    provider: str
    kind: str
    base_url: str
    model: str
    key: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Route:
        return cls(d["provider"], d["kind"], d.get("base_url") or "", d.get("model") or "", d.get("key"))


@contextmanager
def wire_shape(provider: str, what: str) -> Iterator[None]:
    """Reading a decoded answer: a value of the wrong kind (a string where an object belongs, a number for text)
    is a malformed answer, told as such, not an error from deep inside the reader."""
    try:
        yield
    except (AttributeError, TypeError, KeyError, IndexError):
        raise ProviderError("malformed", f"Provider {provider!r} answered with {what}. Try again, or pick another "
                            "model.") from None


def text_part(value: Any) -> str:
    """A piece of an answer's text: a string, or nothing (None); anything else is not an answer (TypeError)."""
    if value is None or isinstance(value, str):
        return value or ""
    raise TypeError(f"text of type {type(value).__name__}")


def truncated(provider: str) -> ProviderError:
    """The error for a stream that ended before its end marker (every wire format says it the same way)."""
    return ProviderError("malformed", f"Provider {provider!r} ended its stream before the answer was complete "
                                      "(truncated). Try again.")


def check_address_allowed(url: str) -> None:
    """Refuses non-loopback model addresses when HEARTH_LOOPBACK_ONLY is set (tests set it globally)."""
    from runtime_host.netrules import refused_by_loopback_switch

    host = refused_by_loopback_switch(url)
    if host is not None:
        raise ProviderError(
            "forbidden",
            f"Refusing to call {host!r}: HEARTH_LOOPBACK_ONLY=1 allows only loopback model servers (tests never reach the internet).",
        )


# Whether a wire format can pass tools to its model. The UI says so when a chosen model cannot use
# tools; the embedded offline model answers in plain text only.
SUPPORTS_TOOLS: dict[str, bool] = {
    "openai": True,
    "openai-compatible": True,
    "anthropic": True,
    "gemini": True,
    "embedded": False,
}

KINDS: tuple[str, ...] = tuple(SUPPORTS_TOOLS)


def supports_tools(kind: str) -> bool:
    """Whether models reached through this wire format can call tools (False for unknown kinds)."""
    return SUPPORTS_TOOLS.get(kind, False)


def open_provider(route: Route) -> Any:
    """The provider object for a route's wire format. Each has .stream(), .complete(), .supports_tools."""
    if route.kind in ("openai-compatible", "openai"):
        from runtime_host.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(route)
    if route.kind == "anthropic":
        from runtime_host.providers.anthropic import AnthropicProvider

        return AnthropicProvider(route)
    if route.kind == "gemini":
        from runtime_host.providers.gemini import GeminiProvider

        return GeminiProvider(route)
    if route.kind == "embedded":
        from runtime_host.providers.embedded import EmbeddedProvider

        return EmbeddedProvider(route)
    raise ProviderError(
        "bad_request",
        f"Unknown provider kind {route.kind!r} for provider {route.provider!r}. "
        f"Known kinds: {', '.join(KINDS)}. Check the provider in Settings → Providers.",
    )
