"""Where every change to every memory is recorded."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from memkit._models import Change, HistoryRecord, SearchLogEntry

if TYPE_CHECKING:
    from memkit.history._feed import Beacon


class HistoryStore(ABC):
    """An append-only log of :class:`~memkit.HistoryRecord`, read per memory, oldest first."""

    @abstractmethod
    def add(self, records: Sequence[HistoryRecord]) -> None:
        """Append records (in order)."""

    @abstractmethod
    def get(self, memory_id: str) -> list[HistoryRecord]:
        """A memory's records, oldest first (ties broken by insertion order)."""

    @abstractmethod
    def event(self, event_id: str) -> HistoryRecord | None:
        """The record with this id, or ``None``."""

    @abstractmethod
    def reset(self, cleared_at: str) -> None:
        """Delete every record and logged search. A store that keeps a search log also
        notes the time (ISO): a search that began by then and comes to log itself later
        is not logged."""

    @contextmanager
    def lock(self, collection: str, key: str) -> Iterator[None]:
        """Held around a write to ``collection`` keyed ``key`` (an add's scope) when the vector
        store cannot exclude other processes' writers itself: exclusive with every holder of
        the same key, or of ``EVERY_KEY``, in any process that shares this history. The
        default holds nothing (a history no other process shares)."""
        yield

    @asynccontextmanager
    async def alock(self, collection: str, key: str) -> AsyncIterator[None]:
        """:meth:`lock` without blocking the event loop."""
        yield

    def open(self) -> None:  # noqa: B027 - optional
        """Create what the log's tables lack, before the first write. Idempotent."""

    async def aopen(self) -> None:
        await asyncio.to_thread(self.open)

    def close(self) -> None:  # noqa: B027 - optional
        """Release resources. Idempotent."""

    @abstractmethod
    def forget(self, memory_ids: Sequence[str]) -> None:
        """Delete the records of ``memory_ids`` (their ``PURGE`` records stay: they hold no
        text), the ``CONSOLIDATE`` records that name any of them (which memory merged into
        which tells what a forgotten memory said) and the logged searches that returned any
        of them."""

    @abstractmethod
    def discard(self, event_ids: Sequence[str]) -> None:
        """Delete the records with these ids (graph work done: ``GRAPH_PENDING`` rows)."""

    async def adiscard(self, event_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.discard, event_ids)

    @abstractmethod
    def forget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        """Delete every record and logged search of ``scope`` (every field given must
        match), except ``PURGE`` records. A store that keeps a search log also notes that
        ``scope`` was purged at ``purged_at`` (an ISO time): a search of the scope that
        began by then and comes to log itself later is not logged."""

    def scrub(self) -> None:  # noqa: B027 - optional
        """After a purge: make what was deleted unreadable from the engine's files where this
        store can (SQLite: write the WAL into the file and empty it)."""

    def log_searches(self, entries: Sequence[SearchLogEntry]) -> None:
        """Append searches to the search log (``lifecycle.search_log``), except those that
        a purge came after: an entry that returned an id with a ``PURGE`` record, or whose
        scope was purged (:meth:`forget_scope`) at or after its timestamp. :meth:`add` of
        ``PURGE`` records deletes the logged searches that returned their ids, so a search
        that read a memory before its purge is never in the log after it."""
        raise NotImplementedError(f"{type(self).__name__} keeps no search log")

    def searches(self, scope: Mapping[str, str], limit: int) -> list[SearchLogEntry]:
        """The newest ``limit`` logged searches of ``scope`` (every field given must match)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no search log")

    async def alog_searches(self, entries: Sequence[SearchLogEntry]) -> None:
        await asyncio.to_thread(self.log_searches, entries)

    async def asearches(self, scope: Mapping[str, str], limit: int) -> list[SearchLogEntry]:
        return await asyncio.to_thread(self.searches, scope, limit)

    # -- the change feed: the records of FEED_EVENTS (_feed.py) in commit order -------------
    def changes(self, after: str | None, scope: Mapping[str, str], limit: int) -> list[Change]:
        """Up to ``limit`` changes (records of ``FEED_EVENTS``) committed after position
        ``after`` (``None``: from the oldest kept) within ``scope`` (every field given must
        match), in commit order."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def head(self) -> str | None:
        """The newest position (``None`` when the log is empty): ``changes(head())`` gives only
        what commits later."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def follow(self) -> AbstractAsyncContextManager[Beacon]:
        """A beacon that rings, in this event loop, when a change may have committed (in any
        process) after entering."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    async def achanges(self, after: str | None, scope: Mapping[str, str],
                       limit: int) -> list[Change]:
        return await asyncio.to_thread(self.changes, after, scope, limit)

    async def ahead(self) -> str | None:
        return await asyncio.to_thread(self.head)

    async def aadd(self, records: Sequence[HistoryRecord]) -> None:
        await asyncio.to_thread(self.add, records)

    async def aget(self, memory_id: str) -> list[HistoryRecord]:
        return await asyncio.to_thread(self.get, memory_id)

    async def aevent(self, event_id: str) -> HistoryRecord | None:
        return await asyncio.to_thread(self.event, event_id)

    async def areset(self, cleared_at: str) -> None:
        await asyncio.to_thread(self.reset, cleared_at)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def aforget(self, memory_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.forget, memory_ids)

    async def aforget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        await asyncio.to_thread(self.forget_scope, scope, purged_at)

    async def ascrub(self) -> None:
        await asyncio.to_thread(self.scrub)
