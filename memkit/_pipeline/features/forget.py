"""Forgetting, as flows: what a purge, a hard delete, a soft delete and a reset do beyond
the records.

A purge (and a hard delete, the purge of one version chain) removes the texts everywhere
memkit wrote them: the records (past versions too, and so the keyword index), their
history rows and the ``CONSOLIDATE`` rows that name them, the logged searches that
returned them (the history sees to a search that read them before and logs itself after:
:mod:`memkit.history._searches`), and in the graph their ids on the relations, the relations they alone
supported and the entities left with no relation.
Purging a whole scope (no filter) also deletes that scope's graph, history and search
log outright. What was purged leaves one ``PURGE`` history row per record, holding no
text: an audit sees what went, when, and by whom (``actor_id``). The derived data goes first and the records
last, so a purge interrupted half-way finds the same records again and finishes.
Afterwards each engine is asked to scrub its files (:class:`Scrub`).

A soft delete (``delete``, ``delete_all``, ``prune``) ends a memory's validity, and
closes (``RELATION_CLOSE``) the open relations no current memory supports any more
(:mod:`memkit._pipeline.features.graph_writes`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from memkit._filters import Filter, all_of
from memkit._models import DeleteResult, HistoryRecord
from memkit._pipeline.effects import (
    Flow,
    ForgetGraphScope,
    ForgetHistory,
    ForgetMemories,
    ForgetScope,
    ListRecords,
    ResetGraph,
    ResetHistory,
    ResetStore,
    Scrub,
    ask,
)
from memkit._pipeline.features.graph import GraphSettings
from memkit._pipeline.features.graph_writes import apply_with_validity, validity_work
from memkit._pipeline.features.lifecycle import Lifecycle, confidence_of, flush_flow
from memkit._pipeline.features.outbox import forget_pending_flow
from memkit._pipeline.inputs import Scope
from memkit._pipeline.write.apply import Applied, scan, scope_key, transaction
from memkit._pipeline.write.versions import end, valid_at
from memkit._time import to_datetime
from memkit.stores.base import Record, WriteBatch

_PAGE = 1000


class Scoped(Protocol):
    """A record or a memory item: an id and the scope it was written in."""

    @property
    def id(self) -> str: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def run_id(self) -> str | None: ...


def purge_row(item: Scoped, now: str, actor_id: str | None) -> HistoryRecord:
    """The trace a purged record leaves: no text, only that it went, when and by whom."""
    return HistoryRecord(id=str(uuid.uuid4()), memory_id=item.id, event="PURGE",
                         timestamp=to_datetime(now), is_deleted=True, user_id=item.user_id,
                         agent_id=item.agent_id, run_id=item.run_id, actor_id=actor_id)


def forget_flow(items: Sequence[Scoped], now: str, graph: bool,
                actor_id: str | None = None) -> Flow[None]:
    """Remove ``items`` (records or versions) for good, with everything derived from them."""
    ids = [item.id for item in items]
    derived = (yield from ask(ForgetMemories(ids))) if graph else []
    if graph:
        yield from forget_pending_flow(ids)
    yield from ask(ForgetHistory((*ids, *derived)))
    batch = WriteBatch(deletes=ids, history=[purge_row(item, now, actor_id) for item in items])
    yield from ask(transaction(batch))


def purge_flow(scope: Scope, filter: Filter | None, now: str, graph: bool,
               actor_id: str | None = None) -> Flow[int]:
    """Remove every record of the scope (matching ``filter``) for good: current memories,
    past versions and deleted ones. Without ``filter`` the scope's graph, history and
    search log go too. Returns how many records were removed."""
    selection = all_of(scope.filter(), filter)
    removed = 0
    while True:
        page, _ = yield from ask(ListRecords(selection, _PAGE, None))
        if not page:
            break
        yield from forget_flow(page, now, graph, actor_id)
        removed += len(page)
    if filter is None:
        fields = {k: v for k, v in (("user_id", scope.user_id), ("agent_id", scope.agent_id),
                                    ("run_id", scope.run_id)) if v is not None}
        if graph:
            yield from ask(ForgetGraphScope(tuple(fields.items())))
        yield from ask(ForgetScope(tuple(fields.items()), now))
    yield from ask(Scrub())
    return removed


def reset_flow(graph: bool, clock: Callable[[], str]) -> Flow[None]:
    """Every record, history row, logged search and (with a graph) entity and relation.
    ``clock`` is read once the records are gone: a search begun by then may have read
    them, so none of those is logged later."""
    yield from ask(ResetStore())
    yield from ask(ResetHistory(clock()))
    if graph:
        yield from ask(ResetGraph())
    yield from ask(Scrub())


def end_flow(batch: WriteBatch, ended: Sequence[Record], now: str,
             graph: GraphSettings | None) -> Flow[Applied]:
    """Apply ``batch``, which ends the validity of ``ended``, and close the open relations
    that no current memory supports any more: in the batch's transaction when the graph
    shares it, else right after it (through the outbox)."""
    works = validity_work(transaction(batch).key, now, ended=ended) if graph else []
    return (yield from apply_with_validity(batch, works, graph))


def prune_flow(selection: Filter | None, below: float, dry_run: bool, now: str,
               lifecycle: Lifecycle, graph: GraphSettings | None = None) -> Flow[DeleteResult]:
    """End the validity of current memories whose confidence at ``now`` is below ``below``
    (a DELETE event each; they stay readable as past versions; the relations they alone
    supported close). ``dry_run``: report only."""
    threshold = confidence_of(below, "below")
    yield from flush_flow(lifecycle)
    current = all_of(selection, valid_at(now, include_expired=True))
    weak = [r for r in (yield from scan(current)) if lifecycle.confidence(r, now) < threshold]
    events = [r.to_event("DELETE", old=r.memory) for r in weak]
    if dry_run or not weak:
        return DeleteResult(results=events)
    groups: dict[str, list[Record]] = {}
    for record in weak:
        key = scope_key(record)
        groups.setdefault("" if key is None else key.model_dump_json(), []).append(record)
    for records in groups.values():
        rows = [HistoryRecord(
            id=str(uuid.uuid4()), memory_id=r.id, event="DELETE", old_value=r.memory,
            timestamp=to_datetime(now), is_deleted=True, user_id=r.user_id, agent_id=r.agent_id,
            run_id=r.run_id) for r in records]
        yield from end_flow(WriteBatch(updates=[end(r, now) for r in records], history=rows,
                                       dedup_scope=scope_key(records[0])), records, now, graph)
    return DeleteResult(results=events)
