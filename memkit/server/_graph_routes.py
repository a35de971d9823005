"""The graph endpoints, ``/v1/entities/...``: bound to the API key's scope like memories."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from memkit import EntityGraph, GraphEntity, GraphRelation, MemoryItem, NotFoundError
from memkit.server._auth import scope_for
from memkit.server._errors import ERROR_RESPONSES
from memkit.server._routes import Auth, Mem
from memkit.server._schemas import Deleted, RequestBody

graph_router = APIRouter(prefix="/v1/entities", responses=ERROR_RESPONSES, tags=["graph"])
Id = Annotated[str | None, Query(min_length=1)]


class RelationBody(RequestBody):
    relation: str = Field(min_length=1)
    target: str = Field(min_length=1)
    source_type: str | None = None
    target_type: str | None = None
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)


class EntityBody(RequestBody):
    type: str | None = Field(None, min_length=1, description='e.g. "person"; a known type '
                             'replaces "unknown".')
    summary: str | None = None
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)


class NewEntityBody(EntityBody):
    name: str = Field(min_length=1)


@graph_router.post("/", response_model=GraphEntity, summary="Create (or update) an entity")
async def create_entity(body: NewEntityBody, grant: Auth, mem: Mem) -> GraphEntity:
    """A new entity is an ``entity_created`` event."""
    scope = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
    return await mem.add_entity(body.name, type=body.type, summary=body.summary, **scope)


@graph_router.put("/{name}/", response_model=GraphEntity, summary="Update (or create) an entity")
async def update_entity(name: str, body: EntityBody, grant: Auth, mem: Mem) -> GraphEntity:
    """A ``type`` replaces "unknown", a ``summary`` the old one."""
    scope = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
    return await mem.add_entity(name, type=body.type, summary=body.summary, **scope)


@graph_router.get("/", response_model=list[GraphEntity], summary="List a scope's entities")
async def list_entities(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                        run_id: Id = None, type: str | None = None,
                        limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[GraphEntity]:
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await mem.get_entities(**scope, type=type, limit=limit)


@graph_router.get("/{name}/", response_model=GraphEntity, summary="Get an entity")
async def get_entity(name: str, grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                     run_id: Id = None) -> GraphEntity:
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    entity = await mem.get_entity(name, **scope)
    if entity is None:
        raise NotFoundError(f"no entity called {name!r} in this scope")
    return entity


@graph_router.delete("/{name}/", response_model=Deleted,
                     summary="Delete an entity and its relations (the memories stay)")
async def delete_entity(name: str, grant: Auth, mem: Mem, user_id: Id = None,
                        agent_id: Id = None, run_id: Id = None) -> Deleted:
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return Deleted(deleted=int(await mem.delete_entity(name, **scope)))


@graph_router.get("/{name}/relations/", response_model=EntityGraph,
                  summary="The entity's neighbourhood")
async def entity_graph(name: str, grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                       run_id: Id = None,
                       depth: Annotated[int, Query(ge=0, le=3)] = 1,
                       include_closed: Annotated[bool, Query(
                           description="Also the closed relations touching these entities")]
                       = False,
                       include_memories: Annotated[bool, Query(
                           description="Also the memories the relations came from")] = False,
                       ) -> EntityGraph:
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await mem.get_entity_graph(name, **scope, depth=depth, include_closed=include_closed,
                                      include_memories=include_memories)


@graph_router.get("/{name}/memories/", response_model=list[MemoryItem],
                  summary="The memories about an entity")
async def entity_memories(name: str, grant: Auth, mem: Mem, user_id: Id = None,
                          agent_id: Id = None, run_id: Id = None) -> list[MemoryItem]:
    """The current memories behind the entity's open relations (404 for an unknown entity)."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    graph = await mem.get_entity_graph(name, **scope, depth=1, include_memories=True)
    if not graph.entities:
        raise NotFoundError(f"no entity called {name!r} in this scope")
    return graph.memories


@graph_router.post("/{name}/relations/", response_model=GraphRelation,
                   summary="Add a relation from the entity")
async def add_relation(name: str, body: RelationBody, grant: Auth,
                       mem: Mem) -> GraphRelation:
    """Missing entities are created (each an ``entity_created`` event)."""
    scope = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
    return await mem.add_relation(name, body.relation, body.target, **scope,
                                  source_type=body.source_type, target_type=body.target_type)


@graph_router.delete("/{name}/relations/", response_model=Deleted,
                     summary="Delete a relation from the entity")
async def delete_relation(name: str, relation: str, target: str, grant: Auth, mem: Mem,
                          user_id: Id = None, agent_id: Id = None, run_id: Id = None) -> Deleted:
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return Deleted(deleted=await mem.delete_relation(name, relation, target, **scope))


relations_router = APIRouter(prefix="/v1/relations", responses=ERROR_RESPONSES, tags=["graph"])


@relations_router.get("/", response_model=list[GraphRelation],
                      summary="List a scope's open relations")
async def list_relations(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                         run_id: Id = None, type: str | None = None,
                         limit: Annotated[int, Query(ge=1, le=1000)] = 100
                         ) -> list[GraphRelation]:
    """The open relations among the scope's entities (of ``type``), at most ``limit``."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    entities = await mem.get_entities(**scope, type=type, limit=100_000)
    if not entities:
        return []
    graph = await mem.get_entity_graph([e.name for e in entities], depth=0, include_closed=False,
                                       **scope)
    return graph.relations[:limit]
