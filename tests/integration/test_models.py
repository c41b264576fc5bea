"""Models by role, fallback chains, a model per message, and the embedded offline model."""

from __future__ import annotations

import asyncio
import json

import pytest

from runtime_host import cli as hearth_cli
from runtime_host.pod import Pod, StoreError
from tests.helpers.fake_model import Error, FakeModelServer, Text
from tests.integration.test_cli import cli


@pytest.fixture
def second_model():
    srv = FakeModelServer(lambda req: Text(f"second server, model {req.body.get('model')}")).start()
    try:
        yield srv
    finally:
        srv.stop()


async def test_a_rate_limited_primary_falls_back_and_the_turn_records_who_answered(pod, script, second_model, fake_model) -> None:
    pod.add_provider("backup", kind="openai-compatible", base_url=second_model.base_url, model="backup-7b")
    pod.edit_agent("helper", fallbacks=["backup"])
    script([Error(429, "slow down", headers={"Retry-After": "30"})], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", "hi"), 30)
    assert r.ok, r.error
    assert r.text == "second server, model backup-7b" and r.model == "backup-7b"
    assert len(fake_model.requests) == 1  # the 429 was not retried on the same model
    steps = pod.turns(r.conversation_id)[0]["steps"]
    assert [(s["name"], s["status"]) for s in steps] == [("fake-1", "failed"), ("backup-7b", "finished")]
    assert steps[0]["result"]["error_kind"] == "rate_limit"


async def test_a_500_is_not_hidden_by_the_fallback_when_it_is_the_last(pod, script) -> None:
    script([Error(500, "down")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", "hi"), 30)
    assert r.status == "failed" and "HTTP 500" in r.error


async def test_one_message_can_use_another_model_and_keeps_the_tools(pod, script, second_model, fake_model) -> None:
    pod.add_provider("other", kind="openai-compatible", base_url=second_model.base_url, model="other-1", key="sk-other-99")
    r = await asyncio.wait_for(pod.chat("helper", "hi", model="other/special-9"), 30)
    assert r.ok and r.text == "second server, model special-9"
    req = second_model.requests[0]
    assert req.headers["authorization"] == "Bearer sk-other-99"
    assert any(t["function"]["name"] == "calculate" for t in req.body["tools"])
    assert not fake_model.requests
    r2 = await asyncio.wait_for(pod.chat("helper", "and now?"), 30)  # the next message is back on the agent's model
    assert r2.ok and len(fake_model.requests) == 1


async def test_unknown_model_choice_is_refused_clearly(pod) -> None:
    with pytest.raises(StoreError, match="No provider named 'nope'"):
        await pod.chat("helper", "hi", model="nope/x")


async def test_a_hosted_vendor_without_a_key_names_where_to_add_it(pod) -> None:
    pod.add_provider("anthropic", kind="anthropic", base_url="https://api.anthropic.com/v1", model="claude-x")
    pod.edit_agent("helper", provider="anthropic")
    r = await asyncio.wait_for(pod.chat("helper", "hi"), 30)
    assert r.status == "failed"
    assert "No key for Anthropic" in r.error and "Settings → Providers" in r.error


def test_models_json_lists_roles_and_what_each_provider_can_do(home, fake_model) -> None:
    assert cli(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "fake-1").returncode == 0
    info = json.loads(cli(home, "models", "--json").stdout)
    by_name = {p["name"]: p for p in info["providers"]}
    assert by_name["fake"]["supports_tools"] is True and by_name["embedded"]["supports_tools"] is False
    assert info["roles"]["extraction"] == {"provider": "embedded", "model": None, "source": "default"}
    assert info["roles"]["ingest"] == {"inherits": "extraction", "source": "default"}
    r = cli(home, "models", "set", "ingest", "fake/cheap-1")
    assert r.returncode == 0, r.stderr
    info = json.loads(cli(home, "models", "--json").stdout)
    assert info["roles"]["ingest"] == {"provider": "fake", "model": "cheap-1", "source": "set"}
    bad = cli(home, "models", "set", "dreaming", "fake")
    assert bad.returncode == 2 and "Unknown role 'dreaming'" in bad.stderr
    # "local/..." names the local embedders only: for another role it is no provider (it was taken, and memory
    # then wrote no pages for want of an ingest model)
    for role, ref in (("ingest", "local/minilm"), ("extraction", "local"), ("ask_memory", "local/static")):
        bad = cli(home, "models", "set", role, ref)
        assert bad.returncode == 2 and "No provider named 'local'" in bad.stderr, (role, bad.stdout, bad.stderr)
    info = json.loads(cli(home, "models", "--json").stdout)
    assert info["roles"]["ingest"]["model"] == "cheap-1" and info["roles"]["extraction"]["source"] == "default"


@pytest.mark.parametrize("role", ["ingest", "ask_memory"])
def test_models_set_refuses_the_tiny_builtin_model_for_writing_pages_and_asking_memory(home, role) -> None:
    """A new user in a terminal chose the built-in tiny model (the only one they had) for writing wiki pages or Ask
    memory: the CLI said "now uses embedded", yet ingest then said no ingest model is chosen and Ask memory that it
    needs a capable model."""
    r = cli(home, "models", "set", role, "embedded")
    assert r.returncode != 0 and "now uses" not in r.stdout, r.stdout + r.stderr
    assert "tiny built-in model cannot" in r.stderr and f"models set {role} PROVIDER/MODEL" in r.stderr, r.stderr
    roles = json.loads(cli(home, "models", "--json").stdout)["roles"]
    assert roles[role].get("provider") != "embedded", roles[role]


@pytest.mark.slow
def test_the_embedded_model_answers_offline_through_the_cli(home) -> None:
    r = cli(home, "agent", "add", "tiny", "--system", "You are a friendly assistant.")
    assert r.returncode == 0 and "embedded" in r.stdout, r.stdout + r.stderr
    r = cli(home, "chat", "tiny", "What is the capital of France? Answer in one sentence.", timeout=180)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) >= 3
    turns = json.loads(cli(home, "turns", "--json").stdout)
    assert turns[0]["status"] == "done" and turns[0]["model"] == "smollm2-135m-instruct"


async def test_the_embedded_model_gets_no_tools_offered(home) -> None:
    pod = Pod(home).first_person()
    try:
        info = pod.add_agent("tiny")
        assert info["provider"] == "embedded"
        binding = pod._binding(*pod.find_agent("tiny"))
        assert binding["routes"][0]["kind"] == "embedded" and binding["routes"][0]["key"] is None
    finally:
        await pod.close()


def seed_plumber_notes(home, n_notes: int = 40) -> None:
    """``n_notes`` notes in the first person's memory, embedded by the default (static) model."""
    async def seed() -> None:
        pod = Pod(home).first_person()
        try:
            assert pod.embedding_model() == "static"
            assert pod.memory.embedder.name == "static-wordllama-l2supercat-256"
            for n in range(n_notes):
                pod.memory.add_source(f"Note {n}: the plumber comes on day {n}.", scope=f"private/{pod.person.id}")
        finally:
            await pod.close()

    asyncio.run(seed())


def test_choosing_the_embedding_model_reembeds_memory_with_progress_on_the_cli(home) -> None:
    seed_plumber_notes(home)
    r = cli(home, "models", "set", "embedding", "local/minilm")
    assert r.returncode == 0, r.stderr
    assert "Re-embedding memory with minilm-l6-v2-int8:" in r.stdout and "40/40" in r.stdout, r.stdout
    assert "now uses minilm-l6-v2-int8 (40 items re-embedded)" in r.stdout
    info = json.loads(cli(home, "models", "--json").stdout)
    assert info["roles"]["embedding"] == {"provider": "local", "model": "minilm", "source": "set"}
    bad = cli(home, "models", "set", "embedding", "local/word2vec")
    assert bad.returncode == 2 and "local/static" in bad.stderr and "local/minilm" in bad.stderr

    async def check() -> None:
        pod = Pod(home).first_person()
        try:
            assert pod.embedding_model() == "minilm"
            hits = await pod.memory_search("when is the plumber coming", k=3)
            assert hits and pod.memory.index(f"private/{pod.person.id}").vecs.shape[1] == 384
            assert pod.embedding_status()["running"] is False  # nothing left to re-embed
        finally:
            await pod.close()

    asyncio.run(check())


def test_choosing_a_providers_embeddings_on_the_cli_reembeds_with_progress(home, fake_model, secure_keyring) -> None:
    from tests.integration.test_cli import KEY, setup_agent

    setup_agent(home, fake_model.base_url)
    seed_plumber_notes(home)
    r = cli(home, "models", "set", "embedding", "fake/fake-embed")
    assert r.returncode == 0, r.stderr
    assert "Re-embedding memory with provider:fake/fake-embed:" in r.stdout and "40/40" in r.stdout, r.stdout
    assert "now uses provider:fake/fake-embed (40 items re-embedded)" in r.stdout
    assert len(fake_model.embedded) == 40 and KEY not in r.stdout + r.stderr
    assert {q.headers["authorization"] for q in fake_model.embed_requests} == {f"Bearer {KEY}"}
    info = json.loads(cli(home, "models", "--json").stdout)
    assert info["roles"]["embedding"] == {"provider": "fake", "model": "fake-embed", "source": "set"}

    # A provider down: the choice is kept, the CLI says what happened and that Hearth tries again, and
    # fails (a script must not take memory as re-embedded).
    fake_model.embed_fault = Error(500, "down")
    r = cli(home, "models", "set", "embedding", "fake/fake-embed-2")
    assert r.returncode == 1 and "HTTP 500" in r.stderr and "tries again" in r.stderr, r.stderr
    assert r.stderr.count("Trying again in") == hearth_cli.REEMBED_TRIES - 1, r.stderr  # waited through a few

    # A provider without an embeddings API is refused with what to choose instead.
    r = cli(home, "provider", "add", "claude", "--kind", "anthropic", "--base-url", fake_model.base_url, "--no-check")
    assert r.returncode == 0, r.stderr
    bad = cli(home, "models", "set", "embedding", "claude/claude-x")
    assert bad.returncode == 2 and "no embeddings API" in bad.stderr and "local/static" in bad.stderr, bad.stderr


def test_a_provider_asking_once_to_slow_down_does_not_end_the_re_embed_on_the_cli(home, fake_model,
                                                                                    secure_keyring) -> None:
    """`models set embedding` on a few hundred notes, the provider asking once, part-way, to slow down (HTTP 429, as
    OpenAI does on a big re-embed): the command exited 1 at once, saying "Hearth tries again in 0.5 s" as its
    process ended, and the re-embed stopped there. Now it waits through the retry, says so, and finishes."""
    from tests.integration.test_cli import setup_agent

    setup_agent(home, fake_model.base_url)
    seed_plumber_notes(home, 300)
    fake_model.embed_faults = [None, None, Error(429, "Rate limit reached", retry_after_s=1)]
    r = cli(home, "models", "set", "embedding", "fake/fake-embed", timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout[-600:], r.stderr[-600:], f"{len(fake_model.embedded)} sent")
    assert "now uses provider:fake/fake-embed (300 items re-embedded)" in r.stdout, r.stdout[-600:]
    assert len(set(fake_model.embedded)) == 300
    said = [line for line in r.stderr.splitlines() if "Rate limit reached" in line]
    assert len(said) == 1 and "Trying again in" in said[0] and "Settings" not in said[0], r.stderr

    # A key the provider refuses is not waited through: trying again cannot clear it.
    fake_model.embed_fault = Error(401, "Incorrect API key provided")
    r = cli(home, "models", "set", "embedding", "fake/fake-embed-2")
    assert r.returncode == 1 and "HTTP 401" in r.stderr and "Trying again" not in r.stderr, r.stderr


def test_a_damaged_minilm_file_leaves_memory_answering_with_one_warning(home, capsys, monkeypatch) -> None:
    """The MiniLM file chosen for search fails its pinned checksum: memory commands still answer (by keywords), and
    one line says what is wrong and what to do; never a traceback."""
    from wiki_engine import embed

    async def seed() -> None:
        pod = Pod(home).first_person()
        try:
            pod.memory.add_source("The plumber comes on Tuesday to fix the boiler.", scope=f"private/{pod.person.id}")
            pod.set_role_model("embedding", "local/minilm")
        finally:
            await pod.close()

    asyncio.run(seed())
    monkeypatch.setattr(embed, "MINILM_MODEL", (embed.MINILM_MODEL[0], embed.MINILM_MODEL[1], "0" * 64))
    embed._load.cache_clear()
    try:
        rc = hearth_cli.main(["memory", "search", "plumber"])
    finally:
        embed._load.cache_clear()
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err[-800:]
    assert rc == 0 and "plumber" in out.out, (rc, out.out[-500:], out.err[-800:])
    said = [line for line in out.err.splitlines() if "pinned checksum" in line]
    assert len(said) == 1 and "reinstall" in said[0] and "models set embedding local/static" in said[0], out.err


async def test_each_person_sees_the_re_embedding_of_the_notes_they_read_alone(pod) -> None:
    """The first person chose MiniLM for search by meaning, then the static model again: Bob's Settings → Models
    said "Memory is re-embedded: 44 items" while he reads 4 of them (his 3 notes and the shared one); Alice's
    40 notes were counted in his line."""
    import time

    bob = pod.add_person("Bob")
    as_bob = pod.pod.for_person(pod.store.get_person("Bob"))
    for n in range(40):
        pod.memory.add_source(f"Note {n}: the plumber comes on day {n}.", scope=f"private/{pod.person.id}")
    for n in range(3):
        pod.memory.add_source(f"Bob's note {n}: the boat needs paint.", scope=f"private/{bob['id']}")
    pod.memory.add_source("The bins go out on Tuesday.", scope="public")
    for model, name in (("minilm", "minilm-l6-v2-int8"), ("static", "static-wordllama-l2supercat-256")):
        pod.set_role_model("embedding", f"local/{model}")
        deadline = time.monotonic() + 60
        while not (pod.embedding_status()["model"] == name and not pod.embedding_status()["running"]):
            assert time.monotonic() < deadline, pod.embedding_status()
            await asyncio.sleep(0.05)
        mine, his = pod.embedding_status(), as_bob.embedding_status()
        assert (mine["done"], mine["total"]) == (41, 41), mine
        assert (his["done"], his["total"]) == (4, 4), his


_REEMBED_KILLED_MIDWAY = """
import os, signal, sys
from runtime_host.pod import Pod
from wiki_engine.embed import MiniLMEmbedder
me = Pod(sys.argv[1]).first_person()
me.memory  # open, as in the window, when the person chooses MiniLM in Settings → Models
calls = []
def embed(self, texts, *a, real=MiniLMEmbedder.embed, **k):
    calls.append(len(texts))
    if len(calls) == 2:  # the power goes: a person's first 128 notes re-embedded, no scope switched yet
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, texts, *a, **k)
MiniLMEmbedder.embed = embed
me.set_role_model("embedding", "local/minilm")
me.memory.wait_for_embedding(120)
"""


async def test_a_re_embed_cut_short_by_a_kill_goes_on_at_the_next_start_with_progress_for_each_person(pod, home) -> None:
    """Hearth was killed while memory was re-embedded for MiniLM. At the next start nothing ran, and Settings →
    Models showed no progress, until a search happened to touch each person's memory. Now the re-embed goes on at
    start-up, in the background, and each person sees how far it is in the notes they read."""
    import time

    from tests.integration.test_memory_pod import killed_midway
    from wiki_engine.embed import KINDS
    from wiki_engine.index import ScopeIndex

    bob = pod.add_person("Bob")
    for n in range(300):
        pod.memory.add_source(f"Note {n}: the plumber comes on day {n}.", scope=f"private/{pod.person.id}")
    for n in range(130):  # each more than one batch: the kill comes within whichever is re-embedded first
        pod.memory.add_source(f"Bob's note {n}: the boat needs paint on side {n}.", scope=f"private/{bob['id']}")
    pod.memory.add_source("The bins go out on Tuesday.", scope="public")
    again = await killed_midway(pod, home, _REEMBED_KILLED_MIDWAY)
    scopes = [f"private/{pod.person.id}", f"private/{bob['id']}", "public"]
    stored = [ScopeIndex.stored_embedder(home / "memory" / "index" / sc) for sc in scopes]
    assert stored == [KINDS["static"]] * 3  # killed before any scope was switched
    try:
        assert again.embedding_model() == "minilm"
        as_bob = again.pod.for_person(again.store.get_person("Bob"))
        again.pod.start_background()  # Hearth starts; nobody searches
        deadline = time.monotonic() + 60
        while not ((st := again.embedding_status()) and st["model"] == KINDS["minilm"] and not st["running"]
                   and st["total"]):
            assert time.monotonic() < deadline, f"Settings → Models showed {st}"
            await asyncio.sleep(0.05)
        mine, his = again.embedding_status(), as_bob.embedding_status()
        assert (mine["done"], mine["total"], mine["error"]) == (301, 301, ""), mine
        assert (his["done"], his["total"]) == (131, 131), his
        stored = [ScopeIndex.stored_embedder(home / "memory" / "index" / sc) for sc in scopes]
        assert stored == [KINDS["minilm"]] * 3
    finally:
        await again.close()


def add_the_readmes_local_provider(home, fake_model) -> None:
    """README, Headless: `provider add local --base-url http://127.0.0.1:11434/v1 --model llama3.2` (Ollama), here
    on the fake model's address, with an agent on it."""
    from tests.integration.test_cli import KEY

    r = cli(home, "provider", "add", "local", "--base-url", fake_model.base_url, "--model", "llama3.2",
            "--key-from-stdin", stdin=KEY + "\n")
    assert r.returncode == 0, r.stderr
    assert cli(home, "agent", "add", "helper", "--provider", "local").returncode == 0


def test_ask_memory_on_a_provider_named_local_asks_it(home, fake_model, script, secure_keyring) -> None:
    """A person followed the README's Ollama example (a provider named "local") and chose it for Ask memory:
    `models set ask_memory local/llama3.2` was accepted and `models` listed it "(set)", yet `memory ask` said "Ask
    memory needs a capable model" and never called it (any provider called "local" was taken for the local
    embedding models). Now the answer comes from that provider, with its citation."""
    add_the_readmes_local_provider(home, fake_model)
    r = cli(home, "models", "set", "ask_memory", "local/llama3.2")
    assert r.returncode == 0, r.stderr
    script([Text("Noted.")], repeat_last=True)
    assert cli(home, "chat", "helper", "The boiler code is 7731.").returncode == 0
    assert cli(home, "memory", "produce").returncode == 0
    script([Text("The boiler code is 7731 [1].")], repeat_last=True)
    before = len(fake_model.requests)
    r = cli(home, "memory", "ask", "What is the boiler code?")
    assert r.returncode == 0 and "7731 [1]" in r.stdout, (r.stdout, r.stderr)
    asked = fake_model.requests[before:]
    assert asked and {q.body.get("model") for q in asked} == {"llama3.2"}


def test_keep_or_skip_on_a_provider_named_local_asks_it(home, fake_model, script, secure_keyring) -> None:
    """The same person chose it for keep-or-skip: `models set extraction local/llama3.2` was accepted, yet `memory
    produce` decided by rules and never asked the model (and ingest and mail-export import, which follow
    extraction's model, ran without one). Now the model decides."""
    add_the_readmes_local_provider(home, fake_model)
    assert cli(home, "models", "set", "extraction", "local/llama3.2").returncode == 0
    script([Text("Noted.")], repeat_last=True)
    assert cli(home, "chat", "helper", "My sister Clara's birthday is on 3 June.").returncode == 0
    script([Text('[{"n": 1, "keep": true, "reason": "a birthday"}, {"n": 2, "keep": false, "reason": "a reply"}]')],
           repeat_last=True)
    before = len(fake_model.requests)
    r = cli(home, "memory", "produce")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)[0]
    assert rep["decided_by"] == "local/llama3.2" and rep["kept"] == 1, rep
    assert {q.body.get("model") for q in fake_model.requests[before:]} == {"llama3.2"}
    # the local embedding models keep their names beside that provider, and do not hold it against removal
    assert cli(home, "models", "set", "embedding", "local/minilm").returncode == 0
    info = json.loads(cli(home, "models", "--json").stdout)
    assert info["roles"]["embedding"] == {"provider": "local", "model": "minilm", "source": "set"}
    assert info["roles"]["extraction"] == {"provider": "local", "model": "llama3.2", "source": "set"}
    # and that provider's own embeddings are its, not a local model's (refused as "No local embedding model")
    r = cli(home, "models", "set", "embedding", "local/nomic-embed-text")
    assert r.returncode == 0 and "provider:local/nomic-embed-text" in r.stdout, (r.stdout, r.stderr)
    assert fake_model.embed_requests and {q.body.get("model") for q in fake_model.embed_requests} == {"nomic-embed-text"}


async def test_choosing_minilm_right_after_a_start_re_embeds_at_once_with_progress(pod, home) -> None:
    """Hearth had just started and memory was not open yet (the chat page does not open it): choosing MiniLM in
    Settings → Models said it "now uses local/minilm", and then nothing was re-embedded and no progress showed,
    until something else happened to open memory (the timed producer, every 5 minutes). Now the choice opens memory
    on its own thread and the re-embed begins, its progress shown for the notes the person reads."""
    import time

    from wiki_engine import Item
    from wiki_engine.embed import KINDS
    from wiki_engine.index import ScopeIndex

    me = pod.person.id
    await pod.in_memory_thread(lambda: pod.memory.add_items(
        [Item(text=f"Note {k}: the plumber comes on day {k}.", scope=f"private/{me}", ts=1e6 + k) for k in range(200)]))
    await pod.close()
    again = Pod(home).first_person()  # Hearth starts again; the person opens Settings → Models and picks MiniLM
    try:
        again.pod.start_background()
        await asyncio.sleep(0.5)
        assert not again.memory_host.is_open  # nothing to resume: memory stays closed at start
        loop_free = asyncio.get_running_loop().time()
        again.set_role_model("embedding", "local/minilm")  # what the Models page's combo box calls
        assert asyncio.get_running_loop().time() - loop_free < 0.5  # opening memory never holds the window
        deadline = time.monotonic() + 60
        while not ((st := again.embedding_status()) and st["model"] == KINDS["minilm"] and st["total"]
                   and not st["running"]):
            assert time.monotonic() < deadline, (
                f"after MiniLM was chosen Settings → Models' progress reads {st!r} (memory open: "
                f"{again.memory_host.is_open}); nothing was re-embedded")
            await asyncio.sleep(0.1)
        assert (st["done"], st["total"], st["error"]) == (200, 200, ""), st
        assert ScopeIndex.stored_embedder(home / "memory" / "index" / "private" / me) == KINDS["minilm"]
    finally:
        await again.close()
