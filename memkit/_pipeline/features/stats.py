"""Statistics of a scope's memories, from one projection of the fields they read.

The store selects a few built-in fields of every matching record (``Project``: one
query on SQL stores, no text, metadata or vector); only the most accessed memories and
those that adds re-stated (``metadata["confirmations"]``) are read whole.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from memkit._filters import Condition, Filter, all_of
from memkit._models import MemoryStats, ScopeCount
from memkit._pipeline.effects import FindEntities, FindRelations, Flow, Get, Project, ask
from memkit._pipeline.features.lifecycle import Lifecycle, flush_flow
from memkit._pipeline.write.apply import CONFIRMATIONS, confirmations_of, scan
from memkit._pipeline.write.versions import valid_at
from memkit._time import to_datetime
from memkit.graph.base import GraphScope, Relation
from memkit.stores.base import Record

BINS = 10
MOST_ACCESSED = 10
TOP_ENTITIES = 10
LOW_CONFIDENCE = 0.05
"""Below this a current memory counts as ``low_confidence``: what ``prune()`` forgets by
default."""


FIELDS = ("id", "created_at", "updated_at", "user_id", "agent_id", "run_id", "valid_from",
          "valid_to", "expires_at", "supersedes", "memory_type", "confidence", "access_count",
          "last_accessed_at")
"""The fields of a record that the statistics read."""


def stats_flow(selection: Filter | None, now: str, lifecycle: Lifecycle,
               graph: bool = False) -> Flow[MemoryStats]:
    """Counts by type (current memories) and by state, growth per day, the confidence
    histogram (ten bins over [0, 1]), the most accessed memories and, with a ``graph``,
    the entities with the most open relations in the current memories' scopes."""
    yield from flush_flow(lifecycle)
    rows: list[tuple[Any, ...]] = yield from ask(Project(FIELDS, selection))
    replaced = {row[9] for row in rows if row[9] is not None}
    states: Counter[str] = Counter()
    types: Counter[str] = Counter()
    scopes: Counter[tuple[str | None, str | None, str | None]] = Counter()
    growth: Counter[str] = Counter()
    histogram = [0] * BINS
    confidences: list[float] = []
    accessed: list[tuple[int, str]] = []
    created: list[str] = []
    for (id, created_at, updated_at, user_id, agent_id, run_id, valid_from, valid_to,
         expires_at, _, memory_type, stored, access_count, last_accessed_at) in rows:
        if valid_to is not None and valid_to <= now:
            state = "superseded" if id in replaced else "deleted"
        elif valid_from is not None and valid_from > now:
            state = "future"
        elif expires_at is not None and expires_at <= now:
            state = "expired"
        else:
            state = "current"
        states[state] += 1
        if state != "superseded":  # a past version is not a memory of its own
            growth[created_at[:10]] += 1
        if state == "current":
            created.append(created_at)
            types[memory_type or "untyped"] += 1
            scopes[(user_id, agent_id, run_id)] += 1
            confidence = lifecycle.confidence_from(stored, memory_type,
                                                   last_accessed_at or updated_at, now)
            confidences.append(confidence)
            histogram[min(BINS - 1, int(confidence * BINS))] += 1
            if access_count:
                accessed.append((-access_count, id))
    entities, relations, top = (yield from _graph_totals(scopes)) if graph else (0, 0, {})
    # only the memories adds re-stated are read whole, for their metadata count
    confirmed: list[Record] = yield from scan(all_of(
        selection, valid_at(now), Condition(field=CONFIRMATIONS, operator="gte", value=1)))
    most_accessed: list[Record] = []
    for _, id in sorted(accessed)[:MOST_ACCESSED]:
        record = yield from ask(Get(id))
        if record is not None:  # unless deleted since the projection
            most_accessed.append(record)
    return MemoryStats(
        memories=states["current"], by_type=dict(types.most_common()),
        by_scope=[ScopeCount(user_id=u, agent_id=a, run_id=r, memories=n)
                  for (u, a, r), n in sorted(scopes.items(), key=_fullest)],
        by_state={s: states[s] for s in ("current", "superseded", "deleted", "expired",
                                         "future")},
        growth=dict(sorted(growth.items())), confidence_histogram=histogram,
        most_accessed=[r.to_item(confidence=lifecycle.confidence(r, now)) for r in most_accessed],
        top_entities=top, entities=entities, relations=relations,
        average_confidence=round(sum(confidences) / len(confidences), 6) if confidences
        else None,
        low_confidence=sum(1 for c in confidences if c < LOW_CONFIDENCE),
        # fixed-width ISO strings: they sort as time
        oldest=to_datetime(min(created)) if created else None,
        newest=to_datetime(max(created)) if created else None,
        confirmations=sum(confirmations_of(r) for r in confirmed),
        decay=lifecycle.decay)


def _fullest(item: tuple[tuple[str | None, ...], int]) -> tuple[int, tuple[str, ...]]:
    scope, count = item
    return -count, tuple(v or "" for v in scope)


def _graph_totals(scopes: Counter[tuple[str | None, str | None, str | None]],
                  ) -> Flow[tuple[int, int, dict[str, int]]]:
    """The entities, open relations and top entities of the current memories' scopes."""
    degree: Counter[str] = Counter()
    entities = relations_open = 0
    for scope in sorted((GraphScope(*s) for s in scopes), key=lambda s: s.key):
        relations: list[Relation] = yield from ask(FindRelations(scope))
        relations_open += len(relations)
        for relation in relations:
            degree.update((relation.source, relation.target))
        entities += len((yield from ask(FindEntities(scope, limit=10_000_000))))
    top = sorted(degree.items(), key=lambda pair: (-pair[1], pair[0]))[:TOP_ENTITIES]
    return entities, relations_open, dict(top)
