"""Turns stored verbatim from a dialogue are indexed with their neighbours; text is unchanged."""

from __future__ import annotations

import pytest

from tests.pipeline.conftest import MakeMemory

QUESTION = "How was the pottery workshop in Lisbon last weekend?"
REPLY = "It was amazing, I made a bowl!"


def _reply_score(m: object, user_id: str) -> float:
    results = m.search(QUESTION, user_id=user_id, mode="vector").results  # type: ignore[attr-defined]
    return next(r.score for r in results if r.memory == REPLY)


def test_a_reply_is_found_by_the_turn_it_answers(make_memory: MakeMemory) -> None:
    m = make_memory()
    turns = [("Caroline", QUESTION), ("Melanie", REPLY), ("Caroline", "Did you paint it?")]
    m.add([{"role": "user", "name": n, "content": c} for n, c in turns], user_id="dialogue",
          infer=False)
    m.add([{"role": "user", "content": c} for _, c in turns], user_id="facts", infer=False)
    assert _reply_score(m, "dialogue") > _reply_score(m, "facts")
    stored = {i.memory for i in m.get_all(user_id="dialogue").results}
    assert stored == {c for _, c in turns}  # what get returns is the turn itself


def test_a_list_of_one_speakers_facts_keeps_plain_vectors(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(["User likes Python", REPLY], user_id="together", infer=False)
    m.add(REPLY, user_id="alone", infer=False)
    assert _reply_score(m, "together") == _reply_score(m, "alone")


def _pottery_dialogue(m: object, user_id: str) -> None:
    turns = [("Caroline", "I went to a pottery workshop in Lisbon last weekend."),
             ("Melanie", REPLY), ("Caroline", "My cat knocked over a vase."),
             ("Melanie", "Oh no, was it an old one?"), ("Caroline", "No, I bought it in May.")]
    m.add([{"role": "user", "name": n, "content": c} for n, c in turns],  # type: ignore[attr-defined]
          user_id=user_id, infer=False)


def test_each_turn_names_the_turn_before_it(make_memory: MakeMemory) -> None:
    m = make_memory()
    _pottery_dialogue(m, "dialogue")
    m.add(["User likes Python", REPLY], user_id="facts", infer=False)
    by_text = {i.memory: i for i in m.get_all(user_id="dialogue").results}
    first = by_text["I went to a pottery workshop in Lisbon last weekend."]
    assert "previous_turn" not in first.metadata
    assert by_text[REPLY].metadata["previous_turn"] == first.id
    assert by_text["My cat knocked over a vase."].metadata["previous_turn"] == by_text[REPLY].id
    assert all("previous_turn" not in i.metadata for i in m.get_all(user_id="facts").results)


def _pottery_scores(make_memory: MakeMemory, *searches: dict[str, float]) -> list[dict[str, float]]:
    """Each turn's hybrid score for "pottery workshop", once per ``search`` config."""
    memories = [make_memory(config={"search": search}) for search in searches]
    if not memories[0].memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    scores = []
    for m in memories:
        _pottery_dialogue(m, "d")
        results = m.search("pottery workshop", user_id="d").results
        scores.append({r.memory: r.score for r in results})
    return scores


def test_hybrid_search_lends_a_reply_its_questions_keywords(make_memory: MakeMemory) -> None:
    scores = _pottery_scores(make_memory, {}, {"context_share": 0.0})
    assert scores[0][REPLY] > scores[1][REPLY]  # the turn before it holds the words
    # a turn with no linked neighbour among the keyword hits keeps its score
    assert scores[0]["No, I bought it in May."] == scores[1]["No, I bought it in May."]


def test_the_keyword_context_reaches_context_turns_either_side(make_memory: MakeMemory) -> None:
    default, two, one = _pottery_scores(make_memory, {}, {"context_turns": 2},
                                        {"context_turns": 1})
    # two turns after the one with the words: lent to with two turns, not with one
    assert two["My cat knocked over a vase."] > one["My cat knocked over a vase."]
    # three turns after: lent to by default (three turns), not with two
    assert default["Oh no, was it an old one?"] > two["Oh no, was it an old one?"]
    assert two["Oh no, was it an old one?"] == one["Oh no, was it an old one?"]
    assert default["No, I bought it in May."] == one["No, I bought it in May."]  # four after
