"""The graph store interface: entities and typed relations beside the memories.

Identity and the data model (scopes, normalised names, entity ids, the checked
rows a write becomes) live in :mod:`memkit.graph.model`; resolving a name to the
entity it means (alias, then nearest name embedding) in :mod:`memkit.graph.resolve`.
Both are re-exported here. Upserting an open relation that exists raises its
``weight`` (its mention count) and adds the memory ids it came from.

:meth:`GraphStore.resolve` maps a name to the entity it means: the same
normalised name, a name merged into it before (an alias), or, given the name's
embedding, the entity whose name embedding is nearest when the cosine reaches
the threshold (then the name is recorded as an alias). An add's resolution
records which memories used each alias, so forgetting the last of them forgets
the alias too.

An entity is linked to the memories whose relations touch it, and to those
whose adds named it (``add(..., entities=[...])``, :meth:`GraphStore.link_memories`);
:meth:`GraphStore.memory_ids_of` lists the latter.

A store that can write inside the vector store's transaction says so in
:meth:`GraphStore.joins` and returns a view on that transaction from
:meth:`GraphStore.bound`.

Async methods default to running the sync method in a worker thread; a store
with a native async client overrides them.
"""


from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from memkit._errors import GraphError, GraphStoreError
from memkit.graph.model import (
    UNKNOWN,
    Entity,
    EntityRow,
    GraphScope,
    NewEntity,
    NewRelation,
    Relation,
    RelationRow,
    Subgraph,
    check_depth,
    check_name,
    entity_id,
    entity_rows,
    normalise,
    relation_rows,
    relation_type,
    scope_fields,
)
from memkit.graph.resolve import decode_vector, encode_vector, nearest, resolve_names

T = TypeVar("T")


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
