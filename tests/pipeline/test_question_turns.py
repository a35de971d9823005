"""A memory that asks ranks a little below one that tells (``search.question_penalty``)."""

from __future__ import annotations

import pytest

from memkit._pipeline.search.questions import asks
from tests.pipeline.conftest import MakeMemory

TELLS = "Nate adopted a turtle named Tilly"
ASKS = "Nate adopted a turtle named Tilly?"  # the same words: the same vector, the same keywords


def _scores(make_memory: MakeMemory, mode: str, **search: float) -> dict[str, float]:
    m = make_memory(config={"search": search} if search else None)
    if mode != "vector" and not m.memory.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    m.add([TELLS, ASKS, "Joanna wrote a screenplay"], user_id="u", infer=False)
    return {r.memory: r.score for r in m.search("turtle Tilly", user_id="u", mode=mode).results}


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_memory_that_asks_is_lowered_by_the_penalty(make_memory: MakeMemory, mode: str) -> None:
    default = _scores(make_memory, mode)
    assert default[TELLS] - default[ASKS] == pytest.approx(0.02)
    assert max(default, key=default.__getitem__) == TELLS
    off = _scores(make_memory, mode, question_penalty=0.0)
    assert off[TELLS] == off[ASKS]
    assert off[TELLS] == default[TELLS]  # a memory that tells keeps its score
    sharper = _scores(make_memory, mode, question_penalty=0.1)
    assert sharper[TELLS] - sharper[ASKS] == pytest.approx(0.1)


def test_keyword_search_keeps_the_stores_scores(make_memory: MakeMemory) -> None:
    assert (_scores(make_memory, "keyword")
            == _scores(make_memory, "keyword", question_penalty=0.0))


def test_the_answer_in_a_dialogue_ranks_above_the_question(make_memory: MakeMemory) -> None:
    turns = [("Joanna", "Did you get a new turtle for your tank?"),
             ("Nate", "Yes, a new turtle! She loves the tank."),
             ("Joanna", "I wrote a new screenplay.")]

    def first(**search: float) -> str:
        m = make_memory(config={"search": search})
        m.add([{"role": "user", "name": n, "content": c} for n, c in turns], user_id="d",
              infer=False)
        return str(m.search("Did Nate get a new turtle?", user_id="d", mode="vector")
                   .results[0].memory)

    assert first(question_penalty=0.0) == turns[0][1]  # the question shares more words
    assert first() == turns[1][1]


@pytest.mark.parametrize(("text", "asking"), [
    ("What game was it?", True),
    ("Nate: Is that your third one?  ", True),
    ('She asked "why?"', True),
    ("Did you see it? It was great.", False),  # asks, then tells
    ("Is that it? and shared a photo of a cake", False),
    ("I wonder why", False),
    ("", False),
])
def test_asks_is_whether_the_text_ends_in_a_question(text: str, asking: bool) -> None:
    assert asks(text) is asking
