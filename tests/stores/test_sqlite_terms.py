"""The terms the SQLite store's tokenizer makes of words (:class:`Terms`): each call sees only
its own words, also after a call that failed half-way, and the stemmer that answers for words
of ASCII letters makes FTS5's own term of each of them."""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest

import memkit
from memkit.stores._porter import stem
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


def _fts5_terms(words: list[str]) -> list[list[str]]:
    found = Terms()._tokens(words)  # FTS5's own tokenizer, word by word
    return [found.get(i, []) for i in range(len(words))]


def test_the_stemmer_makes_fts5s_term_of_every_word_of_letters() -> None:
    vocabulary = json.loads((Path(memkit.__file__).parent / "embeddings/minilm/tokenizer.json")
                            .read_text(encoding="utf-8"))["model"]["vocab"]
    words = sorted(w for w in vocabulary if re.fullmatch("[a-z]+", w))  # ~20k English words
    rng = random.Random(1)
    suffixes = ["s", "es", "ed", "ing", "ly", "ness", "ational", "tional", "ation", "ator",
                "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi",
                "bli", "alli", "entli", "eli", "ousli", "ization", "izer", "enci", "anci",
                "icate", "ative", "alize", "iciti", "ical", "ful", "al", "ance", "ence", "er",
                "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
                "ism", "ate", "iti", "ous", "ive", "ize", "eed", "y", "ies", "sses", "ss", "ll",
                "e", "ying", "yed", "ied", "at", "bl", "iz", "atting", "bbed", "zzed", "lled"]
    words += [w + s for w in rng.sample(words, 1500) for s in rng.sample(suffixes, 8)]
    words += ["".join(rng.choice("aeiouybcdlmnrstwxyz") for _ in range(rng.randint(1, 12)))
              for _ in range(8000)]
    words += ["".join(p) for p in itertools.product("aeybsdlz", repeat=3)]
    words += ["sses", "eed", "ing", "ies", "ed", "a" * 64 + "ing", "b" * 61 + "ing"]
    for start in range(0, len(words), 2000):
        chunk = words[start:start + 2000]
        assert [[stem(w)] for w in chunk] == _fts5_terms(chunk)


def test_words_of_letters_and_other_words_get_the_same_terms_as_from_fts5() -> None:
    words = ["Running", "DANCES", "Caroline", "it's", "2nd", "café", "naïve", "über", "x"]
    assert Terms()(words) == [t[0] if len(t) == 1 else None for t in _fts5_terms(words)]
