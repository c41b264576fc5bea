"""`DictationStream`: long dictation transcribed in chunks as it is recorded.

The caller feeds raw PCM (any rate, any channel count, s16le or f32le) as the microphone delivers
it. `feed` only buffers and cuts: when at least `min_chunk_s` is buffered it cuts at the last pause
(a quiet stretch of `pause_s`), or hard at `max_chunk_s`, and queues that chunk on the engine's
background thread, passing the text so far as context. `on_update(text_so_far)` is called from that
thread after each chunk. `finish()` queues the rest and returns a future of the whole transcript.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from runtime_host.speech.audio import SAMPLE_RATE, PcmFormat, pcm_to_float, resample
from runtime_host.speech.errors import SpeechError

if TYPE_CHECKING:
    from runtime_host.speech.engine import Segment, SpeechEngine, Transcript

_FRAME_S = 0.02
_CONTEXT_CHARS = 200


class StreamClosed(SpeechError):
    """Audio was fed to a dictation that already finished or was cancelled."""


class DictationStream:
    """Chunked transcription of a live recording; see the module docstring."""

    def __init__(
        self,
        engine: SpeechEngine,
        *,
        sample_rate: int,
        channels: int,
        sample_format: PcmFormat,
        on_update: Callable[[str], None] | None,
        language: str | None,
        min_chunk_s: float,
        max_chunk_s: float,
        pause_s: float = 0.3,
    ) -> None:
        if sample_rate <= 0 or channels <= 0:
            raise ValueError(f"bad audio format: {sample_rate} Hz, {channels} channels")
        if not 0 < min_chunk_s <= max_chunk_s:
            raise ValueError("need 0 < min_chunk_s <= max_chunk_s")
        self._engine = engine
        self.sample_rate = sample_rate
        self.channels = channels
        self.sample_format: PcmFormat = sample_format
        self._on_update = on_update
        self._language = language
        self._min = int(min_chunk_s * sample_rate)
        self._max = int(max_chunk_s * sample_rate)
        self._pause_frames = max(1, int(round(pause_s / _FRAME_S)))
        self._frame = max(1, int(_FRAME_S * sample_rate))
        self._buffer: list[np.ndarray] = []
        self._buffered = 0
        self._since_check = 0
        self._fed_samples = 0  # samples already cut into chunks (native rate)
        self._leftover = b""
        self._lock = threading.Lock()
        self._texts: list[str] = []
        self._segments: list[Segment] = []
        self._chunk_seconds = 0.0
        self._elapsed = 0.0
        self._language_seen: str | None = None
        self._model = ""
        self._error: BaseException | None = None
        self._futures: list[concurrent.futures.Future[Transcript | None]] = []
        self._state = "open"  # open → finishing → done | cancelled
        self.chunks_done = 0

    # ---- caller side ----------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The transcript of every chunk finished so far."""
        with self._lock:
            return " ".join(t for t in self._texts if t)

    @property
    def buffered_s(self) -> float:
        return self._buffered / self.sample_rate

    def feed(self, data: bytes) -> None:
        """Add raw PCM bytes in the stream's format. Cheap: never waits for recognition."""
        if self._state != "open":
            raise StreamClosed(f"This dictation is {self._state}; start a new one to record again.")
        width = (2 if self.sample_format == "s16le" else 4) * self.channels
        data = self._leftover + bytes(data)
        usable = len(data) - len(data) % width
        self._leftover = data[usable:]
        if usable:
            self.feed_samples(pcm_to_float(data[:usable], self.sample_format, self.channels))

    def feed_samples(self, samples: np.ndarray) -> None:
        """Add mono float32 samples at the stream's sample rate."""
        if self._state != "open":
            raise StreamClosed(f"This dictation is {self._state}; start a new one to record again.")
        if samples.size == 0:
            return
        self._buffer.append(np.asarray(samples, dtype=np.float32).reshape(-1))
        self._buffered += samples.size
        self._since_check += samples.size
        # Looking for a pause costs a pass over the buffer: do it at most every quarter second.
        if self._buffered >= self._min and (self._since_check >= self.sample_rate // 4 or self._buffered >= self._max):
            self._since_check = 0
            cut = self._find_cut()
            if cut is not None:
                self._emit(cut)

    def finish(self) -> concurrent.futures.Future[Transcript]:
        """Stop feeding; transcribe the rest. The future gives the whole dictation's transcript."""
        if self._state != "open":
            raise StreamClosed(f"This dictation is already {self._state}.")
        if self._buffered >= self._frame * 5:
            self._emit(self._buffered)
        self._buffer, self._buffered = [], 0
        self._state = "finishing"
        return self._engine._submit(self._assemble)

    def cancel(self) -> None:
        """Drop the recording: queued chunks are skipped and no more updates are sent."""
        self._state = "cancelled"
        self._buffer, self._buffered = [], 0
        for fut in self._futures:
            fut.cancel()

    # ---- cutting ------------------------------------------------------------------------------

    def _find_cut(self) -> int | None:
        audio = np.concatenate(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer = [audio]
        n_frames = audio.size // self._frame
        if n_frames == 0:
            return None
        frames = audio[: n_frames * self._frame].reshape(n_frames, self._frame)
        rms = np.sqrt(np.mean(frames * frames, axis=1))
        loud = float(np.percentile(rms, 90))
        quiet = rms < max(0.003, 0.12 * loud)
        first = self._min // self._frame
        # The last run of quiet frames long enough to be a pause, starting after min_chunk.
        run_end = None
        run = 0
        for i in range(n_frames - 1, first - 1, -1):
            if quiet[i]:
                run += 1
                if run >= self._pause_frames:
                    # extend to the start of this quiet run
                    j = i
                    while j - 1 >= first and quiet[j - 1]:
                        j -= 1
                    end = i + run
                    run_end = (j + end) // 2
                    break
            else:
                run = 0
        if run_end is not None and run_end * self._frame < audio.size:
            return run_end * self._frame
        if audio.size >= self._max:
            # No pause within max_chunk_s: cut at the quietest frame of the last two seconds.
            lo = max(first, n_frames - int(2.0 / _FRAME_S))
            return int(lo + int(np.argmin(rms[lo:]))) * self._frame or audio.size
        return None

    def _emit(self, cut: int) -> None:
        audio = np.concatenate(self._buffer) if len(self._buffer) != 1 else self._buffer[0]
        chunk, rest = audio[:cut], audio[cut:]
        self._buffer = [rest] if rest.size else []
        self._buffered = rest.size
        offset_s = self._fed_samples / self.sample_rate
        self._fed_samples += chunk.size
        samples16k = resample(chunk, self.sample_rate, SAMPLE_RATE)
        self._futures.append(self._engine._submit(self._run_chunk, samples16k, offset_s))

    # ---- worker-thread side -------------------------------------------------------------------

    def _run_chunk(self, samples: np.ndarray, offset_s: float) -> Transcript | None:
        if self._state == "cancelled" or self._error is not None:
            return None
        prompt = self.text[-_CONTEXT_CHARS:] or None
        try:
            result = self._engine._transcribe_array(samples, self._language, prompt, offset_s, 0.0)
        except BaseException as exc:
            self._error = exc
            raise
        with self._lock:
            if result.text:
                self._texts.append(result.text)
            self._segments.extend(result.segments)
            self._chunk_seconds += result.duration_s
            self._elapsed += result.elapsed_s
            self._language_seen = self._language_seen or result.language
            # One dictation, one language: later chunks skip detection (faster, no flip-flopping).
            if self._language is None and result.text:
                self._language = result.language
            self._model = result.model
            self.chunks_done += 1
        if self._on_update is not None and self._state != "cancelled":
            self._on_update(self.text)
        return result

    def _assemble(self) -> Transcript:
        from runtime_host.speech.engine import Transcript

        if self._error is not None:
            raise self._error
        if self._state == "cancelled":
            raise StreamClosed("The dictation was cancelled.")
        self._state = "done"
        with self._lock:
            return Transcript(
                text=" ".join(t for t in self._texts if t),
                segments=tuple(self._segments),
                language=self._language_seen,
                duration_s=self._chunk_seconds,
                elapsed_s=self._elapsed,
                model=self._model,
            )
