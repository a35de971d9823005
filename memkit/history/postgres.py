"""The history log in PostgreSQL, shared by every application instance on one database.

When the vector store is :class:`~memkit.stores.pgvector.PgVectorStore` on the
same DSN, these rows are written in the transaction that changes the memories.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memkit._models import Change, HistoryRecord, SearchLogEntry
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
    drive,
    open_async_pool,
    open_pool,
    resolve_dsn,
    retrying,
    upkeep,
)
from memkit._time import to_datetime
from memkit.history._feed import FEED_EVENTS, Beacon, ChangeSignal, bad_position
from memkit.history._locks import EVERY_KEY
from memkit.history._searches import (
    insert_purge_marker,
    insert_searches,
    pyformat,
    search_entry,
    search_row,
    searches_schema,
    searches_where,
    select_searches,
)
from memkit.history.base import HistoryStore

_COLUMNS = (
    "id", "memory_id", "event", "old_value", "new_value", "timestamp", "is_deleted",
    "user_id", "agent_id", "run_id", "actor_id", "role", "reverts",
)
_COLUMN_LIST = ", ".join(sql.Identifier(column).as_string(None) for column in _COLUMNS)
#: the records one INSERT writes (PostgreSQL takes up to 65,535 parameters a statement)
INSERT_ROWS = 1000
#: a followed history also re-reads this often, for rows no notification announced
FEED_BACKSTOP_SECONDS = 2.0
_log = logging.getLogger(__name__)


class PostgresHistory(PoolOwner, HistoryStore):
    """``PostgresHistory("postgresql://user@host/db")``, or ``DATABASE_URL`` without a DSN.

    Records are read oldest first; a ``bigserial`` breaks ties in insertion order.
    """

    provider = "postgres"

    def __init__(self, dsn: str | None = None, table: str = "memkit_history") -> None:
        self.dsn = resolve_dsn(dsn)
        self.table = check_name(table, "history table name")
        self._table = sql.Identifier(table)
        self._lock = threading.Lock()
        self._alock = asyncio.Lock()
        self._ready = False
        self._pool: ConnectionPool[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None
        #: ``NOTIFY``-ed by every write of records, delivered when it commits
        self.channel = f"memkit_feed_{table}"
        self._signal = ChangeSignal(self._watch)

    # -- connections ----------------------------------------------------
    def _sync_pool(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = open_pool(self.dsn, 4)
            return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        async with self._alock:
            if self._apool is None:
                self._apool = await open_async_pool(self.dsn, 4)
            return self._apool

    def _run(self, op: Op[T]) -> T:
        self.ensure_table()
        with self._connection() as conn:
            return drive(conn, op)

    async def _arun(self, op: Op[T]) -> T:
        await self.aensure_table()
        async with self._aconnection() as conn:
            return await adrive(conn, op)

    def ensure_table(self) -> None:
        """Create what the table lacks, once per instance (a no-op after the first call)."""
        if not self._ready:
            def attempt() -> None:
                with psycopg.connect(self.dsn) as conn:
                    drive(conn, upkeep(self.schema()))

            with self._lock:
                retrying(attempt)
            self._ready = True

    async def aensure_table(self) -> None:
        if not self._ready:
            async def attempt() -> None:
                async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
                    await adrive(conn, upkeep(self.schema()))

            await aretrying(attempt)
            self._ready = True

    @property
    def ready(self) -> bool:
        """Whether this instance has made sure of the table."""
        return self._ready

    def open(self) -> None:
        self.ensure_table()

    async def aopen(self) -> None:
        await self.aensure_table()

    def schema(self) -> list[Statement]:
        """The statements that make the table, its indexes and the search log."""
        return [
            Statement(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} (seq bigserial PRIMARY KEY, id text NOT NULL,"
                " memory_id text NOT NULL, event text NOT NULL, old_value text, new_value text,"
                " timestamp timestamptz NOT NULL, is_deleted boolean NOT NULL DEFAULT FALSE,"
                " user_id text, agent_id text, run_id text, actor_id text, role text,"
                " reverts text, feed_xid xid8 NOT NULL DEFAULT pg_current_xact_id())"
            ).format(t=self._table)),
            Statement(sql.SQL(  # a log written before reverts existed
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS reverts text").format(t=self._table)),
            Statement(sql.SQL(  # a log written before the change feed
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS feed_xid xid8 NOT NULL"
                " DEFAULT pg_current_xact_id()").format(t=self._table)),
            Statement(sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (feed_xid, seq)").format(
                i=sql.Identifier(f"{self.table}_feed"), t=self._table)),
            Statement(sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (id)").format(
                i=sql.Identifier(f"{self.table}_id"), t=self._table)),
            Statement(sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} (memory_id, timestamp, seq)"
            ).format(i=sql.Identifier(f"{self.table}_memory"), t=self._table)),
            *(Statement(sql.SQL(statement)) for statement in searches_schema(self.table)),
        ]

    @contextmanager
    def lock(self, collection: str, key: str) -> Iterator[None]:
        """Advisory locks held by a transaction of this history's pool."""
        with self._connection() as conn, conn.transaction():
            drive(conn, _lock_op(collection, key))
            yield

    @asynccontextmanager
    async def alock(self, collection: str, key: str) -> AsyncIterator[None]:
        async with self._aconnection() as conn, conn.transaction():
            await adrive(conn, _lock_op(collection, key))
            yield

    # -- operations, each written once -----------------------------------
    def insert_op(self, records: Sequence[HistoryRecord]) -> Op[None]:
        """Append ``records`` and notify the change feed: one statement (a round trip) for
        up to :data:`INSERT_ROWS` records; also run inside a vector store's transaction."""
        table = sql.Identifier(self.table).as_string(None)
        purged = [r.memory_id for r in records if r.event == "PURGE"]
        if purged:  # and so, the searches that returned them (_searches.py)
            yield search_log_lock(self.table, shared=False)
            yield self._forget_searches(purged)
        for start in range(0, len(records), INSERT_ROWS):
            params = Params("h")
            rows = ", ".join(f"({', '.join(map(params.add, _values(record)))})"
                             for record in records[start:start + INSERT_ROWS])
            params.values["channel"] = self.channel
            yield Statement(sql.SQL(
                f"WITH added AS (INSERT INTO {table} ({_COLUMN_LIST}) VALUES {rows})"
                " SELECT pg_notify(%(channel)s, '')"), params.values)

    def _changes_op(self, after: str | None, scope: Mapping[str, str],
                    limit: int) -> Op[list[Change]]:
        """Rows in ``(feed_xid, seq)`` order, of transactions older than every one still
        running: a row can no longer appear before the newest position read."""
        xid, seq = _position(after)
        where, params = searches_where(scope)
        rows = yield Statement(sql.SQL(
            "SELECT feed_xid::text, seq, {cols} FROM {t}"
            " WHERE (feed_xid, seq) > (%(xid)s::xid8, %(seq)s)"
            " AND feed_xid < pg_snapshot_xmin(pg_current_snapshot())"
            " AND event = ANY(%(events)s) AND {c} ORDER BY feed_xid, seq LIMIT %(limit)s"
        ).format(cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), t=self._table,
                 c=sql.SQL(pyformat(where))),
            {**params, "xid": str(xid), "seq": seq, "events": list(FEED_EVENTS),
             "limit": limit})
        return [Change(**_history(row[2:]).model_dump(), position=f"{row[0]}-{row[1]}")
                for row in rows]

    def _head_op(self) -> Op[str | None]:
        rows = yield Statement(sql.SQL(
            "SELECT feed_xid::text, seq FROM {t}"
            " WHERE feed_xid < pg_snapshot_xmin(pg_current_snapshot())"
            " ORDER BY feed_xid DESC, seq DESC LIMIT 1").format(t=self._table))
        return f"{rows[0][0]}-{rows[0][1]}" if rows else None

    def _get_op(self, memory_id: str) -> Op[list[HistoryRecord]]:
        rows = yield Statement(
            sql.SQL("SELECT {cols} FROM {t} WHERE memory_id = %(m)s ORDER BY timestamp, seq")
            .format(cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), t=self._table),
            {"m": memory_id},
        )
        return [_history(row) for row in rows]

    def _event_op(self, event_id: str) -> Op[HistoryRecord | None]:
        rows = yield Statement(
            sql.SQL("SELECT {cols} FROM {t} WHERE id = %(e)s LIMIT 1")
            .format(cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), t=self._table),
            {"e": event_id},
        )
        return _history(rows[0]) if rows else None

    def _reset_op(self, cleared_at: str) -> Op[None]:
        yield search_log_lock(self.table, shared=False)
        for table in (self.table, f"{self.table}_searches", f"{self.table}_purges"):
            yield Statement(sql.SQL("DELETE FROM {t}").format(t=sql.Identifier(table)))
        marker, values = insert_purge_marker(self.table, {}, cleared_at)
        yield Statement(sql.SQL(pyformat(marker)), values)

    def _forget_op(self, memory_ids: Sequence[str]) -> Op[None]:
        ids = {"ids": list(memory_ids)}
        yield Statement(sql.SQL("DELETE FROM {t} WHERE memory_id = ANY(%(ids)s)"
                                " AND event <> 'PURGE'").format(t=self._table), ids)
        yield Statement(sql.SQL(
            "DELETE FROM {t} WHERE event = 'CONSOLIDATE' AND EXISTS (SELECT 1 FROM"
            " unnest(%(ids)s::text[]) AS f(id) WHERE strpos(new_value, '\"' || f.id || '\"') > 0)"
        ).format(t=self._table), ids)
        yield self._forget_searches(memory_ids)

    def _forget_searches(self, memory_ids: Sequence[str]) -> Statement:
        """Delete the logged searches that returned any of ``memory_ids``."""
        return Statement(sql.SQL("DELETE FROM {t} WHERE result_ids::jsonb ?| %(ids)s").format(
            t=sql.Identifier(f"{self.table}_searches")), {"ids": list(memory_ids)})

    def _discard_op(self, event_ids: Sequence[str]) -> Op[None]:
        yield Statement(sql.SQL("DELETE FROM {t} WHERE id = ANY(%(ids)s)").format(t=self._table),
                        {"ids": list(event_ids)})

    def _forget_scope_op(self, scope: Mapping[str, str], purged_at: str) -> Op[None]:
        where, params = searches_where(scope)
        condition = sql.SQL(pyformat(where))
        yield search_log_lock(self.table, shared=False)
        yield Statement(sql.SQL("DELETE FROM {t} WHERE {c} AND event <> 'PURGE'").format(
            t=self._table, c=condition), params)
        yield Statement(sql.SQL("DELETE FROM {t} WHERE {c}").format(
            t=sql.Identifier(f"{self.table}_searches"), c=condition), params)
        marker, values = insert_purge_marker(self.table, scope, purged_at)
        yield Statement(sql.SQL(pyformat(marker)), values)

    def _log_op(self, entries: Sequence[SearchLogEntry]) -> Op[None]:
        yield search_log_lock(self.table, shared=True)
        listed = "SELECT jsonb_array_elements_text(CAST(CAST(:result_ids AS text) AS jsonb))"
        yield Statement(sql.SQL(pyformat(insert_searches(self.table, listed))),
                        [search_row(e) for e in entries], many=True)

    def _searches_op(self, scope: Mapping[str, str], limit: int) -> Op[list[SearchLogEntry]]:
        query, params = select_searches(self.table, scope, limit)
        rows = yield Statement(sql.SQL(pyformat(query)), params)
        return [search_entry(row) for row in rows]

    def drop(self) -> None:
        """Delete the table."""
        with psycopg.connect(self.dsn) as conn:
            drive(conn, _one(sql.SQL("DROP TABLE IF EXISTS {t}, {s}, {p}").format(
                t=self._table, s=sql.Identifier(f"{self.table}_searches"),
                p=sql.Identifier(f"{self.table}_purges"))))
        self._ready = False

    # -- sync and async ---------------------------------------------------
    def changes(self, after: str | None, scope: Mapping[str, str], limit: int) -> list[Change]:
        return self._run(self._changes_op(after, scope, limit))

    async def achanges(self, after: str | None, scope: Mapping[str, str],
                       limit: int) -> list[Change]:
        return await self._arun(self._changes_op(after, scope, limit))

    def head(self) -> str | None:
        return self._run(self._head_op())

    async def ahead(self) -> str | None:
        return await self._arun(self._head_op())

    def follow(self) -> AbstractAsyncContextManager[Beacon]:
        return self._signal.follow()

    async def _watch(self, beacon: Beacon) -> None:
        """``LISTEN`` on a connection of its own; rings on each notification and every
        :data:`FEED_BACKSTOP_SECONDS`; while PostgreSQL cannot be reached, keeps ringing
        (the followers' reads then report the outage) and connects again."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                        self.dsn, autocommit=True) as conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    beacon.ready.set()
                    beacon.ring()  # what committed while not listening
                    while True:
                        async for _ in conn.notifies(timeout=FEED_BACKSTOP_SECONDS,
                                                     stop_after=1):
                            pass
                        beacon.ring()
            except psycopg.Error as exc:
                _log.info("the change feed of %s cannot listen: %s", self.table, exc)
                beacon.ready.set()
                beacon.ring()
                await asyncio.sleep(FEED_BACKSTOP_SECONDS)

    def add(self, records: Sequence[HistoryRecord]) -> None:
        self._run(self.insert_op(records))

    def get(self, memory_id: str) -> list[HistoryRecord]:
        return self._run(self._get_op(memory_id))

    def event(self, event_id: str) -> HistoryRecord | None:
        return self._run(self._event_op(event_id))

    def reset(self, cleared_at: str) -> None:
        self._run(self._reset_op(cleared_at))

    def forget(self, memory_ids: Sequence[str]) -> None:
        self._run(self._forget_op(memory_ids))

    def forget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        self._run(self._forget_scope_op(scope, purged_at))

    def discard(self, event_ids: Sequence[str]) -> None:
        self._run(self._discard_op(event_ids))

    async def adiscard(self, event_ids: Sequence[str]) -> None:
        await self._arun(self._discard_op(event_ids))

    async def aforget(self, memory_ids: Sequence[str]) -> None:
        await self._arun(self._forget_op(memory_ids))

    async def aforget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        await self._arun(self._forget_scope_op(scope, purged_at))

    async def aadd(self, records: Sequence[HistoryRecord]) -> None:
        await self._arun(self.insert_op(records))

    async def aget(self, memory_id: str) -> list[HistoryRecord]:
        return await self._arun(self._get_op(memory_id))

    async def aevent(self, event_id: str) -> HistoryRecord | None:
        return await self._arun(self._event_op(event_id))

    async def areset(self, cleared_at: str) -> None:
        await self._arun(self._reset_op(cleared_at))

    def log_searches(self, entries: Sequence[SearchLogEntry]) -> None:
        self._run(self._log_op(entries))

    def searches(self, scope: Mapping[str, str], limit: int) -> list[SearchLogEntry]:
        return self._run(self._searches_op(scope, limit))

    async def alog_searches(self, entries: Sequence[SearchLogEntry]) -> None:
        await self._arun(self._log_op(entries))

    async def asearches(self, scope: Mapping[str, str], limit: int) -> list[SearchLogEntry]:
        return await self._arun(self._searches_op(scope, limit))


def _values(record: HistoryRecord) -> list[Any]:
    """``record``'s values in the order of ``_COLUMNS``."""
    values = record.model_dump() | {"timestamp": to_datetime(record.timestamp)}
    return [values[column] for column in _COLUMNS]


def _history(row: Sequence[Any]) -> HistoryRecord:
    values = dict(zip(_COLUMNS, row, strict=True))
    return HistoryRecord(**values | {"timestamp": to_datetime(values["timestamp"])})


def _position(after: str | None) -> tuple[int, int]:
    """``(feed_xid, seq)`` of a position ``"<xid>-<seq>"``; ``(0, 0)`` for ``None``."""
    if after is None:
        return 0, 0
    xid, _, seq = after.partition("-")
    if not all(part.isascii() and part.isdigit() and len(part) < 19 for part in (xid, seq)):
        raise bad_position(after)
    return int(xid), int(seq)


def _lock_op(collection: str, key: str) -> Op[None]:
    """Every writer of ``collection`` holds its lock shared and its key's exclusive;
    ``EVERY_KEY`` holds the collection's exclusive."""
    every = advisory_key("memkit-writers", collection)
    if key == EVERY_KEY:
        yield Statement(sql.SQL("SELECT pg_advisory_xact_lock(%(k)s)"), {"k": every})
        return
    yield Statement(sql.SQL("SELECT pg_advisory_xact_lock_shared(%(k)s)"), {"k": every})
    yield Statement(sql.SQL("SELECT pg_advisory_xact_lock(%(k)s)"),
                    {"k": advisory_key("memkit-writers", collection, key)})


def search_log_lock(table: str, *, shared: bool) -> Statement:
    """Held until the transaction ends: shared by a search being logged, exclusive by a
    purge's writes to the history, so that the later of the two reads what the earlier
    wrote (a statement sees only what committed before it began)."""
    call = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    return Statement(sql.SQL(f"SELECT {call}(%(k)s)"),
                     {"k": advisory_key("memkit-search-log", table)})


def _one(query: sql.Composed) -> Op[None]:
    yield Statement(query)
