"""`make screenshots` renders every main view, and the README shows every image it renders."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]
VIEWS = {"chat", "wiki", "wiki-held", "approvals", "tasks", "schedules", "mail", "activity", "settings", "settings-models",
         "edit-agent", "welcome", "dark"}


def test_the_script_renders_every_main_view(tmp_path) -> None:
    env = {**os.environ, "HEARTH_SHOTS_DIR": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshots.py")], env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    made = {p.stem for p in tmp_path.glob("*.png")}
    assert made == VIEWS
    for name in VIEWS:
        img = QImage(str(tmp_path / f"{name}.png"))
        assert img.width() >= 500 and img.height() >= 300, name
        # not a blank grab: a real view has many distinct colours
        colours = {img.pixel(x, y) for x in range(0, img.width(), 17) for y in range(0, img.height(), 17)}
        assert len(colours) > 8, name


def test_the_readme_shows_every_screenshot() -> None:
    readme = (ROOT / "README.md").read_text()
    shown = set(re.findall(r"docs/screenshots/([\w-]+)\.png", readme))
    assert shown == VIEWS == {p.stem for p in (ROOT / "docs" / "screenshots").glob("*.png")}
