"""The terms the SQLite store's tokenizer makes of words (:class:`Terms`): each call sees only
its own words, also after a call that failed half-way."""

from __future__ import annotations

import pytest

from memkit.stores._sqlite_keywords import Terms


def test_each_word_gets_its_stemmed_term_call_after_call() -> None:
    terms = Terms()
    assert terms(["running", "Dances", "NASA"]) == ["run", "danc", "nasa"]
    assert terms(["paint", "running"]) == ["paint", "run"]  # nothing left from the first call
    assert terms(["red-hot", "!!"]) == [None, None]  # two terms, or none: FTS5 answers
    assert terms.counts(["run running ran", ""]) == [{"run": 2, "ran": 1}, {}]


def test_a_call_that_fails_half_way_leaves_nothing_behind() -> None:
    terms = Terms()
    with pytest.raises(Exception):  # noqa: B017 - sqlite3 cannot bind the object
        terms.counts(["leftover words", object()])  # type: ignore[list-item]
    assert terms.counts(["fresh"]) == [{"fresh": 1}]
