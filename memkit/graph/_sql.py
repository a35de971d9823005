"""The graph in SQL, written once for SQLite and PostgreSQL.

Six tables per graph: ``<name>_entities`` (with each name's embedding),
``<name>_aliases`` (names merged into an entity), ``<name>_relations``,
``<name>_relation_memories`` (which memory each relation came from),
``<name>_entity_memories`` (the memories an add named the entity in) and
``<name>_alias_memories`` (the memories whose adds used an alias). An open
relation is unique on (scope, source, type, target): a partial unique index,
so a mention is one ``INSERT ... ON CONFLICT DO UPDATE`` on both engines.
Neighbourhoods are recursive CTEs over the open relations, both directions;
each step looks edges up through the partial indexes on ``source_id`` and
``target_id`` (a union of both directions as one derived table would be
scanned whole at every step: 0.8 s for depth 2 on 100k relations).

Every operation is a generator yielding :class:`Query` objects (``:name``
parameters) and receiving their rows; each engine module runs it in a
transaction and says how a list parameter is matched (:class:`Dialect`).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from memkit.graph.base import (
    UNKNOWN,
    Entity,
    EntityRow,
    GraphScope,
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

T = TypeVar("T")
Rows = list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Query:
    sql: str
    params: dict[str, Any]
    many: Sequence[dict[str, Any]] | None = None  # run once per parameter set


Op = Generator[Query, Rows, T]


@dataclass(frozen=True, slots=True)
class Dialect:
    """``member(column, param)``: SQL true when ``column`` is in the list parameter ``param``;
    ``listed(values)``: that parameter's value."""

    name: str

    def step(self, relations: str) -> str:
        """The recursive part of the walk over ``walk (id, depth)``: one hop either way."""
        open_ = "valid_to IS NULL AND scope = :scope"
        if self.name == "sqlite":  # two recursive selects, each on its own index
            return "".join(
                f"{' UNION' if there == 'source' else ''} SELECT r.{there}_id, w.depth + 1"
                f" FROM walk w JOIN {relations} r ON r.{here}_id = w.id"
                " WHERE r.valid_to IS NULL AND r.scope = :scope AND w.depth < :depth"
                for here, there in (("source", "target"), ("target", "source")))
        return (  # PostgreSQL names the recursive table once: both directions in a LATERAL
            " SELECT edge.b, w.depth + 1 FROM walk w CROSS JOIN LATERAL ("
            f"  SELECT target_id AS b FROM {relations} WHERE source_id = w.id AND {open_}"
            f"  UNION ALL SELECT source_id FROM {relations} WHERE target_id = w.id AND {open_}"
            " ) edge WHERE w.depth < :depth")

    def member(self, column: str, param: str) -> str:
        if self.name == "sqlite":
            return f"{column} IN (SELECT value FROM json_each(:{param}))"
        return f"{column} = ANY(:{param})"

    def listed(self, values: Sequence[str]) -> Any:
        return json.dumps(list(values)) if self.name == "sqlite" else list(values)


_ENTITY_COLUMNS = "e.id, e.name, e.type, e.summary, e.user_id, e.agent_id, e.run_id, " \
    "e.created_at, e.updated_at"


class SQLGraph:
    """The statements of one graph (table prefix ``name``) in one dialect."""

    def __init__(self, name: str, dialect: Dialect) -> None:
        self.dialect = dialect
        self.e = f'"{name}_entities"'
        self.r = f'"{name}_relations"'
        self.m = f'"{name}_relation_memories"'
        self.a = f'"{name}_aliases"'
        self.em = f'"{name}_entity_memories"'
        self.am = f'"{name}_alias_memories"'
        self._name = name

    def schema(self) -> Op[None]:
        n = self._name
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.e} (id TEXT PRIMARY KEY, scope TEXT NOT NULL,"
            " user_id TEXT, agent_id TEXT, run_id TEXT, name TEXT NOT NULL, norm TEXT NOT NULL,"
            " type TEXT NOT NULL, summary TEXT, created_at TEXT NOT NULL,"
            " updated_at TEXT NOT NULL, embedding TEXT)", {})
        yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_entities_scope" ON {self.e} (scope, norm)', {})
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.r} (id TEXT PRIMARY KEY, scope TEXT NOT NULL,"
            f" source_id TEXT NOT NULL REFERENCES {self.e} (id) ON DELETE CASCADE,"
            " type TEXT NOT NULL,"
            f" target_id TEXT NOT NULL REFERENCES {self.e} (id) ON DELETE CASCADE,"
            " weight REAL NOT NULL, confidence REAL NOT NULL, valid_from TEXT NOT NULL,"
            " valid_to TEXT, updated_at TEXT NOT NULL)", {})
        yield Query(
            f'CREATE UNIQUE INDEX IF NOT EXISTS "{n}_relations_open" ON {self.r}'
            " (scope, source_id, type, target_id) WHERE valid_to IS NULL", {})
        for end in ("source", "target"):
            yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_relations_{end}" ON {self.r}'
                        f" ({end}_id)", {})
            yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_relations_{end}_open" ON {self.r}'
                        f" ({end}_id, scope) WHERE valid_to IS NULL", {})
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.m} ("
            f" relation_id TEXT NOT NULL REFERENCES {self.r} (id) ON DELETE CASCADE,"
            " memory_id TEXT NOT NULL, PRIMARY KEY (relation_id, memory_id))", {})
        yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_relation_memories_memory" ON {self.m}'
                    " (memory_id)", {})
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.a} (scope TEXT NOT NULL, norm TEXT NOT NULL,"
            f" entity_id TEXT NOT NULL REFERENCES {self.e} (id) ON DELETE CASCADE,"
            " PRIMARY KEY (scope, norm))", {})
        yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_aliases_entity" ON {self.a} (entity_id)', {})
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.em} ("
            f" entity_id TEXT NOT NULL REFERENCES {self.e} (id) ON DELETE CASCADE,"
            " memory_id TEXT NOT NULL, PRIMARY KEY (entity_id, memory_id))", {})
        yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_entity_memories_memory" ON {self.em}'
                    " (memory_id)", {})
        yield Query(
            f"CREATE TABLE IF NOT EXISTS {self.am} (scope TEXT NOT NULL, norm TEXT NOT NULL,"
            " memory_id TEXT NOT NULL, PRIMARY KEY (scope, norm, memory_id),"
            f" FOREIGN KEY (scope, norm) REFERENCES {self.a} (scope, norm) ON DELETE CASCADE)",
            {})
        yield Query(f'CREATE INDEX IF NOT EXISTS "{n}_alias_memories_memory" ON {self.am}'
                    " (memory_id)", {})

    def reset(self) -> Op[None]:
        for table in (self.am, self.em, self.m, self.a, self.r, self.e):
            yield Query(f"DELETE FROM {table}", {})

    # -- writes --------------------------------------------------------------
    def upsert_entities(self, scope: GraphScope, entities: Sequence[NewEntity],
                        now: str) -> Op[list[Entity]]:
        rows = {row.id: row for row in entity_rows(scope, entities)}
        yield from self._write_entities(scope, list(rows.values()), now, update=True)
        return (yield from self.entities_by_id(scope, list(rows)))

    def _write_entities(self, scope: GraphScope, rows: Sequence[EntityRow], now: str,
                        *, update: bool) -> Op[None]:
        if not rows:
            return
        on_conflict = (
            f"DO UPDATE SET type = CASE WHEN excluded.type <> '{UNKNOWN}' THEN excluded.type"
            f" ELSE {self.e}.type END, summary = COALESCE(excluded.summary, {self.e}.summary),"
            " updated_at = excluded.updated_at" if update else "DO NOTHING")
        yield Query(
            f"INSERT INTO {self.e} (id, scope, user_id, agent_id, run_id, name, norm, type,"
            " summary, created_at, updated_at) VALUES (:id, :scope, :user_id, :agent_id, :run_id,"
            f" :name, :norm, :type, :summary, :now, :now) ON CONFLICT (id) {on_conflict}",
            {}, [{"id": r.id, "scope": scope.key, "user_id": scope.user_id,
                  "agent_id": scope.agent_id, "run_id": scope.run_id, "name": r.name,
                  "norm": r.norm, "type": r.type, "summary": r.summary, "now": now}
                 for r in rows])

    def upsert_relations(self, scope: GraphScope, relations: Sequence[NewRelation],
                         now: str) -> Op[list[Relation]]:
        rows = relation_rows(scope, relations)
        if not rows:
            return []
        endpoints = {e.id: e for r in reversed(rows) for e in (r.target, r.source)}  # first wins
        yield from self._write_entities(scope, list(endpoints.values()), now, update=False)
        ids: list[str] = []
        for row in rows:
            found = yield Query(
                f"INSERT INTO {self.r} AS r (id, scope, source_id, type, target_id, weight,"
                " confidence, valid_from, valid_to, updated_at) VALUES (:id, :scope, :source_id,"
                " :type, :target_id, :weight, :confidence, :now, NULL, :now)"
                " ON CONFLICT (scope, source_id, type, target_id) WHERE valid_to IS NULL"
                " DO UPDATE SET weight = r.weight + excluded.weight,"
                " confidence = CASE WHEN excluded.confidence > r.confidence"
                " THEN excluded.confidence ELSE r.confidence END, updated_at = excluded.updated_at"
                " RETURNING id",
                {"id": row.id, "scope": scope.key, "source_id": row.source.id, "type": row.type,
                 "target_id": row.target.id, "weight": row.weight,
                 "confidence": row.confidence, "now": now})
            ids.append(found[0][0])
            if row.memory_ids:
                yield Query(
                    f"INSERT INTO {self.m} (relation_id, memory_id) VALUES (:relation_id,"
                    " :memory_id) ON CONFLICT DO NOTHING", {},
                    [{"relation_id": found[0][0], "memory_id": m} for m in row.memory_ids])
        return (yield from self._relations_where(scope, self.dialect.member("r.id", "ids"),
                                                 {"ids": self.dialect.listed(ids)}))

    def close_relations(self, scope: GraphScope, ids: Sequence[str], now: str) -> Op[list[Relation]]:
        if not ids:
            return []
        listed = {"ids": self.dialect.listed(ids)}
        closing = yield from self._relations_where(
            scope, f"r.valid_to IS NULL AND {self.dialect.member('r.id', 'ids')}", listed)
        yield Query(
            f"UPDATE {self.r} SET valid_to = :now, updated_at = :now WHERE scope = :scope"
            f" AND valid_to IS NULL AND {self.dialect.member('id', 'ids')}",
            {"now": now, "scope": scope.key, **listed})
        return [_closed(r, now) for r in closing]

    def delete_entities(self, scope: GraphScope, names: Sequence[str]) -> Op[list[Entity]]:
        ids = [entity_id(scope, check_name(n)) for n in names]
        found = yield from self.entities_by_id(scope, ids)
        if found:
            listed = {"ids": self.dialect.listed([e.id for e in found]), "scope": scope.key}
            yield Query(
                f"DELETE FROM {self.r} WHERE scope = :scope AND ("
                f"{self.dialect.member('source_id', 'ids')} OR "
                f"{self.dialect.member('target_id', 'ids')})", listed)
            yield Query(f"DELETE FROM {self.a} WHERE scope = :scope AND"
                        f" {self.dialect.member('entity_id', 'ids')}", listed)
            yield Query(f"DELETE FROM {self.e} WHERE scope = :scope AND"
                        f" {self.dialect.member('id', 'ids')}", listed)
        return found

    def forget_memories(self, memory_ids: Sequence[str]) -> Op[list[str]]:
        member, listed = self.dialect.member, self.dialect.listed
        ids = {"ids": listed(memory_ids)}
        rows = yield Query(f"SELECT DISTINCT relation_id FROM {self.m} WHERE"
                           f" {member('memory_id', 'ids')}", ids)
        named = yield Query(f"SELECT DISTINCT entity_id FROM {self.em} WHERE"
                            f" {member('memory_id', 'ids')}", ids)
        yield from self._forget_aliases(memory_ids)
        if not rows and not named:
            return []
        yield Query(f"DELETE FROM {self.m} WHERE {member('memory_id', 'ids')}", ids)
        yield Query(f"DELETE FROM {self.em} WHERE {member('memory_id', 'ids')}", ids)
        doomed = (yield Query(
            f"DELETE FROM {self.r} WHERE {member('id', 'ids')} AND NOT EXISTS (SELECT 1 FROM"
            f" {self.m} WHERE relation_id = {self.r}.id) RETURNING id, source_id, target_id",
            {"ids": listed([row[0] for row in rows])})) if rows else []
        ends = sorted({end for row in doomed for end in row[1:]} | {row[0] for row in named})
        lonely = yield Query(
            f"SELECT id FROM {self.e} e WHERE {member('e.id', 'ids')} AND NOT EXISTS (SELECT 1"
            f" FROM {self.r} WHERE source_id = e.id OR target_id = e.id) AND NOT EXISTS"
            f" (SELECT 1 FROM {self.em} WHERE entity_id = e.id)", {"ids": listed(ends)})
        gone = {"ids": listed([row[0] for row in lonely])}
        yield Query(f"DELETE FROM {self.a} WHERE {member('entity_id', 'ids')}", gone)
        yield Query(f"DELETE FROM {self.e} WHERE {member('id', 'ids')}", gone)
        return [row[0] for row in doomed] + [row[0] for row in lonely]

    def _forget_aliases(self, memory_ids: Sequence[str]) -> Op[None]:
        """The aliases only these memories' adds used go (those from before memkit recorded
        who used an alias stay)."""
        ids = {"ids": self.dialect.listed(memory_ids)}
        used = yield Query(f"SELECT DISTINCT scope, norm FROM {self.am} WHERE"
                           f" {self.dialect.member('memory_id', 'ids')}", ids)
        if not used:
            return
        yield Query(f"DELETE FROM {self.am} WHERE {self.dialect.member('memory_id', 'ids')}",
                    ids)
        yield Query(f"DELETE FROM {self.a} WHERE scope = :scope AND norm = :norm AND NOT EXISTS"
                    f" (SELECT 1 FROM {self.am} u WHERE u.scope = :scope AND u.norm = :norm)",
                    {}, [{"scope": scope, "norm": norm} for scope, norm in used])

    def forget_scope(self, scope: Mapping[str, str]) -> Op[None]:
        fields, params = scope_fields(scope)
        entities = f"SELECT id FROM {self.e} WHERE " + " AND ".join(
            f"{f} = :{f}" for f in fields)
        yield Query(f"DELETE FROM {self.m} WHERE relation_id IN (SELECT id FROM {self.r}"
                    f" WHERE source_id IN ({entities}))", params)
        yield Query(f"DELETE FROM {self.em} WHERE entity_id IN ({entities})", params)
        yield Query(f"DELETE FROM {self.am} WHERE scope IN (SELECT scope FROM {self.e} WHERE "
                    + " AND ".join(f"{f} = :{f}" for f in fields) + ")", params)
        yield Query(f"DELETE FROM {self.r} WHERE source_id IN ({entities})"
                    f" OR target_id IN ({entities})", params)
        yield Query(f"DELETE FROM {self.a} WHERE entity_id IN ({entities})", params)
        yield Query(f"DELETE FROM {self.e} WHERE id IN ({entities})", params)

    def resolve(self, scope: GraphScope, names: Sequence[str],
                vectors: Sequence[Sequence[float]] | None, threshold: float,
                memory_ids: Sequence[str] = ()) -> Op[dict[str, str]]:
        return (yield from resolve_names(self, scope, names, vectors, threshold, memory_ids))

    def names_by_id(self, scope: GraphScope, ids: Sequence[str]) -> Op[dict[str, str]]:
        rows = yield Query(f"SELECT id, name FROM {self.e} WHERE scope = :scope AND"
                           f" {self.dialect.member('id', 'ids')}",
                           {"scope": scope.key, "ids": self.dialect.listed(ids)})
        return {row[0]: row[1] for row in rows}

    def names_by_alias(self, scope: GraphScope, norms: Sequence[str]) -> Op[dict[str, str]]:
        rows = yield Query(
            f"SELECT a.norm, e.name FROM {self.a} a JOIN {self.e} e ON e.id = a.entity_id"
            f" WHERE a.scope = :scope AND {self.dialect.member('a.norm', 'norms')}",
            {"scope": scope.key, "norms": self.dialect.listed(norms)})
        return {row[0]: row[1] for row in rows}

    def embedded(self, scope: GraphScope) -> Op[list[tuple[str, str, str]]]:
        rows = yield Query(f"SELECT id, name, embedding FROM {self.e} WHERE scope = :scope"
                           " AND embedding IS NOT NULL ORDER BY id", {"scope": scope.key})
        return [(row[0], row[1], row[2]) for row in rows]

    def add_aliases(self, scope: GraphScope, aliases: Sequence[tuple[str, str]]) -> Op[None]:
        yield Query(f"INSERT INTO {self.a} (scope, norm, entity_id) VALUES (:scope, :norm,"
                    " :entity_id) ON CONFLICT DO NOTHING", {},
                    [{"scope": scope.key, "norm": norm, "entity_id": id} for norm, id in aliases])

    def support_aliases(self, scope: GraphScope, norms: Sequence[str],
                        memory_ids: Sequence[str]) -> Op[None]:
        rows = [{"scope": scope.key, "norm": norm, "memory_id": m}
                for norm in norms for m in memory_ids]
        if rows:
            yield Query(f"INSERT INTO {self.am} (scope, norm, memory_id) SELECT :scope, :norm,"
                        f" :memory_id WHERE EXISTS (SELECT 1 FROM {self.a} WHERE scope = :scope"
                        " AND norm = :norm) ON CONFLICT DO NOTHING", {}, rows)

    def link_memories(self, scope: GraphScope, names: Sequence[str], memory_ids: Sequence[str],
                      now: str) -> Op[list[Entity]]:
        rows = entity_rows(scope, [NewEntity(n) for n in names])
        yield from self._write_entities(scope, rows, now, update=False)
        links = [{"entity_id": r.id, "memory_id": m} for r in rows for m in memory_ids]
        if links:
            yield Query(f"INSERT INTO {self.em} (entity_id, memory_id) VALUES (:entity_id,"
                        " :memory_id) ON CONFLICT DO NOTHING", {}, links)
        return (yield from self.entities_by_id(scope, [r.id for r in rows]))

    def memory_ids_of(self, scope: GraphScope, ids: Sequence[str]) -> Op[list[str]]:
        rows = yield Query(
            f"SELECT DISTINCT l.memory_id FROM {self.em} l JOIN {self.e} e ON e.id = l.entity_id"
            f" WHERE e.scope = :scope AND {self.dialect.member('l.entity_id', 'ids')}",
            {"scope": scope.key, "ids": self.dialect.listed(ids)})
        return sorted(row[0] for row in rows)

    def set_vectors(self, scope: GraphScope, names: Sequence[str],
                    vectors: Sequence[Sequence[float]]) -> Op[None]:
        rows = [{"scope": scope.key, "id": entity_id(scope, check_name(name)),
                 "embedding": encode_vector(vector)}
                for name, vector in zip(names, vectors, strict=True)]
        if rows:
            yield Query(f"UPDATE {self.e} SET embedding = :embedding WHERE scope = :scope"
                        " AND id = :id AND embedding IS NULL", {}, rows)

    def repoint(self, scope: GraphScope, moves: Sequence[tuple[str, str]]) -> Op[None]:
        if not moves:
            return
        params = [{"scope": scope.key, "old": old, "new": new} for old, new in moves]
        in_scope = f"relation_id IN (SELECT id FROM {self.r} WHERE scope = :scope)"
        yield Query(f"INSERT INTO {self.m} (relation_id, memory_id) SELECT relation_id, :new"
                    f" FROM {self.m} WHERE memory_id = :old AND {in_scope}"
                    " ON CONFLICT DO NOTHING", {}, params)
        yield Query(f"DELETE FROM {self.m} WHERE memory_id = :old AND {in_scope}", {}, params)
        of_scope = f"entity_id IN (SELECT id FROM {self.e} WHERE scope = :scope)"
        yield Query(f"INSERT INTO {self.em} (entity_id, memory_id) SELECT entity_id, :new"
                    f" FROM {self.em} WHERE memory_id = :old AND {of_scope}"
                    " ON CONFLICT DO NOTHING", {}, params)
        yield Query(f"DELETE FROM {self.em} WHERE memory_id = :old AND {of_scope}", {}, params)
        yield Query(f"INSERT INTO {self.am} (scope, norm, memory_id) SELECT scope, norm, :new"
                    f" FROM {self.am} WHERE memory_id = :old AND scope = :scope"
                    " ON CONFLICT DO NOTHING", {}, params)
        yield Query(f"DELETE FROM {self.am} WHERE memory_id = :old AND scope = :scope", {},
                    params)

    def embedded_names(self) -> Op[list[tuple[str, str]]]:
        rows = yield Query(f"SELECT id, name FROM {self.e} WHERE embedding IS NOT NULL"
                           " ORDER BY id", {})
        return [(row[0], row[1]) for row in rows]

    def replace_vectors(self, ids: Sequence[str],
                        vectors: Sequence[Sequence[float] | None]) -> Op[None]:
        rows = [{"id": id, "embedding": None if v is None else encode_vector(v)}
                for id, v in zip(ids, vectors, strict=True)]
        if rows:
            yield Query(f"UPDATE {self.e} SET embedding = :embedding WHERE id = :id", {}, rows)

    def delete_relations(self, scope: GraphScope, ids: Sequence[str]) -> Op[int]:
        if not ids:
            return 0
        rows = yield Query(
            f"DELETE FROM {self.r} WHERE scope = :scope AND {self.dialect.member('id', 'ids')}"
            " RETURNING id", {"scope": scope.key, "ids": self.dialect.listed(ids)})
        return len(rows)

    # -- reads ---------------------------------------------------------------
    def entities(self, scope: GraphScope, names: Sequence[str] | None, type: str | None,
                 limit: int) -> Op[list[Entity]]:
        where, params = "e.scope = :scope", {"scope": scope.key, "k": limit}
        if names is not None:
            where += " AND " + self.dialect.member("e.id", "ids")
            params["ids"] = self.dialect.listed([entity_id(scope, check_name(n)) for n in names])
        if type is not None:
            where += " AND e.type = :type"
            params["type"] = normalise(type)
        rows = yield Query(
            f"SELECT {_ENTITY_COLUMNS} FROM {self.e} e WHERE {where} ORDER BY e.norm, e.id"
            " LIMIT :k", params)
        return [_entity(row) for row in rows]

    def entities_by_id(self, scope: GraphScope, ids: Sequence[str]) -> Op[list[Entity]]:
        """The scope's entities among ``ids``, by normalised name."""
        if not ids:
            return []
        rows = yield Query(
            f"SELECT {_ENTITY_COLUMNS} FROM {self.e} e WHERE e.scope = :scope AND"
            f" {self.dialect.member('e.id', 'ids')} ORDER BY e.norm, e.id",
            {"scope": scope.key, "ids": self.dialect.listed(ids)})
        return [_entity(row) for row in rows]

    def relations(self, scope: GraphScope, source: str | None, type: str | None,
                  target: str | None, memory_ids: Sequence[str] | None,
                  include_closed: bool) -> Op[list[Relation]]:
        where: list[str] = []
        params: dict[str, Any] = {}
        if not include_closed:
            where.append("r.valid_to IS NULL")
        for column, name in (("r.source_id", source), ("r.target_id", target)):
            if name is not None:
                where.append(f"{column} = :{column[2:]}")
                params[column[2:]] = entity_id(scope, check_name(name))
        if type is not None:
            where.append("r.type = :type")
            params["type"] = relation_type(type)
        if memory_ids is not None:
            where.append(f"r.id IN (SELECT relation_id FROM {self.m} WHERE"
                         f" {self.dialect.member('memory_id', 'memory_ids')})")
            params["memory_ids"] = self.dialect.listed(memory_ids)
        return (yield from self._relations_where(scope, " AND ".join(where) or "1 = 1", params))

    def _relations_where(self, scope: GraphScope, where: str,
                         params: dict[str, Any]) -> Op[list[Relation]]:
        rows = yield Query(
            "SELECT r.id, s.name, r.type, t.name, r.source_id, r.target_id, r.weight,"
            " r.confidence, r.valid_from, r.valid_to, s.user_id, s.agent_id, s.run_id"
            f" FROM {self.r} r JOIN {self.e} s ON s.id = r.source_id"
            f" JOIN {self.e} t ON t.id = r.target_id WHERE r.scope = :scope AND {where}"
            " ORDER BY s.norm, r.type, t.norm, r.valid_from, r.id",
            {**params, "scope": scope.key})
        if not rows:
            return []
        links = yield Query(
            f"SELECT relation_id, memory_id FROM {self.m} WHERE"
            f" {self.dialect.member('relation_id', 'ids')} ORDER BY memory_id",
            {"ids": self.dialect.listed([row[0] for row in rows])})
        memories: dict[str, list[str]] = {}
        for relation_id, memory_id in links:
            memories.setdefault(relation_id, []).append(memory_id)
        return [_relation(row, tuple(memories.get(row[0], ()))) for row in rows]

    def neighbourhood(self, scope: GraphScope, names: Sequence[str],
                      depth: int) -> Op[Subgraph]:
        check_depth(depth)
        seeds = [entity_id(scope, check_name(n)) for n in names]
        if not seeds:
            return Subgraph()
        member = self.dialect.member
        rows = yield Query(
            "WITH RECURSIVE walk (id, depth) AS ("
            f" SELECT e.id, 0 FROM {self.e} e WHERE e.scope = :scope AND {member('e.id', 'ids')}"
            f" UNION{self.dialect.step(self.r)}"
            ") SELECT DISTINCT id FROM walk",
            {"scope": scope.key, "ids": self.dialect.listed(seeds), "depth": depth})
        ids = [row[0] for row in rows]
        entities = yield from self.entities_by_id(scope, ids)
        listed = {"ids": self.dialect.listed(ids)}
        relations = yield from self._relations_where(
            scope, f"r.valid_to IS NULL AND {member('r.source_id', 'ids')}"
            f" AND {member('r.target_id', 'ids')}", listed)
        return Subgraph(entities, relations)


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(*row)


def _relation(row: Sequence[Any], memory_ids: tuple[str, ...]) -> Relation:
    (id, source, type, target, source_id, target_id, weight, confidence, valid_from, valid_to,
     user_id, agent_id, run_id) = row
    return Relation(id, source, type, target, source_id, target_id, float(weight),
                    float(confidence), valid_from, valid_to, memory_ids, user_id, agent_id, run_id)


def _closed(relation: Relation, now: str) -> Relation:
    return replace(relation, valid_to=now)


__all__ = ["Dialect", "Op", "Query", "SQLGraph"]
