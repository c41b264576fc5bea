"""Dictation: raw PCM fed in small pieces as a microphone would, transcribed chunk by chunk as it goes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from runtime_host.speech import SpeechEngine, StreamClosed, word_error_rate
from runtime_host.speech.audio import pcm_to_float, resample
from tests.speech.conftest import read_wav


def _dictation(spoken: list[tuple[str, Path]], pause_s: float = 0.7) -> tuple[str, np.ndarray, int]:
    texts, pieces, rate = [], [], 0
    for text, path in spoken:
        audio, rate = read_wav(path)
        texts.append(text)
        pieces += [audio, np.zeros(int(rate * pause_s), np.float32)]
    return " ".join(texts), np.concatenate(pieces), rate


def test_pcm_helpers() -> None:
    stereo = np.array([[1000, -1000], [3000, 1000]], dtype="<i2").tobytes()
    assert np.allclose(pcm_to_float(stereo, "s16le", channels=2), [0.0, 2000 / 32768])
    assert np.allclose(pcm_to_float(np.array([0.5, -0.25], "<f4").tobytes(), "f32le"), [0.5, -0.25])
    tone = np.sin(np.arange(48000) / 48000 * 2 * np.pi * 440).astype(np.float32)
    down = resample(tone, 48000, 16000)
    assert down.size == 16000 and down.dtype == np.float32
    with pytest.raises(ValueError, match="s16le"):
        pcm_to_float(b"\0\0", "u8")  # type: ignore[arg-type]


def test_long_dictation_is_transcribed_in_chunks_as_it_goes(engine: SpeechEngine, spoken) -> None:
    reference, audio, rate = _dictation(spoken)
    pcm = (audio * 32767).astype("<i2").tobytes()
    updates: list[str] = []
    got_update = threading.Event()

    def on_update(text: str) -> None:
        updates.append(text)
        got_update.set()

    stream = engine.open_stream(sample_rate=rate, sample_format="s16le", on_update=on_update, min_chunk_s=4.0)
    piece = rate // 10 * 2  # 100 ms of s16 mono, the size a microphone callback delivers
    slowest = 0.0
    halfway = len(pcm) // 2 // piece * piece
    for offset in range(0, len(pcm), piece):
        if offset == halfway:
            # Mid-recording, text for the first chunks arrives while the stream is still open.
            assert got_update.wait(timeout=90), "no text arrived during the recording"
            assert stream.text and not stream.text.isspace()
        started = time.perf_counter()
        stream.feed(pcm[offset : offset + piece])
        slowest = max(slowest, time.perf_counter() - started)
        time.sleep(0.005)  # a recording arrives over time (here much faster than real time)
    result = stream.finish().result(timeout=180)

    assert slowest < 0.1, f"feed() blocked for {slowest:.3f} s"
    assert stream.chunks_done >= 3, stream.chunks_done
    assert len(updates) == stream.chunks_done and updates[-1] == result.text
    assert all(later.startswith(earlier) for earlier, later in zip(updates, updates[1:], strict=False))
    assert word_error_rate(reference, result.text) < 0.15, result.text
    starts = [s.start for s in result.segments]
    assert starts == sorted(starts) and result.segments[-1].end > audio.size / rate * 0.7
    assert result.duration_s == pytest.approx(audio.size / rate, abs=0.1)


def test_dictation_stereo_float_at_48k(engine: SpeechEngine, spoken) -> None:
    reference, audio, rate = _dictation(spoken[:2], pause_s=0.4)
    at48 = resample(audio, rate, 48000)
    interleaved = np.stack([at48, at48], axis=1).astype("<f4").tobytes()
    stream = engine.open_stream(sample_rate=48000, channels=2, sample_format="f32le")
    for offset in range(0, len(interleaved), 4097):  # odd sizes: frames split across calls
        stream.feed(interleaved[offset : offset + 4097])
    result = stream.finish().result(timeout=120)
    assert word_error_rate(reference, result.text) < 0.15, result.text


def test_cancelled_dictation(engine: SpeechEngine, spoken) -> None:
    _, audio, rate = _dictation(spoken[:2])
    updates: list[str] = []
    stream = engine.open_stream(sample_rate=rate, sample_format="f32le", on_update=updates.append, min_chunk_s=1.0)
    stream.feed(audio.astype("<f4").tobytes())
    stream.cancel()
    with pytest.raises(StreamClosed):
        stream.feed(b"\0\0\0\0")
    with pytest.raises(StreamClosed):
        stream.finish()
    engine.preload().result(timeout=60)  # everything queued before this has run
    assert updates == []


class _RecordingEngine:
    """Stands in for the engine's queue only, to check where a stream cuts its chunks."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, float]] = []

    def _submit(self, fn, *args):  # noqa: ANN001, ANN202
        import concurrent.futures

        if args:
            samples, offset_s = args
            self.chunks.append((samples.size, offset_s))
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_result(None)
        return future


def _stream(engine: _RecordingEngine, rate: int, min_s: float, max_s: float):
    from runtime_host.speech.stream import DictationStream

    return DictationStream(engine, sample_rate=rate, channels=1, sample_format="f32le", on_update=None,  # type: ignore[arg-type]
                           language=None, min_chunk_s=min_s, max_chunk_s=max_s)


def test_cuts_fall_in_pauses_and_never_exceed_the_maximum() -> None:
    rate = 8000
    rng = np.random.default_rng(3)
    speech = lambda s: (rng.standard_normal(int(rate * s)) * 0.2).astype(np.float32)  # noqa: E731
    pause = lambda s: (rng.standard_normal(int(rate * s)) * 0.001).astype(np.float32)  # noqa: E731
    # 3 s talk, 0.5 s pause, 3 s talk, 0.5 s pause, then 12 s without any pause.
    audio = np.concatenate([speech(3), pause(0.5), speech(3), pause(0.5), speech(12)])
    engine = _RecordingEngine()
    stream = _stream(engine, rate, min_s=2.0, max_s=5.0)
    for offset in range(0, audio.size, 800):
        stream.feed_samples(audio[offset : offset + 800])
    stream.finish()
    sizes = [n for n, _ in engine.chunks]  # at 16 kHz: twice the 8 kHz input
    assert abs(sum(sizes) - audio.size * 2) <= 2 * len(sizes)  # nothing lost, nothing doubled
    offsets = [o for _, o in engine.chunks]
    assert offsets[0] == 0
    assert offsets[1:] == pytest.approx(list(np.cumsum(sizes)[:-1] / 16000), abs=0.01)
    # The first cut lands inside the first pause (3.0 s - 3.5 s), resampled to 16 kHz.
    assert 3.0 * 16000 <= sizes[0] <= 3.5 * 16000
    assert max(sizes) <= 5.0 * 16000 + 800 * 2
    assert len(sizes) >= 5
