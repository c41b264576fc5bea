"""The channel layer is core: it loads no Qt and no app code."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import runtime_host.channels, runtime_host.channels.telegram, runtime_host.channels.hub, runtime_host.channels.podport
print(json.dumps(sorted(sys.modules)))
"""


def test_channels_load_no_qt_and_no_app() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert not {m for m in loaded if m.split(".")[0] in {"PySide6", "qasync", "app", "shiboken6"}}
    assert "runtime_host.speech.engine" not in loaded  # the speech model loads only when a voice note comes
