"""Turns the Pod's plain event callbacks into one Qt signal the views connect to."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal


class PodBridge(QObject):
    """Signals:
    event(dict): every Pod event (turn.*, delta, iteration, step.*, worker.state).
    """

    event = Signal(dict)

    def __init__(self, pod: Any, parent: QObject | None = None):
        super().__init__(parent)
        self.pod = pod
        self._unsubscribe = pod.subscribe(self._on_pod_event)

    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        # The Pod runs on the Qt thread's asyncio loop (qasync), so emitting here is safe.
        try:
            self.event.emit(ev)
        except RuntimeError:  # the window (and this bridge's C++ side) is gone: stop listening
            self._unsubscribe()

    def close(self) -> None:
        self._unsubscribe()
