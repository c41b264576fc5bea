"""Fixtures for the partner tests: one real TLS A2A server on 127.0.0.1 per module, its certificates, a
resolver stub (no real DNS) and clients that reach the server only through the test-only allowance."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from runtime_host.partners import Limits, Partner, PartnerClient, certificate_sha256
from tests.partners.a2a_server import Cert, PartnerServer, self_signed

HOST = "partner.test"
LOOPBACK = frozenset({"127.0.0.1"})


class StubResolver:
    """Answers from a fixed table and records every lookup; unknown names fail like NXDOMAIN."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.lookups: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append((host, port))
        if host not in self.table:
            raise OSError(f"no such name: {host}")
        return list(self.table[host])


@pytest.fixture(scope="module")
def server_cert() -> Cert:
    return self_signed([HOST], ["127.0.0.1"])


@pytest.fixture(scope="module")
def other_cert() -> Cert:
    return self_signed([HOST], ["127.0.0.1"])


@pytest.fixture(scope="module")
def server(server_cert: Cert, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PartnerServer]:
    srv = PartnerServer(server_cert, tmp_path_factory.mktemp("partner")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def resolver() -> StubResolver:
    return StubResolver({HOST: ["127.0.0.1"]})


@pytest.fixture
def make_partner(server: PartnerServer, server_cert: Cert) -> Callable[..., Partner]:
    def make(path: str = "/a2a", *, key: str | None = None, pin: str | None = None, ca_pem: str | None = None,
             name: str = "Acme quotes") -> Partner:
        if pin is None and ca_pem is None:
            pin = certificate_sha256(server_cert.der)
        return Partner.new(name, f"https://{HOST}:{server.port}{path}", key or server.key,
                           tls_fingerprint=pin or "", ca_pem=ca_pem or "", added_by="operator")
    return make


@pytest.fixture
def test_client(resolver: StubResolver) -> Callable[..., PartnerClient]:
    """A client that may reach 127.0.0.1, for this test's own server only."""

    def make(partner: Partner, limits: Limits | None = None) -> PartnerClient:
        return PartnerClient._for_tests(partner, resolver=resolver, limits=limits,
                                        _unsafe_allow_addresses_for_tests=LOOPBACK)
    return make


@pytest.fixture
def tmp_ca(tmp_path: Path, server_cert: Cert) -> Path:
    p = tmp_path / "partner-ca.pem"
    p.write_bytes(server_cert.cert_pem)
    return p
