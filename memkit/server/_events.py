"""The change feed: the history's memory changes, from every process that shares it, and the
summaries of consolidations run by this server process.

A stream reads the changes from the history (:meth:`AsyncMemory.watch`) in commit order, so
every server process, and any other process writing the same memory, feeds every stream;
each event's SSE ``id`` is its position, from which ``Last-Event-ID`` resumes. What is
not in the history, ``consolidation_complete`` and ``entity_created``, the process that
made it hands to its own streams, after every change committed before it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from memkit import AsyncMemory, Change, MemkitError
from memkit._models import ConsolidationResult, GraphEntity
from memkit._time import to_iso, utcnow
from memkit.server._auth import Grant

EventType = Literal["memory_created", "memory_updated", "memory_deleted",
                    "consolidation_complete", "entity_created"]
_TYPES: dict[str, EventType] = {"ADD": "memory_created", "UPDATE": "memory_updated",
                                "DELETE": "memory_deleted", "PURGE": "memory_deleted"}


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    type: EventType
    id: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memory: str | None = None
    timestamp: str = field(default_factory=lambda: to_iso(utcnow()))
    details: dict[str, Any] | None = None
    #: the SSE ``id``: the change's position in the history (summaries have none)
    position: str | None = None

    @classmethod
    def of_change(cls, change: Change) -> ChangeEvent:
        kept = change.event in ("ADD", "UPDATE")
        return cls(_TYPES[change.event], change.memory_id, change.user_id, change.agent_id,
                   change.run_id, change.new_value if kept else None,
                   to_iso(change.timestamp),
                   {"purged": True} if change.event == "PURGE" else None, change.position)

    def scope(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}

    def sse(self) -> str:
        data = {k: v for k, v in asdict(self).items()
                if k not in ("type", "details", "position")}
        line = "" if self.position is None else f"id: {self.position}\n"
        return f"event: {self.type}\n{line}data: {json.dumps(data | (self.details or {}))}\n\n"


def entity_events(entities: Iterable[GraphEntity]) -> list[ChangeEvent]:
    """An ``entity_created`` per entity the graph created: its id, name, type and scope."""
    return [ChangeEvent("entity_created", e.id, e.user_id, e.agent_id, e.run_id,
                        details={"name": e.name, "type": e.type}) for e in entities]


def consolidation_events(report: ConsolidationResult,
                         scope: Mapping[str, str | None]) -> list[ChangeEvent]:
    """``consolidation_complete`` once per scope that had clusters (the scope asked for when
    none had): how many memories were examined, its clusters, and each keeper with the ids
    merged into it."""
    scopes: dict[tuple[str | None, str | None, str | None], list[Any]] = {}
    for cluster in report.clusters:
        keeper = cluster.keeper
        scopes.setdefault((keeper.user_id, keeper.agent_id, keeper.run_id), []).append(cluster)
    if not scopes:
        scopes[(scope.get("user_id"), scope.get("agent_id"), scope.get("run_id"))] = []
    return [ChangeEvent(
        "consolidation_complete", str(uuid.uuid4()), user, agent, run, details={
            "examined": report.examined, "clusters": len(clusters),
            "merged": {c.keeper.id: [m.id for m in c.merged] for c in clusters}},)
        for (user, agent, run), clusters in scopes.items()]


@dataclass(eq=False, slots=True)
class _Subscriber:
    grant: Grant
    narrow: dict[str, str]
    queue: asyncio.Queue[ChangeEvent | None]

    def wants(self, event: ChangeEvent) -> bool:
        scope = event.scope()
        return self.grant.can_see(scope) and all(scope.get(f) == v for f, v in self.narrow.items())


class Broadcaster:
    """The streams of this process, and the summaries handed to them. A stream that falls
    ``backlog`` summaries behind ends (its client reconnects) rather than slowing the
    handlers down."""

    def __init__(self, backlog: int = 1000) -> None:
        self.backlog = backlog
        self._subscribers: set[_Subscriber] = set()

    def publish(self, events: Iterable[ChangeEvent]) -> None:
        for event in events:
            for sub in list(self._subscribers):
                if not sub.wants(event):
                    continue
                try:
                    sub.queue.put_nowait(event)
                except asyncio.QueueFull:
                    self._subscribers.discard(sub)

    def close(self) -> None:
        """End every stream (server shutdown)."""
        for sub in list(self._subscribers):
            self._subscribers.discard(sub)
            while True:
                try:
                    sub.queue.put_nowait(None)
                    break
                except asyncio.QueueFull:
                    sub.queue.get_nowait()

    async def stream(self, memory: AsyncMemory, grant: Grant, scope: dict[str, str],
                     after: str | None, keepalive: float = 15.0) -> AsyncIterator[str]:
        """Server-Sent Events text: a ``connected`` comment once following, then the events
        of ``scope`` (the grant's binding included) after position ``after`` (else from
        now), and a keep-alive comment every ``keepalive`` seconds of silence. An event of
        this process goes out after a read of the history that began once it was
        published, so after every change committed before it."""
        sub = _Subscriber(grant, scope, asyncio.Queue(self.backlog))
        self._subscribers.add(sub)
        try:
            async with memory.watch(after, **scope) as changes:
                yield ": connected\n\n"
                quiet_since = time.monotonic()
                next_local = asyncio.ensure_future(sub.queue.get())
                try:
                    while True:
                        heard = changes.heard
                        arrived = [next_local.result()] if next_local.done() else []
                        while not sub.queue.empty():
                            arrived.append(sub.queue.get_nowait())
                        if next_local.done():
                            next_local = asyncio.ensure_future(sub.queue.get())
                        try:
                            batch = await changes.read()
                        except MemkitError:
                            return  # the history cannot be read: the client reconnects
                        out = [ChangeEvent.of_change(c) for c in batch]
                        out += [e for e in arrived if e is not None]
                        for event in out:
                            yield event.sse()
                        if None in arrived:
                            return  # server shutdown
                        if out:
                            quiet_since = time.monotonic()
                        if sub not in self._subscribers and sub.queue.empty():
                            return  # dropped for falling behind
                        if len(batch) == changes.batch:
                            continue
                        wait = asyncio.ensure_future(changes.wait(heard, keepalive))
                        await asyncio.wait({wait, next_local},
                                           return_when=asyncio.FIRST_COMPLETED)
                        wait.cancel()
                        if time.monotonic() >= quiet_since + keepalive:
                            yield ": keepalive\n\n"
                            quiet_since = time.monotonic()
                finally:
                    next_local.cancel()
        finally:
            self._subscribers.discard(sub)
