"""Wiki corrections memory did not save while another person was shown, kept for their owner across a quit.

Memory keeps pages as plain markdown whose personal values are reversible placeholders, the values themselves in
the owner's vault. A correction as the person left it holds those values in the clear (the editor shows them their
own), so it is not kept as text: it is sealed with AES-256-GCM under a key of the owner's, kept in their vault
(the OS keyring, or their passphrase-encrypted file), and pod.db holds the ciphertext only, bound to its owner and
row. Another person's key opens none of it; a row that does not open (damaged, or its key gone from the keyring)
is dropped with a line in the log, never in the way of the window starting.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import uuid
from typing import Any

from runtime_host.store import KEPT_CORRECTIONS, new_id

__all__ = ["KEPT_CORRECTIONS", "drop", "forget", "keep", "kept", "still_kept"]  # KEPT_CORRECTIONS: how many each person keeps

log = logging.getLogger("hearth.memory")

KEY = "wiki/kept-corrections-key"  # in the owner's vault: the AES-256 key their kept corrections are sealed with
FORGOTTEN_KEY = "kept_corrections_forgotten/{person}"  # pod_meta: a new token at each forget of the person's all


def _key(vault: Any, create: bool) -> bytes | None:
    raw = vault.get(KEY)
    if raw:
        return base64.b64decode(raw)
    if not create:
        return None
    key = os.urandom(32)
    vault.set(KEY, base64.b64encode(key).decode())
    return key


def _aad(person_id: str, row_id: str) -> bytes:
    return f"hearth kept correction/{person_id}/{row_id}".encode()


def keep(pod: Any, person_id: str, fields: dict[str, Any]) -> str:
    """Seals ``fields`` (JSON) for the person and keeps it in pod.db; returns its row id. Raises what the vault
    raises when it cannot be opened (a locked keyring): the caller then keeps it in memory only."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key = _key(pod.vault_for(person_id), create=True)
    assert key is not None
    row_id, nonce = new_id(), os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, json.dumps(fields).encode("utf-8"), _aad(person_id, row_id))
    pod.store.keep_correction(person_id, row_id, base64.b64encode(nonce + sealed).decode())
    return row_id


def kept(pod: Any, person_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The person's kept corrections (row id, fields), oldest first; each stays until ``drop``. One that does not
    open is dropped and said in the log. Raises what pod.db or the vault raises (a locked keyring): they all stay
    for the next time."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    rows = pod.store.kept_corrections(person_id)
    if not rows:
        return []
    key = _key(pod.vault_for(person_id), create=False)
    out: list[tuple[str, dict[str, Any]]] = []
    for row_id, sealed in rows:
        try:
            if key is None:
                raise KeyError("its key is gone from the vault")
            raw = base64.b64decode(sealed, validate=True)
            fields = json.loads(AESGCM(key).decrypt(raw[:12], raw[12:], _aad(person_id, row_id)).decode("utf-8"))
            if not isinstance(fields, dict):
                raise ValueError("not a correction")
        except (InvalidTag, KeyError, ValueError, binascii.Error, UnicodeDecodeError) as exc:
            log.warning("a kept wiki correction could not be read and is dropped (%s)", type(exc).__name__)
            drop(pod, person_id, row_id)
            continue
        out.append((row_id, fields))
    return out


def drop(pod: Any, person_id: str, row_id: str) -> None:
    """Forgets a kept correction (given back to its owner, or unreadable)."""
    pod.store.drop_kept_correction(person_id, row_id)


def forget(pod: Any, person_id: str) -> None:
    """Forgets all the person's kept corrections (Forget everything about me, in any process); pod.db says so after
    (a new token), for a window that holds one it could not keep in pod.db (its vault was locked): see still_kept."""
    pod.store.drop_kept_correction(person_id)
    pod.store.set_meta(FORGOTTEN_KEY.format(person=person_id), uuid.uuid4().hex)


def still_kept(pod: Any, person_id: str) -> tuple[set[str], str | None]:
    """What a window holding the person's corrections checks before giving one back: the rows pod.db still keeps
    (one gone was given back elsewhere or forgotten) and the token of their last forget (one held in memory only
    since an older token was forgotten if the token changed). Raises what pod.db raises."""
    rows = {row_id for row_id, _sealed in pod.store.kept_corrections(person_id)}
    return rows, pod.store.meta(FORGOTTEN_KEY.format(person=person_id))
