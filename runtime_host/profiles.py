"""Agent profiles Hearth ships (resources/profiles/*.json): templates a person instantiates."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def resources_dir() -> Path:
    env = os.environ.get("HEARTH_RESOURCES")
    if env:
        return Path(env)
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def shipped_profiles() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    folder = resources_dir() / "profiles"
    for f in sorted(folder.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        out[data["template"]] = data
    return out
