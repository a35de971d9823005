"""A pydantic-ai agent with memkit's memory tools.

    pip install 'memkit-ai[local,pydantic-ai]'
    python examples/pydantic_ai_agent.py

Offline: the model is a SCRIPTED stand-in (pydantic-ai's FunctionModel) that saves a
memory, searches, and answers with what it found. For a real model, replace it with a
model name: ``Agent("openai:gpt-4o-mini", toolsets=[toolset])``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memkit import AsyncMemory
from memkit.integrations.pydantic_ai import memory_toolset


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """SCRIPTED: remember, then search, then answer from the search's result."""
    returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("add_memory", {"content": "Loves hiking in the Alps",
                                                                "infer": False})])
    if len(returns) == 1:
        return ModelResponse(parts=[ToolCallPart("search_memories", {"query": "hobbies"})])
    found = [r["memory"] for r in returns[-1].content["results"]]
    return ModelResponse(parts=[TextPart(f"I remember: {found}")])


async def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    async with AsyncMemory(config) as memory:
        agent = Agent(FunctionModel(scripted_model), toolsets=[memory_toolset(memory, user_id="alice")])
        result = await agent.run("I love hiking in the Alps. What do you know about my hobbies?")
        print(result.output)
        print("stored:", [m.memory for m in await memory.get_all(user_id="alice")])


if __name__ == "__main__":
    asyncio.run(main())
