"""Fixtures for the memory engine tests: a fresh Memory in a temp folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wiki_engine import Memory, open_memory


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = open_memory(tmp_path / "memory")
    try:
        yield m
    finally:
        m.close()
