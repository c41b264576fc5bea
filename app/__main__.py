"""`python -m app`: the Hearth window, hosting the Pod on the Qt event loop (qasync)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


def main(argv: list[str] | None = None) -> int:
    from app import __version__

    ap = argparse.ArgumentParser(prog="hearth", description="Hearth: a private AI pod on your own machine.")
    ap.add_argument("--version", action="version", version=f"Hearth {__version__}")
    ap.add_argument("--quit-after", type=float, default=None, help="quit after N seconds (for smoke checks)")
    args = ap.parse_args(argv)

    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    import qasync
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from runtime_host.pod import Pod

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Hearth")
    app.setOrganizationName("Hearth")
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    app.setQuitOnLastWindowClosed(False)  # the Pod shuts down first; then the loop ends
    closing = asyncio.Event()

    async def run() -> None:
        pod = Pod()
        if not pod.list_agents():
            # First run: an assistant on the built-in offline model, so Hearth answers at once.
            pod.add_agent("Assistant", profile="assistant")
        pod.start_background()
        await pod.recover()
        window = MainWindow(pod)
        window.closed.connect(closing.set)
        window.show()
        print(f"Hearth {__version__} is running (data in {pod.home}).", flush=True)
        if args.quit_after is not None:
            QTimer.singleShot(int(args.quit_after * 1000), window.close)
        try:
            await closing.wait()
        finally:
            await pod.close()

    with loop:
        loop.run_until_complete(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
