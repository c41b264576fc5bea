"""The core never imports Qt or the app; the worker never imports Qt, the ORM or the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import {mods}
print(json.dumps(sorted(m for m in sys.modules)))
"""


def loaded_after(mods: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(mods=mods)], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("mods", ["runtime_host, runtime_host.pod, runtime_host.cli", "wiki_engine", "vault"])
def test_core_packages_load_no_qt_and_no_app(mods: str) -> None:
    loaded = loaded_after(mods)
    assert not {m for m in loaded if m.split(".")[0] in {"PySide6", "qasync", "app", "shiboken6"}}


def test_worker_loads_no_qt_no_orm_no_store() -> None:
    loaded = loaded_after("runtime_host.worker.__main__, runtime_host.worker.loop")
    banned = {"PySide6", "qasync", "app", "sqlmodel", "sqlalchemy", "keyring"}
    assert not {m for m in loaded if m.split(".")[0] in banned}
    assert "runtime_host.store" not in loaded and "runtime_host.pod" not in loaded


def test_worker_readiness_path_is_stdlib_only() -> None:
    # What the worker imports before it says `ready`: no httpx (it is preloaded after ready).
    loaded = loaded_after("runtime_host.worker.__main__")
    assert "httpx" not in loaded
