"""UI tests run real widgets offscreen on a qasync loop that also hosts a real Pod."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import qasync


class _QEventLoop(qasync.QEventLoop):
    """qasync's loop, whose ``run_until_complete`` runs the events left once more after the loop stops, as it does,
    but with the loop still asyncio's running loop. qasync unsets it first: a coroutine step that ran then (a
    change's follow-up reading memory, say) failed with "no running event loop", at random, in tests only (the
    window runs its loop for good and never returns from it)."""

    def run_until_complete(self, future: Any) -> Any:
        from PySide6.QtCore import QEventLoop

        future = asyncio.ensure_future(future, loop=self)

        def stop(_f: Any) -> None:
            self.stop()

        future.add_done_callback(stop)
        try:
            self.run_forever()
        finally:
            future.remove_done_callback(stop)
        asyncio.events._set_running_loop(self)
        try:
            self._QEventLoop__app.eventDispatcher().processEvents(QEventLoop.ProcessEventsFlag.AllEvents)
        finally:
            asyncio.events._set_running_loop(None)
        if not future.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return future.result()


class QLoop:
    def __init__(self, loop: qasync.QEventLoop):
        self.loop = loop

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def wait_until(self, cond: Callable[[], bool], timeout: float = 30, what: str = "condition") -> None:
        async def poll() -> None:
            deadline = time.monotonic() + timeout
            while not cond():
                if time.monotonic() > deadline:
                    raise AssertionError(f"timed out waiting for {what}")
                await asyncio.sleep(0.02)

        self.loop.run_until_complete(poll())


@pytest.fixture(scope="session")
def _session_qloop(qapp) -> Iterator[qasync.QEventLoop]:
    # One loop for the whole session, as in the app. A qasync loop closed mid-session leaves Qt
    # timers behind (pending call_later handles) whose owner is gone: one firing later crashes Qt.
    loop = _QEventLoop(qapp, already_running=False)
    try:
        yield loop
    finally:
        loop.close()


@pytest.fixture
def qloop(_session_qloop) -> Iterator[QLoop]:
    asyncio.set_event_loop(_session_qloop)
    try:
        yield QLoop(_session_qloop)
    finally:
        asyncio.set_event_loop(None)


@pytest.fixture
def ui_pod(home, fake_model, qloop) -> Iterator[Any]:
    from runtime_host.pod import Pod

    async def make() -> Any:
        p = Pod(home).first_person()
        p.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
        p.add_agent("helper", provider="fake", system="Test agent.")
        return p

    pod = qloop.run(make())
    try:
        yield pod
    finally:
        qloop.run(pod.close())


def answer_confirm(choice: str, details: bool = False) -> list[str]:
    """Answers the next confirmation box (app.confirm) by clicking the button whose text is `choice`
    ("Cancel" or the action's name), as a person would; returns the texts the box showed (with `details`, each
    followed by a line break and the box's informative text)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    seen: list[str] = []

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, click)
            return
        seen.append(f"{box.text()}\n{box.informativeText()}" if details else box.text())
        for b in box.buttons():
            if b.text().replace("&", "") == choice:
                b.click()
                return
        raise AssertionError(f"no button {choice!r} in {[b.text() for b in box.buttons()]}")

    QTimer.singleShot(0, click)
    return seen
