"""``on_error="degrade"``: a failing LLM or embedder leaves a partial result with every
failure reported; by default the failure is raised."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memkit import EmbeddingError, LLMError, MemkitError
from memkit.embeddings.base import Matrix
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts, ops


class PoisonedEmbedder(HashEmbedder):
    """Fails every call that holds a text containing "poison"."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        if any("poison" in t for t in texts):
            raise EmbeddingError("the embedding provider is down for this text")
        return super().embed(texts)


def test_llm_down_raises_by_default(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([LLMError("provider down")]))
    with pytest.raises(LLMError):
        m.add("I like tea", user_id="u")


@pytest.mark.parametrize("how", ["argument", "config"])
def test_llm_down_degrades_to_an_empty_result(make_memory: MakeMemory, how: str) -> None:
    llm = ScriptedLLM([LLMError("provider down")])
    if how == "config":
        m = make_memory(llm, config={"on_error": "degrade"})
        result = m.add("I like tea", user_id="u")
    else:
        m = make_memory(llm)
        result = m.add("I like tea", user_id="u", on_error="degrade")
    assert result.results == []
    assert [e.stage for e in result.errors] == ["extraction"]
    assert "provider down" in result.errors[0].message
    assert m.get_all(user_id="u").results == []


def test_the_argument_overrides_the_config(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([LLMError("provider down")]), config={"on_error": "degrade"})
    with pytest.raises(LLMError):
        m.add("I like tea", user_id="u", on_error="raise")


def test_decision_llm_down_degrades_and_changes_nothing(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([facts("User has a dog"), facts("User has two dogs"),
                                 LLMError("provider down")]))
    m.add("I have a dog", user_id="u")
    result = m.add("I have two dogs", user_id="u", on_error="degrade")
    assert result.results == [] and [e.stage for e in result.errors] == ["decision"]
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User has a dog"]


def test_repair_llm_down_degrades(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM(["not json", LLMError("provider down")]))
    result = m.add("I like tea", user_id="u", on_error="degrade")
    assert result.results == [] and [e.stage for e in result.errors] == ["extraction"]


@pytest.mark.parametrize("infer", [True, False])
def test_one_failing_embedding_of_three_leaves_the_other_two_stored(
    make_memory: MakeMemory, infer: bool
) -> None:
    texts = ["User likes tea", "User likes poison ivy", "User likes jazz"]
    m = make_memory(ScriptedLLM([facts(*texts)]), embedder=PoisonedEmbedder())
    result = m.add(texts if not infer else "tea, ivy and jazz", user_id="u", infer=infer,
                   on_error="degrade")
    assert sorted(e.memory for e in result.results) == ["User likes jazz", "User likes tea"]
    assert [(e.stage, e.operation) for e in result.errors] == [
        ("embedding", {"text": "User likes poison ivy"})]
    assert sorted(i.memory for i in m.get_all(user_id="u").results) == [
        "User likes jazz", "User likes tea"]


def test_a_failing_embedding_raises_by_default(make_memory: MakeMemory) -> None:
    m = make_memory(embedder=PoisonedEmbedder())
    with pytest.raises(EmbeddingError):
        m.add(["User likes tea", "poison"], user_id="u", infer=False)
    assert m.get_all(user_id="u").results == []


def test_an_update_whose_text_cannot_be_embedded_is_reported(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([facts("User has a dog"), facts("User has a dog named Rex"),
                                 ops({"event": "UPDATE", "id": "0",
                                      "text": "User has a poisoned dog",
                                      "old_memory": "User has a dog"})]),
                    embedder=PoisonedEmbedder())
    m.add("I have a dog", user_id="u")
    result = m.add("My dog is Rex", user_id="u", on_error="degrade")
    assert result.results == [] and [e.stage for e in result.errors] == ["embedding"]
    item = m.get_all(user_id="u").results[0]
    assert item.memory == "User has a dog"
    assert [h.event for h in m.history(item.id)] == ["ADD"]


def test_an_unknown_on_error_is_refused(make_memory: MakeMemory) -> None:
    m = make_memory()
    with pytest.raises(MemkitError, match="on_error"):
        m.add("tea", user_id="u", infer=False, on_error="ignore")
