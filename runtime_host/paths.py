"""Where Hearth keeps its data: the platformdirs user data folder, or HEARTH_HOME when set."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    home = os.environ.get("HEARTH_HOME")
    if home:
        path = Path(home).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("Hearth", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def agent_dir(root: Path, person_id: str, agent_id: str) -> Path:
    path = root / "agents" / person_id / agent_id
    path.mkdir(parents=True, exist_ok=True)
    return path
