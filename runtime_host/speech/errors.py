"""Errors of the speech engine: each message says what happened and what to do next."""

from __future__ import annotations


class SpeechError(Exception):
    """Base class for every speech-to-text failure the engine reports."""


class ModelUnavailable(SpeechError):
    """The chosen speech model is not on this machine (and may not be downloaded)."""


class ModelIntegrityError(SpeechError):
    """A model file does not match its pinned sha256: it is damaged or was replaced."""


class AudioDecodeError(SpeechError):
    """The input is missing, not audio, corrupt, or holds no sound to transcribe."""


class EngineClosed(SpeechError):
    """The engine was shut down; create a new one to transcribe again."""
