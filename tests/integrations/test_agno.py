"""Agno: ``MemkitMemoryManager`` as Agno's ``MemoryManager`` (an ``Agent`` runs on it in the
example), and memkit's tools as Agno functions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("agno.memory", reason="pip install 'memkit-ai[agno]'")

from agno.db.schemas import UserMemory
from agno.memory import MemoryManager
from agno.models.message import Message

from memkit import AsyncMemory, MemkitError, Memory, NotFoundError
from memkit.integrations.agno import MemkitMemoryManager, memory_tools
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.integrations._examples import run_example


def _memory(llm: ScriptedLLM | None = None) -> Memory:
    return Memory(llm=llm or ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_example_agent_remembers_a_run_and_sees_it_in_the_next(tmp_path: Path) -> None:
    out = run_example("agno_agent.py", tmp_path)
    assert "memkit holds: [\"I'm vegetarian and allergic to peanuts.\"]" in out
    assert "[context] [\"- I'm vegetarian and allergic to peanuts.\"" in out


def test_it_is_agnos_memory_manager_over_memkit() -> None:
    with _memory() as memory:
        memory.add("Bob likes jazz", user_id="bob", agent_id="chef", infer=False)
        manager = MemkitMemoryManager(memory, agent_id="chef", infer=False)
        assert isinstance(manager, MemoryManager)
        first = manager.add_user_memory(UserMemory(memory="Vegetarian", topics=["diet"]), user_id="alice")
        second = manager.add_user_memory(UserMemory(memory="Cooks for two"), user_id="alice")
        assert first and second
        listed = manager.get_user_memories(user_id="alice")
        assert [m.memory for m in listed] == ["Cooks for two", "Vegetarian"]  # newest first
        assert listed[1].topics == ["diet"] and listed[1].agent_id == "chef" and listed[1].created_at
        assert [m.memory for m in manager.search_user_memories(limit=1, retrieval_method="first_n",
                                                                user_id="alice")] == ["Vegetarian"]
        assert manager.search_user_memories("vegetarian", retrieval_method="agentic",
                                            user_id="alice")[0].memory == "Vegetarian"

        bob = memory.get_all(user_id="bob").results[0].id
        assert manager.get_user_memory(bob, user_id="alice") is None
        with pytest.raises(NotFoundError):
            manager.delete_user_memory(bob, user_id="alice")
        manager.replace_user_memory(first, UserMemory(memory="Vegan"), user_id="alice")
        assert [h.event for h in memory.history(first)] == ["ADD", "UPDATE"]
        manager.delete_user_memory(second, user_id="alice")
        assert [m.memory for m in manager.get_user_memories(user_id="alice")] == ["Vegan"]
        manager.clear_user_memories(user_id="alice")
        assert manager.get_user_memories(user_id="alice") == []
        assert [m.memory for m in memory.get_all(user_id="bob").results] == ["Bob likes jazz"]
        with pytest.raises(MemkitError, match="consolidate"):  # Agno's rewrite of its own store
            manager.optimize_memories(user_id="bob")


def test_runs_and_tasks_go_through_memkits_pipeline() -> None:
    llm = ScriptedLLM([
        {"facts": ["Lives in Porto"]},  # nothing stored yet: added without a decision call
        {"facts": ["Lives in Lisbon"]}, {"memory": [{"event": "UPDATE", "id": "0", "text": "Lives in Lisbon"}]},
    ])
    with _memory(llm) as memory:
        manager = MemkitMemoryManager(memory, user_id="alice")  # the user when Agno names none
        said = manager.create_user_memories(messages=[Message(role="system", content="be nice"),
                                                      Message(role="user", content="I live in Porto"),
                                                      Message(role="assistant", content="Nice city")])
        assert said.startswith("ADD ") and said.endswith(": Lives in Porto")
        assert "be nice" not in json.dumps([c.messages for c in llm.calls])
        moved = manager.update_memory_task("I moved to Lisbon")
        assert moved.startswith("UPDATE ") and moved.endswith(": Lives in Lisbon")
        assert [m.memory for m in memory.get_all(user_id="alice").results] == ["Lives in Lisbon"]
        assert manager.create_user_memories(messages=[]) == "nothing to remember"


async def test_the_async_api_on_an_async_memory() -> None:
    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        manager = MemkitMemoryManager(memory, run_id="r1", infer=False)
        said = await manager.acreate_user_memories(message="I like tea", user_id="alice")
        assert said.startswith("ADD ")
        assert [m.memory for m in await manager.aget_user_memories(user_id="alice")] == ["I like tea"]
        with pytest.raises(TypeError, match="AsyncMemory"):
            manager.get_user_memories(user_id="alice")
        await manager.aclear_user_memories(user_id="alice")
        assert await manager.aget_user_memories(user_id="alice") == []


async def test_tools_fix_the_scope_and_report_errors() -> None:
    with _memory() as memory:
        bob = memory.add("Bob's secret", user_id="bob", infer=False).results[0].id
        tools = {f.name: f for f in memory_tools(memory, user_id="alice")}
        assert "user_id" not in tools["add_memory"].parameters["properties"]
        assert tools["add_memory"].entrypoint is not None and tools["get_memory"].entrypoint is not None
        added = json.loads(tools["add_memory"].entrypoint(content="likes tea", infer=False))
        assert added["results"][0]["event"] == "ADD"
        assert tools["get_memory"].entrypoint(memory_id=bob) == f"error: NotFoundError: no memory with id {bob!r}"
    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as amemory:
        search = memory_tools(amemory, user_id="alice", names=["search_memories"])[0]
        assert search.entrypoint is not None
        assert json.loads(await search.entrypoint(query="tea")) == {"results": [], "relations": []}
