"""LanceDB: an embedded table in a directory (``path``), with its native full-text index.

Each row holds the id, the vector, the memory text (full-text indexed), the
creation time, the record as JSON and the typed field slots of
:mod:`memkit.stores._typed`, one nullable column per slot. A slot column is
added (all null) the first time a record has that field and type, so the
schema grows with the metadata keys in use. Filters become SQL over those
columns: every leaf is ``col IS NOT NULL AND ...``, so a missing field makes a
leaf false, never unknown, and ``NOT`` is the exact complement; a slot no row
has yet is ``FALSE``. Every operator is expressible: strings compare by UTF-8
bytes (code point order), substrings use ``strpos``, list elements
``array_has``.

Vector search is exact (no ANN index: LanceDB scans the prefiltered rows), so a
filtered search returns ``limit`` hits whenever that many match. Keyword search
is a BM25 match query over the memory's words (never query syntax), scores
divided by the best. A ``list`` page is one query: the filter and "after the
cursor" as SQL, ordered by the id (or creation time and id, descending) with a
limit of one more than the page, so LanceDB keeps only the top rows while it
scans and one page crosses into Python. (A BTREE index on the id made these
queries slower here, and with one ``ORDER BY`` and a filter fails to plan, so
there is none.) LanceDB's Python API is synchronous here: the async methods
run in a worker thread. Writes hold the store's lock (see docs/backends.md).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import os
import re
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, ClassVar

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import Filter, Scalar
from memkit._imports import require
from memkit.history._locks import EVERY_KEY, FileLocks
from memkit.stores._generations import next_generation
from memkit.stores._typed import Dialect, slots, translate
from memkit.stores.base import (
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    check_collection,
    cosine_to_score,
    cursor_key,
    cursor_of,
)

pa: Any = require("pyarrow", "lancedb")

_WORD = re.compile(r"\w+")
_OPS = {"==": "="}
_SLOT_TYPES = {"n": pa.float64(), "b": pa.bool_(), "s": pa.string(), "l": pa.string(),
               "ln": pa.list_(pa.float64()), "lb": pa.list_(pa.bool_()),
               "ls": pa.list_(pa.string()), "ll": pa.list_(pa.string())}
_CHUNK = 500


def literal(value: Scalar) -> str:
    """A SQL literal: strings quoted with doubled quotes, numbers as doubles."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(float(value))


class SQL(Dialect):
    """LanceDB (DataFusion SQL) filters over the slot ``columns`` the table has."""

    never = "FALSE"
    words: ClassVar[dict[str, str]] = {"not": "NOT", "and": "AND", "or": "OR"}

    def __init__(self, columns: set[str]) -> None:
        self.columns = columns

    def _guarded(self, slot: str, test: str) -> str:
        return f"({slot} IS NOT NULL AND {test})" if slot in self.columns else self.never

    def compare(self, slot: str, op: str, value: Scalar) -> str:
        return self._guarded(slot, f"{slot} {_OPS.get(op, op)} {literal(value)}")

    def has(self, slot: str, value: Scalar) -> str:
        return self._guarded(slot, f"array_has({slot}, {literal(value)})")

    def substring(self, slot: str, text: str) -> str:
        return self._guarded(slot, f"strpos({slot}, {literal(text)}) > 0")


def _ids(ids: Sequence[str]) -> str:
    return "id IN (" + ", ".join(literal(i) for i in ids) + ")"


class LanceDBStore(VectorStore):
    """Memories as rows of a LanceDB table: vector, full-text indexed memory, typed slots."""

    provider = "lancedb"
    supports_keyword = True
    CREATE_WAIT: ClassVar[float] = 30.0  # how long an open waits for another process's creation

    def __init__(self, path: str = "./memkit-lancedb", collection_name: str = "memkit") -> None:
        super().__init__()
        self._opening = threading.Lock()
        lancedb = require("lancedb", "lancedb")
        self.path = path
        self.collection_name = self._live = collection_name
        # Every read sees the latest commit, this process's or another's.
        self._db = lancedb.connect(path, read_consistency_interval=timedelta(0))
        self._table: Any = None
        self._dimension: int | None = None
        self._model = ""

    # -- lifecycle -------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        with self._opening:  # two shells on one store object create the table once
            if self._table is not None and (self._dimension, self._model) == (dimension, model):
                # Keep the one handle every write goes through: a second handle opened now
                # would not see the first's later commits, and writes through both conflict.
                return
            self._open_table(dimension, model)

    def _open_table(self, dimension: int, model: str) -> None:
        """Open or create the table; while another process creates it (listed before its
        first commit, or created between our look and our create), look again, for up to
        ``CREATE_WAIT`` seconds: on a loaded machine a creation can take seconds."""
        deadline, wait = time.monotonic() + self.CREATE_WAIT, 0.05
        while True:
            try:
                with self._creating():
                    return self._open_or_create(dimension, model)
            except VectorStoreError as exc:
                if not _being_created(exc) or time.monotonic() + wait > deadline:
                    raise
            time.sleep(wait)
            wait = min(wait * 2, 1.0)

    def _creating(self) -> contextlib.AbstractContextManager[None]:
        """In a local folder, one opener at a time in any process: two creations of one
        table both commit in Lance (the later an ``Overwrite`` of the earlier, even after
        rows were added), and their keyword indexes conflict. Object storage has no such
        lock; there a creation met meanwhile is looked at again (``_open_table``)."""
        if "://" in self.path:
            return contextlib.nullcontext()
        return FileLocks(os.path.join(self.path, ".memkit")).hold(self.collection_name, EVERY_KEY)

    def _open_or_create(self, dimension: int, model: str) -> None:
        name = self.collection_name
        try:
            if name in self._db.table_names():
                table = self._db.open_table(name)
                # a re-embedded root: the id field's metadata (the schema's cannot be rewritten)
                stored = json.loads(
                    (table.schema.field("id").metadata or {}).get(b"memkit")
                    or (table.schema.metadata or {}).get(b"memkit", b"null"))
                if not isinstance(stored, dict):
                    raise ConfigError(f"lancedb table {name!r} was not created by memkit")
                check_collection(name, (stored.get("dimension"), stored.get("model")), dimension, model)
                self._live = stored.get("live") or name
                if self._live != name:
                    table = self._db.open_table(self._live)
            else:
                meta = json.dumps({"dimension": dimension, "model": model})
                schema = pa.schema([
                    pa.field("id", pa.string(), nullable=False),
                    pa.field("vector", pa.list_(pa.float32(), dimension)),
                    pa.field("memory", pa.string()),
                    pa.field("created_at", pa.string()),
                    pa.field("record", pa.string()),
                ], metadata={"memkit": meta})
                table = self._db.create_table(name, schema=schema)
                table.create_fts_index("memory", replace=True)
        except ConfigError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"lancedb: {exc}") from exc
        self._table, self._dimension, self._model = table, dimension, model

    # -- re-embedding (see memkit.stores._generations) --------------------
    def shadow(self, dimension: int, model: str) -> LanceDBStore:
        shadow = copy.copy(self)
        shadow.collection_name = shadow._live = next_generation(self.collection_name, self._live)
        shadow._table, shadow._opening = None, threading.Lock()
        self._drop(shadow._live)  # what an interrupted re-embedding left
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        """One write of the root table's metadata (the root then holds no rows)."""
        assert isinstance(shadow, LanceDBStore)
        meta = {"dimension": shadow._dimension, "model": shadow._model, "live": shadow._live}
        root = self._db.open_table(self.collection_name)
        root.replace_field_metadata("id", {"memkit": json.dumps(meta)})
        if self._live == self.collection_name:
            self.table.delete("TRUE")
        else:
            self._drop(self._live)
        self._live, self._table, self._dimension = shadow._live, shadow._table, shadow._dimension

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, LanceDBStore)
        self._drop(shadow._live)

    def _drop(self, name: str) -> None:
        if name in self._db.table_names():
            self._db.drop_table(name)

    def close(self) -> None:
        self._table = None

    @property
    def table(self) -> Any:
        if self._table is None:
            raise VectorStoreError("the lancedb store is not open (call open first)")
        return self._table

    def reset(self) -> None:
        self.table.delete("TRUE")

    def scrub(self) -> None:
        """Deleted rows leave Lance's data files only when they are rewritten and the old
        versions (which still hold them) are removed: compact, rebuild the keyword index,
        and drop every version but the latest (no time travel to before the purge)."""
        table = self.table
        try:
            table.create_fts_index("memory", replace=True)
            table.optimize(cleanup_older_than=timedelta(0))
        except Exception as exc:
            raise VectorStoreError(f"lancedb: {exc}") from exc

    # -- writes ----------------------------------------------------------
    def _check(self, vector: Vector) -> None:
        if vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions"
            )

    def _upsert(self, records: Sequence[Record]) -> None:
        rows = []
        for record in records:
            assert record.vector is not None
            self._check(record.vector)
            rows.append({"id": record.id, "vector": record.vector.tolist(), "memory": record.memory,
                         "created_at": record.created_at, "record": json.dumps(record.payload()),
                         **slots(record)})
        known = set(self.table.schema.names)
        new = sorted({k for row in rows for k in row} - known)
        if new:
            self.table.add_columns(pa.schema([pa.field(k, _SLOT_TYPES[k.split("_")[0]])
                                              for k in new]))
        data = pa.Table.from_pylist(rows, schema=self.table.schema)
        (self.table.merge_insert("id").when_matched_update_all()
         .when_not_matched_insert_all().execute(data))

    def insert(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
        for start in range(0, len(records), _CHUNK):
            self._upsert(records[start:start + _CHUNK])

    def update(self, records: Sequence[Record]) -> None:
        if not records:
            return
        rows = (self.table.search().where(_ids([r.id for r in records]))
                .select(["id", "vector"]).limit(None).to_arrow().to_pylist())
        old = {row["id"]: row["vector"] for row in rows}
        for record in records:
            if record.id not in old:
                raise VectorStoreError(f"no record {record.id} to update")
        self._upsert([r if r.vector is not None else r.with_vector(
            pa.array(old[r.id], pa.float32()).to_numpy(zero_copy_only=False)) for r in records])

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _CHUNK):
            self.table.delete(_ids(ids[start:start + _CHUNK]))

    # -- reads -----------------------------------------------------------
    def _where(self, filter: Filter | None) -> str | None:
        return None if filter is None else translate(filter, SQL(set(self.table.schema.names)))

    def _rows(self, query: Any, filter: Filter | None, limit: int | None,
              columns: builtins.list[str]) -> builtins.list[dict[str, Any]]:
        where = self._where(filter)
        if where is not None:
            query = query.where(where, prefilter=True)
        rows: builtins.list[dict[str, Any]] = query.select(columns).limit(limit).to_arrow().to_pylist()
        return rows

    def get(self, id: str) -> Record | None:
        rows = (self.table.search().where(f"id = {literal(id)}").select(["id", "record"])
                .limit(1).to_arrow().to_pylist())
        return _record(rows[0]) if rows else None

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        self._check(vector)
        query = self.table.search(vector.tolist(), vector_column_name="vector").distance_type("cosine")
        rows = self._rows(query, filter, limit, ["id", "record"])
        return [Hit(_record(row), cosine_to_score(1.0 - row["_distance"])) for row in rows]

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        words = _WORD.findall(text.lower())
        if not words:
            return []
        query_type = require("lancedb.query", "lancedb")
        query = self.table.search(query_type.MatchQuery(" ".join(words), "memory"),
                                  query_type="fts")
        rows = self._rows(query, filter, limit, ["id", "record"])
        top = max((row["_score"] for row in rows), default=0.0)
        return [Hit(_record(row), row["_score"] / top if top > 0 else 0.0) for row in rows]

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        if limit <= 0:
            return [], None
        query_type = require("lancedb.query", "lancedb")
        keys = ["id"] if order == "id" else ["created_at", "id"]
        ordering = [query_type.ColumnOrdering(column_name=k, ascending=order == "id") for k in keys]
        # (an ORDER BY of two columns without a WHERE fails to plan in lancedb 0.40)
        where = [w for w in (self._where(filter), _after(cursor, order)) if w is not None]
        query = self.table.search().where(" AND ".join(f"({w})" for w in where) or "id IS NOT NULL")
        rows = (query.order_by(ordering).select(["id", "record"]).limit(limit + 1)
                .to_arrow().to_pylist())
        page = [_record(row) for row in rows[:limit]]
        return page, (cursor_of(page[-1], order) if len(rows) > limit else None)

    def count(self, filter: Filter | None = None) -> int:
        return int(self.table.count_rows(self._where(filter)))


def _being_created(exc: VectorStoreError) -> bool:
    """Whether ``exc`` says another process is creating the table right now."""
    return "already exists" in str(exc) or "was not found" in str(exc)


def _after(cursor: str | None, order: Order) -> str | None:
    """The rows after ``cursor`` in ``order`` (ids compare by UTF-8 bytes, as Python's ``<``)."""
    if cursor is None:
        return None
    if order == "id":
        return f"id > {literal(cursor)}"
    created_at, id = cursor_key(cursor)
    return (f"created_at < {literal(created_at)} OR "
            f"(created_at = {literal(created_at)} AND id < {literal(id)})")


def _record(row: dict[str, Any]) -> Record:
    return Record.from_payload(row["id"], json.loads(row["record"]))
