"""The pgvector store's schema: the collection table, its indexes, and their upkeep.

Each collection is one table::

    id text COLLATE "C"   embedding vector(dim)   memory, hash, user_id, agent_id, run_id text
    created_at, updated_at timestamptz   metadata jsonb   folded jsonb   fts tsvector (generated)
    valid_from, valid_to, expires_at timestamptz   supersedes text   (added by ALTER TABLE
    to tables written before memkit kept versions)   memory_type text   importance,
    confidence float8   access_count bigint   last_accessed_at timestamptz   (the lifecycle,
    added the same way)

with an HNSW cosine index (up to pgvector's 2,000 dimensions), btree indexes on
the scope and time columns and a GIN index on ``fts``. ``memkit_collections``
records each collection's dimension, embedding model and live table.
"""

from __future__ import annotations

import re

from psycopg import sql

from memkit._postgres import Op, Statement, each

META_TABLE = "memkit_collections"
TS_CONFIG = "simple"  # no stemming and no stop words: memories come in every language
MAX_HNSW_DIMENSIONS = 2000
_SCOPE_COLUMNS = ("user_id", "agent_id", "run_id")
#: what an HNSW build holds per row beside the vector (neighbour lists, element header)
_GRAPH_BYTES_PER_ROW = 1024
_BUILD_SLACK_KB = 65536
#: the extension and the table of every collection's dimension, model and live table
META_SCHEMA = (
    Statement(sql.SQL("CREATE EXTENSION IF NOT EXISTS vector")),
    Statement(sql.SQL("CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY,"
                      " dimension integer NOT NULL, model text NOT NULL)").format(
                          meta=sql.Identifier(META_TABLE))),
    Statement(sql.SQL("ALTER TABLE {meta} ADD COLUMN IF NOT EXISTS live text").format(
        meta=sql.Identifier(META_TABLE))),
)


def table_schema(table: str, dimension: int) -> list[Statement]:
    """What a collection ``table`` of ``dimension`` needs, each statement idempotent."""
    t = sql.Identifier(table)
    return [
        Statement(sql.SQL(
            "CREATE TABLE IF NOT EXISTS {t} ("
            ' id text COLLATE "C" PRIMARY KEY,'
            " embedding vector({dim}) NOT NULL,"
            " memory text NOT NULL, hash text NOT NULL,"
            " user_id text, agent_id text, run_id text,"
            " created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,"
            " metadata jsonb NOT NULL DEFAULT '{{}}', folded jsonb NOT NULL DEFAULT '{{}}',"
            " fts tsvector GENERATED ALWAYS AS (to_tsvector({cfg}, memory)) STORED)"
        ).format(t=t, dim=sql.Literal(dimension), cfg=sql.Literal(TS_CONFIG))),
        # tables written before memkit kept versions lack the temporal columns
        Statement(sql.SQL(
            "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS valid_from timestamptz,"
            " ADD COLUMN IF NOT EXISTS valid_to timestamptz,"
            " ADD COLUMN IF NOT EXISTS expires_at timestamptz,"
            " ADD COLUMN IF NOT EXISTS supersedes text,"
            " ADD COLUMN IF NOT EXISTS memory_type text,"
            " ADD COLUMN IF NOT EXISTS importance float8,"
            " ADD COLUMN IF NOT EXISTS confidence float8,"
            " ADD COLUMN IF NOT EXISTS access_count bigint,"
            " ADD COLUMN IF NOT EXISTS last_accessed_at timestamptz"
        ).format(t=t)),
        # pgvector's HNSW limit for vector
        *([create_hnsw(table)] if dimension <= MAX_HNSW_DIMENSIONS else []),
        *create_secondary(table),
    ]


def hnsw_index(table: str) -> sql.Identifier:
    return sql.Identifier(f"{table}_hnsw")


def secondary_indexes(table: str) -> list[tuple[sql.Identifier, sql.Composable]]:
    """The btree and full-text indexes: each one's name and what it indexes."""
    return [
        *((sql.Identifier(f"{table}_{column}"), sql.SQL("({})").format(sql.Identifier(column)))
          for column in (*_SCOPE_COLUMNS, "hash", "created_at", "updated_at", "valid_from",
                         "valid_to", "expires_at", "supersedes", "memory_type")),
        (sql.Identifier(f"{table}_fts"), sql.SQL("USING gin (fts)")),
    ]


def create_secondary(table: str) -> list[Statement]:
    return [Statement(sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} {on}").format(
        i=index, t=sql.Identifier(table), on=on)) for index, on in secondary_indexes(table)]


def create_hnsw(table: str) -> Statement:
    return Statement(sql.SQL(
        "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
    ).format(i=hnsw_index(table), t=sql.Identifier(table)))


def drop_indexes(table: str) -> Statement:
    """Drop every index of ``table`` (before a bulk insert, which rebuilds them after)."""
    indexes = [hnsw_index(table), *(index for index, _ in secondary_indexes(table))]
    return Statement(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.SQL(", ").join(indexes)))


def build_indexes(table: str, dimension: int, cap_mb: int) -> Op[None]:
    """Build every index in this transaction, the HNSW one with memory enough for its
    graph: a build that outgrows ``maintenance_work_mem`` goes on page by page, many
    times slower."""
    t = sql.Identifier(table)
    (rows, memory_kb), = yield Statement(sql.SQL(
        "SELECT count(*), (SELECT setting::bigint FROM pg_settings"
        " WHERE name = 'maintenance_work_mem') FROM {t}").format(t=t))
    wanted_kb = build_memory_kb(rows, dimension, int(memory_kb), cap_mb)
    if wanted_kb > int(memory_kb):
        yield Statement(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(
            sql.Literal(f"{wanted_kb}kB")))
    yield from each([*create_secondary(table), create_hnsw(table)])
    # Fresh statistics: without them the planner may take the HNSW index for a
    # search scoped to a few rows that the btree on the scope answers exactly.
    yield Statement(sql.SQL("ANALYZE {t}").format(t=t))


def build_memory_kb(rows: int, dimension: int, setting_kb: int, cap_mb: int) -> int:
    """The ``maintenance_work_mem`` (kB) an HNSW build of ``rows`` vectors asks for: what its
    graph holds (pgvector notes when a build outgrows it), with room to spare, at most
    ``cap_mb``, and never less than the server's own setting."""
    needed_kb = rows * (4 * dimension + _GRAPH_BYTES_PER_ROW) // 1024 + _BUILD_SLACK_KB
    return max(setting_kb, min(needed_kb, 1024 * cap_mb))


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text)[:3])
