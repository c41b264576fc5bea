"""Errors of the partner-agent client, each written for the person who reads it on a card or in a log.

Every error a send can end with is a `PartnerError`; the subclasses say which boundary stopped it, so the
Pod can map them to a card state (refused before anything left, refused by the partner, cut, failed).
"""

from __future__ import annotations


class PartnerError(Exception):
    """A partner call that did not happen or did not finish. `str(exc)` is meant for a person."""

    #: True when Hearth stopped the call before any byte of the message left this machine.
    nothing_sent: bool = False
    #: Words of the partner's own (an error text it sent), wrapped as untrusted; never part of `str(exc)`.
    untrusted_detail: str | None = None


class PartnerConfigError(PartnerError, ValueError):
    """A partner record that cannot be used as given (bad address, bad pin, missing key)."""

    nothing_sent = True


class SendRefused(PartnerError):
    """A send without a valid person's allow: no approval, a used one, or one for another message."""

    nothing_sent = True


class AddressRefused(PartnerError):
    """The partner's address is not one Hearth may call: not HTTPS, or it resolves to a loopback, private,
    link-local, shared, multicast, unspecified or metadata address, or a request went to another origin."""

    nothing_sent = True


class RedirectRefused(PartnerError):
    """The partner answered with a redirect. Hearth never follows one: the address is pinned when the partner
    is added, and only an operator can change it."""


class CertificateRefused(PartnerError):
    """The partner's TLS certificate is not the pinned one, or does not verify against the pinned CA."""

    nothing_sent = True


class PartnerAuthRefused(PartnerError):
    """The partner refused the pinned key (HTTP 401/403)."""


class PartnerTimeout(PartnerError):
    """The partner did not connect, answer, or finish answering in time; the reply was cut."""


class ReplyTooLarge(PartnerError):
    """The partner's reply went past the size cap; it was cut and dropped."""


class PartnerUnavailable(PartnerError):
    """The partner could not be reached or answered with an error or something that is not A2A."""
