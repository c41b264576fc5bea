"""Voice input: microphone capture with QtMultimedia, push-to-talk and toggle, a level meter,
Escape to cancel, and the transcript handed to the composer. Recognition is `runtime_host.speech`.

- `MicrophoneInput` records from the default input device with `QAudioSource`.
- `RecordedInput` plays an audio file in as if it were a microphone (tests, demos, diagnostics).
- `VoiceController` drives one dictation: input → `DictationStream` → transcript, as Qt signals.
- `VoiceButton` is the widget: hold to talk, click to toggle, meter and status line beside it.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QByteArray, QElapsedTimer, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QProgressBar, QToolButton, QWidget

from app.markdown import plain_label
from runtime_host.speech import SpeechEngine, SpeechError, SpeechSettings, Transcript
from runtime_host.speech.audio import SAMPLE_RATE, decode_file
from runtime_host.speech.stream import DictationStream

NO_MICROPHONE = (
    "No microphone found. Connect one or enable it in your system's sound settings, then try again. "
    "You can still drop an audio file (wav, mp3, m4a, ogg) on the composer."
)
NO_PERMISSION = (
    "Hearth may not use the microphone. Allow microphone access for Hearth in your system's privacy "
    "settings, then try again."
)

# How long the button must be held to count as push-to-talk (shorter is a click: toggle mode).
HOLD_MS = 350


class AudioInput(QObject):
    """A source of raw PCM. Subclasses set the format attributes and emit:

    Signals:
    data(bytes): a piece of PCM in (`sample_rate`, `channels`, `sample_format`).
    failed(str): the input cannot record; the text says why and what to do.
    ended(): the input ran out by itself (a file at its end, a device unplugged).
    """

    data = Signal(bytes)
    failed = Signal(str)
    ended = Signal()

    sample_rate: int = SAMPLE_RATE
    channels: int = 1
    sample_format: str = "s16le"

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class MicrophoneInput(AudioInput):
    """The default microphone through `QAudioSource`: 16 kHz mono 16-bit when the device allows,
    else the device's preferred format (the dictation stream resamples and mixes down)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._source: Any = None
        self._io: Any = None

    @staticmethod
    def unavailable_reason() -> str | None:
        """None when recording can start, else the message to show."""
        from PySide6.QtCore import QCoreApplication, QMicrophonePermission
        from PySide6.QtMultimedia import QMediaDevices

        app = QCoreApplication.instance()
        if app is not None and app.checkPermission(QMicrophonePermission()) == Qt.PermissionStatus.Denied:
            return NO_PERMISSION
        if QMediaDevices.defaultAudioInput().isNull():
            return NO_MICROPHONE
        return None

    def start(self) -> None:
        from PySide6.QtMultimedia import QAudio, QAudioFormat, QAudioSource, QMediaDevices

        reason = self.unavailable_reason()
        if reason is not None:
            self.failed.emit(reason)
            return
        device = QMediaDevices.defaultAudioInput()
        fmt = QAudioFormat()
        fmt.setSampleRate(SAMPLE_RATE)
        fmt.setChannelCount(1)
        fmt.setSampleFormat(QAudioFormat.SampleFormat.Int16)
        if not device.isFormatSupported(fmt):
            fmt = device.preferredFormat()
        kinds = {QAudioFormat.SampleFormat.Int16: "s16le", QAudioFormat.SampleFormat.Float: "f32le"}
        if fmt.sampleFormat() not in kinds:
            self.failed.emit(
                f"The microphone {device.description()!r} only offers a sample format Hearth cannot read "
                f"({fmt.sampleFormat().name}). Choose another input device in your system's sound settings."
            )
            return
        self.sample_rate, self.channels = fmt.sampleRate(), fmt.channelCount()
        self.sample_format = kinds[fmt.sampleFormat()]
        self._source = QAudioSource(device, fmt, self)
        self._source.stateChanged.connect(self._on_state_changed)
        self._io = self._source.start()
        if self._io is None or self._source.error() != QAudio.Error.NoError:
            self.failed.emit(
                f"The microphone {device.description()!r} could not be opened ({self._source.error().name}). "
                "Check that no other program holds it and that it is not muted, then try again."
            )
            return
        self._io.readyRead.connect(self._on_ready_read)

    def stop(self) -> None:
        if self._source is not None:
            self._on_ready_read()
            source, self._source, self._io = self._source, None, None
            source.stateChanged.disconnect(self._on_state_changed)
            source.stop()
            source.deleteLater()

    def _on_ready_read(self) -> None:
        if self._io is not None:
            chunk: QByteArray = self._io.readAll()
            if chunk.size():
                self.data.emit(chunk.data())

    def _on_state_changed(self, state: Any) -> None:
        from PySide6.QtMultimedia import QAudio

        if self._source is None or self._source.error() == QAudio.Error.NoError:
            return
        error = self._source.error()
        self.stop()
        if error == QAudio.Error.OpenError:
            self.failed.emit("The microphone could not be opened. Check that it is connected and not in use, then try again.")
        else:
            self.failed.emit(f"Recording stopped: the microphone reported {error.name}. Check the device and try again.")
            self.ended.emit()


class RecordedInput(AudioInput):
    """Feeds an audio file in as if it were being recorded: `chunk_ms` pieces of 16 kHz mono s16,
    at `speed` times real time, then emits `ended`. Useful for tests and for trying voice input
    on a machine without a microphone."""

    def __init__(self, path: str | Path, *, speed: float = 1.0, chunk_ms: int = 50, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.speed = speed
        self.chunk_ms = chunk_ms
        self.sample_rate, self.channels, self.sample_format = SAMPLE_RATE, 1, "s16le"
        self._pcm = b""
        self._pos = 0
        self._timer = QTimer(self)
        self._timer.setInterval(max(1, int(chunk_ms / speed)))
        self._timer.timeout.connect(self._on_tick)

    def start(self) -> None:
        try:
            samples = decode_file(self.path)
        except SpeechError as exc:
            self.failed.emit(str(exc))
            return
        self._pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
        self._pos = 0
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _on_tick(self) -> None:
        step = SAMPLE_RATE * self.chunk_ms // 1000 * 2
        piece = self._pcm[self._pos : self._pos + step]
        self._pos += step
        if piece:
            self.data.emit(piece)
        if self._pos >= len(self._pcm):
            self._timer.stop()
            self.ended.emit()


def level_of(pcm: bytes, sample_format: str) -> float:
    """Loudness of a PCM piece for a meter: 0 at -60 dBFS or below, 1 at full scale."""
    if sample_format == "s16le":
        samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], "<i2").astype(np.float32) / 32768.0
    else:
        samples = np.frombuffer(pcm[: len(pcm) // 4 * 4], "<f4")
    if samples.size == 0:
        return 0.0
    rms = float(np.sqrt(np.mean(samples * samples)))
    return 0.0 if rms <= 1e-6 else max(0.0, min(1.0, (20 * math.log10(rms) + 60) / 60))


class VoiceController(QObject):
    """One dictation at a time: start → record and transcribe in chunks → stop → final transcript.

    Signals:
    state_changed(str): "idle", "recording" or "transcribing".
    level(float): input loudness 0..1 while recording.
    partial(str): the transcript so far, while recording.
    transcribed(str): the final transcript (empty when nothing was said).
    failed(str): a message for the person: what happened and what to do.
    cancelled(): the dictation was dropped (Escape).
    """

    state_changed = Signal(str)
    level = Signal(float)
    partial = Signal(str)
    transcribed = Signal(str)
    failed = Signal(str)
    cancelled = Signal()

    # Hops from the engine's thread to the Qt thread (queued because the emitter is another thread).
    _partial_from_worker = Signal(str)
    _done_from_worker = Signal(object, object)

    def __init__(
        self,
        engine: SpeechEngine | None = None,
        input_factory: Callable[[], AudioInput] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._engine = engine
        self._owns_engine = engine is None
        self._input_factory = input_factory or MicrophoneInput
        self._input: AudioInput | None = None
        self._stream: DictationStream | None = None
        self._generation = 0
        self.state = "idle"
        self._partial_from_worker.connect(self._on_partial_from_worker)
        self._done_from_worker.connect(self._on_done_from_worker)

    @property
    def engine(self) -> SpeechEngine:
        if self._engine is None:
            self._engine = SpeechEngine(SpeechSettings())
        return self._engine

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    # -- commands
    def start(self) -> None:
        if self.state != "idle":
            return
        self._generation += 1
        source = self._input_factory()
        self._input = source
        source.failed.connect(self._on_input_failed)
        source.ended.connect(self.stop)
        source.data.connect(self._on_data)
        self._set_state("recording")
        source.start()  # may emit failed at once (no microphone): handled by _on_input_failed
        if self._input is source:
            generation = self._generation
            try:
                self._stream = self.engine.open_stream(
                    sample_rate=source.sample_rate,
                    channels=source.channels,
                    sample_format=source.sample_format,  # type: ignore[arg-type]
                    on_update=lambda text: self._emit_partial(generation, text),
                )
            except SpeechError as exc:
                self._abort(str(exc))

    def stop(self) -> None:
        """End the recording and transcribe what is left."""
        if self.state != "recording":
            return
        self._close_input()
        stream, self._stream = self._stream, None
        if stream is None:
            self._set_state("idle")
            return
        self._set_state("transcribing")
        self.level.emit(0.0)
        self._watch(stream.finish())

    def cancel(self) -> None:
        """Drop the recording and anything queued for it."""
        if self.state == "idle":
            return
        self._generation += 1
        self._close_input()
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        self.level.emit(0.0)
        self._set_state("idle")
        self.cancelled.emit()

    def transcribe_file(self, path: str | Path) -> None:
        """Transcribe an audio file (dropped on the composer, a mail attachment) with the same signals."""
        if self.state != "idle":
            return
        self._generation += 1
        self._set_state("transcribing")
        try:
            self._watch(self.engine.transcribe(Path(path)))
        except SpeechError as exc:
            self._abort(str(exc))

    def close(self) -> None:
        self.cancel()
        if self._owns_engine and self._engine is not None:
            self._engine.close()
            self._engine = None

    # -- plumbing
    def _watch(self, future: concurrent.futures.Future[Transcript]) -> None:
        generation = self._generation
        future.add_done_callback(lambda f: self._done_from_worker.emit(generation, f))

    def _emit_partial(self, generation: int, text: str) -> None:
        if generation == self._generation:
            self._partial_from_worker.emit(text)

    def _on_partial_from_worker(self, text: str) -> None:
        if self.state in ("recording", "transcribing"):
            self.partial.emit(text)

    def _on_done_from_worker(self, generation: int, future: concurrent.futures.Future[Transcript]) -> None:
        if generation != self._generation or future.cancelled():
            return
        self._set_state("idle")
        exc = future.exception()
        if exc is None:
            self.transcribed.emit(future.result().text)
        elif isinstance(exc, SpeechError):
            self.failed.emit(str(exc))
        else:
            self.failed.emit(f"Speech recognition failed unexpectedly ({type(exc).__name__}: {exc}). Try again; "
                             "if it keeps failing, choose another speech model in Settings.")

    def _on_data(self, pcm: bytes) -> None:
        if self._stream is None or self._input is None:
            return
        self.level.emit(level_of(pcm, self._input.sample_format))
        try:
            self._stream.feed(pcm)
        except SpeechError as exc:
            self._abort(str(exc))

    def _on_input_failed(self, message: str) -> None:
        self._abort(message)

    def _abort(self, message: str) -> None:
        self._generation += 1
        self._close_input()
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        self.level.emit(0.0)
        self._set_state("idle")
        self.failed.emit(message)

    def _close_input(self) -> None:
        source, self._input = self._input, None
        if source is not None:
            source.data.disconnect(self._on_data)
            source.ended.disconnect(self.stop)
            source.failed.disconnect(self._on_input_failed)
            source.stop()
            source.deleteLater()


class VoiceButton(QWidget):
    """Microphone button with a level meter and a status line.

    Hold the button to talk (release to stop), or click once to start and again to stop.
    Escape cancels; Ctrl+Shift+Space toggles from anywhere in the window.

    Signals:
    transcribed(str): the final transcript, ready for the composer.
    """

    transcribed = Signal(str)

    def __init__(self, controller: VoiceController | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller or VoiceController(parent=self)
        self.button = QToolButton(self)
        self.button.setText("Talk")
        self.button.setToolTip("Hold to talk, or click to start and click again to stop (Esc cancels)")
        self.meter = QProgressBar(self)
        self.meter.setRange(0, 100)
        self.meter.setTextVisible(False)
        self.meter.setFixedWidth(80)
        self.meter.setFixedHeight(8)
        self.meter.setVisible(False)
        self.status = plain_label(parent=self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)
        layout.addWidget(self.meter)
        layout.addWidget(self.status, 1)

        self._held = QElapsedTimer()
        self._started_by_press = False
        self.button.pressed.connect(self._on_pressed)
        self.button.released.connect(self._on_released)
        self.escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, context=Qt.ShortcutContext.WindowShortcut)
        self.escape.activated.connect(self.controller.cancel)
        self.escape.setEnabled(False)
        self.toggle_shortcut = QShortcut(QKeySequence("Ctrl+Shift+Space"), self, context=Qt.ShortcutContext.WindowShortcut)
        self.toggle_shortcut.activated.connect(self.toggle)

        c = self.controller
        c.state_changed.connect(self._on_state_changed)
        c.level.connect(self._on_level)
        c.partial.connect(self._on_partial)
        c.transcribed.connect(self._on_transcribed)
        c.failed.connect(self._on_failed)
        c.cancelled.connect(self._on_cancelled)

    def attach_to(self, composer: QPlainTextEdit) -> None:
        """Insert each final transcript at the composer's cursor (with a space when needed)."""

        def insert(text: str) -> None:
            if not text:
                return
            cursor = composer.textCursor()
            before = composer.toPlainText()[: cursor.position()]
            cursor.insertText((" " if before and not before[-1].isspace() else "") + text)
            composer.setTextCursor(cursor)
            composer.setFocus()

        self.transcribed.connect(insert)

    def toggle(self) -> None:
        if self.controller.state == "recording":
            self.controller.stop()
        elif self.controller.state == "idle":
            self.controller.start()

    # -- push-to-talk and toggle on one button
    def _on_pressed(self) -> None:
        self._started_by_press = self.controller.state == "idle"
        if self._started_by_press:
            self.controller.start()
        # Timed from when recording is running: opening the microphone can take a while on a busy
        # machine, and that wait must not turn a short click into push-to-talk.
        self._held.start()

    def _on_released(self) -> None:
        if self._started_by_press:
            if self._held.elapsed() >= HOLD_MS:  # held: push-to-talk ends on release
                self.controller.stop()
            # a short click leaves it recording (toggle mode) until the next click
        elif self.controller.state == "recording":
            self.controller.stop()
        self._started_by_press = False

    # -- controller signals
    def _on_state_changed(self, state: str) -> None:
        recording = state == "recording"
        self.meter.setVisible(recording)
        self.escape.setEnabled(state != "idle")
        self.button.setText("Stop" if recording else "Talk")
        self.button.setEnabled(state != "transcribing")
        if recording:
            self.status.setText("Listening… release or click to stop, Esc to cancel")
        elif state == "transcribing":
            self.status.setText("Transcribing…")

    def _on_level(self, value: float) -> None:
        self.meter.setValue(int(value * 100))

    def _on_partial(self, text: str) -> None:
        self.status.setText(f"Listening… {text[-80:]}")

    def _on_transcribed(self, text: str) -> None:
        self.status.setText("" if text else "Nothing was heard. Speak closer to the microphone and try again.")
        self.transcribed.emit(text)

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)

    def _on_cancelled(self) -> None:
        self.status.setText("Cancelled.")
