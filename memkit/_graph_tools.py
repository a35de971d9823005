"""The graph tools (offered where a graph store is configured), beside the memory tools of
:mod:`memkit.tools`, which lists them all in ``TOOLS``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from memkit._toolspec import Args, Json, Plan, ScopeArgs, ToolSpec, dump, single


class EntityIn(Args):
    name: Annotated[str, Field(min_length=1)]
    type: str | None = None
    summary: str | None = None


class RelationIn(Args):
    source: Annotated[str, Field(min_length=1)]
    relation: Annotated[str, Field(min_length=1, description="A verb phrase, e.g. works_at.")]
    target: Annotated[str, Field(min_length=1)]
    source_type: str | None = None
    target_type: str | None = None


class _EntitiesArgs(ScopeArgs):
    entities: Annotated[list[EntityIn], Field(min_length=1, description=(
        "The entities: each a name, optionally a type (person, organisation, place, ...) and "
        "a summary."))]


class _RelationsArgs(ScopeArgs):
    relations: Annotated[list[RelationIn], Field(min_length=1, description=(
        "The relations: each source -[relation]-> target."))]


class _NamesArgs(ScopeArgs):
    names: Annotated[list[str], Field(min_length=1, description="The entities' names.")]


class _EntityGraphArgs(ScopeArgs):
    name: Annotated[str, Field(min_length=1, description="The entity to start from.")]
    depth: Annotated[int, Field(ge=0, le=3, description="Relations to follow (0-3).")] = 1
    include_memories: Annotated[bool, Field(description=(
        "true: also the memories the relations came from."))] = False


class _SearchEntitiesArgs(ScopeArgs):
    query: Annotated[str, Field(description="Text naming entities, e.g. a question; empty: "
                                            "every entity (of type).")]
    type: str | None = None
    limit: Annotated[int, Field(ge=1, le=1000, description="How many at most.")] = 100


def _results(items: list[BaseModel]) -> Json:
    return {"results": [i.model_dump(mode="json") for i in items]}


def _plan_create_entities(a: _EntitiesArgs, scope: Json) -> Plan:
    made = []
    for e in a.entities:
        made.append((yield "add_entity", (e.name,), {"type": e.type, "summary": e.summary,
                                                     **scope}))
    return _results(made)


def _plan_create_relations(a: _RelationsArgs, scope: Json) -> Plan:
    made = []
    for r in a.relations:
        made.append((yield "add_relation", (r.source, r.relation, r.target), {
            "source_type": r.source_type, "target_type": r.target_type, **scope}))
    return _results(made)


def _plan_delete_entities(a: _NamesArgs, scope: Json) -> Plan:
    deleted = []
    for name in a.names:
        if (yield "delete_entity", (name,), scope):
            deleted.append(name)
    return {"deleted": len(deleted), "names": deleted}


def _plan_delete_relations(a: _RelationsArgs, scope: Json) -> Plan:
    count = 0
    for r in a.relations:
        count += yield "delete_relation", (r.source, r.relation, r.target), scope
    return {"deleted": count}


def _plan_entity_graph(a: _EntityGraphArgs, scope: Json) -> Plan:
    return single("get_entity_graph", (a.name,), {"depth": a.depth,
                                                  "include_memories": a.include_memories,
                                                  **scope}, dump)


def _plan_search_entities(a: _SearchEntitiesArgs, scope: Json) -> Plan:
    if not a.query.strip():
        entities = yield "get_entities", (), {"type": a.type, "limit": a.limit, **scope}
        return {"entities": [e.model_dump(mode="json") for e in entities], "relations": []}
    found = yield "search", (a.query,), {"limit": 1, "graph": True, **scope}
    names = sorted({n for r in found.relations for n in (r.source, r.target)})
    entities = []
    for name in names[:a.limit]:
        entity = yield "get_entity", (name,), scope
        if entity is not None and (a.type is None or entity.type == a.type):
            entities.append(entity.model_dump(mode="json"))
    return {"entities": entities,
            "relations": [r.model_dump(mode="json") for r in found.relations]}


class _RepairArgs(Args):
    pass


def _plan_repair(a: _RepairArgs, scope: Json) -> Plan:
    return single("repair", (), {}, lambda repaired: {"repaired": repaired})


GRAPH_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("create_entities", "Create entities (people, places, things) or update their type "
             "and summary.", _EntitiesArgs, _plan_create_entities, read_only=False,
             destructive=False, graph=True),
    ToolSpec("create_relations", "Record relations source -[relation]-> target; a known one "
             "gains weight.", _RelationsArgs, _plan_create_relations, read_only=False,
             destructive=False, graph=True),
    ToolSpec("delete_entities", "Delete entities and their relations; the memories stay.",
             _NamesArgs, _plan_delete_entities, read_only=False, destructive=True, graph=True),
    ToolSpec("delete_relations", "Delete relations (open and closed).", _RelationsArgs,
             _plan_delete_relations, read_only=False, destructive=True, graph=True),
    ToolSpec("get_entity_graph", "The entities within depth relations of an entity and the "
             "relations among them.", _EntityGraphArgs, _plan_entity_graph, read_only=True,
             destructive=False, graph=True),
    ToolSpec("search_entities", "Entities named in a query (or every entity of a type when the "
             "query is empty), with their relations.", _SearchEntitiesArgs,
             _plan_search_entities, read_only=True, destructive=False, graph=True),
    ToolSpec("memory_repair", "After a graph error, once the graph is back: write to the graph "
             "what memory changes left owed when it failed (every scope). Returns how many "
             "changes' graph work it wrote.", _RepairArgs, _plan_repair, read_only=False,
             destructive=False, idempotent=True, graph=True),
)
