"""Speech test fixtures: sentences spoken offline by espeak-ng, the packaged model assembled once per
session into a temporary models folder, and one shared engine (English, so no detection pass)."""

from __future__ import annotations

import shutil
import subprocess
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from runtime_host.speech import SpeechEngine, SpeechSettings

SENTENCES_FILE = Path(__file__).resolve().parents[1] / "data" / "speech" / "sentences.txt"


def load_sentences(path: Path = SENTENCES_FILE) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def speak(text: str, out: Path, voice: str = "en-us") -> Path:
    """Speak `text` into a wav file with espeak-ng (22050 Hz mono s16)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.fail("espeak-ng is not installed: `apt-get install espeak-ng` (listed in packaging/debian-packages.txt).")
    subprocess.run([exe, "-v", voice, "-w", str(out), text], check=True, capture_output=True, timeout=30)
    return out


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the sample rate of a 16-bit PCM wav."""
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
        return data, w.getframerate()


def write_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return path


def encode_audio(samples: np.ndarray, rate: int, out: Path, codec: str, container: str | None = None) -> Path:
    """Encode mono float samples with PyAV (mp3 via libmp3lame, m4a via aac, ogg via libopus)."""
    import av

    with av.open(str(out), mode="w", format=container) as c:
        stream = c.add_stream(codec, rate=48000 if codec == "libopus" else rate)
        stream.layout = "mono"  # type: ignore[attr-defined]
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=stream.rate)  # type: ignore[attr-defined]
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
        frame.sample_rate = rate
        for f in resampler.resample(frame) + resampler.resample(None):
            for packet in stream.encode(f):  # type: ignore[attr-defined]
                c.mux(packet)
        for packet in stream.encode(None):  # type: ignore[attr-defined]
            c.mux(packet)
    return out


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    found = load_sentences()
    assert len(found) >= 5, f"expected the reference sentences in {SENTENCES_FILE}"
    return found


@pytest.fixture(scope="session")
def spoken(sentences: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    """(reference text, wav path) for every sentence."""
    folder = tmp_path_factory.mktemp("spoken")
    return [(text, speak(text, folder / f"s{i:02d}.wav")) for i, text in enumerate(sentences, 1)]


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def engine(models_dir: Path) -> Iterator[SpeechEngine]:
    eng = SpeechEngine(SpeechSettings(models_dir=models_dir, language="en", idle_unload_s=0))
    try:
        yield eng
    finally:
        eng.close()
