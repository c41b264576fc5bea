"""A send needs a person's allow: without an approval, with a forged, reused, expired or mismatched one, the
send is refused before any DNS lookup or connection, against the real test server."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

import pytest

from runtime_host.partners import (
    Approval,
    Partner,
    PartnerClient,
    PartnerConfigError,
    SendRefused,
    approve,
    prepare_send,
)
from runtime_host.partners.approval import MAX_SEND_CHARS
from tests.partners.a2a_server import PartnerServer
from tests.partners.conftest import StubResolver

MakePartner = Callable[..., Partner]
MakeClient = Callable[..., PartnerClient]


def test_send_requires_an_approval_in_its_signature() -> None:
    params = inspect.signature(PartnerClient.send).parameters
    assert list(params) == ["self", "pending", "approval"]
    assert params["approval"].default is inspect.Parameter.empty


def test_an_approval_cannot_be_built_or_changed_by_hand(make_partner: MakePartner) -> None:
    pending = prepare_send(make_partner(), "echo: hi")
    with pytest.raises(TypeError, match="minted only by"):
        Approval()
    with pytest.raises(TypeError, match="minted only by"):
        Approval(pending_id=pending.id, text_sha256=pending.text_sha256, decided_by="mallory")
    with pytest.raises(TypeError):
        Approval._mint(object(), pending, "mallory", 0.0, 60.0)
    a = approve(pending, "ana")
    with pytest.raises(AttributeError):
        a.pending_id = "other"


async def test_send_without_approval_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                test_client: MakeClient, resolver: StubResolver) -> None:
    client = test_client(make_partner())
    pending = prepare_send(client.partner, "echo: hi")
    before = len(server.seen)
    with pytest.raises(SendRefused, match="without a person's allow") as info:
        await client.send(pending, None)  # type: ignore[arg-type]
    assert info.value.nothing_sent
    with pytest.raises(SendRefused, match="not .*str"):
        await client.send(pending, "approved")  # type: ignore[arg-type]
    assert len(server.seen) == before and resolver.lookups == []


async def test_forged_approval_is_refused(server: PartnerServer, make_partner: MakePartner,
                                          test_client: MakeClient, resolver: StubResolver) -> None:
    client = test_client(make_partner())
    pending = prepare_send(client.partner, "echo: hi")
    forged = object.__new__(Approval)
    for k, v in {"pending_id": pending.id, "text_sha256": pending.text_sha256, "decided_by": "mallory",
                 "decided_at": 0.0, "expires_at": 1e12, "_token": "0" * 32}.items():
        object.__setattr__(forged, k, v)
    with pytest.raises(SendRefused, match="not given by a person"):
        await client.send(pending, forged)
    assert resolver.lookups == []


async def test_reused_approval_is_refused(server: PartnerServer, make_partner: MakePartner,
                                          test_client: MakeClient) -> None:
    client = test_client(make_partner())
    pending = prepare_send(client.partner, "echo: once")
    approval = approve(pending, "ana")
    assert (await client.send(pending, approval)).text == "partner says: once"
    sent = len(server.requests_to("/a2a"))
    with pytest.raises(SendRefused, match="already used"):
        await client.send(pending, approval)
    assert len(server.requests_to("/a2a")) == sent


async def test_approval_for_different_text_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                      test_client: MakeClient, resolver: StubResolver) -> None:
    client = test_client(make_partner())
    shown = prepare_send(client.partner, "echo: the agenda for Tuesday")
    other = prepare_send(client.partner, "echo: all our customer emails")
    approval = approve(shown, "ana")
    with pytest.raises(SendRefused, match="different message"):
        await client.send(other, approval)
    # Same card id, text swapped after the click.
    tampered = dataclasses.replace(shown, text="echo: all our customer emails")
    with pytest.raises(SendRefused, match="changed after the person approved"):
        await client.send(tampered, approval)
    # Text and hash both swapped: still not what the person approved.
    rehashed = dataclasses.replace(tampered, text_sha256=other.text_sha256)
    with pytest.raises(SendRefused, match="changed after the person approved"):
        await client.send(rehashed, approval)
    assert resolver.lookups == []
    # The approval was not spent by those attempts: the card the person saw still goes out, once.
    assert (await client.send(shown, approval)).text == "partner says: the agenda for Tuesday"


async def test_expired_approval_is_refused(make_partner: MakePartner, test_client: MakeClient,
                                           resolver: StubResolver) -> None:
    client = test_client(make_partner())
    pending = prepare_send(client.partner, "echo: late")
    approval = approve(pending, "ana", ttl_s=60, now=1000.0)
    with pytest.raises(SendRefused, match="expired"):
        await client.send(pending, approval)
    assert resolver.lookups == []


async def test_pending_send_for_another_partner_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                           test_client: MakeClient, resolver: StubResolver) -> None:
    pending = prepare_send(make_partner(name="Acme"), "echo: hi")
    approval = approve(pending, "ana")
    with pytest.raises(PartnerConfigError, match="another partner"):
        await test_client(make_partner(name="Other")).send(pending, approval)
    assert resolver.lookups == []


def test_prepare_send_refuses_empty_oversized_and_disabled(make_partner: MakePartner) -> None:
    partner = make_partner()
    with pytest.raises(PartnerConfigError, match="nothing to send"):
        prepare_send(partner, "  ")
    with pytest.raises(PartnerConfigError, match="at most"):
        prepare_send(partner, "x" * (MAX_SEND_CHARS + 1))
    with pytest.raises(PartnerConfigError, match="disabled"):
        prepare_send(dataclasses.replace(partner, disabled_at=1.0), "hi")
    with pytest.raises(ValueError, match="decided_by"):
        approve(prepare_send(partner, "hi"), "")
