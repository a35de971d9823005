"""Bulk loading of the traversal benchmark's random graph, one loader per engine.

Loading a million relations through ``upsert_relations`` (a checked upsert
per relation, built for an add's handful) would take most of the time budget,
so the benchmark writes the rows the graph stores write, directly: SQLite
``executemany``, PostgreSQL ``COPY``, Bolt ``UNWIND`` batches. Only the load
goes around memkit; every timed query goes through the graph store's API.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

from memkit.graph.base import GraphScope, GraphStore, entity_id, normalise

NOW = "2026-01-01T00:00:00.000000+00:00"
TYPES = [f"R{i}" for i in range(8)]


def random_edges(entities: int, relations: int, seed: int) -> list[tuple[int, int, int]]:
    """``relations`` distinct (source, type, target) triples, no self-loops."""
    rng = random.Random(seed)
    seen: set[tuple[int, int, int]] = set()
    while len(seen) < relations:
        a, b = rng.randrange(entities), rng.randrange(entities)
        if a != b:
            seen.add((a, rng.randrange(len(TYPES)), b))
    return sorted(seen)


def name(index: int) -> str:
    return f"e{index}"


def load(store: GraphStore, scope: GraphScope, entities: int,
         edges: list[tuple[int, int, int]]) -> None:
    store.open()
    store.reset()
    ids = [entity_id(scope, name(i)) for i in range(entities)]
    if store.provider == "sqlite":
        _sqlite(store, scope, ids, edges)
    elif store.provider == "postgres":
        _postgres(store, scope, ids, edges)
    else:
        _bolt(store, scope, ids, edges)


def _entity_rows(scope: GraphScope, ids: list[str]) -> Iterator[tuple[Any, ...]]:
    for i, id in enumerate(ids):
        yield (id, scope.key, scope.user_id, scope.agent_id, scope.run_id, name(i),
               normalise(name(i)), "unknown", None, NOW, NOW)


def _relation_rows(scope: GraphScope, ids: list[str],
                   edges: list[tuple[int, int, int]]) -> Iterator[tuple[Any, ...]]:
    for a, t, b in edges:
        yield (str(uuid.uuid4()), scope.key, ids[a], TYPES[t], ids[b], 1.0, 1.0, NOW, None, NOW)


_ENTITY_COLUMNS = ("id, scope, user_id, agent_id, run_id, name, norm, type, summary, created_at,"
                   " updated_at")
_RELATION_COLUMNS = ("id, scope, source_id, type, target_id, weight, confidence, valid_from,"
                     " valid_to, updated_at")


def _sqlite(store: Any, scope: GraphScope, ids: list[str],
            edges: list[tuple[int, int, int]]) -> None:
    with store._db.write() as conn:
        conn.executemany(f"INSERT INTO {store.ops.e} ({_ENTITY_COLUMNS}) VALUES"
                         f" ({', '.join('?' * 11)})", _entity_rows(scope, ids))
        conn.executemany(f"INSERT INTO {store.ops.r} ({_RELATION_COLUMNS}) VALUES"
                         f" ({', '.join('?' * 10)})", _relation_rows(scope, ids, edges))
    with store._db.write() as conn:
        conn.execute("ANALYZE")


def _postgres(store: Any, scope: GraphScope, ids: list[str],
              edges: list[tuple[int, int, int]]) -> None:
    import psycopg

    with psycopg.connect(store.dsn) as conn, conn.cursor() as cur:
        for table, columns, rows in (
                (store.ops.e, _ENTITY_COLUMNS, _entity_rows(scope, ids)),
                (store.ops.r, _RELATION_COLUMNS, _relation_rows(scope, ids, edges))):
            with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        cur.execute(f"ANALYZE {store.ops.e}")
        cur.execute(f"ANALYZE {store.ops.r}")


def _bolt(store: Any, scope: GraphScope, ids: list[str],
          edges: list[tuple[int, int, int]]) -> None:
    """UNWIND batches of a few KiB (memkit's own batching: FalkorDB's Bolt endpoint crashes
    on larger messages); nodes and relations carry the properties memkit writes."""
    from memkit.graph.neo4j import Cypher, _each

    label = store.ops.label
    scoped = {"scope": scope.key, "user_id": scope.user_id, "now": NOW, "types": TYPES}

    def statements() -> Iterator[Any]:
        for prop in ("id", "k"):  # FalkorDB: no IF NOT EXISTS; the label is fresh
            yield Cypher(f"CREATE INDEX FOR (e:{label}) ON (e.{prop})", {})
        yield from _each(
            f"UNWIND $rows AS row CREATE (:{label} {{k: row.k, id: row.id,"
            " name: 'e' + toString(row.k), norm: 'e' + toString(row.k), type: 'unknown',"
            " scope: $scope, user_id: $user_id, created_at: $now, updated_at: $now})",
            scoped, "rows", [{"k": i, "id": id} for i, id in enumerate(ids)])
        yield from _each(
            f"UNWIND $rows AS row MATCH (s:{label} {{k: row.a}}) MATCH (t:{label} {{k: row.b}})"
            " CREATE (s)-[:MEMKIT_RELATION {id: 'r' + toString(row.i), type: $types[row.t],"
            " open: true, scope: $scope, weight: 1.0, confidence: 1.0, valid_from: $now,"
            " updated_at: $now, memory_ids: []}]->(t)",
            scoped, "rows", [{"a": a, "t": t, "b": b, "i": i} for i, (a, t, b) in enumerate(edges)])

    store._run(statements())
