"""The graph store interface: entities and typed relations beside the memories.

An entity is identified by its scope and its normalised name
(:func:`normalise`), so "Alice" and " alice " are one entity; its id is derived
from both (:func:`entity_id`), which keeps one scope's writes from ever naming
another scope's entity. A relation ``source -[TYPE]-> target`` is open until a
decision closes it (``valid_to`` set); closed relations are kept for history.
Upserting an open relation that exists raises its ``weight`` (its mention
count) and adds the memory ids it came from.

A scope here is the exact ``(user_id, agent_id, run_id)`` triple an add was
made with: each scope has a graph of its own.

Identity beyond spelling: :meth:`GraphStore.resolve` maps a name to the entity
it means: the same normalised name, a name merged into it before (an alias),
or, given the name's embedding, the entity whose name embedding is nearest
when the cosine reaches the threshold (then the name is recorded as an alias).
An add's resolution records which memories used each alias, so forgetting the
last of them forgets the alias too.

An entity is linked to the memories whose relations touch it, and to those
whose adds named it (``add(..., entities=[...])``, :meth:`GraphStore.link_memories`);
:meth:`GraphStore.memory_ids_of` lists the latter.
Name embeddings are kept with the entities (float16, in the graph's own
tables or node properties), never in an engine's vector index.

A store that can write inside the vector store's transaction says so in
:meth:`GraphStore.joins` and returns a view on that transaction from
:meth:`GraphStore.bound`.

Async methods default to running the sync method in a worker thread; a store
with a native async client overrides them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import unicodedata
import uuid
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from memkit._errors import GraphError, GraphStoreError

UNKNOWN = "unknown"
_NAMESPACE = uuid.UUID("6b7c2f0e-3d7a-4c1e-9a55-2f1f5d0c9e41")
_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>"
_RELATION_TYPE = re.compile(r"[^A-Z0-9]+")
MAX_NAME = 200
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GraphScope:
    """The scope a graph belongs to: the exact ids an add was made with."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def key(self) -> str:
        return json.dumps([self.user_id, self.agent_id, self.run_id])

    @property
    def empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.run_id is None


def normalise(name: str) -> str:
    """The identity of an entity name: NFKC, case-folded, spaces collapsed, edge punctuation off."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return _SPACES.sub(" ", text).strip().strip(_EDGE_PUNCTUATION).strip()


def relation_type(name: str) -> str:
    """``"works at"`` -> ``"WORKS_AT"``; raises GraphError when nothing is left."""
    text = _RELATION_TYPE.sub("_", unicodedata.normalize("NFKC", name).upper()).strip("_")
    if not text:
        raise GraphError(f"not a relation type: {name!r}")
    return text[:MAX_NAME]


def entity_id(scope: GraphScope, name: str) -> str:
    """The id of the entity called ``name`` in ``scope`` (the same for every spelling)."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps([scope.key, normalise(name)])))


def check_name(name: object) -> str:
    """An entity name as given, stripped; raises GraphError for an empty or huge one."""
    if not isinstance(name, str) or not normalise(name) or len(name) > MAX_NAME:
        raise GraphError(f"not an entity name: {name!r}")
    return " ".join(name.split())


def scope_fields(scope: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The scope fields given in ``scope`` (at least one) and their values."""
    fields = [f for f in ("user_id", "agent_id", "run_id") if scope.get(f) is not None]
    if not fields:
        raise GraphError("forgetting a scope's graph needs user_id, agent_id or run_id")
    return fields, {f: scope[f] for f in fields}


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    name: str
    type: str
    summary: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class Relation:
    """``source -[type]-> target``; ``weight`` counts its mentions; open while ``valid_to`` is None."""

    id: str
    source: str
    type: str
    target: str
    source_id: str
    target_id: str
    weight: float
    confidence: float
    valid_from: str
    valid_to: str | None
    memory_ids: tuple[str, ...]
    user_id: str | None
    agent_id: str | None
    run_id: str | None

    @property
    def triple(self) -> tuple[str, str, str]:
        return self.source, self.type, self.target


@dataclass(frozen=True, slots=True)
class Subgraph:
    """Entities and the open relations between them."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class NewEntity:
    name: str
    type: str = UNKNOWN
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class NewRelation:
    """A mention of ``source -[type]-> target``; missing endpoints are created as "unknown"."""

    source: str
    type: str
    target: str
    confidence: float = 1.0
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EntityRow:
    """What a store writes for an entity: names checked, id derived."""

    id: str
    name: str
    norm: str
    type: str
    summary: str | None

    @classmethod
    def of(cls, scope: GraphScope, entity: NewEntity) -> EntityRow:
        name = check_name(entity.name)
        kind = (normalise(entity.type) if isinstance(entity.type, str) else "") or UNKNOWN
        return cls(entity_id(scope, name), name, normalise(name), kind[:MAX_NAME], entity.summary)


@dataclass(frozen=True, slots=True)
class RelationRow:
    """What a store writes for a relation mention (duplicates in one call merged)."""

    id: str
    source: EntityRow
    type: str
    target: EntityRow
    weight: float
    confidence: float
    memory_ids: tuple[str, ...]


def entity_rows(scope: GraphScope, entities: Sequence[NewEntity]) -> list[EntityRow]:
    """Checked rows, one per entity: the first spelling names it; a later known type or a
    later summary wins."""
    merged: dict[str, EntityRow] = {}
    for entity in entities:
        row = EntityRow.of(scope, entity)
        before = merged.get(row.id)
        if before is not None:
            row = replace(before, type=before.type if row.type == UNKNOWN else row.type,
                          summary=before.summary if row.summary is None else row.summary)
        merged[row.id] = row
    return list(merged.values())


def relation_rows(scope: GraphScope, relations: Sequence[NewRelation]) -> list[RelationRow]:
    """Checked rows, one per distinct (source, type, target); self-loops raise GraphError."""
    merged: dict[tuple[str, str, str], RelationRow] = {}
    for rel in relations:
        source = EntityRow.of(scope, NewEntity(rel.source))
        target = EntityRow.of(scope, NewEntity(rel.target))
        if source.id == target.id:
            raise GraphError(f"a relation from {rel.source!r} to itself")
        kind = relation_type(rel.type)
        key = (source.id, kind, target.id)
        confidence = min(1.0, max(0.0, float(rel.confidence)))
        before = merged.get(key)
        if before is None:
            merged[key] = RelationRow(str(uuid.uuid4()), source, kind, target, 1.0, confidence,
                                      tuple(dict.fromkeys(rel.memory_ids)))
        else:
            merged[key] = RelationRow(  # the first spelling names the endpoints
                before.id, before.source, kind, before.target, before.weight + 1.0,
                max(before.confidence, confidence),
                tuple(dict.fromkeys((*before.memory_ids, *rel.memory_ids))))
    return list(merged.values())


class GraphOps(Protocol):
    """One engine's operations, each a generator of that engine's queries (see ``_sql``, ``neo4j``)."""

    def schema(self) -> Generator[Any, Any, None]: ...
    def reset(self) -> Generator[Any, Any, None]: ...
    def upsert_entities(self, scope: GraphScope, entities: Sequence[NewEntity],
                        now: str) -> Generator[Any, Any, list[Entity]]: ...
    def upsert_relations(self, scope: GraphScope, relations: Sequence[NewRelation],
                         now: str) -> Generator[Any, Any, list[Relation]]: ...
    def close_relations(self, scope: GraphScope, ids: Sequence[str],
                        now: str) -> Generator[Any, Any, list[Relation]]: ...
    def relations(self, scope: GraphScope, source: str | None, type: str | None,
                  target: str | None, memory_ids: Sequence[str] | None,
                  include_closed: bool) -> Generator[Any, Any, list[Relation]]: ...
    def entities(self, scope: GraphScope, names: Sequence[str] | None, type: str | None,
                 limit: int) -> Generator[Any, Any, list[Entity]]: ...
    def neighbourhood(self, scope: GraphScope, names: Sequence[str],
                      depth: int) -> Generator[Any, Any, Subgraph]: ...
    def delete_entities(self, scope: GraphScope,
                        names: Sequence[str]) -> Generator[Any, Any, list[Entity]]: ...
    def delete_relations(self, scope: GraphScope,
                         ids: Sequence[str]) -> Generator[Any, Any, int]: ...
    def forget_memories(self, memory_ids: Sequence[str]) -> Generator[Any, Any, list[str]]: ...
    def forget_scope(self, scope: Mapping[str, str]) -> Generator[Any, Any, None]: ...
    def resolve(self, scope: GraphScope, names: Sequence[str],
                vectors: Sequence[Sequence[float]] | None, threshold: float,
                memory_ids: Sequence[str] = ()) -> Generator[Any, Any, dict[str, str]]: ...
    def entities_by_id(self, scope: GraphScope,
                       ids: Sequence[str]) -> Generator[Any, Any, list[Entity]]: ...
    def link_memories(self, scope: GraphScope, names: Sequence[str], memory_ids: Sequence[str],
                      now: str) -> Generator[Any, Any, list[Entity]]: ...
    def memory_ids_of(self, scope: GraphScope,
                      ids: Sequence[str]) -> Generator[Any, Any, list[str]]: ...
    def set_vectors(self, scope: GraphScope, names: Sequence[str],
                    vectors: Sequence[Sequence[float]]) -> Generator[Any, Any, None]: ...
    def repoint(self, scope: GraphScope,
                moves: Sequence[tuple[str, str]]) -> Generator[Any, Any, None]: ...
    def embedded_names(self) -> Generator[Any, Any, list[tuple[str, str]]]: ...
    def replace_vectors(self, ids: Sequence[str], vectors: Sequence[Sequence[float] | None],
                        ) -> Generator[Any, Any, None]: ...


def encode_vector(vector: Sequence[float]) -> str:
    """A name embedding as stored: float16, base64 (small enough for any engine's parameters)."""
    return base64.b64encode(np.asarray(vector, dtype=np.float16).tobytes()).decode()


def decode_vector(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)


def nearest(vector: Sequence[float], candidates: Sequence[tuple[str, str]],
            threshold: float) -> str | None:
    """The id among ``candidates`` (id, encoded vector) whose vector is nearest to ``vector``
    by cosine, when that cosine is at least ``threshold``."""
    query = np.asarray(vector, dtype=np.float32)
    # vectors of another model (a re-embedding's failed graph write) compare with nothing
    rows = [(id, row) for id, row in ((id, decode_vector(v)) for id, v in candidates)
            if row.shape == query.shape]
    if not rows:
        return None
    matrix = np.stack([row for _, row in rows])
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    cosines = matrix @ query / np.where(norms == 0, 1.0, norms)
    best = int(np.argmax(cosines))
    return rows[best][0] if float(cosines[best]) >= threshold else None


class NameLookups(Protocol):
    """The engine queries :func:`resolve_names` is built from."""

    def names_by_id(self, scope: GraphScope,
                    ids: Sequence[str]) -> Generator[Any, Any, dict[str, str]]: ...
    def names_by_alias(self, scope: GraphScope,
                       norms: Sequence[str]) -> Generator[Any, Any, dict[str, str]]: ...
    def embedded(self, scope: GraphScope) -> Generator[Any, Any, list[tuple[str, str, str]]]: ...
    def add_aliases(self, scope: GraphScope,
                    aliases: Sequence[tuple[str, str]]) -> Generator[Any, Any, None]: ...
    def support_aliases(self, scope: GraphScope, norms: Sequence[str],
                        memory_ids: Sequence[str]) -> Generator[Any, Any, None]: ...


def resolve_names(engine: NameLookups, scope: GraphScope, names: Sequence[str],
                  vectors: Sequence[Sequence[float]] | None, threshold: float,
                  memory_ids: Sequence[str] = ()) -> Generator[Any, Any, dict[str, str]]:
    """:meth:`GraphStore.resolve`, once for every engine: by id, then alias, then embedding.
    The aliases used are recorded as used by ``memory_ids``."""
    ids = {name: entity_id(scope, check_name(name)) for name in names}
    by_id = yield from engine.names_by_id(scope, sorted(set(ids.values())))
    found = {name: by_id[i] for name, i in ids.items() if i in by_id}
    rest = {normalise(n): n for n in names if n not in found}
    used: list[str] = []
    if rest:
        by_alias = yield from engine.names_by_alias(scope, sorted(rest))
        found.update({rest.pop(norm): name for norm, name in by_alias.items()})
        used += sorted(by_alias)
    if rest and vectors is not None:
        vector_of = dict(zip(names, vectors, strict=True))
        rows = yield from engine.embedded(scope)
        candidates = [(id, embedding) for id, _, embedding in rows]
        name_of = {id: name for id, name, _ in rows}
        aliases = []
        for norm, name in rest.items():
            match = nearest(vector_of[name], candidates, threshold)
            if match is not None:
                found[name] = name_of[match]
                aliases.append((norm, match))
        if aliases:
            yield from engine.add_aliases(scope, aliases)
            used += [norm for norm, _ in aliases]
    if used and memory_ids:
        yield from engine.support_aliases(scope, used, memory_ids)
    return found


class GraphStore(ABC):
    """Entities and relations per scope. Every method is confined to the scope it is given.

    Each operation is written once per engine family as a generator of queries
    (``self.ops``); an engine only says how to run one, blocking (:meth:`_run`)
    and awaiting (:meth:`_arun`, a worker thread by default).
    """

    provider: ClassVar[str] = ""
    ops: GraphOps

    @abstractmethod
    def _run(self, op: Generator[Any, Any, T]) -> T:
        """Run ``op`` (creating the schema first, once)."""

    async def _arun(self, op: Generator[Any, Any, T]) -> T:
        return await asyncio.to_thread(self._run, op)

    def open(self) -> None:
        """Create the tables or indexes. Idempotent."""
        self._run(self.ops.schema())

    async def aopen(self) -> None:
        await self._arun(self.ops.schema())

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections. Idempotent."""

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def joins(self, store: object) -> bool:
        """Whether writes can share ``store``'s transactions (same file or same database)."""
        return False

    def bound(self, writer: object) -> GraphStore:
        """This graph writing inside the transaction ``writer`` (a vector store's
        :class:`~memkit.stores.base.Writer`) belongs to, when :meth:`joins` said so."""
        return self

    def reset(self) -> None:
        """Delete every entity and relation of every scope."""
        self._run(self.ops.reset())

    async def areset(self) -> None:
        await self._arun(self.ops.reset())

    def upsert_entities(self, scope: GraphScope, entities: Sequence[NewEntity],
                        now: str) -> list[Entity]:
        """Create entities or update them: a known type replaces "unknown", a summary the old one."""
        return self._run(self.ops.upsert_entities(scope, entities, now))

    async def aupsert_entities(self, scope: GraphScope, entities: Sequence[NewEntity],
                               now: str) -> list[Entity]:
        return await self._arun(self.ops.upsert_entities(scope, entities, now))

    def upsert_relations(self, scope: GraphScope, relations: Sequence[NewRelation],
                         now: str) -> list[Relation]:
        """Record mentions: an open relation with the same (source, type, target) gains weight
        and memory ids; otherwise a relation opens, valid from ``now``. Missing endpoints are
        created with type "unknown"."""
        return self._run(self.ops.upsert_relations(scope, relations, now))

    async def aupsert_relations(self, scope: GraphScope, relations: Sequence[NewRelation],
                                now: str) -> list[Relation]:
        return await self._arun(self.ops.upsert_relations(scope, relations, now))

    def close_relations(self, scope: GraphScope, ids: Sequence[str], now: str) -> list[Relation]:
        """Close the open relations among ``ids`` (``valid_to = now``); they are kept."""
        return self._run(self.ops.close_relations(scope, ids, now))

    async def aclose_relations(self, scope: GraphScope, ids: Sequence[str],
                               now: str) -> list[Relation]:
        return await self._arun(self.ops.close_relations(scope, ids, now))

    def relations(self, scope: GraphScope, *, source: str | None = None, type: str | None = None,
                  target: str | None = None, memory_ids: Sequence[str] | None = None,
                  include_closed: bool = False) -> list[Relation]:
        """Relations matching every criterion given (names by identity, the type normalised)."""
        return self._run(self.ops.relations(scope, source, type, target, memory_ids,
                                            include_closed))

    async def arelations(self, scope: GraphScope, *, source: str | None = None,
                         type: str | None = None, target: str | None = None,
                         memory_ids: Sequence[str] | None = None,
                         include_closed: bool = False) -> list[Relation]:
        return await self._arun(self.ops.relations(scope, source, type, target, memory_ids,
                                                   include_closed))

    def entities(self, scope: GraphScope, *, names: Sequence[str] | None = None,
                 type: str | None = None, limit: int = 100) -> list[Entity]:
        """Entities of the scope (with these names, of this type), by normalised name."""
        return self._run(self.ops.entities(scope, names, type, limit))

    async def aentities(self, scope: GraphScope, *, names: Sequence[str] | None = None,
                        type: str | None = None, limit: int = 100) -> list[Entity]:
        return await self._arun(self.ops.entities(scope, names, type, limit))

    def neighbourhood(self, scope: GraphScope, names: Sequence[str], depth: int) -> Subgraph:
        """The entities within ``depth`` open relations of the named ones, and the open
        relations among them."""
        return self._run(self.ops.neighbourhood(scope, names, depth))

    async def aneighbourhood(self, scope: GraphScope, names: Sequence[str],
                             depth: int) -> Subgraph:
        return await self._arun(self.ops.neighbourhood(scope, names, depth))

    def delete_entities(self, scope: GraphScope, names: Sequence[str]) -> list[Entity]:
        """Delete entities and every relation touching them; the memories stay."""
        return self._run(self.ops.delete_entities(scope, names))

    async def adelete_entities(self, scope: GraphScope, names: Sequence[str]) -> list[Entity]:
        return await self._arun(self.ops.delete_entities(scope, names))

    def delete_relations(self, scope: GraphScope, ids: Sequence[str]) -> int:
        """Delete relations (open or closed); returns how many existed."""
        return self._run(self.ops.delete_relations(scope, ids))

    async def adelete_relations(self, scope: GraphScope, ids: Sequence[str]) -> int:
        return await self._arun(self.ops.delete_relations(scope, ids))

    def forget_memories(self, memory_ids: Sequence[str]) -> list[str]:
        """Forget ``memory_ids`` in every scope: they leave the relations' memory ids and the
        entities' links; the relations left with none are deleted, and so are the entities
        left with no relation and no linked memory (and those entities' aliases), and the
        aliases only these memories' adds used. Returns the ids of what was deleted."""
        return self._run(self.ops.forget_memories(memory_ids))

    async def aforget_memories(self, memory_ids: Sequence[str]) -> list[str]:
        return await self._arun(self.ops.forget_memories(memory_ids))

    def forget_scope(self, scope: Mapping[str, str]) -> None:
        """Delete the graph of every scope matching ``scope`` (each field given must match;
        ``{"user_id": "alice"}`` is every graph of alice's, whatever its agent or run)."""
        self._run(self.ops.forget_scope(scope))

    async def aforget_scope(self, scope: Mapping[str, str]) -> None:
        await self._arun(self.ops.forget_scope(scope))

    def scrub(self) -> None:  # noqa: B027 - optional
        """After a purge: make what was deleted unreadable from the engine's files where this
        store can (SQLite: write the WAL into the file and empty it)."""

    async def ascrub(self) -> None:
        await asyncio.to_thread(self.scrub)

    def resolve(self, scope: GraphScope, names: Sequence[str],
                vectors: Sequence[Sequence[float]] | None = None,
                threshold: float = 1.0, memory_ids: Sequence[str] = ()) -> dict[str, str]:
        """The entity each name means, by name: the same normalised name, an alias, or (with
        ``vectors``, one per name) the nearest name embedding at cosine >= ``threshold``,
        which records the name as an alias. Names that mean no entity are left out. The
        aliases used are recorded as used by ``memory_ids`` (forgetting the last of them
        forgets the alias)."""
        return self._run(self.ops.resolve(scope, names, vectors, threshold, memory_ids))

    async def aresolve(self, scope: GraphScope, names: Sequence[str],
                       vectors: Sequence[Sequence[float]] | None = None,
                       threshold: float = 1.0, memory_ids: Sequence[str] = ()) -> dict[str, str]:
        return await self._arun(self.ops.resolve(scope, names, vectors, threshold, memory_ids))

    def entities_by_id(self, scope: GraphScope, ids: Sequence[str]) -> list[Entity]:
        """The scope's entities among ``ids``, by normalised name."""
        return self._run(self.ops.entities_by_id(scope, ids))

    async def aentities_by_id(self, scope: GraphScope, ids: Sequence[str]) -> list[Entity]:
        return await self._arun(self.ops.entities_by_id(scope, ids))

    def link_memories(self, scope: GraphScope, names: Sequence[str], memory_ids: Sequence[str],
                      now: str) -> list[Entity]:
        """Link the named entities (created, typed "unknown", when missing) to ``memory_ids``;
        returns the entities."""
        return self._run(self.ops.link_memories(scope, names, memory_ids, now))

    async def alink_memories(self, scope: GraphScope, names: Sequence[str],
                             memory_ids: Sequence[str], now: str) -> list[Entity]:
        return await self._arun(self.ops.link_memories(scope, names, memory_ids, now))

    def memory_ids_of(self, scope: GraphScope, ids: Sequence[str]) -> list[str]:
        """The memories whose adds named the entities ``ids`` (``entities=``), sorted."""
        return self._run(self.ops.memory_ids_of(scope, ids))

    async def amemory_ids_of(self, scope: GraphScope, ids: Sequence[str]) -> list[str]:
        return await self._arun(self.ops.memory_ids_of(scope, ids))

    def set_vectors(self, scope: GraphScope, names: Sequence[str],
                    vectors: Sequence[Sequence[float]]) -> None:
        """Keep each named entity's name embedding (entities that have one keep theirs)."""
        self._run(self.ops.set_vectors(scope, names, vectors))

    async def aset_vectors(self, scope: GraphScope, names: Sequence[str],
                           vectors: Sequence[Sequence[float]]) -> None:
        await self._arun(self.ops.set_vectors(scope, names, vectors))

    def repoint(self, scope: GraphScope, moves: Sequence[tuple[str, str]]) -> None:
        """For each ``(old, new)`` memory id: relations that came from ``old`` come from
        ``new`` instead (a consolidation merged ``old`` into ``new``)."""
        self._run(self.ops.repoint(scope, moves))

    async def arepoint(self, scope: GraphScope, moves: Sequence[tuple[str, str]]) -> None:
        await self._arun(self.ops.repoint(scope, moves))
    def embedded_names(self) -> list[tuple[str, str]]:
        """``(id, name)`` of every entity with a name embedding, in every scope (re-embedding)."""
        return self._run(self.ops.embedded_names())

    async def aembedded_names(self) -> list[tuple[str, str]]:
        return await self._arun(self.ops.embedded_names())

    def replace_vectors(self, ids: Sequence[str],
                        vectors: Sequence[Sequence[float] | None]) -> None:
        """Replace the name embeddings of the entities ``ids`` (``None`` removes one)."""
        self._run(self.ops.replace_vectors(ids, vectors))

    async def areplace_vectors(self, ids: Sequence[str],
                               vectors: Sequence[Sequence[float] | None]) -> None:
        await self._arun(self.ops.replace_vectors(ids, vectors))


def check_depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
        raise GraphError(f"depth must be 0, 1, 2 or 3, got {depth!r}")
    return depth


__all__ = [
    "UNKNOWN",
    "Entity",
    "EntityRow",
    "GraphError",
    "GraphOps",
    "GraphScope",
    "GraphStore",
    "GraphStoreError",
    "NewEntity",
    "NewRelation",
    "Relation",
    "RelationRow",
    "Subgraph",
    "check_depth",
    "check_name",
    "decode_vector",
    "encode_vector",
    "entity_id",
    "entity_rows",
    "nearest",
    "normalise",
    "relation_rows",
    "relation_type",
    "resolve_names",
    "scope_fields",
]
