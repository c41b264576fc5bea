"""A provider's embeddings for memory's search by meaning: an Embedder (wiki_engine's protocol: name, dim,
embed) that memory treats as remote, so its vectors are queued and filled in the background.

Wire formats: OpenAI-compatible POST {base_url}/embeddings {"model", "input": [...]} -> {"data": [{"embedding",
"index"}], ...}; Gemini POST {base_url}/models/{model}:batchEmbedContents {"requests": [{"model", "content"}]}
-> {"embeddings": [{"values"}]}. Anthropic and the embedded model have no embeddings API. The size of the
vectors is learnt from the first answer; an answer of the wrong count, size or with non-numbers is refused. A
provider is sent no more of a text than a local model reads (``wiki_engine.embed.meaning_part``).
The key travels only in a header; every error is passed through the vault's redaction.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from runtime_host.providers import ProviderError, Route
from vault import redact

EMBEDDING_KINDS = ("openai", "openai-compatible", "gemini")
# One request of texts (memory sends at most 64, fewer once one was not answered in time) gets this long, its whole
# answer included (a body sent a byte at a time is cut off); a search's question gets less (its caller says).
TIMEOUT_S = 30.0


def embedder_name(provider: str, model: str) -> str:
    """The model name stored with the vectors: a change of provider or model re-embeds."""
    return f"provider:{provider}/{model}"


def embedding_model_of(provider: dict[str, Any]) -> str | None:
    """The embedding model to offer for one of a person's providers, or None when it has no embeddings API:
    a cloud vendor's own (OpenAI, Google, Qwen), else the provider's model (a local or self-hosted server)."""
    from runtime_host.providers.vendors import VENDORS, cloud_vendor

    if provider.get("kind") not in EMBEDDING_KINDS:
        return None
    v = VENDORS.get(provider["name"])
    if v is not None and v.embedding_model:
        return v.embedding_model
    if cloud_vendor(provider["name"], provider["base_url"]) is not None:
        return None  # a cloud vendor without an embeddings API (xAI, DeepSeek, Groq, ...)
    return provider.get("model") or None


class ProviderEmbedder:
    """Embeddings from a person's provider. ``problem`` (say, a key missing from the keyring) makes every call
    fail with that message, so memory shows it and keeps searching by keywords."""

    remote = True

    def __init__(self, route: Route | None, name: str, problem: str = ""):
        self.route = route
        self.name = name
        self.dim = 0
        self.problem = problem

    @classmethod
    def unavailable(cls, provider: str, model: str, problem: str) -> ProviderEmbedder:
        return cls(None, embedder_name(provider, model), redact(problem))

    @classmethod
    def for_route(cls, route: Route) -> ProviderEmbedder:
        if route.kind not in EMBEDDING_KINDS:
            return cls.unavailable(route.provider, route.model,
                                   f"Provider {route.provider!r} ({route.kind}) has no embeddings API: choose another "
                                   "model for search by meaning in Settings → Models.")
        return cls(route, embedder_name(route.provider, route.model))

    def embed(self, texts: list[str], timeout: float | None = None) -> np.ndarray:
        """Unit vectors for ``texts`` (one request); ProviderError (key redacted) when the provider fails."""
        if self.route is None:
            raise ProviderError("auth", self.problem)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        from runtime_host.providers.http import bounded_body, open_stream
        from wiki_engine.embed import EmbeddingError, checked_vectors, meaning_part

        try:  # no more of a text than a local model reads: a long document would be refused whole
            url, headers, body = self._request([meaning_part(t) for t in texts])
            with open_stream(self.route, url, headers, body, timeout=timeout or TIMEOUT_S) as resp:
                raw = bounded_body(resp, self.route, max_s=timeout or TIMEOUT_S)
            vectors = self._vectors(raw)
        except ProviderError as exc:
            msg = (f"Provider {self.route.provider!r} had a server error (HTTP {exc.status})." if exc.kind == "server"
                   else str(exc))
            raise ProviderError(exc.kind, redact(msg), status=exc.status) from None
        try:  # the size is memory's to check against the vectors it holds: a wrong one is never learned here
            out = checked_vectors(self.name, vectors, len(texts))
        except EmbeddingError as exc:
            raise ProviderError("malformed", f"{exc} Check the model chosen for search by meaning in Settings → "
                                             "Models (it must be an embedding model).") from None
        self.dim = out.shape[1]
        return out

    @staticmethod
    def refuses(exc: Exception) -> bool:
        """Whether ``exc`` may be the provider refusing one of the texts sent (a text still too long for its model,
        an answer that is not a vector for each): memory then finds which by asking for fewer at a time, and sets
        aside the ones refused alone (see ``wiki_engine.embed.embed_each``)."""
        return isinstance(exc, ProviderError) and exc.kind in ("bad_request", "malformed")

    @staticmethod
    def too_slow(exc: Exception) -> bool:
        """Whether ``exc`` is the provider not answering a request in time (a model server on a CPU given 64 long
        notes at once): memory then sends it fewer texts per request, from then on, once it answered one text alone
        in time (``embed_each``)."""
        return isinstance(exc, ProviderError) and exc.kind == "timeout"

    @staticmethod
    def passing(exc: Exception) -> bool:
        """Whether ``exc`` may pass on its own (a rate limit, a server error, a timeout, the provider unreachable), so
        that trying again may clear it: `models set embedding` waits through a few, and fails at once on the others
        (a key refused, no such model, no embeddings API)."""
        return isinstance(exc, ProviderError) and exc.may_fall_back

    def _request(self, texts: list[str]) -> tuple[str, dict[str, str], dict[str, Any]]:
        r = self.route
        assert r is not None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if r.kind == "gemini":
            from runtime_host.providers.gemini import model_path

            path = model_path(r.model)
            if r.key:
                headers["x-goog-api-key"] = r.key
            body: dict[str, Any] = {"requests": [{"model": path, "content": {"parts": [{"text": t}]}} for t in texts]}
            return f"{r.base_url.rstrip('/')}/{path}:batchEmbedContents", headers, body
        if r.key:
            headers["Authorization"] = f"Bearer {r.key}"
        return r.base_url.rstrip("/") + "/embeddings", headers, {"model": r.model, "input": texts}

    def _vectors(self, raw: bytes) -> list[Any]:
        assert self.route is not None
        bad = ProviderError("malformed", f"Provider {self.route.provider!r} answered with a body that is not a list "
                                         "of embeddings. Check that the model chosen for search by meaning is an "
                                         "embedding model.")
        try:
            obj = json.loads(raw)
            if self.route.kind == "gemini":
                return [e["values"] for e in obj["embeddings"]]
            data = obj["data"]
            ordered = sorted(data, key=lambda d: int(d["index"]))
            if [int(d["index"]) for d in ordered] != list(range(len(data))):
                raise bad
            return [d["embedding"] for d in ordered]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise bad from None
