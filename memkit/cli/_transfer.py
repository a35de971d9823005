"""Export and import: memories with their ids, timestamps and history, as JSONL.

One line per memory: the ``MemoryItem`` JSON shape (without ``score``) plus
``history``, the memory's history records, oldest first. Import also reads a
mem0 ``get_all`` export (``{"results": [...]}`` or a bare list).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memkit._errors import MemkitError
from memkit._filters import Filter
from memkit._memory import Memory
from memkit._models import HistoryRecord
from memkit._pipeline.inputs import Scope, metadata_of, text_hash
from memkit._time import to_iso, utcnow
from memkit.history.base import HistoryStore
from memkit.stores.base import Record, WriteBatch

BATCH = 64


def _history(memory: Memory) -> HistoryStore:
    # The runtime's history store: Memory has no public accessor for it yet.
    return memory._runtime.history


def _open(memory: Memory) -> None:
    memory.vector_store.open(memory.embedder.dimension, memory.embedder.model_name)


def iter_records(memory: Memory, scope_filter: Filter | None = None) -> Iterator[Record]:
    """Every record (matching ``scope_filter``), in id order."""
    _open(memory)
    cursor: str | None = None
    while True:
        page, cursor = memory.vector_store.list(scope_filter, limit=1000, cursor=cursor)
        yield from page
        if cursor is None:
            return


def export_lines(memory: Memory, scope_filter: Filter | None = None) -> Iterator[str]:
    for record in iter_records(memory, scope_filter):
        row = record.to_item().model_dump(mode="json", exclude={"score"})
        row["history"] = [h.model_dump(mode="json") for h in memory.history(record.id)]
        yield json.dumps(row, ensure_ascii=False)


@dataclass(slots=True)
class Incoming:
    record: Record
    history: list[HistoryRecord]


@dataclass(slots=True)
class ImportReport:
    imported: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


def parse_export(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The memory objects of a memkit JSONL export or a mem0 JSON export, and parse errors."""
    stripped = text.strip()
    if not stripped:
        return [], []
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("results"), list):
        return [r for r in whole["results"] if isinstance(r, dict)], []
    if isinstance(whole, list):
        return [r for r in whole if isinstance(r, dict)], []
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not JSON ({exc})")
            continue
        if isinstance(value, dict):
            rows.append(value)
        else:
            errors.append(f"line {number}: expected an object")
    return rows, errors


def to_incoming(row: dict[str, Any]) -> Incoming:
    """A memory object (memkit or mem0 shape) as a record and its history."""
    text = row.get("memory", row.get("text", row.get("data")))
    if not isinstance(text, str) or not text.strip():
        raise MemkitError("a memory needs a non-empty 'memory' text")
    memory_id = str(row.get("id") or uuid.uuid4())
    scope = Scope.of(row.get("user_id"), row.get("agent_id"), row.get("run_id"))
    created = to_iso(row.get("created_at") or utcnow())
    updated = to_iso(row.get("updated_at") or created)
    record = Record(id=memory_id, memory=text, hash=text_hash(text), created_at=created,
                    updated_at=updated, user_id=scope.user_id, agent_id=scope.agent_id,
                    run_id=scope.run_id, metadata=metadata_of(row.get("metadata")))
    rows = row.get("history")
    if isinstance(rows, list) and rows:
        history = [HistoryRecord.model_validate({**h, "memory_id": memory_id}) for h in rows]
    else:  # a mem0 export has no history: record the memory's creation
        history = [HistoryRecord(
            id=str(uuid.uuid4()), memory_id=memory_id, event="ADD", new_value=text,
            timestamp=created, user_id=scope.user_id, agent_id=scope.agent_id,  # type: ignore[arg-type]
            run_id=scope.run_id)]
    return Incoming(record, history)


def import_rows(
    memory: Memory, rows: Iterable[dict[str, Any]],
    advance: Callable[[int], None] = lambda n: None,
) -> ImportReport:
    """Write the rows as they are: ids, timestamps and history kept. An id that already
    exists, or a text already stored in the same scope, is skipped."""
    _open(memory)
    report = ImportReport()
    chunk: list[Incoming] = []

    def flush() -> None:
        if not chunk:
            return
        vectors = memory.embedder.embed([c.record.memory for c in chunk])
        groups: dict[Scope, list[Incoming]] = {}
        for incoming, vector in zip(chunk, vectors, strict=True):
            incoming.record.vector = vector
            rec = incoming.record
            groups.setdefault(Scope(rec.user_id, rec.agent_id, rec.run_id), []).append(incoming)
        for scope, items in groups.items():
            batch = WriteBatch(adds=[i.record for i in items],
                               history=[h for i in items for h in i.history],
                               dedup_scope=scope.filter())
            skipped = memory.vector_store.apply(batch, _history(memory))
            report.imported += len(items) - len(skipped)
            report.skipped += len(skipped)
        advance(len(chunk))
        chunk.clear()

    for number, row in enumerate(rows, start=1):
        try:
            incoming = to_incoming(row)
        except (MemkitError, ValueError, TypeError) as exc:
            report.errors.append(f"memory {number}: {exc}")
            advance(1)
            continue
        if memory.vector_store.get(incoming.record.id) is not None:
            report.skipped += 1
            advance(1)
            continue
        chunk.append(incoming)
        if len(chunk) >= BATCH:
            flush()
    flush()
    return report
