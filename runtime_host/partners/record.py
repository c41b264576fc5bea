"""The partner record: who a partner agent is and what was pinned when an operator added it.

A `Partner` holds the endpoint URL, the SHA-256 of its key (the key itself lives in the vault under
`vault_key(partner.id)` and is attached in memory only), the TLS pin (a certificate fingerprint and/or the
text of a CA file, copied in at add time so a later change of the file changes nothing) and when and by whom
it was added. Nothing a partner says later (its agent card, a redirect) changes a record. `MIGRATION` is the
SQL of the `partners` table for SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import ssl
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from runtime_host.partners.errors import PartnerConfigError
from runtime_host.partners.net import forbidden_reason, is_ip_literal, normalise_fingerprint

MIGRATION_NAME = "0008_partners"
MIGRATION: tuple[str, list[str]] = (
    MIGRATION_NAME,
    [
        """CREATE TABLE partners (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            key_sha256 TEXT NOT NULL,
            tls_fingerprint TEXT NOT NULL DEFAULT '',
            ca_pem TEXT NOT NULL DEFAULT '',
            added_by TEXT NOT NULL DEFAULT '',
            added_at DOUBLE PRECISION NOT NULL,
            disabled_at DOUBLE PRECISION
        )""",
        "CREATE UNIQUE INDEX ix_partners_name ON partners (name)",
    ],
)

#: The columns of a `partners` row, in table order.
COLUMNS: tuple[str, ...] = ("id", "name", "endpoint", "key_sha256", "tls_fingerprint", "ca_pem", "added_by",
                            "added_at", "disabled_at")


def vault_key(partner_id: str) -> str:
    """The vault key (inside the pod's namespace) that holds a partner's credential: "partner/<id>"."""
    if not partner_id or "/" in partner_id or ".." in partner_id:
        raise ValueError(f"{partner_id!r} is not a partner id")
    return f"partner/{partner_id}"


def key_sha256(credential: str) -> str:
    """The pin of a credential: hex SHA-256 of its UTF-8 bytes (stored; the credential itself never is)."""
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


def normalise_endpoint(url: str) -> str:
    """The canonical form of a partner endpoint; PartnerConfigError (with what to do) if it cannot be one.

    HTTPS only, a host name or public IP, no user name or password in the URL, no fragment.
    """
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise PartnerConfigError(f"{text!r} is not a valid address ({exc}).") from None
    if parts.scheme.lower() == "http":
        raise PartnerConfigError(f"{text} uses plain http; partner agents are called over HTTPS only. "
                                 "Ask the partner for its https:// address.")
    if parts.scheme.lower() != "https":
        raise PartnerConfigError(f"{text!r} is not an https:// address; partner agents are called over HTTPS only.")
    if not parts.hostname:
        raise PartnerConfigError(f"{text!r} has no host name.")
    if parts.username is not None or parts.password is not None:
        raise PartnerConfigError("Put the partner's key in the key field, not in the address.")
    if parts.fragment:
        raise PartnerConfigError(f"{text!r} has a '#' part; give the partner's endpoint without it.")
    host = parts.hostname.lower().rstrip(".")
    if not host or any(c.isspace() for c in host):
        raise PartnerConfigError(f"{text!r} has no usable host name.")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")  # the form DNS, TLS and the pinned transport compare
        except UnicodeError:
            raise PartnerConfigError(f"{text!r} has a host name that cannot be written for DNS.") from None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != 443:
        netloc += f":{port}"
    return urlunsplit(("https", netloc, parts.path or "/", parts.query, ""))


def endpoint_host(endpoint: str) -> str:
    return (urlsplit(endpoint).hostname or "").lower()


def _check_ca(ca_pem: str) -> None:
    try:
        ssl.create_default_context(cadata=ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise PartnerConfigError(f"The pinned CA file is not a PEM certificate Hearth can use ({exc}).") from None


@dataclass(frozen=True)
class Partner:
    """One partner agent, as pinned when an operator added it. `credential` is attached from the vault in
    memory only (never in `to_row`, never in `repr`)."""

    id: str
    name: str
    endpoint: str
    key_sha256: str
    tls_fingerprint: str = ""
    ca_pem: str = ""
    added_by: str = ""
    added_at: float = 0.0
    disabled_at: float | None = None
    credential: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise PartnerConfigError("A partner needs a name.")
        if normalise_endpoint(self.endpoint) != self.endpoint:
            raise PartnerConfigError(f"{self.endpoint!r} is not a normalised partner endpoint; "
                                     "build partners with Partner.new.")
        if len(self.key_sha256) != 64:
            raise PartnerConfigError(f"Partner {self.name!r} has no pinned key.")
        if self.tls_fingerprint and normalise_fingerprint(self.tls_fingerprint) != self.tls_fingerprint:
            raise PartnerConfigError(f"Partner {self.name!r} has a malformed certificate pin.")
        if self.credential is not None and key_sha256(self.credential) != self.key_sha256:
            raise PartnerConfigError(
                f"The key Hearth holds for partner {self.name!r} is not the one pinned when it was added. "
                "Nothing will be sent: an operator must re-enter the key in Settings → Partners."
            )

    @classmethod
    def new(cls, name: str, endpoint: str, credential: str, *, tls_fingerprint: str = "",
            ca_file: str | Path | None = None, ca_pem: str = "", added_by: str = "",
            partner_id: str | None = None, now: float | None = None) -> Partner:
        """Pins a partner as an operator adds it: endpoint (https), key, and optionally the TLS certificate's
        SHA-256 fingerprint and/or a CA file (its text is copied in now). Without either TLS pin, the system's
        trusted CAs verify the partner. Refuses an endpoint that is an IP literal in a forbidden range."""
        if not credential or not credential.strip():
            raise PartnerConfigError("A partner needs the key (token) it gave you; Hearth sends it with every call.")
        url = normalise_endpoint(endpoint)
        host = endpoint_host(url)
        if is_ip_literal(host):
            why = forbidden_reason(host)
            if why:
                raise PartnerConfigError(f"{host} is {why}; partner agents are reached only on the public internet.")
        fp = normalise_fingerprint(tls_fingerprint) if tls_fingerprint else ""
        if ca_file is not None:
            try:
                ca_pem = Path(ca_file).read_text(encoding="ascii")
            except (OSError, UnicodeDecodeError) as exc:
                raise PartnerConfigError(f"Could not read the CA file {ca_file} ({exc}).") from None
        if ca_pem:
            _check_ca(ca_pem)
        return cls(
            id=partner_id or uuid.uuid4().hex,
            name=name.strip(),
            endpoint=url,
            key_sha256=key_sha256(credential),
            tls_fingerprint=fp,
            ca_pem=ca_pem,
            added_by=added_by,
            added_at=time.time() if now is None else now,
            credential=credential,
        )

    def with_credential(self, credential: str) -> Partner:
        """The same record with its key attached (checked against the pin)."""
        return replace(self, credential=credential)

    @property
    def host(self) -> str:
        return endpoint_host(self.endpoint)

    def to_row(self) -> dict[str, Any]:
        """The `partners` row (no credential)."""
        return {
            "id": self.id, "name": self.name, "endpoint": self.endpoint, "key_sha256": self.key_sha256,
            "tls_fingerprint": self.tls_fingerprint, "ca_pem": self.ca_pem, "added_by": self.added_by,
            "added_at": float(self.added_at), "disabled_at": self.disabled_at,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any], credential: str | None = None) -> Partner:
        """A partner from its `partners` row (only the known columns are read), with the key from the vault."""
        return cls(
            id=str(row["id"]), name=str(row["name"]), endpoint=str(row["endpoint"]),
            key_sha256=str(row["key_sha256"]), tls_fingerprint=str(row.get("tls_fingerprint") or ""),
            ca_pem=str(row.get("ca_pem") or ""), added_by=str(row.get("added_by") or ""),
            added_at=float(row["added_at"]),
            disabled_at=None if row.get("disabled_at") is None else float(row["disabled_at"]),
            credential=credential,
        )
