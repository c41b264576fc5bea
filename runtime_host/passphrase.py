"""A person's passphrase as pod.db keeps it: scrypt, "scrypt$n$r$p$salt$hash" (never the passphrase itself)."""

from __future__ import annotations

import os


def hash_passphrase(passphrase: str) -> str:
    import base64
    import hashlib

    salt = os.urandom(16)
    digest = hashlib.scrypt(passphrase.encode(), salt=salt, n=2**14, r=8, p=1)
    return f"scrypt$16384$8$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def check_passphrase(passphrase: str, stored: str) -> bool:
    import base64
    import hashlib
    import hmac

    try:
        _alg, n, r, p, salt, digest = stored.split("$")
        got = hashlib.scrypt(passphrase.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, base64.b64decode(digest))
