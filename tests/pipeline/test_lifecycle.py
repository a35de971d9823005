"""The memory lifecycle through Memory and AsyncMemory, on every store: memory types and
importance, confidence decay and reinforcement (seed 000 §10.3), pruning. Time comes from
a clock the test moves; nothing sleeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memkit import MEMORY_TYPES, MemkitError
from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, Shell

START = datetime(2025, 3, 1, 12, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, days: float) -> None:
        self.now += timedelta(days=days)


def decaying(make_memory: MakeMemory, clock: Clock, **lifecycle: Any) -> Shell:
    config = {"lifecycle": {"decay": True, "default_half_life_days": 30, **lifecycle}}
    return make_memory(config=config, clock=clock)


# -- types and importance ----------------------------------------------------------------


def test_builtin_types_include_task_for_notes_and_tasks() -> None:
    assert "task" in MEMORY_TYPES and "preference" in MEMORY_TYPES and len(MEMORY_TYPES) == 9


def test_caller_sets_type_and_importance_and_filters_on_them(make_memory: MakeMemory) -> None:
    m = make_memory()
    pref = m.add("User prefers tea", user_id="u", infer=False, memory_type="Preference",
                 importance=0.9).results[0]
    m.add("User asked about trains", user_id="u", infer=False, memory_type="my-own-kind",
          importance=0.2)
    item = m.get(pref.id)
    assert item is not None and item.memory_type == "preference" and item.importance == 0.9
    found = m.search("tea trains", user_id="u", filters={"memory_type": "preference"})
    assert [r.id for r in found.results] == [pref.id]
    heavy = m.get_all(user_id="u", filters={"importance": {"gte": 0.5}})
    assert [r.memory for r in heavy.results] == ["User prefers tea"]
    own = m.get_all(user_id="u", filters={"memory_type": {"in": ["my-own-kind"]}})
    assert [r.memory for r in own.results] == ["User asked about trains"]


@pytest.mark.parametrize("bad", [{"importance": 1.5}, {"importance": True},
                                 {"importance": float("nan")}, {"memory_type": ""},
                                 {"memory_type": "a\nb"}, {"memory_type": "x" * 65}])
def test_hostile_caller_values_are_refused(make_memory: MakeMemory, bad: dict[str, Any]) -> None:
    m = make_memory()
    with pytest.raises(MemkitError):
        m.add("User likes tea", user_id="u", infer=False, **bad)
    assert m.get_all(user_id="u").results == []


def test_extraction_answer_sets_type_and_importance(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([{"facts": [
        {"text": "User is vegetarian", "type": "preference", "importance": 0.8},
        {"text": "User decided to use Postgres", "type": "decision", "importance": 0.6},
    ]}])
    m = make_memory(llm)
    result = m.add("I'm vegetarian, and we go with Postgres", user_id="u")
    assert result.errors == []
    items = {r.memory: r for r in m.get_all(user_id="u").results}
    assert items["User is vegetarian"].memory_type == "preference"
    assert items["User is vegetarian"].importance == 0.8
    assert items["User decided to use Postgres"].memory_type == "decision"


def test_hostile_extraction_attributes_are_reported_and_the_fact_kept(
        make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([{"facts": [
        {"text": "User likes jazz", "type": "preference", "importance": 7},
        {"text": "User owns a bike", "type": {"drop": "table"}, "importance": 0.4},
    ]}])
    m = make_memory(llm)
    result = m.add("jazz and bikes", user_id="u")
    assert {e.stage for e in result.errors} == {"validation"}
    assert len(result.errors) == 2 and "importance" in result.errors[0].message
    items = {r.memory: r for r in m.get_all(user_id="u").results}
    assert items["User likes jazz"].importance is None
    assert items["User likes jazz"].memory_type == "preference"
    assert items["User owns a bike"].memory_type is None and items["User owns a bike"].importance == 0.4


def test_caller_values_win_over_extraction(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([{"facts": [{"text": "User likes jazz", "type": "preference",
                                   "importance": 0.3}]}])
    m = make_memory(llm)
    m.add("jazz", user_id="u", importance=1.0)
    (item,) = m.get_all(user_id="u").results
    assert item.importance == 1.0 and item.memory_type == "preference"


def test_update_sets_type_and_importance(make_memory: MakeMemory) -> None:
    m = make_memory()
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    changed = m.update(added.id, importance=0.7, memory_type="task")
    assert changed.memory == "User likes tea" and changed.importance == 0.7
    assert len(m.versions(added.id)) == 1  # no new version for the attributes alone
    rewritten = m.update(added.id, "User loves tea", importance=0.2)
    assert rewritten.memory_type == "task" and rewritten.importance == 0.2
    assert [v.importance for v in m.versions(added.id)] == [0.7, 0.2]


# -- seed 000 §10.3: decay and reinforcement ------------------------------------------------


def test_seed000_10_3_confidence_is_1_at_creation(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock)
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    item = m.get(added.id)
    assert item is not None and item.confidence == 1.0


def test_seed000_10_3_confidence_about_half_after_30_days(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock)
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    clock.advance(30)
    item = m.get(added.id)
    assert item is not None and item.confidence == pytest.approx(0.5, abs=0.01)


def test_seed000_10_3_confidence_about_quarter_after_60_days(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock)
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    clock.advance(60)
    (hit,) = m.search("tea", user_id="u").results
    assert hit.id == added.id and hit.confidence == pytest.approx(0.25, abs=0.01)


def test_seed000_10_3_reinforced_memory_outlives_unreinforced(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, flush_every=1)
    used = m.add("User likes green tea", user_id="u", infer=False).results[0]
    idle = m.add("User owns a red bicycle", user_id="u", infer=False).results[0]
    clock.advance(20)
    (hit,) = m.search("green tea", user_id="u", filters={"memory_type": {"ne": "x"}},
                      limit=1).results
    assert hit.id == used.id
    clock.advance(40)
    reinforced, plain = m.get(used.id, reinforce=False), m.get(idle.id, reinforce=False)
    assert reinforced is not None and plain is not None
    assert plain.confidence == pytest.approx(0.25, abs=0.01)
    assert reinforced.confidence > plain.confidence
    assert reinforced.access_count == 1 and plain.access_count == 0
    pruned = m.prune(below=0.27)
    assert [e.id for e in pruned.results] == [idle.id]


def test_decay_reranks_search_and_can_be_switched_off(make_memory: MakeMemory) -> None:
    clock = Clock()
    texts = ("User drinks tea every morning at home", "User drinks tea")
    for decay in (False, True):
        m = make_memory(config={"lifecycle": {"decay": decay, "reinforce": False}}, clock=clock)
        old = m.add(texts[1], user_id="u", infer=False).results[0]
        clock.advance(90)
        new = m.add(texts[0], user_id="u", infer=False).results[0]
        ranked = [r.id for r in m.search("drinks tea", user_id="u").results]
        assert ranked == ([new.id, old.id] if decay else [old.id, new.id])
        if decay:
            scores = {r.id: r for r in m.search("drinks tea", user_id="u").results}
            assert scores[old.id].confidence == pytest.approx(0.125, abs=0.01)
        clock.now = START


def test_min_confidence_drops_faded_memories(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, reinforce=False)
    m.add("User likes tea", user_id="u", infer=False)
    clock.advance(45)
    fresh = m.add("User likes tea with milk", user_id="u", infer=False).results[0]
    found = m.search("tea", user_id="u", min_confidence=0.5).results
    assert [r.id for r in found] == [fresh.id]
    with pytest.raises(MemkitError):
        m.search("tea", user_id="u", min_confidence=2)


def test_half_life_per_type_is_configurable_and_some_never_decay(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, half_life_days={"observation": 1, "preference": None})
    seen = m.add("User wore a hat", user_id="u", infer=False, memory_type="observation")
    liked = m.add("User likes hats", user_id="u", infer=False, memory_type="preference")
    fact = m.add("User was born in Oslo", user_id="u", infer=False, memory_type="fact")
    clock.advance(365)
    assert m.get(liked.results[0].id).confidence == 1.0  # type: ignore[union-attr]
    assert m.get(fact.results[0].id).confidence == 1.0  # type: ignore[union-attr]
    clock.now = START + timedelta(days=2)
    assert m.get(seen.results[0].id).confidence == pytest.approx(0.25)  # type: ignore[union-attr]


def test_reinforcement_is_buffered_not_written_per_search(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock)  # flush_every=64
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    for _ in range(3):
        clock.advance(1)
        assert [r.id for r in m.search("tea", user_id="u").results] == [added.id]
    assert m.get(added.id, reinforce=False).access_count == 0  # type: ignore[union-attr]
    m.prune(dry_run=True)  # writes what is buffered first
    item = m.get(added.id, reinforce=False)
    assert item is not None and item.access_count == 3
    assert item.last_accessed_at == START + timedelta(days=3)


def test_get_reinforces_like_a_search_hit_unless_told_not_to(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, flush_every=1)
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    clock.advance(30)
    looked = m.get(added.id, reinforce=False)
    assert looked is not None and looked.confidence == pytest.approx(0.5)
    read = m.get(added.id)  # the caller's read: an access, written (flush_every=1)
    assert read is not None and read.access_count == 0 and read.confidence == pytest.approx(0.5)
    after = m.get(added.id, reinforce=False)
    assert after is not None and after.access_count == 1
    assert after.confidence == pytest.approx(0.6) and after.last_accessed_at == clock.now
    plain = make_memory(config={"lifecycle": {"reinforce": False, "flush_every": 1}})
    kept = plain.add("User likes tea", user_id="u", infer=False).results[0]
    plain.get(kept.id)
    assert plain.get(kept.id).access_count == 0  # type: ignore[union-attr]


@pytest.mark.every_store
def test_reinforcement_caps_at_one_and_keeps_concurrent_changes(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, flush_every=2)
    added = m.add("User likes tea", user_id="u", infer=False).results[0]
    m.search("tea", user_id="u")
    m.update(added.id, importance=0.5)  # between the access and its write
    m.add("User likes coffee", user_id="u", infer=False)
    m.search("likes", user_id="u")  # two memories buffered: written now
    item = m.get(added.id)
    assert item is not None and item.confidence == 1.0 and item.access_count == 2
    assert item.importance == 0.5


@pytest.mark.every_store
def test_prune_dry_run_changes_nothing_and_prune_keeps_versions(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, reinforce=False)
    faded = m.add("User liked kites", user_id="u", infer=False).results[0]
    clock.advance(150)
    kept = m.add("User likes boats", user_id="u", infer=False).results[0]
    report = m.prune(user_id="u")
    assert [e.id for e in report.results] == [faded.id] and report.results[0].event == "DELETE"
    assert m.get(faded.id) is not None
    done = m.prune(user_id="u", dry_run=False)
    assert done.count == 1
    assert m.get(faded.id) is None and m.get(kept.id) is not None
    assert [v.memory for v in m.versions(faded.id)] == ["User liked kites"]
    assert [h.event for h in m.history(faded.id)] == ["ADD", "DELETE"]


def test_replayed_conversation_decay_and_reinforcement_rerank(make_memory: MakeMemory) -> None:
    """Scores are relevance x confidence: a memory the user keeps coming back to rises above
    one left alone, though decay off ranks by relevance alone."""
    runs: dict[bool, dict[str, Any]] = {}
    for decay in (False, True):
        clock = Clock()
        m = decaying(make_memory, clock, decay=decay, reinforce=True, flush_every=1)
        for text in ("User drinks black coffee at work", "User drinks green tea at home"):
            m.add(text, user_id="u", infer=False)
        for day in (5, 10, 15, 20, 25):  # the user asks about tea now and then
            clock.now = START + timedelta(days=day)
            m.search("green tea at home", user_id="u", limit=1, mode="vector")
        clock.now = START + timedelta(days=30)
        found = m.search("User drinks coffee", user_id="u", mode="vector").results
        runs[decay] = {r.memory.split()[2]: r for r in found}  # "black" or "green"
        clock.now = START
    tea, coffee = "green", "black"
    off, on = runs[False], runs[True]
    assert on[coffee].confidence == pytest.approx(0.5, abs=0.01)  # never accessed: 30 days
    assert on[tea].confidence == pytest.approx(0.86, abs=0.01) and on[tea].access_count == 5
    for drink in (tea, coffee):  # relevance x effective confidence
        assert on[drink].score == pytest.approx(off[drink].score * on[drink].confidence, abs=1e-4)
    assert list(off) == [coffee, tea]  # by relevance: the query names coffee
    assert list(on) == [tea, coffee]  # relevance x confidence: tea was kept fresh
    assert off[tea].confidence == off[coffee].confidence == 1.0


def test_an_add_and_an_update_set_where_the_confidence_starts(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([{"facts": ["User might like jazz"]}]))
    [guess] = m.add("maybe jazz?", user_id="u", confidence=0.4).results  # inferred
    [plain] = m.add("User likes tea", user_id="u", infer=False).results
    [sure] = m.add("User is vegan", user_id="u", infer=False, confidence=0.9).results
    assert [m.get(e.id).confidence for e in (guess, plain, sure)] == [0.4, 1.0, 0.9]
    assert m.update(plain.id, confidence=0.6).confidence == 0.6  # in place
    assert m.update(sure.id, "User is vegetarian", confidence=0.7).confidence == 0.7
    found = m.search("jazz", user_id="u", min_confidence=0.5).results
    assert guess.id not in [i.id for i in found]
    for bad in (1.5, -0.1, "high"):
        with pytest.raises(MemkitError, match="confidence"):
            m.add("x", user_id="u", infer=False, confidence=bad)
