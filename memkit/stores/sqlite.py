"""The default store: one SQLite file, vectors searched with NumPy.

Per collection the file holds the records, their vectors, an FTS5 index of the
text, a log of vector changes and the history (tables in
:mod:`memkit.stores._sqlite_schema`). Searches run over an in-RAM matrix kept in
step with the file, so writes by other processes are seen without reloading
everything (:mod:`memkit.stores._sqlite_search`). Filters become SQL through
:func:`memkit.stores._sqlite_sql.translate`, exactly the reference evaluator.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import Filter
from memkit.history.sqlite import (
    BUSY_TIMEOUT_SECONDS,
    SQLiteConnection,
    SQLiteHistory,
    check_identifier,
)
from memkit.stores._generations import next_generation
from memkit.stores._matrix import unit
from memkit.stores._sqlite_schema import META, create_meta, create_tables, drop_tables
from memkit.stores._sqlite_search import ANN_THRESHOLD, FileMatrix, Where
from memkit.stores._sqlite_sql import (
    LOWER_FUNCTION,
    RECORD_COLUMNS,
    SELECT,
    count_rows,
    fts_query,
    fts_words,
    lower,
    marks,
    record_of,
    record_row,
    select_page,
    translate,
)
from memkit.stores.base import (
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    Writer,
    check_collection,
    check_projection,
    cosine_to_scores,
)

if TYPE_CHECKING:
    from memkit.graph.sqlite import SQLiteGraph

__all__ = ["ANN_THRESHOLD", "SQLiteStore", "fts_query", "translate"]


class SQLiteStore(VectorStore):
    """Records, vectors, a full-text index and the history in one SQLite file.

    Unscoped searches over ``ann_threshold`` live rows or more, and filtered ones over
    more than 25,000 rows whose filter keeps many rows, use an HNSW index (usearch, when
    installed) built in a background thread and saved beside the file; its candidates
    are re-ranked exactly. ``ann_threshold=None`` (or 0) keeps every search exact.

    >>> store = SQLiteStore(":memory:")
    >>> store.open(dimension=384, model="all-MiniLM-L6-v2")
    """

    provider: ClassVar[str] = "sqlite"
    locks_processes: ClassVar[bool] = True  # BEGIN IMMEDIATE holds the file's write lock
    supports_keyword: ClassVar[bool] = True

    def __init__(
        self, path: str = "~/.memkit/memkit.db", collection_name: str = "memkit",
        ann_threshold: int | None = ANN_THRESHOLD,
    ) -> None:
        super().__init__()
        self.collection_name = check_identifier(collection_name, "collection name")
        if ann_threshold is not None and (
            isinstance(ann_threshold, bool) or not isinstance(ann_threshold, int)
            or ann_threshold < 0
        ):
            raise ConfigError(f"ann_threshold must be a non-negative integer or None,"
                              f" got {ann_threshold!r}")
        self._ann_threshold = ann_threshold or None
        self._db = SQLiteConnection(path)
        self._db.create_function(LOWER_FUNCTION, 1, lower)
        self._history: SQLiteHistory | None = None
        self._last_filter: tuple[Filter | None, Where] | None = None
        self._setup()

    def _setup(self) -> None:
        """Find the tables the collection lives in and create what is missing."""
        self._dimension: int | None = None
        with self._write() as conn:
            self._bind(create_meta(conn, self.collection_name))
            create_tables(conn, self._tables)

    def _bind(self, tables: str) -> None:
        self._tables = tables
        self._records = f'"{tables}_records"'
        self._vectors = f'"{tables}_vectors"'
        self._fts = f'"{tables}_fts"'
        self._matrix = FileMatrix(
            self.path, self.collection_name, tables, self._dimension_or_fail, self._ann_threshold,
            self._scrubs,
        )

    @property
    def path(self) -> str:
        return self._db.path

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._db.write() as conn:
                yield conn
        except BaseException as exc:
            if hasattr(self, "_matrix"):  # not yet when the constructor's own write failed
                with self._db.lock:  # rolled back: a search inside may have taken its rows into RAM
                    self._matrix.forget()
            if isinstance(exc, sqlite3.Error):
                raise VectorStoreError(f"sqlite store {self.path}: {exc}") from exc
            raise

    @contextmanager
    def _read(self, *, shared: bool = False) -> Iterator[sqlite3.Connection]:
        """A read transaction: on this thread's own connection, so no lock is held
        (``shared``: on the shared connection, under its lock)."""
        try:
            with self._db.read() if shared else self._db.snapshot() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise VectorStoreError(f"sqlite store {self.path}: {exc}") from exc

    # -- lifecycle ---------------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension <= 0:
            raise ConfigError(f"dimension must be a positive integer, got {dimension!r}")
        with self._write() as conn:
            row = conn.execute(
                f"SELECT dimension, model FROM {META} WHERE name = ?", (self.collection_name,)
            ).fetchone()
            if row is None:
                conn.execute(
                    f"INSERT INTO {META} (name, dimension, model) VALUES (?, ?, ?)",
                    (self.collection_name, dimension, model),
                )
            else:
                check_collection(self.collection_name, tuple(row), dimension, model, self.path)
        self._dimension = dimension

    def close(self) -> None:
        self._matrix.close_ann()
        self._db.close()

    # -- re-embedding ------------------------------------------------------------------
    def shadow(self, dimension: int, model: str) -> SQLiteStore:
        """Tables ``<name>__g<n>_*`` in the same file, with a ``memkit_collections`` row of
        their own until :meth:`switch` points the collection's row at them."""
        name = next_generation(self.collection_name, self._tables)
        with self._write() as conn:  # what an interrupted re-embedding left
            drop_tables(conn, name)
            conn.execute(f"DELETE FROM {META} WHERE name = ?", (name,))
        shadow = self._beside(name)
        shadow.open(dimension, model)
        return shadow

    def _beside(self, collection_name: str) -> SQLiteStore:
        """Another collection on this store's connection (so in its file and transactions)."""
        store = SQLiteStore.__new__(SQLiteStore)
        VectorStore.__init__(store)
        store.collection_name, store._db, store._history = collection_name, self._db, None
        store._last_filter = None
        store._ann_threshold = self._ann_threshold
        store._setup()
        return store

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SQLiteStore) and shadow._db is self._db
        with self._write() as conn:
            dimension, model, floor = conn.execute(
                f"SELECT dimension, model, log_floor FROM {META} WHERE name = ?",
                (shadow.collection_name,)).fetchone()
            conn.execute(
                f"UPDATE {META} SET dimension = ?, model = ?, log_floor = ?, live = ?"
                " WHERE name = ?", (dimension, model, floor, shadow._tables, self.collection_name))
            conn.execute(f"DELETE FROM {META} WHERE name = ?", (shadow.collection_name,))
            drop_tables(conn, self._tables)
        self._matrix.close_ann(forget=True)
        shadow._matrix.close_ann()  # saved under the tables this store now binds, then loaded
        self._bind(shadow._tables)
        self._dimension = dimension

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SQLiteStore) and shadow._db is self._db
        with self._write() as conn:
            drop_tables(conn, shadow._tables)
            conn.execute(f"DELETE FROM {META} WHERE name = ?", (shadow.collection_name,))
        shadow._matrix.close_ann(forget=True)

    def colocated_history(self) -> SQLiteHistory:
        return self.history()

    def colocated_graph(self) -> SQLiteGraph:
        return self.graph()

    def history(self) -> SQLiteHistory:
        """The history log in this file, written in the same transactions as the records."""
        if self._history is None:
            self._history = SQLiteHistory.on_connection(
                self._db, f"{self.collection_name}_history"
            )
        return self._history

    def graph(self) -> SQLiteGraph:
        """The knowledge graph in this file, written in the same transactions as the records."""
        from memkit.graph.sqlite import SQLiteGraph

        return SQLiteGraph.on_connection(self._db, f"{self.collection_name}_graph", self)

    def reset(self) -> None:
        with self._write() as conn:
            conn.execute(f"DELETE FROM {self._records}")
            self._matrix.after_reset(conn)

    def scrub(self) -> None:
        """The keyword index merged into one segment (FTS5 keeps a deleted text's words in
        older segments until then), the WAL copied into the file and emptied, and the ANN
        index file dropped (it is rebuilt from the vectors left; counted as a scrub, so no
        graph made before it, in any process, is saved again). Deleted pages were zeroed
        as they were freed (``secure_delete``)."""
        with self._write() as conn:
            conn.execute(f"INSERT INTO {self._fts} ({self._fts}) VALUES ('optimize')")
            self._matrix.after_scrub(conn)
        self._matrix.close_ann(forget=True)
        with contextlib.suppress(OSError):
            os.remove(f"{self.path}.ann-{self._tables}")
        self._db.checkpoint()

    # -- writes --------------------------------------------------------------------
    def insert(self, records: Sequence[Record]) -> None:
        rows = []
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
            rows.append((record_row(record), self._blob(record.vector)))
        with self._write() as conn:
            for row, blob in rows:
                (seq,) = conn.execute(
                    f"INSERT INTO {self._records} ({SELECT}) VALUES ({marks(len(row))})"
                    " ON CONFLICT (id) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in RECORD_COLUMNS[1:])
                    + " RETURNING seq",
                    row,
                ).fetchone()
                conn.execute(
                    f"INSERT INTO {self._vectors} (rec, vector) VALUES (?, ?)"
                    " ON CONFLICT (rec) DO UPDATE SET vector = excluded.vector",
                    (seq, blob),
                )
            self._matrix.after_write(conn)

    def update(self, records: Sequence[Record]) -> None:
        rows = [(record_row(r), None if r.vector is None else self._blob(r.vector))
                for r in records]
        with self._write() as conn:
            for row, blob in rows:
                found = conn.execute(
                    f"UPDATE {self._records} SET "
                    + ", ".join(f"{c} = ?" for c in RECORD_COLUMNS[1:])
                    + " WHERE id = ? RETURNING seq",
                    (*row[1:], row[0]),
                ).fetchone()
                if found is None:
                    raise VectorStoreError(f"no record {row[0]} to update")
                if blob is not None:
                    conn.execute(
                        f"UPDATE {self._vectors} SET vector = ? WHERE rec = ?", (blob, found[0])
                    )
            self._matrix.after_write(conn)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._write() as conn:
            conn.execute(
                f"DELETE FROM {self._records} WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(ids)),),
            )
            self._matrix.after_write(conn)

    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """One ``BEGIN IMMEDIATE`` transaction: it holds the file's write lock, so writers
        in other threads and processes wait. With ``history=store.history()`` the history
        rows share it; another history store writes inside it, so its failure rolls the
        records back."""
        with self._write():
            yield self

    # -- reads -----------------------------------------------------------------------
    def get(self, id: str) -> Record | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {SELECT} FROM {self._records} WHERE id = ?", (id,)
            ).fetchone()
        return None if row is None else record_of(row)

    def _forms(self, filter: Filter | None) -> Where:
        """The filter as a check of the fields the matrix holds and as SQL; the last
        filter's are kept (a hybrid search passes its filter twice)."""
        last = self._last_filter
        if last is not None and last[0] is filter:
            return last[1]
        where = Where(filter)
        self._last_filter = (filter, where)
        return where

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> list[Hit]:
        query = unit(self._check(vector)[None, :])[0]
        where = self._forms(filter)
        if limit <= 0:
            return []
        with self._db.lock:
            version = self._db.data_version()
            with self._read(shared=True) as conn:
                seqs, sims = self._matrix.search(
                    conn, version, query, limit, None if filter is None else where)
                records = self._matrix.records_of(conn, seqs.tolist())
        return [Hit(records[s], score)
                for s, score in zip(seqs.tolist(), cosine_to_scores(sims), strict=True)
                if s in records]

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> list[Hit]:
        """FTS5's ``bm25()`` ranking, computed in RAM when every word is one term and the
        filter can be told from the fields the matrix holds, else by FTS5. The matrix is
        behind the shared connection: while another thread holds that (a write), FTS5
        answers on this thread's own connection, so the read does not wait."""
        words = fts_words(text)
        where = self._forms(filter)
        check = where.check
        if not words or limit <= 0:
            return []
        if check is not None and self._db.lock.acquire(blocking=False):
            try:
                version = self._db.data_version()
                with self._read(shared=True) as conn:
                    found = self._matrix.keyword(conn, version, words, limit, check)
                    if found is not None:
                        seqs = found[0].tolist()
                        return _keyword_hits(seqs, found[1], self._matrix.records_of(conn, seqs))
            finally:
                self._db.lock.release()
        return self._fts_search(fts_query(text) or "", limit, filter, where.sql, where.params)

    def _fts_search(self, query: str, limit: int, filter: Filter | None, where: str,
                    params: list[Any]) -> list[Hit]:
        fts = self._fts
        # Rank in FTS5 first, then join the records: a rowid constraint pushed into FTS5
        # (``rowid IN (...)``) makes it re-run the query per row.
        scoped = f" WHERE {where}" if filter is not None else ""
        with self._read() as conn:
            ranked = conn.execute(
                f"SELECT f.seq, f.rank FROM (SELECT rowid AS seq, bm25({fts}) AS rank FROM {fts}"
                f" WHERE {fts} MATCH ?) AS f JOIN {self._records} ON {self._records}.seq = f.seq"
                f"{scoped} ORDER BY f.rank, f.seq LIMIT ?",
                [query, *(params if filter is not None else []), limit],
            ).fetchall()
            seqs = [seq for seq, _ in ranked]
            records = self._by_seq(conn, seqs)
        return _keyword_hits(seqs, np.array([rank for _, rank in ranked], np.float64), records)

    def _by_seq(self, conn: sqlite3.Connection, seqs: list[int]) -> dict[int, Record]:
        if not seqs:
            return {}
        rows = conn.execute(
            f"SELECT seq, {SELECT} FROM {self._records}"
            " WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps(seqs),),
        ).fetchall()
        return {row[0]: record_of(row[1:]) for row in rows}

    # -- the matrix ------------------------------------------------------------------
    def _dimension_or_fail(self) -> int:
        if self._dimension is None:
            with self._read() as conn:
                row = conn.execute(
                    f"SELECT dimension FROM {META} WHERE name = ?", (self.collection_name,)
                ).fetchone()
            if row is None:
                raise VectorStoreError(
                    f"collection {self.collection_name!r} is not open; call open(dimension, model)"
                )
            self._dimension = int(row[0])
        return self._dimension

    def _scrubs(self) -> int:
        """How many scrubs the collection has had (:meth:`FileMatrix.after_scrub`), as
        committed. Asked by the HNSW index's threads, which come and go: on a connection
        opened for the read, not a reader kept per thread."""
        try:
            with contextlib.closing(
                sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS)
            ) as conn:
                row = conn.execute(
                    f"SELECT scrubs FROM {META} WHERE name = ?", (self.collection_name,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise VectorStoreError(f"sqlite store {self.path}: {exc}") from exc
        return 0 if row is None else int(row[0])

    def _check(self, vector: Vector) -> Vector:
        dimension = self._dimension_or_fail()
        array = np.asarray(vector, dtype=np.float32)
        if array.shape != (dimension,):
            raise VectorStoreError(
                f"vector has shape {array.shape}, the collection holds {dimension} dimensions"
            )
        if not np.isfinite(array).all():
            raise VectorStoreError("vector holds NaN or infinite values")
        return array

    def _blob(self, vector: Vector) -> bytes:
        return self._check(vector).tobytes()

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[list[Record], str | None]:
        with self._read() as conn:
            return select_page(conn, self._records, filter, limit, cursor, order)

    def count(self, filter: Filter | None = None) -> int:
        with self._read() as conn:
            return count_rows(conn, self._records, filter)

    def project(self, fields: Sequence[str],
                filter: Filter | None = None) -> builtins.list[tuple[Any, ...]]:
        """One SELECT of the columns (no text, metadata or vector unless asked for)."""
        check_projection(fields)
        where, params = translate(filter)
        with self._read() as conn:
            return conn.execute(
                f"SELECT {', '.join(fields)} FROM {self._records} WHERE {where}", params
            ).fetchall()


def _keyword_hits(seqs: builtins.list[int], ranks: npt.NDArray[np.float64],
                  records: dict[int, Record]) -> builtins.list[Hit]:
    """Hits of the rows ``seqs`` of bm25 ``ranks``, best first: scores are ranks over the
    best one's."""
    if not seqs:
        return []
    best = float(ranks.min())
    scores = (np.minimum(1.0, np.maximum(0.0, ranks / best)) if best < 0
              else np.ones(len(ranks))).tolist()
    return [Hit(records[seq], score) for seq, score in zip(seqs, scores, strict=True)
            if seq in records]
