"""The graph in PostgreSQL, beside pgvector's tables in the same database.

The statements are :mod:`memkit.graph._sql`'s (recursive CTEs for traversal),
run through :func:`memkit._postgres.drive` and :func:`~memkit._postgres.adrive`
on psycopg pools, each operation in one transaction. With a pgvector store on
the same DSN, an add's graph writes run on the connection of the store's
transaction (:meth:`PostgresGraph.bound`): they commit with the memories or
not at all.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Generator
from typing import Any, ClassVar

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memkit._errors import VectorStoreError
from memkit._postgres import (
    PoolOwner,
    Rows,
    Statement,
    adrive,
    aretrying,
    check_name,
    drive,
    open_async_pool,
    open_pool,
    resolve_dsn,
    retrying,
    upkeep,
)
from memkit.graph._sql import Dialect, Op, Query, SQLGraph, T
from memkit.graph.base import GraphStore, GraphStoreError
from memkit.stores._ops import run, translated

_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def statements(op: Op[T]) -> Generator[Statement, Rows, T]:
    """``op``'s queries as psycopg statements (``:name`` -> ``%(name)s``)."""
    return translated(op, _statement)


def _statement(query: Query) -> Statement:
    text = sql.SQL(_PARAM.sub(r"%(\1)s", query.sql))
    many = query.many is not None
    return Statement(text, list(query.many or ()) if many else query.params, many)


class PostgresGraph(PoolOwner, GraphStore):
    """``PostgresGraph("postgresql://user@host/db", graph_name="memkit")``; without a DSN,
    ``DATABASE_URL``."""

    provider: ClassVar[str] = "postgres"
    ops: SQLGraph

    def __init__(self, dsn: str | None = None, graph_name: str = "memkit_graph",
                 pool_size: int = 4) -> None:
        self.dsn = resolve_dsn(dsn)
        self.ops = SQLGraph(check_name(graph_name, "graph_name"), Dialect("postgres"))
        self.pool_size = pool_size
        self._lock = threading.Lock()
        self._alock = asyncio.Lock()
        self._ready = False
        self._pool: ConnectionPool[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None

    def _sync_pool(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = open_pool(self.dsn, self.pool_size)
            return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        async with self._alock:
            if self._apool is None:
                self._apool = await open_async_pool(self.dsn, self.pool_size)
            return self._apool

    def _run(self, op: Op[T]) -> T:
        try:
            with self._connection() as conn:
                if not self._ready:
                    retrying(lambda: drive(conn, self._schema()))
                    self._ready = True
                return drive(conn, statements(op))
        except (VectorStoreError, psycopg.Error) as exc:
            raise GraphStoreError(str(exc)) from exc

    def _schema(self) -> Generator[Statement, Rows, bool]:
        """What the tables lack, created by one connection at a time (nothing, and no
        lock, when they are complete)."""
        made: list[Statement] = []

        def collect(statement: Statement) -> Rows:
            made.append(statement)
            return []

        run(statements(self.ops.schema()), collect)
        return (yield from upkeep(made))

    def open(self) -> None:
        self._run(_nothing())

    async def aopen(self) -> None:
        await self._arun(_nothing())

    def joins(self, store: object) -> bool:
        from memkit.stores.pgvector import PgVectorStore

        return isinstance(store, PgVectorStore) and store.dsn == self.dsn

    def bound(self, writer: object) -> GraphStore:
        return _InTransaction(self, writer)

    async def _arun(self, op: Op[T]) -> T:
        try:
            async with self._aconnection() as conn:
                if not self._ready:
                    await aretrying(lambda: adrive(conn, self._schema()))
                    self._ready = True
                return await adrive(conn, statements(op))
        except (VectorStoreError, psycopg.Error) as exc:
            raise GraphStoreError(str(exc)) from exc


def _nothing() -> Op[None]:
    """An operation of no statements: running it makes sure of the schema."""
    return
    yield


class _InTransaction(GraphStore):
    """The graph's operations on the connection of a pgvector transaction (its ``run``)."""

    provider: ClassVar[str] = "postgres"

    def __init__(self, graph: PostgresGraph, writer: Any) -> None:
        self.ops, self._writer = graph.ops, writer

    def _run(self, op: Op[T]) -> T:
        return self._writer.run(statements(op))  # type: ignore[no-any-return]

    async def _arun(self, op: Op[T]) -> T:
        return await self._writer.arun(statements(op))  # type: ignore[no-any-return]


__all__ = ["PostgresGraph", "statements"]
