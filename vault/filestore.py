"""The encrypted-file vault: secrets in one file under the data dir when no secure OS keyring exists.

The file is JSON holding only ciphertext: the secrets are encrypted together with AES-256-GCM under a
key derived by scrypt (N=2^17, r=8, p=1 by default) from a passphrase the person sets; the header
(format, KDF parameters, salt, passphrase verifier) is bound to the ciphertext as associated data. A
separate 32-byte verifier, derived alongside the key, tells a wrong passphrase apart from a damaged
file. Every write uses a fresh nonce and replaces the file atomically (mode 0600) under a lock, so two
processes never interleave. The passphrase itself is never stored, only the derived key, in memory.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = "hearth-vault"
VERSION = 1
DEFAULT_SCRYPT_N = 2 ** 17
MIN_PASSPHRASE = 8
_N_RANGE = (2 ** 14, 2 ** 20)


class VaultError(Exception):
    """Base of every vault error; the message says what happened and what to do."""


class VaultUnavailable(VaultError):
    """No secure keyring backend is available on this machine (and no usable vault file)."""


class VaultLocked(VaultUnavailable):
    """The encrypted vault file exists but has not been unlocked with its passphrase."""


class WrongPassphrase(VaultLocked):
    """The passphrase given does not unlock the vault file."""


class VaultCorrupt(VaultUnavailable):
    """The vault file is damaged or not a Hearth vault file."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any, what: str, path: Path) -> bytes:
    if not isinstance(text, str):
        raise VaultCorrupt(f"The vault file {path} is damaged (its {what} is missing). Restore it from a backup, "
                           "or remove it and add your keys again.")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VaultCorrupt(f"The vault file {path} is damaged (its {what} is not valid). Restore it from a backup, "
                           "or remove it and add your keys again.") from None


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    material = Scrypt(salt=salt, length=64, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))
    return material[:32], hashlib.sha256(b"hearth-vault-verifier" + material[32:]).digest()


class EncryptedFileStore:
    """Secrets (name -> value) in one encrypted file. Raises the errors above; never writes plaintext."""

    backend_name = "encrypted-file"

    def __init__(self, path: str | Path, passphrase: str | None, *, create: bool = True,
                 scrypt_n: int = DEFAULT_SCRYPT_N):
        self.path = Path(path)
        self._lock = threading.Lock()
        if not passphrase:
            if self.path.exists():
                raise VaultLocked(f"The vault file {self.path} is locked: enter your passphrase to unlock it.")
            raise VaultLocked("No passphrase was given for a new vault file: set one (at least "
                              f"{MIN_PASSPHRASE} characters) to keep keys encrypted on this machine.")
        with self._file_lock():
            if self.path.exists():
                header = self._read_header()
                self._salt = _unb64(header["salt"], "salt", self.path)
                self._key, verifier = _derive(passphrase, self._salt, header["n"], header["r"], header["p"])
                if not hmac.compare_digest(verifier, _unb64(header["verifier"], "verifier", self.path)):
                    raise WrongPassphrase(
                        f"That passphrase does not unlock {self.path}. Check it (and the keyboard layout) and try "
                        "again. A forgotten passphrase cannot be recovered: remove the file and add your keys again."
                    )
                self._params = (header["n"], header["r"], header["p"])
                self._decrypt(header)  # proves the contents are intact now, not at first use
            elif create:
                if len(passphrase) < MIN_PASSPHRASE:
                    raise ValueError(f"A vault passphrase needs at least {MIN_PASSPHRASE} characters.")
                if not _N_RANGE[0] <= scrypt_n <= _N_RANGE[1] or scrypt_n & (scrypt_n - 1):
                    raise ValueError("scrypt_n must be a power of two between 2**14 and 2**20")
                self._params = (scrypt_n, 8, 1)
                self._salt = os.urandom(16)
                self._key, verifier = _derive(passphrase, self._salt, *self._params)
                self._verifier = verifier
                self._write({})
            else:
                raise VaultUnavailable(f"There is no vault file at {self.path}.")

    # -- public
    def get(self, name: str) -> str | None:
        with self._lock, self._file_lock():
            return self._load().get(name)

    def set(self, name: str, value: str) -> None:
        with self._lock, self._file_lock():
            data = self._load()
            data[name] = value
            self._write(data)

    def delete(self, name: str) -> None:
        with self._lock, self._file_lock():
            data = self._load()
            if data.pop(name, None) is not None:
                self._write(data)

    def names(self, prefix: str = "") -> list[str]:
        with self._lock, self._file_lock():
            return sorted(n for n in self._load() if n.startswith(prefix))

    def change_passphrase(self, new_passphrase: str) -> None:
        """Re-encrypts everything under a new passphrase (new salt); the old one stops working."""
        if len(new_passphrase) < MIN_PASSPHRASE:
            raise ValueError(f"A vault passphrase needs at least {MIN_PASSPHRASE} characters.")
        with self._lock, self._file_lock():
            data = self._load()
            self._salt = os.urandom(16)
            self._key, self._verifier = _derive(new_passphrase, self._salt, *self._params)
            self._write(data)

    # -- file format
    def _header_fields(self) -> dict[str, Any]:
        n, r, p = self._params
        return {"format": FORMAT, "version": VERSION, "kdf": "scrypt", "n": n, "r": r, "p": p,
                "salt": _b64(self._salt), "verifier": _b64(self._verifier)}

    @staticmethod
    def _aad(header: dict[str, Any]) -> bytes:
        keys = ("format", "version", "kdf", "n", "r", "p", "salt", "verifier")
        return json.dumps({k: header[k] for k in keys}, sort_keys=True, separators=(",", ":")).encode()

    def _read_header(self) -> dict[str, Any]:
        damaged = (f"The vault file {self.path} is damaged or is not a Hearth vault file. Restore it from a "
                   "backup, or remove it and add your keys again.")
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise VaultUnavailable(f"The vault file {self.path} cannot be read ({exc.strerror}); check its "
                                   "permissions.") from None
        try:
            header = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise VaultCorrupt(damaged) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise VaultCorrupt(damaged)
        if header.get("version") != VERSION:
            raise VaultCorrupt(f"The vault file {self.path} has version {header.get('version')!r}; this Hearth "
                               f"reads version {VERSION}. Update Hearth to open it.")
        n, r, p = header.get("n"), header.get("r"), header.get("p")
        if (header.get("kdf") != "scrypt" or not all(isinstance(x, int) and not isinstance(x, bool) for x in (n, r, p))
                or not _N_RANGE[0] <= n <= _N_RANGE[1] or n & (n - 1) or r != 8 or not 1 <= p <= 4):
            raise VaultCorrupt(damaged)
        for k in ("salt", "verifier", "nonce", "ciphertext"):
            _unb64(header.get(k), k, self.path)
        return header

    def _decrypt(self, header: dict[str, Any]) -> dict[str, str]:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = _unb64(header["nonce"], "nonce", self.path)
        ct = _unb64(header["ciphertext"], "ciphertext", self.path)
        if len(nonce) != 12:
            raise VaultCorrupt(f"The vault file {self.path} is damaged (bad nonce). Restore it from a backup, or "
                               "remove it and add your keys again.")
        try:
            plain = AESGCM(self._key).decrypt(nonce, ct, self._aad(header))
        except InvalidTag:
            raise VaultCorrupt(
                f"The vault file {self.path} is damaged: its contents fail the integrity check although the "
                "passphrase is right. Restore it from a backup, or remove it and add your keys again."
            ) from None
        data = json.loads(plain)
        if not isinstance(data, dict):
            raise VaultCorrupt(f"The vault file {self.path} holds unexpected contents.")
        self._verifier = _unb64(header["verifier"], "verifier", self.path)
        return data

    def _load(self) -> dict[str, str]:
        if not self.path.exists():
            raise VaultCorrupt(f"The vault file {self.path} has disappeared. Add your keys again (a new vault "
                               "file is created with your passphrase).")
        header = self._read_header()
        if _unb64(header["salt"], "salt", self.path) != self._salt:
            raise VaultLocked(f"The passphrase of {self.path} was changed elsewhere: unlock the vault again.")
        return self._decrypt(header)

    def _write(self, data: dict[str, str]) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        header = self._header_fields()
        nonce = os.urandom(12)
        ct = AESGCM(self._key).encrypt(nonce, json.dumps(data).encode("utf-8"), self._aad(header))
        body = json.dumps({**header, "nonce": _b64(nonce), "ciphertext": _b64(ct)}, indent=1).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self._sweep()
        with contextlib.suppress(OSError):
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def _sweep(self) -> None:
        """Removes what a writer killed before its rename left (``<name>.tmp<pid>``): an older copy of the file, keys
        since deleted or an old passphrase's encryption among them. Only where the file lock keeps every other
        process's writer out meanwhile (POSIX): elsewhere a live writer's file could be taken from under it."""
        if os.name != "posix":
            return
        for left in self.path.parent.glob(self.path.name + ".tmp*"):
            if left.name[len(self.path.name) + 4:].isdigit():
                with contextlib.suppress(OSError):
                    left.unlink()

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        try:
            import fcntl
        except ImportError:  # Windows: the in-process lock still applies
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
