"""The change feed: the history's changes, from every process that shares it.

A stream reads the changes from the history (:meth:`AsyncMemory.watch`) in commit order, so
every server process, and any other process writing the same memory, feeds every stream;
each event's SSE ``id`` is its position, from which ``Last-Event-ID`` resumes. The memories'
changes, the entities a graph creates (``ENTITY_ADD``) and the consolidations that merged
memories (``CONSOLIDATE``) are all history rows, each written in the transaction of the
change it tells of.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from memkit import AsyncMemory, Change, MemkitError
from memkit._time import to_iso
from memkit.server._auth import Grant

EventType = Literal["memory_created", "memory_updated", "memory_deleted",
                    "consolidation_complete", "entity_created"]
_TYPES: dict[str, EventType] = {"ADD": "memory_created", "UPDATE": "memory_updated",
                                "DELETE": "memory_deleted", "PURGE": "memory_deleted",
                                "ENTITY_ADD": "entity_created",
                                "CONSOLIDATE": "consolidation_complete"}


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    type: EventType
    id: str
    position: str
    """The SSE ``id``: the change's position in the history."""
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    memory: str | None
    timestamp: str
    details: dict[str, Any] | None

    @classmethod
    def of_change(cls, change: Change) -> ChangeEvent:
        """A memory's change carries its text (created, updated); an entity's, its ``name``
        and ``type``; a consolidation's, ``examined``, ``clusters`` and ``merged``."""
        memory = change.new_value if change.event in ("ADD", "UPDATE") else None
        details: dict[str, Any] | None = None
        if change.event in ("ENTITY_ADD", "CONSOLIDATE"):
            details = json.loads(change.new_value or "{}")
        elif change.event == "PURGE":
            details = {"purged": True}
        return cls(_TYPES[change.event], change.memory_id, change.position, change.user_id,
                   change.agent_id, change.run_id, memory, to_iso(change.timestamp), details)

    def scope(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}

    def sse(self) -> str:
        data = {k: v for k, v in asdict(self).items()
                if k not in ("type", "details", "position")}
        return (f"event: {self.type}\nid: {self.position}\n"
                f"data: {json.dumps(data | (self.details or {}))}\n\n")


class Streams:
    """This process's change streams (each reads the history), which :meth:`close` ends
    (server shutdown)."""

    def __init__(self) -> None:
        self._closing: set[asyncio.Event] = set()

    def close(self) -> None:
        """End every stream."""
        for closing in list(self._closing):
            closing.set()

    async def stream(self, memory: AsyncMemory, grant: Grant, scope: dict[str, str],
                     after: str | None, keepalive: float = 15.0) -> AsyncIterator[str]:
        """Server-Sent Events text: a ``connected`` comment once following, then the events
        of ``scope`` (the grant's binding included) after position ``after`` (else from
        now), and a keep-alive comment every ``keepalive`` seconds of silence."""
        closing = asyncio.Event()
        self._closing.add(closing)
        try:
            async with memory.watch(after, **scope) as changes:
                yield ": connected\n\n"
                quiet_since = time.monotonic()
                closed = asyncio.ensure_future(closing.wait())
                try:
                    while not closing.is_set():
                        heard = changes.heard
                        try:
                            batch = await changes.read()
                        except MemkitError:
                            return  # the history cannot be read: the client reconnects
                        for event in map(ChangeEvent.of_change, batch):
                            if grant.can_see(event.scope()):
                                yield event.sse()
                        if batch:
                            quiet_since = time.monotonic()
                        if len(batch) == changes.batch:
                            continue
                        wait = asyncio.ensure_future(changes.wait(heard, keepalive))
                        await asyncio.wait({wait, closed}, return_when=asyncio.FIRST_COMPLETED)
                        wait.cancel()
                        if not closing.is_set() and time.monotonic() >= quiet_since + keepalive:
                            yield ": keepalive\n\n"
                            quiet_since = time.monotonic()
                finally:
                    closed.cancel()
        finally:
            self._closing.discard(closing)
