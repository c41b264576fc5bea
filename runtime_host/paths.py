"""Where Hearth keeps its data (the platformdirs user data folder, or HEARTH_HOME when set), and the limits a
person may set in the environment."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path


def env_number(name: str, default: float, unit: str) -> float:
    """The positive number in environment variable ``name``, else ``default``. A value that is not one (a typo,
    "25MB", 0) never stops Hearth from starting: the default is used and the log says what to write instead."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        logging.getLogger("hearth").warning("%s=%r is not a positive number of %s; using %s. Set it to a number "
                                            "such as %s, or unset it.", name, raw, unit, f"{default:g}", f"{default:g}")
        return default
    return value


def data_dir() -> Path:
    home = os.environ.get("HEARTH_HOME")
    if home:
        path = Path(home).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("Hearth", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def agent_dir(root: Path, person_id: str, agent_id: str) -> Path:
    path = root / "agents" / person_id / agent_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def describe_storage_error(exc: BaseException, folder: Path | str) -> str | None:
    """What a storage failure (a full disk, a locked or read-only database, a read-only folder) means for a
    person and what to do next; None when `exc` is not one (a bug, a constraint: those stay as they are)."""
    import errno

    text = str(exc).lower()
    code = exc.errno if isinstance(exc, OSError) else None
    if code in (errno.ENOSPC, errno.EDQUOT) or "database or disk is full" in text:
        return (f"The disk is full: Hearth could not save to {folder}. Free some space and retry; nothing "
                "already saved was lost.")
    if "database is locked" in text or "database table is locked" in text or "database is busy" in text:
        return ("Hearth's database is locked by another program (or a stuck Hearth): close it and retry; nothing "
                "already saved was lost.")
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or "readonly database" in text \
            or "unable to open database file" in text:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "read-only"
        return (f"Hearth cannot write to its data folder {folder} ({why}). Make it writable (for example "
                f"`chmod -R u+w {folder}`) or start Hearth with HEARTH_HOME set to a writable folder.")
    if code == errno.EIO or "disk i/o error" in text:
        return (f"The disk reported an error while Hearth saved to {folder}. Check the disk, then retry; nothing "
                "already saved was lost.")
    return None


def folder_problem(path: Path) -> str | None:
    """Why Hearth cannot keep its data in `path` (it cannot create a file there), or None when it can."""
    probe = path / f".hearth-write-check-{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"ok")
        probe.unlink()
    except OSError as exc:
        return describe_storage_error(exc, path) or f"Hearth cannot use its data folder {path}: {exc}."
    return None
