"""The SQLite store's keyword search, scored in RAM exactly as FTS5's ``bm25()`` scores it.

FTS5 computes bm25 for every row any query word matches (about 1,650 rows for a
typical LoCoMo question at 10k memories), reading each row's length from the file.
Here the lengths sit in the matrix beside the vectors, each word's postings (which
rows hold its term, how often) are read once from the index through an
``fts5vocab`` table and kept until the collection changes, and the scores are
FTS5's formula (``fts5Bm25Function`` in SQLite's ``fts5_aux.c``) in float64, in
its order of operations, so each rank is the very number FTS5 returns:

    idf(i) = log((rows - hits(i) + 0.5) / (hits(i) + 0.5)), at least 1e-6
    rank   = -sum over the query's phrases i of
             idf(i) * (f(i) * (k1 + 1)) / (f(i) + k1 * (1 - b + b * length / average))

A word is looked up only when FTS5's tokenizer makes exactly one term of it (the
same tokenizer, run on an in-memory table: :class:`Terms`); otherwise the store asks
FTS5 as before.
"""

from __future__ import annotations

import math
import sqlite3
import threading

import numpy as np
import numpy.typing as npt

from memkit.stores._sqlite_schema import FTS_TOKENIZER

K1 = 1.2
B = 0.75
#: words whose terms are remembered; past this many they are forgotten
_WORDS_KEPT = 50_000
#: terms whose postings are kept; past this many they are dropped
_TERMS_KEPT = 20_000

Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""The ``seq`` of each row holding a term (ascending), and how often it holds it."""


def terms_of(words: list[str]) -> list[str | None]:
    """The term FTS5's tokenizer makes of each of ``words``, or None when it makes none or
    several (a phrase)."""
    global _TERMS
    if _TERMS is None:
        with _MAKING:
            if _TERMS is None:
                _TERMS = Terms()
    return _TERMS(words)


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
            if new:
                if len(known) + len(new) > _WORDS_KEPT:
                    known.clear()
                conn = self._conn
                conn.execute("BEGIN")
                try:
                    conn.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)",
                                     enumerate(new))
                    found: dict[int, list[str]] = {}
                    for doc, term in conn.execute("SELECT doc, term FROM tokens"):
                        found.setdefault(doc, []).append(term)
                    conn.execute("DELETE FROM words")
                finally:
                    conn.execute("COMMIT")
                for i, word in enumerate(new):
                    terms = found.get(i, [])
                    known[word] = terms[0] if len(terms) == 1 else None
            return [known[w] for w in words]


_TERMS: Terms | None = None
_MAKING = threading.Lock()


class Index:
    """One collection's postings, read from its FTS5 index (``<tables>_fts``) on demand
    and kept until :meth:`clear` (the collection changed)."""

    def __init__(self, tables: str) -> None:
        self.fts = f"{tables}_fts"
        self._vocab = f'temp."{tables}_fts_instances"'
        self._made = False
        self._postings: dict[str, Postings] = {}

    def clear(self) -> None:
        self._postings.clear()

    def postings(self, conn: sqlite3.Connection, term: str) -> Postings:
        found = self._postings.get(term)
        if found is None:
            if not self._made:
                conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab}"
                             f" USING fts5vocab(main, '{self.fts}', 'instance')")
                self._made = True
            (docs,) = conn.execute(
                f"SELECT group_concat(doc) FROM {self._vocab} WHERE term = ?", (term,)
            ).fetchone()
            seqs = np.array(docs.split(","), np.int64) if docs else np.empty(0, np.int64)
            seqs, counts = np.unique(seqs, return_counts=True)
            if len(self._postings) >= _TERMS_KEPT:
                self._postings.clear()
            found = self._postings[term] = (seqs, counts.astype(np.float64))
        return found

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
