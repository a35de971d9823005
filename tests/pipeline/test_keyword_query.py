"""The keyword half of search looks for a query's content words only, on every store."""

from __future__ import annotations

import pytest

from memkit._pipeline.keywords import keyword_query, keyword_terms
from tests.pipeline.conftest import MakeMemory

QUICKSTART = [
    "I'm vegetarian and allergic to peanuts.",
    "I work as a data engineer in Lisbon.",
    "On weekends I go bouldering.",
    "I think I should call my sister.",
]


@pytest.mark.parametrize(("query", "terms"), [
    ("I", []),
    ("What did I do?", []),
    ("When did Caroline go to the LGBTQ support group?", ["caroline", "go", "lgbtq", "support", "group"]),
    ("What is Melanie's favourite book?", ["melanie", "favourite", "book"]),
    ("What happened on 2023-05-07?", ["happened", "2023", "05", "07", "may", "7"]),
    ("Where was she on the 7th of Aug?", ["7", "august"]),
    ("May I ask what Will said to May?", ["ask", "will", "said", "may"]),
    ("Did they move to the US?", ["move", "us"]),
    ("peanuts peanuts Peanuts", ["peanuts"]),
])
def test_keyword_terms_keep_content_words_names_and_dates(query: str, terms: list[str]) -> None:
    assert keyword_terms(query) == terms


def test_keyword_query_is_none_without_content_words() -> None:
    assert keyword_query("  who am I? ") is None
    assert keyword_query("alice's hobbies") == "alice hobbies"


def test_a_function_word_query_adds_no_keyword_evidence(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(QUICKSTART, user_id="alice", infer=False)
    vector = m.search("I", user_id="alice", mode="vector").results
    default = m.search("I", user_id="alice").results
    assert [(r.id, r.score) for r in default] == [(r.id, r.score) for r in vector]
    if m.memory.vector_store.supports_keyword:
        assert m.search("I", user_id="alice", mode="keyword").results == []
        assert m.search("what do I know about me?", user_id="alice", mode="keyword").results == []


def test_keyword_search_still_finds_content_words(make_memory: MakeMemory) -> None:
    m = make_memory()
    if not m.memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    m.add(QUICKSTART, user_id="alice", infer=False)
    found = m.search("What am I allergic to?", user_id="alice", mode="keyword").results
    assert [r.memory for r in found] == ["I'm vegetarian and allergic to peanuts."]
