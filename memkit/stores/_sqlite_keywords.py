"""The SQLite store's keyword search, scored in RAM exactly as FTS5's ``bm25()`` scores it.

FTS5 computes bm25 for every row any query word matches (about 1,650 rows for a
typical LoCoMo question at 10k memories), reading each row's length from the file.
Here the lengths sit in the matrix beside the vectors, the postings (which rows
hold each term, how often) are read from the index through an ``fts5vocab`` table
(all of them at once, then kept in step with the change log: :class:`Index`), and
the scores are FTS5's formula (``fts5Bm25Function`` in SQLite's ``fts5_aux.c``) in float64, in
its order of operations, so each rank is the very number FTS5 returns:

    idf(i) = log((rows - hits(i) + 0.5) / (hits(i) + 0.5)), at least 1e-6
    rank   = -sum over the query's phrases i of
             idf(i) * (f(i) * (k1 + 1)) / (f(i) + k1 * (1 - b + b * length / average))

A word is looked up only when FTS5's tokenizer makes exactly one term of it (the
same tokenizer, run on an in-memory table: :class:`Terms`); otherwise the store asks
FTS5 as before.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from memkit.stores._porter import stem
from memkit.stores._sqlite_schema import FTS_TOKENIZER

K1 = 1.2
B = 0.75
#: words whose terms are remembered; past this many they are forgotten
_WORDS_KEPT = 50_000
#: terms whose postings are kept (an index read per term); past this many they are dropped
_TERMS_KEPT = 20_000
#: an index of at most this many rows is read whole and kept in step with the file
ALL_ROWS = 50_000

Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""The ``seq`` of each row holding a term (ascending), and how often it holds it."""


def terms_of(words: list[str]) -> list[str | None]:
    """The term FTS5's tokenizer makes of each of ``words``, or None when it makes none or
    several (a phrase)."""
    return _terms()(words)


class Terms:
    """:func:`terms_of`, read from an in-memory FTS5 table with the store's tokenizer."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{FTS_TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        self._lock = threading.Lock()
        self._known: dict[str, str | None] = {}

    def __call__(self, words: list[str]) -> list[str | None]:
        with self._lock:
            known = self._known
            new = [w for w in dict.fromkeys(words) if w not in known]
            if len(known) + len(new) > _WORDS_KEPT:
                known.clear()
            others = []
            for word in new:  # ASCII letters: the stemmer FTS5 runs, without asking it
                if word.isascii() and word.isalpha():
                    known[word] = stem(word.lower())
                else:
                    others.append(word)
            if others:
                found = self._tokens(others)
                for i, word in enumerate(others):
                    terms = found.get(i, [])
                    known[word] = terms[0] if len(terms) == 1 else None
            return [known[w] for w in words]

    def counts(self, texts: list[str]) -> list[dict[str, int]]:
        """The terms FTS5 indexes for each of ``texts``, and how often each holds it."""
        with self._lock:
            found = self._tokens(texts)
        out: list[dict[str, int]] = []
        for i in range(len(texts)):
            held: dict[str, int] = {}
            for term in found.get(i, ()):
                held[term] = held.get(term, 0) + 1
            out.append(held)
        return out

    def _tokens(self, texts: list[str]) -> dict[int, list[str]]:
        """Each text's terms, by its position in ``texts`` (call under the lock). The rows
        are rolled back, not deleted: FTS5 reads a deleted row back to unindex it (48 against
        77 us for a question's words)."""
        conn = self._conn
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(texts))
            found: dict[int, list[str]] = {}
            for doc, term in conn.execute("SELECT doc, term FROM tokens"):
                found.setdefault(doc, []).append(term)
        finally:
            conn.execute("ROLLBACK")
        return found


def _terms() -> Terms:
    global _TERMS
    if _TERMS is None:
        with _MAKING:
            if _TERMS is None:
                _TERMS = Terms()
    return _TERMS


_TERMS: Terms | None = None
_MAKING = threading.Lock()
_NONE: Postings = (np.empty(0, np.int64), np.empty(0, np.float64))


class Index:
    """One collection's postings, read from its FTS5 index (``<tables>_fts``).

    An index of at most :data:`ALL_ROWS` rows is read whole, in one pass, and then kept
    in step with the file: :meth:`changed` re-reads the terms of the rows the change log
    names (the text FTS5 indexed, tokenised as FTS5 does), so a write does not drop the
    postings. A larger index reads each term's postings when a query first needs them and
    drops them all on any change."""

    def __init__(self, tables: str) -> None:
        self.fts = f"{tables}_fts"
        self.records = f'"{tables}_records"'
        self._vocab = f'temp."{tables}_fts_instances"'
        self._made = False
        self._postings: dict[str, Postings] = {}
        #: every term of the index is in ``_postings`` (and each row's terms in ``_held``)
        self._complete = False
        self._held: dict[int, Iterable[str]] = {}

    def clear(self) -> None:
        self._postings.clear()
        self._held.clear()
        self._complete = False

    def postings(self, conn: sqlite3.Connection, term: str) -> Postings:
        found = self._postings.get(term)
        if found is None:
            if self._complete:
                return _NONE
            (docs,) = self._instances(conn).execute(
                f"SELECT group_concat(doc) FROM {self._vocab} WHERE term = ?", (term,)
            ).fetchone()
            seqs = np.array(docs.split(","), np.int64) if docs else np.empty(0, np.int64)
            seqs, counts = np.unique(seqs, return_counts=True)
            if len(self._postings) >= _TERMS_KEPT:
                self._postings.clear()
            found = self._postings[term] = (seqs, counts.astype(np.float64))
        return found

    def prepare(self, conn: sqlite3.Connection, rows: int) -> None:
        """Read the whole index when it holds at most :data:`ALL_ROWS` rows and is not read
        yet (one pass over FTS5's instances, ordered by term then row)."""
        if self._complete or rows > ALL_ROWS:
            return
        (text,) = self._instances(conn).execute(
            f"SELECT group_concat(doc) FROM {self._vocab}").fetchone()
        terms = conn.execute(
            f"SELECT term, cnt FROM temp.\"{self.fts}_row_terms\" ORDER BY term").fetchall()
        docs = np.array(text.split(","), np.int64) if text else np.empty(0, np.int64)
        sizes = np.array([count for _, count in terms], np.int64)
        ends = np.cumsum(sizes)
        if len(docs) != (int(ends[-1]) if len(ends) else 0):
            return  # the two reads disagree (cannot happen in one transaction): read per term
        starts = ends - sizes
        first = np.ones(len(docs), np.bool_)  # where a (term, row) pair starts
        first[1:] = docs[1:] != docs[:-1]
        first[starts] = True
        at = np.flatnonzero(first)
        pair_docs = docs[at]
        pair_counts = np.diff(np.append(at, len(docs))).astype(np.float64)
        bounds = [*np.searchsorted(at, starts).tolist(), len(at)]
        names = [term for term, _ in terms]
        self._postings = {name: (pair_docs[bounds[i] : bounds[i + 1]],
                                 pair_counts[bounds[i] : bounds[i + 1]])
                          for i, name in enumerate(names)}
        # each row's terms, to take it out of their postings when it changes
        owner = np.repeat(np.array(names, object), np.diff(bounds))
        order = np.argsort(pair_docs, kind="stable")
        rows_sorted = pair_docs[order]
        split = np.flatnonzero(rows_sorted[1:] != rows_sorted[:-1]) + 1
        self._held = {} if not len(order) else dict(zip(
            rows_sorted[np.append(0, split)].tolist(), np.split(owner[order], split),
            strict=True))
        self._complete = True

    def changed(self, conn: sqlite3.Connection, seqs: list[int]) -> None:
        """The rows ``seqs`` changed (or were deleted): their postings follow (call inside
        the read transaction in which the change log named them)."""
        if not self._complete:
            self.clear()
            return
        texts = conn.execute(
            f"SELECT seq, memory FROM {self.records} WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps(seqs),),
        ).fetchall()
        gone: dict[str, list[int]] = {}
        for seq in seqs:
            for term in self._held.pop(seq, ()):
                gone.setdefault(term, []).append(seq)
        come: dict[str, list[tuple[int, int]]] = {}
        for (seq, _), held in zip(texts, _terms().counts([text for _, text in texts]),
                                  strict=True):
            self._held[seq] = tuple(held)
            for term, count in held.items():
                come.setdefault(term, []).append((seq, count))
        for term in gone.keys() | come.keys():
            seqs_of, counts = self._postings.get(term, _NONE)
            if term in gone:
                kept = ~np.isin(seqs_of, np.array(gone[term], np.int64))
                seqs_of, counts = seqs_of[kept], counts[kept]
            if term in come:
                added = come[term]
                seqs_of = np.concatenate([seqs_of, np.array([s for s, _ in added], np.int64)])
                counts = np.concatenate([counts, np.array([c for _, c in added], np.float64)])
                order = np.argsort(seqs_of, kind="stable")
                seqs_of, counts = seqs_of[order], counts[order]
            if len(seqs_of):
                self._postings[term] = (seqs_of, counts)
            else:
                self._postings.pop(term, None)

    def _instances(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """``conn``, with the ``fts5vocab`` tables over the index made (temp: per connection)."""
        if not self._made:
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab}"
                         f" USING fts5vocab(main, '{self.fts}', 'instance')")
            conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."{self.fts}_row_terms"'
                         f" USING fts5vocab(main, '{self.fts}', 'row')")
            self._made = True
        return conn

    def totals(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """The rows of the index and the terms they hold, as FTS5 keeps them (the
        "averages" record of ``<tables>_fts_data``)."""
        row = conn.execute(f'SELECT block FROM "{self.fts}_data" WHERE id = 1').fetchone()
        if row is None or not row[0]:
            return 0, 0
        rows, at = varint(row[0], 0)
        tokens, _ = varint(row[0], at) if at < len(row[0]) else (0, at)
        return rows, tokens


def bm25(
    phrases: list[Postings], matched: npt.NDArray[np.int64], lengths: npt.NDArray[np.float64],
    rows: int, tokens: int,
) -> npt.NDArray[np.float64]:
    """FTS5's ``bm25()`` of each of the ``matched`` rows (ascending ``seq``, holding
    ``lengths`` terms) for a query of ``phrases`` (one term each) over an index of
    ``rows`` rows holding ``tokens`` terms."""
    average = float(tokens) / float(rows)
    norm = K1 * ((1 - B) + B * lengths / average)
    score = np.zeros(len(matched), np.float64)
    for seqs, counts in phrases:
        idf = math.log((rows - len(seqs) + 0.5) / (len(seqs) + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        freq = np.zeros(len(matched), np.float64)
        freq[np.searchsorted(matched, seqs)] = counts
        score += idf * ((freq * (K1 + 1.0)) / (freq + norm))
    ranks: npt.NDArray[np.float64] = -1.0 * score
    return ranks


def varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's variable-length integer at ``data[at:]``, and where the next one starts."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9
