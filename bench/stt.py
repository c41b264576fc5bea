"""Speech-to-text benchmark: the packaged Whisper base model on the espeak-ng reference set.

The sentences of tests/data/speech/sentences.txt are spoken offline by espeak-ng and joined into
one recording (0.6 s pauses), transcribed with the engine's defaults (int8 CPU, VAD, greedy,
language detection on). Prints one JSON object as its last line:

  audio_s      length of the recording
  rtf          recognition time / audio time (median of 3 runs; decoding the file included)
  wer          word error rate against the reference text (case and punctuation normalised)
  load_ms      model load time, sha256 verification of every model file included
  peak_rss_mb  peak resident memory of this process
plus: assemble_ms (joining the packaged parts once), rtf_clips / wer_clips (each sentence as its own
short file: Whisper pads every call to 30 s, so short clips cost more per second), rtf_stream /
wer_stream (the dictation path: the recording fed as 100 ms PCM pieces, chunked at pauses).
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from runtime_host.speech import SpeechEngine, SpeechSettings, ensure_packaged_model  # noqa: E402
from runtime_host.speech.metrics import corpus_word_error_rate, word_error_rate  # noqa: E402

SENTENCES = ROOT / "tests" / "data" / "speech" / "sentences.txt"


def load_sentences() -> list[str]:
    lines = SENTENCES.read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


def speak(text: str, out: Path) -> tuple[np.ndarray, int]:
    exe = shutil.which("espeak-ng")
    if exe is None:
        sys.exit("espeak-ng is not installed: `apt-get install espeak-ng` (see packaging/debian-packages.txt).")
    subprocess.run([exe, "-v", "en-us", "-w", str(out), text], check=True, capture_output=True)
    with wave.open(str(out), "rb") as w:
        rate = w.getframerate()
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy(), rate


def write_wav(path: Path, pcm: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.astype("<i2").tobytes())


def main() -> dict[str, float]:
    sentences = load_sentences()
    reference = " ".join(sentences)
    with tempfile.TemporaryDirectory(prefix="hearth-stt-bench-") as tmp:
        folder = Path(tmp)
        clips: list[Path] = []
        pieces: list[np.ndarray] = []
        rate = 22050
        for i, text in enumerate(sentences):
            path = folder / f"s{i:02d}.wav"
            pcm, rate = speak(text, path)
            clips.append(path)
            pieces += [pcm, np.zeros(int(rate * 0.6), np.int16)]
        recording = np.concatenate(pieces)
        joined = folder / "dictation.wav"
        write_wav(joined, recording, rate)
        audio_s = recording.size / rate

        models = folder / "models"
        t = time.perf_counter()
        ensure_packaged_model(models)
        assemble_ms = (time.perf_counter() - t) * 1000

        with SpeechEngine(SpeechSettings(models_dir=models, idle_unload_s=0)) as engine:
            load_ms = engine.preload().result()

            runs = []
            text = ""
            for _ in range(3):
                t = time.perf_counter()
                text = engine.transcribe(joined).result().text
                runs.append(time.perf_counter() - t)
            wer = word_error_rate(reference, text)

            t = time.perf_counter()
            clip_texts = [f.result().text for f in [engine.transcribe(p) for p in clips]]
            clips_s = time.perf_counter() - t
            clip_audio_s = sum(p.stat().st_size - 44 for p in clips) / 2 / rate

            stream = engine.open_stream(sample_rate=rate, sample_format="s16le")
            raw = recording.astype("<i2").tobytes()
            step = rate // 10 * 2
            t = time.perf_counter()
            for offset in range(0, len(raw), step):
                stream.feed(raw[offset : offset + step])
            streamed = stream.finish().result()
            stream_s = time.perf_counter() - t

    print(f"transcript: {text}", file=sys.stderr)
    return {
        "audio_s": round(audio_s, 2),
        "rtf": round(statistics.median(runs) / audio_s, 3),
        "wer": round(wer, 4),
        "load_ms": round(load_ms, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "assemble_ms": round(assemble_ms, 1),
        "rtf_clips": round(clips_s / clip_audio_s, 3),
        "wer_clips": round(corpus_word_error_rate(zip(sentences, clip_texts, strict=True)), 4),
        "rtf_stream": round(stream_s / audio_s, 3),
        "wer_stream": round(word_error_rate(reference, streamed.text), 4),
    }


if __name__ == "__main__":
    print(json.dumps(main()))
