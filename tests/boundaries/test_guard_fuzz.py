"""The guard fuzz at test size: zero escapes, no legitimate call refused, and an oracle that can catch escapes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard_fuzz import Tree, run  # noqa: E402
from runtime_host.allowlist import Decision  # noqa: E402


def test_fuzz_has_no_escapes_and_no_legit_denials(tmp_path: Path) -> None:
    r = run(tmp_path, hostile_limit=4000)
    assert r["payloads"] >= 4000 and r["legit_calls"] >= 200
    assert r["escapes"] == 0, r["escaped"]
    assert r["legit_denied"] == 0, r["legit_denied_list"]
    assert r["oracle_flags_legit"] == 0, r["oracle_flagged"]
    assert r["audit_events"] == r["payloads"] + r["legit_calls"]


class _AllowAll:
    """A broken guard that allows everything: the oracle must catch it."""

    def __init__(self, tree: Tree, audit: Any):
        pass

    def check(self, tool: str, args: Any) -> Decision:
        return Decision(True, "ok", "")


def test_the_oracle_catches_a_guard_that_lets_things_through(tmp_path: Path) -> None:
    r = run(tmp_path, hostile_limit=1500, guard_factory=_AllowAll)
    assert r["denied"] == 0
    # Most hostile calls really reach something; those that do not (a NUL-truncated or undecodable
    # name that no longer names anything outside) are counted as harmless, not as escapes.
    assert r["escapes"] > 0.8 * r["payloads"], r
    assert r["oracle_flags_legit"] == 0, r["oracle_flagged"]
