"""Partner agents over A2A on a short leash: pinned records, a person's allow for every send, a network
boundary that reaches only the pinned public HTTPS endpoint, and replies that come back as untrusted text.

Qt-free and Pod-free: the Pod stores `Partner.to_row()` in the `partners` table (`MIGRATION`), keeps the key in
the vault under `vault_key(partner.id)`, shows `prepare_send(...)` on an approval card, calls
`approve(pending, decided_by)` when a person approves it, and `await PartnerClient(partner).send(pending,
approval)`. See `client.py` for the test-only loopback allowance.
"""

from runtime_host.partners.approval import (
    APPROVAL_TTL_S,
    MAX_SEND_CHARS,
    Approval,
    PendingSend,
    approve,
    prepare_send,
)
from runtime_host.partners.client import Limits, PartnerClient, PartnerReply
from runtime_host.partners.errors import (
    AddressRefused,
    CertificateRefused,
    PartnerAuthRefused,
    PartnerConfigError,
    PartnerError,
    PartnerTimeout,
    PartnerUnavailable,
    RedirectRefused,
    ReplyTooLarge,
    SendRefused,
)
from runtime_host.partners.net import Resolver, certificate_sha256, forbidden_reason, system_resolver
from runtime_host.partners.record import COLUMNS, MIGRATION, MIGRATION_NAME, Partner, key_sha256, vault_key

__all__ = [
    "APPROVAL_TTL_S", "MAX_SEND_CHARS", "COLUMNS", "MIGRATION", "MIGRATION_NAME",
    "Approval", "PendingSend", "approve", "prepare_send",
    "Limits", "PartnerClient", "PartnerReply",
    "Partner", "key_sha256", "vault_key",
    "Resolver", "certificate_sha256", "forbidden_reason", "system_resolver",
    "PartnerError", "PartnerConfigError", "SendRefused", "AddressRefused", "RedirectRefused", "CertificateRefused",
    "PartnerAuthRefused", "PartnerTimeout", "ReplyTooLarge", "PartnerUnavailable",
]
