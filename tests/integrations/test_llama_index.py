"""LlamaIndex: ``MemkitMemoryBlock`` as a ``BaseMemoryBlock`` of LlamaIndex's own ``Memory``
(which flushes old turns into it and renders it into the context), used by a
``FunctionAgent`` (the example), and memkit's tools as LlamaIndex tools."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_index.core.memory", reason="pip install 'memkit-ai[llama-index]'")

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.memory.memory import BaseMemoryBlock

from memkit import AsyncMemory, Memory
from memkit.integrations.llama_index import MemkitMemoryBlock, memory_tools
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.integrations._examples import run_example


def _store() -> AsyncMemory:
    return AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


def test_example_agent_answers_from_the_block(tmp_path: Path) -> None:
    # LlamaIndex's workflows read pydantic's deprecated ``__fields__``: not memkit's warning.
    out = run_example("llama_index_agent.py", tmp_path, deprecations_fail=False)
    assert "memkit holds: ['Got it, no meat and no peanuts.', \"I'm vegetarian and allergic to peanuts.\"]" in out
    assert "[ai] From memory: - I'm vegetarian and allergic to peanuts." in out


async def test_llama_index_memory_flushes_into_the_block_and_renders_it() -> None:
    async with _store() as store:
        await store.add("Bob likes jazz", user_id="bob", infer=False)
        block = MemkitMemoryBlock(memory=store, user_id="alice", infer=False, limit=2)
        assert isinstance(block, BaseMemoryBlock)
        memory = ChatMemory.from_defaults(session_id="alice-1", token_limit=100, chat_history_token_ratio=0.2,
                                          token_flush_size=10, memory_blocks=[block])
        await memory.aput_messages([
            ChatMessage(role="user", content="I play the cello in a quartet."),
            ChatMessage(role="assistant", content="Lovely, which pieces?"),
            ChatMessage(role="user", content="Mostly Haydn quartets these days."),
            ChatMessage(role="assistant", content="A fine choice."),
        ])
        stored = (await store.get_all(user_id="alice")).results
        assert "I play the cello in a quartet." in [m.memory for m in stored]
        assert {m.metadata.get("session_id") for m in stored} == {"alice-1"}

        context = await memory.aget(input="What instrument do I play?")
        rendered = "\n".join(m.content or "" for m in context)
        assert "<memkit>" in rendered and "- I play the cello in a quartet." in rendered
        assert "Bob likes jazz" not in rendered


async def test_the_block_searches_for_the_latest_user_message() -> None:
    llm = ScriptedLLM([{"facts": ["Plays the cello"]}])
    async with AsyncMemory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as store:
        block = MemkitMemoryBlock(memory=store, agent_id="tutor")  # infer=True: memkit's LLM curates
        await block.aput([ChatMessage(role="user", content="I play the cello"),
                          ChatMessage(role="tool", content="ignored")])
        assert [m.memory for m in (await store.get_all(agent_id="tutor")).results] == ["Plays the cello"]
        assert await block.aget([]) == ""
        got = await block.aget([ChatMessage(role="user", content="cello"), ChatMessage(role="assistant", content="x")])
        assert got == "- Plays the cello"


def test_a_scope_is_required() -> None:
    with pytest.raises(ValueError, match="user_id, agent_id, or run_id"):
        MemkitMemoryBlock(memory=_store())


async def test_tools_fix_the_scope_and_report_errors() -> None:
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        bob = memory.add("Bob's secret", user_id="bob", infer=False).results[0].id
        tools = {t.metadata.name: t for t in memory_tools(memory, user_id="alice")}
        schema = tools["add_memory"].metadata.get_parameters_dict()
        assert "user_id" not in schema["properties"] and schema["required"] == ["content"]
        added = await tools["add_memory"].acall(content="likes tea", infer=False)
        assert added.raw_output["results"][0]["event"] == "ADD"
        found = await tools["search_memories"].acall(query="tea")
        assert [r["memory"] for r in found.raw_output["results"]] == ["likes tea"]
        refused = await tools["get_memory"].acall(memory_id=bob)
        assert refused.raw_output == f"error: NotFoundError: no memory with id {bob!r}"
