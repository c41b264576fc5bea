"""packaging/smoke.py judges the bundle's JSON strictly: a source worker or an unstreamed answer fails."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.packaging.conftest import load_script

smoke = load_script("smoke")

GOOD = {"ok": True, "frozen": True, "worker_frozen": True, "worker_command": ["/b/hearth", "--worker"], "worker_loads_qt": False,
        "answer": "You said: Hello from the Hearth smoke test", "deltas": 11,
        "keyring": "keyring.backends.SecretService.Keyring", "log_redacted": True,
        "offline": {"answer": "Hello!"}, "speech": {"text": "Hello, this is a test of the Hearth speech model."},
        "memory": {"model": "static-wordllama-l2supercat-256", "by_keyword": ["boiler.txt", "piano.md"],
                   "by_meaning": ["sourdough.md", "piano.md"]},
        "household": {"answer": "[memory's guard: this household page holds text that ...", "guarded": True}}


def test_a_good_result_passes_every_check() -> None:
    passed, failed = smoke.check_result(GOOD, offline=True, speech=True, require_keyring=True)
    assert failed == [] and len(passed) == 10


def test_a_bundle_without_memory_fails() -> None:
    """The bundle CI built answered its turn but held no wiki_engine: its self-test said nothing of memory, and
    passed. A result without memory's checks, or with memory searching by keywords alone, fails now."""
    before = {k: v for k, v in GOOD.items() if k not in ("memory", "household")}
    _passed, failed = smoke.check_result(before)
    assert [f.split(":")[0] for f in failed] == ["memory", "household page"]
    assert "did not search its memory" in failed[0] and "read no household page" in failed[1]
    keywords_only = {**GOOD, "memory": {**GOOD["memory"], "model": None, "by_meaning": []}}
    _passed, failed = smoke.check_result(keywords_only)
    assert len(failed) == 1 and failed[0].startswith("memory:") and "None" in failed[0]
    unguarded = {**GOOD, "household": {"answer": "error: the tool 'read_file' failed", "guarded": False}}
    _passed, failed = smoke.check_result(unguarded)
    assert len(failed) == 1 and failed[0].startswith("household page:") and "read_file" in failed[0]


def test_a_worker_spawned_from_python_fails() -> None:
    bad = {**GOOD, "worker_frozen": False, "worker_command": [sys.executable, "-m", "runtime_host.worker"]}
    _passed, failed = smoke.check_result(bad)
    assert len(failed) == 1 and failed[0].startswith("frozen worker:") and "runtime_host.worker" in failed[0]


def test_an_unstreamed_or_wrong_answer_fails() -> None:
    for bad in ({**GOOD, "deltas": 1}, {**GOOD, "answer": "something else"}):
        _passed, failed = smoke.check_result(bad)
        assert [f.split(":")[0] for f in failed] == ["turn"]


def test_a_failed_self_test_reports_its_reason() -> None:
    _passed, failed = smoke.check_result({"ok": False, "frozen": True, "error": "timed out after 120 s while spawning"})
    assert "self-test: timed out after 120 s while spawning" in failed


def test_missing_bundle_is_explained(tmp_path: Path, capsys) -> None:
    assert smoke.main(["--bundle", str(tmp_path / "nope")]) == 1
    out = capsys.readouterr()
    assert "make bundle" in out.err and out.out.strip().endswith("0 passed, 1 failed")


def test_fake_model_starts_and_stops_by_pid() -> None:
    proc, url = smoke.start_fake_model()
    try:
        assert url.startswith("http://127.0.0.1:") and proc.poll() is None
    finally:
        smoke.stop(proc)
    assert proc.poll() is not None
