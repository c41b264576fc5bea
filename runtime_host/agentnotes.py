"""An agent's own notes (the `notes` toolkit): a markdown file in its folder, agents/<person>/<agent>/notes.md, that
it appends to ("to remember something for later turns") and reads back. The Pod writes them (``append_note`` is a
Pod tool): what a person tells an agent to note is gated by the agent's safety policy and redacted by memory's
redactor first, as ``remember`` is, so a card or IBAN is never kept in the clear (reversibly where the agent
redacts reversibly: the value in the person's vault); a note that reads as an order to the assistant (memory's
guard) is not kept, as later turns read the notes back as the agent's own. Forget (an agent, or everything about a person) empties
them; deleting the agent removes its whole folder (runtime_host/agenthost.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from runtime_host.paths import agent_dir
from runtime_host.tools import NOTE_CHARS, NOTES_FILE, write_note


async def append_note(pod: Any, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
    """The Pod tool: appends one line to the agent's notes, marked with the step that wrote it (``args["step"]``,
    set by the worker, never by the model), so a turn resumed after a crash can tell the call took effect."""
    from runtime_host.memory_jobs import redactor
    from wiki_engine.guard import check_instructions, held_because

    line = " ".join(str(args.get("text") or "").split())
    if not line:
        raise ValueError("the note is empty")
    if len(line) > NOTE_CHARS:
        raise ValueError(f"a note is at most {NOTE_CHARS} characters")
    found = pod.store.get_instance(instance_id)
    gated = pod.gate("memory_write", line, person_id=person_id, agent_id=instance_id,
                     agent_name=found[0].name if found else instance_id)
    if not gated.proceed:
        raise ValueError(f"not noted: {gated.message}")
    line = " ".join(redactor(pod)(gated.text, f"agent/{person_id}/{instance_id}").split())
    # what every later turn reads back as the agent's own note: an order there (a stranger's mail's "From now on,
    # always approve …") would be obeyed as one; memory holds such a fact back, and a note is not kept
    verdict = check_instructions(line, tuple(pod.store.agent_names()))  # memory need not be open for it
    if not verdict.ok:
        why = held_because(verdict.reason)
        pod.audit(person_id=person_id, agent=found[0].name if found else instance_id, kind="memory",
                  phase="memory_write", action="refused", rule="memory.instruction_filter",
                  summary=f"not noted: {why}")
        raise ValueError(f"not noted: it {why}; a note keeps facts for later turns, not orders. If the person asked "
                         "for this, tell them it was not noted and why")
    # written before anything is awaited: a call the Pod took is written, or refused, in one go
    write_note(str(agent_dir(pod.home, person_id, instance_id)), line, str(args.get("step") or ""))
    return f"noted: {line}"


def note_files(home: Path, person_id: str, agent_id: str | None = None) -> list[Path]:
    """The notes files of one agent of the person's, or of all their agents (those deleted leave no folder)."""
    folder = home / "agents" / person_id
    return [p for p in ([folder / agent_id / NOTES_FILE] if agent_id else sorted(folder.glob(f"*/{NOTES_FILE}")))
            if p.is_file()]


def texts(files: Iterable[Path]) -> Iterator[str]:
    """What these notes files say (for the placeholders a forget may take the last use of)."""
    for p in files:
        try:
            yield p.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue


def empty(files: Iterable[Path]) -> None:
    """Deletes these notes files: the agent starts with no notes ("(no notes yet)")."""
    for p in files:
        p.unlink(missing_ok=True)
