"""Shared test setup: offscreen Qt, loopback-only model calls, a temp data folder, the fake model."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HEARTH_LOOPBACK_ONLY"] = "1"  # the global switch: no real model requests, ever

import asyncio  # noqa: E402
from collections.abc import AsyncIterator, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.helpers.fake_model import FakeModelServer, Script, echo  # noqa: E402
from tests.helpers.mailservers import Dovecot, SmtpSink  # noqa: E402
from tests.helpers.postgres import postgres_bindir, running_postgres  # noqa: E402


@pytest.fixture(autouse=True)
def _root_log_handlers_restored() -> Iterator[None]:
    """A test that runs the CLI in this process (`cli.main([...])`) leaves its console handler on the root logger,
    writing to this test's captured stderr, which is closed after it: a later test that logs or flushes the
    handlers failed with "I/O operation on closed file". Each test ends with the root handlers it began with."""
    import logging

    root = logging.getLogger()
    before = list(root.handlers)
    try:
        yield
    finally:
        for h in [h for h in root.handlers if h not in before]:
            root.removeHandler(h)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.skipif(
    postgres_bindir() is None,
    reason="PostgreSQL is not installed (make test installs the `postgresql` package)"))])
def db_url(request, tmp_path) -> Iterator[str]:
    """A store's URL on each backend: a SQLite file, and a real PostgreSQL server on loopback where installed."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pod.db'}"
    else:
        with running_postgres() as url:
            yield url


@pytest.fixture
def in_zone() -> Iterator:
    """in_zone("Pacific/Auckland") sets this process's time zone (TZ, and time.tzset) for the test: the machine's
    zone, whose days memory names. The zone the run had is put back after the test."""
    import time

    def zone(name: str | None) -> None:
        if name is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = name
        time.tzset()

    was = os.environ.get("TZ")
    try:
        yield zone
    finally:
        zone(was)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "hearth"
    h.mkdir()
    monkeypatch.setenv("HEARTH_HOME", str(h))
    return h


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    srv = FakeModelServer(echo).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def script(fake_model: FakeModelServer):
    """Sets the fake model's answers: script([Text(...), ToolCalls(...)])."""

    def set_script(answers: list, repeat_last: bool = False) -> Script:
        s = Script(answers, repeat_last=repeat_last)
        fake_model.script = s
        return s

    return set_script


@pytest.fixture
def secure_keyring() -> str:
    """Fails loudly unless the real Secret Service is there (tests run under scripts/with-keyring)."""
    from vault import Vault, VaultUnavailable

    try:
        return Vault.check()
    except VaultUnavailable as exc:
        pytest.fail(f"{exc} — run tests with `make test` (it starts a D-Bus session with GNOME Keyring).")


@pytest.fixture
async def pod(home: Path, fake_model: FakeModelServer) -> AsyncIterator:
    from runtime_host.pod import Pod

    p = Pod(home).first_person()  # the Pod as its first person uses it (a PersonPod)
    p.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    p.add_agent("helper", provider="fake", system="You are a helpful test agent.")
    try:
        yield p
    finally:
        await asyncio.wait_for(p.close(), 20)


@pytest.fixture
def servers() -> Iterator[tuple[Dovecot, SmtpSink]]:
    """Alice's mail servers on loopback: a real Dovecot (IMAP, password "secret"; Bob has a mailbox there too,
    password "bobsecret") and an SMTP sink."""
    d = Dovecot({"alice": "secret", "bob": "bobsecret"}).start()
    s = SmtpSink().start()
    try:
        yield d, s
    finally:
        s.stop()
        d.stop()
