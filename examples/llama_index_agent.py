"""A LlamaIndex agent with memkit as its long-term memory block and memkit's memory tools.

    pip install 'memkit-ai[local,llama-index]'
    python examples/llama_index_agent.py

Offline: the model is SCRIPTED (LlamaIndex's ``MockFunctionCallingLLM`` with a response
function that answers from the memory it was given), and the block stores messages
verbatim (``infer=False``). For a real model, use e.g. ``OpenAI(model="gpt-4o-mini")``
from ``llama-index-llms-openai`` and drop ``infer=False`` so that an LLM curates the facts.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory

from memkit import AsyncMemory
from memkit.integrations.llama_index import MemkitMemoryBlock, memory_tools


def scripted_answer(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """SCRIPTED: quote the memkit block that LlamaIndex put in the context."""
    context = "\n".join(m.content or "" for m in messages)
    remembered = context.split("<memkit>")[1].split("</memkit>")[0].strip() if "<memkit>" in context else ""
    return ChatMessage(role="assistant", content=f"From memory: {remembered}")


async def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    async with AsyncMemory(config) as store:
        memory = Memory.from_defaults(
            session_id="alice-1", token_limit=100, chat_history_token_ratio=0.2, token_flush_size=10,
            memory_blocks=[MemkitMemoryBlock(memory=store, user_id="alice", infer=False)])
        await memory.aput_messages([  # an earlier conversation; its oldest turns leave the
            ChatMessage(role="user", content="I'm vegetarian and allergic to peanuts."),  # chat
            ChatMessage(role="assistant", content="Got it, no meat and no peanuts."),  # history
            ChatMessage(role="user", content="Also, I cook for two people on weeknights."),
            ChatMessage(role="assistant", content="Noted: recipes for two."),
        ])
        stored = await store.get_all(user_id="alice")
        print("memkit holds:", sorted(m.memory for m in stored.results))

        agent = FunctionAgent(llm=MockFunctionCallingLLM(response_generator=scripted_answer),
                              tools=memory_tools(store, user_id="alice", names=["search_memories"]))
        answer = await agent.run("What can I cook for dinner with peanuts?", memory=memory)
        print("[ai]", answer)


if __name__ == "__main__":
    asyncio.run(main())
