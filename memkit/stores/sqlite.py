"""The default store: one SQLite file, vectors searched with NumPy.

Per collection the file holds ``<name>_records`` (text, built-in fields,
metadata as JSON), ``<name>_vectors`` (float32 blobs), ``<name>_fts`` (an FTS5
index of the text), ``<name>_changes`` (a log of vector changes, written by
triggers) and ``<name>_history``. ``memkit_collections`` records each
collection's dimension and embedding model.

Searches run over an in-RAM matrix of unit vectors. Before each search the
matrix catches up with the file: ``PRAGMA data_version`` says whether another
connection committed, and the change log says which vectors changed, so writes
by other processes are seen without reloading everything.

Filters become SQL through :func:`translate`, a pure function whose results
match :mod:`memkit._filters.evaluate` exactly::

    >>> translate(Condition(field="user_id", operator="eq", value="alice"))
    ('user_id IS ?', ['alice'])
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from memkit._errors import ConfigError, FilterError, VectorStoreError
from memkit._filters import (
    BUILTIN_FIELDS,
    NUMBER_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Or,
    check_field_name,
)
from memkit.history.sqlite import SQLiteConnection, SQLiteHistory, check_identifier
from memkit.stores._ann import AnnIndex, Feed, usearch_index
from memkit.stores._generations import next_generation
from memkit.stores.base import (
    LIFECYCLE_FIELDS,
    TEMPORAL_FIELDS,
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    Writer,
    check_collection,
    check_projection,
    cursor_key,
    cursor_of,
)
from memkit.stores.base import cosine_to_score as _score

if TYPE_CHECKING:
    from memkit.graph.sqlite import SQLiteGraph

LOWER_FUNCTION = "memkit_lower"
_META = "memkit_collections"
_RECORD_COLUMNS = (
    "id", "memory", "hash", "created_at", "updated_at", "user_id", "agent_id", "run_id",
    "metadata", *TEMPORAL_FIELDS, *LIFECYCLE_FIELDS,
)
# columns added to files written before memkit kept versions, then lifecycle fields
_ADDED_COLUMNS = {**{k: "TEXT" for k in TEMPORAL_FIELDS}, "memory_type": "TEXT",
                  "importance": "REAL", "confidence": "REAL", "access_count": "INTEGER",
                  "last_accessed_at": "TEXT"}
_SELECT = ", ".join(_RECORD_COLUMNS)
#: live rows from which unscoped searches use the HNSW index (``ann_threshold``)
ANN_THRESHOLD = 20_000
# The HNSW index is asked for max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit) keys to re-rank.
_ANN_MIN_CANDIDATES = 100
_ANN_FACTOR = 10
#: filtered searches over a matrix this small score it whole, then check the filter
_SCORE_FIRST_ROWS = 25_000
_SCORE_FIRST_MIN = 256
_SCORE_FIRST_FACTOR = 4
#: the most HNSW candidates a filtered search checks before it reads the filter's rows
_ANN_FILTER_MAX = 2_000
#: past _SCORE_FIRST_ROWS, a filter keeping at most this many rows ranks them exactly
_FEW_ROWS = 2_048
# The change log is trimmed to its newest _LOG_KEEP entries once it exceeds _LOG_MAX.
_LOG_MAX = 100_000
_LOG_KEEP = 50_000

#: keyword search matches English words by their Porter stem ("paintings" finds "painted");
#: the words of other languages as unicode61 reads them, case- and accent-folded
_FTS_TOKENIZER = "porter unicode61"

SQL = tuple[str, list[Any]]
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# -- filter translation ---------------------------------------------------------


def translate(expr: Filter | None) -> SQL:
    """A parameterised SQL condition over a records table, equal to the reference evaluator.

    Every sub-expression is two-valued (never NULL), so ``NOT`` is the exact
    complement. Field names travel as JSON-path parameters, never as SQL text.
    ``icontains`` calls the ``memkit_lower`` function the store registers.
    """
    if expr is None:
        return "1", []
    if isinstance(expr, Condition):
        return _condition(expr)
    if isinstance(expr, Not):
        sql, params = translate(expr.item)
        return f"NOT ({sql})", params
    if not expr.items:
        return ("1" if isinstance(expr, And) else "0"), []
    parts = [translate(item) for item in expr.items]
    joiner = " AND " if isinstance(expr, And) else " OR "
    assert isinstance(expr, And | Or)
    return "(" + joiner.join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]


class _Column:
    """A built-in field: a TEXT column, or NULL when missing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def text(self, template: str, params: list[Any]) -> SQL:
        if template == "{v} = ?":
            return f"{self.name} IS ?", params
        return f"({self.name} IS NOT NULL AND {template.format(v=self.name)})", params

    def number(self, template: str, params: list[Any]) -> SQL:
        return "0", []

    def boolean(self, value: bool) -> SQL:
        return "0", []

    def element(self, condition: str, params: list[Any]) -> SQL:
        return "0", []


class _NumberColumn(_Column):
    """A numeric built-in field: a REAL or INTEGER column, or NULL when missing."""

    def text(self, template: str, params: list[Any]) -> SQL:
        return "0", []

    def number(self, template: str, params: list[Any]) -> SQL:
        return f"({self.name} IS NOT NULL AND {template.format(v=self.name)})", params


class _MetadataKey:
    """A key of the metadata JSON, addressed by a JSON path passed as a parameter."""

    def __init__(self, name: str) -> None:
        self.path = f'$."{name}"'

    def text(self, template: str, params: list[Any]) -> SQL:
        value = template.format(v="json_extract(metadata, ?)")
        return (
            f"(json_type(metadata, ?) IS 'text' AND {value})",
            [self.path, self.path, *params],
        )

    def number(self, template: str, params: list[Any]) -> SQL:
        value = template.format(v="json_extract(metadata, ?)")
        return (
            f"(IFNULL(json_type(metadata, ?), '') IN ('integer', 'real') AND {value})",
            [self.path, self.path, *params],
        )

    def boolean(self, value: bool) -> SQL:
        return f"json_type(metadata, ?) IS '{'true' if value else 'false'}'", [self.path]

    def element(self, condition: str, params: list[Any]) -> SQL:
        """A list field with an element (``type``, ``value`` of json_each) meeting ``condition``."""
        return (
            "(json_type(metadata, ?) IS 'array' AND EXISTS"
            f" (SELECT 1 FROM json_each(metadata, ?) WHERE {condition}))",
            [self.path, self.path, *params],
        )


_Field = _Column | _MetadataKey
_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _condition(cond: Condition) -> SQL:
    name = check_field_name(cond.field)
    op, target = cond.operator, cond.value
    if op in ("ne", "nin"):
        positive = cond.model_copy(update={"operator": "eq" if op == "ne" else "in"})
        sql, params = _condition(positive)
        return f"NOT ({sql})", params
    field: _Field = _MetadataKey(name)
    if name in NUMBER_FIELDS:
        field = _NumberColumn(name)
    elif name in BUILTIN_FIELDS:
        field = _Column(name)
    if op == "in":
        assert isinstance(target, tuple)
        return _in(field, target)
    assert not isinstance(target, tuple)
    if op == "eq":
        return _in(field, (target,))
    if op in _ORDER:
        template = f"{{v}} {_ORDER[op]} ?"
        if isinstance(target, str):
            return field.text(template, [target])
        return field.number(template, [_number(target)])
    if op == "contains":
        return _contains(field, target)
    assert op == "icontains" and isinstance(target, str)
    needle = target.lower()
    return _any(
        field.text(f"instr({LOWER_FUNCTION}({{v}}), ?) > 0", [needle]),
        field.element(f"type = 'text' AND {LOWER_FUNCTION}(value) = ?", [needle]),
    )


def _in(field: _Field, targets: tuple[str | int | float | bool, ...]) -> SQL:
    texts = [t for t in targets if isinstance(t, str)]
    numbers = [_number(t) for t in targets if not isinstance(t, str | bool)]
    booleans = sorted({t for t in targets if isinstance(t, bool)})
    parts: list[SQL] = []
    if len(texts) == 1:
        parts.append(field.text("{v} = ?", texts))
    elif texts:
        parts.append(field.text(f"{{v}} IN ({_marks(len(texts))})", texts))
    if numbers:
        parts.append(field.number(f"{{v}} IN ({_marks(len(numbers))})", numbers))
    parts.extend(field.boolean(b) for b in booleans)
    return _any(*parts)


def _contains(field: _Field, target: str | int | float | bool) -> SQL:
    if isinstance(target, bool):
        kind = "true" if target else "false"
        return field.element(f"type = '{kind}'", [])
    if isinstance(target, str):
        return _any(
            field.text("instr({v}, ?) > 0", [target]),
            field.element("type = 'text' AND value = ?", [target]),
        )
    return field.element("type IN ('integer', 'real') AND value = ?", [_number(target)])


def _any(*parts: SQL) -> SQL:
    parts = tuple(p for p in parts if p[0] != "0")
    if not parts:
        return "0", []
    if len(parts) == 1:
        return parts[0]
    return "(" + " OR ".join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]


def _number(value: int | float | str | bool) -> int | float:
    assert isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise FilterError(f"{value} is outside SQLite's 64-bit integer range")
    return value


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _lower(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    return value.lower() if isinstance(value, str) else value


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the words of ``text``, each quoted so it is never syntax.

    Words repeat once and control characters separate words, so a query of one
    word repeated costs what the word costs, and a NUL never reaches FTS5."""
    words = dict.fromkeys(
        w for w in _CONTROL.sub(" ", text).split() if any(ch.isalnum() for ch in w)
    )
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None


# -- the in-RAM matrix -------------------------------------------------------------


class _VectorIndex:
    """Unit vectors keyed by record ``seq`` (sorted), with tombstones for deletions."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.seqs: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self.vectors: npt.NDArray[np.float32] = np.empty((0, dimension), np.float32)
        self.alive: npt.NDArray[np.bool_] = np.empty(0, np.bool_)
        self.size = 0
        self.dead = 0

    def load(self, seqs: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        order = np.argsort(seqs, kind="stable")
        self.seqs, self.vectors = seqs[order], _unit(vectors[order])
        self.alive = np.ones(len(seqs), np.bool_)
        self.size, self.dead = len(seqs), 0

    def upsert(self, seqs: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        vectors = _unit(vectors)
        pos = self._find(seqs)
        known = pos >= 0
        if known.any():
            self.dead -= int(np.count_nonzero(~self.alive[pos[known]]))
            self.vectors[pos[known]] = vectors[known]
            self.alive[pos[known]] = True
        if known.all():
            return
        seqs, vectors = seqs[~known], vectors[~known]
        order = np.argsort(seqs, kind="stable")
        seqs, vectors = seqs[order], vectors[order]
        if self.size and seqs[0] < self.seqs[self.size - 1]:
            live = slice(0, self.size)
            self.load(
                np.concatenate([self.seqs[live], seqs]),
                np.concatenate([self.vectors[live], vectors]),
            )
            return
        end = self.size + len(seqs)
        if end > len(self.seqs):
            capacity = max(end, 2 * len(self.seqs), 64)
            self.seqs = np.resize(self.seqs, capacity)
            self.alive = np.resize(self.alive, capacity)
            grown = np.empty((capacity, self.dimension), np.float32)
            grown[: self.size] = self.vectors[: self.size]
            self.vectors = grown
        self.seqs[self.size : end] = seqs
        self.vectors[self.size : end] = vectors
        self.alive[self.size : end] = True
        self.size = end

    def remove(self, seqs: npt.NDArray[np.int64]) -> None:
        pos = self._find(seqs)
        pos = pos[pos >= 0]
        self.dead += int(np.count_nonzero(self.alive[pos]))
        self.alive[pos] = False
        if self.dead > 1024 and 4 * self.dead > self.size:
            keep = self.alive[: self.size]
            self.seqs, self.vectors = self.seqs[: self.size][keep], self.vectors[: self.size][keep]
            self.size, self.dead = len(self.seqs), 0
            self.alive = np.ones(self.size, np.bool_)

    def positions(self, seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        pos = self._find(seqs)
        pos = pos[pos >= 0]
        return pos[self.alive[pos]]

    def _find(self, seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """Positions of ``seqs``, -1 where absent."""
        pos = np.searchsorted(self.seqs[: self.size], seqs)
        inside = pos < self.size
        found = np.zeros(len(seqs), np.bool_)
        found[inside] = self.seqs[pos[inside]] == seqs[inside]
        return np.where(found, pos, -1)

    def scores(self, query: Vector) -> npt.NDArray[np.float32]:
        """The cosine of every row with ``query``, by position; deleted rows -inf."""
        sims: npt.NDArray[np.float32] = self.vectors[: self.size] @ query
        if self.dead:
            sims[~self.alive[: self.size]] = -np.inf
        return sims

    def top(
        self, query: Vector, limit: int, positions: npt.NDArray[np.intp] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        if positions is None:
            sims = self.scores(query)
            best = _best(sims, min(limit, self.size - self.dead))
            return self.seqs[best], sims[best]
        if 3 * len(positions) > self.size:
            # Gathering the rows reads and writes them before the product reads them again:
            # past a third of the matrix, the product over all of it moves less memory.
            sims = (self.vectors[: self.size] @ query)[positions]
        else:
            sims = self.vectors[positions] @ query
        best = _best(sims, limit)
        return self.seqs[positions[best]], sims[best]


def _best(sims: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """The positions of the ``k`` highest of ``sims``, highest first."""
    k = min(k, len(sims))
    if k <= 0:
        return np.empty(0, np.intp)
    best = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    return best[np.argsort(-sims[best], kind="stable")]


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = np.divide(
        vectors, norms, out=np.zeros_like(vectors), where=norms > 0
    )
    return unit


# -- the store -----------------------------------------------------------------------


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
        self._db.create_function(LOWER_FUNCTION, 1, _lower)
        self._history: SQLiteHistory | None = None
        self._setup()

    def _setup(self) -> None:
        """Find the tables the collection lives in (``live``: those of its last re-embedding,
        else named after it) and create what is missing."""
        self._dimension: int | None = None
        self._index: _VectorIndex | None = None
        self._last_change = 0
        self._seen_version: int | None = None
        self._dirty = True
        self._log_floor = 0
        self._ann_class = usearch_index() if self._ann_threshold else None
        self._ann: AnnIndex | None = None
        with self._write() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {_META} (name TEXT PRIMARY KEY,"
                " dimension INTEGER NOT NULL, model TEXT NOT NULL,"
                " log_floor INTEGER NOT NULL DEFAULT 0)")
            if "live" not in {row[1] for row in conn.execute(f"PRAGMA table_info({_META})")}:
                conn.execute(f"ALTER TABLE {_META} ADD COLUMN live TEXT")
            row = conn.execute(
                f"SELECT live FROM {_META} WHERE name = ?", (self.collection_name,)).fetchone()
            self._bind(row[0] if row is not None and row[0] else self.collection_name)
            self._create_schema(conn)

    def _bind(self, tables: str) -> None:
        self._tables = tables
        self._records = f'"{tables}_records"'
        self._vectors = f'"{tables}_vectors"'
        self._changes = f'"{tables}_changes"'
        self._fts = f'"{tables}_fts"'

    @property
    def path(self) -> str:
        return self._db.path

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        c = self._tables
        r, v, ch, fts = self._records, self._vectors, self._changes, self._fts
        forget = f"INSERT INTO {fts} ({fts}, rowid, memory) VALUES ('delete', old.seq, old.memory);"
        statements = [
            f"CREATE TABLE IF NOT EXISTS {r} (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " id TEXT NOT NULL UNIQUE, memory TEXT NOT NULL, hash TEXT NOT NULL,"
            " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, user_id TEXT, agent_id TEXT,"
            " run_id TEXT, metadata TEXT NOT NULL DEFAULT '{}')",
            *(
                f'CREATE INDEX IF NOT EXISTS "{c}_records_{s}" ON {r} ({s})'
                for s in ("user_id", "agent_id", "run_id")
            ),
            f'CREATE INDEX IF NOT EXISTS "{c}_records_newest" ON {r} (created_at, id)',
            f"CREATE TABLE IF NOT EXISTS {v} (rec INTEGER PRIMARY KEY"
            f" REFERENCES {r} (seq) ON DELETE CASCADE, vector BLOB NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {ch} (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " rec INTEGER NOT NULL)",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(memory,"
            f" content='{c}_records', content_rowid='seq', tokenize='{_FTS_TOKENIZER}')",
            *(
                f'CREATE TRIGGER IF NOT EXISTS "{c}_vectors_{event.lower()}" AFTER {event} ON {v}'
                f" BEGIN INSERT INTO {ch} (rec) VALUES ({row}.rec); END"
                for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
            ),
            f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_insert" AFTER INSERT ON {r}'
            f" BEGIN INSERT INTO {fts} (rowid, memory) VALUES (new.seq, new.memory); END",
            f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_delete" AFTER DELETE ON {r}'
            f" BEGIN {forget} END",
            f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_update" AFTER UPDATE OF memory ON {r}'
            f" BEGIN {forget} INSERT INTO {fts} (rowid, memory) VALUES (new.seq, new.memory); END",
        ]
        made = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (f"{c}_fts",)).fetchone()
        restem = made is not None and _FTS_TOKENIZER not in made[0]
        if restem:  # a file written before memkit stemmed: its index is rebuilt once
            conn.execute(f"DROP TABLE {fts}")
        for statement in statements:
            conn.execute(statement)
        if restem:
            conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
        # files written before memkit kept versions (or the lifecycle) lack these columns
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({r})")}
        for column, kind in _ADDED_COLUMNS.items():
            if column not in present:
                conn.execute(f"ALTER TABLE {r} ADD COLUMN {column} {kind}")
        conn.execute(f'CREATE INDEX IF NOT EXISTS "{c}_records_supersedes" ON {r} (supersedes)')

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._db.write() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise VectorStoreError(f"sqlite store {self.path}: {exc}") from exc

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
                f"SELECT dimension, model FROM {_META} WHERE name = ?", (self.collection_name,)
            ).fetchone()
            if row is None:
                conn.execute(
                    f"INSERT INTO {_META} (name, dimension, model) VALUES (?, ?, ?)",
                    (self.collection_name, dimension, model),
                )
            else:
                check_collection(self.collection_name, tuple(row), dimension, model, self.path)
        self._dimension = dimension

    def close(self) -> None:
        self._close_ann()
        self._db.close()

    def _close_ann(self, *, forget: bool = False) -> None:
        """Stop the HNSW index's thread; ``forget``: its tables are gone, so is its file."""
        ann, self._ann = self._ann, None
        if ann is not None:
            ann.close(save=not forget)
            if forget:
                ann.discard_file()

    # -- re-embedding ------------------------------------------------------------------
    def shadow(self, dimension: int, model: str) -> SQLiteStore:
        """Tables ``<name>__g<n>_*`` in the same file, with a ``memkit_collections`` row of
        their own until :meth:`switch` points the collection's row at them."""
        name = next_generation(self.collection_name, self._tables)
        with self._write() as conn:  # what an interrupted re-embedding left
            _drop_tables(conn, name)
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (name,))
        shadow = self._beside(name)
        shadow.open(dimension, model)
        return shadow

    def _beside(self, collection_name: str) -> SQLiteStore:
        """Another collection on this store's connection (so in its file and transactions)."""
        store = SQLiteStore.__new__(SQLiteStore)
        VectorStore.__init__(store)
        store.collection_name, store._db, store._history = collection_name, self._db, None
        store._ann_threshold = self._ann_threshold
        store._setup()
        return store

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SQLiteStore) and shadow._db is self._db
        with self._write() as conn:
            dimension, model, floor = conn.execute(
                f"SELECT dimension, model, log_floor FROM {_META} WHERE name = ?",
                (shadow.collection_name,)).fetchone()
            conn.execute(
                f"UPDATE {_META} SET dimension = ?, model = ?, log_floor = ?, live = ?"
                " WHERE name = ?", (dimension, model, floor, shadow._tables, self.collection_name))
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (shadow.collection_name,))
            _drop_tables(conn, self._tables)
        self._close_ann(forget=True)
        shadow._close_ann()  # saved under the tables this store now binds, then loaded
        self._bind(shadow._tables)
        self._dimension, self._index, self._last_change, self._dirty = dimension, None, 0, True

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SQLiteStore) and shadow._db is self._db
        with self._write() as conn:
            _drop_tables(conn, shadow._tables)
            conn.execute(f"DELETE FROM {_META} WHERE name = ?", (shadow.collection_name,))
        shadow._close_ann(forget=True)

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
            last = self._log_bounds(conn)[1]
            conn.execute(f"DELETE FROM {self._changes}")
            conn.execute(
                f"UPDATE {_META} SET log_floor = MAX(log_floor, ?) WHERE name = ?",
                (last, self.collection_name),
            )
            self._dirty = True

    def scrub(self) -> None:
        """The keyword index merged into one segment (FTS5 keeps a deleted text's words in
        older segments until then), the WAL copied into the file and emptied, and the ANN
        index file dropped (it is rebuilt from the vectors left). Deleted pages were zeroed
        as they were freed (``secure_delete``)."""
        with self._write() as conn:
            conn.execute(f"INSERT INTO {self._fts} ({self._fts}) VALUES ('optimize')")
        self._close_ann(forget=True)
        with contextlib.suppress(OSError):
            os.remove(f"{self.path}.ann-{self._tables}")
        self._db.checkpoint()

    # -- writes --------------------------------------------------------------------
    def insert(self, records: Sequence[Record]) -> None:
        rows = []
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
            rows.append((_record_row(record), self._blob(record.vector)))
        with self._write() as conn:
            for row, blob in rows:
                (seq,) = conn.execute(
                    f"INSERT INTO {self._records} ({_SELECT}) VALUES ({_marks(len(row))})"
                    " ON CONFLICT (id) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in _RECORD_COLUMNS[1:])
                    + " RETURNING seq",
                    row,
                ).fetchone()
                conn.execute(
                    f"INSERT INTO {self._vectors} (rec, vector) VALUES (?, ?)"
                    " ON CONFLICT (rec) DO UPDATE SET vector = excluded.vector",
                    (seq, blob),
                )
            self._after_write(conn)

    def update(self, records: Sequence[Record]) -> None:
        rows = [(_record_row(r), None if r.vector is None else self._blob(r.vector))
                for r in records]
        with self._write() as conn:
            for row, blob in rows:
                found = conn.execute(
                    f"UPDATE {self._records} SET "
                    + ", ".join(f"{c} = ?" for c in _RECORD_COLUMNS[1:])
                    + " WHERE id = ? RETURNING seq",
                    (*row[1:], row[0]),
                ).fetchone()
                if found is None:
                    raise VectorStoreError(f"no record {row[0]} to update")
                if blob is not None:
                    conn.execute(
                        f"UPDATE {self._vectors} SET vector = ? WHERE rec = ?", (blob, found[0])
                    )
            self._after_write(conn)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._write() as conn:
            conn.execute(
                f"DELETE FROM {self._records} WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(ids)),),
            )
            self._after_write(conn)

    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """One ``BEGIN IMMEDIATE`` transaction: it holds the file's write lock, so writers
        in other threads and processes wait. With ``history=store.history()`` the history
        rows share it; another history store writes inside it, so its failure rolls the
        records back."""
        with self._write():
            yield self

    def _after_write(self, conn: sqlite3.Connection) -> None:
        self._dirty = True
        first, last = self._log_bounds(conn)
        if last - first > _LOG_MAX:
            floor = last - _LOG_KEEP
            conn.execute(f"DELETE FROM {self._changes} WHERE seq <= ?", (floor,))
            conn.execute(
                f"UPDATE {_META} SET log_floor = ? WHERE name = ?", (floor, self.collection_name)
            )

    def _log_bounds(self, conn: sqlite3.Connection) -> tuple[int, int]:
        first, last = conn.execute(
            f"SELECT (SELECT MIN(seq) FROM {self._changes}), (SELECT MAX(seq) FROM {self._changes})"
        ).fetchone()
        return int(first or 0), int(last or 0)

    # -- reads -----------------------------------------------------------------------
    def get(self, id: str) -> Record | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_SELECT} FROM {self._records} WHERE id = ?", (id,)
            ).fetchone()
        return None if row is None else _record(row)

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> list[Hit]:
        query = _unit(self._check(vector)[None, :])[0]
        where, params = translate(filter)
        if limit <= 0:
            return []
        with self._db.lock:
            version = self._db.data_version()
            with self._read(shared=True) as conn:
                index = self._synced(conn, version)
                if filter is not None:
                    seqs, sims = self._filtered(conn, index, query, limit, where, params)
                else:
                    seqs, sims = self._unscoped(conn, index, query, limit)
                records = self._by_seq(conn, seqs.tolist())
        return [
            Hit(records[s], _score(float(sim)))
            for s, sim in zip(seqs.tolist(), sims.tolist(), strict=True)
            if s in records
        ]

    def _filtered(
        self, conn: sqlite3.Connection, index: _VectorIndex, query: Vector, limit: int,
        where: str, params: list[Any],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The top ``limit`` among the rows ``where`` keeps.

        Up to ``_SCORE_FIRST_ROWS`` rows: :meth:`_score_first` (exact). Past that, the
        filter's rows are read first if there are at most ``_FEW_ROWS`` and ranked
        (exact). A broader filter asks the HNSW index, when it serves, for candidates and
        checks the filter on them (as approximate as an unscoped search: a scope holding
        most rows, such as the one user of a personal agent); if too few of them pass,
        every row the filter keeps is read and ranked. Without an HNSW index it is scored
        first, as small matrices are."""
        if index.size <= _SCORE_FIRST_ROWS:
            return self._score_first(conn, index, query, limit, where, params)
        positions, read = self._kept(conn, index, where, params, _FEW_ROWS + 1)
        if read > _FEW_ROWS:
            near = self._ann_near(conn, index)
            if near is None:
                return self._score_first(conn, index, query, limit, where, params)
            served = self._ann_filtered(near, conn, index, query, limit, where, params)
            if served is not None:
                return served
            positions, _ = self._kept(conn, index, where, params)
        return index.top(query, limit, positions)

    def _score_first(
        self, conn: sqlite3.Connection, index: _VectorIndex, query: Vector, limit: int,
        where: str, params: list[Any],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The whole matrix scored, then the filter checked on its best rows only, more
        of them while too few pass (sized by the share that did): once ``limit`` pass, no
        row below them ranks higher, so the answer is exact. When that would check over
        a third of the rows, the rows the filter keeps are read and ranked instead."""
        live = index.size - index.dead
        sims = index.scores(query)
        count = min(live, max(_SCORE_FIRST_MIN, _SCORE_FIRST_FACTOR * limit))
        checked = np.empty(0, np.intp)  # positions whose filter result is known
        kept = np.empty(0, np.intp)  # those of them that pass
        while True:
            best = _best(sims, count)
            new = best[~np.isin(best, checked)]  # a wider round checks only its new rows
            kept = np.concatenate([kept, new[self._passing(conn, index.seqs[new], where, params)]])
            checked = np.concatenate([checked, new])
            passed = np.isin(best, kept)
            found = int(np.count_nonzero(passed))
            if found >= limit or count >= live:
                best = best[passed][:limit]
                return index.seqs[best], sims[best]
            count = max(2 * count, -(-3 * limit * count // (2 * max(found, 1))))
            if 3 * count > live:
                break
        positions, _ = self._kept(conn, index, where, params)
        best = positions[_best(sims[positions], limit)]
        return index.seqs[best], sims[best]

    def _ann_filtered(
        self, near: Callable[[Vector, int], npt.NDArray[np.intp]], conn: sqlite3.Connection,
        index: _VectorIndex, query: Vector, limit: int, where: str, params: list[Any],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        """The ann's candidates (``near``) that pass the filter, re-ranked exactly; None
        when the filter keeps too few of them. At least twice ``limit`` must pass, so the
        answer does not rest on the HNSW index's weakest ranks."""
        live = index.size - index.dead
        count = max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit)
        while True:
            positions = near(query, count)
            passed = positions[self._passing(conn, index.seqs[positions], where, params)]
            if len(passed) >= 2 * limit or count >= live:
                return index.top(query, limit, passed)
            # the count at which twice ``limit`` should pass, by the share that did
            count = max(2 * count, -(-3 * limit * count // max(len(passed), 1)))
            if not len(passed) or count > _ANN_FILTER_MAX or 3 * count > live:
                return None

    def _passing(
        self, conn: sqlite3.Connection, seqs: npt.NDArray[np.int64], where: str,
        params: list[Any],
    ) -> npt.NDArray[np.bool_]:
        """Which of ``seqs`` the filter keeps (one query, however many)."""
        rows = conn.execute(
            f"SELECT seq FROM {self._records} WHERE seq IN"
            f" (SELECT value FROM json_each(?)) AND ({where})",
            [json.dumps(seqs.tolist()), *params],
        ).fetchall()
        return np.isin(seqs, np.array([r[0] for r in rows], np.int64))

    def _kept(
        self, conn: sqlite3.Connection, index: _VectorIndex, where: str, params: list[Any],
        most: int | None = None,
    ) -> tuple[npt.NDArray[np.intp], int]:
        """The matrix positions of the live rows ``where`` keeps, reading at most ``most``
        rows, and how many rows were read."""
        cap = f" LIMIT {int(most)}" if most is not None else ""
        rows = conn.execute(f"SELECT seq FROM {self._records} WHERE {where}{cap}", params).fetchall()
        return index.positions(np.array([r[0] for r in rows], np.int64)), len(rows)

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> list[Hit]:
        query = fts_query(text)
        where, params = translate(filter)
        if query is None or limit <= 0:
            return []
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
            records = self._by_seq(conn, [seq for seq, _ in ranked])
        if not ranked:
            return []
        best = min(rank for _, rank in ranked)
        return [
            Hit(records[seq], min(1.0, max(0.0, rank / best)) if best < 0 else 1.0)
            for seq, rank in ranked
            if seq in records
        ]

    def _by_seq(self, conn: sqlite3.Connection, seqs: list[int]) -> dict[int, Record]:
        if not seqs:
            return {}
        rows = conn.execute(
            f"SELECT seq, {_SELECT} FROM {self._records}"
            " WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps(seqs),),
        ).fetchall()
        return {row[0]: _record(row[1:]) for row in rows}

    # -- the matrix ------------------------------------------------------------------
    def _dimension_or_fail(self) -> int:
        if self._dimension is None:
            with self._read() as conn:
                row = conn.execute(
                    f"SELECT dimension FROM {_META} WHERE name = ?", (self.collection_name,)
                ).fetchone()
            if row is None:
                raise VectorStoreError(
                    f"collection {self.collection_name!r} is not open; call open(dimension, model)"
                )
            self._dimension = int(row[0])
        return self._dimension

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

    def _synced(self, conn: sqlite3.Connection, version: int) -> _VectorIndex:
        """The matrix, caught up with the file (call inside a read transaction)."""
        index = self._index
        if index is not None and not self._dirty and version == self._seen_version:
            return index
        row = conn.execute(
            f"SELECT log_floor FROM {_META} WHERE name = ?", (self.collection_name,)
        ).fetchone()
        floor = int(row[0]) if row else 0
        if index is None or self._last_change < floor:
            index = _VectorIndex(self._dimension_or_fail())
            rows = conn.execute(f"SELECT rec, vector FROM {self._vectors} ORDER BY rec").fetchall()
            index.load(np.array([r[0] for r in rows], np.int64), self._unpack(rows))
        else:
            rows = conn.execute(
                f"SELECT c.rec, v.vector FROM (SELECT DISTINCT rec FROM {self._changes}"
                f" WHERE seq > ?) AS c LEFT JOIN {self._vectors} AS v ON v.rec = c.rec",
                (self._last_change,),
            ).fetchall()
            present = [r for r in rows if r[1] is not None]
            gone = [r[0] for r in rows if r[1] is None]
            if present:
                index.upsert(np.array([r[0] for r in present], np.int64), self._unpack(present))
            if gone:
                index.remove(np.array(gone, np.int64))
        self._last_change = max(floor, self._log_bounds(conn)[1])
        self._log_floor = floor
        self._index, self._seen_version, self._dirty = index, version, False
        return index

    # -- the HNSW index (AnnIndex) -------------------------------------------------------
    def _unscoped(
        self, conn: sqlite3.Connection, index: _VectorIndex, query: Vector, limit: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The exact top ``limit``, from the HNSW index's candidates plus the rows changed since
        it was fed, re-ranked with the matrix; exact over all rows when that cannot be."""
        near = self._ann_near(conn, index)
        if near is None:
            return index.top(query, limit)
        positions = near(query, max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit))
        if len(positions) < min(limit, index.size - index.dead):
            return index.top(query, limit)
        return index.top(query, limit, positions)

    def _ann_near(
        self, conn: sqlite3.Connection, index: _VectorIndex
    ) -> Callable[[Vector, int], npt.NDArray[np.intp]] | None:
        """``near(query, count)``: the matrix positions of the HNSW index's ``count`` candidates
        and of every row changed since the HNSW index took them in; None when the HNSW index is
        not used, not ready, or behind by more than a quarter of the rows (the product
        is cheaper then)."""
        ann = self._fed_ann(conn, index)
        if ann is None or not ann.ready or ann.covered < self._log_floor:
            return None
        rows = conn.execute(
            f"SELECT DISTINCT rec FROM {self._changes} WHERE seq > ?", (ann.covered,)
        ).fetchall()
        if 4 * len(rows) > index.size - index.dead:
            return None
        changed = np.array([r[0] for r in rows], np.int64)

        def near(query: Vector, count: int) -> npt.NDArray[np.intp]:
            keys = ann.candidates(query, count)
            return index.positions(np.unique(np.concatenate([keys, changed])))

        return near

    def _fed_ann(self, conn: sqlite3.Connection, index: _VectorIndex) -> AnnIndex | None:
        """The HNSW index, sent the changes the matrix has and it lacks; None when not used."""
        threshold = self._ann_threshold
        if self._ann_class is None or threshold is None or index.size - index.dead < threshold:
            return None
        ann = self._ann
        if ann is None:
            path = None if self.path == ":memory:" else f"{self.path}.ann-{self._tables}"
            ann = self._ann = AnnIndex(self._ann_class, path, index.dimension, self._tables)
            ann.start()
        last = self._last_change
        if ann.loading or (ann.fed == last and not ann.verify):
            return ann
        live = index.alive[: index.size]
        seqs = index.seqs[: index.size][live]
        if not self._log_floor <= ann.fed <= last:  # nothing fed, or a log it cannot follow
            ann.verify = False
            ann.feed(Feed(last, seqs, index.vectors[: index.size][live],
                            np.empty(0, np.int64), full=True))
            return ann
        rows = conn.execute(
            f"SELECT DISTINCT rec FROM {self._changes} WHERE seq > ? AND seq <= ?",
            (ann.fed, last),
        ).fetchall()
        recs = np.array([r[0] for r in rows], np.int64)
        pos = index._find(recs)
        kept = pos >= 0
        kept[kept] = index.alive[pos[kept]]
        expect, ann.verify = (seqs.copy() if ann.verify else None), False
        ann.feed(Feed(last, recs[kept], index.vectors[pos[kept]], recs[~kept], expect=expect))
        return ann

    def _unpack(self, rows: list[Any]) -> npt.NDArray[np.float32]:
        dimension = self._dimension_or_fail()
        if not rows:
            return np.empty((0, dimension), np.float32)
        return np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(-1, dimension).copy()


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


def select_page(conn: sqlite3.Connection, table: str, filter: Filter | None, limit: int,
                cursor: str | None, order: Order) -> tuple[list[Record], str | None]:
    """One ``list`` page of a records ``table`` (its columns those of ``_RECORD_COLUMNS``)."""
    where, params = translate(filter)
    if order == "newest":
        by = "created_at DESC, id DESC"
        if cursor is not None:
            where, params = f"({where}) AND (created_at, id) < (?, ?)", [*params, *cursor_key(cursor)]
    else:
        by = "id"
        if cursor is not None:
            where, params = f"({where}) AND id > ?", [*params, cursor]
    rows = conn.execute(
        f"SELECT {_SELECT} FROM {table} WHERE {where} ORDER BY {by} LIMIT ?",
        [*params, max(limit, 0) + 1],
    ).fetchall()
    page = [_record(row) for row in rows[:limit]]
    return page, (cursor_of(page[-1], order) if len(rows) > limit and page else None)


def count_rows(conn: sqlite3.Connection, table: str, filter: Filter | None) -> int:
    """How many rows of a records ``table`` match ``filter``."""
    where, params = translate(filter)
    (n,) = conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()
    return int(n)


def _drop_tables(conn: sqlite3.Connection, tables: str) -> None:
    """Drop a collection's tables (their indexes and triggers go with them)."""
    for kind in ("fts", "changes", "vectors", "records"):
        conn.execute(f'DROP TABLE IF EXISTS "{tables}_{kind}"')


def _record_row(record: Record) -> tuple[Any, ...]:
    try:
        metadata = json.dumps(
            record.metadata, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
    except (TypeError, ValueError) as exc:
        raise VectorStoreError(f"metadata of record {record.id} is not JSON: {exc}") from None
    return (
        record.id, record.memory, record.hash, record.created_at, record.updated_at,
        record.user_id, record.agent_id, record.run_id, metadata,
        *(getattr(record, k) for k in (*TEMPORAL_FIELDS, *LIFECYCLE_FIELDS)),
    )


def _record(row: Sequence[Any]) -> Record:
    """A row of ``_SELECT`` as a Record (a search builds a few hundred, so this is lean)."""
    (id, memory, hash, created_at, updated_at, user_id, agent_id, run_id, metadata,
     valid_from, valid_to, expires_at, supersedes, memory_type, importance, confidence,
     access_count, last_accessed_at) = row
    return Record(
        id=id, memory=memory, hash=hash, created_at=created_at, updated_at=updated_at,
        user_id=user_id, agent_id=agent_id, run_id=run_id,
        metadata={} if metadata == "{}" else json.loads(metadata),
        valid_from=valid_from, valid_to=valid_to, expires_at=expires_at, supersedes=supersedes,
        memory_type=memory_type, importance=importance, confidence=confidence,
        access_count=access_count, last_accessed_at=last_accessed_at,
    )
