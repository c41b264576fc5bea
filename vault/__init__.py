"""Secrets in the OS keyring (or an encrypted file when there is none), and redaction of those secrets
wherever Hearth logs.

Secrets never go to the database, a log, argv or the environment. Names are namespaced by pod,
person, agent and purpose, e.g. "<pod>/person/<id>/provider/<name>": build them with
`person_namespace`, `agent_namespace` and `provider_key` rather than by hand. `Vault.open` picks the
OS keyring when a secure one exists, else the person's passphrase-encrypted file under the data dir
(`vault/filestore.py`); without a passphrase it says so (`VaultLocked`), never falls back to plaintext.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from vault.filestore import (
    DEFAULT_SCRYPT_N,
    EncryptedFileStore,
    VaultCorrupt,
    VaultError,
    VaultLocked,
    VaultUnavailable,
    WrongPassphrase,
)

__all__ = [
    "SERVICE", "Vault", "VaultError", "VaultUnavailable", "VaultLocked", "WrongPassphrase", "VaultCorrupt",
    "EncryptedFileStore", "RedactingFilter", "remember_secret", "redact", "redact_value", "person_namespace",
    "agent_namespace",
    "provider_key", "vault_file",
]

SERVICE = "Hearth"

_known: set[str] = set()
_known_lock = threading.Lock()


_INSECURE_BACKENDS = ("fail.Keyring", "null.Keyring", "PlaintextKeyring")


def _backend() -> object:
    import keyring

    kr = keyring.get_keyring()
    name = f"{type(kr).__module__}.{type(kr).__qualname__}"
    chain = getattr(kr, "backends", None)
    usable = [b for b in chain] if chain is not None else [kr]
    usable = [b for b in usable if not any(f"{type(b).__module__}.{type(b).__qualname__}".endswith(x) for x in _INSECURE_BACKENDS)]
    if not usable:
        raise VaultUnavailable(
            f"No secure keyring is available (found {name}). Hearth keeps keys only in the OS keyring: "
            "start a Secret Service such as GNOME Keyring or KWallet (on a desktop session it runs already), "
            "then try again."
        )
    return kr


def remember_secret(value: str) -> None:
    """Marks a value as secret so that every Hearth log line hides it."""
    if value and len(value) >= 4:
        with _known_lock:
            _known.add(value)


PLACEHOLDER = "[secret hidden]"


def redact(text: str) -> str:
    """Replaces every known secret in `text` in one pass (a placeholder is never rescanned)."""
    import re

    with _known_lock:
        secrets = sorted((s for s in _known if s in text), key=len, reverse=True)
    if not secrets:
        return text
    pattern = re.compile("|".join(re.escape(s) for s in secrets))
    # Text already redacted once keeps its placeholders as they are.
    return PLACEHOLDER.join(pattern.sub(PLACEHOLDER, part) for part in text.split(PLACEHOLDER))


def redact_value(value: Any) -> Any:
    """`redact` applied to every string inside a JSON-like value (dicts, lists, tuples); other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that replaces every known secret value in a record with a placeholder."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$")


def _part(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _PART.fullmatch(value) or ".." in value:
        raise ValueError(f"{value!r} cannot be a {kind} in a vault name: use 1-128 letters, digits, '_', '.', '@', "
                         "'+' or '-', starting with a letter or digit (no '/', no '..').")
    return value


def person_namespace(pod_id: str, person_id: str) -> str:
    """The namespace of one person's secrets: "<pod>/person/<person>"."""
    return f"{_part('pod id', pod_id)}/person/{_part('person id', person_id)}"


def agent_namespace(pod_id: str, person_id: str, agent_id: str) -> str:
    """The namespace of one agent's own secrets: "<pod>/person/<person>/agent/<agent>"."""
    return f"{person_namespace(pod_id, person_id)}/agent/{_part('agent id', agent_id)}"


def provider_key(provider: str) -> str:
    """The key of a provider's API key inside a person's (or agent's) namespace: "provider/<name>"."""
    return f"provider/{_part('provider name', provider)}"


def vault_file(data_dir: str | Path, namespace: str) -> Path:
    """The encrypted file that holds `namespace`: one per person (their agents share it and its passphrase)."""
    m = re.match(r"^([^/]+)/person/([^/]+)", namespace)
    stem = f"{m.group(1)}-person-{m.group(2)}" if m else re.sub(r"[^A-Za-z0-9_.-]+", "_", namespace).strip("._")
    return Path(data_dir) / "vault" / f"{stem or 'default'}.hvault"


class _Store(Protocol):
    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


class _KeyringStore:
    backend_name = "keyring"

    def get(self, name: str) -> str | None:
        _backend()
        import keyring

        return keyring.get_password(SERVICE, name)

    def set(self, name: str, value: str) -> None:
        _backend()
        import keyring

        keyring.set_password(SERVICE, name, value)

    def delete(self, name: str) -> None:
        _backend()
        import keyring
        from keyring.errors import PasswordDeleteError

        try:
            keyring.delete_password(SERVICE, name)
        except PasswordDeleteError:
            pass

    def names(self, prefix: str) -> list[str] | None:
        """The names starting with ``prefix`` that Hearth keeps in the keyring, where it can list them (the Secret
        Service); None where it cannot (the macOS and Windows keyrings find a secret only by its name)."""
        import keyring

        kr = keyring.get_keyring()
        for b in getattr(kr, "backends", None) or [kr]:
            if type(b).__module__.endswith("SecretService") and hasattr(b, "get_preferred_collection"):
                scheme = b.schemes[b.scheme]
                collection = b.get_preferred_collection()
                try:
                    found = [it.get_attributes().get(scheme["username"], "")
                             for it in collection.search_items({scheme["service"]: SERVICE})]
                finally:
                    collection.connection.close()
                return [n for n in found if n.startswith(prefix)]
        return None


class Vault:
    """Secrets of one namespace, in the OS keyring (default) or an `EncryptedFileStore`."""

    def __init__(self, namespace: str, store: _Store | None = None):
        if not namespace or namespace.startswith("/") or namespace.endswith("/") or "//" in namespace:
            raise ValueError(f"{namespace!r} is not a vault namespace; build one with person_namespace(...)")
        self.namespace = namespace
        self._store: _Store = store if store is not None else _KeyringStore()

    @property
    def backend(self) -> str:
        """"keyring" or "encrypted-file"."""
        return str(getattr(self._store, "backend_name", type(self._store).__name__))

    @classmethod
    def open(cls, namespace: str, passphrase: str | None = None, data_dir: str | Path | None = None, *,
             backend: Literal["auto", "keyring", "file"] = "auto", path: str | Path | None = None,
             scrypt_n: int = DEFAULT_SCRYPT_N) -> Vault:
        """The vault for `namespace`: the OS keyring when a secure one exists ("auto"), else the encrypted
        file under `data_dir` unlocked by `passphrase` (created with it on first use).

        Raises VaultUnavailable (no keyring, no data dir), VaultLocked (a file but no passphrase),
        WrongPassphrase, or VaultCorrupt, each saying what to do.
        """
        if backend in ("auto", "keyring"):
            try:
                _backend()
                return cls(namespace)
            except VaultUnavailable as exc:
                if backend == "keyring":
                    raise
                if data_dir is None and path is None:
                    raise VaultUnavailable(f"{exc} Or set a passphrase so Hearth keeps keys in an encrypted file "
                                           "in its data folder.") from None
        elif backend != "file":
            raise ValueError(f"backend must be 'auto', 'keyring' or 'file', not {backend!r}")
        if path is None:
            if data_dir is None:
                raise ValueError("the encrypted-file vault needs data_dir (or path)")
            path = vault_file(data_dir, namespace)
        if passphrase is None and not Path(path).exists():
            raise VaultUnavailable(
                "No secure keyring is available on this machine, so Hearth keeps keys in a file encrypted with a "
                "passphrase: set one (Settings → Security) to create it."
            )
        return cls(namespace, EncryptedFileStore(path, passphrase, scrypt_n=scrypt_n))

    def _name(self, key: str) -> str:
        if not key or key.startswith("/") or "//" in key or ".." in key.split("/"):
            raise ValueError(f"{key!r} is not a secret key inside a namespace (e.g. provider_key('openai'))")
        return f"{self.namespace}/{key}"

    def set(self, key: str, secret: str) -> None:
        if not secret:
            raise ValueError("An empty secret cannot be stored.")
        self._store.set(self._name(key), secret)
        remember_secret(secret)

    def get(self, key: str) -> str | None:
        value = self._store.get(self._name(key))
        if value:
            remember_secret(value)
        return value

    def delete(self, key: str) -> None:
        self._store.delete(self._name(key))

    def clear(self, keys: Iterable[str] = ()) -> int:
        """Deletes every secret of this namespace and of the namespaces under it (a person's agents'): all the
        backend lists (the Secret Service, the encrypted file), and ``keys`` (names inside this namespace) where it
        lists none. For a person removed from Hearth. Returns how many names it deleted."""
        prefix = f"{self.namespace}/"
        listed = self._store.names(prefix) if hasattr(self._store, "names") else None
        names = set(n for n in listed if n.startswith(prefix)) if listed is not None else set()
        names |= {self._name(k) for k in keys}
        for name in sorted(names):
            self._store.delete(name)
        return len(names)

    def change_passphrase(self, new_passphrase: str) -> None:
        """For the encrypted-file backend: re-encrypts under a new passphrase."""
        if not isinstance(self._store, EncryptedFileStore):
            raise VaultError("This vault is in the OS keyring, which has no Hearth passphrase to change.")
        self._store.change_passphrase(new_passphrase)

    @staticmethod
    def check() -> str:
        """Raises VaultUnavailable unless a secure backend exists; returns its name."""
        kr = _backend()
        return f"{type(kr).__module__}.{type(kr).__qualname__}"
