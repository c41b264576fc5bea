"""Watched folders in the window: add or remove a folder, rescan it, follow an import's progress, and read
each file's status (indexed, skipped or failed, with the reason). The work runs in the pod's background
threads (runtime_host.folders); this view only shows its progress events."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.bridge import PodBridge
from app.markdown import plain_label, plain_tooltip
from runtime_host.folders import progress_said

SHOWN_FILES = 5000  # rows in the file list; `folder status` on the command line lists every file
NO_FOLDERS = "No watched folders yet: Add folder… picks one."


def scan_said(rep: dict[str, Any]) -> str:
    """A finished scan in words (``rep``: its report or its last progress event): the counts that are not zero (a
    Rescan that found nothing new says "30 unchanged", not "0 indexed"), then its note (a folder not there, say)."""
    counts = ", ".join(f"{n} {what}" for what in ("indexed", "skipped", "failed", "unchanged", "moved", "removed")
                       if (n := int(rep.get(what) or 0)))
    said = " ".join(n for n in (f"{counts}." if counts else "", rep.get("note") or "") if n)
    return f"{rep['path']}: {said or 'no files to read.'}"


class FoldersView(QWidget):
    """Signals:
    status(str): something the person should read in the status bar.
    """

    status = Signal(str)

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self._tasks: set[asyncio.Task[Any]] = set()
        intro = plain_label("Folders of notes, documents (text, Markdown, PDF, HTML) and mail exports (.eml, .mbox) "
                            "that Hearth keeps in your memory. Only you see what they hold; files are never changed. "
                            "Changes are picked up every few minutes, or now with Rescan.")
        intro.setWordWrap(True)
        self.folders = QListWidget()
        self.folders.setAccessibleName("Watched folders")
        self.folders.currentItemChanged.connect(self._on_folder)
        self.add = QPushButton("Add folder…")
        self.add.clicked.connect(self._on_add)
        self.rescan = QPushButton("Rescan")
        self.rescan.clicked.connect(self._on_rescan)
        self.remove = QPushButton("Remove…")
        self.remove.setToolTip("Stop watching the folder and delete what it imported from your memory")
        self.remove.clicked.connect(self._on_remove)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add)
        buttons.addWidget(self.rescan)
        buttons.addWidget(self.remove)
        buttons.addStretch(1)
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Import progress")
        self.progress.setVisible(False)
        self.progress_label = plain_label("")  # it names files
        self.progress_label.setWordWrap(True)
        self.only = QComboBox()
        self.only.setAccessibleName("Show files")
        for text, value in (("All files", None), ("Indexed", "indexed"), ("Skipped", "skipped"), ("Failed", "failed")):
            self.only.addItem(text, value)
        self.only.currentIndexChanged.connect(lambda _i: self._show_files())
        self.files = QTreeWidget()
        self.files.setAccessibleName("Files and their status")
        self.files.setHeaderLabels(["File", "Status", "Reason"])
        self.files.setRootIsDecorated(False)
        self.files.setUniformRowHeights(True)
        self.files.setColumnWidth(0, 280)
        self.files.setColumnWidth(1, 80)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.folders, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.progress_label)
        row = QHBoxLayout()
        row.addWidget(plain_label("Files:"))
        row.addWidget(self.only)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.files, 3)
        self.bridge = PodBridge(pod, self)
        self.bridge.event.connect(self._on_pod_event)
        self._last_list = 0.0

    # -- plumbing
    def _run(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def reset(self) -> None:
        """Forgets what was shown for the previous person: their folders, files, and import line or progress bar
        (an import of theirs still running goes on; its progress and its end are theirs to see)."""
        self.folders.blockSignals(True)  # no "current folder" of theirs is looked up for the new person
        self.folders.clear()
        self.folders.blockSignals(False)
        self.files.clear()
        self.progress.setVisible(False)
        self.progress_label.setText("")

    def current_id(self) -> str | None:
        item = self.folders.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    # -- showing
    def refresh(self, folder_id: str | None = None) -> None:
        """Lists the folders again; the file list is rebuilt only when ``folder_id`` (what changed: an event's
        folder, "" for all or None for a refresh of everything) is the folder shown, or another folder is shown now
        (an import of one folder rebuilt, every two seconds, the list the person was reading of another)."""
        keep = self.current_id()
        self.folders.blockSignals(True)
        self.folders.clear()
        for f in self.pod.folders.list_folders():
            counts = ", ".join(f"{n} {s}" for s, n in sorted(f.counts.items())) or "not read yet"
            when = time.strftime("%H:%M", time.localtime(f.scanned_at)) if f.scanned_at else "never"
            text = f"{f.path} — {counts} · last read {when}"
            if f.note:
                text += f" · {f.note}"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, f.id)
            item.setToolTip(plain_tooltip(f.note or f.path))
            self.folders.addItem(item)
            if f.id == keep:
                self.folders.setCurrentItem(item)
        self.folders.blockSignals(False)
        if self.folders.currentItem() is None and self.folders.count():
            self.folders.setCurrentRow(0)
        elif not self.folders.count():
            self.files.clear()
            if not self.progress_label.text():  # what the person was told (what Remove deleted, say) stays
                self.progress_label.setText(NO_FOLDERS)
        if not folder_id or folder_id == self.current_id() or self.current_id() != keep:
            self._show_files(keep=self.current_id() == keep)
        running = [ev for ev in self.pod.folders.running.values() if ev.get("person") == self.pod.person.id]
        if running:
            self._show_progress(running[0])

    def _show_files(self, keep: bool = False) -> None:
        """Lists the shown folder's files; ``keep``: the same folder again, so the file the person had selected
        (by its path) and how far down they had scrolled are kept."""
        fid = self.current_id()
        cur = self.files.currentItem()
        was = cur.text(0) if keep and cur is not None else None
        at = self.files.verticalScrollBar().value() if keep else 0
        self.files.clear()
        if fid is None:
            return
        rows = self.pod.folders.files(fid, self.only.currentData(), limit=SHOWN_FILES + 1)
        items = []
        for r in rows[:SHOWN_FILES]:
            item = QTreeWidgetItem([r.rel, r.status, r.reason])
            item.setToolTip(2, plain_tooltip(r.reason))
            items.append(item)
        self.files.addTopLevelItems(items)
        if len(rows) > SHOWN_FILES:
            self.files.addTopLevelItem(QTreeWidgetItem([f"… the first {SHOWN_FILES} files are shown; "
                                                        "`python -m runtime_host folder status` lists all", "", ""]))
        if not keep:
            return
        again = next((i for i in items if i.text(0) == was), None) if was is not None else None
        if again is not None:
            self.files.setCurrentItem(again)
        self.files.doItemsLayout()  # the scroll bar's range for the new rows, before it is set back
        self.files.verticalScrollBar().setValue(at)

    def _show_progress(self, ev: dict[str, Any]) -> None:
        phase = ev.get("phase")
        if phase == "done":
            self.progress.setVisible(False)
            # a scan stopped by the folder's removal: its counts are of files whose imports are being deleted
            self.progress_label.setText(f"No longer watching {ev['path']}." if ev.get("stopped") else scan_said(ev))
            return
        self.progress.setVisible(True)
        total = int(ev.get("total") or 0)
        self.progress.setRange(0, max(total, 0))
        self.progress.setValue(int(ev.get("done") or 0))
        self.progress_label.setText(f"{progress_said(ev)} in {ev['path']}…")

    # -- slots
    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if kind not in ("folders.progress", "folders.changed") or ev.get("person") != self.pod.person.id:
            return
        if kind == "folders.progress":
            self._show_progress(ev)
            now = time.monotonic()
            if ev.get("phase") == "done" or now - self._last_list > 2.0:  # the list, not on every batch
                self._last_list = now
                self.refresh(ev.get("folder") or "")
        else:
            self.refresh(ev.get("folder") or "")

    def _on_folder(self, _item: QListWidgetItem | None, _prev: Any = None) -> None:
        self._show_files()

    def _on_add(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Watch a folder")
        if path:
            self.add_folder(path)

    def add_folder(self, path: str) -> asyncio.Task[Any] | None:
        """Watches ``path`` and starts its import in the background; returns the import's task."""
        from runtime_host.folders import FolderError

        try:
            folder = self.pod.folders.add(path)
        except FolderError as exc:
            self.progress_label.setText(f"Not added: {exc}")
            return None
        self.refresh()
        for i in range(self.folders.count()):
            if self.folders.item(i).data(Qt.ItemDataRole.UserRole) == folder.id:
                self.folders.setCurrentRow(i)
        return self.scan(folder.id)

    def scan(self, folder_id: str) -> asyncio.Task[Any]:
        who = self.pod.person.id

        async def go() -> None:
            try:
                rep = await self.pod.folders.scan(folder_id)
            except Exception as exc:  # the folder was removed meanwhile, say
                if self.pod.person.id != who:  # the person was switched meanwhile: it is not the new one's
                    return
                self.progress.setVisible(False)
                if not self._still_watched(folder_id):
                    self._gone()  # removed elsewhere (`folder remove` in a terminal): said as Remove… says it
                    return
                self.progress_label.setText(f"The folder could not be read: {exc}")
                return
            if self.pod.person.id != who or rep.stopped:  # stopped: the removal says what became of the folder
                return
            self.status.emit(scan_said(rep.to_dict()))
            self.refresh()

        return self._run(go())

    def _on_rescan(self) -> None:
        fid = self.current_id()
        if fid is not None:
            self.scan(fid)

    def _on_remove(self) -> None:
        from app.confirm import confirm
        from runtime_host.folders import FolderError

        fid = self.current_id()
        if fid is None:
            return
        try:
            folder = self.pod.folders.find(fid)
        except FolderError:  # removed elsewhere (`folder remove` in a terminal): this window heard nothing of it
            self._gone()
            return
        if not confirm(self, "Remove watched folder", f"Stop watching {folder.path}?", "Remove",
                       "What it imported is deleted from your memory; the files themselves stay as they are."):
            return
        self.remove_folder(fid)

    def remove_folder(self, folder_id: str) -> asyncio.Task[Any]:
        who = self.pod.person.id

        async def go() -> None:
            from runtime_host.folders import FolderError

            try:
                out = await self.pod.folders.remove(folder_id)
            except FolderError:  # removed elsewhere meanwhile
                if self.pod.person.id == who:
                    self._gone()
                return
            if self.pod.person.id != who:
                return
            said = f"No longer watching {out['path']}; {out['sources_deleted']} imported source(s) deleted."
            self.refresh()
            self.progress_label.setText(said)  # the empty list's hint, on the removal's own event, leaves it there
            self.status.emit(said)

        return self._run(go())

    def _still_watched(self, folder_id: str) -> bool:
        """Whether the person still watches the folder (another Hearth process may have removed it)."""
        from runtime_host.folders import FolderError

        try:
            self.pod.folders.find(folder_id)
        except FolderError:
            return False
        return True

    def _gone(self) -> None:
        """The folder chosen is no longer watched: said, and the list shows what is watched now."""
        said = ("That folder is no longer watched: it was removed elsewhere (in a terminal, say), with what it "
                "imported. The list shows the folders watched now.")
        self.refresh()
        self.progress_label.setText(said)
        self.status.emit(said)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.bridge.close()
        super().closeEvent(event)
