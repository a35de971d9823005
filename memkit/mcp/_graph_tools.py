"""The graph tools of the MCP server, registered when the memory has a graph store."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memkit import AsyncMemory, MemkitError

P = ParamSpec("P")
T = TypeVar("T")
UserId = Annotated[str | None, Field(description="Whose graph (default: MEMKIT_USER_ID).")]
AgentId = Annotated[str | None, Field(description="Which agent's graph (default: MEMKIT_AGENT_ID).")]
RunId = Annotated[str | None, Field(description="Which session's graph (default: MEMKIT_RUN_ID).")]


class EntityIn(BaseModel):
    name: str
    type: str | None = None
    summary: str | None = None


class RelationIn(BaseModel):
    source: str
    relation: str = Field(description="A verb phrase, e.g. works_at.")
    target: str


def wrap(tool: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """memkit's errors reach the assistant as readable tool errors."""

    @functools.wraps(tool)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await tool(*args, **kwargs)
        except MemkitError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return call


def add_graph_tools(server: MCPServer[Any], memory: AsyncMemory,
                    defaults: dict[str, str | None]) -> None:
    """Register create_entities, create_relations, delete_entities, delete_relations,
    get_entity_graph and search_entities; ``defaults`` fill the scope fields a call leaves out."""

    def scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, Any]:
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return {f: v if v is not None else defaults.get(f) for f, v in given.items()}

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False)
    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True)

    @server.tool(annotations=writes)
    @wrap
    async def create_entities(entities: list[EntityIn], user_id: UserId = None,
                              agent_id: AgentId = None, run_id: RunId = None) -> dict[str, Any]:
        """Create entities (people, places, things) or update their type and summary."""
        ids = scope(user_id, agent_id, run_id)
        made = [await memory.add_entity(e.name, type=e.type, summary=e.summary, **ids)
                for e in entities]
        return {"results": [e.model_dump(mode="json") for e in made]}

    @server.tool(annotations=writes)
    @wrap
    async def create_relations(relations: list[RelationIn], user_id: UserId = None,
                               agent_id: AgentId = None, run_id: RunId = None) -> dict[str, Any]:
        """Record relations source -[relation]-> target; a known one gains weight."""
        ids = scope(user_id, agent_id, run_id)
        made = [await memory.add_relation(r.source, r.relation, r.target, **ids)
                for r in relations]
        return {"results": [r.model_dump(mode="json") for r in made]}

    @server.tool(annotations=destructive)
    @wrap
    async def delete_entities(names: list[str], user_id: UserId = None,
                              agent_id: AgentId = None, run_id: RunId = None) -> dict[str, Any]:
        """Delete entities and their relations; the memories stay."""
        ids = scope(user_id, agent_id, run_id)
        deleted = [n for n in names if await memory.delete_entity(n, **ids)]
        return {"deleted": len(deleted), "names": deleted}

    @server.tool(annotations=destructive)
    @wrap
    async def delete_relations(relations: list[RelationIn], user_id: UserId = None,
                               agent_id: AgentId = None, run_id: RunId = None) -> dict[str, Any]:
        """Delete relations (open and closed)."""
        ids = scope(user_id, agent_id, run_id)
        count = 0
        for r in relations:
            count += await memory.delete_relation(r.source, r.relation, r.target, **ids)
        return {"deleted": count}

    @server.tool(annotations=read_only)
    @wrap
    async def get_entity_graph(
        name: str, depth: Annotated[int, Field(ge=0, le=3)] = 1, user_id: UserId = None,
        agent_id: AgentId = None, run_id: RunId = None,
    ) -> dict[str, Any]:
        """The entities within ``depth`` relations of ``name`` and the relations among them."""
        found = await memory.get_entity_graph(name, depth=depth, **scope(user_id, agent_id, run_id))
        return found.model_dump(mode="json")

    @server.tool(annotations=read_only)
    @wrap
    async def search_entities(
        query: Annotated[str, Field(description="Text naming entities, e.g. a question.")],
        type: str | None = None, user_id: UserId = None, agent_id: AgentId = None,
        run_id: RunId = None,
    ) -> dict[str, Any]:
        """Entities of the scope named in ``query`` (or all of ``type`` when ``query`` is
        empty), with their relations."""
        ids = scope(user_id, agent_id, run_id)
        if not query.strip():
            entities = await memory.get_entities(type=type, **ids)
            return {"entities": [e.model_dump(mode="json") for e in entities], "relations": []}
        found = await memory.search(query, limit=1, graph=True, **ids)
        names = sorted({n for r in found.relations for n in (r.source, r.target)})
        entities = [e for e in [await memory.get_entity(n, **ids) for n in names]
                    if e is not None and (type is None or e.type == type)]
        return {"entities": [e.model_dump(mode="json") for e in entities],
                "relations": [r.model_dump(mode="json") for r in found.relations]}
