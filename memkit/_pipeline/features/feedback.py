"""The search log and explicit feedback.

With ``lifecycle.search_log`` on, each search is timed and logged beside the
history: a SHA-256 of the query (the text itself only with
``lifecycle.search_log_text``), ``k``, the ids returned, the latency, the time
and the scope. ``feedback(memory_id, useful=...)`` goes through the buffer of
accesses (:mod:`memkit._pipeline.features.lifecycle`): useful is one more access
(+``reinforcement``), not useful takes ``feedback_penalty`` off the confidence.
"""

from __future__ import annotations

import hashlib
import uuid

from memkit._errors import InvalidArgument, NotFoundError
from memkit._models import SearchLogEntry, SearchResult
from memkit._pipeline.effects import Flow, Get, LogSearch, Monotonic, NoteAccess, ReadSearchLog, ask
from memkit._pipeline.features.lifecycle import Lifecycle, flush_flow
from memkit._pipeline.inputs import Scope, memory_id_of
from memkit._pipeline.write.versions import is_valid
from memkit._time import to_datetime
from memkit.stores.base import Record


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()


def logged_search_flow(search: Flow[SearchResult], query: str, k: int, scope: Scope, now: str,
                       keep_text: bool) -> Flow[SearchResult]:
    """``search``, timed, then written to the search log."""
    started: float = yield from ask(Monotonic())
    result = yield from search
    ended: float = yield from ask(Monotonic())
    yield LogSearch(SearchLogEntry(
        id=str(uuid.uuid4()), timestamp=to_datetime(now), query_hash=query_hash(query),
        query=query if keep_text else None, k=k, result_ids=[i.id for i in result.results],
        latency_ms=round((ended - started) * 1000.0, 3), user_id=scope.user_id,
        agent_id=scope.agent_id, run_id=scope.run_id))
    return result


def feedback_flow(memory_id: str, useful: bool, now: str, lifecycle: Lifecycle) -> Flow[None]:
    """Note that a current memory was useful (or not); written with the buffered accesses."""
    if not isinstance(useful, bool):
        raise InvalidArgument(f"useful must be True or False, got {useful!r}"[:300])
    checked = memory_id_of(memory_id)
    record: Record | None = None if checked is None else (yield from ask(Get(checked)))
    if record is None or not is_valid(record, now):
        raise NotFoundError(f"no current memory with id {memory_id!r}"[:300])
    due: bool = yield from ask(NoteAccess((record,), now, useful))
    if due:
        yield from flush_flow(lifecycle)


def search_log_flow(scope: Scope, limit: int) -> Flow[list[SearchLogEntry]]:
    fields = tuple((name, value) for name, value in (
        ("user_id", scope.user_id), ("agent_id", scope.agent_id), ("run_id", scope.run_id))
        if value is not None)
    entries: list[SearchLogEntry] = yield from ask(ReadSearchLog(fields, limit))
    return entries
