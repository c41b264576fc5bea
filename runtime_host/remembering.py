"""An agent's ``remember``, as the Pod carries it out: what the worker asks is checked here, never trusted.

A remembered fact is a fact: at most NOTE_CHARS characters (an agent's note's most, ``append_note``), refused past
that before anything reads it. A turn stores at most PER_TURN new facts, counted by the Pod per turn (a resumed turn
keeps its count), a fact memory held back as an order for the person to review counted among them (a hostile mail
cannot fill the person's Held back list): past that the model is told, as a tool error, to ask the person. The same
fact already in the scope (as a person reads it: ``wiki_engine.memory.fact_words``) is not stored again: the agent
is told it is already remembered. Then the agent's safety policy (redaction) and memory's own checks (may this agent
write there; an order held back) as before."""

from __future__ import annotations

from typing import Any

from runtime_host.tools import NOTE_CHARS

# New facts one turn may store or have held back. A person who says "remember these" names a handful of things (a
# family's birthdays, a home's details), and a list of related facts fits one fact of NOTE_CHARS; 20 is more than one
# answer's 16 calls and 40,000 characters at most, where a turn that ran unchecked stored 104 MB in a minute, and at
# most 20 notes a person reviews by hand from one turn, where one read mail put 48 orders in Held back.
PER_TURN = 20


class RememberCounts:
    """How many facts each running turn stored or had held back, reserved before memory is written (one answer's
    calls run at once)."""

    def __init__(self) -> None:
        self._by_turn: dict[str, int] = {}
        self._held: dict[str, int] = {}

    def take(self, turn_id: str, running: set[str]) -> bool:
        """Reserves one of the turn's facts; False when it has stored or had held back PER_TURN. Turns no longer
        ``running`` are forgotten."""
        self._by_turn = {t: n for t, n in self._by_turn.items() if t in running}
        self._held = {t: n for t, n in self._held.items() if t in running}
        n = self._by_turn.get(turn_id, 0)
        if n >= PER_TURN:
            return False
        self._by_turn[turn_id] = n + 1
        return True

    def give_back(self, turn_id: str) -> None:
        """A reserved fact that memory neither stored nor held back (refused before, or already remembered)."""
        if self._by_turn.get(turn_id):
            self._by_turn[turn_id] -= 1

    def was_held(self, turn_id: str) -> None:
        """A reserved fact memory held back for the person to review: it keeps its place among the turn's."""
        self._held[turn_id] = self._held.get(turn_id, 0) + 1

    def held(self, turn_id: str) -> int:
        """How many of the turn's facts memory held back."""
        return self._held.get(turn_id, 0)


async def remember(host: Any, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
    """``host`` the MemoryHost. Returns what the model reads; a refusal raises ValueError (a tool error)."""
    import wiki_engine
    from wiki_engine.guard import held_because

    pod = host.pod
    fact = str(args.get("fact") or "").strip()
    if not fact:
        raise ValueError("remember needs a fact")
    if len(fact) > NOTE_CHARS:
        raise ValueError(f"not remembered: a fact is at most {NOTE_CHARS:,} characters and this one has {len(fact):,}; "
                         "remember what matters in a few sentences (who, what, when), or as a few separate facts")
    which = str(args.get("scope") or "person")
    scope = host.memory_scope(person_id, instance_id, which)
    if not scope:
        raise ValueError("scope must be agent, person or public")
    importance = args.get("importance")
    handle = pod.supervisor.handles.get((person_id, instance_id))
    turn_id = (handle.active_turn if handle else None) or ""
    counts = host.remember_counts
    if not counts.take(turn_id, set(pod.turn_driver.active)):
        held = counts.held(turn_id)
        raise ValueError(f"not remembered: memory took {PER_TURN} facts this turn"
                         + (f" ({held} of them held back for the person to review, as they read as orders)"
                            if held else "")
                         + ", the most one turn stores; ask the person which of the rest to remember, or put related "
                         "facts together in one")
    stored = kept = False  # kept: stored, or held back for the person (either keeps its place among the turn's)
    try:
        found = pod.store.get_instance(instance_id)
        name = found[0].name if found else instance_id
        gated = pod.gate("memory_write", fact, person_id=person_id, agent_id=instance_id, agent_name=name)
        if not gated.proceed:
            raise ValueError(f"not remembered: {gated.message}")
        fact = gated.text

        def store() -> tuple[str, bool]:
            already = host.memory.remembered(fact, scope)
            if already:
                return already, False
            sid = host.memory.remember(fact, person=person_id, agent=instance_id, scope=scope,
                                       importance=float(importance) if importance is not None else None)
            return sid, bool(sid)

        try:
            sid, stored = await host.in_memory_thread(store)
            kept = stored
        except wiki_engine.InstructionRefused as exc:
            kept = True
            counts.was_held(turn_id)
            pod.emit({"type": "memory.quarantined", "person": person_id, "agent": instance_id, "reason": exc.reason})
            pod.audit(person_id=person_id, agent=name, kind="memory", phase="memory_write", action="quarantined",
                      rule="memory.instruction_filter", summary=f"not remembered: {held_because(exc.reason)}",
                      detail={"quarantine_id": exc.quarantine_id})
            raise ValueError(f"not remembered: {exc.reason} (held for the person to review)") from None
    finally:
        if not kept:
            counts.give_back(turn_id)
    if not sid:  # the person deleted this very fact, or discarded it when it was held back
        raise ValueError("not remembered: the person deleted this fact from memory (or discarded it when it was held "
                         "back), so it is not stored again")
    if not stored:
        return f"already remembered in {which} memory (source {sid[:12]}); it is not stored twice"
    pod.emit({"type": "memory.remembered", "person": person_id, "agent": instance_id, "scope": scope,
              "source_id": sid})
    return f"remembered in {which} memory (source {sid[:12]}); it will appear in the wiki after the next ingest"


def not_deletable(pod: Any, person_id: str, scope: str, owner: str) -> str:
    """Why a person may not delete a source of ``scope`` they can read, that ``owner`` put there ("" when they may).
    A household note (``public``) is its owner's, the person who put it there or whose agent did, even though everyone
    reads it; one that names no one, the person who set Hearth up (who writes the household's pages). A note of the
    person's own scopes is theirs."""
    from runtime_host.memory_jobs import owner as first_person
    from runtime_host.store import called

    whose = owner or first_person(pod)
    if scope != "public" or whose == person_id:
        return ""
    found = pod.store.get_person_by_id(whose)
    who = called(found) if found else "another person"
    return (f"This household note is {who}'s ({who} or an agent of theirs put it there): only {who} can delete it. "
            "Ask them if it should go.")
