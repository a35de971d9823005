"""Export and import as flows: memories with their ids, timestamps and history.

Import embeds the texts through the same ``Embed`` effect as ``add`` (so the
vectors are checked and normalised the same way) and writes through the one
apply flow: an id that already exists, or a text the scope already holds, is
skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from memkit._errors import InvalidArgument, MemkitError
from memkit._filters import Filter
from memkit._models import ExportedMemory, HistoryRecord, ImportResult
from memkit._pipeline.effects import Embed, Flow, Get, ReadHistory, ask
from memkit._pipeline.inputs import Scope, metadata_of, text_hash
from memkit._pipeline.write.apply import apply, scan
from memkit._time import to_datetime, to_iso, utcnow
from memkit.stores.base import Record, WriteBatch

BATCH = 64


def export_flow(filter: Filter | None) -> Flow[list[ExportedMemory]]:
    """Every record matching ``filter`` (past versions and deleted memories too) with its
    history, in id order."""
    exported: list[ExportedMemory] = []
    for record in (yield from scan(filter)):
        history: list[HistoryRecord] = yield from ask(ReadHistory(record.id))
        item = record.to_item().model_dump(exclude={"score"})
        exported.append(ExportedMemory(**item, history=history))
    return exported


def import_flow(rows: Iterable[ExportedMemory | Mapping[str, Any]]) -> Flow[ImportResult]:
    """Write memories as they are (ids, timestamps, history kept)."""
    result = ImportResult()
    chunk: list[tuple[Record, list[HistoryRecord]]] = []
    for number, row in enumerate(rows, start=1):
        try:
            record, history = _incoming(row)
        except (MemkitError, ValidationError, ValueError, TypeError) as exc:
            result.errors.append(f"memory {number}: {exc}")
            continue
        if (yield from ask(Get(record.id))) is not None or any(r.id == record.id for r, _ in chunk):
            result.skipped += 1
            continue
        chunk.append((record, history))
        if len(chunk) >= BATCH:
            yield from _write(chunk, result)
            chunk = []
    yield from _write(chunk, result)
    return result


def _write(chunk: list[tuple[Record, list[HistoryRecord]]], result: ImportResult) -> Flow[None]:
    if not chunk:
        return
    vectors = yield from ask(Embed(tuple(record.memory for record, _ in chunk)))
    groups: dict[Scope, list[tuple[Record, list[HistoryRecord]]]] = {}
    for (record, history), vector in zip(chunk, vectors, strict=True):
        record.vector = vector
        groups.setdefault(Scope(record.user_id, record.agent_id, record.run_id), []).append(
            (record, history))
    for scope, items in groups.items():
        batch = WriteBatch(adds=[r for r, _ in items], history=[h for _, hs in items for h in hs],
                           dedup_scope=scope.filter())
        applied = yield from apply(batch)
        result.imported += len(items) - len(applied.winners)
        result.skipped += len(applied.winners)


def _incoming(row: ExportedMemory | Mapping[str, Any]) -> tuple[Record, list[HistoryRecord]]:
    """A memory (memkit's export shape, or mem0's) as a record and its history."""
    data: Mapping[str, Any] = row.model_dump() if isinstance(row, ExportedMemory) else row
    if not isinstance(data, Mapping):
        raise InvalidArgument(f"expected a memory object, got {type(data).__name__}")
    text = data.get("memory", data.get("text", data.get("data")))
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument("a memory needs a non-empty 'memory' text")
    memory_id = str(data.get("id") or uuid.uuid4())
    scope = Scope.of(data.get("user_id"), data.get("agent_id"), data.get("run_id"))
    created = to_iso(data.get("created_at") or utcnow())
    updated = to_iso(data.get("updated_at") or created)
    valid_from, valid_to, expires_at = (None if data.get(k) is None else to_iso(data[k])
                                        for k in ("valid_from", "valid_to", "expires_at"))
    record = Record(id=memory_id, memory=text, hash=text_hash(text), created_at=created,
                    updated_at=updated, user_id=scope.user_id, agent_id=scope.agent_id,
                    run_id=scope.run_id, metadata=metadata_of(data.get("metadata")),
                    supersedes=None if data.get("supersedes") is None else str(data["supersedes"]),
                    valid_from=valid_from, valid_to=valid_to, expires_at=expires_at)
    rows = data.get("history")
    if isinstance(rows, list) and (rows or record.supersedes or record.valid_to):
        history = [HistoryRecord.model_validate({**dict(h), "memory_id": memory_id}) for h in rows]
    else:  # a mem0 export has no history: record the memory's creation
        history = [HistoryRecord(
            id=str(uuid.uuid4()), memory_id=memory_id, event="ADD", new_value=text,
            timestamp=to_datetime(created), user_id=scope.user_id, agent_id=scope.agent_id,
            run_id=scope.run_id)]
    return record, history
