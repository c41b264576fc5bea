"""What a provider's embeddings are sent of a long text, and how a text it refuses is told from a provider that
refuses everything. The provider is the fake model server, refusing an over-long input as real ones do (HTTP 400)."""

from __future__ import annotations

import pytest

from runtime_host.providers import ProviderError, Route
from runtime_host.providers.embeddings import ProviderEmbedder
from tests.helpers.fake_model import Error, FakeModelServer
from wiki_engine.embed import MAX_EMBED_CHARS, embed_each

KEY = "sk-embed-0a1b2c3d4e5f6g7h"


def provider(fake: FakeModelServer) -> ProviderEmbedder:
    return ProviderEmbedder.for_route(Route("fake", "openai-compatible", fake.base_url, "fake-embed", KEY))


def test_a_provider_is_sent_no_more_of_a_text_than_a_local_model_reads(fake_model: FakeModelServer) -> None:
    """A pasted 380 KB log went whole to the provider, which refused it (its model reads 8,192 tokens)."""
    log = "Log line: disk ok at 03:00. " * 14_000
    fake_model.embed_max_chars = 32_000  # about 8,000 tokens of English, as OpenAI's embedding models take
    vecs = provider(fake_model).embed([log, "Appointment with the dentist."])
    assert vecs.shape == (2, 64)
    assert fake_model.embedded[0] == log[:MAX_EMBED_CHARS] and not fake_model.embed_refused


def test_a_text_refused_alone_is_set_aside_and_the_others_of_its_batch_get_their_vectors(
        fake_model: FakeModelServer) -> None:
    fake_model.embed_max_chars = 4_000  # a text still too long for the model after the cut (Chinese, say)
    texts = [f"Note {n}: the boiler was serviced in June." for n in range(10)]
    texts[6] = "會議紀要，預算討論。" * 1_000
    vecs, why = embed_each(provider(fake_model), texts)
    assert list(why) == [6] and "HTTP 400" in why[6] and "maximum context length" in why[6]
    assert vecs.shape == (9, 64)
    assert sorted(set(fake_model.embedded)) == sorted(set(texts[:6] + texts[7:] + ["size"]))
    # found by halving the request: far fewer requests than one a text
    assert len(fake_model.embed_requests) <= 8, len(fake_model.embed_requests)


@pytest.mark.parametrize("fault", [Error(400, "'fake-embed' is not an embedding model"), "wrong-count"])
def test_a_provider_that_refuses_every_text_fails_as_a_model_and_sets_none_aside(
        fake_model: FakeModelServer, fault: object) -> None:
    """A chat model chosen for embeddings refuses every request: that is the model's failure, said as such (memory
    retries it and says what to do), never every note set aside one by one."""
    fake_model.embed_fault = fault  # type: ignore[assignment]
    emb = provider(fake_model)
    with pytest.raises(ProviderError) as caught:
        embed_each(emb, [f"Note {n}" for n in range(64)])
    assert emb.refuses(caught.value)
    assert len(fake_model.embed_requests) <= 2


def test_a_refused_key_is_not_taken_for_a_refused_text(fake_model: FakeModelServer) -> None:
    fake_model.key = "sk-another-key-9z8y7x6w"
    emb = provider(fake_model)
    with pytest.raises(ProviderError) as caught:
        embed_each(emb, ["Note one", "Note two"])
    assert caught.value.kind == "auth" and not emb.refuses(caught.value)
