"""Sending one approved message to a partner agent over A2A, and bringing its reply back as untrusted text.

`PartnerClient(partner).send(pending, approval)` redeems the person's approval, builds the A2A client from a
card made *locally* from the pinned endpoint (`minimal_agent_card`; the partner's own agent card is never
fetched, so an address it advertises is never used), sends over `PinnedTransport` (HTTPS to the pinned origin
only, public addresses only, checked after our own DNS resolution, certificate pinned, no redirects, timeouts,
size cap) and returns a `PartnerReply` whose text is wrapped with `wrap_untrusted(..., "partner")` and scored
with `score_injection`. The reply is data for the model, never an instruction.

The test-only allowance: `PartnerClient._for_tests(..., _unsafe_allow_addresses_for_tests=frozenset({...}))`
lets a test reach its own A2A server on loopback. It is a private constructor that takes exact loopback
addresses only; no setting, environment variable, partner record or public parameter reaches it.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import uuid
from dataclasses import dataclass

import certifi
import httpx

from runtime_host.partners.approval import Approval, PendingSend, redeem
from runtime_host.partners.errors import (
    PartnerAuthRefused,
    PartnerConfigError,
    PartnerError,
    PartnerTimeout,
    PartnerUnavailable,
)
from runtime_host.partners.net import AddressPolicy, PinnedTransport, Resolver, system_resolver
from runtime_host.partners.record import Partner, key_sha256
from runtime_host.safety.untrusted import InjectionScore, score_injection, wrap_untrusted
from vault import remember_secret


@dataclass(frozen=True)
class Limits:
    """Time and size limits of one send. `total_s` bounds the whole call; a slower reply is cut."""

    connect_s: float = 10.0
    read_s: float = 60.0
    write_s: float = 30.0
    total_s: float = 120.0
    max_reply_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        if min(self.connect_s, self.read_s, self.write_s, self.total_s) <= 0 or self.max_reply_bytes <= 0:
            raise ValueError("Partner limits must be positive.")


@dataclass(frozen=True)
class PartnerReply:
    """A partner's answer: `text_wrapped` is safe to hand to a model (as data); `text` is the raw reply for a
    person's eyes only; `injection_score` is 0..1 (`injection` holds the level and the rules that fired)."""

    text_wrapped: str
    injection_score: float
    raw_size: int
    elapsed_s: float
    text: str
    injection: InjectionScore
    partner_id: str
    pending_id: str
    state: str
    connected_ip: str


def _ssl_context(partner: Partner) -> ssl.SSLContext:
    """TLS trust for one partner: its pinned CA (chain + host name); else, when only a fingerprint is pinned,
    the fingerprint alone (checked before anything is written); else the public CAs (certifi)."""
    if partner.ca_pem:
        ctx = ssl.create_default_context(cadata=partner.ca_pem)
    elif partner.tls_fingerprint:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=certifi.where())
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


class PartnerClient:
    """Calls one pinned partner. `resolver` is an async (host, port) -> [address, ...]; the system's by default."""

    def __init__(self, partner: Partner, *, resolver: Resolver | None = None, limits: Limits | None = None) -> None:
        self._setup(partner, resolver, limits, AddressPolicy())

    @classmethod
    def _for_tests(cls, partner: Partner, *, resolver: Resolver | None = None, limits: Limits | None = None,
                   _unsafe_allow_addresses_for_tests: frozenset[str]) -> PartnerClient:
        """TEST ONLY: a client that may also connect to the given loopback addresses (the test's own server).
        Never call this from Hearth code; nothing configurable leads here."""
        self = cls.__new__(cls)
        self._setup(partner, resolver, limits, AddressPolicy(_unsafe_allow_addresses_for_tests))
        return self

    def _setup(self, partner: Partner, resolver: Resolver | None, limits: Limits | None,
               policy: AddressPolicy) -> None:
        self.partner = partner
        self.limits = limits or Limits()
        self._resolver: Resolver = resolver or system_resolver
        self._policy = policy

    async def send(self, pending: PendingSend, approval: Approval) -> PartnerReply:
        """Sends an approved message and returns the wrapped, scored reply. Raises a PartnerError subclass
        (its text is for a person) when refused, cut or failed. The approval is used up even on failure."""
        partner = self.partner
        if pending.partner_id != partner.id or pending.endpoint != partner.endpoint:
            raise PartnerConfigError("This message was prepared for another partner (or an older address); "
                                     "nothing was sent.")
        redeem(pending, approval)
        if partner.disabled_at is not None:
            raise PartnerConfigError(f"Partner {partner.name} is disabled; nothing was sent.")
        if partner.credential is None:
            raise PartnerConfigError(f"Hearth has no key for partner {partner.name}; re-enter it in Settings → "
                                     "Partners. Nothing was sent.")
        if key_sha256(partner.credential) != partner.key_sha256:
            raise PartnerConfigError(f"The key Hearth holds for partner {partner.name} is not the one pinned when "
                                     "it was added; nothing was sent.")
        start = time.monotonic()
        try:
            async with asyncio.timeout(self.limits.total_s):
                text, state, size, ip = await self._call(pending.text)
        except TimeoutError:
            raise PartnerTimeout(f"Partner {partner.name} did not finish answering within {self.limits.total_s:g} s; "
                                 "the reply was cut and dropped.") from None
        elapsed = time.monotonic() - start
        wrapped = wrap_untrusted(text, "partner", origin=f"{partner.name} <{partner.endpoint}>")
        score = score_injection(text)
        return PartnerReply(text_wrapped=wrapped.text, injection_score=score.score, raw_size=size,
                            elapsed_s=elapsed, text=text, injection=score, partner_id=partner.id,
                            pending_id=pending.id, state=state, connected_ip=ip)

    async def _call(self, text: str) -> tuple[str, str, int, str]:
        from a2a.client import ClientConfig, ClientFactory, minimal_agent_card
        from a2a.helpers import get_message_text, get_stream_response_text
        from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
        from a2a.utils.constants import TransportProtocol
        from a2a.utils.errors import A2AError

        partner, lim = self.partner, self.limits
        assert partner.credential is not None
        remember_secret(partner.credential)  # every Hearth log line hides it from now on
        transport = PinnedTransport(partner.endpoint, resolver=self._resolver, policy=self._policy,
                                    ssl_context=_ssl_context(partner), fingerprint=partner.tls_fingerprint or None,
                                    max_reply_bytes=lim.max_reply_bytes, connect_timeout=lim.connect_s)
        http = httpx.AsyncClient(
            transport=transport, follow_redirects=False, trust_env=False,
            timeout=httpx.Timeout(connect=lim.connect_s, read=lim.read_s, write=lim.write_s, pool=lim.connect_s),
            headers={"Authorization": f"Bearer {partner.credential}", "User-Agent": "Hearth-partner-client"},
        )
        try:
            card = minimal_agent_card(partner.endpoint, [TransportProtocol.JSONRPC])
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            request = SendMessageRequest(message=Message(
                message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)]))
            texts: list[str] = []
            state = "message"
            try:
                async for event in client.send_message(request):
                    chunk = get_stream_response_text(event)
                    if event.HasField("task"):
                        state = TaskState.Name(event.task.status.state).removeprefix("TASK_STATE_").lower()
                        if event.task.status.HasField("message"):
                            status_text = get_message_text(event.task.status.message)
                            if status_text:
                                texts.append(status_text)
                    if chunk:
                        texts.append(chunk)
            except PartnerError:
                raise
            except A2AError as exc:
                raise self._a2a_error(exc) from exc
            except (ValueError, KeyError, TypeError) as exc:
                err = PartnerUnavailable(f"Partner {partner.name} sent an answer that is not a valid A2A reply "
                                         f"({type(exc).__name__}).")
                err.untrusted_detail = wrap_untrusted(str(exc)[:2000], "partner").text
                raise err from exc
            body = transport.last_body
            size = body.received if body is not None else 0
            ip = str(transport.backend.connected_to[-1]) if transport.backend.connected_to else ""
            return "\n".join(texts), state, size, ip
        finally:
            await http.aclose()
            await transport.aclose()

    def _a2a_error(self, exc: Exception) -> PartnerError:
        name = self.partner.name
        cause = exc.__cause__
        if isinstance(cause, httpx.HTTPStatusError):
            status = cause.response.status_code
            if status in (401, 403):
                return PartnerAuthRefused(f"Partner {name} refused Hearth's key (HTTP {status}). The key pinned "
                                          "when it was added may have been revoked: ask the partner, then "
                                          "re-enter it in Settings → Partners.")
            return PartnerUnavailable(f"Partner {name} answered with HTTP {status}; nothing usable came back.")
        if "timed out" in str(exc).lower():
            return PartnerTimeout(f"Partner {name} did not answer in time; the call was cut.")
        # The error text may carry the partner's words: keep them out of the message, wrapped aside.
        err = PartnerUnavailable(f"Partner {name} answered with an A2A error ({type(exc).__name__}); its own "
                                 "words are kept aside as untrusted text.")
        err.untrusted_detail = wrap_untrusted(str(exc)[:2000], "partner",
                                              origin=f"{name} <{self.partner.endpoint}>").text
        return err

