"""The SQLite store's vector search: a :class:`Matrix` in RAM kept in step with the file.

Before each search the matrix catches up with the file: ``PRAGMA data_version``
says whether another connection committed, and the change log (``<tables>_changes``,
written by triggers on the vectors and records tables) says which rows changed, so
writes by other processes are seen without reloading everything. Beside each vector
the matrix holds the row's scope and validity fields (:mod:`memkit.stores._columns`),
so the filter of a search is checked on its best rows in RAM, and it keeps the rows
of the records searches return (all of them, in a collection of up to ``_ROWS_KEPT``),
so their records are not read again.

Unscoped searches over ``ann_threshold`` live rows or more, and filtered ones over
more than ``_SCORE_FIRST_ROWS`` rows whose filter keeps many rows, ask an HNSW
index (:class:`AnnIndex`, fed from the matrix) for candidates and re-rank them
exactly; every other search is exact.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from memkit._filters import Filter
from memkit.stores._ann import AnnIndex, Feed, usearch_index
from memkit.stores._columns import FIELDS, SCOPE, Check, Held, columnar, encode
from memkit.stores._matrix import Matrix, top_positions
from memkit.stores._sqlite_keywords import Index, bm25, terms_of, varint
from memkit.stores._sqlite_schema import META
from memkit.stores._sqlite_sql import SELECT_IN_ORDER, SQL, record_in_order, translate
from memkit.stores.base import Record, Vector

#: live rows from which unscoped searches use the HNSW index (``ann_threshold``)
ANN_THRESHOLD = 20_000
# The HNSW index is asked for max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit) keys to re-rank.
_ANN_MIN_CANDIDATES = 100
_ANN_FACTOR = 10
#: filtered searches over a matrix this small score it whole, then check the filter
_SCORE_FIRST_ROWS = 25_000
_SCORE_FIRST_MIN = 256
#: the first round checks this many rows a result: when the searched scope holds a fifth of
#: the rows near a question (one user among several), 4 took a second round over the matrix
_SCORE_FIRST_FACTOR = 8
#: the most HNSW candidates a filtered search checks before it reads the filter's rows
_ANN_FILTER_MAX = 2_000
#: past _SCORE_FIRST_ROWS, a filter keeping at most this many rows ranks them exactly
_FEW_ROWS = 2_048
# The change log is trimmed to its newest _LOG_KEEP entries once it exceeds _LOG_MAX.
_LOG_MAX = 100_000
_LOG_KEEP = 50_000
#: rows kept for the records searches return (all of a collection this small are read
#: with its vectors); past this many they are dropped
_ROWS_KEPT = 50_000
#: beside FIELDS in the matrix: the row's length in terms, for bm25
LENGTH = len(FIELDS)
#: after it, the codes of the SCOPE fields (:class:`Held`)
CODED = LENGTH + 1
_FIELDS = ", ".join(f"r.{name}" for name in FIELDS) + ", d.sz"

Ranked = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]


class FileMatrix:
    """One collection's vectors (tables ``<tables>_*`` of the file at ``path``) as a
    matrix in RAM, and the HNSW index fed from it when ``ann_threshold`` is reached.

    Every method taking ``conn`` runs inside the caller's transaction; ``dimension``
    is asked when the matrix is first loaded."""

    def __init__(
        self, path: str, collection_name: str, tables: str, dimension: Callable[[], int],
        ann_threshold: int | None, scrubs: Callable[[], int],
    ) -> None:
        self.path, self.collection_name, self.tables = path, collection_name, tables
        self.records = f'"{tables}_records"'
        self.vectors = f'"{tables}_vectors"'
        self.changes = f'"{tables}_changes"'
        self.sizes = f'"{tables}_fts_docsize"'
        self.keywords = Index(tables)
        self._dimension = dimension
        self._ann_threshold = ann_threshold
        #: reads the collection's scrub count (:meth:`after_scrub`); ``_scrubbed``: as last synced
        self._scrubs = scrubs
        self._scrubbed = 0
        self.ann_class = usearch_index() if ann_threshold else None
        self.ann: AnnIndex | None = None
        self._index: Matrix | None = None
        self._last_change = 0
        self._seen_version: int | None = None
        self._dirty = True
        self._log_floor = 0
        self._rows: dict[int, tuple[Any, ...]] = {}
        #: the matrix's FIELDS columns, None for those holding no value (filters read them)
        self._columns = Held(())
        self._filled = [False] * len(FIELDS)
        #: the numbers of the scope fields' texts (:class:`Held`), kept until the matrix reloads
        self._codes: dict[str, int] = {}
        #: the keyword index's rows and terms (:meth:`Index.totals`) as the matrix last saw it
        self._totals: tuple[int, int] | None = None

    def search(
        self, conn: sqlite3.Connection, version: int, query: Vector, limit: int,
        where: Where | None,
    ) -> Ranked:
        """The ``seq`` and cosine of the best ``limit`` rows (of those ``where`` keeps;
        ``check``: the same filter on :data:`FIELDS`, when it can be told from them),
        best first; ``version`` is the file's ``data_version`` (call under the
        connection's lock, inside a read transaction)."""
        index = self._synced(conn, version)
        if where is not None:
            return self._filtered(conn, index, query, limit, where)
        return self._unscoped(conn, index, query, limit)

    def keyword(
        self, conn: sqlite3.Connection, version: int, words: list[str], limit: int,
        check: Check,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The ``seq`` and FTS5 ``bm25()`` rank of the best ``limit`` rows holding any of
        ``words`` that ``check`` keeps, best (lowest) first, ties by ``seq``, as FTS5
        ranks them (:mod:`memkit.stores._sqlite_keywords`); None when FTS5 must answer: a
        word it reads as several terms or none, or a row the matrix lacks."""
        terms = terms_of(words)
        if any(term is None for term in terms):
            return None
        index = self._synced(conn, version)
        if self._totals is None:  # until the matrix next catches up with the file
            self._totals = self.keywords.totals(conn)
        rows, tokens = self._totals
        self.keywords.prepare(conn, rows)
        phrases = [self.keywords.postings(conn, term) for term in terms if term is not None]
        matched = np.concatenate([seqs for seqs, _ in phrases])
        matched.sort()
        if len(matched):  # the union
            matched = matched[np.concatenate([[True], matched[1:] != matched[:-1]])]
        if not len(matched) or rows <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        pos = index.find(matched)
        if (pos < 0).any() or not index.alive[pos].all():
            return None
        ranks = bm25(phrases, matched, index.fields[LENGTH][pos], rows, tokens)
        order = np.lexsort((matched, ranks))
        count = max(_SCORE_FIRST_MIN, _SCORE_FIRST_FACTOR * limit)
        checked = 0
        kept: list[npt.NDArray[np.intp]] = []
        found = 0
        while found < limit and checked < len(order):  # the best rows first, more if needed
            block = order[checked : checked + count]
            passed = block[check(self._columns, pos[block])]
            kept.append(passed)
            found += len(passed)
            checked += len(block)
            count *= 2
        best = np.concatenate(kept)[:limit] if kept else np.empty(0, np.intp)
        return matched[best], ranks[best]

    def records_of(self, conn: sqlite3.Connection, seqs: list[int]) -> dict[int, Record]:
        """The records of ``seqs`` (those present), from the rows kept since a search last
        met them, else read (call after :meth:`search`, in its transaction)."""
        rows = self._rows
        missing = [s for s in seqs if s not in rows]
        if missing:
            if len(rows) + len(missing) > _ROWS_KEPT:
                rows.clear()
            for row in conn.execute(
                f"SELECT seq, {SELECT_IN_ORDER} FROM {self.records}"
                " WHERE seq IN (SELECT value FROM json_each(?))", (json.dumps(missing),),
            ):
                rows[row[0]] = row[1:]
        return {s: record_in_order(rows[s]) for s in seqs if s in rows}

    # -- the change log ---------------------------------------------------------------
    def after_write(self, conn: sqlite3.Connection) -> None:
        """Note a write (the next search catches up) and trim the change log when it
        has grown past ``_LOG_MAX`` entries."""
        self._dirty = True
        first, last = self._log_bounds(conn)
        if last - first > _LOG_MAX:
            floor = last - _LOG_KEEP
            conn.execute(f"DELETE FROM {self.changes} WHERE seq <= ?", (floor,))
            conn.execute(
                f"UPDATE {META} SET log_floor = ? WHERE name = ?", (floor, self.collection_name)
            )

    def after_scrub(self, conn: sqlite3.Connection) -> None:
        """Count a scrub (its HNSW index file is being dropped): a graph made before it,
        in any process, may hold the vectors the purge removed, so it is never saved."""
        conn.execute(
            f"UPDATE {META} SET scrubs = scrubs + 1 WHERE name = ?", (self.collection_name,)
        )
        self._dirty = True

    def forget(self) -> None:
        """Drop what RAM holds (a write transaction rolled back): the next search reloads."""
        self._index = None
        self._rows.clear()
        self.keywords.clear()
        self._dirty = True

    def after_reset(self, conn: sqlite3.Connection) -> None:
        """Empty the change log of a reset collection; its floor stays past every entry."""
        last = self._log_bounds(conn)[1]
        conn.execute(f"DELETE FROM {self.changes}")
        conn.execute(
            f"UPDATE {META} SET log_floor = MAX(log_floor, ?) WHERE name = ?",
            (last, self.collection_name),
        )
        self._dirty = True

    def _log_bounds(self, conn: sqlite3.Connection) -> tuple[int, int]:
        first, last = conn.execute(
            f"SELECT (SELECT MIN(seq) FROM {self.changes}), (SELECT MAX(seq) FROM {self.changes})"
        ).fetchone()
        return int(first or 0), int(last or 0)

    def close_ann(self, *, forget: bool = False) -> None:
        """Stop the HNSW index's thread; ``forget``: its tables are gone, so is its file."""
        ann, self.ann = self.ann, None
        if ann is not None:
            ann.close(save=not forget)
            if forget:
                ann.discard_file()

    # -- filtered searches ------------------------------------------------------------
    def _filtered(
        self, conn: sqlite3.Connection, index: Matrix, query: Vector, limit: int, where: Where,
    ) -> Ranked:
        """The top ``limit`` among the rows ``where`` keeps.

        Up to ``_SCORE_FIRST_ROWS`` rows: :meth:`_score_first` (exact). Past that, the
        filter's rows are read first if there are at most ``_FEW_ROWS`` and ranked
        (exact). A broader filter asks the HNSW index, when it serves, for candidates and
        checks the filter on them (as approximate as an unscoped search: a scope holding
        most rows, such as the one user of a personal agent); if too few of them pass,
        every row the filter keeps is read and ranked. Without an HNSW index it is scored
        first, as small matrices are."""
        if index.size <= _SCORE_FIRST_ROWS:
            return self._score_first(conn, index, query, limit, where)
        positions, read = self._kept(conn, index, where, _FEW_ROWS + 1)
        if read > _FEW_ROWS:
            near = self._near(conn, index)
            if near is None:
                return self._score_first(conn, index, query, limit, where)
            served = self._ann_filtered(near, conn, index, query, limit, where)
            if served is not None:
                return served
            positions, _ = self._kept(conn, index, where)
        return index.top(query, limit, positions)

    def _score_first(
        self, conn: sqlite3.Connection, index: Matrix, query: Vector, limit: int, where: Where,
    ) -> Ranked:
        """The whole matrix scored, then the filter checked on its best rows only, more
        of them while too few pass (sized by the share that did): once ``limit`` pass, no
        row below them ranks higher, so the answer is exact. When that would check over
        a third of the rows, the rows the filter keeps are read and ranked instead."""
        live = index.size - index.dead
        sims = index.scores(query)
        count = min(live, max(_SCORE_FIRST_MIN, _SCORE_FIRST_FACTOR * limit))
        checked = np.zeros(len(sims), np.bool_)  # by position: the filter's result is known
        kept = np.zeros(len(sims), np.bool_)  # and it passes
        while True:
            best = top_positions(sims, count)
            new = best[~checked[best]]  # a wider round checks only its new rows
            kept[new[self._passing(conn, index, new, where)]] = True
            checked[new] = True
            passed = kept[best]
            found = int(np.count_nonzero(passed))
            if found >= limit or count >= live:
                best = best[passed][:limit]
                return index.seqs[best], sims[best]
            count = max(2 * count, -(-3 * limit * count // (2 * max(found, 1))))
            if 3 * count > live:
                break
        positions, _ = self._kept(conn, index, where)
        best = positions[top_positions(sims[positions], limit)]
        return index.seqs[best], sims[best]

    def _ann_filtered(
        self, near: Callable[[Vector, int], npt.NDArray[np.intp]], conn: sqlite3.Connection,
        index: Matrix, query: Vector, limit: int, where: Where,
    ) -> Ranked | None:
        """The ann's candidates (``near``) that pass the filter, re-ranked exactly; None
        when the filter keeps too few of them. At least twice ``limit`` must pass, so the
        answer does not rest on the HNSW index's weakest ranks."""
        live = index.size - index.dead
        count = max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit)
        while True:
            positions = near(query, count)
            passed = positions[self._passing(conn, index, positions, where)]
            if len(passed) >= 2 * limit or count >= live:
                return index.top(query, limit, passed)
            # the count at which twice ``limit`` should pass, by the share that did
            count = max(2 * count, -(-3 * limit * count // max(len(passed), 1)))
            if not len(passed) or count > _ANN_FILTER_MAX or 3 * count > live:
                return None

    def _passing(
        self, conn: sqlite3.Connection, index: Matrix, positions: npt.NDArray[np.intp],
        where: Where,
    ) -> npt.NDArray[np.bool_]:
        """Which of the rows at ``positions`` the filter keeps (in RAM, else one query)."""
        if where.check is not None:
            return where.check(self._columns, positions)
        seqs = index.seqs[positions]
        rows = conn.execute(
            f"SELECT seq FROM {self.records} WHERE seq IN"
            f" (SELECT value FROM json_each(?)) AND ({where.sql})",
            [json.dumps(seqs.tolist()), *where.params],
        ).fetchall()
        return np.isin(seqs, np.array([r[0] for r in rows], np.int64))

    def _kept(
        self, conn: sqlite3.Connection, index: Matrix, where: Where, most: int | None = None,
    ) -> tuple[npt.NDArray[np.intp], int]:
        """The matrix positions of the live rows ``where`` keeps, reading at most ``most``
        rows, and how many rows were read."""
        cap = f" LIMIT {int(most)}" if most is not None else ""
        rows = conn.execute(
            f"SELECT seq FROM {self.records} WHERE {where.sql}{cap}", where.params
        ).fetchall()
        return index.positions(np.array([r[0] for r in rows], np.int64)), len(rows)

    # -- the matrix ------------------------------------------------------------------
    def _synced(self, conn: sqlite3.Connection, version: int) -> Matrix:
        """The matrix, caught up with the file (call inside a read transaction)."""
        index = self._index
        if index is not None and not self._dirty and version == self._seen_version:
            return index
        self._totals = None
        row = conn.execute(
            f"SELECT log_floor, scrubs FROM {META} WHERE name = ?", (self.collection_name,)
        ).fetchone()
        floor, self._scrubbed = (int(row[0]), int(row[1])) if row else (0, 0)
        if index is None or self._last_change < floor:
            self._codes = {}
            index = Matrix(self._dimension(), self._fill([]))
            rows = conn.execute(
                f"SELECT v.rec, v.vector, {_FIELDS} FROM {self.vectors} AS v"
                f" JOIN {self.records} AS r ON r.seq = v.rec"
                f" LEFT JOIN {self.sizes} AS d ON d.id = v.rec ORDER BY v.rec"
            ).fetchall()
            self._filled = [False] * len(FIELDS)
            index.load(np.array([r[0] for r in rows], np.int64), self._unpack(rows),
                       self._fill(rows))
            self._rows.clear()
            self.keywords.clear()
            if len(rows) <= _ROWS_KEPT:  # a search's candidates then read nothing more
                self._rows.update(
                    (row[0], row[1:])
                    for row in conn.execute(f"SELECT seq, {SELECT_IN_ORDER} FROM {self.records}"))
        else:
            rows = conn.execute(
                f"SELECT c.rec, v.vector, {_FIELDS} FROM (SELECT DISTINCT rec FROM"
                f" {self.changes} WHERE seq > ?) AS c LEFT JOIN {self.vectors} AS v"
                f" ON v.rec = c.rec LEFT JOIN {self.records} AS r ON r.seq = v.rec"
                f" LEFT JOIN {self.sizes} AS d ON d.id = v.rec",
                (self._last_change,),
            ).fetchall()
            present = [r for r in rows if r[1] is not None]
            gone = [r[0] for r in rows if r[1] is None]
            if present:
                index.upsert(np.array([r[0] for r in present], np.int64), self._unpack(present),
                             self._fill(present))
            if gone:
                index.remove(np.array(gone, np.int64))
            for row in rows:
                self._rows.pop(row[0], None)
            if rows:
                self.keywords.changed(conn, [row[0] for row in rows])
        self._last_change = max(floor, self._log_bounds(conn)[1])
        self._log_floor = floor
        self._index, self._seen_version, self._dirty = index, version, False
        filled = self._filled
        self._columns = Held(
            [column if filled[i] else None for i, column in enumerate(index.fields[:LENGTH])],
            [column if filled[i] else None for i, column in enumerate(index.fields[CODED:])],
            self._codes)
        return index

    def _fill(self, rows: list[Any]) -> list[npt.NDArray[Any]]:
        """:func:`_fields` of ``rows`` and their scope fields' codes (from :data:`CODED` on),
        noting the FIELDS columns that now hold a value."""
        columns = _fields(rows)
        for i in range(len(FIELDS)):
            self._filled[i] = self._filled[i] or bool(np.any(columns[i] != None))  # noqa: E711
        return [*columns, *(encode(columns[i], self._codes) for i in range(len(SCOPE)))]

    # -- the HNSW index (AnnIndex) -------------------------------------------------------
    def _unscoped(
        self, conn: sqlite3.Connection, index: Matrix, query: Vector, limit: int
    ) -> Ranked:
        """The exact top ``limit``, from the HNSW index's candidates plus the rows changed since
        it was fed, re-ranked with the matrix; exact over all rows when that cannot be."""
        near = self._near(conn, index)
        if near is None:
            return index.top(query, limit)
        positions = near(query, max(_ANN_MIN_CANDIDATES, _ANN_FACTOR * limit))
        if len(positions) < min(limit, index.size - index.dead):
            return index.top(query, limit)
        return index.top(query, limit, positions)

    def _near(
        self, conn: sqlite3.Connection, index: Matrix
    ) -> Callable[[Vector, int], npt.NDArray[np.intp]] | None:
        """``near(query, count)``: the matrix positions of the HNSW index's ``count`` candidates
        and of every row changed since the HNSW index took them in; None when the HNSW index is
        not used, not ready, or behind by more than a quarter of the rows (the product
        is cheaper then)."""
        ann = self._fed(conn, index)
        if ann is None or not ann.ready or ann.covered < self._log_floor:
            return None
        rows = conn.execute(
            f"SELECT DISTINCT rec FROM {self.changes} WHERE seq > ?", (ann.covered,)
        ).fetchall()
        if 4 * len(rows) > index.size - index.dead:
            return None
        changed = np.array([r[0] for r in rows], np.int64)

        def near(query: Vector, count: int) -> npt.NDArray[np.intp]:
            keys = ann.candidates(query, count)
            return index.positions(np.unique(np.concatenate([keys, changed])))

        return near

    def _fed(self, conn: sqlite3.Connection, index: Matrix) -> AnnIndex | None:
        """The HNSW index, sent the changes the matrix has and it lacks; None when not used."""
        threshold = self._ann_threshold
        if self.ann_class is None or threshold is None or index.size - index.dead < threshold:
            return None
        ann = self.ann
        if ann is not None and ann.epoch != self._scrubbed:  # scrubbed by another process
            self.close_ann()  # which saves nothing
            ann = None
        if ann is None:
            path = None if self.path == ":memory:" else f"{self.path}.ann-{self.tables}"
            ann = self.ann = AnnIndex(self.ann_class, path, index.dimension, self.tables,
                                      self._scrubs, self._scrubbed)
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
            f"SELECT DISTINCT rec FROM {self.changes} WHERE seq > ? AND seq <= ?",
            (ann.fed, last),
        ).fetchall()
        recs = np.array([r[0] for r in rows], np.int64)
        pos = index.find(recs)
        kept = pos >= 0
        kept[kept] = index.alive[pos[kept]]
        expect, ann.verify = (seqs.copy() if ann.verify else None), False
        ann.feed(Feed(last, recs[kept], index.vectors[pos[kept]], recs[~kept], expect=expect))
        return ann

    def _unpack(self, rows: list[Any]) -> npt.NDArray[np.float32]:
        dimension = self._dimension()
        if not rows:
            return np.empty((0, dimension), np.float32)
        return np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(-1, dimension).copy()


class Where:
    """A search's filter: as a check of :data:`FIELDS` when it can be told from them
    (:func:`memkit.stores._columns.columnar`), and as SQL with its parameters, translated
    when first asked for (a check in RAM needs none)."""

    __slots__ = ("_sql", "check", "filter")

    def __init__(self, filter: Filter | None) -> None:
        self.filter, self.check = filter, columnar(filter)
        self._sql = None if self.check is not None else translate(filter)

    @property
    def sql(self) -> str:
        return self._translated()[0]

    @property
    def params(self) -> list[Any]:
        return self._translated()[1]

    def _translated(self) -> SQL:
        if self._sql is None:
            self._sql = translate(self.filter)
        return self._sql


def _fields(rows: list[Any]) -> list[npt.NDArray[Any]]:
    """The columns of :data:`FIELDS` (objects) and :data:`LENGTH` (float64) of rows
    ``(rec, vector, *fields, docsize)`` (``docsize``: FTS5's varint of the row's terms)."""
    columns = []
    for i in range(LENGTH):
        column = np.empty(len(rows), object)
        column[:] = [row[2 + i] for row in rows]
        columns.append(column)
    lengths = [varint(row[-1], 0)[0] if row[-1] else 0 for row in rows]
    return [*columns, np.array(lengths, np.float64)]
