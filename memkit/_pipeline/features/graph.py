"""Graph memory as flows: what an add writes to the graph, and the direct graph operations.

An add with a graph store asks the extraction call for relations too (one
answer, no extra LLM call). The entity names are embedded and resolved to the
entities they mean (same normalised name, an alias, or the nearest name
embedding above the threshold). Where the graph shares the vector store's
file or database (sqlite, postgres) the relations are written inside the
add's transaction, after the memories; elsewhere (Bolt) they are written
after that transaction commits, in a second one holding the same scope lock
(:mod:`memkit._pipeline.features.graph_writes`).

A relation is closed (``valid_to`` set, kept) only by an explicit decision:
an UPDATE of a memory closes the relations it supported that share source and
type with a relation this add states (the new target replaces the old); a
DELETE closes the relations that only deleted memories supported. Similarity
alone never closes anything. The entities an add names (``entities=``) are
resolved with the extracted names and linked to the memories it wrote.
Relations opened and closed, entities created, and entities and
relations deleted, are history events (``RELATION_ADD``, ``RELATION_CLOSE``,
``ENTITY_ADD``, ``RELATION_DELETE``, ``ENTITY_DELETE``) under the relation's or entity's
id, written in the transaction of the graph write (so the change feed carries
``ENTITY_ADD`` in commit order, from every process).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memkit._errors import InvalidArgument
from memkit._models import (
    EntityGraph,
    GraphEntity,
    GraphEventName,
    GraphRelation,
    HistoryRecord,
    OperationError,
)
from memkit._pipeline.add.parsing import Triple
from memkit._pipeline.effects import (
    AppendHistory,
    CloseRelations,
    DeleteEntities,
    DeleteRelations,
    Embed,
    EntityMemoryIds,
    FindEntities,
    FindRelations,
    Flow,
    Get,
    LinkMemories,
    Neighbourhood,
    ResolveNames,
    SetNameVectors,
    Transaction,
    UpsertEntities,
    UpsertRelations,
    WriteFlow,
    ask,
    ask_write,
)
from memkit._pipeline.features.outbox import GraphWork
from memkit._pipeline.write.versions import is_valid
from memkit._time import to_datetime
from memkit.graph.base import (
    Entity,
    GraphError,
    GraphScope,
    NewEntity,
    NewRelation,
    Relation,
    Subgraph,
    check_depth,
    check_name,
    entity_id,
    relation_type,
)
from memkit.stores.base import Record

MAX_RELATIONS = 100
"""Relations taken from one extraction answer; the rest are reported and skipped."""


@dataclass(frozen=True, slots=True)
class GraphSettings:
    """How an add uses the graph: ``joined`` when it shares the store's transactions;
    names merge into an entity at name-embedding cosine >= ``threshold``."""

    joined: bool
    threshold: float


@dataclass(slots=True)
class GraphPlan:
    """What an add will write to the graph."""

    scope: GraphScope
    now: str
    settings: GraphSettings
    entities: list[NewEntity] = field(default_factory=list)
    relations: list[NewRelation] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    #: the entities the caller named (``add(..., entities=)``), linked to what the add writes
    named: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([*(n for r in self.relations for n in (r.source, r.target)),
                                   *self.named]))

    @property
    def empty(self) -> bool:
        return not (self.relations or self.named)


@dataclass(frozen=True, slots=True)
class GraphOutcome:
    added: list[Relation] = field(default_factory=list)
    closed: list[Relation] = field(default_factory=list)
    errors: list[OperationError] = field(default_factory=list)
    #: the entities the add created
    created: list[Entity] = field(default_factory=list)


def plan_graph(scope: GraphScope, now: str, settings: GraphSettings,
               triples: Sequence[Triple | dict[str, Any]],
               errors: list[OperationError]) -> GraphPlan:
    """Check the extracted relations; each one that cannot be kept is reported in ``errors``."""
    plan = GraphPlan(scope, now, settings)
    for index, triple in enumerate(triples):
        raw = triple.model_dump() if isinstance(triple, Triple) else triple
        if index >= MAX_RELATIONS:
            errors.append(OperationError(
                stage="graph", message=f"{len(triples) - MAX_RELATIONS} relations beyond the "
                f"first {MAX_RELATIONS} of one answer were skipped"))
            break
        if not isinstance(triple, Triple):
            errors.append(OperationError(stage="graph", message="not a relation", operation=raw))
            continue
        try:
            source, target = check_name(triple.source), check_name(triple.target)
            kind = relation_type(triple.relation)
            if entity_id(scope, source) == entity_id(scope, target):
                raise GraphError(f"a relation from {source!r} to itself")
        except GraphError as exc:
            errors.append(OperationError(stage="graph", message=str(exc), operation=raw))
            continue
        plan.relations.append(NewRelation(source, kind, target))
        plan.entities.extend(NewEntity(name, kind_of) for name, kind_of in (
            (source, triple.source_type), (target, triple.target_type)))
    return plan


def embed_names(plan: GraphPlan | None) -> Flow[None]:
    """The name embeddings entity resolution compares (one embedding call)."""
    if plan is None or plan.empty:
        return
    names = plan.names
    rows = yield from ask(Embed(tuple(names)))
    plan.vectors = {name: [float(x) for x in row] for name, row in zip(names, rows, strict=True)}


def write_work(work: GraphWork, vectors: dict[str, list[float]],
               replay: bool = False) -> WriteFlow[GraphOutcome]:
    """Resolve the names, close what the decisions replaced, record the mentions, and the
    history of both. A ``replay`` does again only what an earlier try did not."""
    scope, now, linked = work.scope, work.now, work.linked
    errors: list[OperationError] = []
    names = work.names
    by_name = [vectors[n] for n in names] if vectors else None
    canonical: dict[str, str] = yield from ask_write(ResolveNames(
        scope, names, by_name, work.threshold, linked))
    relations: dict[tuple[str, str, str], NewRelation] = {}  # one mention per add
    for r in work.relations:
        source, target = canonical.get(r.source, r.source), canonical.get(r.target, r.target)
        if entity_id(scope, source) == entity_id(scope, target):
            errors.append(OperationError(
                stage="graph", message=f"{r.source!r} and {r.target!r} are one entity "
                f"({source!r}): a relation to itself was skipped",
                operation={"source": r.source, "relation": r.type, "target": r.target}))
            continue
        relations.setdefault((entity_id(scope, source), r.type, entity_id(scope, target)),
                             NewRelation(source, r.type, target))
    closing: dict[str, Relation] = {}
    closed: list[Relation] = []
    if work.updated:
        stated = {(s, kind): t for s, kind, t in relations}
        for old in (yield from ask_write(FindRelations(scope, memory_ids=list(work.updated),
                                                       include_closed=replay))):
            target_id = stated.get((old.source_id, old.type))
            if target_id is not None and target_id != old.target_id:
                _closing(old, now, closing, closed)
    if work.gone:
        gone = set(work.gone)
        for old in (yield from ask_write(FindRelations(scope, memory_ids=sorted(gone),
                                                       include_closed=replay))):
            if set(old.memory_ids) <= gone:
                _closing(old, now, closing, closed)
    typed = [NewEntity(canonical.get(e.name, e.name), e.type) for e in work.entities
             if e.type != "unknown"]
    if typed:
        yield UpsertEntities(scope, typed, now)
    if closing:
        closed += yield from ask_write(CloseRelations(scope, list(closing), now))
    held: dict[tuple[str, str, str], Relation] = {}
    if replay and linked:  # mentions an earlier try wrote are not counted again
        held = {(r.source_id, r.type, r.target_id): r for r in (yield from ask_write(
            FindRelations(scope, memory_ids=list(linked)))) if set(linked) <= set(r.memory_ids)}
    mentions = [NewRelation(r.source, r.type, r.target, 1.0, linked)
                for key, r in relations.items() if key not in held]
    added = (yield from ask_write(UpsertRelations(scope, mentions, now))) if mentions else []
    added += [held[key] for key in relations if key in held]
    named = list(dict.fromkeys(canonical.get(n, n) for n in work.named))
    if named and linked:
        yield LinkMemories(scope, named, linked, now)
    new_names = [n for n in names if n not in canonical]
    if vectors and new_names:
        yield SetNameVectors(scope, new_names, [vectors[n] for n in new_names])
    # a replay's names may resolve to the entities an earlier try of it created
    maybe_new = list(dict.fromkeys(canonical.get(n, n) for n in names)) if replay else new_names
    found = (yield from ask_write(FindEntities(scope, names=maybe_new, limit=len(maybe_new)))
             ) if maybe_new else []
    created = list({e.id: e for e in found if e.created_at == now}.values())
    rows = [entity_added(e) for e in created]
    rows += [graph_event(r, "RELATION_ADD", now) for r in added if r.valid_from == now
             and r.weight == 1.0]
    rows += [graph_event(r, "RELATION_CLOSE", now) for r in closed]
    if rows:
        yield AppendHistory(tuple(rows))
    return GraphOutcome(added, closed, errors, created)


def _closing(old: Relation, now: str, closing: dict[str, Relation],
             closed: list[Relation]) -> None:
    """``old`` is to be closed at ``now``; a replay finds it closed then already."""
    if old.valid_to is None:
        closing[old.id] = old
    elif old.valid_to == now:
        closed.append(old)


def entity_added(entity: Entity) -> HistoryRecord:
    """The ``ENTITY_ADD`` row of an entity a graph write created: its name and type (JSON)."""
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=entity.id, event="ENTITY_ADD",
        new_value=json.dumps({"name": entity.name, "type": entity.type}),
        timestamp=to_datetime(entity.created_at), user_id=entity.user_id,
        agent_id=entity.agent_id, run_id=entity.run_id)


def graph_event(item: Relation | Entity, event: GraphEventName, now: str) -> HistoryRecord:
    """A history row for a relation (its triple) or an entity (its name)."""
    text = (f"{item.source} -[{item.type}]-> {item.target}" if isinstance(item, Relation)
            else item.name)
    ends = event in ("RELATION_CLOSE", "RELATION_DELETE", "ENTITY_DELETE")
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=item.id, event=event,
        old_value=text if ends else None, new_value=None if ends else text,
        timestamp=to_datetime(now), is_deleted=event in ("RELATION_DELETE", "ENTITY_DELETE"),
        user_id=item.user_id, agent_id=item.agent_id, run_id=item.run_id)


# -- public shapes ---------------------------------------------------------------


def relation_model(r: Relation) -> GraphRelation:
    return GraphRelation(
        id=r.id, source=r.source, relation=r.type, target=r.target, weight=r.weight,
        confidence=r.confidence, valid_from=to_datetime(r.valid_from),
        valid_to=None if r.valid_to is None else to_datetime(r.valid_to),
        memory_ids=list(r.memory_ids), user_id=r.user_id, agent_id=r.agent_id, run_id=r.run_id)


def entity_model(e: Entity) -> GraphEntity:
    return GraphEntity(
        id=e.id, name=e.name, type=e.type, summary=e.summary, user_id=e.user_id,
        agent_id=e.agent_id, run_id=e.run_id, created_at=to_datetime(e.created_at),
        updated_at=to_datetime(e.updated_at))


def graph_model(sub: Subgraph) -> EntityGraph:
    return EntityGraph(entities=[entity_model(e) for e in sub.entities],
                       relations=[relation_model(r) for r in sub.relations])


# -- direct operations -----------------------------------------------------------


def _checked(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"an entity name must be a string, got {type(name).__name__}")
    return check_name(name)


def _canonical(scope: GraphScope, names: Sequence[str]) -> Flow[list[str]]:
    """Each name as the entity it means (aliases followed); unknown names as given."""
    checked = [_checked(n) for n in names]
    found: dict[str, str] = yield from ask(ResolveNames(scope, checked))
    return [found.get(n, n) for n in checked]


def get_entity_flow(scope: GraphScope, name: str) -> Flow[GraphEntity | None]:
    names = yield from _canonical(scope, [name])
    found: list[Entity] = yield from ask(FindEntities(scope, names=names))
    return entity_model(found[0]) if found else None


def get_entities_flow(scope: GraphScope, type: str | None, limit: int) -> Flow[list[GraphEntity]]:
    found: list[Entity] = yield from ask(FindEntities(scope, type=type, limit=limit))
    return [entity_model(e) for e in found]


def entity_graph_flow(scope: GraphScope, names: Sequence[str], depth: int,
                      include_closed: bool = False,
                      memories_at: str | None = None) -> Flow[EntityGraph]:
    """``memories_at``: also the memories behind the relations, and those whose adds named
    the entities, that are valid then."""
    check_depth(depth)
    seeds = yield from _canonical(scope, names)
    sub: Subgraph = yield from ask(Neighbourhood(scope, seeds, depth))
    if include_closed:
        sub = yield from _with_closed(scope, sub)
    graph = graph_model(sub)
    if memories_at is None:
        return graph
    named = (yield from ask(EntityMemoryIds(scope, [e.id for e in sub.entities]))
             ) if sub.entities else []
    items = []
    for memory_id in dict.fromkeys([*(m for r in sub.relations for m in r.memory_ids), *named]):
        record: Record | None = yield from ask(Get(memory_id))
        if record is not None and is_valid(record, memories_at):
            items.append(record.to_item())
    return graph.model_copy(update={"memories": items})


def _with_closed(scope: GraphScope, sub: Subgraph) -> Flow[Subgraph]:
    """``sub`` and the closed relations touching its entities, with their other ends."""
    held = {e.id for e in sub.entities}
    every = yield from ask(FindRelations(scope, include_closed=True))
    closed = [r for r in every if r.valid_to is not None
              and (r.source_id in held or r.target_id in held)]
    ends = sorted({name for r in closed for name, id in ((r.source, r.source_id),
                                                         (r.target, r.target_id)) if id not in held})
    more = (yield from ask(FindEntities(scope, names=ends, limit=len(ends)))) if ends else []
    return Subgraph(entities=[*sub.entities, *more], relations=[*sub.relations, *closed])


def add_entity_flow(key: str, scope: GraphScope, name: str, type: str | None,
                    summary: str | None, now: str) -> Flow[GraphEntity]:
    [canonical] = yield from _canonical(scope, [name])
    entity: GraphEntity = yield from ask(Transaction(key, _add_entity(scope, canonical, type, summary, now)))
    return entity


def _add_entity(scope: GraphScope, name: str, type: str | None, summary: str | None,
                now: str) -> WriteFlow[GraphEntity]:
    [entity] = yield from ask_write(UpsertEntities(scope, [NewEntity(name, type or 'unknown', summary)], now))
    if entity.created_at == now:
        yield AppendHistory((entity_added(entity),))
    return entity_model(entity)


def add_relation_flow(key: str, scope: GraphScope, source: str, relation: str, target: str,
                      source_type: str | None, target_type: str | None,
                      now: str) -> Flow[GraphRelation]:
    source, target = yield from _canonical(scope, [source, target])
    kind = relation_type(relation)
    if entity_id(scope, source) == entity_id(scope, target):
        raise GraphError(f"a relation from {source!r} to itself")
    added: GraphRelation = yield from ask(Transaction(key, _add_relation(
        scope, source, kind, target, source_type, target_type, now)))
    return added


def _add_relation(scope: GraphScope, source: str, kind: str, target: str,
                  source_type: str | None, target_type: str | None,
                  now: str) -> WriteFlow[GraphRelation]:
    typed = [NewEntity(n, t) for n, t in ((source, source_type), (target, target_type)) if t]
    if typed:
        yield UpsertEntities(scope, typed, now)
    [added] = yield from ask_write(UpsertRelations(scope, [NewRelation(source, kind, target)], now))
    if added.weight == 1.0 and added.valid_from == now:  # new: its ends may be new too
        ends = yield from ask_write(FindEntities(scope, names=[source, target], limit=2))
        yield AppendHistory((*(entity_added(e) for e in ends if e.created_at == now),
                             graph_event(added, "RELATION_ADD", now)))
    return relation_model(added)


def delete_relation_flow(key: str, scope: GraphScope, source: str, relation: str,
                         target: str, now: str) -> Flow[int]:
    source, target = yield from _canonical(scope, [source, target])
    count: int = yield from ask(Transaction(key, _delete_relation(scope, source, relation, target, now)))
    return count


def _delete_relation(scope: GraphScope, source: str, relation: str, target: str,
                     now: str) -> WriteFlow[int]:
    found = yield from ask_write(FindRelations(scope, source=source, type=relation, target=target,
                                               include_closed=True))
    if not found:
        return 0
    count: int = yield from ask_write(DeleteRelations(scope, [r.id for r in found]))
    yield AppendHistory(tuple(graph_event(r, "RELATION_DELETE", now) for r in found))
    return count


def delete_entity_flow(key: str, scope: GraphScope, name: str, now: str) -> Flow[bool]:
    [canonical] = yield from _canonical(scope, [name])
    deleted: bool = yield from ask(Transaction(key, _delete_entity(scope, canonical, now)))
    return deleted


def _delete_entity(scope: GraphScope, name: str, now: str) -> WriteFlow[bool]:
    touching = yield from ask_write(FindRelations(scope, source=name, include_closed=True))
    touching += yield from ask_write(FindRelations(scope, target=name, include_closed=True))
    deleted: list[Entity] = yield from ask_write(DeleteEntities(scope, [name]))
    if deleted:
        yield AppendHistory((*(graph_event(e, "ENTITY_DELETE", now) for e in deleted),
                             *(graph_event(r, "RELATION_DELETE", now) for r in touching)))
    return bool(deleted)

