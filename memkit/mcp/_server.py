"""The MCP server: memkit's operations as tools an assistant can call."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import wraps
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memkit import AsyncMemory, MemkitError

P = ParamSpec("P")
T = TypeVar("T")

INSTRUCTIONS = """\
Long-term memory. Call search_memories before answering anything that may depend on what \
you were told earlier (preferences, facts about the user, past decisions); call add_memory \
when the user shares something worth remembering. Memories belong to a scope: user_id, \
agent_id and/or run_id. Leave them out to use this server's defaults."""

UserId = Annotated[str | None, Field(description="Whose memories (default: MEMKIT_USER_ID).")]
AgentId = Annotated[str | None, Field(description="Which agent's memories (default: "
                                                  "MEMKIT_AGENT_ID).")]
RunId = Annotated[str | None, Field(description="Which session's memories (default: "
                                                "MEMKIT_RUN_ID).")]
Filters = Annotated[dict[str, Any] | None, Field(description=(
    'Optional metadata/field filter, e.g. {"topic": "food"}, {"priority": {"gte": 2}}, '
    '{"OR": [{"topic": "food"}, {"topic": "travel"}]}. Operators: eq, ne, gt, gte, lt, lte, '
    "in, nin, contains, icontains; combinators AND, OR, NOT."))]
MemoryId = Annotated[str, Field(description="The memory's id, as returned by another tool.")]
AsOf = Annotated[str | None, Field(description=(
    "Optional ISO 8601 time: answer with what was valid then (past versions included) "
    "instead of now, e.g. \"2025-03-15\"."))]


class ChatMessage(BaseModel):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str


def default_scope() -> dict[str, str | None]:
    """The scope a tool uses for the fields its call leaves out."""
    return {f: os.environ.get(f"MEMKIT_{f.upper()}") or None
            for f in ("user_id", "agent_id", "run_id")}


def _tool_errors(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """memkit's errors reach the assistant as readable tool errors."""

    @wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except MemkitError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return call


def create_server(
    memory: AsyncMemory,
    *,
    defaults: dict[str, str | None] | None = None,
    close_memory: bool = False,
) -> MCPServer[Any]:
    """An MCP server with memkit's tools over ``memory``.

    ``defaults`` (default: ``MEMKIT_USER_ID`` / ``MEMKIT_AGENT_ID`` / ``MEMKIT_RUN_ID``)
    fill each scope field a call leaves out.
    """
    fallback = default_scope() if defaults is None else defaults

    def scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, Any]:
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return {f: given[f] or fallback.get(f) for f in given}

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_memory:
                await memory.aclose()

    server: MCPServer[Any] = MCPServer("memkit", instructions=INSTRUCTIONS, lifespan=lifespan)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)
    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    @_tool_errors
    async def add_memory(
        content: Annotated[str | list[ChatMessage], Field(description=(
            "What to remember: a sentence, or a conversation as a list of {role, content}."))],
        user_id: UserId = None,
        agent_id: AgentId = None,
        run_id: RunId = None,
        metadata: Annotated[dict[str, Any] | None, Field(
            description="Optional labels stored with the memory, e.g. {\"topic\": \"food\"}."
        )] = None,
        infer: Annotated[bool, Field(description=(
            "true: an LLM extracts facts and updates or removes contradicted memories. "
            "false: store the text verbatim, no LLM call."))] = True,
        dry_run: Annotated[bool, Field(description=(
            "true: only report what would change; nothing is stored."))] = False,
    ) -> dict[str, Any]:
        """Remember something about the user or the conversation. Returns what changed:
        one event per memory (ADD, UPDATE, DELETE or NONE) with its id."""
        messages: Any = content if isinstance(content, str) else [
            m.model_dump() for m in content]
        result = await memory.add(messages, **scope(user_id, agent_id, run_id),
                                  metadata=metadata, infer=infer, dry_run=dry_run)
        return result.model_dump(mode="json")

    @server.tool(annotations=read_only)
    @_tool_errors
    async def search_memories(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        user_id: UserId = None,
        agent_id: AgentId = None,
        run_id: RunId = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many at most.")] = 10,
        filters: Filters = None,
        threshold: Annotated[float | None, Field(
            ge=0, le=1, description="Drop results scoring below this (0..1).")] = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """Find the memories most relevant to a query, best first, each with a score.
        Searches what is true now, or what was true at ``as_of``."""
        result = await memory.search(query, **scope(user_id, agent_id, run_id), limit=limit,
                                     filters=filters, threshold=threshold, as_of=as_of)
        return result.model_dump(mode="json")

    @server.tool(annotations=read_only)
    @_tool_errors
    async def get_memory(memory_id: MemoryId) -> dict[str, Any]:
        """One memory by id: its text, metadata, scope and timestamps."""
        item = await memory.get(memory_id)
        if item is None:
            raise ToolError(f"no memory with id {memory_id!r}")
        return item.model_dump(mode="json")

    @server.tool(annotations=read_only)
    @_tool_errors
    async def list_memories(
        user_id: UserId = None,
        agent_id: AgentId = None,
        run_id: RunId = None,
        filters: Filters = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="How many at most.")] = 100,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """Every memory of a scope valid now (or at ``as_of``), newest first."""
        result = await memory.get_all(**scope(user_id, agent_id, run_id), filters=filters,
                                      limit=limit, as_of=as_of)
        return result.model_dump(mode="json")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=True))
    @_tool_errors
    async def update_memory(
        memory_id: MemoryId,
        text: Annotated[str, Field(min_length=1, description="The memory's new text.")],
        metadata: Annotated[dict[str, Any] | None, Field(
            description="Optional labels merged into the memory's metadata.")] = None,
    ) -> dict[str, Any]:
        """Replace a memory's text; it keeps its id and the old text stays as a past
        version (see memory_versions)."""
        item = await memory.update(memory_id, text, metadata=metadata)
        return item.model_dump(mode="json")

    @server.tool(annotations=destructive)
    @_tool_errors
    async def delete_memory(memory_id: MemoryId) -> dict[str, Any]:
        """Forget one memory: it is no longer returned (its history and past versions stay
        readable)."""
        await memory.delete(memory_id)
        return {"deleted": memory_id}

    @server.tool(annotations=destructive)
    @_tool_errors
    async def delete_all_memories(
        user_id: UserId = None,
        agent_id: AgentId = None,
        run_id: RunId = None,
        filters: Filters = None,
    ) -> dict[str, Any]:
        """Forget every memory of a scope (optionally only those matching filters).
        Returns how many were deleted, and their ids."""
        deleted = await memory.delete_all(**scope(user_id, agent_id, run_id), filters=filters)
        return {"deleted": deleted.count, "ids": [e.id for e in deleted.results]}

    @server.tool(annotations=read_only)
    @_tool_errors
    async def memory_history(memory_id: MemoryId) -> dict[str, Any]:
        """Every change to one memory, oldest first: ADD, UPDATE (old and new text), DELETE."""
        rows = await memory.history(memory_id)
        return {"results": [r.model_dump(mode="json") for r in rows]}

    @server.tool(annotations=read_only)
    @_tool_errors
    async def memory_versions(memory_id: MemoryId) -> dict[str, Any]:
        """The versions of a memory, oldest first, each with when it was valid
        (valid_from, valid_to) and the version it replaced (supersedes)."""
        chain = await memory.versions(memory_id)
        if not chain:
            raise ToolError(f"no memory with id {memory_id!r}")
        return {"results": [v.model_dump(mode="json") for v in chain]}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    @_tool_errors
    async def memory_supersede(
        memory_id: MemoryId,
        text: Annotated[str, Field(min_length=1, description="The text that replaces it.")],
    ) -> dict[str, Any]:
        """Replace an outdated memory by a new one (a new id); the old one stays as a past
        version. A memory that was already superseded cannot be superseded again."""
        item = await memory.supersede(memory_id, text)
        return item.model_dump(mode="json")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    @_tool_errors
    async def memory_revert(
        event_id: Annotated[str, Field(description="The id of an event from memory_history.")],
    ) -> dict[str, Any]:
        """Undo one change (an ADD, UPDATE or DELETE event of memory_history). Returns the
        event that records the undoing; an event can be reverted once."""
        undo = await memory.revert(event_id)
        return undo.model_dump(mode="json")

    return server
