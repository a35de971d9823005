"""Memories over time: validity intervals and the version chain, as flows.

Every record carries event time: ``valid_from`` (when the fact became true)
and ``valid_to`` (when it stopped: superseded or deleted), and may carry
``expires_at``. A missing bound is open. An UPDATE keeps the memory's id for
the new text and moves the old text to a past version, a record of its own
(own id, vector and interval); ``supersedes`` links each version to the one it
replaced, so the chain is walked backwards through that field and forwards by
filtering on it. A DELETE ends validity; only a hard delete or a purge
removes records.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from memkit._errors import ConflictError, InvalidArgument
from memkit._filters import Condition, Filter, Not, all_of
from memkit._models import MemoryItem
from memkit._pipeline.effects import Flow, Get, ListRecords, ask
from memkit._pipeline.inputs import text_hash
from memkit._time import after
from memkit.stores.base import Record, Vector


def valid_at(when: str, *, include_expired: bool = False, begun: bool = True) -> Filter:
    """Records valid at ``when``: begun, not ended and (unless asked) not expired.

    ``begun=False`` also keeps records that begin later (duplicate detection: a
    concurrent add with a later timestamp holds the same fact).
    """
    conditions: list[Filter] = [
        Not(item=Condition(field="valid_to", operator="lte", value=when)),
    ]
    if begun:
        conditions.append(Not(item=Condition(field="valid_from", operator="gt", value=when)))
    if not include_expired:
        conditions.append(Not(item=Condition(field="expires_at", operator="lte", value=when)))
    combined = all_of(*conditions)
    assert combined is not None
    return combined


def is_valid(record: Record, when: str) -> bool:
    """:func:`valid_at` for one record in hand."""
    return ((record.valid_from is None or record.valid_from <= when)
            and (record.valid_to is None or record.valid_to > when)
            and (record.expires_at is None or record.expires_at > when))


def superseded_by(record_id: str) -> Filter:
    """The version that replaced ``record_id``."""
    return Condition(field="supersedes", operator="eq", value=record_id)


def revise(current: Record, text: str, when: str, vector: Vector | None,
           old_vector: Vector | None, **changes: object) -> tuple[Record, Record]:
    """An UPDATE at ``when``: (the memory with the new text, the past version it keeps).

    The memory keeps its id; the past version gets a new id, the old text, the
    old vector and the interval that ends at ``when``. The memory is valid from ``when``
    and stamped after its last change (:func:`~memkit._time.after`), even by a clock that
    has not passed it.
    """
    past = replace(current, id=str(uuid.uuid4()), valid_from=current.valid_from or current.created_at,
                   valid_to=when, vector=old_vector)
    updated = replace(current, memory=text, hash=text_hash(text),
                      updated_at=after(current.updated_at, when), valid_from=when,
                      supersedes=past.id, vector=vector, **changes)  # type: ignore[arg-type]
    return updated, past


def end(record: Record, when: str) -> Record:
    """A soft delete: the record as it is, valid until ``when``."""
    return replace(record, valid_to=when, updated_at=when, vector=None)


def check_order(record: Record, when: str) -> None:
    """A version cannot end before it began."""
    began = record.valid_from or record.created_at
    if when < began:
        raise InvalidArgument(f"memory {record.id} is valid from {began}; it cannot change at {when}")


def chain_flow(memory_id: str) -> Flow[list[MemoryItem]]:
    """Every version of the memory ``memory_id`` belongs to, oldest first."""
    record: Record | None = yield from ask(Get(memory_id))
    if record is None:
        return []
    older: list[Record] = []
    seen = {record.id}
    link = record.supersedes
    while link is not None and link not in seen:
        previous: Record | None = yield from ask(Get(link))
        if previous is None:
            break
        seen.add(previous.id)
        older.append(previous)
        link = previous.supersedes
    newer: list[Record] = []
    tip = record
    while True:
        page, _ = yield from ask(ListRecords(superseded_by(tip.id), 2))
        if not page or page[0].id in seen:
            break
        if len(page) > 1:
            raise ConflictError(f"version {tip.id} was superseded twice: {page[0].id}, {page[1].id}")
        tip = page[0]
        seen.add(tip.id)
        newer.append(tip)
    return [r.to_item() for r in [*reversed(older), record, *newer]]
