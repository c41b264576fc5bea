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
    first_update_at_s: float | None = None
    for offset in range(0, len(pcm), piece):
        started = time.perf_counter()
        stream.feed(pcm[offset : offset + piece])
        slowest = max(slowest, time.perf_counter() - started)
        if first_update_at_s is None and got_update.is_set():
            first_update_at_s = offset / 2 / rate
        time.sleep(0.01)  # a recording arrives over time; this one comes ~10x faster than real time
    result = stream.finish().result(timeout=180)

    assert slowest < 0.1, f"feed() blocked for {slowest:.3f} s"
    assert stream.chunks_done >= 3, stream.chunks_done
    assert first_update_at_s is not None, "no text arrived before the recording ended"
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
