"""A real `serve` process: a new token revokes the old one at once, wrong tokens are limited per client
and checked off the event loop, so /v1/health keeps answering while a flood of bad tokens arrives."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runtime_host.serve import MAX_FAILURES
from tests.helpers.serve import running_serve
from tests.integration.test_cli import cli, setup_agent


@pytest.fixture
def served(home: Path, fake_model) -> Iterator[str]:
    setup_agent(home, fake_model.base_url)
    cli(home, "serve", "--new-token")  # a token must exist before the host starts
    with running_serve(home) as base:
        yield base


def _agents(base: str, token: str) -> int:
    return httpx.get(f"{base}/v1/agents", headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code


def test_a_new_token_revokes_the_old_one_in_a_running_host(home: Path, served: str) -> None:
    old = cli(home, "serve", "--new-token").stdout.strip()
    assert _agents(served, old) == 200
    assert _agents(served, old) == 200  # accepted twice: the second answer may come from memory
    new = cli(home, "serve", "--new-token").stdout.strip()
    assert _agents(served, old) == 401, "the old token still opens the running host after --new-token"
    assert _agents(served, new) == 200


def test_bad_token_flood_is_limited_and_health_keeps_answering(home: Path, served: str) -> None:
    good = cli(home, "serve", "--new-token").stdout.strip()
    assert _agents(served, good) == 200

    async def scenario() -> tuple[list[int], list[int]]:
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(timeout=120, limits=limits) as flood_c, httpx.AsyncClient(timeout=5) as health_c:
            async def bad(i: int) -> int:
                r = await flood_c.get(f"{served}/v1/agents", headers={"Authorization": f"Bearer wrong-{i}"})
                return r.status_code

            flood = asyncio.gather(*(bad(i) for i in range(1000)))
            health: list[int] = []
            while not flood.done() or len(health) < 5:
                r = await health_c.get(f"{served}/v1/health")  # raises (fails the test) if it stalls 5 s
                health.append(r.status_code)
                await asyncio.sleep(0.02)
            return list(await flood), health

    statuses, health = asyncio.run(scenario())
    assert set(health) == {200}
    assert statuses.count(401) <= MAX_FAILURES, "every wrong token ran the slow check"
    assert statuses.count(429) >= 1000 - MAX_FAILURES
    r = httpx.get(f"{served}/v1/agents", headers={"Authorization": "Bearer wrong-again"}, timeout=30)
    assert r.status_code == 429 and "try again in" in r.json()["error"] and int(r.headers["retry-after"]) > 0
    # the right token, accepted before the flood, still works from the limited client
    assert _agents(served, good) == 200
