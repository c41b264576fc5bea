"""Packaging tests: the bundle's entry point, logs, crash reports and the About dialog (the bundle
build itself runs in CI through packaging/smoke.py, not here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str) -> ModuleType:
    """Imports packaging/<name>.py (packaging/ is not a package: it would shadow PyPI's `packaging`)."""
    path = ROOT / "packaging" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"hearth_packaging_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def entry() -> ModuleType:
    return load_script("hearth_entry")
