"""Fixtures for trigger tests: a pod database with the schedules and mail migrations, real mail servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from tests.helpers.mailservers import Dovecot, SmtpSink


def open_store(path: Path) -> Any:
    """The real Store on a SQLite file, with migrations 0004/0005 applied the way the Pod will apply them."""
    from runtime_host import store
    from runtime_host.mail.ledger import MAIL_MIGRATION
    from runtime_host.schedule import SCHEDULES_MIGRATION

    migrations = list(store.MIGRATIONS)
    for mig in (SCHEDULES_MIGRATION, MAIL_MIGRATION):
        if mig[0] not in [n for n, _ in migrations]:
            migrations.append(mig)
    mp = pytest.MonkeyPatch()
    mp.setattr(store, "MIGRATIONS", migrations)
    try:
        st = store.Store(path)
    finally:
        mp.undo()
    assert {SCHEDULES_MIGRATION[0], MAIL_MIGRATION[0]} <= set(st.applied_migrations())
    return st


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    st = open_store(tmp_path / "pod.db")
    try:
        yield st.engine
    finally:
        st.close()


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    srv = Dovecot({"alice": "secret", "bob": "hunter22"}).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def smtp_sink() -> Iterator[SmtpSink]:
    sink = SmtpSink().start()
    try:
        yield sink
    finally:
        sink.stop()
