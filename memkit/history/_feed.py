"""The change feed's plumbing: waking, in one process, whoever follows a history's changes.

A history learns that a change may have committed in its own way (SQLite: a poll of the
file's data version; PostgreSQL: ``LISTEN``); :class:`ChangeSignal` runs that watcher as
one task per event loop while anybody follows, and :class:`Beacon` wakes every follower.
The changes themselves are always read from the history's table, in its order, so a wake
too many costs a read and a missed one only a delay (each watcher also wakes on a timer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from memkit._errors import InvalidArgument

#: the history events the change feed carries: the memories' changes, the entities a graph
#: creates and the consolidations that merged memories (not the graph's other records, nor
#: the outbox's pending work)
FEED_EVENTS = ("ADD", "UPDATE", "DELETE", "PURGE", "ENTITY_ADD", "CONSOLIDATE")


def bad_position(position: str) -> InvalidArgument:
    return InvalidArgument(f"{position!r} is not a position of this history's change feed "
                           "(give back a change's position, or nothing to start at the oldest)")


class Beacon:
    """Counts the changes a watcher heard of; followers wait for the count to move."""

    def __init__(self) -> None:
        self.count = 0
        self.ready = asyncio.Event()
        self._moved = asyncio.Event()

    def ring(self) -> None:
        self.count += 1
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()

    async def wait(self, seen: int, timeout: float) -> int:
        """The count once it differs from ``seen``, or after ``timeout`` seconds."""
        if self.count == seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait(), timeout)
        return self.count


Watch = Callable[[Beacon], Coroutine[Any, Any, None]]
"""Runs until cancelled: sets ``beacon.ready`` once listening, rings on each change."""


@dataclass(slots=True)
class _Running:
    beacon: Beacon
    task: asyncio.Task[None]
    followers: int = 0
    done: list[BaseException] = field(default_factory=list)


class ChangeSignal:
    """One watcher task per event loop, shared by that loop's followers."""

    def __init__(self, watch: Watch) -> None:
        self._watch = watch
        self._running: dict[asyncio.AbstractEventLoop, _Running] = {}

    @asynccontextmanager
    async def follow(self) -> AsyncIterator[Beacon]:
        """The beacon, once the watcher listens: a change committed after entering rings it."""
        loop = asyncio.get_running_loop()
        running = self._running.get(loop)
        if running is None:
            beacon = Beacon()
            running = _Running(beacon, loop.create_task(self._watch(beacon)))
            self._running[loop] = running
        running.followers += 1
        ready = asyncio.ensure_future(running.beacon.ready.wait())
        try:
            await asyncio.wait({ready, running.task}, return_when=asyncio.FIRST_COMPLETED)
            if running.task.done():  # the watcher failed before it listened
                running.task.result()
            yield running.beacon
        finally:
            ready.cancel()  # still waiting if the follower was cancelled on its way in
            running.followers -= 1
            if running.followers == 0 and self._running.get(loop) is running:
                del self._running[loop]
                running.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await running.task


def polling(version: Callable[[], int], interval: float,
            close: Callable[[], None] = lambda: None) -> Watch:
    """A watcher that reads ``version()`` (in a thread) every ``interval`` seconds and rings
    when it changed."""

    async def watch(beacon: Beacon) -> None:
        try:
            last = await asyncio.to_thread(version)
            beacon.ready.set()
            while True:
                await asyncio.sleep(interval)
                now = await asyncio.to_thread(version)
                if now != last:
                    last = now
                    beacon.ring()
        finally:
            close()

    return watch
