"""A person's allow for one partner send: what the card shows, and the single-use approval that unlocks it.

`prepare_send(partner, text)` makes a `PendingSend` (partner, endpoint, text, size, hash) for the approval
card. When the person approves the card, the Pod calls `approve(pending, decided_by)`, the only way to mint an
`Approval`: it is bound to that pending send's id and the SHA-256 of its text, and is registered in this
process. `redeem(pending, approval)` (called by `PartnerClient.send`) checks the binding and consumes the
approval, so a missing, forged, reused, expired or mismatched approval is refused before any connection.
Approvals live in memory: after a restart the Pod mints a fresh one from the stored decision.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
import uuid
from dataclasses import dataclass

from runtime_host.partners.errors import PartnerConfigError, SendRefused
from runtime_host.partners.record import Partner

#: The largest message Hearth sends to a partner (characters); the card shows the size.
MAX_SEND_CHARS = 100_000
#: How long an approval stays valid after the person's click.
APPROVAL_TTL_S = 3600.0


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PendingSend:
    """One message waiting for a person's allow: everything the approval card shows."""

    id: str
    partner_id: str
    partner_name: str
    endpoint: str
    text: str
    size: int
    text_sha256: str
    created_at: float

    def card_summary(self) -> str:
        return f"Send {self.size} bytes to partner {self.partner_name} at {self.endpoint}"


_MINT = object()


class Approval:
    """A person's allow for exactly one `PendingSend`. Only `approve()` can make one; it works once."""

    __slots__ = ("pending_id", "text_sha256", "decided_by", "decided_at", "expires_at", "_token")

    pending_id: str
    text_sha256: str
    decided_by: str
    decided_at: float
    expires_at: float
    _token: str

    def __init__(self, *_args: object, **_kwargs: object) -> None:
        raise TypeError("An Approval is minted only by runtime_host.partners.approve(pending, decided_by) "
                        "when a person approves the card.")

    @classmethod
    def _mint(cls, key: object, pending: PendingSend, decided_by: str, now: float, ttl: float) -> Approval:
        if key is not _MINT:
            raise TypeError("Approvals are minted only by approve().")
        self = object.__new__(cls)
        for name, value in (("pending_id", pending.id), ("text_sha256", pending.text_sha256),
                            ("decided_by", decided_by), ("decided_at", now), ("expires_at", now + ttl),
                            ("_token", secrets.token_hex(16))):
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("An Approval cannot be changed.")

    def __repr__(self) -> str:
        return f"Approval(pending_id={self.pending_id!r}, decided_by={self.decided_by!r})"


class _Ledger:
    """Approvals minted in this process and not yet used: token -> (pending id, text hash, expiry)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[str, str, float]] = {}
        self._used: set[str] = set()

    def add(self, a: Approval) -> None:
        with self._lock:
            self._open[a._token] = (a.pending_id, a.text_sha256, a.expires_at)

    def redeem(self, pending: PendingSend, a: Approval, now: float) -> None:
        with self._lock:
            if a._token in self._used:
                raise SendRefused("This approval was already used for a send. Each send needs its own allow: "
                                  "approve a new card.")
            entry = self._open.get(a._token)
            if entry is None:
                raise SendRefused("This approval was not given by a person in this Hearth session; nothing was "
                                  "sent. Approve the card again.")
            pid, digest, expires = entry
            if pid != pending.id or a.pending_id != pending.id:
                raise SendRefused("This approval is for a different message; nothing was sent.")
            if not hmac.compare_digest(digest, text_sha256(pending.text)) or pending.text_sha256 != digest:
                raise SendRefused("The message changed after the person approved it; nothing was sent. "
                                  "Approve the new text on a new card.")
            if now > expires:
                del self._open[a._token]
                raise SendRefused("The approval for this message has expired; nothing was sent. Approve it again.")
            del self._open[a._token]
            self._used.add(a._token)


_LEDGER = _Ledger()


def prepare_send(partner: Partner, text: str, *, now: float | None = None) -> PendingSend:
    """The pending send an approval card shows. Refuses empty or oversized text and disabled partners."""
    if not isinstance(text, str) or not text.strip():
        raise PartnerConfigError("There is nothing to send.")
    if len(text) > MAX_SEND_CHARS:
        raise PartnerConfigError(f"The message is {len(text)} characters; partners get at most {MAX_SEND_CHARS}. "
                                 "Shorten it or send a summary.")
    if partner.disabled_at is not None:
        raise PartnerConfigError(f"Partner {partner.name} is disabled; enable it in Settings → Partners first.")
    return PendingSend(
        id=uuid.uuid4().hex, partner_id=partner.id, partner_name=partner.name, endpoint=partner.endpoint,
        text=text, size=len(text.encode("utf-8")), text_sha256=text_sha256(text),
        created_at=time.time() if now is None else now,
    )


def approve(pending: PendingSend, decided_by: str, *, ttl_s: float = APPROVAL_TTL_S,
            now: float | None = None) -> Approval:
    """Mints the approval for exactly this pending send. Call it only when a person approved its card."""
    if not decided_by or not decided_by.strip():
        raise ValueError("An approval needs the person who gave it (decided_by).")
    if text_sha256(pending.text) != pending.text_sha256:
        raise SendRefused("The message does not match the card the person saw; it cannot be approved.")
    a = Approval._mint(_MINT, pending, decided_by, time.time() if now is None else now, ttl_s)
    _LEDGER.add(a)
    return a


def redeem(pending: PendingSend, approval: Approval | None, *, now: float | None = None) -> None:
    """Checks that `approval` allows exactly `pending` and uses it up; SendRefused otherwise."""
    if approval is None:
        raise SendRefused("Nothing is sent to a partner without a person's allow: approve the card first.")
    if not isinstance(approval, Approval):
        raise SendRefused(f"A partner send needs an Approval from approve(), not {type(approval).__name__}; "
                          "nothing was sent.")
    _LEDGER.redeem(pending, approval, time.time() if now is None else now)
