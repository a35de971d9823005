"""Search and the direct operations on memories, as flows."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Literal

from memkit._errors import ConfigError, MemkitError, NotFoundError
from memkit._filters import Filter, all_of
from memkit._models import (
    DeleteResult,
    HistoryList,
    HistoryRecord,
    MemoryEvent,
    MemoryItem,
    SearchResult,
)
from memkit._pipeline.apply import apply
from memkit._pipeline.effects import (
    Embed,
    Flow,
    Get,
    KeywordSearch,
    ListRecords,
    ReadHistory,
    ResetHistory,
    ResetStore,
    Search,
)
from memkit._pipeline.fusion import fuse
from memkit._pipeline.inputs import (
    Scope,
    bounded_words,
    memory_id_of,
    query_of,
    text_hash,
    text_of,
)
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
    query = query_of(query)
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
    # Bounded first (a 100 KB query of one word becomes one term), then content words only:
    # a query of function words ("I") has no keyword evidence.
    terms = keyword_query(bounded_words(query)) if mode != "vector" else None
    if terms is not None:
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
    checked = memory_id_of(memory_id)
    if checked is None:
        return None
    record = yield Get(checked)
    return None if record is None else record.to_item()


def get_all_flow(filter: Filter | None, limit: int) -> Flow[SearchResult]:
    """Newest first."""
    records, _ = yield ListRecords(filter, limit, None, "newest")
    return SearchResult(results=[r.to_item() for r in records])


def _history_row(record: Record, event: str, old: str | None, new: str | None,
                 when: str) -> HistoryRecord:
    return HistoryRecord(
        id=str(uuid.uuid4()), memory_id=record.id, event=event,  # type: ignore[arg-type]
        old_value=old, new_value=new, timestamp=to_datetime(when), is_deleted=event == "DELETE",
        user_id=record.user_id, agent_id=record.agent_id, run_id=record.run_id,
    )


def _existing(memory_id: str) -> Flow[Record]:
    checked = memory_id_of(memory_id)
    if checked is None:
        raise NotFoundError(f"no memory with id {memory_id!r}"[:300])
    record: Record | None = yield Get(checked)
    if record is None:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    return record


def update_flow(memory_id: str, text: str, metadata: dict[str, object] | None,
                now: str) -> Flow[MemoryItem]:
    if not text_of(text, "the new text of a memory").strip():
        raise MemkitError("the new text of a memory must be a non-empty string")
    record = yield from _existing(memory_id)
    vectors = yield Embed((text,))
    updated = replace(record, memory=text, hash=text_hash(text), updated_at=now,
                      metadata={**record.metadata, **(metadata or {})}, vector=vectors[0])
    history = [_history_row(record, "UPDATE", record.memory, text, now)]
    yield from apply(WriteBatch(updates=[updated], history=history))
    return replace(updated, vector=None).to_item()


def delete_flow(memory_id: str, now: str) -> Flow[None]:
    record = yield from _existing(memory_id)
    history = [_history_row(record, "DELETE", record.memory, None, now)]
    yield from apply(WriteBatch(deletes=[record.id], history=history))


def delete_all_flow(scope: Scope, filter: Filter | None, now: str) -> Flow[DeleteResult]:
    """Delete every memory of the scope, in batches; one DELETE event per memory."""
    events: list[MemoryEvent] = []
    selection = all_of(scope.filter(), filter)
    while True:
        page, _ = yield ListRecords(selection, 1000, None)
        if not page:
            return DeleteResult(results=events)
        history = [_history_row(r, "DELETE", r.memory, None, now) for r in page]
        yield from apply(WriteBatch(deletes=[r.id for r in page], history=history))
        events.extend(r.to_event("DELETE", old=r.memory) for r in page)


def history_flow(memory_id: str) -> Flow[HistoryList]:
    checked = memory_id_of(memory_id)
    if checked is None:
        return HistoryList()
    records: list[HistoryRecord] = yield ReadHistory(checked)
    return HistoryList(records)


def reset_flow() -> Flow[None]:
    yield ResetStore()
    yield ResetHistory()
