"""Each framework integration with the real framework package and its offline test model;
each example in examples/ runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memkit import AsyncMemory, Memory
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.integrations._examples import run_example as _run_example


def _memory() -> Memory:
    return Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


# -- LangGraph / LangChain -------------------------------------------------

@pytest.mark.slow
def test_langgraph_example(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.prebuilt", reason="pip install 'memkit-ai[langgraph]'")
    out = _run_example("langgraph_agent.py", tmp_path)
    tool_line = next(line for line in out.splitlines() if line.startswith("[tool]"))
    assert "I'm vegetarian and allergic to peanuts." in tool_line
    assert "[ai] You're vegetarian" in out
    assert "store search: [('ui', 'Prefers dark mode')]" in out


def test_langchain_tools_fix_the_scope_and_report_errors() -> None:
    pytest.importorskip("langchain_core.tools", reason="pip install 'memkit-ai[langgraph]'")
    from memkit.integrations.langgraph import memory_tools

    memory = _memory()
    bob = memory.add("Bob's secret", user_id="bob", infer=False).results[0].id
    tools = {t.name: t for t in memory_tools(memory, user_id="alice")}
    assert "user_id" not in tools["add_memory"].args
    added = tools["add_memory"].invoke({"content": "likes tea", "infer": False})
    assert added["results"][0]["event"] == "ADD"
    assert tools["search_memories"].invoke({"query": "tea"})["results"][0]["user_id"] == "alice"
    refused = tools["get_memory"].invoke({"memory_id": bob})
    assert isinstance(refused, str) and "no memory with id" in refused


async def test_langchain_tools_async() -> None:
    pytest.importorskip("langchain_core.tools", reason="pip install 'memkit-ai[langgraph]'")
    from memkit.integrations.langgraph import memory_tools

    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        tools = {t.name: t for t in memory_tools(memory, user_id="alice")}
        await tools["add_memory"].ainvoke({"content": "likes tea", "infer": False})
        listed = await tools["list_memories"].ainvoke({})
        assert [m["memory"] for m in listed["results"]] == ["likes tea"]


class _AskingEmbeddings:
    """A LangChain-style model that embeds a question apart from what is stored (as e5
    does): as a document "what do I drink?" sits on "likes tea", as a query on "likes
    coffee"."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = {"likes tea": [1.0, 0.0, 0.0], "likes coffee": [0.0, 1.0, 0.0]}
        return [vectors.get(t, [0.9, 0.1, 0.3]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [0.1, 0.9, 0.3]


def _asking_embedder() -> object:
    pytest.importorskip("langchain_core.embeddings", reason="pip install 'memkit-ai[langgraph]'")
    from langchain_core.embeddings import Embeddings

    from memkit.integrations.langgraph import LangChainEmbedder

    model = type("Asking", (_AskingEmbeddings, Embeddings), {})()
    return LangChainEmbedder(model, dimension=3)


def test_langchain_embedder_embeds_searches_as_queries() -> None:
    memory = Memory(llm=ScriptedLLM(), embedder=_asking_embedder(), vector_store=InMemoryStore())  # type: ignore[arg-type]
    memory.add([{"role": "user", "content": "likes tea"}, {"role": "user", "content": "likes coffee"}],
               user_id="alice", infer=False)
    found = memory.search("what do I drink?", user_id="alice", limit=1, mode="vector")
    assert [r.memory for r in found.results] == ["likes coffee"]


async def test_langchain_embedder_embeds_async_searches_as_queries() -> None:
    async with AsyncMemory(llm=ScriptedLLM(), embedder=_asking_embedder(),  # type: ignore[arg-type]
                           vector_store=InMemoryStore()) as memory:
        await memory.add([{"role": "user", "content": "likes tea"},
                          {"role": "user", "content": "likes coffee"}], user_id="alice", infer=False)
        found = await memory.search("what do I drink?", user_id="alice", limit=1, mode="vector")
        assert [r.memory for r in found.results] == ["likes coffee"]


# -- pydantic-ai --------------------------------------------------------------

@pytest.mark.slow
def test_pydantic_ai_example(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai", reason="pip install 'memkit-ai[pydantic-ai]'")
    out = _run_example("pydantic_ai_agent.py", tmp_path)
    assert "I remember: ['Loves hiking in the Alps']" in out


async def test_pydantic_ai_test_model_calls_the_tools_from_their_schemas() -> None:
    pytest.importorskip("pydantic_ai", reason="pip install 'memkit-ai[pydantic-ai]'")
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from memkit.integrations.pydantic_ai import memory_toolset

    memory = _memory()
    memory.add("likes tea", user_id="alice", infer=False)
    memory.add("Bob's secret", user_id="bob", infer=False)
    model = TestModel(call_tools=["search_memories", "list_memories"])
    agent = Agent(model, toolsets=[memory_toolset(memory, user_id="alice")])
    result = await agent.run("what do I like?")
    assert {t.name for t in model.last_model_request_parameters.function_tools} >= {"add_memory", "search_memories"}
    assert all("user_id" not in t.parameters_json_schema["properties"]
               for t in model.last_model_request_parameters.function_tools)
    returned = json.loads(result.output)
    assert returned["list_memories"]["results"][0]["memory"] == "likes tea"
    assert "Bob's secret" not in result.output


# -- OpenAI Agents SDK ----------------------------------------------------------

@pytest.mark.slow
def test_openai_agents_example(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="pip install 'memkit-ai[openai-agents]'")
    out = _run_example("openai_agents_sdk.py", tmp_path)
    assert "Careful: [\"I'm allergic to peanuts and shellfish.\"]" in out


async def test_openai_agents_function_tools() -> None:
    pytest.importorskip("agents", reason="pip install 'memkit-ai[openai-agents]'")
    from memkit.integrations.openai_agents import memory_function_tools

    memory = _memory()
    tools = {t.name: t for t in memory_function_tools(memory, user_id="alice")}
    assert "user_id" not in tools["search_memories"].params_json_schema["properties"]
    added = json.loads(await tools["add_memory"].on_invoke_tool(None, json.dumps(  # type: ignore[arg-type]
        {"content": "likes tea", "infer": False})))
    assert added["results"][0]["event"] == "ADD"
    error = await tools["search_memories"].on_invoke_tool(None, '{"query": "x", "limit": 0}')  # type: ignore[arg-type]
    assert error.startswith("error: InvalidArgument: invalid arguments for search_memories")
