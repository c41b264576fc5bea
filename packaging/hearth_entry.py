"""The frozen Hearth executable's entry point: one program whose first argument picks its role.

    hearth [app options]          the window (`python -m app`): --version, --quit-after, --smoke ...
    hearth --worker               one agent worker (`python -m runtime_host.worker`), spawned by the Pod
    hearth --pod ARGS...          the headless pod and its CLI (`python -m runtime_host ARGS`)
    hearth -m runtime_host ARGS   the same, spelled as the source tree spawns it (detached runs)

The worker role imports nothing but the worker (no Qt), so a frozen worker starts as fast as the
source one. Frozen workers need no Python install: the supervisor spawns [sys.executable, "--worker"].
"""

from __future__ import annotations

import sys

WORKER, POD, APP = "worker", "pod", "app"


def dispatch(argv: list[str]) -> tuple[str, list[str]]:
    """Picks the role from the arguments (without the program name); returns (role, remaining args)."""
    if argv[:1] == ["--worker"]:
        return WORKER, argv[1:]
    if argv[:1] == ["--pod"]:
        return POD, argv[1:]
    if argv[:2] == ["-m", "runtime_host.worker"]:
        return WORKER, argv[2:]
    if argv[:2] == ["-m", "runtime_host"]:
        return POD, argv[2:]
    return APP, argv


def main(argv: list[str] | None = None) -> int:
    role, rest = dispatch(sys.argv[1:] if argv is None else argv)
    if role == WORKER:
        if rest:
            print(f"hearth --worker takes no arguments (got {' '.join(rest)!r}); the Pod sends the binding "
                  "over standard input.", file=sys.stderr)
            return 2
        from runtime_host.worker.__main__ import main as worker_main

        return worker_main()
    if role == POD:
        from runtime_host.cli import main as cli_main

        return cli_main(rest)
    _prepare_frozen_qt()
    from app.__main__ import main as app_main

    return app_main(rest)


def _prepare_frozen_qt() -> None:
    """In the bundle: what PyInstaller's PySide6 run-time hook does after setting Qt's paths (which
    packaging/rthook_qt.py does for every role), done here for the window's role only, so that
    workers never load Qt: register a qt.conf relocating Qt's prefix if the bindings carry none."""
    meipass = getattr(sys, "_MEIPASS", None)
    if not getattr(sys, "frozen", False) or meipass is None:
        return
    import os

    try:
        from _pyi_rth_utils import qt as qt_rth_utils
    except ImportError:
        return
    qt_rth_utils.create_embedded_qt_conf("PySide6", os.path.join(meipass, "PySide6", "Qt"))


if __name__ == "__main__":
    sys.exit(main())
