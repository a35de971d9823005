"""An AutoGen agent whose memory is memkit: relevant memories enter the model's context
before each call, and the model has memkit's memory tools.

    pip install 'memkit-ai[local,autogen]' autogen-ext
    python examples/autogen_agent.py

Offline: the model is SCRIPTED (AutoGen's ``ReplayChatCompletionClient`` replays a tool
call and an answer). For a real model, use e.g. ``OpenAIChatCompletionClient(model=...)``
from ``autogen_ext.models.openai`` with OPENAI_API_KEY.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage, ToolCallExecutionEvent
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelInfo, RequestUsage, SystemMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from memkit import AsyncMemory
from memkit.integrations.autogen import MemkitMemory, memory_tools


async def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    async with AsyncMemory(config) as memory:
        await memory.add("I'm vegetarian and allergic to peanuts.", user_id="alice", infer=False)
        search = FunctionCall(id="call-1", name="search_memories", arguments=json.dumps({"query": "allergies"}))
        model = ReplayChatCompletionClient([  # SCRIPTED: one tool call, then the answer
            CreateResult(finish_reason="function_calls", content=[search], cached=False,
                         usage=RequestUsage(prompt_tokens=0, completion_tokens=0)),
            "A vegetable curry, without peanuts.",
        ], model_info=ModelInfo(vision=False, function_calling=True, json_output=False,
                                family="unknown", structured_output=False))
        agent = AssistantAgent(
            "assistant", model_client=model, reflect_on_tool_use=True,
            memory=[MemkitMemory(memory, user_id="alice")],  # memories enter the context
            tools=memory_tools(memory, user_id="alice", names=["search_memories", "add_memory"]),
        )
        result = await agent.run(task="What should I cook tonight?")
        seen = [m.content for m in model.create_calls[0]["messages"] if isinstance(m, SystemMessage)]
        print("[context]", seen[-1].replace("\n", " | "))
        for message in result.messages:
            if isinstance(message, MemoryQueryEvent):
                print("[memory]", [c.content for c in message.content])
            elif isinstance(message, ToolCallExecutionEvent):
                print("[tool]", message.content[0].content)
            elif isinstance(message, TextMessage) and message.source == "assistant":
                print("[ai]", message.content)


if __name__ == "__main__":
    asyncio.run(main())
