"""The keyword half of search looks for a query's content words only, on every store."""

from __future__ import annotations

import pytest

from memkit._pipeline.search.keywords import MIN_SAMPLE, distinctive, keyword_query, keyword_terms
from tests.pipeline.conftest import MakeMemory, Shell

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


@pytest.mark.every_store
def test_a_function_word_query_adds_no_keyword_evidence(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(QUICKSTART, user_id="alice", infer=False)
    vector = m.search("I", user_id="alice", mode="vector").results
    default = m.search("I", user_id="alice").results
    assert [(r.id, r.score) for r in default] == [(r.id, r.score) for r in vector]
    if m.memory.vector_store.supports_keyword:
        assert m.search("I", user_id="alice", mode="keyword").results == []
        assert m.search("what do I know about me?", user_id="alice", mode="keyword").results == []


@pytest.mark.every_store
def test_keyword_search_still_finds_content_words(make_memory: MakeMemory) -> None:
    m = make_memory()
    if not m.memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    m.add(QUICKSTART, user_id="alice", infer=False)
    found = m.search("What am I allergic to?", user_id="alice", mode="keyword").results
    assert [r.memory for r in found] == ["I'm vegetarian and allergic to peanuts."]


# A conversation's turns all name its speaker; only some are about chess.
TOPICS = ["cooking", "hiking", "painting", "music", "cycling", "gardening", "movies", "travel",
          "swimming", "reading", "coding", "dancing", "fishing", "baking", "running", "camping",
          "pottery", "karate", "surfing", "skiing", "yoga", "rowing", "climbing"]
TURNS = [f"Jon: I spent the weekend {topic}." for topic in TOPICS] + [
    "Jon: I won a chess tournament!", "Gina: chess is hard, well done."]
# Other users' memories, which make "Jon" rare in the store as a whole (as in a
# store of many conversations), so the keyword index alone thinks it telling.
OTHERS = [f"Ann: my {topic} class starts on day {day}." for topic in TOPICS for day in (1, 2, 3)]


def _jon_and_others(m: Shell) -> None:
    m.add(TURNS, user_id="jon", infer=False)
    m.add(OTHERS, user_id="ann", infer=False)


def test_distinctive_drops_words_most_candidates_share() -> None:
    texts = [f"Jon: topic {i}" for i in range(MIN_SAMPLE)] + ["Gina: chess"]
    assert distinctive(["jon", "chess"], texts, 0.25) == ["chess"]
    assert distinctive(["jon", "chess"], texts, 1.0) == ["jon", "chess"]
    assert distinctive(["jon", "chess"], texts[: MIN_SAMPLE - 1], 0.25) == ["jon", "chess"]


@pytest.mark.every_store
def test_hybrid_search_does_not_lift_memories_for_a_word_most_of_them_share(
    make_memory: MakeMemory,
) -> None:
    m = make_memory()
    if not m.memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    _jon_and_others(m)
    query = "Did Jon play chess?"
    vector = {r.id: r.score for r in m.search(query, user_id="jon", mode="vector").results}
    hybrid = m.search(query, user_id="jon").results
    assert {r.memory for r in hybrid[:2]} == set(TURNS[-2:])
    assert all(r.score > vector[r.id] for r in hybrid if "chess" in r.memory)
    assert all(r.score == vector[r.id] for r in hybrid if "chess" not in r.memory)


@pytest.mark.every_store
def test_common_word_share_of_one_looks_for_every_word(make_memory: MakeMemory) -> None:
    m = make_memory(config={"search": {"common_word_share": 1.0}})
    if not m.memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    _jon_and_others(m)
    query = "Did Jon play chess?"
    vector = {r.id: r.score for r in m.search(query, user_id="jon", mode="vector").results}
    lifted = [r for r in m.search(query, user_id="jon").results if r.score > vector[r.id]]
    assert any("chess" not in r.memory for r in lifted)
