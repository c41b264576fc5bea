"""Secrets in the OS keyring, and redaction of those secrets wherever Hearth logs.

Secrets never go to the database, a log, argv or the environment. Names are namespaced by pod,
person and purpose, e.g. "<pod>/person/<id>/provider/<name>".
"""

from __future__ import annotations

import logging
import threading

SERVICE = "Hearth"

_known: set[str] = set()
_known_lock = threading.Lock()


class VaultUnavailable(Exception):
    """No secure keyring backend is available on this machine."""


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


def redact(text: str) -> str:
    with _known_lock:
        secrets = sorted(_known, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, "[secret hidden]")
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that replaces every known secret value in a record with a placeholder."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


class Vault:
    def __init__(self, namespace: str):
        self.namespace = namespace

    def _name(self, key: str) -> str:
        return f"{self.namespace}/{key}"

    def set(self, key: str, secret: str) -> None:
        if not secret:
            raise ValueError("An empty secret cannot be stored.")
        _backend()
        import keyring

        keyring.set_password(SERVICE, self._name(key), secret)
        remember_secret(secret)

    def get(self, key: str) -> str | None:
        _backend()
        import keyring

        value = keyring.get_password(SERVICE, self._name(key))
        if value:
            remember_secret(value)
        return value

    def delete(self, key: str) -> None:
        _backend()
        import keyring
        from keyring.errors import PasswordDeleteError

        try:
            keyring.delete_password(SERVICE, self._name(key))
        except PasswordDeleteError:
            pass

    @staticmethod
    def check() -> str:
        """Raises VaultUnavailable unless a secure backend exists; returns its name."""
        kr = _backend()
        return f"{type(kr).__module__}.{type(kr).__qualname__}"
