"""The person's own values behind reversible placeholders, as the Pod reads them back from their vault for them alone:
each vault entry read once, then kept in memory (a page of 200 placeholders was 200 keyring reads, ~10 ms each, on
the window's thread). An entry leaves as the vault's entry is deleted (a forget), and a person's all leave when the
window shows someone else."""

from __future__ import annotations

from collections.abc import Callable, Iterable

Mapping = dict[str, str]
_NOT_READ = object()


class RestoredValues:
    """``read(person_id, mapping_id)`` reads one mapping (placeholder -> value) from the person's vault, None when
    there is none. Safe across threads: a read made while a forget deletes its entry is kept nowhere (it lands in
    the person's dict the forget replaced), so a deleted value is never shown again from here."""

    def __init__(self, read: Callable[[str, str], Mapping | None]):
        self._read = read
        self._kept: dict[str, dict[str, Mapping | None]] = {}

    def mapping(self, person_id: str, mapping_id: str) -> Mapping | None:
        """One mapping of the person's, read from their vault the first time only. (A mapping is written before
        any text holds its placeholders, and its id is never reused: one found missing stays missing.)"""
        kept = self._kept.setdefault(person_id, {})
        found = kept.get(mapping_id, _NOT_READ)
        if found is _NOT_READ:
            found = kept[mapping_id] = self._read(person_id, mapping_id)
        return found  # type: ignore[return-value]

    def read_ahead(self, person_id: str, texts: Iterable[str]) -> None:
        """Reads the mappings the placeholders in ``texts`` point to (off the window's thread: each new one is a
        keyring read), so showing these texts to their owner reads nothing more."""
        from runtime_host.safety.policy import mapping_ids

        for mapping_id in sorted(set().union(*(mapping_ids(t) for t in texts))):
            self.mapping(person_id, mapping_id)

    def kept(self, person_id: str, mapping_id: str, mapping: Mapping) -> None:
        """A mapping just written to the person's vault."""
        self._kept.setdefault(person_id, {})[mapping_id] = dict(mapping)

    def forget(self, person_id: str, mapping_ids: Iterable[str]) -> None:
        """Mappings deleted from the person's vault (call after the deletion): no longer shown."""
        gone = set(mapping_ids)
        self._kept[person_id] = {k: v for k, v in list(self._kept.get(person_id, {}).items()) if k not in gone}

    def keep_only(self, person_id: str | None) -> None:
        """Someone else is shown: the values of everyone but ``person_id`` leave memory."""
        for other in [p for p in list(self._kept) if p != person_id]:
            self._kept.pop(other, None)

    def holds(self, person_id: str) -> int:
        """How many of the person's mappings are kept in memory."""
        return len(self._kept.get(person_id, {}))
