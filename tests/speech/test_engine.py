"""The engine's model handling: assembling the packaged model once with pinned sha256, refusing a
tampered file, offline by default, lazy load and idle unload, and staying free of Qt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runtime_host.speech import (
    EngineClosed,
    ModelIntegrityError,
    ModelUnavailable,
    SpeechEngine,
    SpeechSettings,
    ensure_packaged_model,
    word_error_rate,
)
from runtime_host.speech.modelfiles import MODEL_SHA256, PACKAGED_MODEL_DIRNAME, PackagedSources, sha256_file


def test_packaged_model_assembled_once_and_verified(engine: SpeechEngine, models_dir: Path) -> None:
    engine.preload().result(timeout=120)
    folder = models_dir / PACKAGED_MODEL_DIRNAME
    assert sorted(p.name for p in folder.iterdir()) == sorted(MODEL_SHA256)
    for name, digest in MODEL_SHA256.items():
        assert sha256_file(folder / name) == digest
    stamp = (folder / "model.bin").stat().st_mtime_ns
    assert ensure_packaged_model(models_dir) == folder
    assert (folder / "model.bin").stat().st_mtime_ns == stamp  # verified, not joined again
    assert not [p for p in models_dir.iterdir() if p.name.startswith(".assembling")]


def _copy_model(models_dir: Path, dest_root: Path) -> Path:
    """A copy of the assembled model folder: small files copied, model.bin hard-linked (never written)."""
    src = models_dir / PACKAGED_MODEL_DIRNAME
    dst = dest_root / PACKAGED_MODEL_DIRNAME
    dst.mkdir(parents=True)
    for name in MODEL_SHA256:
        if name == "model.bin":
            os.link(src / name, dst / name)
        else:
            shutil.copyfile(src / name, dst / name)
    return dst


def test_tampered_model_file_is_refused(engine: SpeechEngine, models_dir: Path, tmp_path: Path) -> None:
    engine.preload().result(timeout=120)
    copy = _copy_model(models_dir, tmp_path)
    config = json.loads((copy / "config.json").read_text())
    config["suppress_ids"] = []
    (copy / "config.json").write_text(json.dumps(config))
    with SpeechEngine(SpeechSettings(models_dir=tmp_path)) as other:
        with pytest.raises(ModelIntegrityError) as err:
            other.preload().result(timeout=60)
    message = str(err.value)
    assert "config.json" in message and "sha256" in message and "Delete the folder" in message


def test_missing_model_file_is_reported(engine: SpeechEngine, models_dir: Path, tmp_path: Path) -> None:
    engine.preload().result(timeout=120)
    copy = _copy_model(models_dir, tmp_path)
    (copy / "tokenizer.json").unlink()
    with pytest.raises(ModelUnavailable, match="tokenizer.json"):
        ensure_packaged_model(tmp_path)


def test_bad_carrier_part_is_never_joined(tmp_path: Path) -> None:
    fake = tmp_path / "carrier"
    fake.mkdir()
    (fake / "model.bin.part1").write_bytes(b"\0" * 1024)
    (fake / "model.bin.part2").write_bytes(b"\0" * 1024)
    target_root = tmp_path / "models"
    with pytest.raises(ModelIntegrityError, match=r"model\.bin\.part1.*force-reinstall"):
        ensure_packaged_model(target_root, PackagedSources(part1=fake / "model.bin.part1", package2_data=fake))
    assert not (target_root / PACKAGED_MODEL_DIRNAME).exists()


def test_named_model_needs_permission_to_download(tmp_path: Path) -> None:
    with SpeechEngine(SpeechSettings(model="small", models_dir=tmp_path)) as eng:
        with pytest.raises(ModelUnavailable) as err:
            eng.preload().result(timeout=60)
    assert "downloads are off" in str(err.value) and "Settings" in str(err.value)
    assert not any(tmp_path.rglob("model.bin"))


def test_missing_model_folder_is_reported(tmp_path: Path) -> None:
    with SpeechEngine(SpeechSettings(model=str(tmp_path / "nowhere"), models_dir=tmp_path)) as eng:
        with pytest.raises(ModelUnavailable, match="holds no CTranslate2 'model.bin'"):
            eng.preload().result(timeout=60)


def test_model_folder_setting_is_used(engine: SpeechEngine, models_dir: Path, spoken, tmp_path: Path) -> None:
    engine.preload().result(timeout=120)
    folder = models_dir / PACKAGED_MODEL_DIRNAME
    with SpeechEngine(SpeechSettings(model=str(folder), models_dir=tmp_path, language="en")) as eng:
        text, path = spoken[0]
        result = eng.transcribe(path).result(timeout=120)
    assert result.model == str(folder)
    assert word_error_rate(text, result.text) < 0.15
    assert not (tmp_path / PACKAGED_MODEL_DIRNAME).exists()


def test_default_models_dir_is_in_hearth_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path))
    assert SpeechSettings().resolved_models_dir() == tmp_path / "models"


def test_lazy_load_and_idle_unload(engine: SpeechEngine, models_dir: Path, spoken) -> None:
    engine.preload().result(timeout=120)  # the shared folder is assembled already
    text, path = spoken[1]
    with SpeechEngine(SpeechSettings(models_dir=models_dir, language="en", idle_unload_s=0.3)) as eng:
        assert not eng.loaded  # nothing loads on construction
        started = time.perf_counter()
        fut = eng.transcribe(path)
        assert time.perf_counter() - started < 0.1  # returns while the model is loading
        assert word_error_rate(text, fut.result(timeout=120).text) < 0.15
        assert eng.stats.loads == 1 and eng.stats.last_load_ms is not None
        rss_loaded = psutil.Process().memory_info().rss
        deadline = time.monotonic() + 10
        while eng.stats.unloads == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not eng.loaded and eng.stats.unloads == 1
        freed_mb = (rss_loaded - psutil.Process().memory_info().rss) / 2**20
        assert freed_mb > 60, f"unloading gave back only {freed_mb:.0f} MB"
        assert word_error_rate(text, eng.transcribe(path).result(timeout=120).text) < 0.15
        assert eng.stats.loads == 2
    with pytest.raises(EngineClosed):
        eng.transcribe(path)


def test_busy_engine_is_not_unloaded(engine: SpeechEngine, models_dir: Path, spoken) -> None:
    engine.preload().result(timeout=120)
    with SpeechEngine(SpeechSettings(models_dir=models_dir, language="en", idle_unload_s=0.5)) as eng:
        for _, path in spoken[:3]:
            eng.transcribe(path).result(timeout=120)
            time.sleep(0.2)  # gaps shorter than the idle time
        assert eng.loaded and eng.stats.loads == 1


def test_speech_package_imports_no_qt_and_no_app() -> None:
    probe = (
        "import json, sys\n"
        "import runtime_host.speech, runtime_host.speech.cli, runtime_host.speech.engine, runtime_host.speech.stream\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert not {m for m in loaded if m.split(".")[0] in {"PySide6", "shiboken6", "qasync", "app"}}
    # Import-light: the heavy engine loads on first use only.
    assert not {"faster_whisper", "ctranslate2", "av"} & loaded
