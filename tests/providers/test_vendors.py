"""The vendor table and local-server discovery (probing only loopback fake servers)."""

from __future__ import annotations

import socket

import pytest

from runtime_host.providers import KINDS, ProviderError
from runtime_host.providers.vendors import LOCAL_SERVERS, VENDORS, Vendor, discover_local, vendor
from tests.helpers.fake_model import FakeModelServer, Script

CLOUD = ("openai", "anthropic", "google", "xai", "deepseek", "moonshot", "openrouter", "groq", "qwen")


def test_every_vendor_has_a_wire_format_an_address_and_a_model() -> None:
    for name in CLOUD:
        v = VENDORS[name]
        assert v.kind in KINDS and v.base_url.startswith("https://") and v.default_model and v.key_page.startswith("https://")
        assert v.needs_key and not v.local
    assert {VENDORS[n].kind for n in CLOUD} == {"openai", "anthropic", "gemini"}  # nine vendors, three formats
    assert [v.name for v in LOCAL_SERVERS] == ["ollama", "lmstudio", "llamacpp"]
    assert [v.base_url for v in LOCAL_SERVERS] == [
        "http://127.0.0.1:11434/v1", "http://127.0.0.1:1234/v1", "http://127.0.0.1:8080/v1"]
    assert VENDORS["embedded"].supports_tools is False and VENDORS["anthropic"].supports_tools is True


def test_routes_take_the_key_from_the_caller_never_the_table() -> None:
    r = vendor("deepseek").route(key="sk-from-vault")
    assert (r.provider, r.kind, r.base_url, r.model, r.key) == (
        "deepseek", "openai", "https://api.deepseek.com/v1", "deepseek-chat", "sk-from-vault")
    assert vendor("groq").route().key is None
    assert "https://console.groq.com/keys" in vendor("groq").missing_key_message()
    with pytest.raises(KeyError, match="Known:"):
        vendor("nope")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_discover_local_returns_the_servers_that_answer() -> None:
    with FakeModelServer(Script([]), wire="openai", models=["llama3.2:1b", "qwen2.5:0.5b"]) as up:
        answering = Vendor("ollama", "Ollama", "openai", f"http://127.0.0.1:{up.port}/v1", "", needs_key=False, local=True)
        silent = Vendor("lmstudio", "LM Studio", "openai", f"http://127.0.0.1:{_free_port()}/v1", "", needs_key=False, local=True)
        found = discover_local(timeout=0.3, servers=(answering, silent))
        expected = [("ollama", up.base_url, ["llama3.2:1b", "qwen2.5:0.5b"])]
    assert [(s.vendor, s.base_url, s.models) for s in found] == expected
    route = found[0].route()
    assert route.kind == "openai" and route.model == "llama3.2:1b" and route.key is None


def test_discover_local_skips_a_port_held_by_something_else() -> None:
    with FakeModelServer(Script([]), wire="gemini") as other:  # answers /models, but not in the OpenAI shape
        v = Vendor("llamacpp", "llama.cpp", "openai", f"http://127.0.0.1:{other.port}/v1", "", needs_key=False, local=True)
        assert discover_local(servers=(v,)) == []


def test_discover_local_default_ports_answer_quickly() -> None:
    import time

    t0 = time.perf_counter()
    found = discover_local()  # the real ports on this machine: usually nothing listens
    assert time.perf_counter() - t0 < 2.0
    assert all(s.base_url.startswith("http://127.0.0.1:") for s in found)


def test_discover_local_respects_the_loopback_switch() -> None:
    with pytest.raises(ProviderError) as exc:
        discover_local(hosts=("192.0.2.10",), timeout=0.05)
    assert exc.value.kind == "forbidden"
