"""A Google ADK agent whose memory service is memkit: one session is remembered, and the
next one finds it with ADK's ``load_memory`` tool.

    pip install 'memkit-ai[local,google-adk]'
    python examples/google_adk_agent.py

Offline: the model is SCRIPTED (a small ``BaseLlm`` that calls ``load_memory`` for a
question and answers with what it found), and the service stores messages verbatim
(``infer=False``). For a real model, give ``LlmAgent`` a model name such as
``"gemini-2.5-flash"`` (GOOGLE_API_KEY) and drop ``infer=False`` so that an LLM curates
the facts.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types

from memkit import AsyncMemory
from memkit.integrations.google_adk import MemkitMemoryService


class ScriptedModel(BaseLlm):
    """SCRIPTED: a question calls load_memory once, then the answer quotes the memories."""

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        found = [p.function_response.response for p in last if p.function_response]
        question = " ".join(p.text for p in last if p.text)
        if found:
            loaded = (found[0] or {})["result"]  # load_memory's LoadMemoryResponse
            memories = [entry.content.parts[0].text for entry in loaded.memories]
            reply = types.Part(text=f"From your memories: {memories}")
        elif question.endswith("?"):
            reply = types.Part(function_call=types.FunctionCall(name="load_memory", args={"query": question}))
        else:
            reply = types.Part(text="Noted.")
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


async def say(runner: Runner, session_id: str, text: str) -> str:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answer = ""
    async for event in runner.run_async(user_id="alice", session_id=session_id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            answer = event.content.parts[0].text or ""
    return answer


async def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    async with AsyncMemory(config) as memory:
        sessions = InMemorySessionService()
        agent = LlmAgent(name="assistant", model=ScriptedModel(model="scripted"), tools=[load_memory],
                         instruction="Answer using the user's memories.")
        runner = Runner(app_name="kitchen", agent=agent, session_service=sessions,
                        memory_service=MemkitMemoryService(memory, infer=False))

        first = await sessions.create_session(app_name="kitchen", user_id="alice")
        print("[1]", await say(runner, first.id, "I'm vegetarian and allergic to peanuts."))
        done = await sessions.get_session(app_name="kitchen", user_id="alice", session_id=first.id)
        assert done is not None
        await runner.memory_service.add_session_to_memory(done)  # type: ignore[union-attr]

        second = await sessions.create_session(app_name="kitchen", user_id="alice")
        print("[2]", await say(runner, second.id, "What should I cook tonight?"))
        stored = await memory.get_all(user_id="alice", agent_id="kitchen")
        print("stored:", sorted(m.memory for m in stored.results))


if __name__ == "__main__":
    asyncio.run(main())
