"""The notes and task tools (memory_task_update, memory_startup, index_folder, and
``surface`` on add_memory / list_memories), run by MemoryTools as agents and MCP run them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memkit import AsyncMemory, MemkitError, Memory
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from memkit.tools import MemoryTools, openai_tools


def test_an_agent_keeps_tasks_and_reads_its_briefing(tmp_path: Path) -> None:
    memory = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())
    tools = MemoryTools(memory, user_id="alice")
    added = tools.call("add_memory", {"content": "Renew the passport", "infer": False,
                                      "memory_type": "task"})
    tid = added["results"][0]["id"]
    tools.call("add_memory", {"content": "Reply in Spanish", "infer": False,
                              "surface": "startup"})
    moved = tools.call("memory_task_update", {"memory_id": tid, "status": "in_progress"})
    assert moved["metadata"]["status"] == "in_progress"
    with pytest.raises(MemkitError, match="invalid arguments for memory_task_update"):
        tools.call("memory_task_update", {"memory_id": tid, "status": "finished"})
    listed = tools.call("list_memories", {"surface": "startup"})["results"]
    assert [m["memory"] for m in listed] == ["Reply in Spanish"]
    briefing = tools.call("memory_startup", {"budget_tokens": 200})
    assert briefing["text"].startswith("## Open tasks\n- [in_progress] Renew the passport")

    bob = memory.add("Bob's task", user_id="bob", infer=False, memory_type="task").results[0].id
    with pytest.raises(MemkitError, match="no memory with id"):
        tools.call("memory_task_update", {"memory_id": bob, "status": "done"})
    assert memory.get(bob).metadata["status"] == "open"  # type: ignore[union-attr]

    (tmp_path / "n.md").write_text("# Passport\nThe office is open on Mondays.\n")
    indexed = tools.call("index_folder", {"path": str(tmp_path)})
    assert indexed["added"] == 1
    assert memory.get_all(user_id="alice", filters={"source": "notes"}).results[0].user_id == "alice"
    schema = openai_tools(["memory_task_update"])[0]["function"]["parameters"]
    assert schema["properties"]["status"]["enum"] == ["open", "in_progress", "done", "cancelled"]


def test_async_tools_index_and_brief(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("async note\n")

    async def scenario() -> tuple[int, str]:
        async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                               vector_store=InMemoryStore()) as memory:
            tools = MemoryTools(memory, user_id="u")
            indexed = await tools.acall("index_folder", {"path": str(tmp_path)})
            await tools.acall("add_memory", {"content": "Water the plants", "infer": False,
                                             "memory_type": "task"})
            briefing = await tools.acall("memory_startup", {})
            return indexed["added"], briefing["text"]

    added, text = asyncio.run(scenario())
    assert added == 1 and "- [open] Water the plants" in text
