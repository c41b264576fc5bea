"""The narrow parts of the Pod that mail, channels and MCP use, as Protocols: they depend on these, never on
the whole Pod, so no import circle runs between them and `runtime_host.pod` (the Pod satisfies each one)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

Event = dict[str, Any]


class EventSource(Protocol):
    def subscribe(self, fn: Callable[[Event], None]) -> Callable[[], None]: ...


class McpPod(Protocol):
    """What MCP servers need: the store (their table, agents) and an agent's allowlist."""

    store: Any

    def allowlist(self, inst: Any, profile: Any) -> Any: ...


class MailPod(EventSource, Protocol):
    """What mail needs: the store, a person's vault, the safety gate, events, cards, and starting a turn."""

    store: Any
    channels: Any

    def emit(self, event: Event) -> None: ...
    def vault_for(self, person_id: str) -> Any: ...
    def gate(self, phase: str, text: str, *, person_id: str, agent_id: str | None, agent_name: str,
             context: dict[str, Any] | None = None) -> Any: ...
    def start_turn_for(self, inst: Any, profile: Any, text: str, **kw: Any) -> Awaitable[Any]: ...
    def resume_turn(self, turn_id: str) -> Awaitable[Any]: ...
    def forget_origins(self, person_id: str, keys: list[str]) -> Awaitable[int]: ...


class ChannelPod(EventSource, Protocol):
    """What channels (the card arbiter, Telegram) need: agents, turns, events, a vault, mail, decisions."""

    store: Any
    person: Any
    mail: Any

    def list_agents(self) -> list[dict[str, Any]]: ...
    def find_agent(self, name: str) -> Any: ...
    def start_turn(self, agent: str, text: str, **kw: Any) -> Awaitable[Any]: ...
    def vault(self) -> Any: ...
    def decide_partner_send(self, send_id: str, approve: bool, decided_by: str = "app") -> None: ...
    def _carry_out_task(self, t: Any, approve: bool, decided_by: str) -> Awaitable[dict[str, Any]]: ...


class TurnsPod(Protocol):
    """What turn driving (`runtime_host.turns`) needs: the store, the workers, the stop switch, events,
    the gates and audit, and a worker and routes bound for an agent."""

    store: Any
    supervisor: Any
    stops: Any
    owner: str

    def emit(self, event: Event) -> None: ...
    def gate(self, phase: str, text: str, *, person_id: str, agent_id: str | None, agent_name: str,
             context: dict[str, Any] | None = None) -> Any: ...
    def audit(self, *, person_id: str | None, agent: str | None, kind: str, action: str, summary: str,
              phase: str | None = None, rule: str | None = None, detail: dict[str, Any] | None = None) -> None: ...
    def ensure_worker(self, inst: Any, profile: Any) -> Awaitable[Any]: ...
    def allowlist(self, inst: Any, profile: Any) -> Any: ...
    def message_routes(self, inst: Any, profile: Any, model: str) -> list[dict[str, Any]]: ...
