"""The graph tools over stdio, present when the memory has a graph store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.stdio import stdio_client

from tests.mcp import test_stdio

pytestmark = pytest.mark.slow  # a memkit mcp subprocess

GRAPH_TOOLS = {"create_entities", "create_relations", "delete_entities", "delete_relations",
               "get_entity_graph", "search_entities", "memory_repair"}


async def test_graph_tools_over_stdio(tmp_path: Path) -> None:
    config = {**test_stdio.CONFIG, "vector_store": {
        "provider": "sqlite", "config": {"path": str(tmp_path / "memkit.db")}},
        "graph_store": {"provider": "sqlite"}}
    params = test_stdio._params()
    assert params.env is not None
    params.env["MEMKIT_CONFIG"] = json.dumps(config)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == test_stdio.TOOLS | GRAPH_TOOLS

        async def call(tool: str, **arguments: Any) -> Any:
            result = await session.call_tool(tool, arguments)
            assert not result.is_error, result.content
            return result.structured_content

        made = await call("create_entities", entities=[{"name": "Alice", "type": "person"}])
        assert made["results"][0]["type"] == "person"
        await call("create_relations", relations=[
            {"source": "Alice", "relation": "works at", "target": "Acme"},
            {"source": "Acme", "relation": "based in", "target": "Berlin"}])
        graph = await call("get_entity_graph", name="alice", depth=2)
        assert sorted(e["name"] for e in graph["entities"]) == ["Acme", "Alice", "Berlin"]
        found = await call("search_entities", query="Where does Alice work?")
        assert {e["name"] for e in found["entities"]} >= {"Alice", "Acme"}
        other = await call("get_entity_graph", name="Alice", user_id="bob")
        assert other["entities"] == []
        assert (await call("delete_relations", relations=[
            {"source": "Acme", "relation": "based in", "target": "Berlin"}]))["deleted"] == 1
        assert (await call("delete_entities", names=["Acme", "nobody"]))["names"] == ["Acme"]
        graph = await call("get_entity_graph", name="Alice", depth=2)
        assert [e["name"] for e in graph["entities"]] == ["Alice"]
        assert await call("memory_repair") == {"repaired": 0}  # nothing owed

        added = await call("add_memory", content="Lunch with Alice", infer=False,
                           entities=["Alice", "Zed"])
        assert [e["name"] for e in added["entities"]] == ["Zed"]  # Alice was known
        await call("add_memory", content="Tea with Zed", infer=False, entities=["zed"])
        about = await call("list_memories", entity="Alice")
        assert [m["memory"] for m in about["results"]] == ["Lunch with Alice"]
        second = await call("list_memories", entity="Zed", limit=1, offset=1)
        assert [m["memory"] for m in second["results"]] == ["Lunch with Alice"]
        found = await call("search_memories", query="tea", entity="Alice")
        assert [m["memory"] for m in found["results"]] == ["Lunch with Alice"]
