"""Per-agent toolkit allowlists that fail closed: an action is reachable only if it is listed by name.

An `Allowlist` maps each toolkit an agent may use (wiki, mail, tasks, web, shell, notes, clock, math,
delegate, and `mcp:<server>` for each MCP server a person adds) to the exact set of actions it may call.
There are no wildcards: a toolkit that later grows an action (a new built-in, an MCP server that adds a
tool) does not make that action reachable until a person allows it. `offered()` computes what the model
is shown (only allowed actions that actually exist), `check()` decides one call, `pending()` lists
actions that exist but are not allowed yet (for the settings page). Stdlib only; no Qt, no store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

BUILTIN_TOOLKITS: tuple[str, ...] = ("wiki", "memory", "mail", "tasks", "partners", "web", "shell", "notes", "files", "clock", "math",
                                     "delegate")
MCP_PREFIX = "mcp:"
_MCP_SERVER = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_ACTION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class Decision:
    """The outcome of one boundary check: `rule` names the rule that decided, `reason` says why in words."""

    allowed: bool
    rule: str
    reason: str

    def __bool__(self) -> bool:  # a Decision reads naturally in an if
        return self.allowed


class AllowlistError(ValueError):
    """An allowlist names a toolkit or action that cannot exist; the message says which and why."""


class _ToolLike(Protocol):
    name: str
    toolkit: str


def valid_toolkit(name: str) -> bool:
    """True for a built-in toolkit name or `mcp:<server>` with a plain lowercase server name."""
    if name in BUILTIN_TOOLKITS:
        return True
    return name.startswith(MCP_PREFIX) and bool(_MCP_SERVER.fullmatch(name[len(MCP_PREFIX):]))


def mcp_toolkit(server: str) -> str:
    """The toolkit name for an MCP server, e.g. `mcp_toolkit("files") == "mcp:files"`."""
    name = MCP_PREFIX + server
    if not valid_toolkit(name):
        raise AllowlistError(
            f"{server!r} is not a usable MCP server name: use 1-63 lowercase letters, digits, '-' or '_'."
        )
    return name


def _check_action(toolkit: str, action: str) -> None:
    if not isinstance(action, str) or not _ACTION.fullmatch(action):
        raise AllowlistError(
            f"{action!r} in toolkit {toolkit!r} is not an action name (letters, digits, '_', '.', '-'; "
            "no wildcards: list each allowed action by name)."
        )


@dataclass(frozen=True)
class Allowlist:
    """What one agent may call: toolkit -> the exact actions allowed in it."""

    agent: str
    # toolkit -> actions; any iterable of names is accepted and stored as a frozenset
    allowed: Mapping[str, Iterable[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clean: dict[str, frozenset[str]] = {}
        for toolkit, actions in dict(self.allowed).items():
            if not valid_toolkit(toolkit):
                raise AllowlistError(
                    f"Unknown toolkit {toolkit!r} for agent {self.agent!r}. Known: {', '.join(BUILTIN_TOOLKITS)}, "
                    "or mcp:<server> for an MCP server added in Settings."
                )
            if isinstance(actions, str):
                raise AllowlistError(f"Toolkit {toolkit!r} needs a list of action names, not the string {actions!r}.")
            acts = frozenset(actions)
            for a in acts:
                _check_action(toolkit, a)
            clean[toolkit] = acts
        object.__setattr__(self, "allowed", clean)

    def actions(self, toolkit: str) -> frozenset[str]:
        """The actions allowed in `toolkit` (empty when the toolkit is not enabled)."""
        return frozenset(self.allowed.get(toolkit, ()))

    # -- building
    @classmethod
    def from_mapping(cls, agent: str, data: Mapping[str, Iterable[str]]) -> Allowlist:
        return cls(agent, {k: frozenset(v) for k, v in data.items()})

    @classmethod
    def from_legacy_toolkits(cls, agent: str, toolkits: Iterable[str],
                             catalog: Mapping[str, Iterable[str]]) -> Allowlist:
        """Turns an old profile's list of toolkit names into explicit actions, as they exist *now*.

        Call this once (a migration) and store the result with `to_json()`: actions added to a toolkit
        afterwards are then not reachable until allowed. MCP toolkits cannot be migrated this way (a
        person must pick their actions), so they are left out.
        """
        out: dict[str, frozenset[str]] = {}
        for tk in toolkits:
            if tk.startswith(MCP_PREFIX):
                continue
            if not valid_toolkit(tk):
                raise AllowlistError(f"Unknown toolkit {tk!r} in the profile of {agent!r}.")
            out[tk] = frozenset(catalog.get(tk, ()))
        return cls(agent, out)

    def allow(self, toolkit: str, actions: Iterable[str]) -> Allowlist:
        """A copy with `actions` of `toolkit` also allowed."""
        merged = dict(self.allowed)
        merged[toolkit] = self.actions(toolkit) | frozenset(actions)
        return Allowlist(self.agent, merged)

    def revoke(self, toolkit: str, actions: Iterable[str] | None = None) -> Allowlist:
        """A copy without `actions` of `toolkit` (all of the toolkit when actions is None)."""
        merged = dict(self.allowed)
        if actions is None:
            merged.pop(toolkit, None)
        elif toolkit in merged:
            merged[toolkit] = self.actions(toolkit) - frozenset(actions)
        return Allowlist(self.agent, merged)

    # -- deciding
    def allows(self, toolkit: str, action: str) -> bool:
        return action in self.actions(toolkit)

    def check(self, toolkit: str, action: str) -> Decision:
        if toolkit not in self.allowed:
            return Decision(False, "toolkit.not_allowed",
                            f"The toolkit {toolkit!r} is not enabled for agent {self.agent!r}; a person can enable it "
                            "in the agent's settings.")
        if action not in self.actions(toolkit):
            return Decision(False, "action.not_allowed",
                            f"The action {action!r} of toolkit {toolkit!r} is not allowed for agent {self.agent!r} "
                            "(new actions stay off until a person allows them).")
        return Decision(True, "allowlist.ok", f"{toolkit}/{action} is allowed for {self.agent!r}.")

    def offered(self, catalog: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
        """Toolkit -> sorted actions to show the model: allowed AND present in the catalog right now."""
        out: dict[str, list[str]] = {}
        for tk in self.allowed:
            present = set(catalog.get(tk, ())) & self.actions(tk)
            if present:
                out[tk] = sorted(present)
        return out

    def offered_tools(self, tools: Iterable[_ToolLike]) -> list[_ToolLike]:
        """Filters concrete tool objects (anything with `.name` and `.toolkit`) to the allowed ones."""
        return [t for t in tools if self.allows(t.toolkit, t.name)]

    def pending(self, catalog: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
        """Actions that exist in an enabled toolkit but are not allowed: what a person may review."""
        out: dict[str, list[str]] = {}
        for tk in self.allowed:
            new = set(catalog.get(tk, ())) - self.actions(tk)
            if new:
                out[tk] = sorted(new)
        return out

    # -- storing
    def to_json(self) -> str:
        return json.dumps({tk: sorted(a) for tk, a in sorted(self.allowed.items())}, ensure_ascii=False)

    @classmethod
    def from_json(cls, agent: str, text: str) -> Allowlist:
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AllowlistError(f"The stored allowlist of {agent!r} is not valid JSON ({exc}); "
                                 "re-save the agent's tool settings.") from None
        if isinstance(data, list):
            raise AllowlistError(
                f"The stored allowlist of {agent!r} is an old list of toolkit names; migrate it with "
                "Allowlist.from_legacy_toolkits(...) and store the result."
            )
        if not isinstance(data, dict):
            raise AllowlistError(f"The stored allowlist of {agent!r} must be an object of toolkit -> actions.")
        return cls.from_mapping(agent, data)


def catalog_of(toolkits: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """A catalog (toolkit -> action names) from a registry shaped like `runtime_host.tools.TOOLKITS`."""
    return {tk: sorted(tools) for tk, tools in toolkits.items()}
