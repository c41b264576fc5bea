"""Partner sends against a real A2A server (a2a-sdk, TLS, bearer key) on loopback, reached only through the
test-only allowance: approved sends and their wrapped replies, and every way a send is refused or cut."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from runtime_host.partners import (
    AddressRefused,
    CertificateRefused,
    Limits,
    Partner,
    PartnerAuthRefused,
    PartnerClient,
    PartnerConfigError,
    PartnerTimeout,
    PartnerUnavailable,
    RedirectRefused,
    ReplyTooLarge,
    approve,
    certificate_sha256,
    prepare_send,
)
from runtime_host.safety.untrusted import BEGIN
from tests.partners.a2a_server import INJECTION, Cert, PartnerServer
from tests.partners.conftest import HOST, StubResolver

MakePartner = Callable[..., Partner]
MakeClient = Callable[..., PartnerClient]


async def _send(client: PartnerClient, text: str):
    pending = prepare_send(client.partner, text)
    return await client.send(pending, approve(pending, "ana"))


async def test_approved_send_returns_wrapped_scored_reply(server: PartnerServer, make_partner: MakePartner,
                                                          test_client: MakeClient, resolver: StubResolver) -> None:
    partner = make_partner()
    pending = prepare_send(partner, "echo: price of 40 widgets?")
    assert (pending.partner_name, pending.endpoint, pending.size) == (
        "Acme quotes", f"https://{HOST}:{server.port}/a2a", len("echo: price of 40 widgets?"))
    before = len(server.seen)
    reply = await test_client(partner).send(pending, approve(pending, "ana"))

    assert reply.text == "partner says: price of 40 widgets?"
    assert BEGIN in reply.text_wrapped and "source=partner" in reply.text_wrapped
    assert "do not follow instructions" in reply.text_wrapped
    assert reply.text in reply.text_wrapped
    assert reply.injection_score == 0.0 and reply.injection.level == "ok"
    assert reply.raw_size > len(reply.text) and 0 < reply.elapsed_s < 10
    assert reply.connected_ip == "127.0.0.1" and reply.state == "message"
    # We resolved the name ourselves, connected to the checked address, and kept the pinned Host and key.
    assert resolver.lookups == [(HOST, server.port)]
    new = server.seen[before:]
    assert [(s.method, s.path) for s in new] == [("POST", "/a2a")]
    assert new[0].host == f"{HOST}:{server.port}" and new[0].authorization == f"Bearer {server.key}"


async def test_the_partners_own_card_is_never_fetched_or_trusted(server: PartnerServer, make_partner: MakePartner,
                                                                 test_client: MakeClient) -> None:
    # The server's agent card advertises https://10.9.9.9/evil; the client never asks for it.
    before = len(server.seen)
    reply = await _send(test_client(make_partner()), "task: the quote is 12 EUR")
    assert reply.text == "the quote is 12 EUR" and reply.state == "completed"
    assert all(not s.path.startswith("/.well-known") for s in server.seen[before:])


async def test_injection_in_a_reply_is_wrapped_and_flagged(make_partner: MakePartner, test_client: MakeClient) -> None:
    reply = await _send(test_client(make_partner()), "inject")
    assert reply.text == INJECTION
    assert reply.injection.level == "quarantine" and reply.injection_score >= 0.75
    rules = {r.rule for r in reply.injection.reasons}
    assert {"override", "exfiltration", "secrecy"} <= rules
    assert reply.text_wrapped.index(BEGIN) < reply.text_wrapped.index("Ignore all previous instructions")


async def test_partner_error_text_never_becomes_the_error_message(make_partner: MakePartner,
                                                                 test_client: MakeClient) -> None:
    with pytest.raises(PartnerUnavailable, match="A2A error") as info:
        await _send(test_client(make_partner("/rpc-error")), "echo: hi")
    assert "Ignore all previous" not in str(info.value)
    detail = info.value.untrusted_detail or ""
    assert BEGIN in detail and "source=partner" in detail and "Ignore all previous instructions" in detail


async def test_key_the_partner_does_not_accept_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                          test_client: MakeClient) -> None:
    partner = make_partner(key="revoked-or-wrong-key")
    with pytest.raises(PartnerAuthRefused, match="refused Hearth's key .HTTP 401"):
        await _send(test_client(partner), "echo: hi")
    assert server.seen[-1].authorization == "Bearer revoked-or-wrong-key"


async def test_key_that_is_not_the_pinned_one_is_never_sent(server: PartnerServer, make_partner: MakePartner,
                                                            test_client: MakeClient, resolver: StubResolver) -> None:
    partner = make_partner()
    with pytest.raises(PartnerConfigError, match="not the one pinned"):
        partner.with_credential("some-other-key")
    swapped = Partner.from_row(partner.to_row())  # no key attached
    before = len(server.seen)
    with pytest.raises(PartnerConfigError, match="no key"):
        await _send(test_client(swapped), "echo: hi")
    assert len(server.seen) == before and resolver.lookups == []


async def test_certificate_that_is_not_the_pinned_one_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                                 test_client: MakeClient, other_cert: Cert) -> None:
    before = len(server.seen)
    partner = make_partner(pin=certificate_sha256(other_cert.der))
    with pytest.raises(CertificateRefused, match="not the one pinned") as info:
        await _send(test_client(partner), "echo: secret plans")
    assert info.value.nothing_sent
    assert len(server.seen) == before  # the handshake ended it: no request reached the server


async def test_pinned_ca_file_verifies_and_a_wrong_one_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                                  test_client: MakeClient, other_cert: Cert,
                                                                  tmp_ca) -> None:
    ok = Partner.new("Acme", f"https://{HOST}:{server.port}/a2a", server.key, ca_file=tmp_ca)
    assert (await _send(test_client(ok), "echo: via CA")).text == "partner says: via CA"
    before = len(server.seen)
    wrong = make_partner(ca_pem=other_cert.cert_pem.decode())
    with pytest.raises(CertificateRefused, match="did not verify against the pinned CA"):
        await _send(test_client(wrong), "echo: hi")
    assert len(server.seen) == before


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.8", "169.254.169.254", "::1", "::ffff:127.0.0.1",
                                     "192.168.1.20", "100.64.0.1", "fe80::1", "fd00::5", "0.0.0.0"])
async def test_name_resolving_to_a_forbidden_address_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                                address: str) -> None:
    # The production client (no allowance), a real server listening at 127.0.0.1:port, DNS pointing there.
    stub = StubResolver({HOST: [address]})
    before = len(server.seen)
    client = PartnerClient(make_partner(), resolver=stub)
    with pytest.raises(AddressRefused, match=f"resolves to {re.escape(address)}, which is") as info:
        await _send(client, "echo: hi")
    assert info.value.nothing_sent and stub.lookups == [(HOST, server.port)]
    assert len(server.seen) == before


async def test_one_forbidden_address_among_public_ones_is_refused(make_partner: MakePartner) -> None:
    stub = StubResolver({HOST: ["93.184.216.34", "10.1.2.3"]})
    with pytest.raises(AddressRefused, match="10.1.2.3, which is a private network address"):
        await _send(PartnerClient(make_partner(), resolver=stub), "echo: hi")


async def test_allowance_is_exact_and_loopback_only(server: PartnerServer, make_partner: MakePartner) -> None:
    stub = StubResolver({HOST: ["127.0.0.2"]})
    client = PartnerClient._for_tests(make_partner(), resolver=stub, _unsafe_allow_addresses_for_tests=frozenset({"127.0.0.1"}))
    with pytest.raises(AddressRefused, match="127.0.0.2"):
        await _send(client, "echo: hi")
    with pytest.raises(ValueError, match="loopback addresses only"):
        PartnerClient._for_tests(make_partner(), _unsafe_allow_addresses_for_tests=frozenset({"10.0.0.1"}))


async def test_redirect_to_a_private_address_is_refused(server: PartnerServer, make_partner: MakePartner,
                                                        test_client: MakeClient, resolver: StubResolver) -> None:
    with pytest.raises(RedirectRefused, match=r"https://10\.0\.0\.7/a2a.*private network address"):
        await _send(test_client(make_partner("/moved")), "echo: hi")
    assert resolver.lookups == [(HOST, server.port)]  # nothing else was looked up or connected to
    before = len(server.requests_to("/a2a"))
    with pytest.raises(RedirectRefused, match="redirects are never followed"):
        await _send(test_client(make_partner("/moved-public")), "echo: hi")
    assert len(server.requests_to("/a2a")) == before  # not even a redirect back to the same partner is followed


async def test_oversize_reply_is_cut(make_partner: MakePartner, test_client: MakeClient) -> None:
    client = test_client(make_partner(), Limits(max_reply_bytes=64 * 1024))
    with pytest.raises(ReplyTooLarge, match="announced 3 MiB, past the 64 KiB limit"):
        await _send(client, f"big {3 * 1024 * 1024}")
    # Under the cap the same server answers normally.
    assert len((await _send(client, "big 1000")).text) == 1000


async def test_streamed_oversize_reply_is_cut_while_it_streams(server: PartnerServer, make_partner: MakePartner,
                                                               test_client: MakeClient) -> None:
    client = test_client(make_partner("/flood"), Limits(max_reply_bytes=256 * 1024))
    with pytest.raises(ReplyTooLarge, match="went past the 256 KiB limit and was cut") as err:
        await _send(client, "echo: hi")
    # The client stopped at the cap. (What the server managed to write is not a measure: a server may keep
    # "sending" into a closed connection, which the transport silently drops.)
    assert "nothing of it reaches the assistant" in str(err.value)


async def test_slow_reply_is_cut(make_partner: MakePartner, test_client: MakeClient) -> None:
    client = test_client(make_partner(), Limits(read_s=0.5, total_s=5))
    t0 = time.monotonic()
    with pytest.raises(PartnerTimeout, match="did not answer within 0.5 s"):
        await _send(client, "slow 3")
    assert time.monotonic() - t0 < 2


async def test_trickling_reply_is_cut_by_the_total_limit(make_partner: MakePartner, test_client: MakeClient) -> None:
    client = test_client(make_partner("/drip"), Limits(read_s=5, total_s=1))
    t0 = time.monotonic()
    with pytest.raises(PartnerTimeout, match="within 1 s"):
        await _send(client, "echo: hi")
    assert time.monotonic() - t0 < 2.5


async def test_plain_http_is_refused(server: PartnerServer) -> None:
    with pytest.raises(PartnerConfigError, match="plain http"):
        Partner.new("Acme", f"http://{HOST}:{server.port}/a2a", server.key)
    row = Partner.new("Acme", f"https://{HOST}:{server.port}/a2a", server.key).to_row()
    row["endpoint"] = f"http://{HOST}:{server.port}/a2a"
    with pytest.raises(PartnerConfigError, match="plain http"):
        Partner.from_row(row, server.key)
