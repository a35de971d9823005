"""A LangGraph agent with memkit: memory tools for the model, and memkit as the graph's store.

    pip install 'memkit-ai[local,langgraph]'
    python examples/langgraph_agent.py

Offline: the chat model is a SCRIPTED stand-in (LangChain's fake chat model) that
calls ``search_memories`` and then answers. To use a real model, replace it with one
that has the tools bound, e.g. ``ChatOpenAI(model="gpt-4o-mini").bind_tools(tools)``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.base import BaseStore

from memkit import Memory
from memkit.integrations.langgraph import MemkitStore, memory_tools
from memkit.stores.sqlite import SQLiteStore


def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    with Memory.from_config(config) as memory:
        memory.add("I'm vegetarian and allergic to peanuts.", user_id="alice", infer=False)

        # The graph's store (LangGraph's BaseStore) kept by memkit, here in its own SQLite file.
        store = MemkitStore(SQLiteStore(path=str(folder / "langgraph-store.db")), index={"fields": ["text"]})
        store.put(("alice", "preferences"), "ui", {"text": "Prefers dark mode"})

        # SCRIPTED model: first a tool call, then the answer.
        model = GenericFakeChatModel(messages=iter([
            AIMessage("", tool_calls=[{"name": "search_memories", "args": {"query": "diet"}, "id": "call-1"}]),
            AIMessage("You're vegetarian and allergic to peanuts, so: a chickpea curry, no peanuts."),
        ]))
        tools = memory_tools(memory, user_id="alice")  # alice's memories only

        def call_model(state: MessagesState, *, store: BaseStore) -> dict[str, list[object]]:
            profile = [item.value["text"] for item in store.search(("alice", "preferences"))]
            return {"messages": [model.invoke([SystemMessage(f"Profile: {profile}"), *state["messages"]])]}

        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", ToolNode(tools))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", tools_condition)
        builder.add_edge("tools", "model")
        graph = builder.compile(store=store)
        result = graph.invoke({"messages": [("user", "What should I cook tonight?")]})

        for message in result["messages"]:
            print(f"[{message.type}] {str(message.content)[:160]}")
        print("\nstore search:", [(item.key, item.value["text"]) for item in store.search(("alice",), query="theme")])


if __name__ == "__main__":
    main()
