"""What the PostgreSQL store and history share: statements as data, two drivers, pools.

An operation (:mod:`memkit.stores._ops`) yields :class:`Statement` objects (and
:class:`Settings`) and receives their rows (``None`` for a ``fallible`` statement
that failed); :func:`drive` runs it on a connection and :func:`adrive` on an async
one, each in one transaction (a savepoint inside an outer one), or, for a read,
each statement on its own. Pooled connections are in autocommit mode: a read of
one statement is one round trip, with no ``BEGIN`` and ``COMMIT`` around it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memkit._errors import ConfigError, VectorStoreError
from memkit._imports import require
from memkit.stores._ops import arun, run

require("psycopg", "pgvector")
require("psycopg_pool", "pgvector")

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout  # noqa: E402

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


@dataclass(frozen=True, slots=True)
class Settings:
    """Session settings (``name``, ``value`` pairs) that the statements after it need. A
    driver sends only those its connection does not hold already, so a pooled connection
    that serves the same kind of query again sends none."""

    values: tuple[tuple[str, str], ...]


Op = Generator[Statement | Settings, Rows, T]
#: an operation of statements alone (schema upkeep: what a graph's transaction also runs)
StatementOp = Generator[Statement, Rows, T]


class Params:
    """Named parameters of a query being built: ``add(value)`` -> its placeholder
    (``%(f0)s``), to write into the query's text."""

    def __init__(self, prefix: str = "f") -> None:
        self.values: dict[str, Any] = {}
        self._prefix = prefix

    def add(self, value: Any) -> str:
        name = f"{self._prefix}{len(self.values)}"
        self.values[name] = value
        return f"%({name})s"


def check_name(name: str, what: str = "collection_name") -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{what} {name!r}: use letters, digits and '_' (not first), at most 40 characters"
        )
    return name


# -- schema upkeep ------------------------------------------------------------------
#
# Every process runs its schema statements when it opens a table. ``CREATE INDEX`` and
# ``ALTER TABLE`` wait for every open transaction on their table even when, with
# ``IF NOT EXISTS``, they change nothing, and every later writer queues behind them.
# An opener that waits so under memkit's DDL lock, while a writer of that table waits
# (through its client, where PostgreSQL cannot see the edge) for that same lock, never
# finishes. So the catalog is read first and a statement runs only when what it creates
# is missing: an open of an up-to-date schema takes no lock at all. What is missing is
# created by one process at a time, with a lock timeout: a wait that would close a
# cycle ends in an error, the transaction rolls back, and :func:`retrying` runs it again.

_IDENT = r'("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)'
_CREATES = re.compile(rf"CREATE (?:UNIQUE )?(TABLE|INDEX|EXTENSION) IF NOT EXISTS {_IDENT}")
_ALTERS = re.compile(rf"ALTER TABLE {_IDENT}")
_ADDS = re.compile(rf"ADD COLUMN IF NOT EXISTS {_IDENT}")
#: how long a schema statement waits for a table before its transaction starts over
SCHEMA_LOCK_TIMEOUT = "2s"
_SCHEMA_ATTEMPTS = 30


def _unquoted(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _probes(stmt: Statement) -> list[tuple[str, tuple[str, ...]]]:
    """Catalog tests (``{}`` for each value), each true when a part of what ``stmt`` makes
    exists."""
    text = stmt.query.as_string(None)
    made = _CREATES.match(text)
    if made:
        kind, name = made.groups()
        if kind == "EXTENSION":
            return [("EXISTS (SELECT 1 FROM pg_extension WHERE extname = {})", (_unquoted(name),))]
        return [("to_regclass({}) IS NOT NULL", (name,))]
    altered = _ALTERS.match(text)
    if altered:
        return [("EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass({})"
                 " AND attname = {} AND NOT attisdropped)", (altered.group(1), _unquoted(column)))
                for column in _ADDS.findall(text)]
    raise ValueError(f"not a schema statement memkit can check: {text[:60]}")


def missing(statements: Sequence[Statement]) -> StatementOp[list[Statement]]:
    """The statements that would create something the catalog lacks (read without a lock).

    Each is ``CREATE {TABLE|INDEX|EXTENSION} IF NOT EXISTS`` or ``ALTER TABLE ... ADD
    COLUMN IF NOT EXISTS``; what an earlier statement creates counts as missing until it
    runs, so a table and its indexes are created together.
    """
    probes = [(i, *probe) for i, stmt in enumerate(statements) for probe in _probes(stmt)]
    if not probes:
        return []
    params = Params("c")
    tests = [test.format(*map(params.add, values)) for _, test, values in probes]
    (found,), = yield Statement(
        sql.SQL(f"SELECT ARRAY[{', '.join(tests)}]::boolean[]"), params.values)
    lacking = {i for (i, _, _), present in zip(probes, found, strict=True) if not present}
    return [stmt for i, stmt in enumerate(statements) if i in lacking]


def each(statements: Sequence[Statement]) -> StatementOp[None]:
    """Run ``statements`` in order, their rows unread."""
    for stmt in statements:  # noqa: UP028 - the driver sends rows, which a list cannot take
        yield stmt


def ddl_lock() -> StatementOp[None]:
    """memkit's DDL lock, and a lock timeout for the rest of the transaction."""
    yield Statement(sql.SQL("SELECT pg_advisory_xact_lock({})").format(
        sql.Literal(advisory_key("memkit-ddl"))))
    yield Statement(sql.SQL("SET LOCAL lock_timeout = {}").format(
        sql.Literal(SCHEMA_LOCK_TIMEOUT)))


def create_missing(statements: Sequence[Statement]) -> StatementOp[bool]:
    """Run the statements whose object is missing; whether any ran. Under :func:`ddl_lock`."""
    todo = yield from missing(statements)
    yield from each(todo)
    return bool(todo)


def upkeep(statements: Sequence[Statement]) -> StatementOp[bool]:
    """Create what the catalog lacks, under the DDL lock; nothing at all (no lock) when the
    schema is complete. Whether anything was created."""
    if not (yield from missing(statements)):
        return False
    yield from ddl_lock()
    return (yield from create_missing(statements))


def _lock_wait_ended(exc: VectorStoreError) -> bool:
    return isinstance(exc.__cause__, psycopg.errors.LockNotAvailable
                      | psycopg.errors.DeadlockDetected)


def retrying(run: Callable[[], T]) -> T:
    """``run()`` again while its schema statements end in a lock timeout (or a deadlock
    PostgreSQL broke): each attempt rolled back, freeing what the other side waited for."""
    for attempt in range(_SCHEMA_ATTEMPTS):
        try:
            return run()
        except VectorStoreError as exc:
            if not _lock_wait_ended(exc) or attempt == _SCHEMA_ATTEMPTS - 1:
                raise
        time.sleep(min(0.05 * 2 ** attempt, 1.0))
    raise AssertionError("unreachable")


async def aretrying(run: Callable[[], Any]) -> Any:
    """:func:`retrying` for a coroutine function."""
    for attempt in range(_SCHEMA_ATTEMPTS):
        try:
            return await run()
        except VectorStoreError as exc:
            if not _lock_wait_ended(exc) or attempt == _SCHEMA_ATTEMPTS - 1:
                raise
        await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
    raise AssertionError("unreachable")


#: per connection, the session settings it holds (as :class:`Settings` left them)
_held: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def _settings(conn: Any, settings: Settings) -> Statement | None:
    """The statement that sets what ``conn`` lacks of ``settings``, or ``None``."""
    held = _held.setdefault(conn, {})
    lacking = [(name, value) for name, value in settings.values if held.get(name) != value]
    if not lacking:
        return None
    params = Params("s")
    calls = [f"set_config({params.add(name)}, {params.add(value)}, false)"
             for name, value in lacking]
    return Statement(sql.SQL(f"SELECT {', '.join(calls)}"), params.values)


def _settled(conn: Any, settings: Settings) -> None:
    """Note ``settings`` as held by ``conn``: for good outside a transaction; inside one
    (which may roll back) as unknown, so the next use sends them again."""
    held = _held.setdefault(conn, {})
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        held.update(settings.values)
    else:
        for name, _ in settings.values:
            held.pop(name, None)


def _block(conn: Any, atomic: bool) -> Any:
    """The transaction ``op`` runs in: none for a read on an autocommit connection."""
    return conn.transaction() if atomic or not conn.autocommit else nullcontext()


def drive(conn: psycopg.Connection[Any], op: Op[T], atomic: bool = True) -> T:
    """Run ``op`` on ``conn`` in one transaction; with ``atomic=False`` (a read) on an
    autocommit connection, each statement on its own."""
    try:
        block: AbstractContextManager[Any] = _block(conn, atomic)
        with block, conn.cursor() as cur:

            def execute(step: Statement | Settings) -> Rows | None:
                if isinstance(step, Settings):
                    stmt = _settings(conn, step)
                    if stmt is not None:
                        cur.execute(stmt.query, stmt.params)
                        _settled(conn, step)
                    return []
                if step.fallible:
                    try:
                        with conn.transaction():
                            cur.execute(step.query, step.params)
                    except psycopg.Error:
                        return None
                elif step.copy_types:
                    with cur.copy(step.query) as copy:
                        copy.set_types(list(step.copy_types))
                        for row in step.params:
                            copy.write_row(row)
                elif step.many:
                    cur.executemany(step.query, step.params)
                else:
                    cur.execute(step.query, step.params)
                return cur.fetchall() if cur.description else []

            return run(op, execute)
    except psycopg.Error as exc:
        raise VectorStoreError(f"PostgreSQL: {exc}") from exc


async def adrive(conn: psycopg.AsyncConnection[Any], op: Op[T], atomic: bool = True) -> T:
    """:func:`drive` without blocking the event loop."""
    try:
        block: AbstractAsyncContextManager[Any] = _block(conn, atomic)
        async with block, conn.cursor() as cur:

            async def execute(step: Statement | Settings) -> Rows | None:
                if isinstance(step, Settings):
                    stmt = _settings(conn, step)
                    if stmt is not None:
                        await cur.execute(stmt.query, stmt.params)
                        _settled(conn, step)
                    return []
                if step.fallible:
                    try:
                        async with conn.transaction():
                            await cur.execute(step.query, step.params)
                    except psycopg.Error:
                        return None
                elif step.copy_types:
                    async with cur.copy(step.query) as acopy:
                        acopy.set_types(list(step.copy_types))
                        for row in step.params:
                            await acopy.write_row(row)
                elif step.many:
                    await cur.executemany(step.query, step.params)
                else:
                    await cur.execute(step.query, step.params)
                return await cur.fetchall() if cur.description else []

            return await arun(op, execute)
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


#: how long a connect to an engine that does not answer may take (libpq's connect_timeout)
CONNECT_TIMEOUT = 5
#: how long a call waits for a pooled connection when every one is in use
POOL_TIMEOUT = 30.0
#: after a failed connect, calls within this many seconds fail at once with its error
_PROBE_INTERVAL = 1.0
_unreachable: dict[str, tuple[float, str]] = {}
#: per DSN, how many times its engine was found gone (a failed connect, a dropped connection)
_failures: dict[str, int] = {}


def _failed_recently(dsn: str) -> VectorStoreError | None:
    failure = _unreachable.get(dsn)
    if failure is not None and time.monotonic() - failure[0] < _PROBE_INTERVAL:
        return VectorStoreError(failure[1])
    return None


def _unreachable_error(dsn: str, exc: Exception) -> VectorStoreError:
    message = f"PostgreSQL is unreachable: {str(exc).strip()}"
    _unreachable[dsn] = (time.monotonic(), message)
    _failures[dsn] = _failures.get(dsn, 0) + 1
    return VectorStoreError(message)


def _probe(dsn: str) -> None:
    """Connect once (and hang up), so a pool is opened only on an engine that answers."""
    recent = _failed_recently(dsn)
    if recent is not None:
        raise recent
    try:
        psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        raise _unreachable_error(dsn, exc) from exc
    _unreachable.pop(dsn, None)


async def _aprobe(dsn: str) -> None:
    recent = _failed_recently(dsn)
    if recent is not None:
        raise recent
    try:
        await (await psycopg.AsyncConnection.connect(dsn, connect_timeout=CONNECT_TIMEOUT)).close()
    except psycopg.Error as exc:
        raise _unreachable_error(dsn, exc) from exc
    _unreachable.pop(dsn, None)


def open_pool(dsn: str, size: int, name: str | None = None,
              configure: Any = None) -> ConnectionPool[Any]:
    """A pool of up to ``size`` connections, its first one made before this returns; a
    :class:`VectorStoreError` at once when the engine does not answer."""
    _probe(dsn)
    pool: ConnectionPool[Any] = ConnectionPool(
        dsn, min_size=1, max_size=size, open=False, configure=configure, name=name,
        timeout=POOL_TIMEOUT, kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True})
    try:
        pool.open(wait=True, timeout=POOL_TIMEOUT)
    except PoolTimeout as exc:
        pool.close()
        raise _unreachable_error(dsn, exc) from exc
    return pool


async def open_async_pool(dsn: str, size: int, name: str | None = None,
                          configure: Any = None) -> AsyncConnectionPool[Any]:
    """An async pool of ``size`` connections, all made before this returns; a
    :class:`VectorStoreError` at once when the engine does not answer.

    A pool that grows later connects in background tasks. An event loop that ends
    while one of those connects (``asyncio.run`` around an ``AsyncMemory`` that was
    never closed) cancels it; psycopg reports the cancelled connect as a failed one
    and its worker waits on for more work, so the loop never finishes closing. A
    fixed-size pool opened in full has no connect left in flight once it is used.
    """
    await _aprobe(dsn)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=size, max_size=size, open=False, configure=configure, name=name,
        timeout=POOL_TIMEOUT, kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True})
    try:
        await pool.open(wait=True, timeout=POOL_TIMEOUT)
    except PoolTimeout as exc:
        await pool.close()
        raise _unreachable_error(dsn, exc) from exc
    return pool


class PoolOwner:
    """The sync and the async psycopg pool of a store, history or graph: lazily opened
    (``_sync_pool()``, ``_async_pool()``), and closed.

    A connection the engine dropped (the engine restarted or went away) drops the whole
    pool, whose other connections went with it: the next call opens a new pool, or
    fails at once (:class:`VectorStoreError`, a 503 over REST) while the engine does not
    answer. So an outage costs the calls made during it, and nothing after it.
    """

    dsn: str
    _pool: ConnectionPool[Any] | None
    _apool: AsyncConnectionPool[Any] | None
    def _sync_pool(self) -> ConnectionPool[Any]:
        raise NotImplementedError

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        raise NotImplementedError

    def _stale(self, pool: object) -> bool:
        """Whether the engine failed since ``pool`` was first used (its connections are
        gone, even where nothing has used them since)."""
        failures = _failures.get(self.dsn, 0)
        return self._first_used().setdefault(id(pool), failures) != failures

    def _first_used(self) -> dict[int, int]:
        """The pools in use, each with the count of engine failures when first used."""
        seen: dict[int, int] = self.__dict__.setdefault("_pools_seen", {})
        return seen

    def _dropped(self, pool: object, broken: bool) -> bool:
        """Forget ``pool`` if it is stale or lost a connection; whether it was forgotten."""
        if broken:
            _failures[self.dsn] = _failures.get(self.dsn, 0) + 1
        elif not self._stale(pool):
            return False
        self._first_used().pop(id(pool), None)
        if self._pool is pool:
            self._pool = None
        elif self._apool is pool:
            self._apool = None
        else:
            return False
        return True

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        pool, broken = self._sync_pool(), False
        if self._dropped(pool, False):
            pool.close(timeout=1.0)
            pool = self._sync_pool()
        try:
            with pool.connection() as conn:
                try:
                    yield conn
                finally:
                    broken = conn.broken
        except (PoolTimeout, PoolClosed) as exc:
            raise VectorStoreError(f"PostgreSQL: {exc}") from exc
        finally:
            if broken and self._dropped(pool, True):
                pool.close(timeout=1.0)

    @asynccontextmanager
    async def _aconnection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        pool, broken = await self._async_pool(), False
        if self._dropped(pool, False):
            await pool.close(timeout=1.0)
            pool = await self._async_pool()
        try:
            async with pool.connection() as conn:
                try:
                    yield conn
                finally:
                    broken = conn.broken
        except (PoolTimeout, PoolClosed) as exc:
            raise VectorStoreError(f"PostgreSQL: {exc}") from exc
        finally:
            if broken and self._dropped(pool, True):
                await pool.close(timeout=1.0)

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


def check_not_failed(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Refuse to end a transaction whose statement failed (its error was caught) in a
    commit: PostgreSQL would roll it back without a word, and its writes would be lost."""
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise VectorStoreError("PostgreSQL: a statement of this write failed; nothing was written")
