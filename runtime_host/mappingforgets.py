"""The keyring's part of a forget: the real values behind reversible placeholders (a card typed into a chat, kept
in the person's vault) leave it once nothing left shows them, even when the forget is cut short by a crash or the
keyring is locked. A part of MemoryHost (it uses memory's thread, its job locks and the Pod's store and vaults)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime_host.memory_jobs import JobLock

log = logging.getLogger("hearth.memory")


class MappingForgets:
    """Mixed into MemoryHost: ``self.memory``, ``self.pod``, ``self.in_memory_thread`` and ``self.job_lock`` are its."""

    memory: Any
    pod: Any
    in_memory_thread: Callable[..., Any]
    job_lock: Callable[[str], JobLock]
    person_scopes: Callable[[str], list[str]]

    def _source_texts(self, source_ids: Iterable[str]) -> Iterator[str]:
        """(On memory's thread.) The text of each of these sources still stored."""
        for sid in source_ids:
            try:
                yield self.memory.get_source(sid).markdown
            except (OSError, KeyError, ValueError):
                continue

    def _mappings_in(self, scopes: list[str], texts: Iterable[str] = ()) -> set[str]:
        """(On memory's thread.) The reversible redactions' mappings that placeholders in what memory keeps in
        ``scopes``, and in ``texts``, point to: those a forget may take the last use of."""
        from runtime_host.safety.policy import mapping_ids

        found: set[str] = set()
        for t in itertools.chain(self.memory.stored_texts(scopes), texts):
            found |= mapping_ids(t)
        return found

    @contextlib.asynccontextmanager
    async def _forgetting(self, person_id: str, mappings: Callable[[], set[str]]) -> AsyncIterator[None]:
        """Around a forget of the person's: ``mappings`` (run on memory's thread before anything is deleted) names
        the reversible redactions' mappings it may take the last use of. They are written down in pod.db first,
        then the forget runs, then the vault is told (``_forget_unused_mappings``); a process killed before that
        (or a forget that failed midway) leaves them written down, checked at the person's next forget and at
        the next memory producer run. One forget at a time in this Pod: another's check must not find a mapping
        still shown by what this one has not deleted yet, and strike it off."""
        async with self.job_lock("mappings"):
            ids = await self.in_memory_thread(mappings)
            await asyncio.to_thread(self.pod.store.check_mappings, person_id, ids)
            yield
            await self._forget_unused_mappings(person_id, ids)

    async def _forget_unused_mappings(self, person_id: str, ids: set[str]) -> None:
        """After a forget: the real values behind reversible placeholders (kept in the person's vault) go too,
        once nothing the person reads of memory (a source, page, proposal, held item, skip reason: the household's,
        their own and their agents') nor of their conversations (a message, a step's call or result) holds a
        placeholder of theirs: one remembered fact's mapping may still be quoted by a page, an agent's answer or a
        conversation not forgotten. Another person's copy of the placeholder (read in the household's memory, then
        pasted into their own note or chat) keeps nothing: it never shows them the value, and it is not the
        person's to keep. Those written down for the person by a forget cut short are checked too. A mapping the
        vault could not delete (the keyring locked or missing) stays written down, to be checked again at the next
        producer run."""
        ids = ids | (await asyncio.to_thread(self.pod.store.mappings_to_check, person_id)).get(person_id, set())
        if not ids:
            return
        scopes = self.person_scopes(person_id)

        def used_in_memory() -> set[str]:
            used: set[str] = set()
            texts = self.memory.stored_texts(scopes)
            try:
                for t in texts:
                    used |= {mid for mid in ids - used if f"#{mid}]" in t}
                    if used == ids:
                        break
            finally:
                texts.close()
            return used

        used = await self.in_memory_thread(used_in_memory)
        # a scan of every message and step per id: off the event loop
        used |= {needle[1:-1] for needle in await asyncio.to_thread(self.pod.store.holding, {f"#{mid}]" for mid in ids - used},
                                                                   person_id)}
        checked = ids
        try:
            self.pod.forget_mappings(person_id, ids - used)
        except Exception as exc:  # noqa: BLE001 - what was forgotten is; the vault (locked, say) is told later
            log.info("%d reversible redaction value(s) no longer used stay in the vault until the next memory run "
                     "(%s)", len(ids - used), type(exc).__name__)
            checked = used
        await asyncio.to_thread(self.pod.store.mappings_checked, person_id, checked)

    async def forget_mappings_left(self) -> None:
        """Finishes the forgets cut short (a process killed, the keyring locked): each person's mappings written
        down and not yet checked leave that person's vault once nothing shows them. Never raises: what it cannot
        do now (a vault still locked) waits for the next run."""
        try:
            left = await asyncio.to_thread(self.pod.store.mappings_to_check)
        except Exception as exc:  # noqa: BLE001 - the producer's own work goes on; the next run looks again
            log.warning("could not read which reversible redaction values wait to leave the vault: %s", exc)
            return
        for person_id in left:
            try:
                await asyncio.to_thread(self.pod.vault_for, person_id)  # one that cannot open now waits, unscanned
            except Exception as exc:  # noqa: BLE001
                log.info("%d reversible redaction value(s) no longer used wait for the vault (%s)",
                         len(left[person_id]), type(exc).__name__)
                continue
            try:
                async with self.job_lock("mappings"):
                    await self._forget_unused_mappings(person_id, set())
            except Exception as exc:  # noqa: BLE001 - kept written down: the next run tries again
                log.warning("reversible redaction values no longer used wait to leave the vault: %s", exc)
