"""Schedules and mail are Qt-free cores: importing them loads no Qt, no app, no ORM, no Pod."""

from __future__ import annotations

import json
import subprocess
import sys


def test_triggers_import_no_qt_app_orm_or_pod() -> None:
    code = ("import json, sys; import runtime_host.schedule, runtime_host.mail; "
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = set(json.loads(out.stdout))
    forbidden = {m for m in loaded if m.split(".")[0] in ("PySide6", "app", "sqlmodel", "qasync")}
    forbidden |= {m for m in loaded if m in ("runtime_host.pod", "runtime_host.store", "runtime_host.supervisor")}
    assert not forbidden, forbidden
