"""Audit events for gate decisions, and their export to JSON lines and CSV. Stdlib only.

An event names the rule, phase, agent and action and counts what was found per detector; it never
carries a found value (no card number, no key, not even a masked tail).
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from runtime_host.safety.detectors import Finding

AuditCallback = Callable[[dict[str, Any]], None]

CSV_COLUMNS: tuple[str, ...] = (
    "ts", "decision_id", "agent", "phase", "action", "rule", "findings", "detectors", "kinds", "chars",
    "mapping_id", "injection_score", "context",
)


class AuditFailed(RuntimeError):
    """The caller's audit callback raised: the decision is not to be acted on unaudited."""


def make_event(
    *,
    agent: str,
    phase: str,
    action: str,
    rule: str,
    findings: Iterable[Finding],
    chars: int,
    mapping_id: str | None = None,
    injection_score: float | None = None,
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds one audit event. `context` holds caller ids (conversation, message); keep values out of it."""
    found = list(findings)
    return {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "decision_id": uuid.uuid4().hex,
        "agent": agent,
        "phase": phase,
        "action": action,
        "rule": rule,
        "findings": len(found),
        "detectors": dict(sorted(Counter(f.detector for f in found).items())),
        "kinds": dict(sorted(Counter(f.kind for f in found if f.kind).items())),
        "chars": chars,
        "mapping_id": mapping_id,
        "injection_score": injection_score,
        "context": dict(context) if context else {},
    }


def emit(audit: AuditCallback | None, event: dict[str, Any]) -> None:
    """Hands an event to the caller's callback; a failing callback becomes AuditFailed with the cause named."""
    if audit is None:
        return
    try:
        audit(event)
    except Exception as exc:  # the callback is the caller's code: report any failure, do not swallow it
        raise AuditFailed(
            f"The audit callback failed for decision {event.get('decision_id')} ({event.get('rule')}): {exc!r}. "
            "Nothing was sent or stored; fix the audit sink (e.g. the store's audit log) and retry."
        ) from exc


def _open(dest: str | Path | IO[str]) -> tuple[IO[str], bool]:
    if isinstance(dest, (str, Path)):
        return open(dest, "w", encoding="utf-8", newline=""), True
    return dest, False


def events_to_jsonl(events: Iterable[Mapping[str, Any]], dest: str | Path | IO[str]) -> int:
    """Writes one JSON object per line to a path or an open text file; returns the number of events."""
    f, close = _open(dest)
    n = 0
    try:
        for ev in events:
            f.write(json.dumps(dict(ev), ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    finally:
        if close:
            f.close()
    return n


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ";".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def events_to_csv(events: Iterable[Mapping[str, Any]], dest: str | Path | IO[str]) -> int:
    """Writes a header and one row per event (maps as 'k=v;k=v'); returns the number of events."""
    f, close = _open(dest)
    n = 0
    try:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for ev in events:
            w.writerow([_cell(ev.get(col)) for col in CSV_COLUMNS])
            n += 1
    finally:
        if close:
            f.close()
    return n


def events_to_csv_text(events: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    events_to_csv(events, buf)
    return buf.getvalue()
