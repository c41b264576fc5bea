"""`SpeechEngine`: local speech-to-text on faster-whisper (CTranslate2, int8 on CPU, VAD on).

Every call returns at once with a `concurrent.futures.Future`; decoding and recognition run on
one background thread (CTranslate2 releases the GIL), so no caller ever blocks. The model loads
lazily on first use and is unloaded after `idle_unload_s` without work, giving its memory back.
By default the engine is offline: it uses the packaged Whisper base model (verified by sha256)
and fetches a model by name only when `allow_download` is set.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from runtime_host.speech.audio import SAMPLE_RATE, AudioSource, PcmFormat, decode_file
from runtime_host.speech.errors import EngineClosed, ModelUnavailable, SpeechError
from runtime_host.speech.modelfiles import PACKAGED_MODEL_NAME, ensure_packaged_model

if TYPE_CHECKING:
    from runtime_host.speech.stream import DictationStream

log = logging.getLogger("hearth.speech")

T = TypeVar("T")

#: Names that mean "the packaged Whisper base model" (the offline default).
PACKAGED_ALIASES = frozenset({"", "base", "packaged", "default"})


@dataclass(frozen=True)
class SpeechSettings:
    """The speech-to-text role's settings.

    `model`: None (or "base") for the packaged, verified Whisper base model; a folder holding a
    CTranslate2 Whisper model (`model.bin`, `config.json`, tokenizer); or a model name such as
    "small" or "Systran/faster-whisper-small", which must already be in `models_dir/hub` unless
    `allow_download` is set.
    """

    model: str | None = None
    models_dir: Path | None = None  # default: runtime_host.paths.data_dir() / "models"
    allow_download: bool = False
    device: str = "cpu"
    compute_type: str = "int8"
    cpu_threads: int = 0  # 0: one per core
    vad: bool = True
    language: str | None = None  # None: detect
    beam_size: int = 1
    idle_unload_s: float = 300.0

    def resolved_models_dir(self) -> Path:
        if self.models_dir is not None:
            return Path(self.models_dir)
        from runtime_host.paths import data_dir

        return data_dir() / "models"


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    segments: tuple[Segment, ...]
    language: str | None
    duration_s: float  # audio length
    elapsed_s: float  # recognition time (decoding the file included)
    model: str

    @property
    def rtf(self) -> float:
        return self.elapsed_s / self.duration_s if self.duration_s > 0 else 0.0


@dataclass
class EngineStats:
    loads: int = 0
    unloads: int = 0
    last_load_ms: float | None = None
    model: str | None = None


def _release_heap() -> None:
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


class SpeechEngine:
    """One speech model, one background thread, lazy load and idle unload. Thread-safe."""

    def __init__(self, settings: SpeechSettings | None = None) -> None:
        self.settings = settings or SpeechSettings()
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-stt")
        self._lock = threading.Lock()
        self._model: Any = None  # faster_whisper.WhisperModel, touched only on the worker thread
        self._model_label = ""
        self._pending = 0
        self._activity = 0
        self._idle_timer: threading.Timer | None = None
        self._closed = False
        self.stats = EngineStats()

    # ---- public API -------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def preload(self) -> concurrent.futures.Future[float]:
        """Load the model now (in the background); the future gives the load time in ms."""
        return self._submit(self._ensure_model_timed)

    def transcribe(
        self, source: AudioSource, *, language: str | None = None, initial_prompt: str | None = None
    ) -> concurrent.futures.Future[Transcript]:
        """Transcribe an audio file (path), its bytes, or a binary stream. Never blocks."""
        return self._submit(self._transcribe_source, source, language, initial_prompt)

    def transcribe_samples(
        self,
        samples: np.ndarray,
        *,
        language: str | None = None,
        initial_prompt: str | None = None,
        offset_s: float = 0.0,
    ) -> concurrent.futures.Future[Transcript]:
        """Transcribe mono float32 samples at 16 kHz. Never blocks."""
        return self._submit(self._transcribe_array, samples, language, initial_prompt, offset_s, 0.0)

    async def atranscribe(self, source: AudioSource, *, language: str | None = None) -> Transcript:
        """The asyncio face of `transcribe` (for the Pod and other async callers)."""
        return await asyncio.wrap_future(self.transcribe(source, language=language))

    def open_stream(
        self,
        *,
        sample_rate: int = SAMPLE_RATE,
        channels: int = 1,
        sample_format: PcmFormat = "s16le",
        on_update: Callable[[str], None] | None = None,
        language: str | None = None,
        min_chunk_s: float = 5.0,
        max_chunk_s: float = 20.0,
    ) -> DictationStream:
        """Start a dictation: feed raw PCM as it is recorded; it is transcribed in chunks as it goes."""
        from runtime_host.speech.stream import DictationStream

        return DictationStream(
            self,
            sample_rate=sample_rate,
            channels=channels,
            sample_format=sample_format,
            on_update=on_update,
            language=language,
            min_chunk_s=min_chunk_s,
            max_chunk_s=max_chunk_s,
        )

    def unload(self) -> concurrent.futures.Future[bool]:
        """Drop the model now (after queued work); it loads again on the next request."""
        return self._submit(self._unload, count_activity=False)

    def close(self) -> None:
        """Stop the background thread and free the model. Queued work is cancelled."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._idle_timer is not None:
                self._idle_timer.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._unload()  # the worker thread has ended: nothing else touches the model now

    def __enter__(self) -> SpeechEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- scheduling -------------------------------------------------------------------------

    def _submit(self, fn: Callable[..., T], *args: Any, count_activity: bool = True) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise EngineClosed("The speech engine was shut down; create a new SpeechEngine to transcribe.")
            if count_activity:
                self._pending += 1
                self._activity += 1
                if self._idle_timer is not None:
                    self._idle_timer.cancel()
                    self._idle_timer = None
            future = self._executor.submit(self._run, fn, args, count_activity)
        return future

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...], counted: bool) -> T:
        try:
            return fn(*args)
        finally:
            if counted:
                self._job_done()

    def _job_done(self) -> None:
        with self._lock:
            self._pending -= 1
            if self._pending or self._closed or self.settings.idle_unload_s <= 0:
                return
            seen = self._activity
            timer = threading.Timer(self.settings.idle_unload_s, self._on_idle, args=(seen,))
            timer.daemon = True
            self._idle_timer = timer
            timer.start()

    def _on_idle(self, seen: int) -> None:
        with self._lock:
            if self._closed or self._pending or self._activity != seen:
                return
            self._idle_timer = None
            try:
                self._executor.submit(self._unload_if_idle, seen)
            except RuntimeError:  # executor shut down meanwhile
                pass

    def _unload_if_idle(self, seen: int) -> None:
        with self._lock:
            if self._pending or self._activity != seen:
                return
        if self._unload():
            log.info("speech model unloaded after %.0f s idle", self.settings.idle_unload_s)

    # ---- worker-thread side -----------------------------------------------------------------

    def _unload(self) -> bool:
        model, self._model = self._model, None
        if model is None:
            return False
        try:
            model.model.unload_model()
        except Exception:  # an older CTranslate2 without unload_model: dropping the object frees it
            pass
        del model
        _release_heap()
        self.stats.unloads += 1
        return True

    def _ensure_model_timed(self) -> float:
        started = time.perf_counter()
        self._ensure_model()
        return (time.perf_counter() - started) * 1000.0

    def _ensure_model(self) -> Any:
        if self._model is not None:
            return self._model
        started = time.perf_counter()
        s = self.settings
        models_dir = s.resolved_models_dir()
        from faster_whisper import WhisperModel

        common: dict[str, Any] = {
            "device": s.device,
            "compute_type": s.compute_type,
            "cpu_threads": s.cpu_threads or (os.cpu_count() or 1),
        }
        name = (s.model or "").strip()
        if name.lower() in PACKAGED_ALIASES:
            path = ensure_packaged_model(models_dir)
            label = PACKAGED_MODEL_NAME
            model = self._construct(WhisperModel, str(path), common, label)
        elif _looks_like_path(name):
            folder = Path(name).expanduser()
            if not (folder / "model.bin").is_file():
                raise ModelUnavailable(
                    f"The speech model folder {folder} does not exist or holds no CTranslate2 'model.bin'. "
                    "Choose a folder with a converted Whisper model in Settings → Models → Speech-to-text, "
                    "or clear the setting to use the built-in model."
                )
            label = str(folder)
            model = self._construct(WhisperModel, str(folder), common, label)
        else:
            label = name
            hub = models_dir / "hub"
            common.update(download_root=str(hub), local_files_only=not s.allow_download)
            model = self._construct(WhisperModel, name, common, label)
        self._model, self._model_label = model, label
        self.stats.loads += 1
        self.stats.model = label
        self.stats.last_load_ms = (time.perf_counter() - started) * 1000.0
        log.info("speech model %s loaded in %.0f ms", label, self.stats.last_load_ms)
        return model

    def _construct(self, cls: Any, what: str, kwargs: dict[str, Any], label: str) -> Any:
        try:
            return cls(what, **kwargs)
        except SpeechError:
            raise
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if kwargs.get("local_files_only"):
                raise ModelUnavailable(
                    f"The speech model {label!r} is not on this machine and downloads are off. Put a "
                    f"converted model folder in Settings → Models → Speech-to-text, allow downloads for "
                    f"this model, or clear the setting to use the built-in model. ({text})"
                ) from exc
            if "local_files_only" in kwargs:
                raise ModelUnavailable(
                    f"Could not download the speech model {label!r}: {text}. Check the connection and "
                    "the model name, or use the built-in model."
                ) from exc
            raise ModelUnavailable(
                f"Could not load the speech model {label!r}: {text}. The folder may hold another kind of "
                "model or an unsupported compute type; choose another model in Settings."
            ) from exc

    def _transcribe_source(
        self, source: AudioSource, language: str | None, initial_prompt: str | None
    ) -> Transcript:
        started = time.perf_counter()
        samples = decode_file(source)
        decode_s = time.perf_counter() - started
        return self._transcribe_array(samples, language, initial_prompt, 0.0, decode_s)

    def _transcribe_array(
        self,
        samples: np.ndarray,
        language: str | None,
        initial_prompt: str | None,
        offset_s: float,
        extra_s: float,
    ) -> Transcript:
        model = self._ensure_model()
        started = time.perf_counter()
        samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
        s = self.settings
        segments_iter, info = model.transcribe(
            samples,
            language=language or s.language,
            beam_size=s.beam_size,
            vad_filter=s.vad,
            initial_prompt=initial_prompt or None,
        )
        segments = tuple(
            Segment(start=seg.start + offset_s, end=seg.end + offset_s, text=seg.text.strip())
            for seg in segments_iter
        )
        text = " ".join(seg.text for seg in segments if seg.text)
        return Transcript(
            text=text,
            segments=segments,
            language=info.language,
            duration_s=samples.size / SAMPLE_RATE,
            elapsed_s=time.perf_counter() - started + extra_s,
            model=self._model_label,
        )


def _looks_like_path(name: str) -> bool:
    return (
        name.startswith(("/", "~", ".", "\\"))
        or os.sep in name and Path(name).expanduser().exists()
        or (len(name) > 2 and name[1] == ":")
        or Path(name).expanduser().is_dir()
    )
