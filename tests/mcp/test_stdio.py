"""The ``mcp`` client over stdio against a ``memkit mcp`` subprocess: every tool."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow  # a memkit mcp subprocess

ROOT = Path(__file__).resolve().parents[2]
# Answers both LLM calls of an inferred add: the extraction reads "facts", the decision "memory".
MOCK_REPLY = json.dumps({"facts": ["User likes green tea"],
                         "memory": [{"event": "ADD", "text": "User likes green tea"}]})
CONFIG = {
    "vector_store": {"provider": "memory"},
    "embedder": {"provider": "hash"},
    "llm": {"provider": "litellm", "config": {"model": "gpt-4o-mini",
                                               "mock_response": MOCK_REPLY}},
}
TOOLS = {"add_memory", "search_memories", "get_memory", "list_memories", "update_memory",
         "delete_memory", "delete_all_memories", "memory_history", "memory_versions",
         "memory_supersede", "memory_revert", "get_memory_stats", "memory_consolidate", "memory_prune",
         "memory_feedback", "memory_task_update", "memory_startup",
         "index_folder"}


def _params() -> StdioServerParameters:
    env = {
        "MEMKIT_CONFIG": json.dumps(CONFIG),
        "MEMKIT_USER_ID": "alice",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "memkit.cli", "mcp"],
                                 env=env, cwd=str(ROOT))


async def _call(session: ClientSession, name: str, **arguments: Any) -> Any:
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def test_every_tool_over_stdio() -> None:
    async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
        assert "infer" in tools["add_memory"].input_schema["properties"]
        assert "filters" in tools["search_memories"].input_schema["properties"]

        added = await _call(session, "add_memory", content="I love green tea", infer=True)
        (event,) = added["results"]
        assert event["event"] == "ADD" and event["memory"] == "User likes green tea"
        tea = event["id"]
        verbatim = await _call(session, "add_memory", content="I play chess on Sundays",
                               infer=False, metadata={"topic": "games"})
        chess = verbatim["results"][0]["id"]

        found = await _call(session, "search_memories", query="green tea")
        assert found["results"][0]["id"] == tea
        filtered = await _call(session, "search_memories", query="green tea",
                               filters={"topic": "games"})
        assert [m["id"] for m in filtered["results"]] == [chess]

        got = await _call(session, "get_memory", memory_id=tea)
        assert got["user_id"] == "alice"  # from MEMKIT_USER_ID
        listed = await _call(session, "list_memories")
        assert {m["id"] for m in listed["results"]} == {tea, chess}

        updated = await _call(session, "update_memory", memory_id=tea,
                              text="User likes black tea")
        assert updated["memory"] == "User likes black tea"
        stale = await session.call_tool("update_memory", {
            "memory_id": tea, "text": "User likes mint tea", "if_updated_at": got["updated_at"]})
        assert stale.is_error and "StaleVersionError" in str(stale.content)  # nothing changed
        history = await _call(session, "memory_history", memory_id=tea)
        assert [h["event"] for h in history["results"]] == ["ADD", "UPDATE"]
        versions = await _call(session, "memory_versions", memory_id=tea)
        assert [v["memory"] for v in versions["results"]] == [
            "User likes green tea", "User likes black tea"]
        then = await _call(session, "search_memories", query="tea",
                           as_of=versions["results"][0]["valid_from"])
        assert [m["memory"] for m in then["results"]] == ["User likes green tea"]
        assert "as_of" in tools["search_memories"].input_schema["properties"]
        undo = await _call(session, "memory_revert", event_id=history["results"][1]["id"])
        assert undo["reverts"] == history["results"][1]["id"]
        again = await session.call_tool("memory_revert",
                                        {"event_id": history["results"][1]["id"]})
        assert again.is_error  # reverting twice is an error
        newer = await _call(session, "memory_supersede", memory_id=tea, text="User likes oolong")
        assert newer["supersedes"] == tea and newer["id"] != tea
        twice = await session.call_tool("memory_supersede", {"memory_id": tea, "text": "x"})
        assert twice.is_error
        dry = await _call(session, "add_memory", content="I like jazz", infer=False,
                          dry_run=True)
        assert dry["results"][0]["event"] == "ADD"
        assert "jazz" not in str(await _call(session, "list_memories"))
        tea = newer["id"]

        stats = await _call(session, "get_memory_stats")
        assert stats["memories"] == 2 and stats["by_state"]["superseded"] >= 1
        assert (await _call(session, "memory_consolidate"))["dry_run"] is True
        assert (await _call(session, "memory_prune"))["results"] == []
        assert (await _call(session, "memory_feedback", memory_id=tea, useful=False))[
            "useful"] is False

        assert await _call(session, "delete_memory", memory_id=tea) == {"deleted": tea}
        deleted = await _call(session, "delete_all_memories")
        assert deleted["deleted"] == 1 and len(deleted["ids"]) == 1
        assert (await _call(session, "list_memories"))["results"] == []

        missing = await session.call_tool("get_memory", {"memory_id": "nope"})
        assert missing.is_error
        other = await _call(session, "list_memories", user_id="bob")
        assert other["results"] == []
