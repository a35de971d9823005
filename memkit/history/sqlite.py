"""History in SQLite: a file of its own, or the sqlite vector store's file and connection.

Standalone, ``SQLiteHistory("~/.memkit/history.db")`` keeps the log when the
vector store is elsewhere. ``SQLiteStore.history()`` gives the same class over
the store's own connection, so a memory write and its history rows commit in
one transaction.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any

from memkit._errors import ConfigError, StoreError
from memkit._models import Change, HistoryRecord, SearchLogEntry
from memkit._time import to_datetime, to_iso
from memkit.history._feed import FEED_EVENTS, Beacon, ChangeSignal, bad_position, polling
from memkit.history._locks import FileLocks
from memkit.history._searches import (
    insert_purge_marker,
    insert_searches,
    search_entry,
    search_row,
    searches_schema,
    searches_where,
    select_searches,
)
from memkit.history.base import HistoryStore

BUSY_TIMEOUT_SECONDS = 30.0
#: how often a followed history's file is asked whether another connection committed
FEED_POLL_SECONDS = 0.1
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def check_identifier(name: str, what: str) -> str:
    """A name that is safe to quote as an SQL identifier; raises ConfigError otherwise."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ConfigError(
            f"invalid {what} {name!r}: use 1-63 letters, digits or underscores, not starting "
            "with a digit"
        )
    return name


def _write_ahead(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode. Two connections switching a new file at once both read it,
    then each needs it alone: SQLite answers one of them "database is locked" at once (the
    busy timeout would deadlock), so that one tries again, up to the busy timeout, and
    then finds the file switched."""
    deadline, wait = time.monotonic() + BUSY_TIMEOUT_SECONDS, 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + wait > deadline:
                raise
        time.sleep(wait)
        wait = min(wait * 2, 0.1)


class SQLiteConnection:
    """One connection shared by threads behind a re-entrant lock, with explicit transactions.

    ``write()`` opens ``BEGIN IMMEDIATE`` (taking the file's write lock, so other
    processes wait rather than fail) and ``read()`` a snapshot; both nest, so an
    outer transaction covers every statement made inside it.

    ``snapshot()`` reads without the lock: on a file (WAL mode) each thread gets a
    read-only connection of its own, so a slow read never holds up other requests.
    Inside this thread's open transaction, and for ``:memory:``, it is ``read()``.
    """

    def __init__(self, path: str) -> None:
        if path != ":memory:":
            path = os.path.expanduser(path)
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
        self.path = path
        self.lock = threading.RLock()
        self.conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        if path != ":memory:":
            _write_ahead(self.conn)
            self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        # what a write deletes or replaces is overwritten with zeros, not left in free space
        self.conn.execute("PRAGMA secure_delete = ON")
        self.closed = False
        self._owner: int | None = None  # the thread inside the shared connection's transaction
        self._local = threading.local()
        #: each thread's reader, with its thread
        self._readers: dict[sqlite3.Connection, threading.Thread] = {}
        #: readers inside a snapshot: ``close`` leaves them to their thread, which closes
        #: each as its snapshot ends (a connection closed under a running statement crashes)
        self._busy: set[sqlite3.Connection] = set()
        self._readers_lock = threading.Lock()
        self.functions: dict[str, tuple[int, Any]] = {}

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN") as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self.lock:
            if self.closed:
                raise sqlite3.ProgrammingError(f"the connection to {self.path} is closed")
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute(begin)
            self._owner = threading.get_ident()
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            finally:
                self._owner = None
            self.conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        if self.path == ":memory:" or self._owner == threading.get_ident():
            with self.read() as conn:
                yield conn
            return
        conn = self._reader()
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            with self._readers_lock:
                self._busy.discard(conn)
                if self.closed:  # closed meanwhile, by another thread: this one's to close
                    conn.close()

    def _reader(self) -> sqlite3.Connection:
        """This thread's reader, marked busy (raises once closed)."""
        with self._readers_lock:  # not self.lock: a writer may hold that for long
            if self.closed:
                raise sqlite3.ProgrammingError(f"the connection to {self.path} is closed")
            conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._new_reader()
                self._local.conn = conn
            self._busy.add(conn)
            return conn

    def _new_reader(self) -> sqlite3.Connection:
        """A read-only connection for this thread (call under ``_readers_lock``); the readers
        of threads that have ended are closed first (a server with a thread per request
        would otherwise keep a file open per request, until it can open no more)."""
        for ended in [conn for conn, thread in self._readers.items() if not thread.is_alive()]:
            ended.close()
            del self._readers[ended]
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        conn.execute("PRAGMA query_only = ON")
        for name, (arity, function) in self.functions.items():
            conn.create_function(name, arity, function, deterministic=True)
        self._readers[conn] = threading.current_thread()
        return conn

    def checkpoint(self) -> None:
        """Copy the WAL into the file and empty it, so what a purge deleted is in neither
        (readers in other connections are waited for, up to the busy timeout)."""
        if self.path == ":memory:":
            return
        with self.lock:
            if not self.closed and not self.conn.in_transaction:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def data_version(self) -> int:
        """Changes whenever another connection commits to the file."""
        with self.lock:
            row = self.conn.execute("PRAGMA data_version").fetchone()
            return int(row[0])

    def create_function(self, name: str, arity: int, function: Any) -> None:
        """Register a deterministic SQL function on every connection, present and future."""
        with self.lock, self._readers_lock:
            self.functions[name] = (arity, function)
            for conn in [self.conn, *self._readers]:
                conn.create_function(name, arity, function, deterministic=True)

    def close(self) -> None:
        with self.lock, self._readers_lock:
            if not self.closed:
                self.closed = True
                self.conn.close()
                for conn in self._readers:
                    if conn not in self._busy:  # a busy one is closed as its snapshot ends
                        conn.close()
                self._readers.clear()


_COLUMNS = (
    "id", "memory_id", "event", "old_value", "new_value", "timestamp", "is_deleted",
    "user_id", "agent_id", "run_id", "actor_id", "role", "reverts",
)


class SQLiteHistory(HistoryStore):
    """The history log in one SQLite table, oldest first, insertion order breaking ties."""

    def __init__(self, db_path: str = "~/.memkit/history.db", *, table: str = "history") -> None:
        db: SQLiteConnection | None = None
        try:
            db = SQLiteConnection(db_path)
            self._init(db, table, owns_connection=True)
        except sqlite3.Error as exc:  # the file locked past the busy timeout, unreadable, ...
            if db is not None:
                db.close()
            raise StoreError(f"sqlite history {db_path}: {exc}") from exc

    @classmethod
    def on_connection(cls, db: SQLiteConnection, table: str) -> SQLiteHistory:
        """A history sharing ``db`` (and its transactions) with its owner, which closes it."""
        history = cls.__new__(cls)
        history._init(db, table, owns_connection=False)
        return history

    def _init(self, db: SQLiteConnection, table: str, *, owns_connection: bool) -> None:
        self._db = db
        self._locks = None if db.path == ":memory:" else FileLocks(db.path)
        self._table = check_identifier(table, "history table name")
        self._owns_connection = owns_connection
        self._signal = ChangeSignal(self._watch)
        with db.write() as conn:
            conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{table}" ('
                " seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,"
                " memory_id TEXT NOT NULL, event TEXT NOT NULL, old_value TEXT, new_value TEXT,"
                " timestamp TEXT NOT NULL, is_deleted INTEGER NOT NULL DEFAULT 0,"
                " user_id TEXT, agent_id TEXT, run_id TEXT, actor_id TEXT, role TEXT,"
                " reverts TEXT)"
            )
            present = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
            if "reverts" not in present:  # a log written before reverts existed
                conn.execute(f'ALTER TABLE "{table}" ADD COLUMN reverts TEXT')
            conn.execute(f'CREATE INDEX IF NOT EXISTS "{table}_id" ON "{table}" (id)')
            conn.execute(
                f'CREATE INDEX IF NOT EXISTS "{table}_memory"'
                f' ON "{table}" (memory_id, timestamp, seq)'
            )
            for statement in searches_schema(table):
                conn.execute(statement)

    @property
    def path(self) -> str:
        """The SQLite file the log is in."""
        return self._db.path

    @contextmanager
    def lock(self, collection: str, key: str) -> Iterator[None]:
        """In files beside the history's (see :mod:`memkit.history._locks`)."""
        if self._locks is None:
            yield
            return
        with self._locks.hold(collection, key):
            yield

    @asynccontextmanager
    async def alock(self, collection: str, key: str) -> AsyncIterator[None]:
        if self._locks is None:
            yield
            return
        async with self._locks.ahold(collection, key):
            yield

    def add(self, records: Sequence[HistoryRecord]) -> None:
        if not records:
            return
        marks = ", ".join("?" * len(_COLUMNS))
        purged = [r.memory_id for r in records if r.event == "PURGE"]
        with self._db.write() as conn:
            conn.executemany(
                f'INSERT INTO "{self._table}" ({", ".join(_COLUMNS)}) VALUES ({marks})',
                [_to_row(r) for r in records],
            )
            if purged:  # what a search that read them before the purge logged since
                self._forget_searches(conn, json.dumps(purged))

    def get(self, memory_id: str) -> list[HistoryRecord]:
        with self._db.snapshot() as conn:
            rows = conn.execute(
                f'SELECT {", ".join(_COLUMNS)} FROM "{self._table}" WHERE memory_id = ?'
                " ORDER BY timestamp, seq",
                (memory_id,),
            ).fetchall()
        return [_from_row(row) for row in rows]

    def event(self, event_id: str) -> HistoryRecord | None:
        with self._db.read() as conn:
            row = conn.execute(
                f'SELECT {", ".join(_COLUMNS)} FROM "{self._table}" WHERE id = ?', (event_id,)
            ).fetchone()
        return None if row is None else _from_row(row)

    def reset(self, cleared_at: str) -> None:
        with self._db.write() as conn:
            for table in (self._table, f"{self._table}_searches", f"{self._table}_purges"):
                conn.execute(f'DELETE FROM "{table}"')
            conn.execute(*insert_purge_marker(self._table, {}, cleared_at))

    def forget(self, memory_ids: Sequence[str]) -> None:
        listed = json.dumps(list(memory_ids))
        with self._db.write() as conn:
            conn.execute(f'DELETE FROM "{self._table}" WHERE memory_id IN'
                         " (SELECT value FROM json_each(?)) AND event <> 'PURGE'", (listed,))
            conn.execute(f'DELETE FROM "{self._table}" WHERE event = \'CONSOLIDATE\' AND EXISTS'
                         " (SELECT 1 FROM json_each(?) AS f"
                         " WHERE instr(new_value, '\"' || f.value || '\"') > 0)", (listed,))
            self._forget_searches(conn, listed)

    def _forget_searches(self, conn: sqlite3.Connection, listed: str) -> None:
        """Delete the logged searches that returned any id of the JSON array ``listed``."""
        conn.execute(
            f'DELETE FROM "{self._table}_searches" WHERE EXISTS (SELECT 1 FROM'
            " json_each(result_ids) AS r WHERE r.value IN (SELECT value FROM json_each(?)))",
            (listed,))

    def discard(self, event_ids: Sequence[str]) -> None:
        with self._db.write() as conn:
            conn.execute(f'DELETE FROM "{self._table}" WHERE id IN'
                         " (SELECT value FROM json_each(?))", (json.dumps(list(event_ids)),))

    def forget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        where, params = searches_where(scope)
        with self._db.write() as conn:
            conn.execute(f'DELETE FROM "{self._table}" WHERE {where} AND event <> \'PURGE\'',
                         params)
            conn.execute(f'DELETE FROM "{self._table}_searches" WHERE {where}', params)
            conn.execute(*insert_purge_marker(self._table, scope, purged_at))

    def scrub(self) -> None:
        self._db.checkpoint()

    def log_searches(self, entries: Sequence[SearchLogEntry]) -> None:
        with self._db.write() as conn:
            conn.executemany(insert_searches(self._table, "SELECT value FROM json_each(:result_ids)"),
                             [search_row(e) for e in entries])

    def searches(self, scope: Mapping[str, str], limit: int) -> list[SearchLogEntry]:
        query, params = select_searches(self._table, scope, limit)
        with self._db.snapshot() as conn:
            return [search_entry(row) for row in conn.execute(query, params).fetchall()]

    def changes(self, after: str | None, scope: Mapping[str, str], limit: int) -> list[Change]:
        """A position is the row's ``seq``: rows are numbered as their write transactions,
        which the file's write lock runs one at a time, commit."""
        if after is not None and not (after.isascii() and after.isdigit() and len(after) < 19):
            raise bad_position(after)
        where, params = searches_where(scope)
        events = ", ".join(f"'{event}'" for event in FEED_EVENTS)
        with self._db.snapshot() as conn:
            rows = conn.execute(
                f'SELECT seq, {", ".join(_COLUMNS)} FROM "{self._table}" WHERE seq > :after'
                f" AND event IN ({events}) AND {where} ORDER BY seq LIMIT :limit",
                {**params, "after": int(after or 0), "limit": limit}).fetchall()
        return [Change(**_from_row(row[1:]).model_dump(), position=str(row[0])) for row in rows]

    def head(self) -> str | None:
        with self._db.snapshot() as conn:
            (seq,) = conn.execute(f'SELECT max(seq) FROM "{self._table}"').fetchone()
        return None if seq is None else str(seq)

    def follow(self) -> AbstractAsyncContextManager[Beacon]:
        return self._signal.follow()

    async def _watch(self, beacon: Beacon) -> None:
        """Polls ``PRAGMA data_version`` on a connection of its own, which moves whenever any
        other connection, of any process, commits (in memory: this connection's count)."""
        if self._db.path == ":memory:":
            db = self._db

            def changed() -> int:
                with db.lock:
                    return db.conn.total_changes

            await polling(changed, FEED_POLL_SECONDS)(beacon)
            return
        probe = await asyncio.to_thread(sqlite3.connect, self._db.path,
                                        check_same_thread=False)

        def version() -> int:
            return int(probe.execute("PRAGMA data_version").fetchone()[0])

        await polling(version, FEED_POLL_SECONDS, probe.close)(beacon)

    def close(self) -> None:
        if self._owns_connection:
            self._db.close()


def _to_row(record: HistoryRecord) -> tuple[Any, ...]:
    return (
        record.id, record.memory_id, record.event, record.old_value, record.new_value,
        to_iso(record.timestamp), int(record.is_deleted), record.user_id, record.agent_id,
        record.run_id, record.actor_id, record.role, record.reverts,
    )


def _from_row(row: Sequence[Any]) -> HistoryRecord:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["timestamp"] = to_datetime(values["timestamp"])
    values["is_deleted"] = bool(values["is_deleted"])
    return HistoryRecord(**values)
