"""Audio in: decode files (wav, mp3, m4a, ogg and whatever else FFmpeg reads, via PyAV, offline)
and raw PCM chunks into the 16 kHz mono float32 samples Whisper expects, with clear errors."""

from __future__ import annotations

import gc
import io
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from runtime_host.speech.errors import AudioDecodeError

SAMPLE_RATE = 16000
SUPPORTED_SUFFIXES = (".wav", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".flac", ".webm", ".aac", ".mp4")
PcmFormat = Literal["s16le", "f32le"]

AudioSource = str | Path | bytes | BinaryIO


def _describe(source: AudioSource) -> str:
    if isinstance(source, str | Path):
        return f"'{source}'"
    if isinstance(source, bytes | bytearray):
        return f"the audio data ({len(source)} bytes)"
    name = getattr(source, "name", None)
    return f"'{name}'" if isinstance(name, str) else "the audio stream"


def decode_file(source: AudioSource, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Decode a file, bytes or binary stream to mono float32 samples at `sample_rate`.

    Raises `AudioDecodeError` when the file is missing, is not audio, is corrupt, or has no samples.
    """
    import av  # PyAV: bundles FFmpeg, needs no network and no system ffmpeg

    what = _describe(source)
    opened: str | BinaryIO
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise AudioDecodeError(f"No such audio file: {what}. Check the path and try again.")
        if not path.is_file():
            raise AudioDecodeError(f"{what} is a folder, not an audio file. Give the path of one audio file.")
        if path.stat().st_size == 0:
            raise AudioDecodeError(f"{what} is empty (0 bytes): there is nothing to transcribe.")
        opened = str(path)
    elif isinstance(source, bytes | bytearray):
        if not source:
            raise AudioDecodeError("The audio data is empty: there is nothing to transcribe.")
        opened = io.BytesIO(bytes(source))
    else:
        opened = source

    hint = "Use a wav, mp3, m4a or ogg recording; if it plays elsewhere, save it again and retry."
    resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)
    chunks: list[np.ndarray] = []
    try:
        with av.open(opened, mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise AudioDecodeError(f"{what} has no audio track, so there is nothing to transcribe. {hint}")
            stream = container.streams.audio[0]
            bad_frames = 0
            try:
                for packet in container.demux(stream):
                    try:
                        frames = packet.decode()
                    except av.error.InvalidDataError:
                        bad_frames += 1  # a damaged frame inside an otherwise good file: skip it
                        continue
                    for frame in frames:
                        frame.pts = None
                        for out in resampler.resample(frame):
                            chunks.append(out.to_ndarray().reshape(-1))
            except av.error.FFmpegError:
                if not chunks:
                    raise
                # Truncated at the end: keep what decoded.
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
    except AudioDecodeError:
        raise
    except av.error.FFmpegError as exc:
        raise AudioDecodeError(
            f"{what} is not an audio file Hearth can read, or it is corrupt ({exc.strerror or exc}). {hint}"
        ) from exc
    except (OSError, ValueError) as exc:
        raise AudioDecodeError(f"Could not read {what}: {exc}. {hint}") from exc
    finally:
        del resampler
        gc.collect()  # PyAV resampler objects are only freed by the collector

    if not chunks:
        raise AudioDecodeError(f"{what} holds no audio samples (empty or truncated recording). {hint}")
    audio = np.concatenate(chunks).astype(np.float32) / 32768.0
    if audio.size < sample_rate // 20:
        raise AudioDecodeError(f"{what} is shorter than 50 ms: there is nothing to transcribe. {hint}")
    return audio


def pcm_to_float(data: bytes, sample_format: PcmFormat = "s16le", channels: int = 1) -> np.ndarray:
    """Interpret raw little-endian PCM bytes as mono float32 samples in [-1, 1] (channels averaged)."""
    dtype: np.dtype[Any]
    if sample_format == "s16le":
        width, dtype = 2, np.dtype("<i2")
    elif sample_format == "f32le":
        width, dtype = 4, np.dtype("<f4")
    else:
        raise ValueError(f"Unsupported PCM sample format {sample_format!r}: use 's16le' or 'f32le'.")
    if channels < 1:
        raise ValueError(f"channels must be at least 1, got {channels}")
    frame = width * channels
    usable = len(data) - len(data) % frame
    samples = np.frombuffer(data[:usable], dtype=dtype).astype(np.float32)
    if sample_format == "s16le":
        samples /= 32768.0
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1)
    return samples


def resample(audio: np.ndarray, from_rate: int, to_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Linear-interpolation resampling: plenty for speech recognition at 16 kHz."""
    if from_rate == to_rate or audio.size == 0:
        return audio.astype(np.float32, copy=False)
    if from_rate <= 0:
        raise ValueError(f"sample rate must be positive, got {from_rate}")
    n_out = int(round(audio.size * to_rate / from_rate))
    t_out = np.arange(n_out, dtype=np.float64) * (from_rate / to_rate)
    return np.interp(t_out, np.arange(audio.size, dtype=np.float64), audio).astype(np.float32)
