"""The MCP server: memkit's operations as tools an assistant can call."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from memkit import AsyncMemory, MemkitError
from memkit.tools import MemoryTools, ToolSpec

INSTRUCTIONS = """\
Long-term memory. Call search_memories before answering anything that may depend on what \
you were told earlier (preferences, facts about the user, past decisions); call add_memory \
when the user shares something worth remembering. Memories belong to a scope: user_id, \
agent_id and/or run_id. Leave them out to use this server's defaults."""

def default_scope() -> dict[str, str | None]:
    """The scope a tool uses for the fields its call leaves out."""
    return {f: os.environ.get(f"MEMKIT_{f.upper()}") or None
            for f in ("user_id", "agent_id", "run_id")}


def _mcp_tool(spec: ToolSpec, tools: MemoryTools) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The tool as a function with a typed signature, from which MCP derives its schema."""

    async def call(**arguments: Any) -> dict[str, Any]:
        try:
            return await tools.acall(spec.name, arguments)
        except MemkitError as exc:  # memkit's errors reach the assistant as readable tool errors
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    call.__signature__ = spec.signature()  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = spec.name
    call.__doc__ = spec.description
    return call


def create_server(
    memory: AsyncMemory,
    *,
    defaults: dict[str, str | None] | None = None,
    close_memory: bool = False,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer[Any]:
    """An MCP server with memkit's tools (``memkit.tools.TOOLS``; the graph tools when
    ``memory`` has a graph store) over ``memory``.

    ``defaults`` (default: ``MEMKIT_USER_ID`` / ``MEMKIT_AGENT_ID`` / ``MEMKIT_RUN_ID``)
    fill each scope field a call leaves out. ``log_level``: the server's and libraries'
    logging on stderr (WARNING keeps a client's log free of per-request lines).
    """
    fallback = default_scope() if defaults is None else defaults
    tools = MemoryTools(memory, user_id=fallback.get("user_id"), agent_id=fallback.get("agent_id"),
                        run_id=fallback.get("run_id"), fixed=False)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_memory:
                await memory.aclose()

    server: MCPServer[Any] = MCPServer("memkit", instructions=INSTRUCTIONS, lifespan=lifespan,
                                          log_level=log_level)
    for spec in tools.specs:
        annotations = ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                      idempotent_hint=True if spec.idempotent else None)
        server.add_tool(_mcp_tool(spec, tools), name=spec.name, description=spec.description,
                        annotations=annotations)
    return server
