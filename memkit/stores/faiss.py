"""FAISS: vectors in a FAISS index file, the records in a SQLite file beside it.

A store is a directory (``path``). ``records.db`` holds, per collection, a
``<name>_records`` table (the columns of :mod:`memkit.stores._sqlite_sql`, keyed by
an integer ``seq``), its history table, and one row of ``memkit_faiss``: the
dimension, the model, the live tables (after a re-embedding) and the index
``version``. The vectors live in ``<tables>.<version>.faiss``: an
``IndexIDMap2`` over an exact inner-product index of unit vectors, keyed by
``seq``.

A write runs in one ``BEGIN IMMEDIATE`` transaction of the SQLite file. It
changes the in-RAM index, writes it to the next version's file (through a
temporary file and a rename) and records that version in the same
transaction, so a crash leaves either the old version (whose file is only
removed after the commit) or the new one, never records without their
vectors. Every read and write first checks the version, so another process's
writes are seen (its file is loaded in full).

Filters become SQL over the records through :func:`memkit.stores._sqlite_sql.translate`
(exactly the reference evaluator); a filtered search ranks the filter's rows
with an ``IDSelectorBatch``, exactly, so it returns ``limit`` hits whenever that
many match. No keyword search: hybrid search falls back to vectors.
"""

from __future__ import annotations

import builtins
import glob
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import Filter
from memkit._imports import require
from memkit.history.sqlite import SQLiteConnection, SQLiteHistory, check_identifier
from memkit.stores._generations import next_generation
from memkit.stores._sqlite_sql import (
    LOWER_FUNCTION,
    RECORD_COLUMNS,
    SELECT,
    count_rows,
    lower,
    record_of,
    record_row,
    select_page,
    translate,
)
from memkit.stores.base import Hit, Order, Record, Vector, VectorStore, Writer, check_collection, cosine_to_score

_META = "memkit_faiss"
_FILE = "records.db"
_CHUNK = 500


class FaissStore(VectorStore):
    """Memories in an exact FAISS index saved in ``path``, records and history in SQLite beside it.

    >>> store = FaissStore("/tmp/memkit-faiss")
    >>> store.open(dimension=384, model="all-MiniLM-L6-v2")
    """

    provider: ClassVar[str] = "faiss"

    def __init__(self, path: str = "~/.memkit/faiss", collection_name: str = "memkit") -> None:
        super().__init__()
        self._faiss: Any = require("faiss", "faiss")
        self.path = os.path.expanduser(path)
        os.makedirs(self.path, exist_ok=True)
        self.collection_name = check_identifier(collection_name, "collection name")
        self._db = SQLiteConnection(os.path.join(self.path, _FILE))
        self._db.create_function(LOWER_FUNCTION, 1, lower)
        self._setup()

    def _setup(self) -> None:
        self._index: Any = None
        self._version: int | None = None  # of the index in RAM; None: load it again
        self._dimension: int | None = None
        self._depth = 0  # nesting of this store's write transactions
        self._lock = threading.RLock()
        self._history: SQLiteHistory | None = None
        with self._write() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {_META} (name TEXT PRIMARY KEY, dimension INTEGER"
                " NOT NULL, model TEXT NOT NULL, live TEXT NOT NULL, version INTEGER NOT NULL)")
            row = conn.execute(f"SELECT live FROM {_META} WHERE name = ?",
                               (self.collection_name,)).fetchone()
            self._tables = row[0] if row is not None else self.collection_name
            self._records = f'"{self._tables}_records"'
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._records} (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " id TEXT NOT NULL UNIQUE, memory TEXT NOT NULL, hash TEXT NOT NULL,"
                " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, user_id TEXT, agent_id TEXT,"
                " run_id TEXT, metadata TEXT NOT NULL DEFAULT '{}', valid_from TEXT, valid_to TEXT,"
                " expires_at TEXT, supersedes TEXT, memory_type TEXT, importance REAL,"
                " confidence REAL, access_count INTEGER, last_accessed_at TEXT)")
            for column in ("user_id", "agent_id", "run_id", "created_at, id", "supersedes"):
                name = column.split(",")[0]
                conn.execute(f'CREATE INDEX IF NOT EXISTS "{self._tables}_records_{name}"'
                             f" ON {self._records} ({column})")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._db.write() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise VectorStoreError(f"faiss store {self.path}: {exc}") from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._lock, self._db.read() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise VectorStoreError(f"faiss store {self.path}: {exc}") from exc

    # -- lifecycle -------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension <= 0:
            raise ConfigError(f"dimension must be a positive integer, got {dimension!r}")
        with self._write() as conn:
            row = conn.execute(f"SELECT dimension, model FROM {_META} WHERE name = ?",
                               (self.collection_name,)).fetchone()
            if row is None:
                conn.execute(f"INSERT INTO {_META} (name, dimension, model, live, version)"
                             " VALUES (?, ?, ?, ?, 0)",
                             (self.collection_name, dimension, model, self._tables))
            else:
                check_collection(self.collection_name, tuple(row), dimension, model, self.path)
        self._dimension = dimension

    def close(self) -> None:
        self._db.close()

    def colocated_history(self) -> SQLiteHistory:
        return self.history()

    def history(self) -> SQLiteHistory:
        """The history log in the records' file, written in the same transactions."""
        if self._history is None:
            self._history = SQLiteHistory.on_connection(self._db, f"{self.collection_name}_history")
        return self._history

    # -- the index file ----------------------------------------------------
    def _file(self, version: int) -> str:
        return os.path.join(self.path, f"{self._tables}.{version}.faiss")

    def _synced(self, conn: sqlite3.Connection) -> Any:
        """The index of the version the file records (loaded again when another writer moved it)."""
        row = conn.execute(f"SELECT version FROM {_META} WHERE name = ?",
                           (self.collection_name,)).fetchone()
        if row is None or self._dimension is None:
            raise VectorStoreError("the faiss store is not open (call open first)")
        if row[0] != self._version:
            if row[0] == 0:
                self._index = self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(self._dimension))
            else:
                try:
                    self._index = self._faiss.read_index(self._file(row[0]))
                except RuntimeError as exc:
                    raise VectorStoreError(f"faiss index {self._file(row[0])}: {exc}") from exc
            self._version = row[0]
        return self._index

    @contextmanager
    def _changing(self) -> Iterator[tuple[sqlite3.Connection, Any]]:
        """A write: the records' transaction and the index; the outermost saves the index as
        the next version in that transaction, and removes the old file once it committed."""
        with self._lock, self._write() as conn:
            index = self._synced(conn)
            outermost, old = self._depth == 0, None
            self._depth += 1
            try:
                yield conn, index
                if outermost:
                    old = self._save(conn)
            except BaseException:
                self._version = None  # the records roll back: so does the index
                raise
            finally:
                self._depth -= 1
        if outermost and old is not None:
            self._remove(old)

    def _save(self, conn: sqlite3.Connection) -> int | None:
        old = self._version
        assert old is not None
        new = old + 1
        temporary = self._file(new) + ".tmp"
        self._faiss.write_index(self._index, temporary)
        os.replace(temporary, self._file(new))
        conn.execute(f"UPDATE {_META} SET version = ? WHERE name = ?", (new, self.collection_name))
        self._version = new
        return old if old > 0 else None

    def _remove(self, version: int) -> None:
        with suppress(FileNotFoundError):
            os.remove(self._file(version))

    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """One ``BEGIN IMMEDIATE`` transaction over the records, their history and the index
        version: writers in other threads and processes wait."""
        with self._write_lock.hold(), self._changing():
            yield self

    # -- re-embedding --------------------------------------------------------
    def shadow(self, dimension: int, model: str) -> FaissStore:
        """Tables ``<name>__g<n>_records`` and their index files, until :meth:`switch`."""
        name = next_generation(self.collection_name, self._tables)
        with self._write() as conn:  # what an interrupted re-embedding left
            self._drop(name, conn)
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (name,))
        shadow = self._beside(name)
        shadow.open(dimension, model)
        return shadow

    def _beside(self, collection_name: str) -> FaissStore:
        store = FaissStore.__new__(FaissStore)
        VectorStore.__init__(store)
        store._faiss, store.path, store._db = self._faiss, self.path, self._db
        store.collection_name = collection_name
        store._setup()
        return store

    def _drop(self, tables: str, conn: sqlite3.Connection) -> None:
        """Drop the records table ``tables`` and its index files."""
        conn.execute(f'DROP TABLE IF EXISTS "{tables}_records"')
        for file in glob.glob(os.path.join(glob.escape(self.path), f"{tables}.*.faiss")):
            os.remove(file)

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, FaissStore) and shadow._db is self._db
        with self._lock, self._write() as conn:
            dimension, model, version = conn.execute(
                f"SELECT dimension, model, version FROM {_META} WHERE name = ?",
                (shadow.collection_name,)).fetchone()
            conn.execute(f"UPDATE {_META} SET dimension = ?, model = ?, live = ?, version = ?"
                         " WHERE name = ?",
                         (dimension, model, shadow._tables, version, self.collection_name))
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (shadow.collection_name,))
            self._drop(self._tables, conn)
            self._tables, self._records = shadow._tables, shadow._records
            self._dimension, self._version = dimension, None
            self._synced(conn)  # the shadow's index (a transaction around us saves this one)

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, FaissStore) and shadow._db is self._db
        with self._write() as conn:
            self._drop(shadow._tables, conn)
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (shadow.collection_name,))

    # -- writes ----------------------------------------------------------
    def _unit(self, vectors: Sequence[Vector | None]) -> npt.NDArray[np.float32]:
        """The vectors as unit rows (a zero vector stays zero)."""
        matrix = np.stack([self._checked(v) for v in vectors]).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(
            matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        return unit

    def _checked(self, vector: Vector | None) -> Vector:
        assert vector is not None
        if vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions")
        return vector

    def _upsert(self, conn: sqlite3.Connection, rows: builtins.list[tuple[Any, ...]],
                existing_only: bool) -> builtins.list[int]:
        seqs = []
        for row in rows:
            if existing_only:
                found = conn.execute(
                    f"UPDATE {self._records} SET " + ", ".join(f"{c} = ?" for c in RECORD_COLUMNS[1:])
                    + " WHERE id = ? RETURNING seq", (*row[1:], row[0])).fetchone()
                if found is None:
                    raise VectorStoreError(f"no record {row[0]} to update")
            else:
                found = conn.execute(
                    f"INSERT INTO {self._records} ({SELECT}) VALUES ({', '.join('?' * len(row))})"
                    " ON CONFLICT (id) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in RECORD_COLUMNS[1:])
                    + " RETURNING seq", row).fetchone()
            seqs.append(int(found[0]))
        return seqs

    def _replace_vectors(self, index: Any, seqs: builtins.list[int],
                         vectors: npt.NDArray[np.float32]) -> None:
        keys = np.asarray(seqs, np.int64)
        index.remove_ids(keys)
        index.add_with_ids(vectors, keys)

    def insert(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
        if not records:
            return
        with self._changing() as (conn, index):
            vectors = self._unit([r.vector for r in records])
            self._replace_vectors(index, self._upsert(conn, [record_row(r) for r in records],
                                                      existing_only=False), vectors)

    def update(self, records: Sequence[Record]) -> None:
        if not records:
            return
        with self._changing() as (conn, index):
            moved = [r for r in records if r.vector is not None]
            vectors = self._unit([r.vector for r in moved]) if moved else None
            seqs = dict(zip((r.id for r in records),
                            self._upsert(conn, [record_row(r) for r in records], existing_only=True),
                            strict=True))
            if vectors is not None:
                self._replace_vectors(index, [seqs[r.id] for r in moved], vectors)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._changing() as (conn, index):
            for start in range(0, len(ids), _CHUNK):
                rows = conn.execute(
                    f"DELETE FROM {self._records} WHERE id IN (SELECT value FROM json_each(?))"
                    " RETURNING seq", (json.dumps(list(ids[start:start + _CHUNK])),)).fetchall()
                if rows:
                    index.remove_ids(np.asarray([r[0] for r in rows], np.int64))

    def scrub(self) -> None:
        """Deleted rows were zeroed in the file as they were freed (``secure_delete``) and
        an index file is replaced whole at each write; the WAL is written into the file and
        emptied."""
        self._db.checkpoint()

    def reset(self) -> None:
        with self._changing() as (conn, index):
            conn.execute(f"DELETE FROM {self._records}")
            index.reset()

    # -- reads -----------------------------------------------------------
    def get(self, id: str) -> Record | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {SELECT} FROM {self._records} WHERE id = ?",
                               (id,)).fetchone()
        return None if row is None else record_of(row)

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        query = self._unit([vector])
        if limit <= 0:
            return []
        with self._read() as conn:
            index = self._synced(conn)
            params = None
            if filter is not None:
                where, args = translate(filter)
                seqs = [r[0] for r in conn.execute(
                    f"SELECT seq FROM {self._records} WHERE {where}", args)]
                params = self._faiss.SearchParameters(
                    sel=self._faiss.IDSelectorBatch(np.asarray(seqs, np.int64)))
                k = min(limit, len(seqs))
            else:
                k = min(limit, int(index.ntotal))
            if k == 0:
                return []
            sims, keys = index.search(query, k, params=params)
            found = [(int(key), float(sim)) for key, sim in zip(keys[0], sims[0], strict=True)
                     if key >= 0]
            rows = conn.execute(
                f"SELECT seq, {SELECT} FROM {self._records}"
                " WHERE seq IN (SELECT value FROM json_each(?))",
                (json.dumps([key for key, _ in found]),)).fetchall()
        records = {row[0]: record_of(row[1:]) for row in rows}
        return [Hit(records[key], cosine_to_score(sim)) for key, sim in found if key in records]

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        with self._read() as conn:
            return select_page(conn, self._records, filter, limit, cursor, order)

    def count(self, filter: Filter | None = None) -> int:
        with self._read() as conn:
            return count_rows(conn, self._records, filter)
