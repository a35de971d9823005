"""langmem's memory tools run on memkit's backends through ``MemkitStore``: a LangGraph
agent (LangChain's offline fake chat model) creates, finds, updates and deletes memories
with langmem's ``manage_memory`` and ``search_memory`` tools, on every engine."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkit.testing import HashEmbedder
from tests.stores.conftest import Stores

pytest.importorskip("langmem", reason="pip install 'memkit-ai[langmem]'")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langmem import create_manage_memory_tool, create_search_memory_tool

from memkit.integrations.langgraph import MemkitStore

NAMESPACE = ("memories", "{langgraph_user_id}")


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{name}-{len(args)}"}])


def _agent(store: MemkitStore, script: list[AIMessage]) -> Any:
    """A LangGraph agent with langmem's tools whose SCRIPTED model plays ``script``."""
    model = GenericFakeChatModel(messages=iter([*script, AIMessage("done")]))
    tools = [create_manage_memory_tool(namespace=NAMESPACE), create_search_memory_tool(namespace=NAMESPACE)]

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(store=store)


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"langgraph_user_id": user}}


def _tool_outputs(result: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in result["messages"] if m.type == "tool"]


def test_langmem_tools_create_search_update_delete(store_factory: Stores) -> None:
    store = MemkitStore(store_factory("langmem"), embedder=HashEmbedder())
    created = _agent(store, [_call("manage_memory", content="User prefers dark mode", action="create")]
                     ).invoke({"messages": [("user", "I like dark mode")]}, config=_config("alice"))
    memory_id = _tool_outputs(created)[0].removeprefix("created memory ")

    [item] = store.search(("memories", "alice"))
    assert (item.key, item.value) == (memory_id, {"content": "User prefers dark mode"})
    assert store.search(("memories", "bob")) == []  # the namespace comes from the run's user

    found = _agent(store, [_call("search_memory", query="dark mode")]
                   ).invoke({"messages": [("user", "what theme?")]}, config=_config("alice"))
    [hit] = json.loads(_tool_outputs(found)[0])
    assert (hit["key"], hit["value"]["content"]) == (memory_id, "User prefers dark mode")

    _agent(store, [_call("manage_memory", id=memory_id, content="User prefers light mode", action="update")]
           ).invoke({"messages": [("user", "switch to light")]}, config=_config("alice"))
    assert store.get(("memories", "alice"), memory_id).value == {"content": "User prefers light mode"}

    _agent(store, [_call("manage_memory", id=memory_id, action="delete")]
           ).invoke({"messages": [("user", "forget it")]}, config=_config("alice"))
    assert store.get(("memories", "alice"), memory_id) is None
    assert store.search(("memories", "alice")) == []


async def test_langmem_tools_async(store_factory: Stores) -> None:
    store = MemkitStore(store_factory("alangmem"), embedder=HashEmbedder())
    await _agent(store, [_call("manage_memory", content="Works at Acme", action="create")]
                 ).ainvoke({"messages": [("user", "I work at Acme")]}, config=_config("carol"))
    found = await _agent(store, [_call("search_memory", query="employer")]
                         ).ainvoke({"messages": [("user", "where do I work?")]}, config=_config("carol"))
    [hit] = json.loads(_tool_outputs(found)[0])
    assert hit["value"] == {"content": "Works at Acme"}
    assert hit["namespace"] == ["memories", "carol"]
