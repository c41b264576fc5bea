"""Voice input as a person meets it, offscreen: a recorded file fed in as the microphone, push-to-talk,
toggle, the level meter, Escape to cancel, dropped files, and the message when no microphone exists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

from app.voice import NO_MICROPHONE, MicrophoneInput, RecordedInput, VoiceButton, VoiceController, level_of
from runtime_host.speech import SpeechEngine, SpeechSettings, word_error_rate
from tests.speech.conftest import load_sentences, speak

pytest.importorskip("PySide6.QtMultimedia", reason="QtMultimedia comes with pyside6-addons")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpeechEngine]:
    eng = SpeechEngine(SpeechSettings(models_dir=tmp_path_factory.mktemp("models"), language="en", idle_unload_s=0))
    eng.preload().result(timeout=120)
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Two reference sentences spoken by espeak-ng into one wav: the 'microphone' input."""
    first, second = load_sentences()[:2]
    path = speak(f"{first} {second}", tmp_path_factory.mktemp("voice") / "dictation.wav")
    return f"{first} {second}", path


HOLD_WAIT_MS = 500  # longer than a click, shorter than anything that would end the recording


class Window(QWidget):
    def __init__(self, controller: VoiceController) -> None:
        super().__init__()
        self.composer = QPlainTextEdit(self)
        self.voice = VoiceButton(controller, self)
        self.voice.attach_to(self.composer)
        layout = QVBoxLayout(self)
        layout.addWidget(self.composer)
        layout.addWidget(self.voice)


def make_window(qtbot, engine: SpeechEngine, path: Path, speed: float = 8.0) -> Window:
    controller = VoiceController(engine, input_factory=lambda: RecordedInput(path, speed=speed))
    w = Window(controller)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_recorded_file_through_the_microphone_path(qtbot, engine, recording) -> None:
    reference, path = recording
    w = make_window(qtbot, engine, path)
    w.composer.setPlainText("Note:")
    w.composer.moveCursor(w.composer.textCursor().MoveOperation.End)
    states: list[str] = []
    levels: list[float] = []
    w.voice.controller.state_changed.connect(states.append)
    w.voice.controller.level.connect(levels.append)

    with qtbot.waitSignal(w.voice.transcribed, timeout=60000) as got:
        w.voice.toggle()  # the recorded input ends by itself, which stops the recording
        assert w.voice.meter.isVisible() and "Listening" in w.voice.status.text()
    text = got.args[0]
    assert word_error_rate(reference, text) < 0.15, text
    assert states == ["recording", "transcribing", "idle"]
    assert max(levels) > 0.5 and levels[-1] == 0.0  # the meter moved, then reset
    assert w.composer.toPlainText() == f"Note: {text}"
    assert not w.voice.meter.isVisible() and w.voice.status.text() == ""


def test_push_to_talk_records_while_held(qtbot, engine, recording) -> None:
    reference, path = recording
    w = make_window(qtbot, engine, path, speed=4.0)
    qtbot.mousePress(w.voice.button, Qt.MouseButton.LeftButton)
    assert w.voice.controller.state == "recording"
    qtbot.wait(800)  # ~3 s of audio at 4x
    with qtbot.waitSignal(w.voice.transcribed, timeout=60000) as got:
        qtbot.mouseRelease(w.voice.button, Qt.MouseButton.LeftButton)
        assert w.voice.controller.state == "transcribing"
        assert not w.voice.button.isEnabled()
    heard = got.args[0].lower().split()
    assert heard and heard[0].strip(",.") == reference.lower().split()[0]
    assert word_error_rate(reference, got.args[0]) > 0.2  # released early: only the first part


def test_click_toggles(qtbot, engine, recording) -> None:
    _, path = recording
    w = make_window(qtbot, engine, path, speed=1.0)
    qtbot.mouseClick(w.voice.button, Qt.MouseButton.LeftButton)  # a short click: keeps recording
    qtbot.wait(HOLD_WAIT_MS)
    assert w.voice.controller.state == "recording"
    with qtbot.waitSignal(w.voice.controller.state_changed, timeout=5000):
        qtbot.mouseClick(w.voice.button, Qt.MouseButton.LeftButton)
    assert w.voice.controller.state == "transcribing"
    qtbot.waitUntil(lambda: w.voice.controller.state == "idle", timeout=60000)



def test_escape_cancels(qtbot, engine, recording) -> None:
    _, path = recording
    w = make_window(qtbot, engine, path, speed=1.0)
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5000)
    got: list[str] = []
    w.voice.transcribed.connect(got.append)
    w.voice.toggle()
    qtbot.wait(300)
    with qtbot.waitSignal(w.voice.controller.cancelled, timeout=5000):
        qtbot.keyClick(w.composer, Qt.Key.Key_Escape)
    assert w.voice.controller.state == "idle" and w.voice.status.text() == "Cancelled."
    qtbot.wait(500)
    assert got == [] and w.composer.toPlainText() == ""


def test_dropped_file_is_transcribed(qtbot, engine, recording, tmp_path: Path) -> None:
    reference, path = recording
    w = make_window(qtbot, engine, path)
    with qtbot.waitSignal(w.voice.transcribed, timeout=60000) as got:
        w.voice.controller.transcribe_file(path)
    assert word_error_rate(reference, got.args[0]) < 0.15
    bad = tmp_path / "memo.m4a"
    bad.write_text("not audio")
    with qtbot.waitSignal(w.voice.controller.failed, timeout=30000) as failed:
        w.voice.controller.transcribe_file(bad)
    assert "memo.m4a" in failed.args[0] and "not an audio file" in failed.args[0]
    assert w.voice.status.text() == failed.args[0]


def test_no_microphone_says_so(qtbot, engine) -> None:
    if MicrophoneInput.unavailable_reason() is None:
        pytest.skip("this machine has a microphone")
    controller = VoiceController(engine)  # the real microphone input
    button = VoiceButton(controller)
    qtbot.addWidget(button)
    with qtbot.waitSignal(controller.failed, timeout=5000) as failed:
        button.toggle()
    assert failed.args[0] == NO_MICROPHONE
    assert controller.state == "idle" and button.status.text() == NO_MICROPHONE


def test_level_meter_scale() -> None:
    assert level_of(b"", "s16le") == 0.0
    assert level_of(np.zeros(160, "<i2").tobytes(), "s16le") == 0.0
    loud = level_of((np.ones(160) * 32000).astype("<i2").tobytes(), "s16le")
    quiet = level_of((np.ones(160) * 100).astype("<i2").tobytes(), "s16le")
    assert 0.95 < loud <= 1.0 and 0 < quiet < 0.4
