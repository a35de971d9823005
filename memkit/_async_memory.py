"""``AsyncMemory``: the same methods as ``Memory``, each a coroutine that runs the same flow
with awaits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from memkit._changes import ChangeWatch
from memkit._client import Client
from memkit._models import (
    AddResult,
    Change,
    ConsolidationResult,
    DeleteResult,
    EntityGraph,
    ExportedMemory,
    GraphEntity,
    GraphRelation,
    HistoryList,
    HistoryRecord,
    ImportResult,
    MemoryItem,
    MemoryStats,
    ReembedResult,
    SearchLogEntry,
    SearchResult,
)
from memkit._notes.models import IndexResult, StartupContext
from memkit._notes.watch import FolderWatch
from memkit._pipeline import requests
from memkit._pipeline.add.flow import OnError
from memkit._pipeline.features.feedback import feedback_flow
from memkit._pipeline.features.forget import reset_flow
from memkit._pipeline.features.lifecycle import flush_flow
from memkit._pipeline.features.reembed import Progress
from memkit._pipeline.features.tasks import update_task_flow
from memkit._pipeline.features.transfer import import_flow
from memkit._pipeline.memories import (
    delete_flow,
    get_flow,
    history_flow,
    revert_flow,
)
from memkit._pipeline.options import Timestamp
from memkit._pipeline.search.flow import SearchMode
from memkit._pipeline.write.versions import chain_flow
from memkit.embeddings.base import Embedder


class AsyncMemory(Client):
    """The same memory with every method a coroutine; I/O is natively async where the
    components are (litellm, and the stores with async clients)::

        async with AsyncMemory() as m:
            await m.add("I prefer dark mode", user_id="alice")
    """

    async def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        prompt: str | None = None,
        infer: bool = True,
        timestamp: Timestamp | None = None,
        on_error: OnError | None = None,
        expires_at: Timestamp | None = None,
        expiration_date: Timestamp | None = None,
        dry_run: bool = False,
        memory_type: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        surface: str | None = None,
        entities: Sequence[str] | None = None,
    ) -> AddResult:
        """See :meth:`Memory.add`."""
        return await self._runtime.arun(requests.add(
            self._settings, messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            filters=filters, prompt=prompt, infer=infer, timestamp=timestamp, on_error=on_error,
            expires_at=expires_at, expiration_date=expiration_date, dry_run=dry_run,
            memory_type=memory_type, importance=importance, confidence=confidence, surface=surface,
            entities=entities))

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        min_confidence: float | None = None,
        graph: bool | None = None,
        scopes: Sequence[Mapping[str, str | None]] | None = None,
        offset: int = 0,
        rerank: bool = False,
        entity: str | None = None,
    ) -> SearchResult:
        """See :meth:`Memory.search`."""
        return await self._runtime.arun(requests.search(
            self._settings, query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit,
            filters=filters, threshold=threshold, mode=mode, top_k=top_k, as_of=as_of,
            include_expired=include_expired, min_confidence=min_confidence, graph=graph,
            scopes=scopes, offset=offset, rerank=rerank, entity=entity))

    async def get(self, memory_id: str, *, reinforce: bool = True) -> MemoryItem | None:
        """See :meth:`Memory.get`."""
        return await self._runtime.arun(get_flow(memory_id, self._settings.now(),
                                                 self._settings.lifecycle, bool(reinforce)))

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        surface: str | None = None,
        offset: int = 0,
        entity: str | None = None,
    ) -> SearchResult:
        """See :meth:`Memory.get_all`."""
        return await self._runtime.arun(requests.get_all(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters, limit=limit,
            top_k=top_k, as_of=as_of, include_expired=include_expired, surface=surface,
            offset=offset, entity=entity))

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        data: str | None = None,
        expires_at: Timestamp | None = None,
        memory_type: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        surface: str | None = None,
        if_updated_at: Timestamp | None = None,
    ) -> MemoryItem:
        """See :meth:`Memory.update`."""
        return await self._runtime.arun(requests.update(self._settings, memory_id, text, metadata=metadata,
                                                data=data, expires_at=expires_at,
                                                memory_type=memory_type, importance=importance,
                                                confidence=confidence, surface=surface,
                                                if_updated_at=if_updated_at))

    async def delete(self, memory_id: str, *, hard: bool = False,
                     actor_id: str | None = None) -> None:
        """See :meth:`Memory.delete`."""
        return await self._runtime.arun(delete_flow(
            memory_id, bool(hard), self._settings.now(), self._settings.graph,
            requests.actor_of(actor_id)))

    async def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """See :meth:`Memory.delete_all`."""
        return await self._runtime.arun(requests.delete_all(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    async def history(self, memory_id: str) -> HistoryList:
        """See :meth:`Memory.history`."""
        return await self._runtime.arun(history_flow(memory_id))

    async def changes(self, after: str | None = None, *, user_id: str | None = None,
                      agent_id: str | None = None, run_id: str | None = None,
                      limit: int = 100) -> list[Change]:
        """See :meth:`Memory.changes`."""
        return await self._runtime.arun(requests.changes(after, user_id, agent_id, run_id, limit))

    def watch(self, after: str | None = None, *, user_id: str | None = None,
              agent_id: str | None = None, run_id: str | None = None) -> ChangeWatch:
        """The changes of a scope (every scope without one) as they commit, in this process
        or another one sharing the history, each once, in commit order: those after
        ``after`` (a :class:`~memkit.Change`'s ``position``), else those committed after
        entering::

            async with memory.watch(user_id="alice") as changes:
                async for change in changes:
                    print(change.event, change.memory_id, change.position)
        """
        return ChangeWatch(self._runtime, after, user_id, agent_id, run_id)

    async def versions(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`Memory.versions`."""
        return await self._runtime.arun(chain_flow(memory_id))

    async def revert(self, event_id: str) -> HistoryRecord:
        """See :meth:`Memory.revert`."""
        return await self._runtime.arun(revert_flow(event_id, self._settings.now()))

    async def supersede(
        self, memory_id: str, text: str, *, metadata: dict[str, Any] | None = None,
        expires_at: Timestamp | None = None,
    ) -> MemoryItem:
        """See :meth:`Memory.supersede`."""
        return await self._runtime.arun(requests.supersede(self._settings, memory_id, text, metadata, expires_at))

    async def purge(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        actor_id: str | None = None,
    ) -> int:
        """See :meth:`Memory.purge`."""
        return await self._runtime.arun(requests.purge(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters,
            actor_id=actor_id))

    async def reset(self) -> None:
        """See :meth:`Memory.reset`."""
        return await self._runtime.arun(reset_flow(self._settings.graph is not None,
                                                   self._settings.now))

    async def repair(self) -> int:
        """See :meth:`Memory.repair`."""
        return await self._runtime.arun(self._repair())

    async def prune(
        self,
        below: float = 0.05,
        *,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """See :meth:`Memory.prune`."""
        return await self._runtime.arun(requests.prune(self._settings, below, dry_run, user_id=user_id,
                                               agent_id=agent_id, run_id=run_id, filters=filters))

    async def consolidate(
        self,
        *,
        threshold: float | None = None,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> ConsolidationResult:
        """See :meth:`Memory.consolidate`."""
        return await self._runtime.arun(requests.consolidate(
            self._settings, threshold, dry_run, user_id=user_id, agent_id=agent_id, run_id=run_id,
            filters=filters))

    async def stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> MemoryStats:
        """See :meth:`Memory.stats`."""
        return await self._runtime.arun(requests.stats(self._settings, user_id=user_id, agent_id=agent_id,
                                               run_id=run_id, filters=filters))

    async def feedback(self, memory_id: str, *, useful: bool) -> None:
        """See :meth:`Memory.feedback`."""
        return await self._runtime.arun(feedback_flow(memory_id, useful, self._settings.now(),
                                                      self._settings.lifecycle))

    async def search_log(self, *, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None, limit: int = 100) -> list[SearchLogEntry]:
        """See :meth:`Memory.search_log`."""
        return await self._runtime.arun(requests.search_log(self._settings, user_id, agent_id, run_id, limit))

    async def export(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[ExportedMemory]:
        """See :meth:`Memory.export`."""
        return await self._runtime.arun(requests.export(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    async def import_(
        self, memories: Iterable[ExportedMemory | Mapping[str, Any]]
    ) -> ImportResult:
        """See :meth:`Memory.import_`."""
        return await self._runtime.arun(import_flow(memories))

    # -- notes, tasks, startup ------------------------------------------------------------
    async def index_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                           agent_id: str | None = None, run_id: str | None = None,
                           max_file_bytes: int = 100_000) -> IndexResult:
        """See :meth:`Memory.index_folder`."""
        return await self._runtime.arun(requests.index(self._settings, path, max_file_bytes, user_id, agent_id,
                                               run_id))

    async def watch_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                           agent_id: str | None = None, run_id: str | None = None,
                           max_file_bytes: int = 100_000, debounce_ms: int = 500,
                           on_index: Callable[[IndexResult], Any] | None = None) -> FolderWatch:
        """See :meth:`Memory.watch_folder`; the watch thread indexes with blocking calls
        (``on_index`` is called in that thread)."""
        return await asyncio.to_thread(self._watch, path, max_file_bytes, debounce_ms,
                                       on_index, user_id, agent_id, run_id)

    async def update_task(self, memory_id: str, *, status: str) -> MemoryItem:
        """See :meth:`Memory.update_task`."""
        return await self._runtime.arun(update_task_flow(memory_id, status, self._settings.now()))

    async def startup_context(self, *, user_id: str | None = None, agent_id: str | None = None,
                              run_id: str | None = None,
                              budget_tokens: int = 1000) -> StartupContext:
        """See :meth:`Memory.startup_context`."""
        return await self._runtime.arun(requests.startup(self._settings, budget_tokens, user_id, agent_id,
                                                 run_id))

    # -- graph ---------------------------------------------------------------------------
    async def reembed(self, embedder: Embedder, *, batch_size: int = 256,
                      on_progress: Progress | None = None) -> ReembedResult:
        """See :meth:`Memory.reembed`."""
        return await self._runtime.arun(requests.reembed(
            self._settings, self._runtime.embedder, embedder, batch_size, on_progress))

    async def get_entity(self, name: str, *, user_id: str | None = None,
                         agent_id: str | None = None, run_id: str | None = None,
                         ) -> GraphEntity | None:
        """See :meth:`Memory.get_entity`."""
        return await self._runtime.arun(requests.get_entity(self._settings, name, user_id, agent_id, run_id))

    async def get_entities(self, *, type: str | None = None, limit: int = 100,
                           user_id: str | None = None, agent_id: str | None = None,
                           run_id: str | None = None) -> list[GraphEntity]:
        """See :meth:`Memory.get_entities`."""
        return await self._runtime.arun(requests.get_entities(self._settings, type, limit, user_id, agent_id,
                                                      run_id))

    async def get_entity_graph(self, name: str | list[str], *, depth: int = 1,
                               user_id: str | None = None, agent_id: str | None = None,
                               run_id: str | None = None, include_closed: bool = False,
                               include_memories: bool = False) -> EntityGraph:
        """See :meth:`Memory.get_entity_graph`."""
        return await self._runtime.arun(requests.get_entity_graph(
            self._settings, name, depth, user_id, agent_id, run_id, include_closed,
            include_memories))

    async def add_entity(self, name: str, *, type: str | None = None,
                         summary: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None, run_id: str | None = None) -> GraphEntity:
        """See :meth:`Memory.add_entity`."""
        return await self._runtime.arun(requests.add_entity(self._settings, name, type, summary, user_id,
                                                    agent_id, run_id))

    async def add_relation(self, source: str, relation: str, target: str, *,
                           source_type: str | None = None, target_type: str | None = None,
                           user_id: str | None = None, agent_id: str | None = None,
                           run_id: str | None = None) -> GraphRelation:
        """See :meth:`Memory.add_relation`."""
        return await self._runtime.arun(requests.add_relation(self._settings, source, relation, target,
                                                      source_type, target_type, user_id,
                                                      agent_id, run_id))

    async def delete_relation(self, source: str, relation: str, target: str, *,
                              user_id: str | None = None, agent_id: str | None = None,
                              run_id: str | None = None) -> int:
        """See :meth:`Memory.delete_relation`."""
        return await self._runtime.arun(requests.delete_relation(self._settings, source, relation, target,
                                                         user_id, agent_id, run_id))

    async def delete_entity(self, name: str, *, user_id: str | None = None,
                            agent_id: str | None = None, run_id: str | None = None) -> bool:
        """See :meth:`Memory.delete_entity`."""
        return await self._runtime.arun(requests.delete_entity(self._settings, name, user_id, agent_id, run_id))

    async def aclose(self) -> None:
        """Write buffered reinforcements, then release resources, closing async clients on
        this event loop. Closing again does nothing; any other call then raises
        :class:`ClosedError`."""
        if self._runtime.closed:
            return
        try:
            await self._runtime.arun(flush_flow(self._settings.lifecycle))
        finally:
            await self._runtime.aclose()
            if self._reranker is not None:
                await asyncio.to_thread(self._reranker.close)


    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
