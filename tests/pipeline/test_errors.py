"""Bad input and failing components: a clear error, and nothing lost or half-written."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memkit import EmbeddingError, MemkitError, VectorStoreError
from memkit.embeddings.base import Embedder, Matrix
from memkit.stores.base import Record
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts


class WrongDimension(Embedder):
    dimension = 8
    model_name = "wrong"

    def embed(self, texts: Sequence[str]) -> Matrix:
        return np.ones((len(texts), 5), dtype=np.float32)


class NaNEmbedder(WrongDimension):
    def embed(self, texts: Sequence[str]) -> Matrix:
        return np.full((len(texts), 8), np.nan, dtype=np.float32)


class FailingEmbedder(WrongDimension):
    def embed(self, texts: Sequence[str]) -> Matrix:
        raise EmbeddingError("embedding service unavailable")


@pytest.mark.parametrize("embedder", [WrongDimension(), NaNEmbedder(), FailingEmbedder()])
def test_bad_embeddings_raise_embedding_error_and_store_nothing(
    make_memory: MakeMemory, embedder: Embedder
) -> None:
    m = make_memory(ScriptedLLM([facts("User likes tea")]), store=InMemoryStore(), embedder=embedder)
    with pytest.raises(EmbeddingError):
        m.add("I like tea", user_id="u")
    with pytest.raises(EmbeddingError):
        m.add("I like tea", user_id="u", infer=False)
    assert m.memory.vector_store.count() == 0


class BrokenUpdates(InMemoryStore):
    def update(self, record: Record) -> None:
        raise RuntimeError("disk full")


def test_a_crash_in_the_middle_of_a_write_leaves_nothing_half_done(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User has a dog"),
        facts("User has a cat", "User has a dog named Rex"),
        {"memory": [{"event": "ADD", "text": "User has a cat"},
                    {"event": "UPDATE", "id": "0", "text": "User has a dog named Rex"}]},
    ])
    m = make_memory(llm, store=BrokenUpdates())
    first = m.add("I have a dog", user_id="u").results[0]
    with pytest.raises(VectorStoreError, match="disk full"):
        m.add("I have a cat and my dog is Rex", user_id="u")
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User has a dog"]
    assert [h.event for h in m.history(first.id)] == ["ADD"]


@pytest.mark.parametrize(("call", "kwargs"), [
    ("add", {"messages": 42, "user_id": "u"}),
    ("add", {"messages": [{"role": "wizard", "content": "hi"}], "user_id": "u"}),
    ("add", {"messages": [{"no": "content"}], "user_id": "u"}),
    ("add", {"messages": "hi", "user_id": "u", "metadata": "not a dict"}),
    ("add", {"messages": "hi", "user_id": "u", "metadata": {"user_id": "x"}}),
    ("add", {"messages": "hi", "user_id": "u", "metadata": {"bad.key": 1}}),
    ("add", {"messages": "hi", "user_id": "u", "metadata": {"x": object()}}),
    ("add", {"messages": "hi", "user_id": ""}),
    ("add", {"messages": "hi", "user_id": "u", "timestamp": 1e30}),
    ("add", {"messages": "hi", "user_id": "u", "timestamp": "last tuesday"}),
    ("add", {"messages": "hi", "user_id": "u", "timestamp": [2024]}),
    ("search", {"query": "hi", "user_id": "u", "limit": 0}),
    ("search", {"query": "hi", "user_id": "u", "mode": "telepathy"}),
    ("search", {"query": None, "user_id": "u"}),
    ("get_all", {"user_id": "u", "limit": -1}),
    ("update", {"memory_id": "x", "text": ""}),
])
def test_bad_arguments_raise_memkit_errors(make_memory: MakeMemory, call: str, kwargs: dict[str, object]) -> None:
    m = make_memory(embedder=HashEmbedder())
    m.add("keep me", user_id="u", infer=False)
    with pytest.raises(MemkitError):
        getattr(m, call)(**kwargs)
    assert [i.memory for i in m.get_all(user_id="u").results] == ["keep me"]
