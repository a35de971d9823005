"""The memory tools, defined once: OpenAI / Anthropic definitions and the runner."""

from __future__ import annotations

import pytest

from memkit import AsyncMemory, MemkitError, Memory
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from memkit.tools import TOOLS, MemoryTools, anthropic_tools, openai_tools

NAMES = ["add_memory", "search_memories", "get_memory", "list_memories", "update_memory",
         "delete_memory", "delete_all_memories", "memory_history", "memory_versions",
         "memory_supersede", "memory_revert", "get_memory_stats", "memory_prune",
         "memory_consolidate",
         "memory_feedback", "memory_task_update", "memory_startup",
         "index_folder"]
GRAPH_NAMES = ["create_entities", "create_relations", "delete_entities", "delete_relations",
               "get_entity_graph", "search_entities", "memory_repair"]


def _memory() -> Memory:
    return Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


def test_definitions_for_openai_and_anthropic() -> None:
    assert [spec.name for spec in TOOLS] == NAMES + GRAPH_NAMES
    assert [t["name"] for t in anthropic_tools(graph=True)] == NAMES + GRAPH_NAMES
    openai = openai_tools()
    anthropic = anthropic_tools(["search_memories"], hidden={"user_id"})
    assert [t["function"]["name"] for t in openai] == NAMES
    search = openai[1]["function"]
    assert search["parameters"]["required"] == ["query"]
    assert {"query", "user_id", "limit", "filters", "threshold"} <= set(search["parameters"]["properties"])
    assert search["parameters"]["properties"]["limit"]["maximum"] == 100
    (only,) = anthropic
    assert only["name"] == "search_memories" and only["description"] == search["description"]
    assert "user_id" not in only["input_schema"]["properties"]
    with pytest.raises(KeyError, match="unknown memory tool 'nope'"):
        openai_tools(["nope"])


def test_fixed_scope_is_hidden_and_enforced() -> None:
    memory = _memory()
    bob = memory.add("Bob's secret", user_id="bob", infer=False).results[0].id
    tools = MemoryTools(memory, user_id="alice")
    assert "user_id" not in tools.parameters("add_memory")["properties"]

    added = tools.call("add_memory", {"content": "likes tea", "infer": False})
    assert added["results"][0]["event"] == "ADD"
    found = tools.call("search_memories", {"query": "tea"})
    assert [r["memory"] for r in found["results"]] == ["likes tea"]
    tools.call("add_memory", {"content": "likes green tea", "infer": False})
    pages = [tools.call("search_memories", {"query": "tea", "limit": 1, "offset": o})
             for o in (0, 1, 2)]
    assert sorted(r["memory"] for p in pages for r in p["results"]) == [
        "likes green tea", "likes tea"]
    assert found["results"][0]["user_id"] == "alice"

    with pytest.raises(MemkitError, match="user_id is fixed"):
        tools.call("search_memories", {"query": "secret", "user_id": "bob"})
    for name, args in (("get_memory", {}), ("update_memory", {"text": "mine now"}),
                       ("delete_memory", {}), ("memory_history", {})):
        with pytest.raises(MemkitError, match="no memory with id"):
            tools.call(name, {"memory_id": bob, **args})
    assert memory.get(bob) is not None and memory.get(bob).memory == "Bob's secret"  # type: ignore[union-attr]
    deleted = tools.call("delete_all_memories", {})
    assert deleted["deleted"] == 2 and len(deleted["ids"]) == 2
    assert memory.get(bob) is not None


def test_defaults_only_scope_and_invalid_arguments() -> None:
    tools = MemoryTools(_memory(), user_id="alice", fixed=False)
    tools.call("add_memory", {"content": "likes tea", "infer": False, "user_id": "carol"})
    assert tools.call("list_memories", {"user_id": "carol"})["results"][0]["memory"] == "likes tea"
    assert tools.call("list_memories", {})["results"] == []
    with pytest.raises(MemkitError, match="invalid arguments for search_memories"):
        tools.call("search_memories", {"query": "x", "limit": 0})


async def test_acall_on_async_memory() -> None:
    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        tools = MemoryTools(memory, user_id="alice")
        added = await tools.acall("add_memory", {"content": [{"role": "user", "content": "I like tea"}],
                                                 "infer": False})
        memory_id = added["results"][0]["id"]
        await tools.acall("update_memory", {"memory_id": memory_id, "text": "likes green tea"})
        history = await tools.acall("memory_history", {"memory_id": memory_id})
        assert [h["event"] for h in history["results"]] == ["ADD", "UPDATE"]
        with pytest.raises(TypeError, match="acall"):
            tools.call("list_memories", {})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stats_consolidate_and_feedback_tools(mode: str) -> None:
    import asyncio

    memory: Memory | AsyncMemory = (
        _memory() if mode == "sync" else
        AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()))
    tools = MemoryTools(memory, user_id="alice")

    def call(name: str, args: dict[str, object]) -> dict[str, object]:
        if mode == "sync":
            return tools.call(name, args)
        return asyncio.run(tools.acall(name, args))

    ids = [call("add_memory", {"content": t, "infer": False})["results"][0]["id"]  # type: ignore[index]
           for t in ("User likes green tea", "user likes green tea!", "User plays chess")]
    stats = call("get_memory_stats", {})
    assert stats["memories"] == 3 and sum(stats["confidence_histogram"]) == 3  # type: ignore[arg-type]
    assert "user_id" not in tools.parameters("get_memory_stats")["properties"]
    dry = call("memory_consolidate", {})
    assert dry["dry_run"] and len(dry["clusters"]) == 1  # type: ignore[arg-type]
    merged = call("memory_consolidate", {"dry_run": False})
    assert len(merged["clusters"][0]["merged"]) == 1  # type: ignore[index]
    assert call("get_memory_stats", {})["memories"] == 2
    assert call("memory_feedback", {"memory_id": ids[2], "useful": True}) == {
        "memory_id": ids[2], "useful": True}
    other = MemoryTools(memory, user_id="bob")
    with pytest.raises(MemkitError, match="no memory with id"):  # another scope's memory
        other.call("memory_feedback", {"memory_id": ids[2], "useful": False}) if mode == "sync" \
            else asyncio.run(other.acall("memory_feedback", {"memory_id": ids[2], "useful": False}))

    golf = call("add_memory", {"content": "User tried golf", "infer": False, "importance": 0.2,
                               "memory_type": "episode", "confidence": 0.9}
                )["results"][0]["id"]  # type: ignore[index]
    got = call("get_memory", {"memory_id": golf})
    assert (got["importance"], got["confidence"]) == (0.2, 0.9)
    for _ in range(5):
        call("memory_feedback", {"memory_id": golf, "useful": False})
    dry = call("memory_prune", {"below": 0.5})
    assert [e["id"] for e in dry["results"]] == [golf]  # type: ignore[union-attr]
    found = [r["id"] for r in call("search_memories", {  # type: ignore[union-attr]
        "query": "golf", "mode": "vector"})["results"]]
    assert golf in found
    confident = [r["id"] for r in call("search_memories", {  # type: ignore[union-attr]
        "query": "golf", "mode": "vector", "min_confidence": 0.5})["results"]]
    assert golf not in confident and confident
    call("memory_prune", {"below": 0.5, "dry_run": False})
    with pytest.raises(MemkitError, match="no memory with id"):
        call("get_memory", {"memory_id": golf})
    retyped = call("update_memory", {"memory_id": ids[2], "memory_type": "preference"})
    assert (retyped["memory"], retyped["memory_type"]) == ("User plays chess", "preference")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_graph_tools_run_on_a_memory_with_a_graph_store(mode: str) -> None:
    import asyncio

    from memkit.stores.sqlite import SQLiteStore

    cls = Memory if mode == "sync" else AsyncMemory
    memory = cls({"graph_store": "sqlite"}, llm=ScriptedLLM(), embedder=HashEmbedder(),
                 vector_store=SQLiteStore(":memory:"))
    tools = MemoryTools(memory, user_id="alice")
    assert [s.name for s in tools.specs] == NAMES + GRAPH_NAMES
    assert [s.name for s in MemoryTools(_memory()).specs] == NAMES  # no graph store: none

    def call(tool: str, **arguments: object) -> dict[str, object]:
        if mode == "sync":
            return tools.call(tool, arguments)
        return asyncio.run(tools.acall(tool, arguments))

    made = call("create_entities", entities=[{"name": "Alice", "type": "person"}])
    assert made["results"][0]["type"] == "person"  # type: ignore[index]
    call("create_relations", relations=[
        {"source": "Alice", "relation": "works at", "target": "Acme"},
        {"source": "Acme", "relation": "based in", "target": "Berlin"}])
    graph = call("get_entity_graph", name="alice", depth=2, include_memories=True)
    assert graph["memories"] == []  # relations written directly have no memory behind them
    assert sorted(e["name"] for e in graph["entities"]) == ["Acme", "Alice", "Berlin"]  # type: ignore[attr-defined]
    found = call("search_entities", query="Where does Alice work?")
    assert {e["name"] for e in found["entities"]} >= {"Alice", "Acme"}  # type: ignore[attr-defined]
    everyone = call("search_entities", query="", type="person")
    assert [e["name"] for e in everyone["entities"]] == ["Alice"]  # type: ignore[attr-defined]
    with pytest.raises(MemkitError, match="user_id is fixed"):
        call("get_entity_graph", name="Alice", user_id="bob")
    assert call("delete_relations", relations=[
        {"source": "Acme", "relation": "based in", "target": "Berlin"}])["deleted"] == 1
    assert call("delete_entities", names=["Acme", "nobody"])["names"] == ["Acme"]
    assert call("memory_repair") == {"repaired": 0}  # a graph in the store's transactions
    with pytest.raises(MemkitError, match="invalid arguments"):
        call("create_entities", entities=[])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_models_read_reinforces_once_its_feedback_and_delete_do_not(mode: str) -> None:
    import asyncio

    config = {"lifecycle": {"reinforce": True, "flush_every": 1}}
    memory: Memory | AsyncMemory = (Memory if mode == "sync" else AsyncMemory)(
        config, llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())
    tools = MemoryTools(memory, user_id="alice")

    def call(name: str, args: dict[str, object]) -> dict[str, object]:
        return tools.call(name, args) if mode == "sync" else asyncio.run(tools.acall(name, args))

    def look(memory_id: str) -> dict[str, object]:
        got = memory.versions(memory_id) if mode == "sync" else asyncio.run(
            memory.versions(memory_id))  # type: ignore[arg-type]
        return got[-1].model_dump()  # type: ignore[union-attr,index]

    tea, chess = (call("add_memory", {"content": t, "infer": False})["results"][0]["id"]  # type: ignore[index]
                  for t in ("User likes tea", "User plays chess"))
    call("get_memory", {"memory_id": tea})
    assert look(tea)["access_count"] == 1  # the tool's scope check is not a read
    call("memory_feedback", {"memory_id": chess, "useful": False})
    call("delete_memory", {"memory_id": chess})
    assert (look(chess)["access_count"], look(chess)["confidence"]) == (0, 0.8)


def test_tools_show_subjects_filter_by_them_and_count_confirmations() -> None:
    said = {"facts": [{"text": "Ana lives in Lyon", "type": "fact", "importance": 0.5,
                       "subject": "Ana"}]}
    memory = Memory(llm=ScriptedLLM([said, said]), embedder=HashEmbedder(),
                    vector_store=InMemoryStore())
    tools = MemoryTools(memory, user_id="alice")
    [added] = tools.call("add_memory", {"content": "My sister Ana lives in Lyon"})["results"]
    found = tools.call("list_memories", {"filters": {"subject": "Ana"}})["results"]
    assert [(m["id"], m["metadata"]["subject"]) for m in found] == [(added["id"], "Ana")]
    assert tools.call("add_memory", {"content": "Ana? Lyon."})["results"][0]["event"] == "NONE"
    got = tools.call("get_memory", {"memory_id": added["id"]})
    assert got["metadata"]["confirmations"] == 1
    assert tools.call("get_memory_stats", {})["confirmations"] == 1
