"""The change feed: handlers publish their changes; a subscriber gets what its key may see."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from memkit._models import ConsolidationResult, GraphEntity
from memkit._time import to_iso, utcnow
from memkit.server._auth import Grant

EventType = Literal["memory_created", "memory_updated", "memory_deleted",
                    "consolidation_complete", "entity_created"]


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

    @classmethod
    def of(cls, type: EventType, id: str, scope: Mapping[str, str | None],
           memory: str | None = None) -> ChangeEvent:
        return cls(type, id, scope.get("user_id"), scope.get("agent_id"), scope.get("run_id"),
                   memory)

    def scope(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}

    def sse(self) -> str:
        data = {k: v for k, v in asdict(self).items() if k not in ("type", "details")}
        return f"event: {self.type}\ndata: {json.dumps(data | (self.details or {}))}\n\n"


def entity_events(entities: Iterable[GraphEntity]) -> list[ChangeEvent]:
    """An ``entity_created`` per entity the graph created: its id, name, type and scope."""
    return [ChangeEvent("entity_created", e.id, e.user_id, e.agent_id, e.run_id,
                        details={"name": e.name, "type": e.type}) for e in entities]


def consolidation_events(report: ConsolidationResult,
                         scope: Mapping[str, str | None]) -> list[ChangeEvent]:
    """A ``memory_deleted`` per merged memory (it ended), then ``consolidation_complete``
    once per scope that had clusters (the scope asked for when none had): how many
    memories were examined, its clusters, and each keeper with the ids merged into it."""
    scopes: dict[tuple[str | None, str | None, str | None], list[Any]] = {}
    for cluster in report.clusters:
        keeper = cluster.keeper
        scopes.setdefault((keeper.user_id, keeper.agent_id, keeper.run_id), []).append(cluster)
    if not scopes:
        scopes[(scope.get("user_id"), scope.get("agent_id"), scope.get("run_id"))] = []
    ended = [ChangeEvent("memory_deleted", m.id, m.user_id, m.agent_id, m.run_id)
             for c in report.clusters for m in c.merged]
    return [*ended, *(ChangeEvent(
        "consolidation_complete", str(uuid.uuid4()), user, agent, run, details={
            "examined": report.examined, "clusters": len(clusters),
            "merged": {c.keeper.id: [m.id for m in c.merged] for c in clusters}})
        for (user, agent, run), clusters in scopes.items())]


@dataclass(eq=False, slots=True)
class _Subscriber:
    grant: Grant
    narrow: dict[str, str]
    queue: asyncio.Queue[ChangeEvent | None]

    def wants(self, event: ChangeEvent) -> bool:
        scope = event.scope()
        return self.grant.can_see(scope) and all(scope.get(f) == v for f, v in self.narrow.items())


class Broadcaster:
    """In-process fan-out. A subscriber that falls ``backlog`` events behind is dropped
    (its stream ends) rather than slowing the handlers down."""

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

    async def stream(
        self, grant: Grant, narrow: dict[str, str], keepalive: float = 15.0
    ) -> AsyncIterator[str]:
        """Server-Sent Events text: a ``connected`` comment first, then the events."""
        sub = _Subscriber(grant, narrow, asyncio.Queue(self.backlog))
        self._subscribers.add(sub)
        try:
            yield ": connected\n\n"
            while True:
                try:
                    event = await asyncio.wait_for(sub.queue.get(), keepalive)
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                if event is None:
                    return
                yield event.sse()
                if sub not in self._subscribers and sub.queue.empty():
                    return  # dropped for falling behind
        finally:
            self._subscribers.discard(sub)
