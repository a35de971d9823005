"""Consolidation: clusters of near-duplicate memories merged into one, per scope.

Two current memories of one scope are near-duplicates when their texts' vectors
have a cosine similarity of at least ``threshold`` and their words overlap
(Jaccard) by at least :data:`WORD_OVERLAP`; a cluster is a connected group of
them. Each cluster is merged into its member of highest confidence (then
importance, accesses, age): the keeper gets the union of the members' metadata
(lists united, its own values first), the highest importance and the summed
access counts. The others end (a DELETE event each) and are spliced into the
keeper's version chain, so ``versions`` of any of them lists the keeper and every
merged memory with their own past versions; nothing is removed. Each scope that had
clusters gets one ``CONSOLIDATE`` history row, in the transaction of its last merge
(:func:`consolidated`): the change feed's ``consolidation_complete``.

With a graph store, the relations that came from a merged memory come from its
keeper afterwards (in the same transaction where the graph shares the store's
file or database, right after it through the outbox on a Bolt server), so graph search still
reaches the merged facts through the memory that holds them.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memkit._errors import InvalidArgument
from memkit._filters import Filter, all_of
from memkit._models import AddResult, ConsolidationCluster, ConsolidationResult, HistoryRecord
from memkit._pipeline.effects import CountAdds, Embed, Flow, Get, ask
from memkit._pipeline.features.graph import GraphSettings
from memkit._pipeline.features.graph_writes import apply_with_validity, validity_work
from memkit._pipeline.features.lifecycle import Lifecycle, flush_flow, scope_key
from memkit._pipeline.write.apply import scan, transaction
from memkit._pipeline.write.versions import end, valid_at
from memkit._time import after, to_datetime
from memkit.stores.base import Record, WriteBatch

WORD_OVERLAP = 0.5
_BLOCK = 1024
_WORD = re.compile(r"\w+")


def consolidate_flow(selection: Filter | None, threshold: float, dry_run: bool, now: str,
                     lifecycle: Lifecycle,
                     graph: GraphSettings | None = None) -> Flow[ConsolidationResult]:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not (
            0.0 < threshold <= 1.0):
        raise InvalidArgument(f"threshold must be a number in (0, 1], got {threshold!r}"[:300])
    yield from flush_flow(lifecycle)
    records: list[Record] = yield from scan(all_of(selection, valid_at(now)))
    scopes: dict[str, list[Record]] = {}
    for record in records:
        key = scope_key(record)
        scopes.setdefault("" if key is None else key.model_dump_json(), []).append(record)
    result = ConsolidationResult(dry_run=dry_run, examined=len(records))
    run = str(uuid.uuid4())
    for members in scopes.values():
        if len(members) < 2:
            continue
        vectors = yield from ask(Embed(tuple(r.memory for r in members)))
        merges = [merge([members[i] for i in group], lifecycle, now)
                  for group in clusters([r.memory for r in members], vectors, float(threshold))]
        result.clusters += [ConsolidationCluster(
            keeper=keeper.to_item(confidence=lifecycle.confidence(keeper, now)),
            merged=[r.to_item(confidence=lifecycle.confidence(r, now)) for r in merged])
            for keeper, merged in merges]
        if dry_run or not merges:
            continue
        summary = consolidated(run, result.examined, merges, now)
        for index, (keeper, merged) in enumerate(merges):
            yield from _write(keeper, merged, now, graph,
                              summary if index == len(merges) - 1 else None)
    return result


def consolidated(run: str, examined: int, merges: Sequence[tuple[Record, list[Record]]],
                 now: str) -> HistoryRecord:
    """The ``CONSOLIDATE`` row of one scope's merges in the run ``run`` (its ``memory_id``):
    how many memories the run examined, the scope's clusters, each keeper's id with the
    ids merged into it."""
    keeper = merges[0][0]
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=run, event="CONSOLIDATE", new_value=json.dumps({
            "examined": examined, "clusters": len(merges),
            "merged": {k.id: [m.id for m in merged] for k, merged in merges}}),
        timestamp=to_datetime(now), user_id=keeper.user_id, agent_id=keeper.agent_id,
        run_id=keeper.run_id)


def clusters(texts: Sequence[str], vectors: Any, threshold: float) -> list[list[int]]:
    """Groups (of at least two indices, in order) of near-duplicate texts."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    words = [set(_WORD.findall(t.casefold())) for t in texts]
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, len(texts), _BLOCK):
        sims = matrix[start:start + _BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + row
            if col <= i or root(i) == root(col):
                continue
            union = words[i] | words[col]
            if union and len(words[i] & words[col]) / len(union) >= WORD_OVERLAP:
                parent[root(col)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(texts)):
        groups.setdefault(root(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def merge(cluster: list[Record], lifecycle: Lifecycle, now: str) -> tuple[Record, list[Record]]:
    """(the keeper with the cluster's fields united, the others)."""
    ranked = sorted(cluster, key=lambda r: (-lifecycle.confidence(r, now), -(r.importance or 0.0),
                                            -(r.access_count or 0), r.created_at, r.id))
    keeper, others = ranked[0], ranked[1:]
    metadata = dict(keeper.metadata)
    for other in others:
        for key, value in other.metadata.items():
            if key not in metadata:
                metadata[key] = value
            elif isinstance(metadata[key], list) and isinstance(value, list):
                metadata[key] = [*metadata[key], *(v for v in value if v not in metadata[key])]
    importances = [r.importance for r in cluster if r.importance is not None]
    accesses = sum(r.access_count or 0 for r in cluster)
    united = replace(keeper, metadata=metadata, updated_at=after(keeper.updated_at, now),
                     importance=max(importances) if importances else None,
                     access_count=accesses or keeper.access_count, vector=None)
    return united, others


def _write(keeper: Record, merged: list[Record], now: str, graph: GraphSettings | None,
           summary: HistoryRecord | None) -> Flow[None]:
    """End the merged memories and splice their version chains in behind the keeper's;
    re-point the graph's relations from them to the keeper; record ``summary`` too."""
    changes: dict[str, Record] = {keeper.id: keeper}
    link_to = keeper  # whose ``supersedes`` points at the next merged chain
    for other in merged:
        oldest = yield from _oldest(other, changes)
        tail = changes.get(link_to.id, link_to)
        after = tail.supersedes
        changes[tail.id] = replace(tail, supersedes=other.id, vector=None)
        ended = changes.get(other.id, end(other, now))
        if ended.valid_to is None:
            ended = end(ended, now)
        changes[other.id] = ended
        base = changes.get(oldest.id, oldest)
        changes[oldest.id] = replace(base, supersedes=after, vector=None)
        link_to = changes[oldest.id]
    history = [HistoryRecord(
        id=str(uuid.uuid4()), memory_id=r.id, event="DELETE", old_value=r.memory,
        new_value=None, timestamp=to_datetime(now), is_deleted=True, user_id=r.user_id,
        agent_id=r.agent_id, run_id=r.run_id) for r in merged]
    if summary is not None:
        history.append(summary)
    batch = WriteBatch(updates=list(changes.values()), history=history,
                       dedup_scope=scope_key(keeper))
    works = validity_work(transaction(batch).key, now, moves=[(r, keeper.id) for r in merged]
                          ) if graph else []
    yield from apply_with_validity(batch, works, graph)


def _oldest(record: Record, changes: dict[str, Record]) -> Flow[Record]:
    """The first version of ``record``'s chain (itself when it has none)."""
    seen = {record.id}
    current = record
    while current.supersedes is not None and current.supersedes not in seen:
        previous: Record | None = changes.get(current.supersedes)
        if previous is None:
            previous = yield from ask(Get(current.supersedes))
        if previous is None:
            break
        seen.add(previous.id)
        current = previous
    return current


def auto_flow(added: Flow[AddResult], scope: Filter | None, every: int | None,
              threshold: float, now: str, lifecycle: Lifecycle,
              graph: GraphSettings | None = None) -> Flow[AddResult]:
    """Run ``added`` (an add), then consolidate its scope when every ``every`` adds to it
    have written ``every`` memories."""
    result = yield from added
    written = sum(1 for e in result.results if e.event == "ADD")
    if every is None or not written:
        return result
    key = "" if scope is None else scope.model_dump_json()
    due: bool = yield from ask(CountAdds(key, written, every))
    if due:
        report = yield from consolidate_flow(scope, threshold, False, now, lifecycle, graph)
        return result.model_copy(update={"consolidation": report})
    return result
