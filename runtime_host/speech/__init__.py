"""Local speech-to-text (Qt-free): faster-whisper on CPU with the packaged, sha256-verified Whisper
base model; audio files and live PCM dictation, transcribed off the caller's thread.

Import-light: faster-whisper, CTranslate2 and PyAV load only when a model or file is first used.
"""

from __future__ import annotations

from runtime_host.speech.audio import SAMPLE_RATE, decode_file
from runtime_host.speech.engine import Segment, SpeechEngine, SpeechSettings, Transcript
from runtime_host.speech.errors import (
    AudioDecodeError,
    EngineClosed,
    ModelIntegrityError,
    ModelUnavailable,
    SpeechError,
)
from runtime_host.speech.metrics import word_error_rate
from runtime_host.speech.modelfiles import ensure_packaged_model, verify_model_dir
from runtime_host.speech.stream import DictationStream, StreamClosed

__all__ = [
    "SAMPLE_RATE",
    "AudioDecodeError",
    "DictationStream",
    "EngineClosed",
    "ModelIntegrityError",
    "ModelUnavailable",
    "Segment",
    "SpeechEngine",
    "SpeechError",
    "SpeechSettings",
    "StreamClosed",
    "Transcript",
    "decode_file",
    "ensure_packaged_model",
    "verify_model_dir",
    "word_error_rate",
]
