"""AutoGen: ``MemkitMemory`` against ``autogen_core``'s ``Memory`` protocol, used by a real
``AssistantAgent`` (the example), and memkit's tools as AutoGen tools."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("autogen_core.memory", reason="pip install 'memkit-ai[autogen]'")

from autogen_core import CancellationToken
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage

from memkit import AsyncMemory, MemkitError
from memkit import Memory as MemkitMemoryStore
from memkit.integrations.autogen import MemkitMemory, memory_tools
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.integrations._examples import run_example


def _store() -> AsyncMemory:
    return AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


def test_example_agent_sees_and_searches_the_memories(tmp_path: Path) -> None:
    pytest.importorskip("autogen_ext.models.replay", reason="pip install autogen-ext")
    out = run_example("autogen_agent.py", tmp_path)
    assert "[context] Relevant memories about the user (most relevant first): | 1. I'm vegetarian" in out
    assert "[memory] [\"I'm vegetarian and allergic to peanuts.\"]" in out
    assert '[tool] {"results": [{"id"' in out and "allergic to peanuts" in out
    assert "[ai] A vegetable curry, without peanuts." in out


async def test_it_is_autogens_memory_and_keeps_to_its_scope() -> None:
    async with _store() as store:
        await store.add("Bob likes jazz", user_id="bob", infer=False)
        memory = MemkitMemory(store, user_id="alice", infer=False, limit=3)
        assert isinstance(memory, Memory)
        await memory.add(MemoryContent(content="Prefers window seats", mime_type=MemoryMimeType.TEXT,
                                       metadata={"topic": "travel"}))
        await memory.add(MemoryContent(content={"diet": "vegetarian"}, mime_type=MemoryMimeType.JSON))

        found = await memory.query("window seat")
        assert found.results[0].content == "Prefers window seats"
        assert "Bob likes jazz" not in [c.content for c in found.results]
        first = found.results[0].metadata or {}
        assert first["topic"] == "travel" and first["id"] and first["score"] > 0
        json_memory = await memory.query(MemoryContent(content="diet", mime_type="text/plain"), limit=1,
                                         filters={"topic": "travel"})
        assert [c.content for c in json_memory.results] == ["Prefers window seats"]

        await memory.clear()
        assert (await memory.query("window seat")).results == []
        assert [m.memory for m in (await store.get_all(user_id="bob")).results] == ["Bob likes jazz"]
        await memory.close()


async def test_update_context_adds_the_memories_for_the_latest_user_message() -> None:
    async with _store() as store:
        await store.add("Allergic to peanuts", user_id="alice", infer=False)
        memory = MemkitMemory(store, user_id="alice")
        context = BufferedChatCompletionContext(buffer_size=10)
        assert (await memory.update_context(context)).memories.results == []  # nothing asked yet
        await context.add_message(UserMessage(content="Hello", source="user"))
        await context.add_message(AssistantMessage(content="Hi!", source="assistant"))
        await context.add_message(UserMessage(content="Anything I'm allergic to?", source="user"))
        result = await memory.update_context(context)
        assert [c.content for c in result.memories.results] == ["Allergic to peanuts"]
        added = (await context.get_messages())[-1]
        assert isinstance(added, SystemMessage) and "1. Allergic to peanuts" in added.content


async def test_add_runs_memkits_pipeline_and_refuses_what_is_not_text() -> None:
    llm = ScriptedLLM([{"facts": ["Lives in Porto"]}])
    async with AsyncMemory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as store:
        memory = MemkitMemory(store, agent_id="concierge")
        await memory.add(MemoryContent(content="I live in Porto these days", mime_type="text/markdown"))
        assert [m.memory for m in (await store.get_all(agent_id="concierge")).results] == ["Lives in Porto"]
        with pytest.raises(MemkitError, match="not image"):
            await memory.add(MemoryContent(content="x", mime_type=MemoryMimeType.IMAGE))
        with pytest.raises(MemkitError, match="unknown query arguments"):
            await memory.query("x", top=3)


def test_a_scope_is_required() -> None:
    with pytest.raises(MemkitError, match="user_id, agent_id, or run_id"):
        MemkitMemory(_store())


async def test_tools_fix_the_scope_on_a_sync_memory() -> None:
    store = MemkitMemoryStore(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())
    bob = store.add("Bob's secret", user_id="bob", infer=False).results[0].id
    tools = {t.name: t for t in memory_tools(store, user_id="alice")}
    assert "user_id" not in tools["add_memory"].schema["parameters"]["properties"]
    assert tools["search_memories"].schema["parameters"]["required"] == ["query"]
    token = CancellationToken()
    added = await tools["add_memory"].run_json({"content": "likes tea", "infer": False}, token)
    assert added["results"][0]["event"] == "ADD"
    found = await tools["search_memories"].run_json({"query": "tea"}, token)
    assert tools["search_memories"].return_value_as_string(found).startswith('{"results": [{"id"')
    assert [r["memory"] for r in found["results"]] == ["likes tea"]
    with pytest.raises(MemkitError, match="no memory with id"):
        await tools["get_memory"].run_json({"memory_id": bob}, token)
    with pytest.raises(ValueError):  # the schema the model sees has no user_id
        await tools["search_memories"].run_json({"query": "x", "user_id": "bob"}, token)
