"""The direct operations on memories, as flows: get, list, update, delete, supersede,
history, revert (search: memkit._pipeline.search.flow; purge and reset:
memkit._pipeline.features.forget)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from memkit._errors import ConflictError, InvalidArgument, NotFoundError, StaleVersionError
from memkit._filters import Condition, Filter, Not, all_of
from memkit._models import (
    Change,
    DeleteResult,
    HistoryList,
    HistoryRecord,
    MemoryEvent,
    MemoryItem,
    SearchResult,
)
from memkit._pipeline.effects import (
    Embed,
    Flow,
    Get,
    ListRecords,
    ReadChanges,
    ReadEvent,
    ReadHistory,
    Scrub,
    ask,
)
from memkit._pipeline.features.forget import end_flow, forget_flow
from memkit._pipeline.features.graph import GraphSettings
from memkit._pipeline.features.graph_writes import apply_with_validity, validity_work
from memkit._pipeline.features.lifecycle import Lifecycle, note_flow
from memkit._pipeline.features.task_fields import STATUS_PREFIX, checked_update, status_change
from memkit._pipeline.inputs import (
    Scope,
    memory_id_of,
    text_hash,
    text_of,
    timestamp_of,
)
from memkit._pipeline.write.apply import (
    ChangedMeanwhile,
    apply,
    history_row,
    scope_key,
    transaction,
)
from memkit._pipeline.write.versions import (
    chain_flow,
    check_order,
    end,
    is_valid,
    revise,
    superseded_by,
    valid_at,
)
from memkit._time import after, to_iso, utcnow
from memkit.stores.base import Record, WriteBatch, hash_filter

T = TypeVar("T")


def get_flow(memory_id: str, now: str, lifecycle: Lifecycle | None = None,
             reinforce: bool = True) -> Flow[MemoryItem | None]:
    """The memory if it is valid ``now`` (past versions: :func:`versions.chain_flow`). With
    ``reinforce`` (and reinforcement on) the read is an access, as a search hit is."""
    checked = memory_id_of(memory_id)
    if checked is None:
        return None
    record: Record | None = yield from ask(Get(checked))
    if record is None or not is_valid(record, now):
        return None
    life = lifecycle or Lifecycle()
    item = record.to_item(confidence=life.confidence(record, now))
    if reinforce:
        yield from note_flow([record], now, life)
    return item


def get_all_flow(filter: Filter | None, limit: int, lifecycle: Lifecycle | None = None,
                 now: str | None = None, offset: int = 0) -> Flow[SearchResult]:
    """Newest first, from the ``offset``-th (the pages walk the store's cursor, so a page
    continues the one before it as long as the store does not change)."""
    cursor: str | None = None
    while offset:
        skipped, cursor = yield from ask(ListRecords(filter, min(offset, _SKIP), cursor,
                                                     "newest"))
        offset -= len(skipped)
        if cursor is None:
            return SearchResult()
    records, _ = yield from ask(ListRecords(filter, limit, cursor, "newest"))
    life, when = lifecycle or Lifecycle(), now or to_iso(utcnow())
    return SearchResult(results=[r.to_item(confidence=life.confidence(r, when))
                                 for r in records])


_SKIP = 1000  # records read per step while skipping to an offset


def current_flow(memory_id: str, now: str) -> Flow[Record]:
    """The memory with this id, valid ``now``."""
    checked = memory_id_of(memory_id)
    if checked is None:
        raise NotFoundError(f"no memory with id {memory_id!r}"[:300])
    record: Record | None = yield from ask(Get(checked))
    if record is None or not is_valid(record, now):
        raise NotFoundError(f"no memory with id {memory_id!r}")
    return record


#: how often an update or a delete is made again when another writer changed the memory
#: between its read and its write
_ATTEMPTS = 64
_END_OF_TIME = "9999-12-31T23:59:59.999999+00:00"


def unchanged(record: Record, now: str) -> Filter:
    """``record`` as it was read: same text, same last change, still valid (checked again
    inside the write's transaction, where no other writer of its scope runs)."""
    # not valid_at(now): another process's clock may run ahead of this one's
    ended = Condition(field="valid_to", operator="lte", value=_END_OF_TIME)
    same = all_of(scope_key(record), hash_filter(None, [record.hash]),
                  Condition(field="updated_at", operator="eq", value=record.updated_at),
                  Not(item=ended) if record.valid_to is None else
                  Condition(field="valid_to", operator="eq", value=record.valid_to))
    assert same is not None
    return same


def _following(memory_id: str, now: str) -> Flow[tuple[Record, str]]:
    """The current memory and the time to stamp its change with: never before its version
    began, whatever the clocks of the processes that wrote it (a memory another process
    deleted "later" is gone now). Its ``updated_at`` may run a microsecond or so past the
    clock (:func:`~memkit._time.after`): that orders versions, not validity."""
    checked = memory_id_of(memory_id)
    record: Record | None = None if checked is None else (yield from ask(Get(checked)))
    if record is None or not is_valid(record, max(now, record.updated_at)):
        raise NotFoundError(f"no memory with id {memory_id!r}"[:300])
    return record, max(now, record.valid_from or record.created_at)


def _again(make: Callable[[], Flow[T]]) -> Flow[T]:
    """Run the flow ``make()`` again while another writer changed its memory meanwhile: a
    concurrent update and delete of one memory apply one after the other, each on what
    the other left (or NotFoundError once it is gone), and no event is lost."""
    for attempt in range(_ATTEMPTS):
        try:
            return (yield from make())
        except ChangedMeanwhile:
            if attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def update_flow(memory_id: str, text: str | None, metadata: dict[str, object] | None,
                expires_at: str | None, now: str,
                lifecycle: dict[str, object] | None = None,
                if_updated_at: str | None = None) -> Flow[MemoryItem]:
    """The memory keeps its id with the new text; the old text stays as a past version.

    Without a new text only the other fields change, in place (no version, no history).
    With ``if_updated_at`` (the ``updated_at`` the caller read) a memory changed since
    raises StaleVersionError and nothing is written: the write requires the record as
    read, so a change committed after the check makes it read again and fail."""
    return (yield from _again(lambda: _update(memory_id, text, metadata, expires_at, now,
                                                lifecycle, if_updated_at)))


def _update(memory_id: str, text: str | None, metadata: dict[str, object] | None,
            expires_at: str | None, now: str,
            lifecycle: dict[str, object] | None, if_updated_at: str | None) -> Flow[MemoryItem]:
    if text is not None and not text_of(text, "the new text of a memory").strip():
        raise InvalidArgument("the new text of a memory must be a non-empty string")
    record, now = yield from _following(memory_id, now)
    if if_updated_at is not None and timestamp_of(record.updated_at) != if_updated_at:
        raise StaleVersionError(f"memory {record.id} changed since {if_updated_at} (it was "
                                f"updated at {record.updated_at}); nothing was changed")
    check_order(record, now)
    metadata = checked_update(record, metadata, lifecycle)
    if text is None:
        fields: dict[str, object] = {**(lifecycle or {})}
        if metadata:
            fields["metadata"] = {**record.metadata, **metadata}
        if expires_at is not None:
            fields["expires_at"] = expires_at
        changed = replace(record, updated_at=after(record.updated_at, now), vector=None,
                          **fields)  # type: ignore[arg-type]
        yield from apply(WriteBatch(updates=[changed], dedup_scope=scope_key(record),
                                    requires=unchanged(record, now)))
        return changed.to_item()
    vectors = yield from ask(Embed((text, record.memory)))
    changes: dict[str, object] = {"metadata": {**record.metadata, **(metadata or {})},
                                  **(lifecycle or {})}
    if expires_at is not None:
        changes["expires_at"] = expires_at
    updated, past = revise(record, text, now, vectors[0], vectors[1], **changes)
    history = [history_row(record, "UPDATE", record.memory, text, now)]
    yield from apply(WriteBatch(updates=[updated], versions=[past], history=history,
                                dedup_scope=scope_key(record), requires=unchanged(record, now)))
    return replace(updated, vector=None).to_item()


def delete_flow(memory_id: str, hard: bool, now: str, graph: GraphSettings | None = None,
                actor_id: str | None = None) -> Flow[None]:
    """End the memory's validity (and close the relations it alone supported); ``hard``
    removes it and its past versions for good (:func:`forget.forget_flow`)."""
    return (yield from _again(lambda: _delete(memory_id, hard, now, graph, actor_id)))


def _delete(memory_id: str, hard: bool, now: str, graph: GraphSettings | None,
            actor_id: str | None) -> Flow[None]:
    if hard:
        versions = yield from chain_flow(memory_id)
        if not versions:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        yield from forget_flow(versions, now, graph is not None, actor_id)
        yield from ask(Scrub())
        return
    record, now = yield from _following(memory_id, now)
    history = [history_row(record, "DELETE", record.memory, None, now).model_copy(
        update={"actor_id": actor_id})]
    yield from end_flow(WriteBatch(updates=[end(record, now)], history=history,
                                   dedup_scope=scope_key(record), requires=unchanged(record, now)),
                        [record], now, graph)


def delete_all_flow(scope: Scope, filter: Filter | None, now: str,
                    graph: GraphSettings | None = None) -> Flow[DeleteResult]:
    """End every current memory of the scope, in batches; one DELETE event per memory."""
    events: list[MemoryEvent] = []
    selection = all_of(scope.filter(), filter, valid_at(now, include_expired=True))
    while True:
        page, _ = yield from ask(ListRecords(selection, 1000, None))
        if not page:
            return DeleteResult(results=events)
        history = [history_row(r, "DELETE", r.memory, None, now) for r in page]
        yield from end_flow(WriteBatch(updates=[end(r, now) for r in page], history=history),
                            page, now, graph)
        events.extend(r.to_event("DELETE", old=r.memory) for r in page)


def supersede_flow(old_id: str, text: str, metadata: dict[str, object] | None,
                   expires_at: str | None, now: str,
                   graph: GraphSettings | None = None) -> Flow[MemoryItem]:
    """A new memory (new id) that replaces ``old_id``, which stays as a past version. The
    relations the old one supported move to the new one, as they stay with a memory that
    an update changes.

    A version is superseded once: a second supersede of it raises ConflictError.
    """
    if not text_of(text, "the text of a memory").strip():
        raise InvalidArgument("the text of a memory must be a non-empty string")
    checked = memory_id_of(old_id)
    if checked is None:
        raise NotFoundError(f"no memory with id {old_id!r}"[:300])
    old: Record | None = yield from ask(Get(checked))
    if old is None:
        raise NotFoundError(f"no memory with id {old_id!r}")
    if not is_valid(old, now):
        raise ConflictError(f"memory {old_id} is no longer valid (superseded, deleted or expired)"
                            "; only the current version can be superseded")
    check_order(old, now)
    vectors = yield from ask(Embed((text,)))
    new = replace(old, id=str(uuid.uuid4()), memory=text, hash=text_hash(text), created_at=now,
                  updated_at=now, valid_from=now, valid_to=None, supersedes=old.id,
                  metadata={**old.metadata, **(metadata or {})}, vector=vectors[0],
                  expires_at=expires_at if expires_at is not None else old.expires_at)
    history = [history_row(old, "UPDATE", old.memory, text, now),
               history_row(new, "ADD", None, text, now)]
    batch = WriteBatch(updates=[end(old, now)], versions=[new], history=history,
                       dedup_scope=scope_key(old), unless=superseded_by(old.id))
    works = validity_work(transaction(batch).key, now, moves=[(old, new.id)]) if graph else []
    yield from apply_with_validity(batch, works, graph)
    return replace(new, vector=None).to_item()


def history_flow(memory_id: str) -> Flow[HistoryList]:
    checked = memory_id_of(memory_id)
    if checked is None:
        return HistoryList()
    records: list[HistoryRecord] = yield from ask(ReadHistory(checked))
    return HistoryList(records)


def changes_flow(after: str | None, scope: Scope, limit: int) -> Flow[list[Change]]:
    """The changes of ``scope`` (memories', entities created, consolidations) committed
    after position ``after``, in commit order."""
    if after is not None and (not isinstance(after, str) or not 0 < len(after) <= 100):
        raise InvalidArgument(f"after must be a change's position or None, got {after!r}"[:300])
    fields = tuple((name, value) for name, value in (
        ("user_id", scope.user_id), ("agent_id", scope.agent_id), ("run_id", scope.run_id))
        if value is not None)
    changes: list[Change] = yield from ask(ReadChanges(after, fields, limit))
    return changes


def revert_flow(event_id: str, now: str) -> Flow[HistoryRecord]:
    """Undo one ADD, UPDATE or DELETE of the history; the undoing is an event of its own.

    The memory must still be as the event left it (revert later events first);
    an event is reverted once.
    """
    if not isinstance(event_id, str) or not event_id:
        raise NotFoundError(f"no history event with id {event_id!r}")
    event: HistoryRecord | None = yield from ask(ReadEvent(event_id))
    if event is None:
        raise NotFoundError(f"no history event with id {event_id!r}")
    if event.event == "NONE":
        raise InvalidArgument(f"event {event_id} changed nothing; there is nothing to revert")
    if event.event not in ("ADD", "UPDATE", "DELETE"):
        raise InvalidArgument(f"event {event_id} is a {event.event}, not a memory's ADD, "
                              "UPDATE or DELETE: it cannot be reverted")
    rows: list[HistoryRecord] = yield from ask(ReadHistory(event.memory_id))
    if any(r.reverts == event_id for r in rows):
        raise ConflictError(f"event {event_id} was already reverted")
    record: Record | None = yield from ask(Get(event.memory_id))
    if record is None:
        raise ConflictError(f"memory {event.memory_id} was removed for good")
    status = status_change(event.old_value, event.new_value) if event.event == "UPDATE" else None
    if status is not None and record.memory_type == "task":
        return (yield from _revert_status(event, record, status, now))
    ended = record.valid_to is not None
    expected = event.old_value if event.event == "DELETE" else event.new_value
    if record.memory != expected or ended != (event.event == "DELETE"):
        raise ConflictError(f"memory {record.id} changed after event {event_id}; "
                            "revert the later events first")
    # checked again inside the transaction, so that concurrent reverts of one event
    # cannot both apply: the memory's text must still be current (ADD, UPDATE), or the
    # deleted text must not be current again (DELETE)
    current_text = all_of(scope_key(record), hash_filter(None, [record.hash]),
                          valid_at(now, include_expired=True, begun=False))
    batch = WriteBatch(dedup_scope=scope_key(record))
    if event.event == "DELETE":
        batch.unless = current_text
    else:
        batch.requires = current_text
    if event.event == "ADD":
        batch.updates.append(end(record, now))
        row = history_row(record, "DELETE", record.memory, None, now)
    elif event.event == "UPDATE":
        check_order(record, now)
        old_text = event.old_value or ""
        vectors = yield from ask(Embed((old_text, record.memory)))
        updated, past = revise(record, old_text, now, vectors[0], vectors[1])
        batch.updates.append(updated)
        batch.versions.append(past)
        row = history_row(record, "UPDATE", record.memory, old_text, now)
    else:  # DELETE: the deleted interval stays a past version; the memory is valid again
        vectors = yield from ask(Embed((record.memory,)))
        past = replace(record, id=str(uuid.uuid4()), vector=vectors[0],
                       valid_from=record.valid_from or record.created_at)
        batch.versions.append(past)
        batch.updates.append(replace(record, valid_from=now, valid_to=None,
                                     updated_at=after(record.updated_at, now),
                                     supersedes=past.id, vector=None))
        row = history_row(record, "ADD", None, record.memory, now)
    row = row.model_copy(update={"reverts": event_id})
    batch.history.append(row)
    yield from apply(batch)
    return row


def _revert_status(event: HistoryRecord, record: Record, change: tuple[str, str],
                   now: str) -> Flow[HistoryRecord]:
    """Undo a task's status change: the old status back, in place."""
    before, then = change
    if record.metadata.get("status") != then or not is_valid(record, now):
        raise ConflictError(f"task {record.id} changed after event {event.id}; "
                            "revert the later events first")
    row = history_row(record, "UPDATE", STATUS_PREFIX + then, STATUS_PREFIX + before, now)
    row = row.model_copy(update={"reverts": event.id})
    changed = replace(record, updated_at=after(record.updated_at, now), vector=None,
                      metadata={**record.metadata, "status": before})
    yield from apply(WriteBatch(updates=[changed], history=[row], dedup_scope=scope_key(record)))
    return row
