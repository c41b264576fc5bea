"""Memory scopes (public, a person's private tree, an agent's own notes) and who may see which.

A scope is a string: ``public``, ``private/<person>`` or ``agent/<person>/<agent>``. Each scope is a
separate folder on disk and a separate search index; nothing ever indexes two persons together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_SCOPE_RE = re.compile(rf"^(public|private/({_NAME})|agent/({_NAME})/({_NAME}))$")


class ScopeError(ValueError):
    """A scope string is not one of public, private/<person>, agent/<person>/<agent>."""


@dataclass(frozen=True, order=True)
class Scope:
    """A parsed scope. ``person`` is None for public; ``agent`` is set only for agent scopes."""

    kind: str  # "public" | "private" | "agent"
    person: str | None = None
    agent: str | None = None

    @classmethod
    def parse(cls, text: str | Scope) -> Scope:
        if isinstance(text, Scope):
            return text
        m = _SCOPE_RE.match(text or "")
        if not m or ".." in text:
            raise ScopeError(
                f"Unknown memory scope {text!r}: use 'public', 'private/<person>' or "
                "'agent/<person>/<agent>' (names: letters, digits, '_', '-', '.')."
            )
        if m.group(1) == "public":
            return cls("public")
        if m.group(2):
            return cls("private", m.group(2))
        return cls("agent", m.group(3), m.group(4))

    def __str__(self) -> str:
        if self.kind == "public":
            return "public"
        if self.kind == "private":
            return f"private/{self.person}"
        return f"agent/{self.person}/{self.agent}"

    @property
    def relpath(self) -> PurePosixPath:
        """The scope's folder relative to a sources/, wiki/ or index/ root."""
        return PurePosixPath(str(self))

    def readable_by(self, viewer: Viewer) -> bool:
        return self in viewer.scopes()

    def may_cite(self, source_scope: Scope) -> bool:
        """True when everyone who can read a page in this scope can also read ``source_scope``."""
        if source_scope.kind == "public":
            return True
        if self.kind == "public":
            return False
        if source_scope.kind == "private":
            return source_scope.person == self.person
        return self == source_scope


@dataclass(frozen=True)
class Viewer:
    """Who is looking: a person, optionally through one of their agents."""

    person: str
    agent: str | None = None

    def scopes(self) -> list[Scope]:
        out = [Scope("public"), Scope("private", self.person)]
        if self.agent:
            out.append(Scope("agent", self.person, self.agent))
        return out

    def scope_names(self) -> list[str]:
        return [str(s) for s in self.scopes()]

    def may_see(self, scope: str | Scope) -> bool:
        return Scope.parse(scope) in self.scopes()


def parse_scopes(scopes: str | Scope | Sequence[str | Scope] | Viewer) -> list[Scope]:
    """Normalises what callers pass as ``scopes=`` into a de-duplicated, ordered list of scopes."""
    if isinstance(scopes, Viewer):
        return scopes.scopes()
    seq: Sequence[str | Scope] = [scopes] if isinstance(scopes, (str, Scope)) else scopes
    out: list[Scope] = []
    for s in seq:
        p = Scope.parse(s)
        if p not in out:
            out.append(p)
    return out
