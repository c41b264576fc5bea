"""Who speaks which wire format: a data table of model vendors, local servers, and local discovery.

Nine cloud vendors need three wire formats (openai, anthropic, gemini); local servers speak the
OpenAI-compatible format; "embedded" is the offline model inside the app. The base URLs below are
data for building routes, never contacted by tests (HEARTH_LOOPBACK_ONLY=1). Keys are never here:
they live in the vault and reach a worker only inside the routes that use them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from runtime_host.providers import Route, check_address_allowed, supports_tools


@dataclass(frozen=True)
class Vendor:
    """A company (or local server) whose models Hearth can call."""

    name: str            # provider name used in routes and the CLI: "anthropic", "ollama", ...
    label: str           # shown to people
    kind: str            # wire format: openai | anthropic | gemini | embedded
    base_url: str
    default_model: str
    key_page: str = ""   # where a person gets a key; "" when no key is needed
    needs_key: bool = True
    local: bool = False
    notes: str = ""
    embedding_model: str = ""  # for memory's search by meaning; "" when the vendor has no embeddings API

    @property
    def supports_tools(self) -> bool:
        return supports_tools(self.kind)

    def route(self, model: str | None = None, key: str | None = None, base_url: str | None = None) -> Route:
        """A route to this vendor (the key comes from the vault, never from this table)."""
        return Route(self.name, self.kind, base_url or self.base_url, model or self.default_model, key)

    def missing_key_message(self) -> str:
        where = f" Get one at {self.key_page}, then add it" if self.key_page else " Add it"
        return (
            f"No key for {self.label}.{where} in Settings → Providers "
            f"(or `python -m runtime_host provider add {self.name} --key-from-stdin`)."
        )


VENDORS: dict[str, Vendor] = {
    v.name: v
    for v in [
        Vendor("openai", "OpenAI", "openai", "https://api.openai.com/v1", "gpt-5-mini",
               "https://platform.openai.com/api-keys", embedding_model="text-embedding-3-small"),
        Vendor("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com/v1", "claude-sonnet-4-5",
               "https://console.anthropic.com/settings/keys"),
        Vendor("google", "Google Gemini", "gemini", "https://generativelanguage.googleapis.com/v1beta", "gemini-2.5-flash",
               "https://aistudio.google.com/apikey", embedding_model="gemini-embedding-001"),
        Vendor("xai", "xAI Grok", "openai", "https://api.x.ai/v1", "grok-4",
               "https://console.x.ai"),
        Vendor("deepseek", "DeepSeek", "openai", "https://api.deepseek.com/v1", "deepseek-chat",
               "https://platform.deepseek.com/api_keys"),
        Vendor("moonshot", "Moonshot Kimi", "openai", "https://api.moonshot.ai/v1", "kimi-k2-0905-preview",
               "https://platform.moonshot.ai/console/api-keys"),
        Vendor("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1", "openrouter/auto",
               "https://openrouter.ai/keys", notes="one key for many vendors' models"),
        Vendor("groq", "Groq", "openai", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile",
               "https://console.groq.com/keys"),
        Vendor("qwen", "Qwen (Alibaba DashScope)", "openai", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
               "qwen-plus", "https://modelstudio.console.alibabacloud.com/?tab=playground#/api-key", embedding_model="text-embedding-v4",
               notes="OpenAI-compatible mode; mainland-China accounts use https://dashscope.aliyuncs.com/compatible-mode/v1"),
        # Local OpenAI-compatible servers: no key, found by address (see discover_local).
        Vendor("ollama", "Ollama (this computer)", "openai", "http://127.0.0.1:11434/v1", "llama3.2",
               needs_key=False, local=True, notes="`ollama pull MODEL` first", embedding_model="nomic-embed-text"),
        Vendor("lmstudio", "LM Studio (this computer)", "openai", "http://127.0.0.1:1234/v1", "",
               needs_key=False, local=True, notes="start the server in LM Studio's Developer tab"),
        Vendor("llamacpp", "llama.cpp server (this computer)", "openai", "http://127.0.0.1:8080/v1", "",
               needs_key=False, local=True, notes="`llama-server -m MODEL.gguf`"),
        # The model inside the app: no key, no network, no tools.
        Vendor("embedded", "Built-in offline model (SmolLM2 135M)", "embedded", "", "smollm2-135m-instruct",
               needs_key=False, local=True,
               notes="a tiny model so Hearth answers with no key; add a provider for real answers"),
    ]
}

LOCAL_SERVERS: tuple[Vendor, ...] = tuple(v for v in VENDORS.values() if v.local and v.kind == "openai")


def cloud_vendor(provider: str, base_url: str) -> Vendor | None:
    """The cloud vendor a person's provider is: a known vendor's name at that vendor's own address. None for a model
    server of the person's own (Ollama, LM Studio, llama.cpp, any server added by its address, a vendor's name
    given to another address)."""
    v = VENDORS.get(provider)
    return v if v is not None and not v.local and base_url.rstrip("/") == v.base_url.rstrip("/") else None


def vendor(name: str) -> Vendor:
    """The vendor entry by name; raises KeyError with the known names."""
    try:
        return VENDORS[name]
    except KeyError:
        raise KeyError(f"Unknown provider {name!r}. Known: {', '.join(VENDORS)}.") from None


@dataclass
class LocalServer:
    """A local OpenAI-compatible server that answered on its port."""

    vendor: str
    label: str
    base_url: str
    models: list[str] = field(default_factory=list)

    def route(self, model: str | None = None) -> Route:
        return Route(self.vendor, "openai", self.base_url, model or (self.models[0] if self.models else ""), None)


PROBE_BYTES = 4 * 1024 * 1024
PROBE_S = 2.0


def _with_host(base_url: str, host: str) -> str:
    scheme, _, rest = base_url.partition("://")
    hostport, slash, path = rest.partition("/")
    port = hostport.rsplit(":", 1)[1] if ":" in hostport else ""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{scheme}://{host}{':' + port if port else ''}{slash}{path}"


def _probe(v: Vendor, host: str, timeout: float) -> LocalServer | None:
    return _probe_at(v.name, v.label, _with_host(v.base_url, host), timeout)


def recheck(server: LocalServer, timeout: float = 1.0) -> LocalServer | None:
    """The server found earlier, asked again (it may have stopped since): None when it no longer answers."""
    check_address_allowed(server.base_url)
    return _probe_at(server.vendor, server.label, server.base_url, timeout)


def _probe_at(name: str, label: str, base: str, timeout: float) -> LocalServer | None:
    import json

    import httpx

    from runtime_host.providers import ProviderError
    from runtime_host.providers.http import bounded_body

    try:
        with httpx.stream("GET", base.rstrip("/") + "/models", timeout=timeout, follow_redirects=False) as resp:
            if resp.status_code != 200:
                return None
            # something else on the port may answer without end: a model list is small and quick
            raw = bounded_body(resp, Route(name, "openai", base, "", None), max_bytes=PROBE_BYTES,
                               max_s=PROBE_S)
    except (httpx.HTTPError, OSError, ProviderError):
        return None
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None  # something else listens on this port
    models = [str(m["id"]) for m in data["data"] if isinstance(m, dict) and m.get("id")]
    return LocalServer(name, label, base, models)


def _ollama_show(server: LocalServer, model: str, timeout: float) -> dict[str, Any] | None:
    """Ollama's own account of one of its models (POST /api/show: capabilities, family), or None when the server
    does not answer it (LM Studio, llama.cpp, an older Ollama) or answers something else."""
    import json

    import httpx

    from runtime_host.providers import ProviderError
    from runtime_host.providers.http import bounded_body

    root = server.base_url.rstrip("/").removesuffix("/v1")
    check_address_allowed(root)
    try:
        with httpx.stream("POST", root + "/api/show", json={"model": model}, timeout=timeout,
                          follow_redirects=False) as resp:
            if resp.status_code != 200:
                return None
            raw = bounded_body(resp, Route(server.vendor, "openai", server.base_url, model, None),
                               max_bytes=PROBE_BYTES, max_s=PROBE_S)
        data: Any = json.loads(raw)
    except (httpx.HTTPError, OSError, ProviderError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_chat_model(name: str, show: dict[str, Any] | None = None) -> bool:
    """Whether a model a server lists can answer a chat (write pages, answer questions), not only embed text.
    ``show`` is what the server says of it (Ollama's /api/show): its capabilities when it lists them ("completion"
    chats, "embedding" alone does not), else its families (a BERT-like encoder — bert, nomic-bert, xlm-roberta —
    only embeds). Without a word from the server, a name saying "embed" (nomic-embed-text, mxbai-embed-large,
    text-embedding-3-small) is an embedding model."""
    if show:
        caps = show.get("capabilities")
        if isinstance(caps, list) and caps:
            return "completion" in caps
        details = show.get("details") if isinstance(show.get("details"), dict) else {}
        families = [details.get("family"), *(details.get("families") or [])]
        if any(isinstance(f, str) and "bert" in f.lower() for f in families):
            return False
    return "embed" not in name.lower()


def chat_model(server: LocalServer, timeout: float = 1.0) -> str | None:
    """The first model the server lists that can chat (see is_chat_model), or None when it has embedding models
    alone. Ollama lists the model pulled last first, which is often an embedding model (nomic-embed-text)."""
    for name in server.models:
        if is_chat_model(name, _ollama_show(server, name, timeout) if server.vendor == "ollama" else None):
            return name
    return None


def discover_local(
    hosts: tuple[str, ...] = ("127.0.0.1",),
    timeout: float = 0.3,
    servers: tuple[Vendor, ...] = LOCAL_SERVERS,
) -> list[LocalServer]:
    """Probes each local server's GET {base}/models on each host, in parallel; returns those that answer.

    Takes about `timeout` seconds at most. A port held by something that is not an OpenAI-compatible
    server (no {"data": [...]} list) is left out.
    """
    jobs = [(v, h) for h in hosts for v in servers]
    for v, h in jobs:
        check_address_allowed(_with_host(v.base_url, h))
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(jobs)), thread_name_prefix="discover") as pool:
        results = list(pool.map(lambda job: _probe(job[0], job[1], timeout), jobs))
    return [r for r in results if r is not None]
