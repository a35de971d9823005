"""Statistics of a scope's memories, read in one pass over its records."""

from __future__ import annotations

from collections import Counter

from memkit._filters import Filter
from memkit._models import MemoryStats, ScopeCount
from memkit._pipeline.effects import FindEntities, FindRelations, Flow, ask
from memkit._pipeline.features.lifecycle import Lifecycle, flush_flow
from memkit._pipeline.write.apply import scan
from memkit._pipeline.write.versions import is_valid
from memkit._time import to_datetime
from memkit.graph.base import GraphScope, Relation
from memkit.stores.base import Record

BINS = 10
MOST_ACCESSED = 10
TOP_ENTITIES = 10
LOW_CONFIDENCE = 0.05
"""Below this a current memory counts as ``low_confidence``: what ``prune()`` forgets by
default."""


def stats_flow(selection: Filter | None, now: str, lifecycle: Lifecycle,
               graph: bool = False) -> Flow[MemoryStats]:
    """Counts by type (current memories) and by state, growth per day, the confidence
    histogram (ten bins over [0, 1]), the most accessed memories and, with a ``graph``,
    the entities with the most open relations in the current memories' scopes."""
    yield from flush_flow(lifecycle)
    records: list[Record] = yield from scan(selection)
    replaced = {r.supersedes for r in records if r.supersedes is not None}
    states: Counter[str] = Counter()
    types: Counter[str] = Counter()
    scopes: Counter[tuple[str | None, str | None, str | None]] = Counter()
    growth: Counter[str] = Counter()
    histogram = [0] * BINS
    confidences: list[float] = []
    current: list[Record] = []
    for record in records:
        state = _state(record, now, replaced)
        states[state] += 1
        if state != "superseded":  # a past version is not a memory of its own
            growth[record.created_at[:10]] += 1
        if state == "current":
            current.append(record)
            types[record.memory_type or "untyped"] += 1
            scopes[(record.user_id, record.agent_id, record.run_id)] += 1
            confidence = lifecycle.confidence(record, now)
            confidences.append(confidence)
            histogram[min(BINS - 1, int(confidence * BINS))] += 1
    entities, relations, top = (yield from _graph_totals(current)) if graph else (0, 0, {})
    accessed = sorted((r for r in current if r.access_count),
                      key=lambda r: (-(r.access_count or 0), r.id))[:MOST_ACCESSED]
    return MemoryStats(
        memories=len(current), by_type=dict(types.most_common()),
        by_scope=[ScopeCount(user_id=u, agent_id=a, run_id=r, memories=n)
                  for (u, a, r), n in sorted(scopes.items(), key=_fullest)],
        by_state={s: states[s] for s in ("current", "superseded", "deleted", "expired",
                                         "future")},
        growth=dict(sorted(growth.items())), confidence_histogram=histogram,
        most_accessed=[r.to_item(confidence=lifecycle.confidence(r, now)) for r in accessed],
        top_entities=top, entities=entities, relations=relations,
        average_confidence=round(sum(confidences) / len(confidences), 6) if confidences
        else None,
        low_confidence=sum(1 for c in confidences if c < LOW_CONFIDENCE),
        oldest=min((to_datetime(r.created_at) for r in current), default=None),
        newest=max((to_datetime(r.created_at) for r in current), default=None),
        decay=lifecycle.decay)


def _fullest(item: tuple[tuple[str | None, ...], int]) -> tuple[int, tuple[str, ...]]:
    scope, count = item
    return -count, tuple(v or "" for v in scope)


def _graph_totals(current: list[Record]) -> Flow[tuple[int, int, dict[str, int]]]:
    """The entities, open relations and top entities of the current memories' scopes."""
    scopes = {GraphScope(r.user_id, r.agent_id, r.run_id) for r in current}
    degree: Counter[str] = Counter()
    entities = relations_open = 0
    for scope in sorted(scopes, key=lambda s: s.key):
        relations: list[Relation] = yield from ask(FindRelations(scope))
        relations_open += len(relations)
        for relation in relations:
            degree.update((relation.source, relation.target))
        entities += len((yield from ask(FindEntities(scope, limit=10_000_000))))
    top = sorted(degree.items(), key=lambda pair: (-pair[1], pair[0]))[:TOP_ENTITIES]
    return entities, relations_open, dict(top)


def _state(record: Record, now: str, replaced: set[str]) -> str:
    if record.valid_to is not None and record.valid_to <= now:
        return "superseded" if record.id in replaced else "deleted"
    if record.valid_from is not None and record.valid_from > now:
        return "future"
    if not is_valid(record, now):
        return "expired"
    return "current"
