"""A question about *when* prefers the memories that say when; other questions do not."""

from __future__ import annotations

import pytest

from memkit._pipeline.search.temporal import (
    asks_when,
    mentions_time,
    named_day,
    named_month,
    named_period,
)
from tests.pipeline.conftest import MakeMemory

UNDATED = "Caroline went to a support group"
DATED = "Caroline went to a support group yesterday"
OTHER = "Melanie paints sunsets"
SEVERAL = ["Caroline paints sunsets at the lake", "Melanie paints portraits", "John runs marathons",
           "Maria bakes bread", "Nate plays chess", "Gina sells clothes"]

# The ranking is the pipeline's, not a store's: the two embedded stores suffice.


def _ranked(make_memory: MakeMemory, query: str, memories: tuple[str, ...] = (UNDATED, DATED, OTHER),
            **search: float) -> list[tuple[str, float]]:
    m = make_memory(config={"search": search} if search else None)
    m.add(list(memories), user_id="u", infer=False)
    return [(r.memory, r.score) for r in m.search(query, user_id="u").results]


def test_a_when_question_ranks_the_dated_memory_first(make_memory: MakeMemory) -> None:
    query = "When did Caroline go to the support group?"
    assert _ranked(make_memory, query, temporal_weight=0.0)[0][0] == UNDATED  # fewer words
    assert _ranked(make_memory, query, temporal_weight=0.5)[0][0] == DATED


def test_other_questions_keep_their_scores(make_memory: MakeMemory) -> None:
    query = "Did Caroline go to the support group?"
    assert (_ranked(make_memory, query, temporal_weight=0.5)
            == _ranked(make_memory, query, temporal_weight=0.0))


def test_a_sharper_keyword_score_lifts_weak_matches_less(make_memory: MakeMemory) -> None:
    query = "paints sunsets lake"
    linear = dict(_ranked(make_memory, query, tuple(SEVERAL), keyword_exponent=1.0))
    sharp = dict(_ranked(make_memory, query, tuple(SEVERAL), keyword_exponent=3.0))
    best, partial = SEVERAL[:2]
    assert sharp[best] == linear[best]  # the best keyword match
    assert sharp[partial] < linear[partial]  # one word of three


def _dated(make_memory: MakeMemory, query: str, weight: float) -> list[str]:
    """Two films Nate watched, on 6 October and on 20 November 2022: which ranks first."""
    m = make_memory(config={"search": {"temporal_weight": weight}})
    m.add(["Nate watched Little Women at home"], user_id="u", infer=False,
          timestamp="2022-10-06T19:00:00+00:00")
    m.add(["Nate watched Top Gun"], user_id="u", infer=False,
          timestamp="2022-11-20T19:00:00+00:00")
    m.add(["Joanna wrote a screenplay"], user_id="u", infer=False,
          timestamp="2022-10-06T19:05:00+00:00")
    return [r.memory for r in m.search(query, user_id="u", limit=2).results]


@pytest.mark.parametrize("query", [
    "What did Nate watch on October 6, 2022?",
    "What did Nate watch on 6 October, 2022?",
    "What did Nate watch on 2022-10-06?",
    "What did Nate watch in October 2022?",
    "What did Nate watch in October?",  # a month without its year: October of any year
    "What did Nate watch on Oct 6th?",  # a day without its year: 6 October of any year
    "What did Nate watch on the 7th of October?",  # one day either side
    "What did Nate watch on Oct. 6, 2022?",
])
def test_a_question_naming_a_day_or_month_ranks_that_periods_memories_first(
    make_memory: MakeMemory, query: str
) -> None:
    assert _dated(make_memory, query, 0.0)[0] == "Nate watched Top Gun"  # fewer words
    assert _dated(make_memory, query, 0.5)[0] == "Nate watched Little Women at home"


def test_a_question_naming_another_period_changes_nothing(make_memory: MakeMemory) -> None:
    for query in ("What did Nate watch in March 2021?", "What did Nate watch in March?",
                  "What did Nate watch on March 3rd?", "What did Nate watch?"):
        assert _dated(make_memory, query, 0.5) == _dated(make_memory, query, 0.0)


@pytest.mark.parametrize(("query", "period"), [
    ("on October 6, 2022", ("2022-10-05", "2022-10-08")),
    ("on the 6th of October 2022", ("2022-10-05", "2022-10-08")),
    ("Oct 2022 or October 2022", ("2022-10-01", "2022-11-01")),
    ("in December 2023", ("2023-12-01", "2024-01-01")),
    ("2024-02-29", ("2024-02-28", "2024-03-02")),
    ("on 31 February, 2023", None),  # no such day
    ("2023-13-01", None),
    ("in December 9999", None),  # past the last representable year
    ("in 2023", None),  # a year alone is not a period here
    ("on October 6", None),  # nor a day without its year
    ("on Dec 1,2023", ("2023-11-30", "2023-12-03")),
    ("Sept. 3rd, 2023", ("2023-09-02", "2023-09-05")),
    ("in Aug 2023", ("2023-08-01", "2023-09-01")),
])
def test_named_period(query: str, period: tuple[str, str] | None) -> None:
    found = named_period(query)
    assert (None if found is None else tuple(d.date().isoformat() for d in found)) == period


@pytest.mark.parametrize(("query", "month"), [
    ("Which outdoor spot did Joanna visit in May?", 5),
    ("Which country was Tim visiting in the second week of November?", 11),
    ("What did he cook Last December?", 12),
    ("This may help", None),  # a verb, not a month
    ("in may", None),  # months are written with a capital
    ("in May 2022", None),  # a month with its year is a named period
    ("on October 6", None),
])
def test_named_month(query: str, month: int | None) -> None:
    assert named_month(query) == month


@pytest.mark.parametrize(("query", "day"), [
    ("What did his teammates give him when they met on Aug 15th?", (8, 15)),
    ("on the 6th of October", (10, 6)),
    ("What did Maria do on May 2?", (5, 2)),
    ("on Feb 29", (2, 29)),  # a day of leap years
    ("on 31 February", None),  # no such day
    ("on October 6, 2022", None),  # with its year: a named period
    ("I read 3 novels in 12 days", None),
    ("you may 2x it", None),  # a verb, not a month
])
def test_named_day(query: str, day: tuple[int, int] | None) -> None:
    assert named_day(query) == day


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
