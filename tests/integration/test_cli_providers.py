"""`provider` on the command line: vendors by name, a check before saving, remove."""

from __future__ import annotations

import json
import socket
import time

from tests.helpers.fake_model import FakeModelServer
from tests.integration.test_cli import cli

KEY = "sk-check-0042"


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_vendor_by_name_fills_its_address_and_model(home, secure_keyring) -> None:
    r = cli(home, "provider", "vendors", "--json")
    assert r.returncode == 0, r.stderr
    names = {v["name"] for v in json.loads(r.stdout)}
    assert {"openai", "anthropic", "google", "xai", "deepseek", "moonshot", "openrouter", "groq", "qwen"} <= names
    r = cli(home, "provider", "add", "openai", "--no-check", "--key-from-stdin", stdin=KEY + "\n")
    assert r.returncode == 0, r.stderr
    rows = json.loads(cli(home, "provider", "list", "--json").stdout)
    openai = next(p for p in rows if p["name"] == "openai")
    assert openai["base_url"] == "https://api.openai.com/v1" and openai["kind"] == "openai"
    assert openai["model"] == "gpt-5-mini" and openai["has_key"]


def test_a_dead_address_is_reported_at_once_and_nothing_is_saved(home) -> None:
    started = time.monotonic()
    r = cli(home, "provider", "add", "local", "--base-url", f"http://127.0.0.1:{_dead_port()}/v1", "--model", "m")
    assert r.returncode == 1
    assert "Nothing answers" in r.stderr and "--no-check" in r.stderr
    assert time.monotonic() - started < 8
    assert "local" not in cli(home, "provider", "list").stdout


def test_check_lists_models_refuses_a_wrong_key_and_remove_waits_for_agents(home, secure_keyring) -> None:
    server = FakeModelServer(key=KEY, models=["alpha-1", "beta-2"]).start()
    try:
        r = cli(home, "provider", "add", "mine", "--base-url", server.base_url, "--key-from-stdin", stdin="wrong\n")
        assert r.returncode == 1 and "refused the key" in r.stderr
        r = cli(home, "provider", "add", "mine", "--base-url", server.base_url, "--model", "alpha-1",
                "--key-from-stdin", stdin=KEY + "\n")
        assert r.returncode == 0, r.stderr
        assert "alpha-1, beta-2" in r.stdout and "key was accepted" in r.stdout
        r = cli(home, "provider", "check", "mine", "--json")
        assert json.loads(r.stdout) == {"name": "mine", "models": ["alpha-1", "beta-2"], "key_tested": True}
        assert cli(home, "agent", "add", "helper", "--provider", "mine").returncode == 0
        r = cli(home, "provider", "remove", "mine")
        assert r.returncode != 0 and "helper" in r.stderr
        assert cli(home, "agent", "edit", "helper", "--provider", "embedded").returncode == 0
        r = cli(home, "provider", "remove", "mine")
        assert r.returncode == 0, r.stderr
        assert "mine" not in cli(home, "provider", "list").stdout
    finally:
        server.stop()


def test_agent_delete_needs_yes(home) -> None:
    assert cli(home, "agent", "add", "spare", "--provider", "embedded").returncode == 0
    r = cli(home, "agent", "delete", "spare")
    assert r.returncode == 2 and "--yes" in r.stderr
    assert "spare" in cli(home, "agent", "list").stdout
    r = cli(home, "agent", "delete", "spare", "--yes")
    assert r.returncode == 0, r.stderr
    assert "spare" not in cli(home, "agent", "list").stdout
