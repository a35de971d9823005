"""Semantic search with the real local embedder (all-MiniLM-L6-v2 on onnxruntime)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memkit import AsyncMemory, Memory


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with Memory.from_config({"vector_store": {"provider": "memory"}}) as m:
        m.add([
            "canine behavior training tips",
            "User likes Python",
            "The stock market fell sharply on Tuesday",
            "Grandma's apple pie recipe uses cinnamon",
            "User is allergic to peanuts",
        ], user_id="u", infer=False)
        yield m


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_dog_training_query_finds_canine_tips(memory: Memory, mode: str) -> None:
    top = memory.search("how to train dogs", user_id="u", mode=mode).results  # type: ignore[arg-type]
    assert top[0].memory == "canine behavior training tips"


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_programming_languages_finds_python_above_half(memory: Memory, mode: str) -> None:
    top = memory.search("programming languages", user_id="u", mode=mode).results  # type: ignore[arg-type]
    assert top[0].memory == "User likes Python"
    assert top[0].score is not None and top[0].score > 0.5


def test_food_allergy_query(memory: Memory) -> None:
    top = memory.search("what foods should the user avoid?", user_id="u", limit=1).results
    assert top[0].memory == "User is allergic to peanuts"


def test_async_memory_uses_the_same_embedder() -> None:
    import asyncio

    async def main() -> str:
        async with AsyncMemory.from_config({"vector_store": {"provider": "memory"}}) as m:
            await m.add(["canine behavior training tips", "User likes Python"], user_id="u",
                        infer=False)
            return (await m.search("how to train dogs", user_id="u")).results[0].memory

    assert asyncio.run(main()) == "canine behavior training tips"


def test_default_config_is_sqlite_plus_local_embedder(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with Memory() as m:
        assert m.vector_store.provider == "sqlite"
        assert m.embedder.dimension == 384 and m.embedder.model_name == "all-MiniLM-L6-v2"
        m.add("I like hiking in the Alps", user_id="u", infer=False)
        assert m.search("mountain walks", user_id="u").results[0].memory == "I like hiking in the Alps"
    assert (tmp_path / ".memkit" / "memkit.db").exists()  # type: ignore[operator]


def test_a_function_word_query_scores_no_memory_high() -> None:
    with Memory.from_config({"vector_store": {"provider": "sqlite", "config": {"path": ":memory:"}}}) as m:
        m.add(["I'm vegetarian and allergic to peanuts.", "I work as a data engineer in Lisbon.",
               "On weekends I go bouldering."], user_id="alice", infer=False)
        assert all(r.score is not None and r.score < 0.7 for r in m.search("I", user_id="alice").results)
        top = m.search("peanuts", user_id="alice").results[0]
        assert top.memory.startswith("I'm vegetarian") and top.score is not None and top.score > 0.85
