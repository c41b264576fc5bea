"""Run-time hook replacing PyInstaller's pyi_rth_pyside6 in the Hearth bundle.

PyInstaller's own hook imports PySide6.QtCore at start-up, in every process the bundle starts, so a
frozen worker (`hearth --worker`) would load Qt (~30 MB of libraries and ~150 ms) though it never
uses it. This hook only points Qt at the bundled plugins; the rest of the original hook (registering
a qt.conf when the bindings have none: PyPI wheels embed one) runs in the window's role only, from
packaging/hearth_entry.py.
"""

import os
import sys

_qt = os.path.join(sys._MEIPASS, "PySide6", "Qt")  # type: ignore[attr-defined]
os.environ["QT_PLUGIN_PATH"] = os.path.join(_qt, "plugins")
os.environ["QML2_IMPORT_PATH"] = os.path.join(_qt, "qml")
del _qt
