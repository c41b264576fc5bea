"""Partner records: what is pinned at add time, the `partners` table on SQLite and PostgreSQL, the address
policy's ranges, the transport's pinned origin, and that nothing configurable turns the test allowance on."""

from __future__ import annotations

import inspect
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from runtime_host.partners import (
    COLUMNS,
    MIGRATION,
    AddressRefused,
    Partner,
    PartnerClient,
    PartnerConfigError,
    certificate_sha256,
    forbidden_reason,
    key_sha256,
    vault_key,
)
from runtime_host.partners.net import AddressPolicy, PinnedTransport, normalise_fingerprint
from tests.helpers.postgres import postgres_bindir, running_postgres

FORBIDDEN = ["127.0.0.1", "127.255.255.254", "::1", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255",
             "192.168.0.1", "169.254.169.254", "169.254.0.1", "fc00::1", "fd12:3456::1", "fe80::1", "100.64.0.1",
             "100.127.255.255", "0.0.0.0", "::", "224.0.0.1", "239.255.255.250", "ff02::1", "255.255.255.255",
             "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:192.168.1.1",
             "::ffff:100.64.0.1", "::ffff:0.0.0.0", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1", "::7f00:1",
             "fd00:ec2::254", "192.0.2.10", "198.18.0.1"]
ALLOWED = ["93.184.216.34", "1.1.1.1", "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255",
           "169.255.0.1", "192.169.0.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


@pytest.mark.parametrize("ip", FORBIDDEN)
def test_forbidden_addresses(ip: str) -> None:
    assert forbidden_reason(ip), ip


@pytest.mark.parametrize("ip", ALLOWED)
def test_public_addresses(ip: str) -> None:
    assert forbidden_reason(ip) is None


def test_new_partner_pins_endpoint_key_and_certificate(tmp_path: Path) -> None:
    p = Partner.new(" Acme ", "HTTPS://Agents.Acme.example:443/a2a", "tok-123",
                    tls_fingerprint="AB:" * 31 + "AB", added_by="operator", now=1234.5)
    assert p.endpoint == "https://agents.acme.example/a2a" and p.name == "Acme"
    assert p.key_sha256 == key_sha256("tok-123") and p.tls_fingerprint == "sha256:" + "ab" * 32
    assert "tok-123" not in repr(p)
    row = p.to_row()
    assert set(row) == set(COLUMNS) and "tok-123" not in repr(row)
    assert row["added_at"] == 1234.5 and row["added_by"] == "operator"
    back = Partner.from_row(row, "tok-123")
    assert back == p and back.credential == "tok-123"
    assert vault_key(p.id) == f"partner/{p.id}"
    assert Partner.new("Bäcker", "https://bäcker.example/a2a", "t").endpoint == "https://xn--bcker-gra.example/a2a"
    assert Partner.new("v6", "https://[2606:4700::1111]:8443/a2a", "t").endpoint == "https://[2606:4700::1111]:8443/a2a"


@pytest.mark.parametrize("endpoint, message", [
    ("http://agents.acme.example/a2a", "plain http"),
    ("ftp://agents.acme.example/", "https://"),
    ("https://user:pw@agents.acme.example/", "key field"),
    ("https:///a2a", "no host"),
    ("https://10.0.0.1/a2a", "private network"),
    ("https://127.0.0.1:8443/a2a", "loopback"),
    ("https://[::1]/a2a", "loopback"),
    ("https://169.254.169.254/latest", "metadata"),
    ("https://a.example/#x", "'#'"),
])
def test_bad_endpoints_are_refused_when_adding(endpoint: str, message: str) -> None:
    with pytest.raises(PartnerConfigError, match=message):
        Partner.new("Acme", endpoint, "tok")


def test_bad_pins_and_missing_key_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PartnerConfigError, match="needs the key"):
        Partner.new("Acme", "https://a.example/", "")
    with pytest.raises(ValueError, match="not a SHA-256"):
        Partner.new("Acme", "https://a.example/", "tok", tls_fingerprint="abc")
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(PartnerConfigError, match="CA file"):
        Partner.new("Acme", "https://a.example/", "tok", ca_file=bad)
    with pytest.raises(PartnerConfigError, match="Could not read"):
        Partner.new("Acme", "https://a.example/", "tok", ca_file=tmp_path / "missing.pem")
    assert normalise_fingerprint("sha256:" + "0" * 64) == certificate_sha256(b"")[:7] + "0" * 64


def test_test_allowance_cannot_be_configured() -> None:
    # Not a parameter of the public constructor ...
    assert "_unsafe_allow_addresses_for_tests" not in inspect.signature(PartnerClient.__init__).parameters
    # ... not read from a partner record ...
    row = Partner.new("Acme", "https://a.example/", "tok").to_row()
    row["_unsafe_allow_addresses_for_tests"] = "127.0.0.1"
    row["allow_addresses"] = "127.0.0.1"
    client = PartnerClient(Partner.from_row(row, "tok"))
    with pytest.raises(AddressRefused):
        client._policy.check("a.example", ["127.0.0.1"])
    # ... and never from the environment or a setting.
    import runtime_host.partners as pkg

    src = "".join(p.read_text() for p in Path(pkg.__file__).parent.glob("*.py"))
    assert "os.environ" not in src and "getenv" not in src and "import os" not in src
    # Even the test constructor takes exact loopback addresses only.
    with pytest.raises(ValueError):
        AddressPolicy(["169.254.169.254"])


async def test_transport_refuses_plain_http_and_other_origins() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        raise AssertionError("must not resolve")

    import ssl

    t = PinnedTransport("https://a.example/a2a", resolver=resolver, policy=AddressPolicy(),
                        ssl_context=ssl.create_default_context(), fingerprint=None, max_reply_bytes=1000,
                        connect_timeout=1)
    async with httpx.AsyncClient(transport=t) as http:
        with pytest.raises(AddressRefused, match="HTTPS only"):
            await http.post("http://a.example/a2a", json={})
        with pytest.raises(AddressRefused, match="pinned to a.example:443"):
            await http.post("https://b.example/a2a", json={})
        with pytest.raises(AddressRefused, match="pinned to a.example:443"):
            await http.post("https://a.example:8443/a2a", json={})
    with pytest.raises(AddressRefused, match="HTTPS only"):
        PinnedTransport("http://a.example/a2a", resolver=resolver, policy=AddressPolicy(),
                        ssl_context=ssl.create_default_context(), fingerprint=None, max_reply_bytes=1000,
                        connect_timeout=1)


def test_layering_no_qt_no_pod_no_orm() -> None:
    code = ("import sys, runtime_host.partners; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'app', 'sqlmodel', 'sqlalchemy') or m in ('runtime_host.pod', 'runtime_host.store', "
            "'a2a.client')]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path.cwd(), timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def _apply(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for stmt in MIGRATION[1]:
            conn.execute(sa.text(stmt))


def _roundtrip(engine: sa.Engine) -> None:
    p = Partner.new("Acme", "https://agents.acme.example/a2a", "tok", ca_pem="", tls_fingerprint="ab" * 32,
                    now=1_750_000_000.123456)
    cols = ", ".join(COLUMNS)
    with engine.begin() as conn:
        conn.execute(sa.text(f"INSERT INTO partners ({cols}) VALUES ({', '.join(':' + c for c in COLUMNS)})"),
                     p.to_row())
        row = conn.execute(sa.text(f"SELECT {cols} FROM partners")).mappings().one()
        with pytest.raises(sa.exc.IntegrityError):
            with conn.begin_nested():
                conn.execute(sa.text(f"INSERT INTO partners ({cols}) VALUES "
                                     f"({', '.join(':' + c for c in COLUMNS)})"), {**p.to_row(), "id": "other"})
    back = Partner.from_row(dict(row), "tok")
    assert back == p and back.added_at == 1_750_000_000.123456


def test_migration_on_sqlite(tmp_path: Path) -> None:
    assert MIGRATION[0] == "0008_partners"
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'pod.db'}")
    _apply(engine)
    _roundtrip(engine)
    engine.dispose()


@pytest.fixture
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL on 127.0.0.1 (tests/helpers/postgres.py)."""
    pytest.importorskip("psycopg", reason="the psycopg driver is not installed (pip install -e '.[test]')")
    if postgres_bindir() is None:
        pytest.skip("PostgreSQL is not installed here (Debian package `postgresql`)")
    with running_postgres() as url:
        yield url


def test_migration_on_postgres(postgres: str) -> None:
    engine = sa.create_engine(postgres)
    t0 = time.monotonic()
    _apply(engine)
    _roundtrip(engine)
    with engine.connect() as conn:
        kind = conn.execute(sa.text("SELECT data_type FROM information_schema.columns WHERE "
                                    "table_name = 'partners' AND column_name = 'added_at'")).scalar_one()
    assert kind == "double precision" and time.monotonic() - t0 < 30
    engine.dispose()
