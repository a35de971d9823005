"""PostgreSQL with pgvector: a table per collection, searched through an HNSW cosine index.

Each collection is one table::

    id text COLLATE "C"   embedding vector(dim)   memory, hash, user_id, agent_id, run_id text
    created_at, updated_at timestamptz   metadata jsonb   folded jsonb   fts tsvector (generated)
    valid_from, valid_to, expires_at timestamptz   supersedes text   (added by ALTER TABLE
    to tables written before memkit kept versions)   memory_type text   importance,
    confidence float8   access_count bigint   last_accessed_at timestamptz   (the lifecycle,
    added the same way)

``folded`` holds every string (and every string in a list) of the record,
built-ins and metadata alike, lower-cased by Python's :meth:`str.lower`, so that
``icontains`` means exactly what the reference evaluator says whatever the
database's locale. ``memkit_collections`` records each collection's dimension
and embedding model.

:func:`translate` turns the filter tree into parameterised SQL with the
reference semantics (:mod:`memkit._filters.evaluate`): every condition is
two-valued (never NULL, so ``NOT`` is the exact complement); ``jsonb_typeof``
keeps numbers, strings, booleans and lists apart; strings order by code point
(``COLLATE "C"``). One limit: a number compared with a number of the other kind
(int with float) goes through float8, so integers beyond 2**53 may compare
equal to a nearby float where Python says they differ.

Every operation is written once, as a generator that yields :class:`Statement`
objects and receives their rows; :meth:`PgVectorStore._run` drives it on a
pooled connection, :meth:`PgVectorStore._arun` on an async one, each in one
transaction.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import re
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, ClassVar

from memkit._errors import ConfigError, FilterError, VectorStoreError
from memkit._filters import (
    BUILTIN_FIELDS,
    NUMBER_FIELDS,
    TIME_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Or,
    Scalar,
)
from memkit._imports import require
from memkit._models import HistoryRecord
from memkit._postgres import (
    Op,
    Params,
    PoolOwner,
    Statement,
    T,
    adrive,
    advisory_key,
    aretrying,
    check_name,
    create_missing,
    ddl_lock,
    drive,
    each,
    missing,
    open_async_pool,
    open_pool,
    resolve_dsn,
    retrying,
    upkeep,
)
from memkit._time import to_datetime, to_iso
from memkit.history.base import HistoryStore
from memkit.history.postgres import PostgresHistory
from memkit.stores._driven import DrivenStore
from memkit.stores._generations import next_generation
from memkit.stores.base import (
    EVERY_KEY,
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    Writer,
    check_collection,
    check_projection,
    cosine_to_score,
    cursor_key,
    cursor_of,
)

pgvector_psycopg: Any = require("pgvector.psycopg", "pgvector")

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402
from psycopg_pool import AsyncConnectionPool, ConnectionPool  # noqa: E402

META_TABLE = "memkit_collections"
_TEXT_COLUMNS = frozenset({"memory", "hash", "user_id", "agent_id", "run_id", "supersedes",
                           "memory_type"})
_PERIOD_COLUMNS = ("valid_from", "valid_to", "expires_at", "last_accessed_at")
_SCOPE_COLUMNS = ("user_id", "agent_id", "run_id")
_MAX_HNSW_DIMENSIONS = 2000
#: an insert of at least this many rows that at least doubles the table rebuilds the HNSW
#: index after the rows are in (a build is several times faster than as many inserts)
BULK_ROWS = 5000
_MAX_EF_SEARCH = 1000
#: what an HNSW build holds per row beside the vector (neighbour lists, element header)
_GRAPH_BYTES_PER_ROW = 1024
_BUILD_SLACK_KB = 65536
_TS_CONFIG = "simple"  # no stemming and no stop words: memories come in every language
_ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'  # to_char() of memkit._time.to_iso
_COLUMNS = sql.SQL(
    "id, memory, hash, user_id, agent_id, run_id, created_at, updated_at, metadata,"
    " valid_from, valid_to, expires_at, supersedes,"
    " memory_type, importance, confidence, access_count, last_accessed_at"
)
_RANK = 18  # the column after _COLUMNS in a ranked row
#: the extension and the table of every collection's dimension, model and live table
_META_SCHEMA = (
    Statement(sql.SQL("CREATE EXTENSION IF NOT EXISTS vector")),
    Statement(sql.SQL("CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY,"
                      " dimension integer NOT NULL, model text NOT NULL)").format(
                          meta=sql.Identifier(META_TABLE))),
    Statement(sql.SQL("ALTER TABLE {meta} ADD COLUMN IF NOT EXISTS live text").format(
        meta=sql.Identifier(META_TABLE))),
)
#: the columns an insert writes, and their types for a binary COPY
_INSERTED_AS = {
    "id": "text", "embedding": "vector", "memory": "text", "hash": "text", "user_id": "text",
    "agent_id": "text", "run_id": "text", "created_at": "timestamptz",
    "updated_at": "timestamptz", "metadata": "jsonb", "folded": "jsonb",
    "valid_from": "timestamptz", "valid_to": "timestamptz", "expires_at": "timestamptz",
    "supersedes": "text", "memory_type": "text", "importance": "float8",
    "confidence": "float8", "access_count": "int8", "last_accessed_at": "timestamptz",
}
_INSERTED = tuple(_INSERTED_AS)
_INSERTED_TYPES = tuple(_INSERTED_AS.values())


# -- filter translation --------------------------------------------------------


_FALSE = sql.SQL("FALSE")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_canonical_time(value: str) -> bool:
    try:
        return to_iso(value) == value
    except (ValueError, TypeError):
        return False


def _number(p: Params, value: int | float) -> tuple[sql.Composable, sql.Composable]:
    """The cast for a JSON number and the parameter, exact for ints, float8 for floats."""
    if isinstance(value, float):
        return sql.SQL("float8"), p.add(value)
    return sql.SQL("numeric"), sql.SQL("{}::numeric").format(p.add(value))


_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _json_compare(p: Params, value: sql.Composable, op: str, target: Scalar) -> sql.Composable:
    """``value`` (a jsonb expression) ``op`` ``target``, with the evaluator's type rules."""
    if isinstance(target, int | float) and not isinstance(target, bool):
        cast, param = _number(p, target)
        operator = sql.SQL("=" if op == "eq" else _ORDER[op])
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'number' THEN ({v})::{cast} {op} {t} ELSE FALSE END"
        ).format(v=value, cast=cast, op=operator, t=param)
    if isinstance(target, str):
        operator = sql.SQL("=" if op == "eq" else _ORDER[op])
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'string' THEN ({v} #>> '{{}}') COLLATE \"C\" {op} {t}"
            " ELSE FALSE END"
        ).format(v=value, op=operator, t=p.add(target))
    if op == "eq":
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'boolean' THEN ({v})::boolean = {t} ELSE FALSE END"
        ).format(v=value, t=p.add(target))
    return _FALSE


def _any_element(value: sql.Composable, predicate: sql.Composable) -> sql.Composable:
    return sql.SQL(
        "EXISTS (SELECT 1 FROM jsonb_array_elements({v}) AS element(e) WHERE {pred})"
    ).format(v=value, pred=predicate)


def _metadata(p: Params, cond: Condition, value: sql.Composable | None = None) -> sql.Composable:
    """A metadata key (or ``value``, another jsonb expression) tested like a JSON value."""
    if value is None:
        value = sql.SQL("(metadata -> {})").format(p.add(cond.field))
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        return _or([_json_compare(p, value, "eq", t) for t in target])
    if op in ("eq", "gt", "gte", "lt", "lte"):
        assert not isinstance(target, tuple)
        return _json_compare(p, value, op, target)
    assert not isinstance(target, tuple)  # contains
    in_list = _any_element(value, _json_compare(p, sql.SQL("e"), "eq", target))
    if not isinstance(target, str):
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'array' THEN {l} ELSE FALSE END"
        ).format(v=value, l=in_list)
    return sql.SQL(
        "CASE jsonb_typeof({v}) WHEN 'string' THEN strpos({v} #>> '{{}}', {t}) > 0"
        " WHEN 'array' THEN {l} ELSE FALSE END"
    ).format(v=value, t=p.add(target), l=in_list)


def _icontains(p: Params, cond: Condition) -> sql.Composable:
    if not isinstance(cond.value, str):
        raise FilterError(f"{cond.field} icontains: expected a string, got {cond.value!r}")
    value = sql.SQL("(folded -> {})").format(p.add(cond.field))
    needle = p.add(cond.value.lower())
    in_list = _any_element(
        value, sql.SQL("jsonb_typeof(e) = 'string' AND (e #>> '{{}}') = {t}").format(t=needle)
    )
    return sql.SQL(
        "CASE jsonb_typeof({v}) WHEN 'string' THEN strpos({v} #>> '{{}}', {t}) > 0"
        " WHEN 'array' THEN {l} ELSE FALSE END"
    ).format(v=value, t=needle, l=in_list)


def _text_column(p: Params, cond: Condition) -> sql.Composable:
    column = sql.Identifier(cond.field)
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        strings = [t for t in target if isinstance(t, str)]
        if not strings:
            return _FALSE
        test = sql.SQL("{c} = ANY({t})").format(c=column, t=p.add(strings))
    elif not isinstance(target, str):
        return _FALSE
    elif op == "eq":
        test = sql.SQL("{c} = {t}").format(c=column, t=p.add(target))
    elif op == "contains":
        test = sql.SQL("strpos({c}, {t}) > 0").format(c=column, t=p.add(target))
    else:
        test = sql.SQL('{c} COLLATE "C" {op} {t}').format(
            c=column, op=sql.SQL(_ORDER[op]), t=p.add(target)
        )
    # A NULL column is a missing field: false, never NULL.
    return sql.SQL("({test} AND {c} IS NOT NULL)").format(test=test, c=column)


def _time_column(p: Params, cond: Condition) -> sql.Composable:
    """A timestamp column; NULL (a missing field) makes every test false, never NULL."""
    test = _time_test(p, cond)
    return sql.SQL("COALESCE({test}, FALSE)").format(test=test)


def _time_test(p: Params, cond: Condition) -> sql.Composable:
    column = sql.Identifier(cond.field)
    text = sql.SQL("to_char({c} AT TIME ZONE 'UTC', {f})").format(
        c=column, f=sql.Literal(_ISO_FORMAT)
    )
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        times = [to_datetime(t) for t in target if isinstance(t, str) and _is_canonical_time(t)]
        return sql.SQL("{c} = ANY({t})").format(c=column, t=p.add(times)) if times else _FALSE
    if not isinstance(target, str):
        return _FALSE
    if op == "contains":
        return sql.SQL("strpos({text}, {t}) > 0").format(text=text, t=p.add(target))
    if op == "eq":
        if not _is_canonical_time(target):
            return _FALSE
        return sql.SQL("{c} = {t}").format(c=column, t=p.add(to_datetime(target)))
    operator = sql.SQL(_ORDER[op])
    if _is_canonical_time(target):  # the index can serve it
        return sql.SQL("{c} {op} {t}").format(c=column, op=operator, t=p.add(to_datetime(target)))
    return sql.SQL('{text} COLLATE "C" {op} {t}').format(text=text, op=operator, t=p.add(target))


def _or(parts: list[sql.Composable]) -> sql.Composable:
    if not parts:
        return _FALSE
    return sql.SQL("({})").format(sql.SQL(" OR ").join(parts))


def _translate(p: Params, expr: Filter) -> sql.Composable:
    if isinstance(expr, And):
        return sql.SQL("({})").format(sql.SQL(" AND ").join(_translate(p, i) for i in expr.items))
    if isinstance(expr, Or):
        return _or([_translate(p, i) for i in expr.items])
    if isinstance(expr, Not):
        return sql.SQL("(NOT {})").format(_translate(p, expr.item))
    if expr.operator in ("ne", "nin"):
        positive = expr.model_copy(update={"operator": "eq" if expr.operator == "ne" else "in"})
        return sql.SQL("(NOT {})").format(_translate(p, positive))
    if expr.operator == "icontains":
        return _icontains(p, expr)
    if expr.field in TIME_FIELDS:
        return _time_column(p, expr)
    if expr.field in _TEXT_COLUMNS:
        return _text_column(p, expr)
    if expr.field in NUMBER_FIELDS:  # a NULL column is SQL NULL jsonb: every test false
        return _metadata(p, expr, sql.SQL("to_jsonb({})").format(sql.Identifier(expr.field)))
    return _metadata(p, expr)


def translate(filter: Filter | None) -> tuple[sql.Composable, dict[str, Any]]:
    """The filter as a SQL boolean expression over a collection table, and its parameters.

    Parameters are named ``f0``, ``f1``, ...; values and field names are never
    spliced into the SQL text.
    """
    if filter is None:
        return sql.SQL("TRUE"), {}
    params = Params()
    return _translate(params, filter), params.values


# -- records -------------------------------------------------------------------


def _lowered(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, list):
        return [v.lower() if isinstance(v, str) else v for v in value]
    return None


# The records of one insert mostly share their timestamps: each is parsed once.
_iso = functools.lru_cache(maxsize=4096)(to_iso)
_when = functools.lru_cache(maxsize=4096)(to_datetime)


def folded(record: Record) -> dict[str, Any]:
    """Lower-cased strings of every field ``icontains`` can see (built-ins shadow metadata)."""
    view = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    view.update(
        memory=record.memory, hash=record.hash, user_id=record.user_id,
        agent_id=record.agent_id, run_id=record.run_id,
        created_at=_iso(record.created_at), updated_at=_iso(record.updated_at),
        supersedes=record.supersedes, memory_type=record.memory_type,
        **{k: _iso(getattr(record, k)) for k in _PERIOD_COLUMNS if getattr(record, k)},
    )
    out = {k: _lowered(v) for k, v in view.items()}
    return {k: v for k, v in out.items() if v is not None}


def _row_params(record: Record) -> dict[str, Any]:
    return {
        "id": record.id, "embedding": record.vector, "memory": record.memory,
        "hash": record.hash, "user_id": record.user_id, "agent_id": record.agent_id,
        "run_id": record.run_id, "created_at": _when(record.created_at),
        "updated_at": _when(record.updated_at), "metadata": Jsonb(record.metadata),
        "folded": Jsonb(folded(record)), "supersedes": record.supersedes,
        "memory_type": record.memory_type, "importance": record.importance,
        "confidence": record.confidence, "access_count": record.access_count,
        **{k: None if getattr(record, k) is None else _when(getattr(record, k))
           for k in _PERIOD_COLUMNS},
    }


def _row(record: Record) -> tuple[Any, ...]:
    """The values of :data:`_INSERTED` for ``record``."""
    params = _row_params(record)
    return tuple(params[column] for column in _INSERTED)


def _record(row: Sequence[Any]) -> Record:
    id, memory, hash, user_id, agent_id, run_id, created_at, updated_at, metadata = row[:9]
    valid_from, valid_to, expires_at = (None if t is None else to_iso(t) for t in row[9:12])
    memory_type, importance, confidence, access_count, last_accessed_at = row[13:18]
    return Record(
        id=id, memory=memory, hash=hash, user_id=user_id, agent_id=agent_id, run_id=run_id,
        created_at=to_iso(created_at), updated_at=to_iso(updated_at), metadata=dict(metadata),
        valid_from=valid_from, valid_to=valid_to, expires_at=expires_at, supersedes=row[12],
        memory_type=memory_type, importance=importance, confidence=confidence,
        access_count=access_count,
        last_accessed_at=None if last_accessed_at is None else to_iso(last_accessed_at),
    )


def build_memory_kb(rows: int, dimension: int, setting_kb: int, cap_mb: int) -> int:
    """The ``maintenance_work_mem`` (kB) an HNSW build of ``rows`` vectors asks for: what its
    graph holds (pgvector notes when a build outgrows it), with room to spare, at most
    ``cap_mb``, and never less than the server's own setting."""
    needed_kb = rows * (4 * dimension + _GRAPH_BYTES_PER_ROW) // 1024 + _BUILD_SLACK_KB
    return max(setting_kb, min(needed_kb, 1024 * cap_mb))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text)[:3])


# -- the store -----------------------------------------------------------------


class PgVectorStore(PoolOwner, DrivenStore):
    """A collection in PostgreSQL with pgvector; several processes may share it.

    ``PgVectorStore("postgresql://user@host/db", collection_name="memkit")``;
    without ``dsn`` the ``DATABASE_URL`` environment variable is used.
    """

    provider = "pgvector"
    supports_keyword: ClassVar[bool] = True
    locks_processes: ClassVar[bool] = True  # advisory locks in PostgreSQL
    native_async = True

    def __init__(
        self, dsn: str | None = None, collection_name: str = "memkit", pool_size: int = 4,
        max_build_memory_mb: int = 4096, ef_search: int = 40,
    ) -> None:
        super().__init__()
        self.dsn = resolve_dsn(dsn)
        self.collection_name = check_name(collection_name)
        self.pool_size = pool_size
        self.max_build_memory_mb = max_build_memory_mb
        if not 1 <= ef_search <= _MAX_EF_SEARCH:
            raise ConfigError(f"ef_search {ef_search}: expected 1 to {_MAX_EF_SEARCH}")
        self.ef_search = ef_search
        self._bind(collection_name)
        self._dimension: int | None = None
        self._iterative_scan = False
        self._pool: ConnectionPool[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None
        self._apool_lock = asyncio.Lock()
        self._pool_lock = threading.Lock()

    def _bind(self, table: str) -> None:
        """Use ``table``: the collection's own, or that of its last re-embedding."""
        self._table_name, self._table = table, sql.Identifier(table)
        self._hnsw = sql.Identifier(f"{table}_hnsw")

    # -- connections ----------------------------------------------------
    def _sync_pool(self) -> ConnectionPool[Any]:
        self._require_open()
        with self._pool_lock:
            if self._pool is None:
                self._pool = open_pool(self.dsn, self.pool_size, self.collection_name,
                                       configure=pgvector_psycopg.register_vector)
            return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        self._require_open()
        async with self._apool_lock:
            if self._apool is None:
                self._apool = await open_async_pool(
                    self.dsn, self.pool_size, self.collection_name,
                    configure=pgvector_psycopg.register_vector_async)
            return self._apool

    def _require_open(self) -> None:
        if self._dimension is None:
            raise VectorStoreError(f"open() the collection {self.collection_name!r} first")

    def _run(self, op: Op[T]) -> T:
        with self._connection() as conn:
            return drive(conn, op)

    async def _arun(self, op: Op[T]) -> T:
        async with self._aconnection() as conn:
            return await adrive(conn, op)

    # -- lifecycle --------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        def attempt() -> str:
            with psycopg.connect(self.dsn) as conn:
                return drive(conn, self._open_op(dimension, model))

        try:
            self._opened(retrying(attempt), dimension)
        except psycopg.Error as exc:
            raise VectorStoreError(f"PostgreSQL: {exc}") from exc

    async def aopen(self, dimension: int, model: str) -> None:
        async def attempt() -> str:
            async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
                return await adrive(conn, self._open_op(dimension, model))

        try:
            self._opened(await aretrying(attempt), dimension)
        except psycopg.Error as exc:
            raise VectorStoreError(f"PostgreSQL: {exc}") from exc

    def _opened(self, extension_version: str, dimension: int) -> None:
        self._dimension = dimension
        self._iterative_scan = _version(extension_version) >= (0, 8)

    def _open_op(self, dimension: int, model: str) -> Op[str]:
        """Check the collection's entry and create what its schema lacks; an up-to-date
        collection is opened by reads alone (see :func:`memkit._postgres.upkeep`)."""
        stored = yield from self._stored()
        if stored is not None:
            self._check_stored(stored, dimension, model)
        if stored is None or (yield from missing(self._schema(dimension))):
            yield from ddl_lock()  # one opener at a time creates what is missing
            yield from create_missing(_META_SCHEMA)
            yield Statement(
                sql.SQL("INSERT INTO {meta} VALUES (%(n)s, %(d)s, %(m)s) ON CONFLICT (name)"
                        " DO NOTHING").format(meta=sql.Identifier(META_TABLE)),
                {"n": self.collection_name, "d": dimension, "m": model},
            )
            stored = yield from self._stored()
            assert stored is not None
            self._check_stored(stored, dimension, model)
            yield from create_missing(self._schema(dimension))
        rows = yield Statement(sql.SQL("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        return str(rows[0][0])

    def _stored(self) -> Op[tuple[int, str, str | None] | None]:
        """The collection's entry in ``memkit_collections``: dimension, model, live table."""
        if (yield from missing(_META_SCHEMA)):
            return None
        rows = yield Statement(
            sql.SQL("SELECT dimension, model, live FROM {meta} WHERE name = %(n)s")
            .format(meta=sql.Identifier(META_TABLE)), {"n": self.collection_name},
        )
        return (int(rows[0][0]), str(rows[0][1]), rows[0][2]) if rows else None

    def _check_stored(self, stored: tuple[int, str, str | None], dimension: int,
                      model: str) -> None:
        stored_dimension, stored_model, live = stored
        check_collection(self.collection_name, (stored_dimension, stored_model), dimension, model)
        self._bind(live or self.collection_name)

    def _schema(self, dimension: int) -> list[Statement]:
        t = self._table
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
            ).format(t=t, dim=sql.Literal(dimension), cfg=sql.Literal(_TS_CONFIG))),
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
            *([self._create_hnsw()] if dimension <= _MAX_HNSW_DIMENSIONS else []),
            *self._create_secondary(),
        ]

    def _secondary(self) -> list[tuple[sql.Identifier, sql.Composable]]:
        """The btree and full-text indexes: each one's name and what it indexes."""
        name = self._table_name
        return [
            *((sql.Identifier(f"{name}_{column}"), sql.SQL("({})").format(sql.Identifier(column)))
              for column in (*_SCOPE_COLUMNS, "hash", "created_at", "updated_at", "valid_from",
                             "valid_to", "expires_at", "supersedes", "memory_type")),
            (sql.Identifier(f"{name}_fts"), sql.SQL("USING gin (fts)")),
        ]

    def _create_secondary(self) -> list[Statement]:
        return [Statement(sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} {on}").format(
            i=index, t=self._table, on=on)) for index, on in self._secondary()]

    def _create_hnsw(self) -> Statement:
        return Statement(sql.SQL(
            "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
        ).format(i=self._hnsw, t=self._table))

    def drop(self) -> None:
        """Delete the collection: its table and its entry in ``memkit_collections``."""
        try:
            with psycopg.connect(self.dsn) as conn:
                drive(conn, self._drop_op())
        except psycopg.Error as exc:
            raise VectorStoreError(f"PostgreSQL: {exc}") from exc
        self._dimension = None

    def _drop_op(self) -> Op[None]:
        yield Statement(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=self._table))
        rows = yield Statement(sql.SQL("SELECT to_regclass(%(meta)s)"), {"meta": META_TABLE})
        if rows[0][0] is not None:
            yield Statement(
                sql.SQL("DELETE FROM {meta} WHERE name = %(n)s").format(
                    meta=sql.Identifier(META_TABLE)),
                {"n": self.collection_name},
            )

    # -- re-embedding -----------------------------------------------------
    def shadow(self, dimension: int, model: str) -> PgVectorStore:
        """A table ``<name>__g<n>`` with a ``memkit_collections`` row of its own until
        :meth:`switch` points the collection's row at it."""
        name = next_generation(self.collection_name, self._table_name)
        shadow = PgVectorStore(self.dsn, name, pool_size=2)
        shadow.drop()  # what an interrupted re-embedding left
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        self._run(self._switch_op(shadow))
        self._switched(shadow).close()

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, PgVectorStore)
        shadow.drop()
        shadow.close()

    async def adiscard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, PgVectorStore)
        await asyncio.to_thread(shadow.drop)
        await shadow.aclose()

    def _switch_op(self, shadow: VectorStore) -> Op[None]:
        """Point the collection's row at the shadow's table and drop the old table."""
        assert isinstance(shadow, PgVectorStore)
        meta = sql.Identifier(META_TABLE)
        yield Statement(sql.SQL(
            "UPDATE {meta} SET (dimension, model, live) = (SELECT dimension, model, %(t)s"
            " FROM {meta} WHERE name = %(s)s) WHERE name = %(n)s").format(meta=meta),
            {"t": shadow._table_name, "s": shadow.collection_name, "n": self.collection_name})
        yield Statement(sql.SQL("DELETE FROM {meta} WHERE name = %(s)s").format(meta=meta),
                        {"s": shadow.collection_name})
        yield Statement(sql.SQL("DROP TABLE {t}").format(t=self._table))

    def _switched(self, shadow: VectorStore) -> PgVectorStore:
        """Serve the shadow's table; returns the shadow, whose connections are to close."""
        assert isinstance(shadow, PgVectorStore)
        self._bind(shadow._table_name)
        self._dimension = shadow._dimension
        return shadow

    # -- operations, each written once -----------------------------------
    def _reset(self) -> Op[None]:
        yield Statement(sql.SQL("TRUNCATE {t}").format(t=self._table))

    def _insert(self, records: Sequence[Record]) -> Op[None]:
        for record in records:
            self._check_vector(record, required=True)
        if not records:
            return
        rows = [_row(r) for r in records]  # before the table is locked
        rebuild = len(records) >= BULK_ROWS and (yield from self._rebuilds(len(records)))
        if rebuild:  # every index: a build from sorted rows beats as many inserts
            indexes = [self._hnsw, *(index for index, _ in self._secondary())]
            yield Statement(sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.SQL(", ").join(indexes)))
        yield Statement(
            sql.SQL("COPY {t} ({c}) FROM STDIN (FORMAT BINARY)").format(
                t=self._table, c=sql.SQL(", ").join(map(sql.Identifier, _INSERTED))),
            rows, copy_types=_INSERTED_TYPES,
        )
        if rebuild:
            yield from self._build_indexes()

    def _build_indexes(self) -> Op[None]:
        """Build every index in this transaction, the HNSW one with memory enough for its
        graph: a build that outgrows ``maintenance_work_mem`` goes on page by page, many
        times slower."""
        (rows, memory_kb), = yield Statement(sql.SQL(
            "SELECT count(*), (SELECT setting::bigint FROM pg_settings"
            " WHERE name = 'maintenance_work_mem') FROM {t}").format(t=self._table))
        assert self._dimension is not None
        wanted_kb = build_memory_kb(rows, self._dimension, int(memory_kb), self.max_build_memory_mb)
        if wanted_kb > int(memory_kb):
            yield Statement(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(
                sql.Literal(f"{wanted_kb}kB")))
        yield from each([*self._create_secondary(), self._create_hnsw()])
        # Fresh statistics: without them the planner may take the HNSW index for a
        # search scoped to a few rows that the btree on the scope answers exactly.
        yield Statement(sql.SQL("ANALYZE {t}").format(t=self._table))

    def _rebuilds(self, rows: int) -> Op[bool]:
        """Whether inserting ``rows`` rows should rebuild the HNSW index rather than grow it:
        the insert at least doubles the table, and no other transaction uses the table now
        (the lock is taken without waiting, so it can never deadlock with another writer)."""
        found = yield Statement(sql.SQL("SELECT to_regclass(%(i)s)"),
                                {"i": self._hnsw.as_string(None)})
        if found[0][0] is None:
            return False
        (held,), = yield Statement(sql.SQL("SELECT count(*) FROM {t}").format(t=self._table))
        if held > rows:
            return False
        locked = yield Statement(sql.SQL("LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE NOWAIT").format(
            t=self._table), fallible=True)
        return locked is not None

    def _update(self, records: Sequence[Record]) -> Op[None]:
        for record in records:
            self._check_vector(record, required=False)
            rows = yield Statement(
                sql.SQL(
                    "UPDATE {t} SET embedding = COALESCE(%(embedding)s::vector, embedding),"
                    " memory = %(memory)s, hash = %(hash)s, user_id = %(user_id)s,"
                    " agent_id = %(agent_id)s, run_id = %(run_id)s, created_at = %(created_at)s,"
                    " updated_at = %(updated_at)s, metadata = %(metadata)s, folded = %(folded)s,"
                    " valid_from = %(valid_from)s, valid_to = %(valid_to)s,"
                    " expires_at = %(expires_at)s, supersedes = %(supersedes)s,"
                    " memory_type = %(memory_type)s, importance = %(importance)s,"
                    " confidence = %(confidence)s, access_count = %(access_count)s,"
                    " last_accessed_at = %(last_accessed_at)s"
                    " WHERE id = %(id)s RETURNING id"
                ).format(t=self._table),
                _row_params(record),
            )
            if not rows:
                raise VectorStoreError(f"no record {record.id} to update")

    def _delete(self, ids: Sequence[str]) -> Op[None]:
        if ids:
            yield Statement(
                sql.SQL("DELETE FROM {t} WHERE id = ANY(%(ids)s)").format(t=self._table),
                {"ids": list(ids)},
            )

    def _get(self, id: str) -> Op[Record | None]:
        rows = yield Statement(
            sql.SQL("SELECT {cols} FROM {t} WHERE id = %(id)s").format(
                cols=_COLUMNS, t=self._table),
            {"id": id},
        )
        return _record(rows[0]) if rows else None

    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        self._check_shape(vector)
        if limit <= 0:
            return []
        where, params = translate(filter)
        params |= {"q": vector, "k": limit}
        distance = sql.SQL("embedding <=> %(q)s")
        if self._iterative_scan:
            # The index keeps scanning until `limit` rows pass the filter; relaxed
            # order returns them nearly sorted, so they are sorted again below.
            yield Statement(sql.SQL("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        yield Statement(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
            sql.Literal(min(max(limit, self.ef_search), _MAX_EF_SEARCH))))
        query = sql.SQL(
            "SELECT {cols}, {d} AS distance FROM {t} WHERE {w} ORDER BY {d} LIMIT %(k)s"
        ).format(cols=_COLUMNS, d=distance, t=self._table, w=where)
        rows = yield Statement(query, params)
        if len(rows) < limit:
            # The index may stop early (pgvector < 0.8, or its scan limits); an exact
            # scan of the matching rows is the answer then. MATERIALIZED keeps the
            # planner from using the HNSW index for it.
            rows = yield Statement(sql.SQL(
                "WITH matching AS MATERIALIZED (SELECT {cols}, {d} AS distance FROM {t}"
                " WHERE {w}) SELECT * FROM matching ORDER BY distance LIMIT %(k)s"
            ).format(cols=_COLUMNS, d=distance, t=self._table, w=where), params)
        rows.sort(key=lambda row: (row[_RANK], row[0]))
        return [Hit(_record(row), cosine_to_score(1.0 - float(row[_RANK]))) for row in rows]

    def _keyword_search(self, text: str, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
        if limit <= 0 or not words:
            return []
        where, params = translate(filter)
        params |= {f"w{i}": word for i, word in enumerate(words)}
        params |= {"k": limit, "cfg": _TS_CONFIG}
        # Any of the words, each read by plainto_tsquery as plain text (never as
        # query syntax), as the sqlite store's FTS5 query does.
        query = sql.SQL(" || ").join(
            sql.SQL("plainto_tsquery(%(cfg)s::regconfig, {})").format(sql.Placeholder(f"w{i}"))
            for i in range(len(words))
        )
        rows = yield Statement(sql.SQL(
            "SELECT {cols}, ts_rank(fts, query) AS rank FROM {t}, (SELECT {q}) AS q(query)"
            " WHERE fts @@ query AND {w} ORDER BY rank DESC, id LIMIT %(k)s"
        ).format(cols=_COLUMNS, t=self._table, q=query, w=where), params)
        best = max((float(row[_RANK]) for row in rows), default=0.0)
        # Relative to the best hit, as the sqlite store scales bm25: the best scores 1.
        return [
            Hit(_record(row), min(1.0, max(0.0, float(row[_RANK]) / best)) if best > 0 else 1.0)
            for row in rows
        ]

    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[list[Record], str | None]]:
        where, params = translate(filter)
        params |= {"k": limit + 1}
        if order == "newest":
            by = sql.SQL("created_at DESC, id DESC")
            if cursor is not None:
                created_at, id = cursor_key(cursor)
                where = sql.SQL("{w} AND (created_at, id) < (%(c_at)s::timestamptz, %(c_id)s)").format(
                    w=where)
                params |= {"c_at": to_datetime(created_at), "c_id": id}
        else:
            by = sql.SQL("id")
            if cursor is not None:
                where = sql.SQL("{w} AND id > %(cursor)s").format(w=where)
                params |= {"cursor": cursor}
        rows = yield Statement(sql.SQL(
            "SELECT {cols} FROM {t} WHERE {w} ORDER BY {by} LIMIT %(k)s"
        ).format(cols=_COLUMNS, t=self._table, w=where, by=by), params)
        page = [_record(row) for row in rows[:limit]]
        return page, (cursor_of(page[-1], order) if len(rows) > limit and page else None)

    def _count(self, filter: Filter | None) -> Op[int]:
        where, params = translate(filter)
        rows = yield Statement(
            sql.SQL("SELECT count(*) FROM {t} WHERE {w}").format(t=self._table, w=where), params
        )
        return int(rows[0][0])

    def _project(self, fields: Sequence[str],
                 filter: Filter | None) -> Op[builtins.list[tuple[Any, ...]]]:
        """One SELECT of the columns, times formatted as memkit's ISO strings by the server."""
        check_projection(fields)
        where, params = translate(filter)
        columns = [sql.SQL("to_char({c} AT TIME ZONE 'UTC', {f})").format(
            c=sql.Identifier(f), f=sql.Literal(_ISO_FORMAT)) if f in TIME_FIELDS
            else sql.Identifier(f) for f in fields]
        rows = yield Statement(sql.SQL("SELECT {c} FROM {t} WHERE {w}").format(
            c=sql.SQL(", ").join(columns), t=self._table, w=where), params)
        return [tuple(row) for row in rows]

    def _check_shape(self, vector: Vector) -> None:
        if self._dimension is not None and vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions"
            )

    def _check_vector(self, record: Record, *, required: bool) -> None:
        if record.vector is None:
            if required:
                raise VectorStoreError(f"record {record.id} has no vector")
            return
        self._check_shape(record.vector)

    # -- transactions -------------------------------------------------------
    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """One transaction on one pooled connection, holding an advisory lock on ``key``
        (the add's scope): writers of the same scope, in any process, wait for each other."""
        with self._connection() as conn, conn.transaction():
            drive(conn, self._lock_op(key))
            yield _Transaction(self, conn, None)

    @asynccontextmanager
    async def atransaction(self, key: str = "") -> AsyncIterator[Writer]:
        async with self._aconnection() as conn, conn.transaction():
            await adrive(conn, self._lock_op(key))
            yield _Transaction(self, None, conn)

    def _lock_op(self, key: str) -> Op[None]:
        if key == EVERY_KEY:  # writers of every key wait; readers do not
            yield Statement(sql.SQL("LOCK TABLE {t} IN EXCLUSIVE MODE").format(t=self._table))
        yield Statement(sql.SQL("SELECT pg_advisory_xact_lock(%(key)s)"),
                        {"key": advisory_key("memkit-apply", self.collection_name, key)})

    def _colocated(self, history: HistoryStore) -> PostgresHistory | None:
        same = isinstance(history, PostgresHistory) and history.dsn == self.dsn
        return history if same else None  # type: ignore[return-value]


class _Transaction:
    """The store's writes on the connection of one open transaction (a :class:`Writer`)."""

    def __init__(self, store: PgVectorStore, conn: psycopg.Connection[Any] | None,
                 aconn: psycopg.AsyncConnection[Any] | None) -> None:
        self.store, self._conn, self._aconn = store, conn, aconn

    def _run(self, op: Op[T]) -> T:
        assert self._conn is not None
        return drive(self._conn, op)

    async def _arun(self, op: Op[T]) -> T:
        assert self._aconn is not None
        return await adrive(self._aconn, op)

    def run(self, op: Op[T]) -> T:
        """Run ``op`` in this transaction (what shares the database with the store: the graph)."""
        return self._run(op)

    async def arun(self, op: Op[T]) -> T:
        return await self._arun(op)

    def list(self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
             order: Order = "id") -> tuple[builtins.list[Record], str | None]:
        return self._run(self.store._list(filter, limit, cursor, order))

    def insert(self, records: Sequence[Record]) -> None:
        self._run(self.store._insert(records))

    def update(self, records: Sequence[Record]) -> None:
        self._run(self.store._update(records))

    def delete(self, ids: Sequence[str]) -> None:
        self._run(self.store._delete(ids))

    def write_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None:
        """In this transaction when the history lives in the same database."""
        colocated = self.store._colocated(history)
        if colocated is None:
            history.add(rows)
            return
        if not colocated.ready:  # on this connection: never wait for another one here
            self._run(upkeep(colocated.schema()))
        self._run(colocated.insert_op(rows))

    async def alist(self, filter: Filter | None = None, limit: int = 100,
                    cursor: str | None = None, order: Order = "id",
                    ) -> tuple[builtins.list[Record], str | None]:
        return await self._arun(self.store._list(filter, limit, cursor, order))

    async def ainsert(self, records: Sequence[Record]) -> None:
        await self._arun(self.store._insert(records))

    async def aupdate(self, records: Sequence[Record]) -> None:
        await self._arun(self.store._update(records))

    async def adelete(self, ids: Sequence[str]) -> None:
        await self._arun(self.store._delete(ids))

    async def awrite_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None:
        colocated = self.store._colocated(history)
        if colocated is None:
            await history.aadd(rows)
            return
        if not colocated.ready:
            await self._arun(upkeep(colocated.schema()))
        await self._arun(colocated.insert_op(rows))

    def switch(self, shadow: VectorStore) -> None:
        """In this transaction, which holds the table (``EVERY_KEY``)."""
        self._run(self.store._switch_op(shadow))
        self.store._switched(shadow).close()

    async def aswitch(self, shadow: VectorStore) -> None:
        await self._arun(self.store._switch_op(shadow))
        await self.store._switched(shadow).aclose()


__all__ = ["META_TABLE", "PgVectorStore", "build_memory_kb", "translate"]
