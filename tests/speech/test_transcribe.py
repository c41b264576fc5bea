"""Transcription of speech made offline by espeak-ng: word error rate on the reference sentences,
the file formats people drop on the composer (wav, mp3, m4a, ogg), bytes input, and bad inputs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from runtime_host.speech import AudioDecodeError, SpeechEngine, word_error_rate
from runtime_host.speech.metrics import corpus_word_error_rate, normalize_words
from tests.speech.conftest import encode_audio, read_wav, write_wav

WER_LIMIT = 0.15


def test_wer_normalises_case_and_punctuation() -> None:
    assert normalize_words("Hello, World! It's  fine-tuned.") == ["hello", "world", "it's", "fine", "tuned"]
    assert word_error_rate("the cat sat", "The cat, sat.") == 0.0
    assert word_error_rate("the cat sat", "the dog sat") == pytest.approx(1 / 3)
    assert word_error_rate("the cat sat", "the cat") == pytest.approx(1 / 3)
    assert word_error_rate("", "") == 0.0
    assert corpus_word_error_rate([("a b", "a b"), ("c d e f", "c x e")]) == pytest.approx(2 / 6)


def test_espeak_sentences_word_error_rate(engine: SpeechEngine, spoken: list[tuple[str, Path]]) -> None:
    futures = [(text, engine.transcribe(path)) for text, path in spoken]
    pairs = [(text, fut.result(timeout=120).text) for text, fut in futures]
    wer = corpus_word_error_rate(pairs)
    report = "\n".join(f"  {word_error_rate(r, h):.2f}  {r!r} -> {h!r}" for r, h in pairs)
    assert wer < WER_LIMIT, f"WER {wer:.3f} over the espeak set:\n{report}"


@pytest.mark.parametrize(
    ("suffix", "codec", "container"),
    [("mp3", "libmp3lame", None), ("m4a", "aac", "ipod"), ("ogg", "libopus", None), ("wav", "pcm_s16le", None)],
)
def test_audio_formats(
    engine: SpeechEngine, spoken: list[tuple[str, Path]], tmp_path: Path, suffix: str, codec: str, container: str | None
) -> None:
    (t1, p1), (t2, p2) = spoken[0], spoken[1]
    a1, rate = read_wav(p1)
    a2, _ = read_wav(p2)
    joined = np.concatenate([a1, np.zeros(rate // 2, np.float32), a2])
    path = encode_audio(joined, rate, tmp_path / f"two.{suffix}", codec, container)
    result = engine.transcribe(path).result(timeout=120)
    assert word_error_rate(f"{t1} {t2}", result.text) < WER_LIMIT, result.text
    assert result.duration_s == pytest.approx(joined.size / rate, abs=0.2)
    assert result.segments and result.segments[-1].end <= result.duration_s + 0.5


def test_bytes_and_async(engine: SpeechEngine, spoken: list[tuple[str, Path]]) -> None:
    text, path = spoken[2]
    result = engine.transcribe(path.read_bytes()).result(timeout=120)
    assert word_error_rate(text, result.text) < WER_LIMIT, result.text

    async def go() -> str:
        return (await engine.atranscribe(path)).text

    assert word_error_rate(text, asyncio.run(go())) < WER_LIMIT


def test_silence_gives_empty_text(engine: SpeechEngine, tmp_path: Path) -> None:
    path = write_wav(tmp_path / "silence.wav", np.zeros(16000 * 2, np.float32), 16000)
    assert engine.transcribe(path).result(timeout=120).text == ""


def _video_only_file(path: Path) -> Path:
    import av

    with av.open(str(path), mode="w") as c:
        stream = c.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"  # type: ignore[attr-defined]
        for _ in range(3):
            frame = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), format="rgb24")
            for packet in stream.encode(frame):  # type: ignore[attr-defined]
                c.mux(packet)
        for packet in stream.encode(None):  # type: ignore[attr-defined]
            c.mux(packet)
    return path


@pytest.mark.parametrize(
    ("name", "make", "expect"),
    [
        ("noise.wav", lambda p: p.write_bytes(np.random.default_rng(7).bytes(20000)), "not an audio file"),
        ("notes.mp3", lambda p: p.write_text("Meeting notes: buy milk.\n" * 20), "not an audio file"),
        ("empty.ogg", lambda p: p.write_bytes(b""), "empty"),
        ("header.wav", None, "no audio samples"),
        ("clip.mp4", _video_only_file, "no audio track"),
        ("missing.m4a", lambda p: None, "No such audio file"),
    ],
)
def test_bad_inputs_give_clear_errors(engine: SpeechEngine, spoken, tmp_path: Path, name, make, expect) -> None:
    path = tmp_path / name
    if make is None:  # a wav whose header survived but whose samples were cut off
        path.write_bytes(spoken[0][1].read_bytes()[:44])
    else:
        make(path)
    with pytest.raises(AudioDecodeError) as err:
        engine.transcribe(path).result(timeout=60)
    message = str(err.value)
    assert expect in message, message
    assert name in message  # says which file


def test_truncated_file_keeps_what_decodes(engine: SpeechEngine, spoken: list[tuple[str, Path]], tmp_path: Path) -> None:
    text, path = spoken[3]
    data = path.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: len(data) * 6 // 10])
    result = engine.transcribe(cut).result(timeout=120)
    words = normalize_words(result.text)
    assert words and words[0] == normalize_words(text)[0], result.text


def test_calls_never_block(engine: SpeechEngine, spoken: list[tuple[str, Path]]) -> None:
    started = time.perf_counter()
    futures = [engine.transcribe(path) for _, path in spoken[:3]]
    assert time.perf_counter() - started < 0.1  # returned before any recognition happened
    assert not futures[-1].done()
    for fut in futures:
        fut.result(timeout=120)
