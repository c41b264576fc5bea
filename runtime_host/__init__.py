"""Hearth's headless pod: store, supervised workers, turns. Qt-free.

Kept import-light on purpose: `python -m runtime_host.worker` imports this package, and the
worker must be ready in a few tens of milliseconds. Heavy names load on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime_host.pod import Pod, TurnFailed, TurnResult

__all__ = ["Pod", "TurnFailed", "TurnResult"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from runtime_host import pod

        return getattr(pod, name)
    raise AttributeError(name)
