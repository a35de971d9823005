"""Memory.stats through Memory and AsyncMemory, on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.pipeline.conftest import MakeMemory

pytestmark = pytest.mark.every_store


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 3, 1, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_stats_count_types_states_growth_confidence_and_accesses(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = make_memory(config={"lifecycle": {"decay": True, "flush_every": 100}}, clock=clock)
    tea = m.add("User likes tea", user_id="u", infer=False, memory_type="preference").results[0]
    m.add("User fixed the build", user_id="u", infer=False, memory_type="error")
    clock.now += timedelta(days=1)
    gone = m.add("User owns a kite", user_id="u", infer=False).results[0]
    m.update(tea.id, "User likes green tea")
    m.delete(gone.id)
    m.add("User is on holiday", user_id="u", infer=False,
          expires_at=clock.now + timedelta(hours=1))
    m.add("Someone else", user_id="other", infer=False)
    for _ in range(2):
        m.search("green tea", user_id="u", limit=1)
    clock.now += timedelta(days=30)

    stats = m.stats(user_id="u")
    assert stats.memories == 2 and stats.decay
    assert stats.by_type == {"preference": 1, "error": 1}
    assert stats.by_state == {"current": 2, "superseded": 1, "deleted": 1, "expired": 1,
                              "future": 0}
    assert stats.growth == {"2025-03-01": 2, "2025-03-02": 2}
    assert sum(stats.confidence_histogram) == 2
    assert stats.confidence_histogram[4] == 1  # the error: 31 days, half-life 30 -> 0.49
    assert [(i.id, i.access_count) for i in stats.most_accessed] == [(tea.id, 2)]
    assert [(s.user_id, s.memories) for s in stats.by_scope] == [("u", 2)]
    assert stats.oldest == datetime(2025, 3, 1, 12, tzinfo=UTC)  # the error
    assert stats.newest == datetime(2025, 3, 1, 12, tzinfo=UTC)  # tea keeps its creation
    assert stats.low_confidence == 0 and stats.average_confidence is not None
    assert 0.49 < stats.average_confidence < 1.0  # tea (reinforced, slow) and the error (0.49)
    assert (stats.entities, stats.relations) == (0, 0)  # no graph store
    clock.now += timedelta(days=200)  # the error's confidence falls below 0.05
    assert m.stats(user_id="u").low_confidence == 1
    whole = m.stats()  # the whole store
    assert whole.memories == 3
    assert [(s.user_id, s.agent_id, s.memories) for s in whole.by_scope] == [
        ("u", None, 2), ("other", None, 1)]
