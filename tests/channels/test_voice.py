"""A voice note sent to the bot is downloaded (getFile, then /file/bot<token>/<path>) and transcribed
on this machine before the agent sees it: real espeak-ng speech, Opus in OGG as Telegram records it,
the packaged Whisper model."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime_host.channels.podport import PodChannelPort
from runtime_host.speech import SpeechEngine, SpeechSettings
from tests.channels.conftest import OWNER, ChannelFactory, link_owner, sent
from tests.helpers.fake_model import FakeModelServer
from tests.helpers.fake_telegram import FakeTelegram
from tests.speech.conftest import encode_audio, read_wav


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpeechEngine]:
    eng = SpeechEngine(SpeechSettings(models_dir=tmp_path_factory.mktemp("models"), language="en", idle_unload_s=0))
    try:
        yield eng
    finally:
        eng.close()


def voice_note(text: str, folder: Path) -> bytes:
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.fail("espeak-ng is not installed: `apt-get install espeak-ng` (listed in packaging/debian-packages.txt).")
    wav = folder / "note.wav"
    subprocess.run([exe, "-v", "en-us", "-w", str(wav), text], check=True, capture_output=True, timeout=30)
    samples, rate = read_wav(wav)
    return encode_audio(samples, rate, folder / "note.oga", "libopus", "ogg").read_bytes()


async def test_voice_note_transcribed_locally(pod: Any, tg: FakeTelegram, make_channel: ChannelFactory,
                                              engine: SpeechEngine, fake_model: FakeModelServer,
                                              tmp_path: Path) -> None:
    port = PodChannelPort(pod.pod, speech=engine)
    ch = make_channel(port, max_download_bytes=2 * 1024 * 1024)
    await ch.start()
    await link_owner(ch, tg, pod.person.id)

    tg.send_voice(OWNER, voice_note("What is the weather tomorrow", tmp_path), duration=2)
    msgs = await sent(tg, OWNER, 3, timeout=30)
    heard, answer = msgs[1], msgs[2]
    assert heard.text.startswith("🎙") and "weather tomorrow" in heard.text.lower()
    assert "weather tomorrow" in fake_model.requests[-1].last_user.lower()  # the agent got words, not audio
    assert answer.text.lower().startswith("you said: what is the weather tomorrow")
    assert tg.count_calls("getFile") == 1

    tg.send_voice(OWNER, b"\0" * 16, declared_size=3 * 1024 * 1024)  # larger than this channel downloads
    msgs = await sent(tg, OWNER, 4)
    assert "3.0 MB" in msgs[-1].text and tg.count_calls("getFile") == 1

    tg.send_voice(OWNER, b"this is not audio at all")
    msgs = await sent(tg, OWNER, 5, timeout=20)
    assert "audio" in msgs[-1].text.lower() and len(fake_model.requests) == 1
