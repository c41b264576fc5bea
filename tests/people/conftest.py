"""Two people on one Hearth: Me (the first person, no passphrase) and Bob (a passphrase), each with a
provider of the same name ("fake") but their own key, and an agent of the same name ("helper").

`backend` runs a test on SQLite and on PostgreSQL (a throwaway server, one fresh database per test)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_model import FakeModelServer
from tests.helpers.postgres import postgres_bindir, running_postgres

ME_KEY = "sk-me-0a1b2c3d4e5f"
BOB_KEY = "sk-bob-9z8y7x6w5v"
BOB_PASS = "bob-passphrase-1"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    if postgres_bindir() is None:
        pytest.skip("PostgreSQL is not installed (make test installs it)")
    with running_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "sqlite":
        monkeypatch.delenv("HEARTH_DATABASE_URL", raising=False)
        return "sqlite"
    from sqlalchemy import create_engine, text

    url = request.getfixturevalue("pg_server")
    name = "people_" + uuid.uuid4().hex[:12]
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    monkeypatch.setenv("HEARTH_DATABASE_URL", url.rsplit("/", 1)[0] + "/" + name)
    return "postgres"


def set_up_two(pod: Any, base_url: str) -> tuple[Any, Any]:
    """Me and Bob, each with their own "fake" provider (own key) and their own "helper"."""
    me = pod.first_person()
    pod.add_person("Bob", BOB_PASS)
    bob = pod.unlock("Bob", BOB_PASS)
    for who, key in ((me, ME_KEY), (bob, BOB_KEY)):
        who.add_provider("fake", kind="openai-compatible", base_url=base_url, model="fake-1", key=key)
        who.add_agent("helper", provider="fake", system=f"You help {who.person.name}.", toolkits=["tasks", "clock"])
    return me, bob


@pytest.fixture
async def two(home: Path, backend: str, fake_model: FakeModelServer, secure_keyring: str) -> AsyncIterator[tuple[Any, Any]]:
    from runtime_host.pod import Pod

    pod = Pod(home)
    try:
        yield set_up_two(pod, fake_model.base_url)
    finally:
        await asyncio.wait_for(pod.close(), 20)


def keys_sent(fake_model: FakeModelServer, text: str) -> set[str]:
    """The bearer keys of the model requests whose last user message contains `text`."""
    return {r.headers.get("authorization", "") for r in fake_model.requests if text in r.last_user}


def denials(who: Any) -> list[dict[str, Any]]:
    return [a for a in who.audit_log(kind="access") if a["action"] == "denied"]


# The window's fixtures (a qasync loop shared with Qt, a Pod on it) come from the UI suite.
from tests.ui.conftest import _session_qloop, qloop, ui_pod  # noqa: E402, F401
