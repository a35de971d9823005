"""The one write path: a batch applied inside the store's transaction.

Duplicate detection lives here, once for every store: an add whose hash the
scope already holds (or that an earlier add of the batch holds) is skipped,
and so, with ``dedup_threshold`` configured, is an add whose vector is that
similar to one of them; the memory that won is reported, so concurrent adds
of one fact leave one memory. The reads and writes below run in one transaction of the store
(:meth:`memkit.stores.base.VectorStore.transaction`), the history rows too.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from memkit._errors import ConflictError
from memkit._filters import Filter, all_of
from memkit._models import HistoryRecord
from memkit._pipeline.effects import (
    AppendHistory,
    Delete,
    Flow,
    Insert,
    ListRecords,
    Search,
    Transaction,
    Update,
    WriteFlow,
    ask,
    ask_list,
    ask_write,
)
from memkit._pipeline.inputs import Scope
from memkit._pipeline.write.versions import valid_at
from memkit._time import to_datetime
from memkit.stores.base import Hit, Record, Vector, WriteBatch, cosine_to_score, hash_filter

_PAGE = 1000


class ChangedMeanwhile(ConflictError):
    """A batch's ``requires`` no longer holds: another writer changed what it was made from."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What a batch did: ``winners`` maps each skipped add's id to the memory that won."""

    winners: dict[str, Record] = field(default_factory=dict)


def apply(batch: WriteBatch) -> Flow[Applied]:
    """Apply ``batch`` in one transaction keyed by its scope."""
    if not writes(batch):
        return Applied()
    return (yield from ask(transaction(batch)))


def writes(batch: WriteBatch) -> bool:
    """Whether ``batch`` writes anything."""
    return bool(batch.adds or batch.updates or batch.deletes or batch.history or batch.versions
                or batch.confirms)


def transaction(batch: WriteBatch) -> Transaction[Applied]:
    """The effect that applies ``batch``."""
    key = "" if batch.dedup_scope is None else batch.dedup_scope.model_dump_json()
    return Transaction(key, apply_flow(batch))


def apply_flow(batch: WriteBatch) -> WriteFlow[Applied]:
    if batch.unless is not None:
        conflicts, _ = yield from ask_write(ListRecords(batch.unless, 1))
        if conflicts:
            raise ConflictError(f"conflicts with version {conflicts[0].id}")
    if batch.requires is not None:
        present, _ = yield from ask_write(ListRecords(batch.requires, 1))
        if not present:
            raise ChangedMeanwhile("what the change started from was changed by another writer")
    winners = yield from duplicates(batch)
    adds = tuple(r for r in [*batch.adds, *batch.versions] if r.id not in winners)
    if adds:
        yield Insert(adds)
    if batch.updates:
        yield Update(tuple(batch.updates))
    if batch.deletes:
        yield Delete(tuple(batch.deletes))
    rows = tuple(h for h in batch.history if h.memory_id not in winners)
    if rows:
        yield AppendHistory(rows)
    yield from _confirm(batch, winners)
    return Applied(winners)


CONFIRMATIONS = "confirmations"
"""The metadata key counting how often an add re-stated a memory (a NONE decision)."""


def _confirm(batch: WriteBatch, winners: dict[str, Record]) -> WriteFlow[None]:
    """One more confirmation on each memory the batch re-states, read again inside the
    transaction (a memory changed since it was shown keeps its change, without it)."""
    stated = {r.id: r for r in batch.confirms}
    if batch.confirm_duplicates:
        added = {r.id for r in batch.adds}
        stated.update({w.id: w for w in winners.values() if w.id not in added})
    if not stated:
        return
    current = None if batch.valid_at is None else valid_at(batch.valid_at, begun=False)
    hashes = hash_filter(batch.dedup_scope, sorted({r.hash for r in stated.values()}))
    found = yield from scan(all_of(hashes, current))
    updates = tuple(replace(r, vector=None, metadata={
        **r.metadata, CONFIRMATIONS: confirmations_of(r) + 1})
        for r in found if r.id in stated and r.hash == stated[r.id].hash)
    if updates:
        yield Update(updates)


def confirmations_of(record: Record) -> int:
    """How often adds re-stated ``record`` (a store may give JSON numbers back as floats;
    anything but a count is 0)."""
    value = record.metadata.get(CONFIRMATIONS)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0
    return int(value)


def duplicates(batch: WriteBatch) -> Generator[ListRecords | Search, object, dict[str, Record]]:
    """The adds of ``batch`` that are duplicates, each mapped to the memory that holds its
    text (or, with ``batch.near``, a text that close)."""
    winners: dict[str, Record] = {}
    if not batch.adds:
        return winners
    held: dict[str, Record] = {}
    hashes = hash_filter(batch.dedup_scope, sorted({r.hash for r in batch.adds}))
    current = None if batch.valid_at is None else valid_at(batch.valid_at, begun=False)
    for record in (yield from scan(all_of(hashes, current))):
        held.setdefault(record.hash, record)
    kept: list[Record] = []
    for record in batch.adds:
        if record.valid_to is not None:  # a past version (an import): never a duplicate
            continue
        if record.hash in held:
            winners[record.id] = held[record.hash]
            continue
        near = None if batch.near is None or record.vector is None else (
            yield from _nearest(record, kept, batch.near, all_of(batch.dedup_scope, current)))
        if near is not None:
            winners[record.id] = near
        else:
            held[record.hash] = record
            kept.append(record)
    return winners


def _nearest(record: Record, earlier: list[Record], cosine: float, where: Filter | None,
             ) -> Generator[Search, object, Record | None]:
    """The stored record (or earlier add of the batch) at least ``cosine`` similar to
    ``record``, the closest first; ``None`` when there is none."""
    assert record.vector is not None
    for other in earlier:
        if other.vector is not None and _cosine(other.vector, record.vector) >= cosine:
            return other
    hits = yield from _search(Search(record.vector, 1, where))
    if hits and hits[0].score >= cosine_to_score(cosine) - 1e-9:
        return hits[0].record
    return None


def _cosine(a: Vector, b: Vector) -> float:
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b)) / norms if norms else 0.0


def _search(effect: Search) -> Generator[Search, object, list[Hit]]:
    result = yield effect
    return cast(list[Hit], result)


def scan(filter: Filter | None) -> Generator[ListRecords, object, list[Record]]:
    """Every record matching ``filter``, in id order."""
    records: list[Record] = []
    cursor: str | None = None
    while True:
        page, cursor = yield from ask_list(ListRecords(filter, _PAGE, cursor))
        records.extend(page)
        if cursor is None:
            return records


def history_row(record: Record, event: str, old: str | None, new: str | None,
                 when: str) -> HistoryRecord:
    """The history row of ``event`` on ``record`` at ``when``."""
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=record.id, event=event,  # type: ignore[arg-type]
        old_value=old, new_value=new, timestamp=to_datetime(when), is_deleted=event == "DELETE",
        user_id=record.user_id, agent_id=record.agent_id, run_id=record.run_id,
    )


def scope_key(record: Record) -> Filter | None:
    """The transaction key of the record's scope (the one adds to that scope take)."""
    return Scope(record.user_id, record.agent_id, record.run_id).filter()
