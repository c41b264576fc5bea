"""Hearth's log file: `<data>/logs/hearth.log`, rotated by size, every line cleaned of known secrets.

`setup_logging(home)` installs one rotating file handler on the root logger (Hearth's own loggers,
`hearth.*`, at INFO; everything else at WARNING). The vault's `RedactingFilter` is attached to the
handler, and the formatter runs the whole formatted line (message, arguments and any traceback)
through `vault.redact` again, so a secret the vault knows never reaches the disk. Qt-free.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from vault import RedactingFilter, redact

LOG_DIRNAME = "logs"
LOG_FILENAME = "hearth.log"
MAX_BYTES = 1024 * 1024  # one file is at most 1 MiB ...
BACKUP_COUNT = 5  # ... and at most 5 older ones are kept (hearth.log.1 … hearth.log.5)
FORMAT = "%(asctime)s %(levelname)-7s %(name)s [%(process)d %(threadName)s] %(message)s"

_MARK = "_hearth_log_handler"
_CONSOLE_MARK = "_hearth_console_handler"


class RedactingFormatter(logging.Formatter):
    """Formats a record, then hides every secret the vault knows anywhere in the result
    (the message, its arguments and the traceback text, which the filter alone cannot reach)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def log_dir(home: Path) -> Path:
    return home / LOG_DIRNAME


def log_file(home: Path) -> Path:
    return log_dir(home) / LOG_FILENAME


def setup_logging(home: Path, *, level: int = logging.INFO, max_bytes: int = MAX_BYTES,
                  backup_count: int = BACKUP_COUNT) -> logging.Handler:
    """Writes Hearth's log into `<home>/logs/hearth.log` with rotation; returns the handler.

    Calling it again (another data folder, a test) replaces the handler it installed before.
    """
    folder = log_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        folder / LOG_FILENAME, maxBytes=max_bytes, backupCount=backup_count, encoding="utf-8", delay=True,
    )
    handler.setFormatter(RedactingFormatter(FORMAT))
    handler.addFilter(RedactingFilter())
    handler.setLevel(level)
    setattr(handler, _MARK, True)

    root = logging.getLogger()
    remove_logging()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    hearth = logging.getLogger("hearth")
    if hearth.level == logging.NOTSET or hearth.level > level:
        hearth.setLevel(level)
    return handler


def setup_console_logging(level: int = logging.WARNING) -> logging.Handler:
    """For the headless host (CLI, serve): warnings and errors on stderr, through the same redaction as the
    log file (without it Python's last-resort handler would print them as they are)."""
    import sys

    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, _CONSOLE_MARK, False):
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    handler.setLevel(level)
    setattr(handler, _CONSOLE_MARK, True)
    root.addHandler(handler)
    return handler


def remove_logging() -> None:
    """Removes (and closes) the handler `setup_logging` installed, if any."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, _MARK, False):
            root.removeHandler(h)
            h.close()


def tail(home: Path, max_lines: int = 80) -> list[str]:
    """The last lines of the current log file (already redacted when written; redacted again here)."""
    path = log_file(home)
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = data.splitlines()
    if size > 64 * 1024 and lines:
        lines = lines[1:]  # the first line may be cut in half
    return [redact(line) for line in lines[-max_lines:]]
