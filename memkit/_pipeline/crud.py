"""Search and the direct operations on memories, as flows."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Literal

from memkit._errors import ConfigError, MemkitError, NotFoundError
from memkit._filters import Filter, all_of
from memkit._models import HistoryRecord, MemoryItem, SearchResult
from memkit._pipeline.effects import (
    Apply,
    Embed,
    Flow,
    Get,
    KeywordSearch,
    ListRecords,
    ReadHistory,
    Reset,
    Search,
)
from memkit._pipeline.fusion import fuse
from memkit._pipeline.inputs import Scope, text_hash
from memkit._pipeline.keywords import keyword_query
from memkit._time import to_datetime
from memkit.stores.base import Hit, Record, WriteBatch

SearchMode = Literal["hybrid", "vector", "keyword"]


@dataclass(frozen=True, slots=True)
class SearchSettings:
    mode: SearchMode | None = None
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    candidates: int = 100


def search_flow(
    query: str, filter: Filter | None, limit: int, threshold: float | None,
    mode: SearchMode | None, settings: SearchSettings, keyword_capable: bool,
) -> Flow[SearchResult]:
    if not isinstance(query, str):
        raise MemkitError(f"query must be a string, got {type(query).__name__}")
    mode = mode or settings.mode or ("hybrid" if keyword_capable else "vector")
    if mode not in ("hybrid", "vector", "keyword"):
        raise MemkitError(f"search mode must be 'hybrid', 'vector' or 'keyword', got {mode!r}")
    if mode != "vector" and not keyword_capable:
        raise ConfigError(f"this vector store has no keyword search; {mode!r} search needs one")
    pool = max(limit, settings.candidates) if mode == "hybrid" else limit
    vector_hits: list[Hit] = []
    keyword_hits: list[Hit] = []
    if mode != "keyword":
        vectors = yield Embed((query,))
        vector_hits = yield Search(vectors[0], pool, filter)
    terms = keyword_query(query) if mode != "vector" else None
    if terms is not None:  # a query of function words only ("I") has no keyword evidence
        keyword_hits = yield KeywordSearch(terms, pool, filter)
    if mode == "hybrid":
        hits = fuse(vector_hits, keyword_hits, vector_weight=settings.vector_weight,
                    keyword_weight=settings.keyword_weight, limit=limit)
    else:
        hits = (vector_hits or keyword_hits)[:limit]
    return SearchResult(results=[
        h.record.to_item(round(h.score, 6)) for h in hits
        if threshold is None or h.score >= threshold
    ])


def get_flow(memory_id: str) -> Flow[MemoryItem | None]:
    record = yield Get(memory_id)
    return None if record is None else record.to_item()


def _scan(filter: Filter | None) -> Flow[list[Record]]:
    records: list[Record] = []
    cursor: str | None = None
    while True:
        page, cursor = yield ListRecords(filter, 1000, cursor)
        records.extend(page)
        if cursor is None:
            return records


def get_all_flow(filter: Filter | None, limit: int) -> Flow[SearchResult]:
    """Newest first."""
    records = yield from _scan(filter)
    records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return SearchResult(results=[r.to_item() for r in records[:limit]])


def _history_row(record: Record, event: str, old: str | None, new: str | None,
                 when: str) -> HistoryRecord:
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=record.id, event=event,  # type: ignore[arg-type]
        old_value=old, new_value=new, timestamp=to_datetime(when), is_deleted=event == "DELETE",
        user_id=record.user_id, agent_id=record.agent_id, run_id=record.run_id,
    )


def _existing(memory_id: str) -> Flow[Record]:
    if not isinstance(memory_id, str) or not memory_id:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    record: Record | None = yield Get(memory_id)
    if record is None:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    return record


def update_flow(memory_id: str, text: str, metadata: dict[str, object] | None,
                now: str) -> Flow[MemoryItem]:
    if not isinstance(text, str) or not text.strip():
        raise MemkitError("the new text of a memory must be a non-empty string")
    record = yield from _existing(memory_id)
    vectors = yield Embed((text,))
    updated = replace(record, memory=text, hash=text_hash(text), updated_at=now,
                      metadata={**record.metadata, **(metadata or {})}, vector=vectors[0])
    history = [_history_row(record, "UPDATE", record.memory, text, now)]
    yield Apply(WriteBatch(updates=[updated], history=history))
    return replace(updated, vector=None).to_item()


def delete_flow(memory_id: str, now: str) -> Flow[None]:
    record = yield from _existing(memory_id)
    history = [_history_row(record, "DELETE", record.memory, None, now)]
    yield Apply(WriteBatch(deletes=[record.id], history=history))


def delete_all_flow(scope: Scope, filter: Filter | None, now: str) -> Flow[int]:
    """Delete every memory of the scope, in batches; returns how many."""
    deleted = 0
    selection = all_of(scope.filter(), filter)
    while True:
        page, _ = yield ListRecords(selection, 1000, None)
        if not page:
            return deleted
        history = [_history_row(r, "DELETE", r.memory, None, now) for r in page]
        yield Apply(WriteBatch(deletes=[r.id for r in page], history=history))
        deleted += len(page)


def history_flow(memory_id: str) -> Flow[list[HistoryRecord]]:
    records: list[HistoryRecord] = yield ReadHistory(memory_id)
    return records


def reset_flow() -> Flow[None]:
    yield Reset()
