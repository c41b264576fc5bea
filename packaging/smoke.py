"""Runs the built bundle's self-test: `dist/hearth/hearth --smoke` against the loopback fake model.

    .venv/bin/python packaging/smoke.py [--bundle dist/hearth/hearth] [--offline] [--speech] [--require-keyring]

It starts the fake model server (`python -m tests.helpers.fake_model`, which prints its base URL),
runs the bundle offscreen in a temporary data folder, checks the one line of JSON it prints (a turn
answered through the window by a FROZEN worker, streamed; optionally the offline model and speech),
stops the server by its PID, and exits non-zero with the reasons when anything is off. Besides the turn,
the bundle's memory is checked: a folder watched from the Wiki view found again by keyword and by meaning
(the static model), and a household page read by the frozen worker under memory's guard. Its last line
is "smoke: N passed, M failed". Run it under scripts/with-keyring so the real keyring is there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Hello from the Hearth smoke test"  # app.__main__.SMOKE_PROMPT; the fake model echoes it
STATIC_MODEL = "static-wordllama-l2supercat-256"  # wiki_engine.embed.StaticEmbedder.name: memory's default
SPEECH_TEXT = "Hello, this is a test of the Hearth speech model."


def start_fake_model(python: str = sys.executable, timeout_s: float = 20.0) -> tuple[subprocess.Popen[str], str]:
    """Starts the echoing fake model on 127.0.0.1; returns the process and its base URL."""
    proc = subprocess.Popen([python, "-m", "tests.helpers.fake_model"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            line = proc.stdout.readline().strip()
            if line.startswith("http://127.0.0.1:"):
                return proc, line
        if proc.poll() is not None:
            break
    stop(proc)
    err = proc.stderr.read() if proc.stderr else ""
    raise RuntimeError(f"the fake model server did not print its URL within {timeout_s:g} s: {err.strip()[-500:]}")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_speech_sample(folder: Path) -> Path | None:
    """A short spoken English sentence (espeak-ng), or None when espeak-ng is not installed."""
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        return None
    path = folder / "hello.wav"
    subprocess.run([espeak, "-w", str(path), SPEECH_TEXT], check=True, capture_output=True, timeout=60)
    return path


def check_result(result: dict[str, Any], *, offline: bool = False, speech: bool = False,
                 require_keyring: bool = False) -> tuple[list[str], list[str]]:
    """(passed, failed) check names with reasons, from the JSON the bundle printed."""
    passed: list[str] = []
    failed: list[str] = []

    def check(name: str, ok: bool, why: str) -> None:
        (passed if ok else failed).append(name if ok else f"{name}: {why}")

    check("self-test", result.get("ok") is True, str(result.get("error") or "the bundle reported failure"))
    check("frozen", result.get("frozen") is True, "the program that ran is not the PyInstaller bundle")
    check("frozen worker", result.get("worker_frozen") is True,
          f"the worker was spawned as {result.get('worker_command')}, not as the bundle with --worker")
    check("worker without Qt", result.get("worker_loads_qt") is False, "the frozen worker loaded Qt libraries")
    check("turn", result.get("answer") == f"You said: {PROMPT}" and int(result.get("deltas") or 0) > 1,
          f"expected the echoed prompt, streamed; got {result.get('answer')!r} in {result.get('deltas')} pieces")
    memory = result.get("memory") or {}
    check("memory", memory.get("model") == STATIC_MODEL and bool(memory.get("by_keyword"))
          and bool(memory.get("by_meaning")),
          f"the Wiki view's search found {memory.get('by_keyword')!r} by keyword and {memory.get('by_meaning')!r} "
          f"by meaning with the model {memory.get('model')!r}" if memory else "the bundle did not search its memory")
    household = result.get("household") or {}
    check("household page", household.get("guarded") is True,
          f"the frozen worker was given {household.get('answer')!r}" if household
          else "the bundle's worker read no household page")
    if require_keyring:
        check("keyring", str(result.get("keyring", "")).startswith("keyring.backends.")
              and result.get("log_redacted") is True,
              f"keyring {result.get('keyring')!r}, log redacted: {result.get('log_redacted')}")
    if offline:
        answer = (result.get("offline") or {}).get("answer", "")
        check("offline model", bool(answer.strip()), "the built-in offline model gave no answer")
    if speech:
        heard = (result.get("speech") or {}).get("text", "").lower()
        check("speech", "hello" in heard and "test" in heard, f"the speech model heard {heard!r}")
    return passed, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", default=str(ROOT / "dist" / "hearth" / "hearth"), help="the bundle's executable")
    ap.add_argument("--offline", action="store_true", help="also check the built-in offline model")
    ap.add_argument("--speech", action="store_true", help="also check speech-to-text (needs espeak-ng)")
    ap.add_argument("--require-keyring", action="store_true", help="fail unless the OS keyring works")
    ap.add_argument("--timeout", type=float, default=180.0)
    args = ap.parse_args(argv)

    bundle = Path(args.bundle)
    if not bundle.is_file():
        print(f"smoke: no bundle at {bundle}: build it first with `make bundle`.", file=sys.stderr)
        print("smoke: 0 passed, 1 failed")
        return 1
    with tempfile.TemporaryDirectory(prefix="hearth-smoke-audio-") as tmp:
        cmd = [str(bundle), "--smoke", "--smoke-timeout", f"{args.timeout:g}"]
        if args.offline:
            cmd.append("--smoke-offline")
        if args.require_keyring:
            cmd.append("--smoke-require-keyring")
        speech = False
        if args.speech:
            sample = make_speech_sample(Path(tmp))
            if sample is None:
                print("smoke: espeak-ng is not installed, so speech is not checked (make system installs it).",
                      file=sys.stderr)
            else:
                cmd += ["--smoke-speech", str(sample)]
                speech = True
        server, url = start_fake_model()
        try:
            t = time.perf_counter()
            out = subprocess.run([*cmd, "--smoke-model-url", url], capture_output=True, text=True,
                                 timeout=args.timeout + 30, stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - t
        except subprocess.TimeoutExpired:
            print(f"smoke: the bundle did not finish within {args.timeout + 30:g} s", file=sys.stderr)
            print("smoke: 0 passed, 1 failed")
            return 1
        finally:
            stop(server)
    lines = out.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        result = {}
    if not result:
        print(f"smoke: the bundle printed no JSON result (exit {out.returncode}).\n--- stdout\n{out.stdout[-2000:]}"
              f"\n--- stderr\n{out.stderr[-4000:]}", file=sys.stderr)
        print("smoke: 0 passed, 1 failed")
        return 1
    print(json.dumps(result, ensure_ascii=False))
    passed, failed = check_result(result, offline=args.offline, speech=speech, require_keyring=args.require_keyring)
    if out.returncode != 0 and not failed:
        failed.append(f"exit code: the bundle exited {out.returncode}")
    for name in passed:
        print(f"smoke: ok    {name}")
    for reason in failed:
        print(f"smoke: FAIL  {reason}")
    if failed:
        print(f"--- bundle stderr (last lines)\n{out.stderr[-3000:]}", file=sys.stderr)
        if result.get("kept"):
            print(f"smoke: the data folder with its logs was kept at {result['kept']}", file=sys.stderr)
    print(f"smoke: bundle ran in {wall:.1f} s")
    print(f"smoke: {len(passed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
