"""`python -m runtime_host transcribe FILE`: print the transcript of an audio file, using the same
engine as the app (offline by default, the packaged Whisper base model unless told otherwise)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from unseen import as_json

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_transcribe_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `transcribe` sub-command to an argparse sub-parsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "transcribe",
        help="print the transcript of an audio file (wav, mp3, m4a, ogg), locally",
        description="Transcribe audio files on this machine; no audio leaves it.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="audio file(s) to transcribe")
    p.add_argument(
        "--model",
        default=None,
        help="a CTranslate2 Whisper model folder, or a model name such as 'small' (default: the built-in base model)",
    )
    p.add_argument("--models-dir", type=Path, default=None, help="where models live (default: Hearth's data folder/models)")
    p.add_argument("--allow-download", action="store_true", help="allow fetching a named model when it is not on this machine")
    p.add_argument("--language", default=None, help="language code such as 'en' (default: detect)")
    p.add_argument("--beam-size", type=int, default=1, help="1 is fastest; 5 can be a little more accurate")
    p.add_argument("--no-vad", action="store_true", help="do not skip silence with voice activity detection")
    p.add_argument("--json", action="store_true", help="print one JSON object per file with segments and timings")
    return p


def run_transcribe(args: argparse.Namespace) -> int:
    """Run the `transcribe` sub-command; returns the process exit code."""
    from runtime_host.speech.engine import SpeechEngine, SpeechSettings
    from runtime_host.speech.errors import AudioDecodeError, SpeechError

    settings = SpeechSettings(
        model=args.model,
        models_dir=args.models_dir,
        allow_download=args.allow_download,
        language=args.language,
        beam_size=max(1, args.beam_size),
        vad=not args.no_vad,
        idle_unload_s=0,
    )
    code = EXIT_OK
    with SpeechEngine(settings) as engine:
        futures = [(name, engine.transcribe(name)) for name in args.files]
        for name, future in futures:
            try:
                result = future.result()
            except AudioDecodeError as exc:
                print(f"error: {exc}", file=sys.stderr)
                code = EXIT_FAILED
                continue
            except SpeechError as exc:  # the model itself is unusable: no point going on
                print(f"error: {exc}", file=sys.stderr)
                return EXIT_FAILED
            if args.json:
                print(as_json(_as_json(name, result)))  # a file name's direction character escaped, not dropped
            else:
                prefix = f"{name}: " if len(args.files) > 1 else ""
                print(prefix + result.text)
    return code


def _as_json(name: str, result: Any) -> dict[str, Any]:
    return {
        "file": name,
        "text": result.text,
        "language": result.language,
        "duration_s": round(result.duration_s, 3),
        "elapsed_s": round(result.elapsed_s, 3),
        "model": result.model,
        "segments": [{"start": round(s.start, 2), "end": round(s.end, 2), "text": s.text} for s in result.segments],
    }


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (`python -m runtime_host.speech.cli FILE`), same as the pod CLI's sub-command."""
    parser = argparse.ArgumentParser(prog="python -m runtime_host")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_transcribe_parser(sub)
    return run_transcribe(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
