"""An OpenAI Agents SDK agent with memkit's memory tools.

    pip install 'memkit-ai[local,openai-agents]'
    python examples/openai_agents_sdk.py

Offline: the model is a SCRIPTED stand-in (a small ``agents.Model``) that searches
the memory and answers with what it found. For a real model, drop ``model=``:
``Agent(name="assistant", tools=tools)`` uses OpenAI with OPENAI_API_KEY.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from memkit import AsyncMemory
from memkit.integrations.openai_agents import memory_function_tools


class ScriptedModel(Model):
    """SCRIPTED: call search_memories once, then answer with its result."""

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:
        outputs = [item["output"] for item in input if isinstance(item, dict)
                   and item.get("type") == "function_call_output"]
        if not outputs:
            call = ResponseFunctionToolCall(type="function_call", call_id="call-1", name="search_memories",
                                            arguments=json.dumps({"query": "allergies"}))
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        found = [r["memory"] for r in json.loads(outputs[-1])["results"]]
        text = ResponseOutputText(type="output_text", text=f"Careful: {found}", annotations=[])
        message = ResponseOutputMessage(id="msg-1", type="message", role="assistant", status="completed",
                                        content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this scripted model does not stream")


async def main() -> None:
    set_tracing_disabled(True)  # the SDK would otherwise upload traces
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    async with AsyncMemory(config) as memory:
        await memory.add("I'm allergic to peanuts and shellfish.", user_id="alice", infer=False)
        agent = Agent(name="assistant", instructions="Check the user's memories before answering.",
                      model=ScriptedModel(), tools=memory_function_tools(memory, user_id="alice"))
        result = await Runner.run(agent, "Can I order the pad thai?")
        print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
