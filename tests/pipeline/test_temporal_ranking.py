"""A question about *when* prefers the memories that say when; other questions do not."""

from __future__ import annotations

import pytest

from memkit._pipeline.temporal import asks_when, mentions_time
from tests.pipeline.conftest import MakeMemory

UNDATED = "Caroline went to a support group"
DATED = "Caroline went to a support group yesterday"
OTHER = "Melanie paints sunsets"
SEVERAL = ["Caroline paints sunsets at the lake", "Melanie paints portraits", "John runs marathons",
           "Maria bakes bread", "Nate plays chess", "Gina sells clothes"]

# The ranking is the pipeline's, not a store's: two stores suffice.
two_stores = pytest.mark.parametrize("store_name", ["memory", "sqlite"])


def _ranked(make_memory: MakeMemory, query: str, memories: tuple[str, ...] = (UNDATED, DATED, OTHER),
            **search: float) -> list[tuple[str, float]]:
    m = make_memory(config={"search": search} if search else None)
    m.add(list(memories), user_id="u", infer=False)
    return [(r.memory, r.score) for r in m.search(query, user_id="u").results]


@two_stores
def test_a_when_question_ranks_the_dated_memory_first(make_memory: MakeMemory) -> None:
    query = "When did Caroline go to the support group?"
    assert _ranked(make_memory, query, temporal_weight=0.0)[0][0] == UNDATED  # fewer words
    assert _ranked(make_memory, query, temporal_weight=0.5)[0][0] == DATED


@two_stores
def test_other_questions_keep_their_scores(make_memory: MakeMemory) -> None:
    query = "Did Caroline go to the support group?"
    assert (_ranked(make_memory, query, temporal_weight=0.5)
            == _ranked(make_memory, query, temporal_weight=0.0))


@two_stores
def test_a_sharper_keyword_score_lifts_weak_matches_less(make_memory: MakeMemory) -> None:
    query = "paints sunsets lake"
    linear = dict(_ranked(make_memory, query, tuple(SEVERAL), keyword_exponent=1.0))
    sharp = dict(_ranked(make_memory, query, tuple(SEVERAL), keyword_exponent=3.0))
    best, partial = SEVERAL[:2]
    assert sharp[best] == linear[best]  # the best keyword match
    assert sharp[partial] < linear[partial]  # one word of three


@pytest.mark.parametrize(("query", "temporal"), [
    ("When did you move to Lisbon?", True),
    ("How long ago was her 18th birthday?", True),
    ("What year did they marry?", True),
    ("In which month did he start?", True),
    ("What did I do on 2023-05-07?", True),
    ("Where did you move?", False),
    ("What did Caroline paint?", False),
])
def test_asks_when(query: str, temporal: bool) -> None:
    assert asks_when(query) is temporal


@pytest.mark.parametrize(("text", "dated"), [
    ("I went to a support group yesterday", True),
    ("Last Fri I took my kids to a pottery workshop", True),
    ("We married in 2019", True),
    ("I'm going to a conference this month", True),
    ("We met three years ago", True),
    ("It was on 7 May", True),
    ("The support group was powerful", False),
    ("I may paint a sunset", False),
])
def test_mentions_time(text: str, dated: bool) -> None:
    assert mentions_time(text) is dated
