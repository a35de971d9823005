"""The graph in Neo4j (5.x) or any Bolt + openCypher server, through the official driver.

Entities are nodes labelled ``label`` (default ``MemkitEntity``) keyed by the
id :func:`memkit.graph.base.entity_id` derives from the scope and the name;
relations are ``MEMKIT_RELATION`` relationships whose ``type`` property holds
the relation type, ``open`` says whether ``valid_to`` is unset. Every
statement is an idempotent auto-commit query (``MERGE``, ``UNWIND`` over list
parameters), so an operation interrupted half-way is finished by repeating it;
no engine-specific procedure is used. Name embeddings (for merging "Alice"
and "alice smith") are a node property (float16, base64) compared by memkit,
not an engine vector index; names merged into an entity are in its
``aliases`` list, and the memories whose adds used each one in ``alias_uses``
(``"<alias>\n<memory id>"``: an alias never holds a line break). The memories
an add named the entity in are its ``memory_ids``.

Bolt writes are not part of the vector store's transaction: an add writes its
memories first and its relations after that commit, as auto-commit
statements. A crash in between leaves the memories without their relations;
an add that mentions them again creates them (``MERGE``), and nothing points
at a memory that was not written.

``Neo4jGraph("bolt://localhost:7687", username="neo4j", password="...")``;
pass ``driver=`` / ``async_driver=`` to share drivers you own. ``indexes=True``
creates Neo4j 5 indexes on the entity id and scope (``CREATE INDEX ... IF NOT
EXISTS``); pass ``False`` on servers without that statement (FalkorDB) and
index ``id`` there yourself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

from memkit._env import env
from memkit._imports import require
from memkit.graph.base import (
    UNKNOWN,
    Entity,
    EntityRow,
    GraphError,
    GraphScope,
    GraphStore,
    GraphStoreError,
    NewEntity,
    NewRelation,
    Relation,
    Subgraph,
    check_depth,
    check_name,
    encode_vector,
    entity_id,
    entity_rows,
    normalise,
    relation_rows,
    relation_type,
    resolve_names,
    scope_fields,
)
from memkit.stores._ops import arun, run

neo4j: Any = require("neo4j", "neo4j")
#: what the driver raises when the server fails or cannot be reached
_ENGINE_ERRORS = (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError)

T = TypeVar("T")
Records = list[dict[str, Any]]
_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")
_REL = "MEMKIT_RELATION"
_ENTITY = ("e.id AS id, e.name AS name, e.type AS type, e.summary AS summary,"
           " e.user_id AS user_id, e.agent_id AS agent_id, e.run_id AS run_id,"
           " e.created_at AS created_at, e.updated_at AS updated_at")
_RELATION = ("r.id AS id, s.name AS source, r.type AS type, t.name AS target,"
             " s.id AS source_id, t.id AS target_id, r.weight AS weight,"
             " r.confidence AS confidence, r.valid_from AS valid_from, r.valid_to AS valid_to,"
             " r.memory_ids AS memory_ids, s.user_id AS user_id, s.agent_id AS agent_id,"
             " s.run_id AS run_id")


@dataclass(frozen=True, slots=True)
class Cypher:
    text: str
    params: dict[str, Any]


Op = Generator[Cypher, Records, T]


class CypherGraph:
    """The queries of one graph (nodes labelled ``label``)."""

    def __init__(self, label: str, indexes: bool) -> None:
        if not _LABEL.fullmatch(label):
            raise GraphError(f"label {label!r}: use letters, digits and '_', a letter first")
        self.label, self.indexes = label, indexes

    def schema(self) -> Op[None]:
        if self.indexes:
            for prop in ("id", "scope"):
                yield Cypher(f"CREATE INDEX {self.label}_{prop} IF NOT EXISTS"
                             f" FOR (e:{self.label}) ON (e.{prop})", {})

    def reset(self) -> Op[None]:
        yield Cypher(f"MATCH (e:{self.label}) DETACH DELETE e", {})

    def upsert_entities(self, scope: GraphScope, entities: Sequence[NewEntity],
                        now: str) -> Op[list[Entity]]:
        rows = {row.id: row for row in entity_rows(scope, entities)}
        yield from self._write_entities(scope, list(rows.values()), now, update=True)
        return (yield from self.entities_by_id(scope, list(rows)))

    def _write_entities(self, scope: GraphScope, rows: Sequence[EntityRow], now: str,
                        *, update: bool) -> Op[None]:
        if not rows:
            return
        on_match = (
            f" ON MATCH SET e.type = CASE WHEN row.type <> '{UNKNOWN}' THEN row.type"
            " ELSE e.type END, e.summary = coalesce(row.summary, e.summary),"
            " e.updated_at = $now" if update else "")
        yield from _each(
            f"UNWIND $rows AS row MERGE (e:{self.label} {{id: row.id}})"
            " ON CREATE SET e.scope = $scope, e.user_id = $user_id, e.agent_id = $agent_id,"
            " e.run_id = $run_id, e.name = row.name, e.norm = row.norm, e.type = row.type,"
            f" e.summary = row.summary, e.created_at = $now, e.updated_at = $now{on_match}",
            {"now": now, **_scope(scope)}, "rows",
            [{"id": r.id, "name": r.name, "norm": r.norm, "type": r.type, "summary": r.summary}
             for r in rows])

    def upsert_relations(self, scope: GraphScope, relations: Sequence[NewRelation],
                         now: str) -> Op[list[Relation]]:
        rows = relation_rows(scope, relations)
        if not rows:
            return []
        endpoints = {e.id: e for r in reversed(rows) for e in (r.target, r.source)}  # first wins
        yield from self._write_entities(scope, list(endpoints.values()), now, update=False)
        found = yield from _each(
            f"UNWIND $rows AS row MATCH (s:{self.label} {{id: row.source_id}})"
            f" MATCH (t:{self.label} {{id: row.target_id}})"
            f" MERGE (s)-[r:{_REL} {{type: row.type, open: true}}]->(t)"
            " ON CREATE SET r.id = row.id, r.scope = $scope, r.weight = row.weight,"
            " r.confidence = row.confidence, r.valid_from = $now, r.updated_at = $now,"
            " r.memory_ids = row.memory_ids"
            " ON MATCH SET r.weight = r.weight + row.weight,"
            " r.confidence = CASE WHEN row.confidence > r.confidence THEN row.confidence"
            " ELSE r.confidence END, r.updated_at = $now,"
            " r.memory_ids = r.memory_ids + [m IN row.memory_ids WHERE NOT m IN r.memory_ids]"
            f" RETURN {_RELATION}", {"now": now, "scope": scope.key}, "rows",
            [{"id": r.id, "source_id": r.source.id, "type": r.type, "target_id": r.target.id,
              "weight": r.weight, "confidence": r.confidence, "memory_ids": list(r.memory_ids)}
             for r in rows])
        return sorted((_relation(row) for row in found), key=_relation_order)

    def close_relations(self, scope: GraphScope, ids: Sequence[str], now: str) -> Op[list[Relation]]:
        if not ids:
            return []
        closing = yield from self._relations_where(scope, "r.open AND r.id IN $ids", {}, ids)
        yield from _each(
            f"MATCH (:{self.label})-[r:{_REL}]->(:{self.label}) WHERE r.scope = $scope AND r.open"
            " AND r.id IN $ids SET r.open = false, r.valid_to = $now, r.updated_at = $now",
            {"scope": scope.key, "now": now}, "ids", [r.id for r in closing])
        return [replace(r, valid_to=now) for r in closing]

    def delete_entities(self, scope: GraphScope, names: Sequence[str]) -> Op[list[Entity]]:
        ids = [entity_id(scope, check_name(n)) for n in names]
        found = yield from self.entities_by_id(scope, ids)
        if found:
            yield from _each(f"UNWIND $ids AS id MATCH (e:{self.label} {{id: id}})"
                             " WHERE e.scope = $scope DETACH DELETE e", {"scope": scope.key}, "ids",
                             [e.id for e in found])
        return found

    def forget_memories(self, memory_ids: Sequence[str]) -> Op[list[str]]:
        left: dict[str, tuple[int, str, str]] = {}
        for row in (yield from _each(  # batch by batch: the last answer per relation counts
                f"MATCH (s:{self.label})-[r:{_REL}]->(t:{self.label})"
                " WHERE any(m IN r.memory_ids WHERE m IN $ids)"
                " SET r.memory_ids = [m IN r.memory_ids WHERE NOT m IN $ids]"
                " RETURN r.id AS id, size(r.memory_ids) AS left, s.id AS source, t.id AS target",
                {}, "ids", list(memory_ids))):
            left[row["id"]] = (row["left"], row["source"], row["target"])
        named = yield from _each(
            f"MATCH (e:{self.label}) WHERE any(m IN coalesce(e.memory_ids, []) WHERE m IN $ids)"
            " SET e.memory_ids = [m IN e.memory_ids WHERE NOT m IN $ids] RETURN e.id AS id",
            {}, "ids", list(memory_ids))
        yield from self._forget_aliases(memory_ids)
        doomed = sorted(id for id, (count, _, _) in left.items() if count == 0)
        yield from _each(f"MATCH (:{self.label})-[r:{_REL}]->(:{self.label})"
                         " WHERE r.id IN $ids DELETE r", {}, "ids", doomed)
        ends = sorted({end for id in doomed for end in left[id][1:]}
                      | {row["id"] for row in named})
        lonely = yield from _each(
            f"UNWIND $ids AS id MATCH (e:{self.label} {{id: id}})"
            " WHERE size(coalesce(e.memory_ids, [])) = 0"
            f" OPTIONAL MATCH (e)-[x:{_REL}]-() WITH id, e, count(x) AS n WHERE n = 0"
            " DELETE e RETURN id", {}, "ids", ends)
        return doomed + [row["id"] for row in lonely]

    def _forget_aliases(self, memory_ids: Sequence[str]) -> Op[None]:
        """The aliases only these memories' adds used go (those from before memkit recorded
        who used an alias stay)."""
        gone = set(memory_ids)
        rows = yield from _each(
            f"MATCH (e:{self.label}) WHERE any(u IN coalesce(e.alias_uses, [])"
            " WHERE any(m IN $ids WHERE u ENDS WITH ($nl + m)))"
            " RETURN e.id AS id, e.aliases AS aliases, e.alias_uses AS uses",
            {"nl": "\n"}, "ids", list(memory_ids))
        changed = {}
        for row in rows:
            uses = [u.split("\n", 1) for u in row["uses"]]
            kept = [(norm, m) for norm, m in uses if m not in gone]
            dropped = {norm for norm, _ in uses} - {norm for norm, _ in kept}
            changed[row["id"]] = {"id": row["id"], "uses": [f"{n}\n{m}" for n, m in kept],
                                  "aliases": [a for a in row["aliases"] or [] if a not in dropped]}
        yield from _each(
            f"UNWIND $rows AS row MATCH (e:{self.label} {{id: row.id}})"
            " SET e.alias_uses = row.uses, e.aliases = row.aliases", {}, "rows",
            list(changed.values()))

    def forget_scope(self, scope: Mapping[str, str]) -> Op[None]:
        fields, params = scope_fields(scope)
        where = " AND ".join(f"e.{f} = ${f}" for f in fields)
        yield Cypher(f"MATCH (e:{self.label}) WHERE {where} DETACH DELETE e", params)

    def repoint(self, scope: GraphScope, moves: Sequence[tuple[str, str]]) -> Op[None]:
        for old, new in moves:  # one query per move: a relation may hold several of them
            params = {"scope": scope.key, "old": old, "new": new}
            yield Cypher(
                f"MATCH (:{self.label})-[r:{_REL}]->(:{self.label}) WHERE r.scope = $scope"
                " AND $old IN r.memory_ids SET r.memory_ids = [m IN r.memory_ids WHERE m <> $old]"
                " + CASE WHEN $new IN r.memory_ids THEN [] ELSE [$new] END", params)
            yield Cypher(
                f"MATCH (e:{self.label}) WHERE e.scope = $scope AND $old IN"
                " coalesce(e.memory_ids, []) SET e.memory_ids = [m IN e.memory_ids WHERE m <> $old]"
                " + CASE WHEN $new IN e.memory_ids THEN [] ELSE [$new] END", params)
            rows = yield Cypher(
                f"MATCH (e:{self.label}) WHERE e.scope = $scope AND any(u IN"
                " coalesce(e.alias_uses, []) WHERE u ENDS WITH ($nl + $old))"
                " RETURN e.id AS id, e.alias_uses AS uses", {**params, "nl": "\n"})
            for row in rows:
                uses = [u.split("\n", 1) for u in row["uses"]]
                moved = [f"{n}\n{new if m == old else m}" for n, m in uses]
                yield Cypher(f"MATCH (e:{self.label} {{id: $id}}) SET e.alias_uses = $uses",
                             {"id": row["id"], "uses": list(dict.fromkeys(moved))})

    def delete_relations(self, scope: GraphScope, ids: Sequence[str]) -> Op[int]:
        if not ids:
            return 0
        match = (f"MATCH (:{self.label})-[r:{_REL}]->(:{self.label})"
                 " WHERE r.scope = $scope AND r.id IN $ids")
        found = yield from _each(f"{match} RETURN r.id AS id", {"scope": scope.key}, "ids", ids)
        if found:
            yield from _each(f"{match} DELETE r", {"scope": scope.key}, "ids",
                             [row["id"] for row in found])
        return len(found)

    def resolve(self, scope: GraphScope, names: Sequence[str],
                vectors: Sequence[Sequence[float]] | None, threshold: float,
                memory_ids: Sequence[str] = ()) -> Op[dict[str, str]]:
        return (yield from resolve_names(self, scope, names, vectors, threshold, memory_ids))

    def names_by_id(self, scope: GraphScope, ids: Sequence[str]) -> Op[dict[str, str]]:
        return {e.id: e.name for e in (yield from self.entities_by_id(scope, ids))}

    def names_by_alias(self, scope: GraphScope, norms: Sequence[str]) -> Op[dict[str, str]]:
        rows = yield from _each(
            f"UNWIND $ids AS norm MATCH (e:{self.label}) WHERE e.scope = $scope"
            " AND norm IN coalesce(e.aliases, []) RETURN norm, e.name AS name",
            {"scope": scope.key}, "ids", norms)
        return {row["norm"]: row["name"] for row in rows}

    def embedded(self, scope: GraphScope) -> Op[list[tuple[str, str, str]]]:
        rows = yield Cypher(
            f"MATCH (e:{self.label}) WHERE e.scope = $scope AND e.embedding IS NOT NULL"
            " RETURN e.id AS id, e.name AS name, e.embedding AS embedding ORDER BY e.id",
            {"scope": scope.key})
        return [(row["id"], row["name"], row["embedding"]) for row in rows]

    def add_aliases(self, scope: GraphScope, aliases: Sequence[tuple[str, str]]) -> Op[None]:
        yield from _each(
            f"UNWIND $rows AS row MATCH (e:{self.label} {{id: row.id}}) WHERE"
            " e.scope = $scope SET e.aliases = CASE WHEN row.norm IN coalesce(e.aliases, [])"
            " THEN e.aliases ELSE coalesce(e.aliases, []) + [row.norm] END",
            {"scope": scope.key}, "rows", [{"id": id, "norm": norm} for norm, id in aliases])

    def support_aliases(self, scope: GraphScope, norms: Sequence[str],
                        memory_ids: Sequence[str]) -> Op[None]:
        yield from _each(
            f"UNWIND $rows AS row MATCH (e:{self.label}) WHERE e.scope = $scope"
            " AND row.norm IN coalesce(e.aliases, []) SET e.alias_uses ="
            " coalesce(e.alias_uses, []) + [u IN row.uses WHERE NOT u IN coalesce(e.alias_uses, [])]",
            {"scope": scope.key}, "rows",
            [{"norm": norm, "uses": [f"{norm}\n{m}" for m in memory_ids]} for norm in norms])

    def link_memories(self, scope: GraphScope, names: Sequence[str], memory_ids: Sequence[str],
                      now: str) -> Op[list[Entity]]:
        rows = entity_rows(scope, [NewEntity(n) for n in names])
        yield from self._write_entities(scope, rows, now, update=False)
        yield from _each(
            f"UNWIND $ids AS id MATCH (e:{self.label} {{id: id}}) WHERE e.scope = $scope"
            " SET e.memory_ids = coalesce(e.memory_ids, []) + [m IN $memory_ids WHERE NOT m IN"
            " coalesce(e.memory_ids, [])]", {"scope": scope.key, "memory_ids": list(memory_ids)},
            "ids", [r.id for r in rows])
        return (yield from self.entities_by_id(scope, [r.id for r in rows]))

    def memory_ids_of(self, scope: GraphScope, ids: Sequence[str]) -> Op[list[str]]:
        rows = yield from _each(
            f"UNWIND $ids AS id MATCH (e:{self.label} {{id: id}}) WHERE e.scope = $scope"
            " RETURN coalesce(e.memory_ids, []) AS memory_ids", {"scope": scope.key}, "ids", ids)
        return sorted({m for row in rows for m in row["memory_ids"]})

    def set_vectors(self, scope: GraphScope, names: Sequence[str],
                    vectors: Sequence[Sequence[float]]) -> Op[None]:
        yield from _each(
            f"UNWIND $rows AS row MATCH (e:{self.label} {{id: row.id}}) WHERE e.scope = $scope"
            " AND e.embedding IS NULL SET e.embedding = row.embedding", {"scope": scope.key},
            "rows", [{"id": entity_id(scope, check_name(name)), "embedding": encode_vector(v)}
                     for name, v in zip(names, vectors, strict=True)])

    def embedded_names(self) -> Op[list[tuple[str, str]]]:
        rows = yield Cypher(f"MATCH (e:{self.label}) WHERE e.embedding IS NOT NULL"
                            " RETURN e.id AS id, e.name AS name ORDER BY e.id", {})
        return [(row["id"], row["name"]) for row in rows]

    def replace_vectors(self, ids: Sequence[str],
                        vectors: Sequence[Sequence[float] | None]) -> Op[None]:
        yield from _each(
            f"UNWIND $rows AS row MATCH (e:{self.label} {{id: row.id}})"
            " SET e.embedding = row.embedding", {}, "rows",
            [{"id": id, "embedding": None if v is None else encode_vector(v)}
             for id, v in zip(ids, vectors, strict=True)])

    def entities(self, scope: GraphScope, names: Sequence[str] | None, type: str | None,
                 limit: int) -> Op[list[Entity]]:
        if names is not None:
            found = yield from self.entities_by_id(
                scope, [entity_id(scope, check_name(n)) for n in names])
            return [e for e in found if type is None or e.type == normalise(type)][:limit]
        where, params = "e.scope = $scope", {"scope": scope.key}
        if type is not None:
            where += " AND e.type = $type"
            params["type"] = normalise(type)
        rows = yield Cypher(f"MATCH (e:{self.label}) WHERE {where} RETURN {_ENTITY}"
                            f" ORDER BY e.norm, e.id LIMIT {int(limit)}", params)
        return [Entity(**row) for row in rows]

    def entities_by_id(self, scope: GraphScope, ids: Sequence[str]) -> Op[list[Entity]]:
        """The scope's entities among ``ids``, by normalised name."""
        if not ids:
            return []
        rows = yield from _each(
            f"UNWIND $ids AS id MATCH (e:{self.label} {{id: id}}) WHERE e.scope = $scope"
            f" RETURN {_ENTITY}",
            {"scope": scope.key}, "ids", ids)
        return sorted((Entity(**row) for row in rows), key=lambda e: (normalise(e.name), e.id))

    def relations(self, scope: GraphScope, source: str | None, type: str | None,
                  target: str | None, memory_ids: Sequence[str] | None,
                  include_closed: bool) -> Op[list[Relation]]:
        where: list[str] = []
        params: dict[str, Any] = {}
        if not include_closed:
            where.append("r.open")
        for node, name in (("s", source), ("t", target)):
            if name is not None:
                where.append(f"{node}.id = ${node}_id")
                params[f"{node}_id"] = entity_id(scope, check_name(name))
        if type is not None:
            where.append("r.type = $type")
            params["type"] = relation_type(type)
        if memory_ids is not None:
            where.append("any(m IN r.memory_ids WHERE m IN $memory_ids)")
            params["memory_ids"] = list(memory_ids)
        return (yield from self._relations_where(scope, " AND ".join(where) or "true", params))

    def _relations_where(self, scope: GraphScope, where: str, params: dict[str, Any],
                         ids: Sequence[str] | None = None, *,
                         from_ids: bool = False) -> Op[list[Relation]]:
        """Relations matching ``where``; with ``ids``, run in batches over ``$ids``;
        ``from_ids``: the relations leaving those entities, found through the id index."""
        source = f"(s:{self.label} {{id: id}})" if from_ids else f"(s:{self.label})"
        text = (f"{'UNWIND $ids AS id ' if from_ids else ''}MATCH {source}-[r:{_REL}]->"
                f"(t:{self.label}) WHERE r.scope = $scope AND {where} RETURN {_RELATION}")
        params = {**params, "scope": scope.key}
        rows = (yield from _each(text, params, "ids", ids)) if ids is not None else (
            yield Cypher(text, params))
        return sorted((_relation(row) for row in rows), key=_relation_order)

    def neighbourhood(self, scope: GraphScope, names: Sequence[str],
                      depth: int) -> Op[Subgraph]:
        check_depth(depth)
        seeds = [entity_id(scope, check_name(n)) for n in names]
        if not seeds:
            return Subgraph()
        scoped = {"scope": scope.key}
        # entities come back with the walk itself: every extra round trip costs a delayed
        # ACK on FalkorDB's Bolt endpoint (about 40 ms per answer over one segment)
        found = yield from self.entities_by_id(scope, seeds)
        entities = {e.id: e for e in found}
        if depth and entities:
            reached = yield from _each(
                f"UNWIND $ids AS id MATCH (s:{self.label} {{id: id}}) WHERE s.scope = $scope"
                f" MATCH p = (s)-[:{_REL}*1..{depth}]-(e:{self.label})"
                f" WHERE all(r IN relationships(p) WHERE r.open) RETURN DISTINCT {_ENTITY}",
                scoped, "ids", sorted(entities))
            entities.update((row["id"], Entity(**row)) for row in reached)
        ids = set(entities)
        # the relations among them: those leaving each batch whose target is in the set
        leaving = yield from self._relations_where(scope, "r.open", {}, sorted(ids),
                                                   from_ids=True)
        return Subgraph(sorted(entities.values(), key=lambda e: (normalise(e.name), e.id)),
                        [r for r in leaving if r.target_id in ids])


_BATCH_BYTES = 3000


def _each(text: str, params: dict[str, Any], name: str, items: Sequence[Any]) -> Op[Records]:
    """``text`` once per batch of ``items`` (bound to ``$name``), the rows of all batches.

    Batches stay under a few KiB of parameters: FalkorDB's Bolt endpoint crashes on a
    message spanning several chunks, and on Neo4j small batches cost nothing.
    """
    rows: Records = []
    batch: list[Any] = []
    size = 0
    for item in items:
        cost = len(json.dumps(item, default=str))
        if batch and size + cost > _BATCH_BYTES:
            rows += yield Cypher(text, {**params, name: batch})
            batch, size = [], 0
        batch.append(item)
        size += cost
    if batch:
        rows += yield Cypher(text, {**params, name: batch})
    return rows


def _relation_order(r: Relation) -> tuple[str, str, str, str, str]:
    return normalise(r.source), r.type, normalise(r.target), r.valid_from, r.id


def _scope(scope: GraphScope) -> dict[str, Any]:
    return {"scope": scope.key, "user_id": scope.user_id, "agent_id": scope.agent_id,
            "run_id": scope.run_id}


def _relation(row: dict[str, Any]) -> Relation:
    return Relation(**{**row, "weight": float(row["weight"]),
                       "confidence": float(row["confidence"]),
                       "memory_ids": tuple(row["memory_ids"] or ())})


class Neo4jGraph(GraphStore):
    """A graph on a Bolt server: Neo4j 5, or another openCypher server.

    What the config leaves out comes from ``NEO4J_URI``, ``NEO4J_USERNAME``,
    ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE``, then ``bolt://localhost:7687`` as ``neo4j``."""

    provider: ClassVar[str] = "neo4j"
    ops: CypherGraph

    def __init__(self, url: str | None = None, username: str | None = None,
                 password: str | None = None, database: str | None = None,
                 label: str = "MemkitEntity", indexes: bool = True, *, driver: Any = None,
                 async_driver: Any = None) -> None:
        self.url = url or env("NEO4J_URI", "NEO4J_URL") or "bolt://localhost:7687"
        self.database = database or env("NEO4J_DATABASE")
        self.ops = CypherGraph(label, indexes)
        self.username = (username if username is not None
                         else env("NEO4J_USERNAME", "NEO4J_USER") or "neo4j")
        self._auth = (self.username,
                      password if password is not None else env("NEO4J_PASSWORD") or "")
        self._driver, self._adriver = driver, async_driver
        self._owns = driver is None, async_driver is None
        self._ready = False

    def _run(self, op: Op[T]) -> T:
        if self._driver is None:
            self._driver = neo4j.GraphDatabase.driver(self.url, auth=self._auth)
        with self._driver.session(database=self.database) as session:
            if not self._ready:
                _drive(session, self.ops.schema())
                self._ready = True
            return _drive(session, op)

    async def _arun(self, op: Op[T]) -> T:
        if self._adriver is None:
            self._adriver = neo4j.AsyncGraphDatabase.driver(self.url, auth=self._auth)
        async with self._adriver.session(database=self.database) as session:
            if not self._ready:
                await _adrive(session, self.ops.schema())
                self._ready = True
            return await _adrive(session, op)

    def close(self) -> None:
        if self._driver is not None and self._owns[0]:
            self._driver.close()
        self._driver = None
        self._adriver = None if self._owns[1] else self._adriver

    async def aclose(self) -> None:
        if self._adriver is not None and self._owns[1]:
            await self._adriver.close()
        self._adriver = None
        self.close()


def _drive(session: Any, op: Op[T]) -> T:
    def execute(query: Cypher) -> Records:
        try:
            return session.run(query.text, query.params).data()  # type: ignore[no-any-return]
        except _ENGINE_ERRORS as exc:
            raise GraphStoreError(f"{type(exc).__name__}: {exc}") from exc

    return run(op, execute)


async def _adrive(session: Any, op: Op[T]) -> T:
    async def execute(query: Cypher) -> Records:
        try:
            return await (await session.run(query.text, query.params)).data()  # type: ignore[no-any-return]
        except _ENGINE_ERRORS as exc:
            raise GraphStoreError(f"{type(exc).__name__}: {exc}") from exc

    return await arun(op, execute)


__all__ = ["CypherGraph", "Neo4jGraph"]
