"""PostgreSQL with pgvector: a table per collection, searched through an HNSW cosine index.

The table, its indexes and their upkeep are in :mod:`memkit.stores._pgvector_schema`;
filters become SQL with the reference semantics through
:func:`memkit.stores._pgvector_sql.translate`.

Every operation is written once, as a generator that yields :class:`Statement`
objects and receives their rows; :meth:`PgVectorStore._run` drives it on a
pooled connection, :meth:`PgVectorStore._arun` on an async one, each in one
transaction.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, ClassVar

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import TIME_FIELDS, Filter
from memkit._imports import require
from memkit._models import HistoryRecord
from memkit._postgres import (
    Op,
    PoolOwner,
    Settings,
    Statement,
    T,
    adrive,
    advisory_key,
    aretrying,
    check_name,
    check_not_failed,
    create_missing,
    ddl_lock,
    drive,
    missing,
    open_async_pool,
    open_pool,
    resolve_dsn,
    retrying,
    upkeep,
)
from memkit._time import to_datetime
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
from psycopg_pool import AsyncConnectionPool, ConnectionPool  # noqa: E402

from memkit.stores._pgvector_schema import (  # noqa: E402
    META_SCHEMA,
    META_TABLE,
    TS_CONFIG,
    build_indexes,
    build_memory_kb,
    drop_indexes,
    hnsw_index,
    table_schema,
    version_tuple,
)
from memkit.stores._pgvector_sql import (  # noqa: E402
    COLUMNS,
    INSERTED,
    INSERTED_TYPES,
    ISO_FORMAT,
    RANK,
    identifier,
    record_of,
    row_of,
    row_params,
    translate,
)

_MAX_EF_SEARCH = 1000
_INSERTED = ", ".join(map(identifier, INSERTED))
#: an insert of at least this many rows that at least doubles the table rebuilds the HNSW
#: index after the rows are in (a build is several times faster than as many inserts)
BULK_ROWS = 5000


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
        self._t = identifier(table)  # the same, as text for the statements of every call
        self._hnsw = hnsw_index(table)

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

    def _run_read(self, op: Op[T]) -> T:
        with self._connection() as conn:
            return drive(conn, op, atomic=False)

    async def _arun_read(self, op: Op[T]) -> T:
        async with self._aconnection() as conn:
            return await adrive(conn, op, atomic=False)

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
        self._iterative_scan = version_tuple(extension_version) >= (0, 8)

    def _open_op(self, dimension: int, model: str) -> Op[str]:
        """Check the collection's entry and create what its schema lacks; an up-to-date
        collection is opened by reads alone (see :func:`memkit._postgres.upkeep`)."""
        stored = yield from self._stored()
        if stored is not None:
            self._check_stored(stored, dimension, model)
        if stored is None or (yield from missing(table_schema(self._table_name, dimension))):
            yield from ddl_lock()  # one opener at a time creates what is missing
            yield from create_missing(META_SCHEMA)
            yield Statement(
                sql.SQL("INSERT INTO {meta} VALUES (%(n)s, %(d)s, %(m)s) ON CONFLICT (name)"
                        " DO NOTHING").format(meta=sql.Identifier(META_TABLE)),
                {"n": self.collection_name, "d": dimension, "m": model},
            )
            stored = yield from self._stored()
            assert stored is not None
            self._check_stored(stored, dimension, model)
            yield from create_missing(table_schema(self._table_name, dimension))
        rows = yield Statement(sql.SQL("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        return str(rows[0][0])

    def _stored(self) -> Op[tuple[int, str, str | None] | None]:
        """The collection's entry in ``memkit_collections``: dimension, model, live table."""
        if (yield from missing(META_SCHEMA)):
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
        rows = [row_of(r) for r in records]  # before the table is locked
        rebuild = len(records) >= BULK_ROWS and (yield from self._rebuilds(len(records)))
        if rebuild:  # every index: a build from sorted rows beats as many inserts
            yield drop_indexes(self._table_name)
        yield Statement(sql.SQL(f"COPY {self._t} ({_INSERTED}) FROM STDIN (FORMAT BINARY)"),
                        rows, copy_types=INSERTED_TYPES)
        if rebuild:
            assert self._dimension is not None
            yield from build_indexes(self._table_name, self._dimension, self.max_build_memory_mb)

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
                    f"UPDATE {self._t} SET embedding = COALESCE(%(embedding)s::vector, embedding),"
                    " memory = %(memory)s, hash = %(hash)s, user_id = %(user_id)s,"
                    " agent_id = %(agent_id)s, run_id = %(run_id)s, created_at = %(created_at)s,"
                    " updated_at = %(updated_at)s, metadata = %(metadata)s, folded = %(folded)s,"
                    " valid_from = %(valid_from)s, valid_to = %(valid_to)s,"
                    " expires_at = %(expires_at)s, supersedes = %(supersedes)s,"
                    " memory_type = %(memory_type)s, importance = %(importance)s,"
                    " confidence = %(confidence)s, access_count = %(access_count)s,"
                    " last_accessed_at = %(last_accessed_at)s"
                    " WHERE id = %(id)s RETURNING id"
                ),
                row_params(record),
            )
            if not rows:
                raise VectorStoreError(f"no record {record.id} to update")

    def _delete(self, ids: Sequence[str]) -> Op[None]:
        if ids:
            yield Statement(sql.SQL(f"DELETE FROM {self._t} WHERE id = ANY(%(ids)s)"),
                            {"ids": list(ids)})

    def _get(self, id: str) -> Op[Record | None]:
        rows = yield Statement(sql.SQL(f"SELECT {COLUMNS} FROM {self._t} WHERE id = %(id)s"),
                               {"id": id})
        return record_of(rows[0]) if rows else None

    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        self._check_shape(vector)
        if limit <= 0:
            return []
        where, params = translate(filter)
        params |= {"q": vector, "k": limit}
        distance = "embedding <=> %(q)s"
        # Session settings, sent only when the pooled connection lacks them. With the
        # iterative scan the index keeps scanning until `limit` rows pass the filter;
        # relaxed order returns them nearly sorted, so they are sorted again below.
        settings = [("hnsw.ef_search", str(min(max(limit, self.ef_search), _MAX_EF_SEARCH)))]
        if self._iterative_scan:
            settings.append(("hnsw.iterative_scan", "relaxed_order"))
        yield Settings(tuple(settings))
        ranked = f"SELECT {COLUMNS}, {distance} AS distance FROM {self._t} WHERE {where}"
        # One statement: a scope with at most `limit` matching rows (most users) is
        # scanned exactly, since the index would return all of them anyway; a larger
        # one goes through the HNSW index. MATERIALIZED keeps the planner from using
        # the index for the exact scan. The last column is the count (up to limit + 1).
        rows = yield Statement(sql.SQL(
            "WITH scope AS MATERIALIZED (SELECT count(*) AS n FROM"
            f" (SELECT 1 FROM {self._t} WHERE {where} LIMIT %(k)s + 1) AS s),"
            f" matching AS MATERIALIZED ({ranked})"
            " SELECT r.*, scope.n FROM scope LEFT JOIN ("
            f"(SELECT * FROM ({ranked} ORDER BY {distance} LIMIT %(k)s) AS h"
            " WHERE (SELECT n FROM scope) > %(k)s)"
            " UNION ALL (SELECT * FROM matching WHERE (SELECT n FROM scope) <= %(k)s"
            " ORDER BY distance LIMIT %(k)s)) AS r ON true"
        ), params)
        indexed = bool(rows) and int(rows[0][-1]) > limit
        rows = [row[:-1] for row in rows if row[0] is not None]  # the LEFT JOIN's empty row
        if indexed and len(rows) < limit:
            # The index may stop early (pgvector < 0.8, or its scan limits); an exact
            # scan of the matching rows is the answer then.
            rows = yield Statement(sql.SQL(
                f"WITH matching AS MATERIALIZED ({ranked})"
                " SELECT * FROM matching ORDER BY distance LIMIT %(k)s"), params)
        rows.sort(key=lambda row: (row[RANK], row[0]))
        return [Hit(record_of(row), cosine_to_score(1.0 - float(row[RANK]))) for row in rows]

    def _keyword_search(self, text: str, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
        if limit <= 0 or not words:
            return []
        where, params = translate(filter)
        params |= {f"w{i}": word for i, word in enumerate(words)}
        params |= {"k": limit, "cfg": TS_CONFIG}
        # Any of the words, each read by plainto_tsquery as plain text (never as
        # query syntax), as the sqlite store's FTS5 query does.
        query = " || ".join(
            f"plainto_tsquery(%(cfg)s::regconfig, %(w{i})s)" for i in range(len(words)))
        rows = yield Statement(sql.SQL(
            f"SELECT {COLUMNS}, ts_rank(fts, query) AS rank FROM {self._t},"
            f" (SELECT {query}) AS q(query)"
            f" WHERE fts @@ query AND {where} ORDER BY rank DESC, id LIMIT %(k)s"), params)
        best = max((float(row[RANK]) for row in rows), default=0.0)
        # Relative to the best hit, as the sqlite store scales bm25: the best scores 1.
        return [
            Hit(record_of(row), min(1.0, max(0.0, float(row[RANK]) / best)) if best > 0 else 1.0)
            for row in rows
        ]

    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[list[Record], str | None]]:
        where, params = translate(filter)
        params |= {"k": limit + 1}
        if order == "newest":
            by = "created_at DESC, id DESC"
            if cursor is not None:
                created_at, id = cursor_key(cursor)
                where += " AND (created_at, id) < (%(c_at)s::timestamptz, %(c_id)s)"
                params |= {"c_at": to_datetime(created_at), "c_id": id}
        else:
            by = "id"
            if cursor is not None:
                where += " AND id > %(cursor)s"
                params |= {"cursor": cursor}
        rows = yield Statement(sql.SQL(
            f"SELECT {COLUMNS} FROM {self._t} WHERE {where} ORDER BY {by} LIMIT %(k)s"), params)
        page = [record_of(row) for row in rows[:limit]]
        return page, (cursor_of(page[-1], order) if len(rows) > limit and page else None)

    def _count(self, filter: Filter | None) -> Op[int]:
        where, params = translate(filter)
        rows = yield Statement(sql.SQL(f"SELECT count(*) FROM {self._t} WHERE {where}"), params)
        return int(rows[0][0])

    def _project(self, fields: Sequence[str],
                 filter: Filter | None) -> Op[builtins.list[tuple[Any, ...]]]:
        """One SELECT of the columns, times formatted as memkit's ISO strings by the server."""
        check_projection(fields)
        where, params = translate(filter)
        columns = [sql.SQL("to_char({c} AT TIME ZONE 'UTC', {f})").format(
            c=sql.Identifier(f), f=sql.Literal(ISO_FORMAT)) if f in TIME_FIELDS
            else sql.Identifier(f) for f in fields]
        rows = yield Statement(sql.SQL("SELECT {c} FROM {t} WHERE {w}").format(
            c=sql.SQL(", ").join(columns), t=self._table, w=sql.SQL(where)), params)
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
            drive(conn, self._lock_op(key), atomic=False)
            yield _Transaction(self, conn, None)
            check_not_failed(conn)

    @asynccontextmanager
    async def atransaction(self, key: str = "") -> AsyncIterator[Writer]:
        async with self._aconnection() as conn, conn.transaction():
            await adrive(conn, self._lock_op(key), atomic=False)
            yield _Transaction(self, None, conn)
            check_not_failed(conn)

    def _lock_op(self, key: str) -> Op[None]:
        if key == EVERY_KEY:  # writers of every key wait; readers do not
            yield Statement(sql.SQL("LOCK TABLE {t} IN EXCLUSIVE MODE").format(t=self._table))
        yield Statement(sql.SQL("SELECT pg_advisory_xact_lock(%(key)s)"),
                        {"key": advisory_key("memkit-apply", self.collection_name, key)})

    def _colocated(self, history: HistoryStore) -> PostgresHistory | None:
        same = isinstance(history, PostgresHistory) and history.dsn == self.dsn
        return history if same else None  # type: ignore[return-value]


class _Transaction:
    """The store's writes on the connection of one open transaction (a :class:`Writer`).

    The store's own operations run straight in the transaction: a failed one fails the
    write (no savepoint to go back to, which would cost two round trips each);
    :meth:`run` (the graph's) runs in a savepoint, so the write may go on without it.
    """

    def __init__(self, store: PgVectorStore, conn: psycopg.Connection[Any] | None,
                 aconn: psycopg.AsyncConnection[Any] | None) -> None:
        self.store, self._conn, self._aconn = store, conn, aconn

    def _run(self, op: Op[T], atomic: bool = False) -> T:
        assert self._conn is not None
        return drive(self._conn, op, atomic)

    async def _arun(self, op: Op[T], atomic: bool = False) -> T:
        assert self._aconn is not None
        return await adrive(self._aconn, op, atomic)

    def run(self, op: Op[T]) -> T:
        """Run ``op`` in this transaction (what shares the database with the store: the graph)."""
        return self._run(op, atomic=True)

    async def arun(self, op: Op[T]) -> T:
        return await self._arun(op, atomic=True)

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
