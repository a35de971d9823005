"""What the CrewAI tests check, run inside the CrewAI virtualenv (``environment.py``):
``python -m tests.integrations.crewai.scenarios`` prints one JSON object, a result per scenario, and
``test_crewai.py`` asserts on it. One process for all of them: importing CrewAI takes
seconds. Models are scripted: memkit's ScriptedLLM, and for CrewAI's agent an
OpenAI-compatible server on 127.0.0.1 that answers from a script and keeps what it was sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from crewai import LLM, Agent, Crew, Task
from crewai.memory.unified_memory import Memory as CrewMemory
from crewai.tools import BaseTool
from crewai.tools.memory_tools import create_memory_tools

from memkit import AsyncMemory, Memory
from memkit.integrations.crewai import MemkitMemory, memory_tools
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM

SCENARIOS: dict[str, Callable[[], Any]] = {}


def scenario(function: Callable[[], Any]) -> Callable[[], Any]:
    SCENARIOS[function.__name__] = function
    return function


def _memory(llm: ScriptedLLM | None = None) -> Memory:
    return Memory(llm=llm or ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())


@scenario
def interface() -> dict[str, Any]:
    """MemkitMemory is CrewAI's Memory where a crew and an agent take one; CrewAI's own
    memory tools and memkit's tools work on it."""
    with _memory() as memory:
        crew_memory = MemkitMemory(memory, user_id="alice", infer=False)
        agent = Agent(role="Chef", goal="Cook", backstory="Cooks", llm=LLM(model="gpt-4o-mini", api_key="x"),
                      memory=crew_memory)
        crew = Crew(agents=[agent], tasks=[Task(description="Cook", expected_output="A dish", agent=agent)],
                    memory=crew_memory)
        recall_tool, remember_tool = create_memory_tools(crew_memory)
        saved = remember_tool.run(contents=["Alice is vegetarian"])
        found = recall_tool.run(queries=["vegetarian"])
        tools = memory_tools(memory, user_id="alice", names=["add_memory", "search_memories", "get_memory"])
        added = json.loads(tools[0].run(content="Alice lives in Porto", infer=False))
        searched = json.loads(tools[1].run(query="Porto"))
        bob = memory.add("Bob likes jazz", user_id="bob", infer=False).results[0].id
        wrong = tools[2].run(memory_id=bob)  # another scope's memory is as good as absent
        read_only = MemkitMemory(memory, user_id="carol", read_only=True)
        copied = crew.copy()
        try:
            MemkitMemory(AsyncMemory(embedder=HashEmbedder(), vector_store=InMemoryStore()), user_id="alice")
            refused = ""
        except TypeError as exc:
            refused = str(exc)
        return {
            "is_crewai_memory": isinstance(crew_memory, CrewMemory),
            "crew_keeps_it": crew._memory is crew_memory and crew.memory is crew_memory,
            "agent_keeps_it": agent.memory is crew_memory,
            "crewai_tool_saved": saved, "crewai_tool_found": found,
            "memkit_holds": [m.memory for m in memory.get_all(user_id="alice").results],
            "tools_are_crewai_tools": all(isinstance(t, BaseTool) for t in tools),
            "tool_parameters": sorted(tools[1].args_schema.model_json_schema()["properties"]),
            "added": added["results"][0]["event"], "searched": searched["results"][0]["memory"],
            "wrong_call": wrong, "async_refused": refused,
            "read_only_saved": [read_only.remember("Carol likes tea"), read_only.remember_many(["Carol sings"])],
            "carol_holds": len(memory.get_all(user_id="carol").results),
            "copy_keeps_crew_memory": copied.memory is crew_memory,
        }


@scenario
def async_tools() -> str:
    """memkit's tools over an AsyncMemory, on CrewAI's async tool path."""
    async def run() -> str:
        async with AsyncMemory(embedder=HashEmbedder(), vector_store=InMemoryStore()) as memory:
            await memory.add("Alice is vegetarian", user_id="alice", infer=False)
            search = memory_tools(memory, user_id="alice", names=["search_memories"])[0]
            found: str = await search.arun(query="vegetarian")
            return json.loads(found)["results"][0]["memory"]

    return asyncio.run(run())


@scenario
def scopes() -> dict[str, Any]:
    """CrewAI's scope paths, categories, privacy and record operations, within one memkit scope."""
    with _memory() as memory:
        memory.add("Bob likes jazz", user_id="bob", infer=False)
        crew_memory = MemkitMemory(memory, user_id="alice", infer=False, root_scope="/crew/kitchen")
        diet = crew_memory.remember("Alice is vegetarian", scope="/diet", categories=["food"])
        assert diet is not None
        crew_memory.remember("Alice cooks risotto", scope="/diet/recipes", categories=["food", "recipe"])
        crew_memory.remember("Alice's door code is 1234", scope="/home", source="alice", private=True)
        project = crew_memory.scope("/project")
        project.remember("The menu is due Friday", metadata={"owner": "chef"})
        elsewhere = MemkitMemory(memory, user_id="alice", infer=False)
        elsewhere.remember("Alice travels in May", scope="/travel")

        def recalled(**kwargs: Any) -> list[str]:
            return sorted(m.record.content for m in crew_memory.recall("Alice", **kwargs))

        record = crew_memory.list_records(limit=1)[0]
        updated = crew_memory.update(record.id, content="The menu is due Monday", categories=["deadline"])
        result = {
            "records": sorted(r.content for r in crew_memory.list_records()),
            "newest": record.content, "newest_scope": record.scope, "newest_metadata": record.metadata,
            "updated": [updated.content, updated.scope, updated.categories],
            "history": [h.event for h in memory.history(record.id)],
            "scopes": crew_memory.list_scopes(), "root_scopes": elsewhere.list_scopes(),
            "info": crew_memory.info("/diet").model_dump(include={"path", "record_count", "categories",
                                                                   "child_scopes"}),
            "categories": crew_memory.list_categories(),
            "tree": crew_memory.tree(),
            "recall_all": recalled(),
            "recall_diet": recalled(scope="/diet"),
            "recall_recipe": recalled(categories=["recipe"]),
            "recall_as_alice": recalled(source="alice"),
            "recall_private": recalled(include_private=True),
            "project_recall": [m.record.content for m in project.recall("menu")],
            "forget_recipe": crew_memory.forget(categories=["recipe"]),
            "forget_older": crew_memory.forget(older_than=datetime.utcnow() - timedelta(days=1)),
            "forget_owner": crew_memory.forget(metadata_filter={"owner": "chef"}),
            "forget_id_elsewhere": crew_memory.forget(record_ids=[diet.id], scope="/home"),
            "forget_id": crew_memory.forget(record_ids=[diet.id]),
            "forget_home": crew_memory.forget(scope="/home", older_than=datetime.utcnow() + timedelta(minutes=1)),
            "left": sorted(r.content for r in crew_memory.list_records()),
        }
        crew_memory.reset()
        result["after_reset"] = sorted(m.memory for m in memory.get_all(user_id="alice").results)
        result["bob"] = [m.memory for m in memory.get_all(user_id="bob").results]
        return result


@scenario
def pipeline() -> dict[str, Any]:
    """With infer=True, what CrewAI remembers goes through memkit's extraction and decisions."""
    llm = ScriptedLLM([
        {"facts": ["Lives in Porto"]},
        {"facts": ["Lives in Lisbon"]}, {"memory": [{"event": "UPDATE", "id": "0", "text": "Lives in Lisbon"}]},
    ])
    with _memory(llm) as memory:
        crew_memory = MemkitMemory(memory, user_id="alice")
        first = crew_memory.remember("I live in Porto", scope="/home")
        moved = crew_memory.remember("I moved to Lisbon", scope="/home")
        assert first is not None and moved is not None
        return {
            "extracted": crew_memory.extract_memories("Task: ... Result: ..."),
            "same_id": first.id == moved.id, "moved": [moved.content, moved.scope],
            "history": [h.event for h in memory.history(first.id)],
            "llm_calls": len(llm.calls),
        }


@scenario
def docs() -> int:
    """The ``py`` blocks of docs/integrations.md (CrewAI's; tests/test_docs.py runs the
    ``python`` blocks in the development virtualenv, which has no CrewAI) run as written."""
    page = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"
    blocks = re.findall(r"```py\n(.*?)```", page.read_text(), re.DOTALL)
    for index, block in enumerate(blocks):
        exec(compile(block, f"integrations.md[py block {index}]", "exec"), {"__name__": "docs_crewai"})
    return len(blocks)


class _ScriptedOpenAI:
    """POST /v1/chat/completions answered from a script; every request body is kept."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies, self.requests = replies, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                message = server.replies.pop(0) if server.replies else {"content": "(script ended)"}
                body = json.dumps({
                    "id": "scripted", "object": "chat.completion", "created": 0, "model": "scripted",
                    "choices": [{"index": 0, "message": {"role": "assistant", **message},
                                 "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"id": "call-1", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(arguments)}}]}


@scenario
def crew_run() -> dict[str, Any]:
    """Two kickoffs of a crew on memkit: the first task's result is saved, the second
    task's prompt carries it, and the agent's memkit search tool finds it."""
    model = _ScriptedOpenAI([
        {"content": "Alice is vegetarian and allergic to peanuts."},
        _tool_call("search_memories", {"query": "peanuts"}),
        {"content": "A vegetable curry without peanuts."},
    ])
    with _memory() as memory:
        chef = Agent(role="Chef", goal="Plan meals Alice can eat", backstory="Cooks for Alice.",
                     llm=LLM(model="openai/gpt-4o-mini", base_url=model.url, api_key="offline"),
                     tools=memory_tools(memory, user_id="alice", agent_id="chef", names=["search_memories"]))

        def kickoff(task: str) -> str:
            crew = Crew(agents=[chef], tasks=[Task(description=task, expected_output="A short answer", agent=chef)],
                        memory=MemkitMemory(memory, user_id="alice", agent_id="chef", infer=False))
            return crew.kickoff().raw

        first = kickoff("Note Alice's diet.")
        held = [m.memory for m in memory.get_all(user_id="alice", agent_id="chef").results]
        second = kickoff("What should Alice eat tonight?")
        http = model.http
        http.shutdown()
        return {
            "answers": [first, second], "held": held,
            "prompts": [json.dumps(request["messages"]) for request in model.requests],
            "tools_offered": [sorted(t["function"]["name"] for t in request.get("tools", []))
                              for request in model.requests],
            "held_after": len(memory.get_all(user_id="alice", agent_id="chef").results),
        }


if __name__ == "__main__":
    print(json.dumps({name: run() for name, run in SCENARIOS.items()}, default=str))
