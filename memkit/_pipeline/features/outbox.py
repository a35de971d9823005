"""The graph's outbox: graph work an add still owes, recorded with the add's own writes.

Where the graph does not share the store's transactions (a Bolt server, a graph in
another database), an add commits its memories and history first and writes the
graph after. So that a graph outage between the two loses nothing, the add's
transaction also records what the graph write will do (:class:`GraphWork`) as a
``GRAPH_PENDING`` history row under :data:`OUTBOX`; the row goes once the graph write
succeeds. Rows left by a failed graph write are replayed (:func:`repair_flow`) before
the next add writes the graph, at ``Memory.repair()``, and so by every door that
repairs. A replay does not count a relation mention twice: a mention whose relation
already holds every memory of the add is not upserted again.

A purge takes its memories out of the pending work (and drops work left with none),
so no pending row keeps a purged text.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memkit._models import HistoryRecord, MemoryEvent
from memkit._pipeline.effects import (
    AppendHistory,
    DiscardEvents,
    Flow,
    ReadHistory,
    ask,
)
from memkit._time import to_datetime
from memkit.graph.base import GraphScope, NewEntity, NewRelation
from memkit.stores.base import WriteBatch

OUTBOX = "memkit:graph-pending"
"""The ``memory_id`` of every pending graph work row in the history."""


@dataclass(frozen=True, slots=True)
class GraphWork:
    """What an add's graph write does, once its memories are written: which memories the
    relations come from (``linked``), which were updated and which deleted."""

    id: str
    key: str
    scope: GraphScope
    now: str
    threshold: float
    entities: tuple[NewEntity, ...]
    relations: tuple[NewRelation, ...]
    named: tuple[str, ...]
    linked: tuple[str, ...]
    updated: tuple[str, ...]
    gone: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([*(n for r in self.relations for n in (r.source, r.target)),
                                   *self.named]))

    @property
    def memory_ids(self) -> set[str]:
        return {*self.linked, *self.updated, *self.gone}

    def row(self) -> HistoryRecord:
        payload = {
            "key": self.key, "now": self.now, "threshold": self.threshold,
            "entities": [[e.name, e.type] for e in self.entities],
            "relations": [[r.source, r.type, r.target] for r in self.relations],
            "named": list(self.named), "linked": list(self.linked),
            "updated": list(self.updated), "gone": list(self.gone)}
        return HistoryRecord(
            id=self.id, memory_id=OUTBOX, event="GRAPH_PENDING", new_value=json.dumps(payload),
            timestamp=to_datetime(self.now), user_id=self.scope.user_id,
            agent_id=self.scope.agent_id, run_id=self.scope.run_id)

    @classmethod
    def of(cls, row: HistoryRecord) -> GraphWork:
        data = json.loads(row.new_value or "{}")
        return cls(
            row.id, data["key"], GraphScope(row.user_id, row.agent_id, row.run_id), data["now"],
            float(data["threshold"]), tuple(NewEntity(n, t) for n, t in data["entities"]),
            tuple(NewRelation(s, k, t) for s, k, t in data["relations"]),
            tuple(data["named"]), tuple(data["linked"]), tuple(data["updated"]),
            tuple(data["gone"]))


def targets(batch: WriteBatch, events: Sequence[MemoryEvent],
            winners: Sequence[tuple[str, str]]) -> tuple[tuple[str, ...], tuple[str, ...],
                                                          tuple[str, ...]]:
    """(linked, updated, gone) of an add: the memories its relations come from (those it
    wrote, the winners of its duplicates, else those it re-stated), those it updated,
    those it deleted. ``winners``: (skipped add, memory that won)."""
    won = dict(winners)
    written = [e.id for e in events if e.event in ("ADD", "UPDATE") and e.id not in won]
    written += list(won.values())
    linked = tuple(dict.fromkeys(written or [e.id for e in events if e.event == "NONE"]))
    updated = tuple(e.id for e in events if e.event == "UPDATE")
    gone = tuple(sorted({e.id for e in events if e.event == "DELETE"} | set(batch.deletes)))
    return linked, updated, gone


def new_work_id() -> str:
    return str(uuid.uuid4())


def pending_flow() -> Flow[list[GraphWork]]:
    """The graph work still owed, oldest first."""
    rows: list[HistoryRecord] = yield from ask(ReadHistory(OUTBOX))
    return [GraphWork.of(r) for r in rows if r.event == "GRAPH_PENDING"]


def done_flow(work_id: str) -> Flow[None]:
    yield from ask(DiscardEvents((work_id,)))


def forget_pending_flow(memory_ids: Sequence[str]) -> Flow[None]:
    """Take ``memory_ids`` out of the pending graph work: work left with no memory goes,
    the rest is rewritten without them."""
    purged = set(memory_ids)
    touched = [w for w in (yield from pending_flow()) if w.memory_ids & purged]
    if not touched:
        return
    kept = [replace(w, linked=tuple(i for i in w.linked if i not in purged),
                    updated=tuple(i for i in w.updated if i not in purged),
                    gone=tuple(i for i in w.gone if i not in purged)) for w in touched]
    yield from ask(DiscardEvents(tuple(w.id for w in touched)))
    rows = tuple(w.row() for w in kept if w.linked or w.gone)
    if rows:
        yield from ask(AppendHistory(rows))


