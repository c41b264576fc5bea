"""The About dialog: Hearth's version, where its data and logs are, and what it runs on.

`show_about(parent, home)` is what a menu entry calls; `about_info(home)` gives the same facts as a
dict (for "Copy details", tests and bug reports).
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from app import __version__
from app.markdown import plain_label, rich_label

DESCRIPTION = ("A private AI pod on your own machine: agents with their own memory and permissions, "
               "your keys in the OS keyring, and an offline model that answers with no key at all.")
LICENSE = "Apache-2.0"


def about_info(home: Path | None = None) -> dict[str, str]:
    """Version and environment facts shown in the dialog (no secrets, no environment variables)."""
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    from runtime_host.logs import log_file

    info = {
        "version": __version__,
        "build": "bundle" if getattr(sys, "frozen", False) else "source",
        "python": platform.python_version(),
        "qt": f"{qVersion()} (PySide6 {pyside_version})",
        "platform": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "license": LICENSE,
    }
    if home is not None:
        info["data"] = str(home)
        info["log"] = str(log_file(home))
    return info


def details_text(info: dict[str, str]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in info.items())


def _icon() -> QPixmap | None:
    from runtime_host.profiles import resources_dir

    pm = QPixmap(str(resources_dir() / "icons" / "hearth.png"))
    return None if pm.isNull() else pm


class AboutDialog(QDialog):
    """Version, data and log folders, and buttons to open them or copy the details."""

    def __init__(self, home: Path | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.home = home
        self.info = about_info(home)
        self.setWindowTitle("About Hearth")
        outer = QVBoxLayout(self)
        top = QHBoxLayout()
        icon = _icon()
        if icon is not None:
            pic = plain_label()
            pic.setPixmap(icon.scaled(72, 72, Qt.AspectRatioMode.KeepAspectRatio,
                                      Qt.TransformationMode.SmoothTransformation))
            top.addWidget(pic, 0, Qt.AlignmentFlag.AlignTop)
        head = QVBoxLayout()
        self.title = rich_label(f"<h2>Hearth {__version__}</h2>")
        self.title.setAccessibleName("Version")
        head.addWidget(self.title)
        blurb = plain_label(DESCRIPTION)
        blurb.setWordWrap(True)
        head.addWidget(blurb)
        top.addLayout(head, 1)
        outer.addLayout(top)

        form = QFormLayout()
        labels = {"build": "Build", "python": "Python", "qt": "Qt", "platform": "System", "license": "License",
                  "data": "Data folder", "log": "Log file"}
        self.fields: dict[str, QLabel] = {}
        for key, label in labels.items():
            if key not in self.info:
                continue
            value = plain_label(self.info[key])
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setAccessibleName(label)
            self.fields[key] = value
            form.addRow(label, value)
        outer.addLayout(form)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy details", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        if home is not None:
            self.data_button = buttons.addButton("Open data folder", QDialogButtonBox.ButtonRole.ActionRole)
            self.data_button.clicked.connect(self._on_data_clicked)
        buttons.rejected.connect(self.reject)
        outer.addWidget(buttons)

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(details_text(self.info))

    def _on_data_clicked(self) -> None:
        if self.home is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.home)))


def show_about(parent: QWidget | None = None, home: Path | None = None) -> AboutDialog:
    """Opens the About dialog (modal to `parent`) and returns it once closed. `home` is the pod's
    data folder (`pod.home`): the dialog shows it and the log file in it."""
    dlg = AboutDialog(home, parent)
    dlg.exec()
    return dlg


def about_dialog(parent: QWidget | None = None, home: Path | None = None) -> AboutDialog:
    """The dialog without running it (for a non-blocking `.open()`, or tests)."""
    return AboutDialog(home, parent)


__all__: list[Any] = ["AboutDialog", "about_dialog", "about_info", "show_about"]
