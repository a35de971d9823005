"""What the PostgreSQL store and history share: statements as data, two drivers, pools.

An operation is a generator that yields :class:`Statement` objects and receives
their rows; :func:`drive` runs it on a connection and :func:`adrive` on an
async one, each in one transaction (a savepoint inside an outer one).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memkit._errors import ConfigError, VectorStoreError
from memkit._imports import require

require("psycopg", "pgvector")
require("psycopg_pool", "pgvector")

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg_pool import AsyncConnectionPool, ConnectionPool  # noqa: E402

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement; ``many`` runs it once per parameter set. A ``fallible`` statement
    runs in a savepoint and its failure is answered with ``None`` instead of rows. A
    statement with ``copy_types`` is a ``COPY ... FROM STDIN (FORMAT BINARY)`` fed
    ``params``, a list of rows whose values have those PostgreSQL types."""

    query: sql.SQL | sql.Composed
    params: Any = field(default_factory=dict)  # a dict, or a list of dicts when ``many``
    many: bool = False
    fallible: bool = False
    copy_types: tuple[str, ...] = ()


Op = Generator[Statement, Rows, T]


def check_name(name: str, what: str = "collection_name") -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{what} {name!r}: use letters, digits and '_' (not first), at most 40 characters"
        )
    return name




def drive(conn: psycopg.Connection[Any], op: Op[T]) -> T:
    """Run ``op`` on ``conn`` in one transaction."""
    try:
        with conn.transaction(), conn.cursor() as cur:
            try:
                stmt = next(op)
                while True:
                    if stmt.fallible:
                        try:
                            with conn.transaction():
                                cur.execute(stmt.query, stmt.params)
                        except psycopg.Error:
                            stmt = op.send(None)  # type: ignore[arg-type]
                            continue
                    elif stmt.copy_types:
                        with cur.copy(stmt.query) as copy:
                            copy.set_types(list(stmt.copy_types))
                            for row in stmt.params:
                                copy.write_row(row)
                    elif stmt.many:
                        cur.executemany(stmt.query, stmt.params)
                    else:
                        cur.execute(stmt.query, stmt.params)
                    stmt = op.send(cur.fetchall() if cur.description else [])
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
    except psycopg.Error as exc:
        raise VectorStoreError(f"PostgreSQL: {exc}") from exc


async def adrive(conn: psycopg.AsyncConnection[Any], op: Op[T]) -> T:
    """Run ``op`` on ``conn`` in one transaction, without blocking the event loop."""
    try:
        async with conn.transaction(), conn.cursor() as cur:
            try:
                stmt = next(op)
                while True:
                    if stmt.fallible:
                        try:
                            async with conn.transaction():
                                await cur.execute(stmt.query, stmt.params)
                        except psycopg.Error:
                            stmt = op.send(None)  # type: ignore[arg-type]
                            continue
                    elif stmt.copy_types:
                        async with cur.copy(stmt.query) as acopy:
                            acopy.set_types(list(stmt.copy_types))
                            for row in stmt.params:
                                await acopy.write_row(row)
                    elif stmt.many:
                        await cur.executemany(stmt.query, stmt.params)
                    else:
                        await cur.execute(stmt.query, stmt.params)
                    stmt = op.send(await cur.fetchall() if cur.description else [])
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
    except psycopg.Error as exc:
        raise VectorStoreError(f"PostgreSQL: {exc}") from exc


def resolve_dsn(dsn: str | None) -> str:
    resolved = dsn or os.environ.get("DATABASE_URL")
    if not resolved:
        raise ConfigError("no PostgreSQL DSN: pass dsn= or set DATABASE_URL")
    return resolved


def advisory_key(*parts: str) -> int:
    """A signed 64-bit key for ``pg_advisory_xact_lock``."""
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def open_async_pool(dsn: str, size: int, name: str | None = None,
                          configure: Any = None) -> AsyncConnectionPool[Any]:
    """An async pool of ``size`` connections, all made before this returns.

    A pool that grows later connects in background tasks. An event loop that ends
    while one of those connects (``asyncio.run`` around an ``AsyncMemory`` that was
    never closed) cancels it; psycopg reports the cancelled connect as a failed one
    and its worker waits on for more work, so the loop never finishes closing. A
    fixed-size pool opened in full has no connect left in flight once it is used.
    """
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=size, max_size=size, open=False, configure=configure, name=name)
    await pool.open(wait=True)
    return pool


class PoolOwner:
    """Closes a sync and an async psycopg pool; shared by the store and the history."""

    _pool: ConnectionPool[Any] | None
    _apool: AsyncConnectionPool[Any] | None

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        # An async pool belongs to its event loop; aclose() closes it there.
        self._apool = None

    async def aclose(self) -> None:
        apool, self._apool = self._apool, None
        if apool is not None:
            await apool.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.close)
