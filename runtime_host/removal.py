"""Removing a person from a Hearth: who may, and everything of theirs going with them (nothing of anyone else's).

Only a person (in their own window or the CLI) or the person who set Hearth up reaches this; no agent holds a tool
that does (the Pod's tools are what its parts register, and none calls here). The order keeps it safe:

1. their removal is written down first (``Person.removing_at``): they cannot log in, and no worker of theirs
   starts again (``AgentHost.ensure_worker`` asks);
2. nothing of theirs runs or sends: their schedules, their `serve` token and their phone chats' links go, their
   turns stop and their workers end (memory's runs leave them out), their inboxes stop being watched and go with
   their mail, cards and passwords (``MailHost.remove_account``);
3. memory forgets them as "Forget everything about me" does (``MemoryHost.memory_forget_me``): their private memory,
   their agents' notes, what they put in the household's memory (its claims leave the pages that cite it), their
   watched folders and kept corrections;
4. their agents with their conversations, folders and schedules (``AgentHost.delete_agent``);
5. their secrets in the keyring (their namespace, their agents' under it) and their encrypted vault file;
6. the rows left (hand-offs, cards, notifications, activity, partners, providers), then the person
   (``Store.delete_person``);
7. what another process (a window that unlocked them before) gave them as it ended, past its check
   (``Store.still_here``), is taken apart the same way (``sweep``), here and at each start.

Meanwhile the background runs act for the others alone (``Store.list_people(active=True)``: memory's runs, the
mail watcher), and each process's supervision pass ends their workers (``Supervisor.gone``).

Each step does what is left of it: a removal cut short by a kill is finished by running it again, or by the next
start (``finish_later``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import unicodedata
from typing import Any

from runtime_host.passphrase import check_passphrase
from runtime_host.store import UNNAMED, Person, StoreError

log = logging.getLogger("hearth.people")

_running: set[asyncio.Task[None]] = set()  # removals the next start finishes (kept so they are not collected)


def _owner_said(owner: Person) -> str:
    return "the person who set Hearth up" if owner.name == UNNAMED else f"{owner.name}, who set Hearth up"


def being_removed(person: Person) -> StoreError:
    """What someone is told who tries to log in as a person whose removal began."""
    return StoreError(f"{person.name} is being removed from this Hearth and cannot log in. The removal finishes "
                      "when Hearth starts again, or when the person who set Hearth up removes them again "
                      f"(Settings → People, or `python -m runtime_host person remove {person.name!r} --yes`).")


def _target(pod: Any, name: str) -> Person:
    target = pod.store.get_person(name.strip())
    if target is None:
        known = ", ".join(p.name for p in pod.store.list_people())
        raise StoreError(f"No person named {name!r} on this Hearth (people here: {known}). Nothing was removed.")
    return target


def _may(pod: Any, by_id: str, target: Person) -> Person:
    """Refuses (audited) anyone but the person themselves and the person who set Hearth up (the first person);
    refuses that one while others share Hearth. Gives the person who set it up."""
    people = pod.store.list_people()
    owner = people[0]
    if by_id not in (target.id, owner.id):
        raise pod.refuse(by_id, f"Only {target.name} themselves, or {_owner_said(owner)}, can remove {target.name}. "
                                "Nothing was removed.", f"tried to remove {target.name}")
    others = [p.name for p in people if p.id != target.id]
    if target.id == owner.id and others:
        raise StoreError(f"{target.name} set Hearth up, so they are removed last: first remove {', '.join(others)} "
                         f"(each can remove themselves, or {target.name} removes them by typing their name), then "
                         f"{target.name}. Nothing was removed.")
    return owner


async def counts(pod: Any, by_id: str, name: str) -> dict[str, Any]:
    """What removing ``name`` takes, for its confirmation: their name and how many conversations, agents, inboxes
    and memory notes (theirs, their agents' and what they put in the household's memory). Refused as the removal is
    to anyone who may not remove them."""
    target = _target(pod, name)
    _may(pod, by_id, target)
    agents = pod.store.list_agents(target.id)
    notes = await pod.in_memory_thread(lambda: pod.memory.person_source_count(target.id))
    return {"name": target.name, "self": target.id == by_id, "has_passphrase": bool(target.passphrase_hash),
            "conversations": sum(len(pod.store.list_conversations(i.id)) for i, _ in agents),
            "agents": len(agents), "inboxes": len(pod.mail.accounts(target.id)), "notes": int(notes)}


async def remove(pod: Any, by_id: str, name: str, confirm: str) -> dict[str, Any]:
    """``by_id`` removes the person named ``name`` and everything theirs. A person removes themselves by typing their
    passphrase (their name when they have none); the person who set Hearth up removes another by typing that
    person's name (one who left and forgot their passphrase is removable) and is removed last. Returns what went."""
    target = _target(pod, name)
    _may(pod, by_id, target)
    if target.id == by_id and target.passphrase_hash:
        if not check_passphrase(confirm, target.passphrase_hash):
            raise StoreError("That is not your passphrase: type it to confirm that you remove yourself. "
                             "Nothing was removed.")
    elif unicodedata.normalize("NFC", confirm.strip()) != unicodedata.normalize("NFC", target.name):
        whose = "your name" if target.id == by_id else f"{target.name}'s name"
        raise StoreError(f"Type {whose} ({target.name}) exactly to confirm the removal. Nothing was removed.")
    gone = await counts(pod, by_id, target.name)
    pod.store.mark_removing(target.id)
    try:
        await take_apart(pod, target)
    except (StoreError, OSError) as exc:
        raise StoreError(f"{target.name}'s removal stopped before the end: {exc} They cannot log in meanwhile; once "
                         f"that is put right, remove {target.name} again to finish it (Hearth also tries at its next "
                         "start).") from exc
    if by_id != target.id:
        pod.audit(person_id=by_id, agent=None, kind="access", action="removed",
                  summary=f"removed {target.name} from this Hearth with everything theirs")
    return gone


def _lock(pod: Any) -> asyncio.Lock:
    lock: asyncio.Lock | None = pod.__dict__.get("_removal_lock")
    if lock is None:
        lock = pod.__dict__["_removal_lock"] = asyncio.Lock()
    return lock


async def take_apart(pod: Any, person: Person) -> None:
    """Everything of a person whose removal began, in the module's order; what is already gone is passed over.
    Then what another process left behind for a person removed (``sweep``)."""
    pid = person.id
    async with _lock(pod):
        if pod.store.get_person_by_id(pid) is None:
            return  # another run finished it
        await _everything_of(pod, pid, person.name)
    log.info("a person was removed from this Hearth with everything theirs")
    pod.emit({"type": "person.removed", "person": pid, "name": person.name})
    await sweep(pod)


async def sweep(pod: Any) -> int:
    """Rows that name a person who no longer exists, taken apart as their removal took them (with their passwords
    and keyring secrets): another process that unlocked them before gave them something (an inbox, a provider, a
    watched folder) just as their removal ended, past its check (``Store.still_here``). Asked at the end of every
    removal and at each start; returns how many such people it found."""
    async with _lock(pod):
        here = {p.id for p in pod.store.list_people()}
        gone = set(pod.store.left_behind()) | (pod.folders.owners() - here)
        for pid in sorted(gone):
            log.info("things of a person removed from this Hearth were left behind; they are deleted")
            await _everything_of(pod, pid, "a removed person")
    return len(gone)


async def _everything_of(pod: Any, pid: str, name: str) -> None:
    """The steps of a removal, in the module's order (under the removal lock)."""
    from runtime_host import schedule

    schedule.forget_schedules(pod.store.engine, pid)  # with their past runs, those of schedules they deleted too
    pod.store.cut_off(pid)  # their `serve` token and phone chats
    for inst, _ in pod.store.list_agents(pid):
        await pod.stops.stop_agent(pid, inst.name, f"Hearth (removing {name})")
        handle = pod.supervisor.handles.get((pid, inst.id))
        if handle is not None:
            await handle.stop()
    for account in pod.mail.accounts(pid):
        await pod.mail.remove_account(account.id, pid)
    await pod.memory_forget_me(pid)
    for inst, _ in pod.store.list_agents(pid):
        await pod.agent_host.delete_agent(pid, inst.name)
    _clear_vault(pod, pid)
    shutil.rmtree(pod.home / "agents" / pid, ignore_errors=True)  # the emptied folder of their agents' folders
    pod.store.delete_person(pid)
    pod._passphrases.pop(pid, None)


def _clear_vault(pod: Any, pid: str) -> None:
    """Their secrets: all the keyring lists under their namespace (the Secret Service; the macOS and Windows
    keyrings list nothing, so the names Hearth knows are deleted there), and their encrypted vault file, which
    only their passphrase opens (one who forgot it is removable all the same)."""
    from runtime_host.channels.telegram import VAULT_KEY
    from runtime_host.keptcorrections import KEY
    from runtime_host.partners import vault_key
    from vault import VaultUnavailable, person_namespace, vault_file

    known = [f"provider/{p.name}" for p in pod.store.list_providers(pid)] + [KEY, VAULT_KEY]
    known += [vault_key(p["id"]) for p in pod.list_partners(pid) if p.get("id")]
    known += [f"redactions/{m}" for m in pod.store.mappings_to_check(pid).get(pid, set())]
    try:
        pod.vault_for(pid).clear(known)
    except VaultUnavailable as exc:  # no keyring here, and their file is locked: the file goes below
        log.info("their vault could not be opened (%s); its file is deleted", type(exc).__name__)
    vault_file(pod.home, person_namespace(pod.pod_id, pid)).unlink(missing_ok=True)


def finish_later(pod: Any) -> None:
    """At start: the removals a kill cut short are finished in the background."""
    left = [p for p in pod.store.list_people() if p.removing_at is not None]

    async def finish() -> None:
        for person in left:
            try:
                await take_apart(pod, person)
            except Exception as exc:  # noqa: BLE001 - written down still: the next start (or a removal) tries again
                log.warning("the removal of a person could not be finished yet: %s", exc)
        try:
            await sweep(pod)  # what another process left behind for a person removed
        except Exception as exc:  # noqa: BLE001 - left for the next start (or removal) to try again
            log.warning("what a removed person left behind could not be deleted yet: %s", exc)

    task = asyncio.create_task(finish())
    _running.add(task)
    task.add_done_callback(_running.discard)
