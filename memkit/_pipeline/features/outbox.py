"""The graph's outbox: graph work a change still owes, recorded with the change's own writes.

Where the graph does not share the store's transactions (a Bolt server, a graph in
another database), a change commits its memories and history first and writes the
graph after. So that a graph outage between the two loses nothing, the change's
transaction also records what the graph write will do as a ``GRAPH_PENDING`` history
row under :data:`OUTBOX`: an add's relations (:class:`GraphWork`); the relations to
close when memories stop being valid (a delete, a prune), and to move from one memory
to another (a consolidation, a supersede) (:class:`ValidityWork`). The row goes in the
transaction that does the graph work's history, so two processes replaying the same row
do it once. Rows left by a failed graph write are replayed
(:func:`memkit._pipeline.features.graph_writes.repair_flow`) before the next change
writes the graph, at the first operation of a Memory, at ``Memory.repair()``, and so by
every door that repairs. A replay does again only what an earlier try did not.

A purge takes its memories out of the pending work (and drops work left with none),
so no pending row keeps a purged text.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from memkit._models import HistoryRecord, MemoryEvent
from memkit._pipeline.effects import (
    AppendHistory,
    DiscardEvents,
    Flow,
    ReadEvent,
    ReadHistory,
    WriteFlow,
    ask,
    ask_write,
)
from memkit._time import to_datetime
from memkit.graph.base import GraphScope, NewEntity, NewRelation
from memkit.stores.base import WriteBatch

OUTBOX = "memkit:graph-pending"
"""The ``memory_id`` of every pending graph work row in the history."""


def _row(work_id: str, scope: GraphScope, now: str, payload: dict[str, Any]) -> HistoryRecord:
    return HistoryRecord(
        id=work_id, memory_id=OUTBOX, event="GRAPH_PENDING", new_value=json.dumps(payload),
        timestamp=to_datetime(now), user_id=scope.user_id, agent_id=scope.agent_id,
        run_id=scope.run_id)


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

    def without(self, purged: set[str]) -> GraphWork | None:
        """This work without the memories ``purged``; None when nothing is left to do."""
        kept = replace(self, linked=tuple(i for i in self.linked if i not in purged),
                       updated=tuple(i for i in self.updated if i not in purged),
                       gone=tuple(i for i in self.gone if i not in purged))
        return kept if kept.linked or kept.gone else None

    def row(self) -> HistoryRecord:
        return _row(self.id, self.scope, self.now, {
            "key": self.key, "now": self.now, "threshold": self.threshold,
            "entities": [[e.name, e.type] for e in self.entities],
            "relations": [[r.source, r.type, r.target] for r in self.relations],
            "named": list(self.named), "linked": list(self.linked),
            "updated": list(self.updated), "gone": list(self.gone)})


@dataclass(frozen=True, slots=True)
class ValidityWork:
    """The graph work of memories whose validity changed in one scope: the relations
    that only ``ended`` memories supported close (a delete, a prune), and relations move
    from each ``(old, new)`` of ``moves`` to the new memory (a consolidation, a supersede)."""

    id: str
    key: str
    scope: GraphScope
    now: str
    ended: tuple[str, ...] = ()
    moves: tuple[tuple[str, str], ...] = ()

    @property
    def memory_ids(self) -> set[str]:
        return {*self.ended, *(i for move in self.moves for i in move)}

    def without(self, purged: set[str]) -> ValidityWork | None:
        kept = replace(self, ended=tuple(i for i in self.ended if i not in purged),
                       moves=tuple(m for m in self.moves if not purged & set(m)))
        return kept if kept.ended or kept.moves else None

    def row(self) -> HistoryRecord:
        return _row(self.id, self.scope, self.now, {
            "kind": "validity", "key": self.key, "now": self.now, "ended": list(self.ended),
            "moves": [list(m) for m in self.moves]})


Work: TypeAlias = GraphWork | ValidityWork


def work_of(row: HistoryRecord) -> Work:
    """The work a ``GRAPH_PENDING`` row records."""
    data = json.loads(row.new_value or "{}")
    scope = GraphScope(row.user_id, row.agent_id, row.run_id)
    if data.get("kind") == "validity":
        return ValidityWork(row.id, data["key"], scope, data["now"], tuple(data["ended"]),
                            tuple((old, new) for old, new in data["moves"]))
    return GraphWork(
        row.id, data["key"], scope, data["now"], float(data["threshold"]),
        tuple(NewEntity(n, t) for n, t in data["entities"]),
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


def pending_flow() -> Flow[list[Work]]:
    """The graph work still owed, oldest first."""
    rows: list[HistoryRecord] = yield from ask(ReadHistory(OUTBOX))
    return [work_of(r) for r in rows if r.event == "GRAPH_PENDING"]


def claim(work_id: str) -> WriteFlow[bool]:
    """Inside the transaction (its scope's lock held) that does the work: whether the work
    is still owed, i.e. no other process did it meanwhile."""
    row: HistoryRecord | None = yield from ask_write(ReadEvent(work_id))
    return row is not None


def settle(work_id: str) -> WriteFlow[None]:
    """The work is done: its row goes, in the transaction that did it."""
    yield DiscardEvents((work_id,))


def forget_pending_flow(memory_ids: Sequence[str]) -> Flow[None]:
    """Take ``memory_ids`` out of the pending graph work: work left with no memory goes,
    the rest is rewritten without them."""
    purged = set(memory_ids)
    touched = [w for w in (yield from pending_flow()) if w.memory_ids & purged]
    if not touched:
        return
    kept = [w.without(purged) for w in touched]
    yield from ask(DiscardEvents(tuple(w.id for w in touched)))
    rows = tuple(w.row() for w in kept if w is not None)
    if rows:
        yield from ask(AppendHistory(rows))
