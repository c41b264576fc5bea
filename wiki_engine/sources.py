"""The source store: immutable verbatim sources on disk, one file per source, named by its sha256.

``sources/<scope>/<sha256>.md``. Files are written once (atomically) and made read-only; ``verify``
re-hashes every file and reports any whose bytes no longer match their name.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .scopes import Scope


@dataclass(frozen=True)
class Tampered:
    """A source file whose content no longer matches its sha256 name (or that went missing)."""

    scope: str
    sha: str
    path: Path
    problem: str  # "modified" | "missing" | "unreadable"

    def said(self, where: str) -> str:
        """What is wrong with it, in words, ``where`` naming its scope as the reader knows it ("Me", "Shared")."""
        return f"A note in {where} {PROBLEMS.get(self.problem, self.problem)}: {self.path}"


PROBLEMS = {"modified": "was modified on disk after it was stored", "missing": "is missing from disk",
            "unreadable": "cannot be read"}
FIX = "Put the file back from a backup, or delete that note in the Wiki (claims citing it leave the pages)."


def said_of(bad: Iterable[Tampered | dict[str, Any]], where: Callable[[str], str]) -> list[str]:
    """Lines for people: each note whose file is missing or changed (a Tampered, or its fields as a job's report
    gives them), its scope named by ``where``; then, once, what to do."""
    lines = [(t if isinstance(t, Tampered) else Tampered(**t)).said(where(t.scope if isinstance(t, Tampered)
                                                                          else t["scope"])) for t in bad]
    return [*lines, FIX] if lines else []


class SourceUnreadable(OSError):
    """A source's file is missing, or its bytes are no longer the text that was stored (not UTF-8): ``tampered``
    says which file and what is wrong, the message also what to do."""

    def __init__(self, tampered: Tampered):
        super().__init__(f"A note {PROBLEMS[tampered.problem]}: {tampered.path}. {FIX}")
        self.tampered = tampered


class SourceStore:
    def __init__(self, root: Path):
        self.root = root

    def path_for(self, scope: Scope, sha: str) -> Path:
        return self.root / scope.relpath / sha[:2] / f"{sha}.md"

    def put(self, scope: Scope, markdown: str, *, durable: bool = True) -> str:
        """Stores the markdown (if not already stored) and returns its sha256.

        With ``durable=False`` the caller promises to call ``sync()`` before it records the source
        anywhere else (one flush for a whole batch instead of one per file)."""
        data = markdown.encode("utf-8")
        sha = hashlib.sha256(data).hexdigest()
        path = self.path_for(scope, sha)
        if path.exists():
            return sha
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(data)
            if durable or not hasattr(os, "sync"):
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP)
        os.replace(tmp, path)
        return sha

    @staticmethod
    def sync() -> None:
        """Flushes files written with ``durable=False`` to disk."""
        if hasattr(os, "sync"):
            os.sync()

    def read(self, scope: Scope, sha: str) -> str:
        path = self.path_for(scope, sha)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SourceUnreadable(Tampered(str(scope), sha, path, "missing")) from None
        except OSError:  # a folder in its place, an I/O error
            raise SourceUnreadable(Tampered(str(scope), sha, path, "unreadable")) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:  # stored as UTF-8: its bytes were changed since
            raise SourceUnreadable(Tampered(str(scope), sha, path, "modified")) from None

    def delete(self, scope: Scope, sha: str) -> None:
        path = self.path_for(scope, sha)
        try:
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            path.unlink()
        except FileNotFoundError:
            pass

    def iter_files(self, scope: Scope | None = None) -> list[tuple[Scope, str, Path]]:
        base = self.root / scope.relpath if scope else self.root
        out: list[tuple[Scope, str, Path]] = []
        if not base.exists():
            return out
        for p in sorted(base.rglob("*.md")):
            rel = p.relative_to(self.root).parts
            try:
                sc = Scope.parse("/".join(rel[:-2]))
            except ValueError:
                continue
            out.append((sc, p.stem, p))
        return out

    def verify(self, expected: list[tuple[Scope, str]] | None = None) -> list[Tampered]:
        """Re-hashes every stored source; with ``expected`` also reports registered sources now missing."""
        bad: list[Tampered] = []
        seen: set[tuple[Scope, str]] = set()
        for sc, sha, path in self.iter_files():
            seen.add((sc, sha))
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                bad.append(Tampered(str(sc), sha, path, "unreadable"))
                continue
            if digest != sha:
                bad.append(Tampered(str(sc), sha, path, "modified"))
        for sc, sha in expected or []:
            if (sc, sha) not in seen:
                bad.append(Tampered(str(sc), sha, self.path_for(sc, sha), "missing"))
        return bad
