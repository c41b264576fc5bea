"""The person's own values behind reversible placeholders, as the Pod reads them back from their vault for them alone:
each vault entry read once, then kept in memory (a page of 200 placeholders was 200 keyring reads, ~10 ms each, on
the window's thread), the KEPT read last at most (a person with 100,000 values does not have them all in the
window's memory; one read long ago is read from the keyring again). An entry leaves as the vault's entry is deleted
(a forget in this process at once; one in another process, the CLI's `memory forget-me` say, within RECHECK_S of
the next value read back: pod.db says a forget of the person's was done, FORGOTTEN_KEY), and a person's all leave
when the window shows someone else."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

Mapping = dict[str, str]

KEPT = 2_000  # mappings kept at most, everyone's together: ten pages of 200 placeholders each
RECHECK_S = 1.0  # how often, while values are read back, pod.db is asked whether another process forgot some
FORGOTTEN_KEY = "values_forgotten/{person}"  # pod_meta: a new token at each forget of the person's values

log = logging.getLogger("hearth.vault")


class RestoredValues:
    """``read(person_id, mapping_id)`` reads one mapping (placeholder -> value) from the person's vault, None when
    there is none; ``forgotten(person_id)`` the token pod.db holds for the person's last forget, by any process.
    Safe across threads: a read made while a forget deletes its entry is kept nowhere (the forget came after the
    read began), so a deleted value is never shown again from here."""

    def __init__(self, read: Callable[[str, str], Mapping | None],
                 forgotten: Callable[[str], str | None] | None = None):
        self._read = read
        self._forgotten = forgotten
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], Mapping | None] = OrderedDict()  # the one read last, last
        self._epochs: dict[str, int] = {}  # a person's forgets so far: a read begun before one is kept nowhere
        self._asked: dict[str, float] = {}  # person -> when pod.db was last asked
        self._tokens: dict[str, str | None] = {}  # person -> the token pod.db said at the last look that answered

    def mapping(self, person_id: str, mapping_id: str) -> Mapping | None:
        """One mapping of the person's, read from their vault the first time only (or again once it was let go).
        (A mapping is written before any text holds its placeholders, and its id is never reused: one found
        missing stays missing.)"""
        self._follow(person_id)
        key = (person_id, mapping_id)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
            epoch = self._epochs.get(person_id, 0)
        found = self._read(person_id, mapping_id)
        with self._lock:
            if self._epochs.get(person_id, 0) == epoch:  # no forget of theirs since the read began
                self._keep(key, found)
        return found

    def read_ahead(self, person_id: str, texts: Iterable[str]) -> None:
        """Reads the mappings the placeholders in ``texts`` point to (off the window's thread: each new one is a
        keyring read), so showing these texts to their owner reads nothing more."""
        from runtime_host.safety.policy import mapping_ids

        for mapping_id in sorted(set().union(*(mapping_ids(t) for t in texts))):
            self.mapping(person_id, mapping_id)

    def kept(self, person_id: str, mapping_id: str, mapping: Mapping) -> None:
        """A mapping just written to the person's vault."""
        with self._lock:
            self._keep((person_id, mapping_id), dict(mapping))

    def forget(self, person_id: str, mapping_ids: Iterable[str]) -> None:
        """Mappings deleted from the person's vault (call after the deletion): no longer shown."""
        gone = set(mapping_ids)
        with self._lock:
            self._drop(person_id, lambda mapping_id: mapping_id in gone)

    def keep_only(self, person_id: str | None) -> None:
        """Someone else is shown: the values of everyone but ``person_id`` leave memory."""
        with self._lock:
            for other in {p for p, _ in self._kept} | set(self._epochs):
                if other != person_id:
                    self._drop(other, lambda _mapping_id: True)

    def holds(self, person_id: str) -> int:
        """How many of the person's mappings are kept in memory."""
        with self._lock:
            return sum(1 for p, _ in self._kept if p == person_id)

    def _keep(self, key: tuple[str, str], mapping: Mapping | None) -> None:
        self._kept[key] = mapping
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)

    def _drop(self, person_id: str, which: Callable[[str], bool]) -> None:
        """(Under the lock.) Lets go of the person's mappings ``which`` names; a read of theirs still going is kept
        nowhere."""
        self._epochs[person_id] = self._epochs.get(person_id, 0) + 1
        for key in [k for k in self._kept if k[0] == person_id and which(k[1])]:
            del self._kept[key]

    def _follow(self, person_id: str) -> None:
        """At most every RECHECK_S: whether pod.db says another forget of the person's values was done since the
        last look (another process's: the CLI, `serve`); then every one kept of theirs is let go, and read from the
        vault again as it is now. The first look that answers lets go of all kept of theirs too: a value kept before
        it (one the window wrote itself, ``kept``) may have been forgotten elsewhere before any token was known."""
        if self._forgotten is None:
            return
        now = time.monotonic()
        with self._lock:
            asked = self._asked.get(person_id)
            if asked is not None and now - asked < RECHECK_S:
                return
            self._asked[person_id] = now  # one look at a time, whichever thread
        try:
            token = self._forgotten(person_id)
        except Exception as exc:  # noqa: BLE001 - pod.db busy or gone a moment: the next value read back looks again
            log.info("could not look whether another process forgot values: %s", type(exc).__name__)
            with self._lock:
                self._asked.pop(person_id, None)
            return
        with self._lock:
            if person_id not in self._tokens or token != self._tokens[person_id]:
                self._drop(person_id, lambda _mapping_id: True)
            self._tokens[person_id] = token
