"""The SQLite store's in-RAM matrix: exact top rows, ties, deleted rows, and one row's score
the same however many rows are scored with it (the score-first filter check relies on it)."""

from __future__ import annotations

import numpy as np

from memkit.stores._matrix import Matrix, products, top_positions


def _matrix(rows: int, seed: int = 7) -> Matrix:
    rng = np.random.default_rng(seed)
    matrix = Matrix(16)
    matrix.load(np.arange(10, 10 + rows, dtype=np.int64),
                rng.standard_normal((rows, 16)).astype(np.float32), ())
    return matrix


def test_top_rows_are_those_of_a_full_sort() -> None:
    matrix = _matrix(500)
    query = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    query /= np.linalg.norm(query)
    seqs, sims = matrix.top(query, 25)
    exact = matrix.vectors[: matrix.size] @ query
    order = np.argsort(-exact, kind="stable")[:25]
    assert seqs.tolist() == matrix.seqs[order].tolist()
    assert np.allclose(sims, exact[order], atol=1e-6)


def test_equal_scores_keep_the_first_positions_and_k_is_bounded() -> None:
    sims = np.array([0.5, 0.9, 0.5, 0.5, -np.inf, 0.1], np.float32)
    assert top_positions(sims, 3).tolist() == [1, 0, 2]
    assert top_positions(sims, 1).tolist() == [1]
    assert top_positions(sims, 10).tolist() == [1, 0, 2, 3, 5, 4]
    assert top_positions(sims, 0).tolist() == []


def test_deleted_rows_are_never_returned() -> None:
    matrix = _matrix(50)
    query = matrix.vectors[3].copy()
    matrix.remove(np.array([13], np.int64))  # the row equal to the query
    seqs, _ = matrix.top(query, 50)
    assert 13 not in seqs.tolist()
    assert len(seqs) == 49


def test_a_rows_score_does_not_depend_on_the_rows_scored_with_it() -> None:
    matrix = _matrix(3000)
    rows = matrix.vectors[: matrix.size]
    query = rows[42].copy()
    every = products(rows, query)
    some = np.arange(0, 3000, 7)
    assert np.array_equal(products(rows[some], query), every[some])
    assert every.dtype == np.float32 and every.shape == (3000,)
