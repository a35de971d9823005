"""Google ADK: ``MemkitMemoryService`` as ADK's ``BaseMemoryService``, driven by a real
``Runner`` and ADK's ``load_memory`` tool (the example), and memkit's tools as ADK tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

pytest.importorskip("google.adk.memory", reason="pip install 'memkit-ai[google-adk]'")

from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types

from memkit import AsyncMemory, Memory, NotFoundError
from memkit.integrations.google_adk import MemkitMemoryService, memory_tools
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.integrations._examples import run_example


def _event(author: str, text: str) -> Event:
    return Event(author=author, content=types.Content(role="user" if author == "user" else "model",
                                                      parts=[types.Part(text=text)]))


def _session(events: list[Event], *, user_id: str = "alice", app_name: str = "kitchen") -> Session:
    return Session(id="s1", app_name=app_name, user_id=user_id, events=events)


def _texts(response: object) -> list[str]:
    return [entry.content.parts[0].text for entry in response.memories]  # type: ignore[attr-defined]


def test_example_remembers_a_session_and_finds_it_in_the_next(tmp_path: Path) -> None:
    out = run_example("google_adk_agent.py", tmp_path)
    assert "[1] Noted." in out
    assert "[2] From your memories: [\"I'm vegetarian and allergic to peanuts.\"" in out


async def test_it_is_adks_memory_service_and_keeps_users_and_apps_apart() -> None:
    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        service = MemkitMemoryService(memory, infer=False, limit=5)
        assert isinstance(service, BaseMemoryService)
        session = _session([_event("user", "I'm allergic to peanuts"), _event("assistant", "Noted"),
                            Event(author="user")])  # an event without content is skipped
        await service.add_session_to_memory(session)
        await service.add_session_to_memory(session)  # ADK may add a session again: no duplicates
        stored = await memory.get_all(user_id="alice", agent_id="kitchen")
        assert sorted(m.memory for m in stored.results) == ["I'm allergic to peanuts", "Noted"]
        assert {m.metadata["session_id"] for m in stored.results} == {"s1"}

        found = await service.search_memory(app_name="kitchen", user_id="alice", query="peanuts")
        assert _texts(found)[0] == "I'm allergic to peanuts"
        entry = found.memories[0]
        assert entry.id and entry.timestamp and entry.custom_metadata["score"] > 0
        assert (await service.search_memory(app_name="kitchen", user_id="bob", query="peanuts")).memories == []
        assert (await service.search_memory(app_name="travel", user_id="alice", query="peanuts")).memories == []

        with pytest.raises(NotFoundError):  # another app's user cannot delete it
            await service.delete_memory(app_name="travel", user_id="alice", memory_id=entry.id)
        await service.delete_memory(app_name="kitchen", user_id="alice", memory_id=entry.id)
        assert "I'm allergic to peanuts" not in _texts(
            await service.search_memory(app_name="kitchen", user_id="alice", query="peanuts"))


async def test_events_and_explicit_memories() -> None:
    llm = ScriptedLLM([{"facts": ["Lives in Porto"]}])
    with Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        service = MemkitMemoryService(memory)  # infer=True: memkit's LLM curates the facts
        await service.add_events_to_memory(app_name="travel", user_id="alice", session_id="s2",
                                           events=[_event("user", "I live in Porto now")],
                                           custom_metadata={"channel": "chat"})
        await service.add_memory(app_name="travel", user_id="alice", custom_metadata={"source": "crm"},
                                 memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="Gold member")]),
                                                       author="crm", custom_metadata={"tier": "gold"})])
        stored = {m.memory: m.metadata for m in memory.get_all(user_id="alice", agent_id="travel").results}
        assert stored["Lives in Porto"] == {"channel": "chat", "session_id": "s2"}
        assert stored["Gold member"] == {"source": "crm", "tier": "gold", "author": "crm", "role": "user"}
        entry = (await service.search_memory(app_name="travel", user_id="alice", query="Gold member")).memories[0]
        assert entry.author == "crm"


async def test_tools_are_declared_with_memkits_schema_and_fix_the_scope() -> None:
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        bob = memory.add("Bob's secret", user_id="bob", infer=False).results[0].id
        tools = {t.name: t for t in memory_tools(memory, user_id="alice")}
        declaration = tools["search_memories"]._get_declaration()
        assert declaration.parameters_json_schema["required"] == ["query"]
        assert "user_id" not in declaration.parameters_json_schema["properties"]
        added = await tools["add_memory"].run_async(args={"content": "likes tea", "infer": False},
                                                     tool_context=None)  # type: ignore[arg-type]
        assert added["results"][0]["event"] == "ADD"
        refused = await tools["get_memory"].run_async(args={"memory_id": bob}, tool_context=None)  # type: ignore[arg-type]
        assert refused == {"error": f"error: NotFoundError: no memory with id {bob!r}"}


class _CallsAddMemory(BaseLlm):
    """A scripted model: calls add_memory once, then says what the tool returned."""

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        declared = [d.name for tool in llm_request.config.tools or [] for d in tool.function_declarations or []]
        assert "add_memory" in declared
        last = llm_request.contents[-1].parts or []
        done = [p.function_response.response for p in last if p.function_response]
        part = (types.Part(text=str(done[0])) if done else
                types.Part(function_call=types.FunctionCall(name="add_memory",
                                                            args={"content": "Likes tea", "infer": False})))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def test_tools_without_a_scope_take_the_invocations_user_and_app() -> None:
    async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
        tools = memory_tools(memory, names=["add_memory", "search_memories"])
        properties = tools[0]._get_declaration().parameters_json_schema["properties"]
        assert not {"user_id", "agent_id", "run_id"} & set(properties)
        sessions = InMemorySessionService()
        runner = Runner(app_name="kitchen", session_service=sessions,
                        agent=LlmAgent(name="assistant", model=_CallsAddMemory(model="scripted"), tools=tools))
        session = await sessions.create_session(app_name="kitchen", user_id="carol")
        message = types.Content(role="user", parts=[types.Part(text="remember that I like tea")])
        async for _ in runner.run_async(user_id="carol", session_id=session.id, new_message=message):
            pass
        stored = (await memory.get_all(user_id="carol", agent_id="kitchen")).results
        assert [m.memory for m in stored] == ["Likes tea"]
        found = await MemkitMemoryService(memory).search_memory(app_name="kitchen", user_id="carol", query="tea")
        assert _texts(found) == ["Likes tea"]
