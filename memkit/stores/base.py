"""The vector store interface every backend implements.

A store holds :class:`Record` objects: a memory's text, built-in fields, the
caller's metadata and its vector. Stores speak only the portable filter tree
(:mod:`memkit._filters`); each backend translates it, in a pure function, or
raises :class:`~memkit.FilterError`.

A store is a few primitives (nine abstract methods: ``open``, ``reset``,
``insert``, ``update``, ``delete``, ``get``, ``search``, ``list``, ``count``;
``keyword_search`` where it has one). What memkit builds from them (duplicate
detection, history, the add pipeline) is written once, as flows in
:mod:`memkit._pipeline`, and runs inside :meth:`VectorStore.transaction`.

Async methods default to running the sync method in a worker thread; a store
with a native async client sets ``native_async`` and overrides them.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np
import numpy.typing as npt

from memkit._errors import ConfigError
from memkit._filters import BUILTIN_FIELDS, MISSING, And, Condition, Filter, all_of
from memkit._models import Event, HistoryRecord, MemoryEvent, MemoryItem
from memkit._time import to_datetime

if TYPE_CHECKING:
    from memkit.graph.base import GraphStore
    from memkit.history.base import HistoryStore

Vector = npt.NDArray[np.float32]
EVERY_KEY = "*"
"""The :meth:`VectorStore.transaction` key that makes writers of every key wait."""
PROJECTABLE = frozenset({"id", *BUILTIN_FIELDS})
"""What :meth:`VectorStore.project` selects: the id and the built-in fields."""
PROJECTION_PAGE = 1000
Order = Literal["id", "newest"]
"""``list`` order: ascending id, or newest first (``created_at`` then id, descending)."""


@dataclass(slots=True)
class Record:
    """One memory as a store keeps it. Timestamps are ISO strings (``memkit._time.to_iso``)."""

    id: str
    memory: str
    hash: str
    created_at: str
    updated_at: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: Vector | None = None
    #: event time: when the fact became true, and when it stopped (superseded or deleted)
    valid_from: str | None = None
    valid_to: str | None = None
    #: after this the memory is not returned unless asked for
    expires_at: str | None = None
    #: the id of the version this one replaced (the past version's record)
    supersedes: str | None = None
    #: what kind of memory this is (``memkit.MEMORY_TYPES`` or the caller's own word)
    memory_type: str | None = None
    #: how much it matters, in [0, 1]
    importance: float | None = None
    #: confidence in [0, 1] as of ``last_accessed_at`` (or ``updated_at``); it decays from
    #: there at read time (:mod:`memkit._pipeline.features.lifecycle`); missing means 1.0
    confidence: float | None = None
    #: how often searches returned it (missing: never), and when last
    access_count: int | None = None
    last_accessed_at: str | None = None

    def lookup(self, name: str) -> Any:
        """A field's value for the filter evaluator, or ``MISSING``."""
        value = getattr(self, name) if name in _BUILTINS else self.metadata.get(name, MISSING)
        return MISSING if value is None else value

    def payload(self) -> dict[str, Any]:
        """Everything but the id and the vector, JSON-serialisable."""
        return {
            "memory": self.memory, "hash": self.hash,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id,
            "metadata": self.metadata, **{k: getattr(self, k) for k in TEMPORAL_FIELDS},
            **{k: getattr(self, k) for k in LIFECYCLE_FIELDS if getattr(self, k) is not None},
        }

    @classmethod
    def from_payload(cls, id: str, payload: dict[str, Any], vector: Vector | None = None) -> Record:
        return cls(
            id=id, memory=payload["memory"], hash=payload["hash"],
            created_at=payload["created_at"], updated_at=payload["updated_at"],
            user_id=payload.get("user_id"), agent_id=payload.get("agent_id"),
            run_id=payload.get("run_id"), metadata=dict(payload.get("metadata") or {}),
            vector=vector, **{k: payload.get(k) for k in (*TEMPORAL_FIELDS, *LIFECYCLE_FIELDS)},
        )

    def with_vector(self, vector: Vector | None) -> Record:
        return replace(self, vector=vector)

    def to_item(self, score: float | None = None, confidence: float | None = None) -> MemoryItem:
        """The public form; ``confidence`` defaults to the stored one (1.0 when missing)."""
        return MemoryItem(
            id=self.id, memory=self.memory, hash=self.hash, metadata=self.metadata,
            user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id,
            created_at=to_datetime(self.created_at), updated_at=to_datetime(self.updated_at),
            score=score, supersedes=self.supersedes, memory_type=self.memory_type,
            importance=self.importance, access_count=self.access_count or 0,
            confidence=(1.0 if self.confidence is None else self.confidence)
            if confidence is None else confidence,
            **{k: None if getattr(self, k) is None else to_datetime(getattr(self, k))
               for k in ("valid_from", "valid_to", "expires_at", "last_accessed_at")},
        )

    def to_event(self, event: Event, old: str | None = None, new: str | None = None) -> MemoryEvent:
        """What an operation did to this record (its state after the operation)."""
        return MemoryEvent(
            id=self.id, event=event, memory=self.memory, old_memory=old, new_memory=new,
            metadata=self.metadata, user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id,
        )


TEMPORAL_FIELDS = ("valid_from", "valid_to", "expires_at", "supersedes")
LIFECYCLE_FIELDS = ("memory_type", "importance", "confidence", "access_count", "last_accessed_at")
"""Built-in fields of the memory lifecycle; stored and filtered like the temporal ones."""
_BUILTINS = BUILTIN_FIELDS


@dataclass(slots=True)
class Hit:
    record: Record
    score: float  # in [0, 1], higher is better


@dataclass(slots=True)
class WriteBatch:
    """Changes applied together by the apply flow (:mod:`memkit._pipeline.write.apply`).

    ``adds`` whose hash already exists among the records matching
    ``dedup_scope`` and valid at ``valid_at`` (or earlier in the same batch) are
    skipped, atomically with respect to other writers of the store; their
    history rows too. ``versions`` (past versions) are inserted as they are.
    When a record matches ``unless``, or none matches ``requires``, nothing is
    applied (``ConflictError``). With ``near`` (a cosine similarity), an add whose vector
    is at least that similar to a record of ``dedup_scope`` valid at ``valid_at`` (or to an
    earlier add of the batch) is skipped as a duplicate too. ``confirms``: memories the
    batch's facts re-state (and, with ``confirm_duplicates``, the stored memories its
    skipped adds re-state), whose ``metadata["confirmations"]`` each goes up by one.
    """

    adds: list[Record] = field(default_factory=list)
    updates: list[Record] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    history: list[HistoryRecord] = field(default_factory=list)
    dedup_scope: Filter | None = None
    versions: list[Record] = field(default_factory=list)
    valid_at: str | None = None
    unless: Filter | None = None
    requires: Filter | None = None
    near: float | None = None
    confirms: list[Record] = field(default_factory=list)
    confirm_duplicates: bool = False


def hash_filter(scope: Filter | None, hashes: Sequence[str]) -> Filter:
    """Records in ``scope`` whose hash is one of ``hashes``."""
    cond = Condition(field="hash", operator="in", value=tuple(hashes))
    combined = all_of(scope, cond)
    assert combined is not None
    return combined


def check_projection(fields: Sequence[str]) -> None:
    """Refuse a :meth:`VectorStore.project` of anything but :data:`PROJECTABLE` (stores
    name the fields in their queries)."""
    unknown = [f for f in fields if f not in PROJECTABLE]
    if unknown or not fields:
        raise ValueError(f"cannot project {unknown or 'no fields'}: one or more of "
                         f"{sorted(PROJECTABLE)}")


def projected(records: Sequence[Record], fields: Sequence[str]) -> builtins.list[tuple[Any, ...]]:
    """``fields`` of each record, for a :meth:`VectorStore.project` built on ``list``."""
    return [tuple(getattr(r, f) for f in fields) for r in records]


def page_after(records: Sequence[Record], order: Order, cursor: str | None,
               limit: int) -> tuple[builtins.list[Record], str | None]:
    """One page of already-filtered ``records`` in ``order``, after ``cursor``.

    For stores that cannot order on the engine; the cursor is :func:`cursor_of` of
    the last record of the previous page.
    """
    if order == "newest":
        ranked = sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)
        rest = [r for r in ranked if cursor is None or cursor_key(cursor) > (r.created_at, r.id)]
    else:
        ranked = sorted(records, key=lambda r: r.id)
        rest = [r for r in ranked if cursor is None or r.id > cursor]
    page = rest[:limit]
    return page, (cursor_of(page[-1], order) if len(rest) > limit and page else None)


def cursor_of(record: Record, order: Order) -> str:
    """The cursor after ``record``: its id, or ``created_at`` and id for newest-first pages."""
    return record.id if order == "id" else f"{record.created_at}|{record.id}"


def cursor_key(cursor: str) -> tuple[str, str]:
    """``(created_at, id)`` of a newest-first cursor."""
    created_at, _, id = cursor.partition("|")
    return created_at, id


class WriteLock:
    """One lock for the sync and the async writers of a store in this process.

    A ``threading.Lock`` that an event loop waits for without blocking: async
    acquirers poll it with short sleeps, so a sync writer in a thread and an
    async writer on the loop exclude each other.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            yield

    @asynccontextmanager
    async def ahold(self) -> AsyncIterator[None]:
        delay = 0.0005
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.02)
        try:
            yield
        finally:
            self._lock.release()


class Writer(Protocol):
    """What the apply flow calls inside a transaction: the store, or a view of it bound to
    the transaction's connection."""

    def list(self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
             order: Order = "id") -> tuple[builtins.list[Record], str | None]: ...
    def insert(self, records: Sequence[Record]) -> None: ...
    def update(self, records: Sequence[Record]) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...
    def write_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None: ...
    async def alist(self, filter: Filter | None = None, limit: int = 100,
                    cursor: str | None = None, order: Order = "id",
                    ) -> tuple[builtins.list[Record], str | None]: ...
    async def ainsert(self, records: Sequence[Record]) -> None: ...
    async def aupdate(self, records: Sequence[Record]) -> None: ...
    async def adelete(self, ids: Sequence[str]) -> None: ...
    async def awrite_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None: ...
    def switch(self, shadow: VectorStore) -> None: ...
    async def aswitch(self, shadow: VectorStore) -> None: ...


def check_collection(name: str, stored: tuple[object, object], dimension: int, model: str,
                     where: str | None = None) -> None:
    """The check every store makes when it opens a collection that exists: it must hold
    ``dimension``-dimensional vectors of ``model`` (``stored``: what it holds), else a
    :class:`~memkit.ConfigError` naming both. ``where``: the file it lives in."""
    if tuple(stored) != (dimension, model):
        place = "" if where is None else f" in {where}"
        raise ConfigError(f"collection {name!r}{place} holds {stored[0]}-dimensional vectors of "
                          f"{stored[1]!r}; got {dimension}-dimensional vectors of {model!r}")


class VectorStore(ABC):
    """A collection of records with vectors of one dimension and one embedding model."""

    #: whether :meth:`keyword_search` is implemented
    supports_keyword: ClassVar[bool] = False
    #: provider name used in config
    provider: ClassVar[str] = ""
    #: operators (``"icontains"``) or combinators (``"NOT"``) this store rejects with FilterError
    unsupported_filters: ClassVar[frozenset[str]] = frozenset()
    #: whether the ``a*`` methods and :meth:`atransaction` use a native async client;
    #: otherwise an async write runs its whole transaction in one worker thread
    native_async: bool = False
    #: where the default SQLite history goes when the store has none of its own
    default_history_path: ClassVar[str] = "~/.memkit/history.db"
    #: whether :meth:`transaction` also excludes writers in other processes (the engine's
    #: own locks, or no other process can reach the collection); otherwise memkit takes a
    #: lock where the history lives (:meth:`~memkit.history.base.HistoryStore.lock`)
    locks_processes: ClassVar[bool] = False
    collection_name: str = "memkit"

    def __init__(self) -> None:
        self._write_lock = WriteLock()

    # -- lifecycle -------------------------------------------------------
    @abstractmethod
    def open(self, dimension: int, model: str) -> None:
        """Create the collection, or check that the stored one has this dimension and model.

        A mismatch raises :class:`~memkit.ConfigError` naming both.
        """

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections. Idempotent."""

    @abstractmethod
    def reset(self) -> None:
        """Delete every record (the collection stays open)."""

    def scrub(self) -> None:  # noqa: B027 - optional
        """After a purge or a reset: make the deleted records unreadable from the engine's
        files where this store can (compact, checkpoint, drop old versions). What each
        engine guarantees is in docs/time.md."""

    # -- colocation: what the store keeps in its own file or database ------
    def colocated_history(self) -> HistoryStore | None:
        """The history kept beside the records and written in the store's own transactions,
        or ``None`` (the default): ``Memory`` then builds the configured history store."""
        return None

    def colocated_graph(self) -> GraphStore | None:
        """The knowledge graph kept beside the records, written in the store's own
        transactions, or ``None`` (the default): ``Memory`` builds the configured one."""
        return None

    # -- writes ----------------------------------------------------------
    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """Exclusive writes: what is read and written inside commits as one step.

        Yields the writer (the store itself, or a view of it bound to one
        connection). ``key`` names what the writes touch (the add's scope);
        a store may let writers of different keys run at once, except with
        ``EVERY_KEY``, which every writer waits for. The default is
        one lock for this store object, shared by sync and async writers.
        """
        with self._write_lock.hold():
            yield self

    @asynccontextmanager
    async def atransaction(self, key: str = "") -> AsyncIterator[Writer]:
        """:meth:`transaction` for native async stores (see ``native_async``)."""
        async with self._write_lock.ahold():
            yield self

    @abstractmethod
    def insert(self, records: Sequence[Record]) -> None:
        """Insert records (vectors required)."""

    @abstractmethod
    def update(self, records: Sequence[Record]) -> None:
        """Replace records (and their vectors when given; otherwise keep the old vectors).

        An unknown id raises :class:`~memkit.VectorStoreError`.
        """

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Delete records; unknown ids are ignored."""

    def write_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None:
        """Append history rows inside the current transaction when ``history`` lives with the
        records (same file, same database); otherwise simply append them."""
        history.add(rows)

    # -- reads -----------------------------------------------------------
    @abstractmethod
    def get(self, id: str) -> Record | None:
        """A record by id (without its vector), or ``None``."""

    @abstractmethod
    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        """The ``limit`` nearest records matching ``filter``, best first.

        Scores are cosine similarity mapped to [0, 1]: ``(1 + cos) / 2``.
        Whenever at least ``limit`` records match, ``limit`` hits come back.
        """

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        """Full-text ranking of ``text`` (plain words, never query syntax), scores in [0, 1]."""
        raise NotImplementedError(f"{type(self).__name__} has no keyword search")

    @abstractmethod
    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        """Records matching ``filter`` in ``order``, and the cursor of the next page."""

    @abstractmethod
    def count(self, filter: Filter | None = None) -> int:
        """How many records match ``filter``."""

    def project(self, fields: Sequence[str],
                filter: Filter | None = None) -> builtins.list[tuple[Any, ...]]:
        """The values of ``fields`` (``"id"`` or built-in fields, :data:`PROJECTABLE`) of
        every record matching ``filter``, in no set order; timestamps as ISO strings.

        What an aggregate (``Memory.stats``) reads without building whole records. The
        default pages through :meth:`list`; a store that can select columns overrides it.
        """
        check_projection(fields)
        rows: builtins.list[tuple[Any, ...]] = []
        cursor: str | None = None
        while True:
            page, cursor = self.list(filter, PROJECTION_PAGE, cursor)
            rows.extend(projected(page, fields))
            if cursor is None:
                return rows

    # -- re-embedding (memkit._pipeline.features.reembed) -----------------------------
    def shadow(self, dimension: int, model: str) -> VectorStore:
        """An empty collection beside this one (same kind, same place), open for
        ``dimension``-dimensional vectors of ``model``; re-embedding fills it while this
        one keeps serving. What an interrupted migration left behind is dropped first."""
        raise NotImplementedError(f"{type(self).__name__} cannot re-embed")

    def switch(self, shadow: VectorStore) -> None:
        """Serve ``shadow``'s collection from now on, in one step (called inside
        :meth:`transaction`), and drop the old one. Opening the store with the old model
        then raises :class:`~memkit.ConfigError`; with the new one it works."""
        raise NotImplementedError(f"{type(self).__name__} cannot re-embed")

    def discard(self, shadow: VectorStore) -> None:
        """Drop a shadow collection that will not be switched to."""
        raise NotImplementedError(f"{type(self).__name__} cannot re-embed")

    async def ashadow(self, dimension: int, model: str) -> VectorStore:
        return await asyncio.to_thread(self.shadow, dimension, model)

    async def aswitch(self, shadow: VectorStore) -> None:
        await asyncio.to_thread(self.switch, shadow)

    async def adiscard(self, shadow: VectorStore) -> None:
        await asyncio.to_thread(self.discard, shadow)

    # -- async (thread fallback) ----------------------------------------
    async def aopen(self, dimension: int, model: str) -> None:
        await asyncio.to_thread(self.open, dimension, model)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)

    async def ascrub(self) -> None:
        await asyncio.to_thread(self.scrub)

    async def ainsert(self, records: Sequence[Record]) -> None:
        await asyncio.to_thread(self.insert, records)

    async def aupdate(self, records: Sequence[Record]) -> None:
        await asyncio.to_thread(self.update, records)

    async def adelete(self, ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete, ids)

    async def awrite_history(self, history: HistoryStore, rows: Sequence[HistoryRecord]) -> None:
        await history.aadd(rows)

    async def aget(self, id: str) -> Record | None:
        return await asyncio.to_thread(self.get, id)

    async def asearch(
        self, vector: Vector, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await asyncio.to_thread(self.search, vector, limit, filter)

    async def akeyword_search(
        self, text: str, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await asyncio.to_thread(self.keyword_search, text, limit, filter)

    async def alist(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        return await asyncio.to_thread(self.list, filter, limit, cursor, order)

    async def acount(self, filter: Filter | None = None) -> int:
        return await asyncio.to_thread(self.count, filter)

    async def aproject(self, fields: Sequence[str],
                       filter: Filter | None = None) -> builtins.list[tuple[Any, ...]]:
        return await asyncio.to_thread(self.project, fields, filter)


def cosine_to_score(cos: float) -> float:
    """Map a cosine similarity in [-1, 1] to a score in [0, 1]."""
    return min(1.0, max(0.0, (1.0 + cos) / 2.0))


def cosine_to_scores(cos: npt.NDArray[Any]) -> list[float]:
    """:func:`cosine_to_score` of each of ``cos``, in one pass (float64, as on Python floats)."""
    scores: list[float] = np.minimum(
        1.0, np.maximum(0.0, (1.0 + np.asarray(cos, np.float64)) / 2.0)).tolist()
    return scores


__all__ = [
    "EVERY_KEY",
    "LIFECYCLE_FIELDS",
    "PROJECTABLE",
    "And",
    "Hit",
    "Order",
    "Record",
    "Vector",
    "VectorStore",
    "WriteBatch",
    "WriteLock",
    "Writer",
    "check_projection",
    "cosine_to_score",
    "cosine_to_scores",
    "cursor_key",
    "cursor_of",
    "hash_filter",
    "page_after",
    "projected",
]
