"""The memory lifecycle: types, importance, confidence that decays and is reinforced.

A record stores ``confidence`` as of its anchor, its last access
(``last_accessed_at``) or else its last change (``updated_at``); missing means
1.0. Read at ``now``, its effective confidence is::

    confidence * 0.5 ** ((now - anchor) / half_life)

with the half-life of its ``memory_type`` (``None``: it never decays). A search
hit reinforces it: the effective confidence at the access plus ``step`` (0.1),
capped at 1.0, becomes the stored confidence and the access its new anchor.
Feedback goes the same way: ``useful=True`` counts as an access, ``useful=False``
takes ``penalty`` (0.2) off instead, floored at 0. Accesses are buffered (:class:`AccessLog`) and written together, one
transaction per scope, by :func:`flush_flow`.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memkit._errors import InvalidArgument
from memkit._filters import Condition, Filter, all_of
from memkit._models import MEMORY_TYPES
from memkit._pipeline.calls import Handlers, local
from memkit._pipeline.effects import CountAdds, Flow, NoteAccess, TakeAccesses, Transaction, Update, WriteFlow, ask
from memkit._pipeline.write.apply import scan
from memkit._text import bad_code_point
from memkit._time import to_datetime
from memkit.stores.base import Hit, Record

DAY_SECONDS = 86_400.0
DEFAULT_HALF_LIVES: Mapping[str, float | None] = {
    "observation": 7.0, "error": 30.0, "decision": 90.0, "learning": 90.0, "pattern": 180.0,
    "preference": 180.0, "fact": None, "procedure": None, "task": None,
}
"""Days for the confidence to halve, per built-in type; ``None`` never decays."""
DEFAULT_HALF_LIFE = 30.0
"""Days, for memories without a type or of a caller's own type."""
MAX_TYPE_CHARS = 64


def memory_type_of(value: object) -> str:
    """A memory type: a built-in one (any case) or the caller's own word, 1-64 characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"memory_type must be a non-empty string, got {value!r}"[:300])
    text = value.strip()
    problem = bad_code_point(text)
    if problem is not None or len(text) > MAX_TYPE_CHARS or any(c.isspace() and c != " "
                                                                  for c in text):
        raise InvalidArgument(f"memory_type {problem or 'must be one line of at most 64 characters'}")
    return text.lower() if text.lower() in MEMORY_TYPES else text


def confidence_of(value: object, what: str) -> float:
    """A number in [0, 1] (an importance, a confidence)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidArgument(f"{what} must be a number from 0 to 1, got {value!r}"[:300])
    return float(value)


def importance_of(value: object) -> float:
    return confidence_of(value, "importance")


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """How confidence decays and is reinforced (``MemoryConfig.lifecycle``)."""

    decay: bool = False
    half_lives: Mapping[str, float | None] = field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    default_half_life: float | None = DEFAULT_HALF_LIFE
    reinforce: bool = False
    step: float = 0.1
    penalty: float = 0.2

    def half_life(self, memory_type: str | None) -> float | None:
        """Days, or ``None`` for a type that never decays."""
        if memory_type is not None and memory_type in self.half_lives:
            return self.half_lives[memory_type]
        return self.default_half_life

    def confidence(self, record: Record, now: str) -> float:
        """The record's confidence at ``now``: decayed since its anchor when decay is on."""
        return self.confidence_from(record.confidence, record.memory_type,
                                    record.last_accessed_at or record.updated_at, now)

    def confidence_from(self, confidence: float | None, memory_type: str | None, anchor: str,
                        now: str) -> float:
        """:meth:`confidence` from the fields it reads (``anchor``: ``last_accessed_at``,
        else ``updated_at``)."""
        stored = 1.0 if confidence is None else confidence
        days = self.half_life(memory_type)
        if not self.decay or days is None:
            return stored
        elapsed = _epoch(now) - _epoch(anchor)
        if elapsed <= 0:
            return stored
        return float(stored * 0.5 ** (elapsed / (days * DAY_SECONDS)))

    def reinforced(self, record: Record, hits: int, at: str, misses: int = 0) -> Record:
        """The record after ``hits`` accesses (useful ones) and ``misses`` (feedback that
        it was not useful), the last at ``at``."""
        changed = self.confidence(record, at) + self.step * hits - self.penalty * misses
        last = max(at, record.last_accessed_at or at)
        return replace(record, confidence=round(min(1.0, max(0.0, changed)), 9),
                       last_accessed_at=last, access_count=(record.access_count or 0) + hits,
                       vector=None)


@functools.lru_cache(maxsize=1 << 16)
def _epoch(timestamp: str) -> float:
    """Seconds since 1970 of a stored timestamp; cached, as a search reads the same anchors
    (and one "now") over and over."""
    return to_datetime(timestamp).timestamp()


def rank(hits: Sequence[Hit], lifecycle: Lifecycle, now: str, min_confidence: float | None,
         threshold: float | None = None, limit: int | None = None) -> list[tuple[Hit, float]]:
    """Hits with their confidence at ``now``, best first: with decay on, scored by
    relevance x confidence; below ``min_confidence`` dropped; then those scoring at least
    ``threshold``, the first ``limit`` of them."""
    if not lifecycle.decay and min_confidence is None:  # confidence moves no hit
        ordered = sorted(hits, key=lambda hit: (-hit.score, hit.record.id))
        kept = [hit for hit in ordered if threshold is None or hit.score >= threshold][:limit]
        return [(hit, lifecycle.confidence(hit.record, now)) for hit in kept]
    out: list[tuple[Hit, float]] = []
    for hit in hits:
        confidence = lifecycle.confidence(hit.record, now)
        if min_confidence is not None and confidence < min_confidence:
            continue
        score = hit.score * confidence if lifecycle.decay else hit.score
        out.append((Hit(hit.record, score), confidence))
    out.sort(key=lambda pair: (-pair[0].score, pair[0].record.id))  # ties: one order
    return [(h, c) for h, c in out if threshold is None or h.score >= threshold][:limit]


def scope_key(record: Record) -> Filter | None:
    """The record's scope as a filter (what adds to that scope lock on)."""
    return all_of(*(Condition(field=name, operator="eq", value=value)
                    for name, value in (("user_id", record.user_id),
                                        ("agent_id", record.agent_id), ("run_id", record.run_id))
                    if value is not None))


@dataclass(slots=True)
class Access:
    """Buffered accesses of one record: its scope and hash (to find it again), how many, when."""

    scope: Filter | None
    hash: str
    hits: int
    last: str
    misses: int = 0


class AccessLog:
    """Accesses not yet written; shared by the sync and the async callers of one memory."""

    def __init__(self, flush_every: int) -> None:
        self.flush_every = flush_every
        self._pending: dict[str, Access] = {}
        self._lock = threading.Lock()

    def note(self, records: list[Record], at: str, useful: bool = True) -> bool:
        """Record one access of each record at ``at`` (``useful=False``: feedback that it
        was not useful); whether a flush is due."""
        with self._lock:
            for record in records:
                seen = self._pending.get(record.id)
                if seen is None:
                    seen = self._pending[record.id] = Access(scope_key(record), record.hash, 0, at)
                seen.hits += useful
                seen.misses += not useful
                seen.last = max(seen.last, at)
            return len(self._pending) >= self.flush_every

    def take(self) -> dict[str, Access]:
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending


class AddCounts:
    """Memories added per scope since its last automatic consolidation."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, key: str, count: int, every: int) -> bool:
        with self._lock:
            total = self._counts.get(key, 0) + count
            self._counts[key] = 0 if total >= every else total
            return total >= every


class LifecycleState:
    """The in-process state of one memory's lifecycle, shared by its sync and async callers:
    accesses not yet written, and memories added per scope since the last consolidation.
    It answers the effects that read and change it (:meth:`handlers`)."""

    def __init__(self, flush_every: int = 64) -> None:
        #: search hits not yet written as reinforcements
        self.accesses = AccessLog(flush_every)
        #: memories added per scope, for automatic consolidation
        self.adds = AddCounts()

    def handlers(self) -> Handlers:
        return {
            NoteAccess: lambda e: local(lambda: self.accesses.note(list(e.records), e.at, e.useful)),
            TakeAccesses: lambda e: local(self.accesses.take),
            CountAdds: lambda e: local(lambda: self.adds.add(e.key, e.count, e.every)),
        }


def note_flow(records: list[Record], at: str, lifecycle: Lifecycle) -> Flow[None]:
    """Note accesses of ``records``; write the buffer when it is full."""
    if not lifecycle.reinforce or not records:
        return
    due: bool = yield from ask(NoteAccess(tuple(records), at))
    if due:
        yield from flush_flow(lifecycle)


def flush_flow(lifecycle: Lifecycle) -> Flow[int]:
    """Write the buffered accesses: one transaction per scope. Returns records reinforced.

    Each record is read again inside the transaction, so a concurrent change of it is
    kept; a record whose text changed since its access (or that is gone) is skipped.
    """
    pending: dict[str, Access] = yield from ask(TakeAccesses())
    groups: dict[str, dict[str, Access]] = {}
    for record_id, access in pending.items():
        key = "" if access.scope is None else access.scope.model_dump_json()
        groups.setdefault(key, {})[record_id] = access
    written = 0
    for key, accesses in groups.items():
        written += yield from ask(Transaction(key, _reinforce(accesses, lifecycle)))
    return written


def _reinforce(accesses: dict[str, Access], lifecycle: Lifecycle) -> WriteFlow[int]:
    first = next(iter(accesses.values()))
    hashes = Condition(field="hash", operator="in", value=tuple(sorted({a.hash for a in
                                                                         accesses.values()})))
    found: list[Record] = yield from scan(all_of(first.scope, hashes))
    updates = tuple(lifecycle.reinforced(r, accesses[r.id].hits, accesses[r.id].last,
                                         accesses[r.id].misses)
                    for r in found if r.id in accesses and r.hash == accesses[r.id].hash)
    if updates:
        yield Update(updates)
    return len(updates)


def lifecycle_fields(memory_type: object = None, importance: object = None,
                     confidence: object = None) -> dict[str, Any]:
    """The caller's ``memory_type``, ``importance`` and ``confidence``, checked; absent ones
    left out."""
    out: dict[str, Any] = {}
    if memory_type is not None:
        out["memory_type"] = memory_type_of(memory_type)
    if importance is not None:
        out["importance"] = importance_of(importance)
    if confidence is not None:
        out["confidence"] = confidence_of(confidence, "confidence")
    return out
