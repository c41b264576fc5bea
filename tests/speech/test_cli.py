"""`python -m runtime_host transcribe FILE`, through the sub-command the pod CLI mounts."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_host.speech import word_error_rate
from runtime_host.speech.cli import add_transcribe_parser, run_transcribe

ROOT = Path(__file__).resolve().parents[2]


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m runtime_host")
    add_transcribe_parser(parser.add_subparsers(dest="cmd", required=True))
    return parser.parse_args(argv)


def test_transcribe_prints_the_transcript(engine, models_dir: Path, spoken, tmp_path: Path, capsys) -> None:
    engine.preload().result(timeout=120)  # the models folder is assembled
    (t1, p1), (t2, p2) = spoken[0], spoken[1]
    bad = tmp_path / "broken.m4a"
    bad.write_bytes(b"\x00\x01garbage" * 100)

    code = run_transcribe(_parse(["transcribe", "--models-dir", str(models_dir), str(p1)]))
    out = capsys.readouterr()
    assert code == 0, out.err
    assert word_error_rate(t1, out.out) < 0.15, out.out

    code = run_transcribe(_parse(["transcribe", "--models-dir", str(models_dir), "--json", str(p2), str(bad)]))
    out = capsys.readouterr()
    assert code == 1
    row = json.loads(out.out.strip().splitlines()[0])
    assert row["file"] == str(p2) and row["language"] == "en" and row["segments"]
    assert word_error_rate(t2, row["text"]) < 0.15
    assert "broken.m4a" in out.err and "not an audio file" in out.err
    assert "Traceback" not in out.err


def test_unknown_model_offline_fails_clearly(tmp_path: Path, spoken, capsys) -> None:
    code = run_transcribe(_parse(["transcribe", "--models-dir", str(tmp_path), "--model", "medium", str(spoken[0][1])]))
    err = capsys.readouterr().err
    assert code == 1 and "downloads are off" in err


def test_module_entry_point(models_dir: Path, engine, spoken) -> None:
    engine.preload().result(timeout=120)
    text, path = spoken[4]
    proc = subprocess.run(
        [sys.executable, "-m", "runtime_host.speech.cli", "transcribe", "--models-dir", str(models_dir), str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert word_error_rate(text, proc.stdout) < 0.15


@pytest.mark.parametrize("argv", [["transcribe"], ["transcribe", "--beam-size", "x", "a.wav"]])
def test_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == 2


def test_transcribe_json_names_a_file_with_a_direction_character_exactly(engine, models_dir: Path, spoken,
                                                                         tmp_path: Path, capsys) -> None:
    """`transcribe --json` (one JSON object per file, for scripts) went through the CLI's terminal filter, which
    drops a direction character: "file" no longer named the recording on disk. It is written as its JSON escape."""
    import shutil

    from runtime_host.cli import main

    engine.preload().result(timeout=120)
    named = tmp_path / "call from \u202evaw.3pm\x85.wav"
    shutil.copy(spoken[0][1], named)
    assert main(["transcribe", "--models-dir", str(models_dir), "--json", str(named)]) == 0
    out = capsys.readouterr().out.strip().splitlines()[0]
    assert "\\u202e" in out and "\u202e" not in out  # the terminal shows it as text
    assert json.loads(out)["file"] == str(named), out
