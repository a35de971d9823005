"""The two drivers: one runs a flow with blocking calls, one with awaits.

A flow is a generator that yields effects (memkit._pipeline.effects) and
receives their results; it holds all the logic, so ``Memory`` and
``AsyncMemory`` share every line of it. :meth:`Runtime._job` is the one table
from effect to component call; each entry names the sync and the async call.
A feature's own effects (an access buffer, note files) are answered by the
handlers it gives the runtime (memkit._pipeline.calls.Handlers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np

from memkit._errors import ClosedError, ConfigError, GraphStoreError, MemkitError, StoreError, VectorStoreError
from memkit._pipeline.calls import Handlers, Job, job, local
from memkit._pipeline.effects import (
    AppendHistory,
    CloseRelations,
    Complete,
    Delete,
    DeleteEntities,
    DeleteRelations,
    DiscardEvents,
    DropShadow,
    Effect,
    Embed,
    EmbeddedNames,
    EntitiesById,
    EntityMemoryIds,
    FindEntities,
    FindRelations,
    Flow,
    ForgetGraphScope,
    ForgetHistory,
    ForgetMemories,
    ForgetScope,
    Get,
    GraphEffect,
    Insert,
    KeywordSearch,
    LinkMemories,
    ListRecords,
    LogSearch,
    Monotonic,
    Neighbourhood,
    OnShadow,
    OpenShadow,
    Project,
    ReadChanges,
    ReadEvent,
    ReadHistory,
    ReadSearchLog,
    ReplaceNameVectors,
    Repoint,
    ResetGraph,
    ResetHistory,
    ResetStore,
    ResolveNames,
    Scrub,
    Search,
    SetNameVectors,
    Switch,
    Transaction,
    Update,
    UpsertEntities,
    UpsertRelations,
    UseEmbedder,
    WriteEffect,
)
from memkit._pipeline.write.apply import Applied, transaction
from memkit.embeddings.base import Embedder, Matrix, normalise
from memkit.graph.base import GraphStore
from memkit.history.base import HistoryStore
from memkit.llms.base import LLM
from memkit.stores.base import VectorStore, WriteBatch, Writer

T = TypeVar("T")
_log = logging.getLogger("memkit")


class Runtime:
    """The components a flow's effects run against."""

    def __init__(
        self, llm: LLM, embedder: Embedder, store: VectorStore, history: HistoryStore,
        graph: GraphStore | None = None, handlers: Handlers | None = None,
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.store = store
        self.history = history
        self.graph = graph
        #: the features' own effects (memkit._pipeline.calls.Handlers)
        self.handlers: Handlers = handlers or {}
        #: what runs once the stores are open, before the first operation (the graph work a
        #: crashed process left owed); a store error there is logged, and the work stays owed
        self.on_open: Callable[[], Flow[Any]] | None = None
        self._opened = False
        #: set by close()/aclose(): every later call raises ClosedError, touching nothing
        self.closed = False
        self._open_lock = threading.Lock()
        self._aopen_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary())

    def _job(self, effect: Effect | WriteEffect) -> Job[Any]:
        handler = self.handlers.get(type(effect))
        if handler is not None:
            return handler(effect)
        match effect:
            case Complete(request):
                return Job(lambda: self.llm.complete(request),
                           lambda: self.llm.acomplete(request), store=False)
            case Embed(texts, embedder, query):
                by = embedder or self.embedder
                return Job(lambda: self._embed(texts, by, query),
                           lambda: self._aembed(texts, by, query), store=False)
            case UseEmbedder(embedder):
                return local(lambda: setattr(self, "embedder", embedder))
            case Monotonic():
                return local(time.perf_counter)
        return store_job(effect, self.store, self.history, self.store, self.graph)

    def refuse_closed(self) -> None:
        """Raise :class:`ClosedError` once the runtime is closed (before any component call:
        a closed store fails in its own words, or not at all)."""
        if self.closed:
            raise ClosedError

    # -- sync ------------------------------------------------------------
    def run(self, flow: Flow[T]) -> T:
        self.refuse_closed()
        return _drive(flow, self._handle)

    def _handle(self, effect: Effect) -> Any:
        if isinstance(effect, Transaction):
            self._open()
            return transact(self.store, self.history, effect, self.graph)
        task = self._job(effect)
        if not task.store:
            return task.call()
        self._open()
        with _store_errors(_failure(effect)):
            return task.call()

    def _open(self) -> None:
        if not self._opened:
            with self._open_lock:
                if not self._opened:
                    with _store_errors():
                        self.store.open(self.embedder.dimension, self.embedder.model_name)
                        self.history.open()  # its schema before any writer's transaction
                    if self.graph is not None:
                        with _store_errors(GraphStoreError):
                            self.graph.open()
                    self._opened = True
                    if self.on_open is not None:
                        try:
                            self.run(self.on_open())
                        except StoreError as exc:
                            _log.warning("the owed graph work was not replayed: %s", exc)

    def close(self) -> None:
        self.closed = True
        for part in (self.graph, self.store, self.history, self.embedder, self.llm):
            if part is not None:
                part.close()

    # -- async -----------------------------------------------------------
    async def arun(self, flow: Flow[T]) -> T:
        self.refuse_closed()
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            if self._blocking(effect):
                await self._aopen()
                step = await asyncio.to_thread(self._run_blocking, flow, effect)
                if isinstance(step, _Finished):
                    return step.value  # type: ignore[no-any-return]
                effect = step
            try:
                result, error = await self._ahandle(effect), None
            except MemkitError as exc:
                result, error = None, exc

    def _blocking(self, effect: Effect) -> bool:
        """Whether ``effect`` is a call on a store with no async client (a worker thread's
        work either way)."""
        return not self.store.native_async and isinstance(effect, _STORE_CALLS)

    def _run_blocking(self, flow: Flow[Any], effect: Effect) -> Effect | _Finished:
        """In a worker thread: ``effect`` and the blocking ones after it, one thread
        hand-off for them all (a hybrid search's two queries); returns the first effect
        left for the event loop, or the flow's result. The runtime's own in-process effects
        run here too: a thread cannot be stopped, so when its caller is cancelled, what it
        commits still gets its consequences (a re-embedding's switch, its new embedder)."""
        while True:
            try:
                result, error = self._handle(effect), None
            except MemkitError as exc:
                result, error = None, exc
            try:
                effect = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                return _Finished(stop.value)
            if not self._blocking(effect) and not isinstance(effect, UseEmbedder | Monotonic):
                return effect

    async def _ahandle(self, effect: Effect) -> Any:
        if isinstance(effect, Transaction):
            await self._aopen()
            return await atransact(self.store, self.history, effect, self.graph)
        task = self._job(effect)
        if not task.store:
            return await task.acall()
        await self._aopen()
        with _store_errors(_failure(effect)):
            return await task.acall()

    async def _aopen(self) -> None:
        if self._opened:
            return
        # Concurrent first calls open the store once (creating a collection twice fails
        # on several engines); an asyncio lock serves one loop, so each loop has its own (a
        # first open that failed or was cancelled leaves the next loop's callers to open).
        loop = asyncio.get_running_loop()
        lock = self._aopen_locks.get(loop)
        if lock is None:
            lock = self._aopen_locks[loop] = asyncio.Lock()
        async with lock:
            if not self._opened:
                with _store_errors():
                    await self.store.aopen(self.embedder.dimension, self.embedder.model_name)
                    await self.history.aopen()  # its schema before any writer's transaction
                if self.graph is not None:
                    with _store_errors(GraphStoreError):
                        await self.graph.aopen()
                self._opened = True
                if self.on_open is not None:
                    try:
                        await self.arun(self.on_open())
                    except StoreError as exc:
                        _log.warning("the owed graph work was not replayed: %s", exc)

    async def aclose(self) -> None:
        self.closed = True
        if self.graph is not None:
            await self.graph.aclose()
        await self.store.aclose()
        await self.history.aclose()
        await asyncio.to_thread(self.embedder.close)
        await asyncio.to_thread(self.llm.close)

    # -- shared ----------------------------------------------------------
    def _embed(self, texts: Sequence[str], embedder: Embedder, query: bool) -> Matrix:
        embed = embedder.embed_query if query else embedder.embed
        return _checked(texts, embed(texts) if texts else None, embedder.dimension)

    async def _aembed(self, texts: Sequence[str], embedder: Embedder, query: bool) -> Matrix:
        embed = embedder.aembed_query if query else embedder.aembed
        return _checked(texts, await embed(texts) if texts else None, embedder.dimension)


_STORE_CALLS = (Search, KeywordSearch, Get, ListRecords, Project, Transaction)
"""The effects that call the vector store only (a transaction: its whole write flow)."""


@dataclass(frozen=True, slots=True)
class _Finished:
    value: Any


def _checked(texts: Sequence[str], rows: object, dimension: int) -> Matrix:
    if not texts:  # not ``rows is None``: an embedder that answers None gets an error
        return np.zeros((0, dimension), dtype=np.float32)
    return normalise(rows, len(texts), dimension)


def store_job(effect: Effect | WriteEffect, store: VectorStore, history: HistoryStore,
              writer: Writer, graph: GraphStore | None = None) -> Job[Any]:
    """The table: what each store, history or graph effect calls. ``writer`` is the store,
    or the transaction a write flow runs in (which a graph sharing the store's file or
    database joins)."""
    match effect:
        case OnShadow(shadow, inner):
            return store_job(cast(WriteEffect, inner), shadow, history, shadow)
        case OpenShadow(dimension, model):
            return job(store.shadow, store.ashadow, dimension, model)
        case Switch(shadow):
            return job(writer.switch, writer.aswitch, shadow)
        case DropShadow(shadow):
            return job(store.discard, store.adiscard, shadow)
        case UpsertEntities() | UpsertRelations() | CloseRelations() | FindRelations() \
                | FindEntities() | Neighbourhood() | DeleteEntities() | DeleteRelations() \
                | ResolveNames() | SetNameVectors() | Repoint() | EmbeddedNames() \
                | EntitiesById() | LinkMemories() | EntityMemoryIds() \
                | ReplaceNameVectors() | ForgetMemories() | ForgetGraphScope() | ResetGraph():
            if graph is None:
                raise ConfigError("no graph store is configured (graph_store=...)")
            target = graph.bound(writer) if writer is not store and graph.joins(store) else graph
            return graph_job(effect, target)
        case Search(vector, limit, filter):
            return job(store.search, store.asearch, vector, limit, filter)
        case KeywordSearch(text, limit, filter):
            return job(store.keyword_search, store.akeyword_search, text, limit, filter)
        case Get(id):
            return job(store.get, store.aget, id)
        case ListRecords(filter, limit, cursor, order):
            return job(writer.list, writer.alist, filter, limit, cursor, order)
        case Project(fields, filter):
            return job(store.project, store.aproject, fields, filter)
        case ReadHistory(memory_id):
            return job(history.get, history.aget, memory_id)
        case ReadEvent(event_id):
            return job(history.event, history.aevent, event_id)
        case ReadChanges(after, scope, limit):
            return job(history.changes, history.achanges, after, dict(scope), limit)
        case LogSearch(entry):
            return job(history.log_searches, history.alog_searches, [entry])
        case ReadSearchLog(scope, limit):
            return job(history.searches, history.asearches, dict(scope), limit)
        case ResetStore():
            return job(store.reset, store.areset)
        case ResetHistory(cleared_at):
            return job(history.reset, history.areset, cleared_at)
        case ForgetHistory(memory_ids):
            return job(history.forget, history.aforget, memory_ids)
        case DiscardEvents(event_ids):
            return job(history.discard, history.adiscard, event_ids)
        case ForgetScope(scope, purged_at):
            return job(history.forget_scope, history.aforget_scope, dict(scope), purged_at)
        case Scrub():
            return job(_scrub, _ascrub, store, history, graph)
        case Insert(records):
            return job(writer.insert, writer.ainsert, records)
        case Update(records):
            return job(writer.update, writer.aupdate, records)
        case Delete(ids):
            return job(writer.delete, writer.adelete, ids)
        case AppendHistory(rows):
            return job(writer.write_history, writer.awrite_history, history, rows)
    raise TypeError(f"unknown effect {effect!r}")


def graph_job(effect: GraphEffect, graph: GraphStore) -> Job[Any]:
    """The table for the knowledge graph's effects: what each calls on ``graph``."""
    match effect:
        case UpsertEntities(scope, entities, now):
            return job(graph.upsert_entities, graph.aupsert_entities, scope, entities, now)
        case UpsertRelations(scope, relations, now):
            return job(graph.upsert_relations, graph.aupsert_relations, scope, relations, now)
        case CloseRelations(scope, ids, now):
            return job(graph.close_relations, graph.aclose_relations, scope, ids, now)
        case FindRelations(scope, source, type, target, memory_ids, include_closed):
            return job(graph.relations, graph.arelations, scope, source=source, type=type,
                       target=target, memory_ids=memory_ids, include_closed=include_closed)
        case FindEntities(scope, names, type, limit):
            return job(graph.entities, graph.aentities, scope, names=names, type=type, limit=limit)
        case Neighbourhood(scope, names, depth):
            return job(graph.neighbourhood, graph.aneighbourhood, scope, names, depth)
        case DeleteEntities(scope, names):
            return job(graph.delete_entities, graph.adelete_entities, scope, names)
        case DeleteRelations(scope, ids):
            return job(graph.delete_relations, graph.adelete_relations, scope, ids)
        case ResolveNames(scope, names, vectors, threshold, memory_ids):
            return job(graph.resolve, graph.aresolve, scope, names, vectors, threshold,
                       memory_ids)
        case EntitiesById(scope, ids):
            return job(graph.entities_by_id, graph.aentities_by_id, scope, ids)
        case LinkMemories(scope, names, memory_ids, now):
            return job(graph.link_memories, graph.alink_memories, scope, names, memory_ids, now)
        case EntityMemoryIds(scope, ids):
            return job(graph.memory_ids_of, graph.amemory_ids_of, scope, ids)
        case SetNameVectors(scope, names, vectors):
            return job(graph.set_vectors, graph.aset_vectors, scope, names, vectors)
        case Repoint(scope, moves):
            return job(graph.repoint, graph.arepoint, scope, moves)
        case EmbeddedNames():
            return job(graph.embedded_names, graph.aembedded_names)
        case ReplaceNameVectors(ids, vectors):
            return job(graph.replace_vectors, graph.areplace_vectors, ids, vectors)
        case ForgetMemories(memory_ids):
            return job(graph.forget_memories, graph.aforget_memories, memory_ids)
        case ForgetGraphScope(scope):
            return job(graph.forget_scope, graph.aforget_scope, dict(scope))
        case ResetGraph():
            return job(graph.reset, graph.areset)


def _scrub(store: VectorStore, history: HistoryStore, graph: GraphStore | None) -> None:
    for part in (store, history, graph):
        if part is not None:
            part.scrub()


async def _ascrub(store: VectorStore, history: HistoryStore, graph: GraphStore | None) -> None:
    for part in (store, history, graph):
        if part is not None:
            await part.ascrub()


def transact(store: VectorStore, history: HistoryStore, effect: Transaction[Any],
             graph: GraphStore | None = None) -> Any:
    """Run a write flow inside the store's transaction, with blocking calls."""
    with _store_errors(), _across_processes(store, history, effect.key), \
            store.transaction(effect.key) as writer:
        return _drive(effect.flow, lambda e: store_job(e, store, history, writer, graph).call())


def _across_processes(store: VectorStore, history: HistoryStore,
                      key: str) -> contextlib.AbstractContextManager[None]:
    """The history's lock on ``key`` when the store's transaction holds in this process only."""
    if store.locks_processes:
        return contextlib.nullcontext()
    return history.lock(store.collection_name, key)


def _aacross_processes(store: VectorStore, history: HistoryStore,
                       key: str) -> contextlib.AbstractAsyncContextManager[None]:
    if store.locks_processes:
        return contextlib.nullcontext()
    return history.alock(store.collection_name, key)


async def atransact(store: VectorStore, history: HistoryStore, effect: Transaction[Any],
                    graph: GraphStore | None = None) -> Any:
    """Run a write flow inside the store's transaction, with awaits where the store is
    natively async; otherwise the whole transaction runs in one worker thread (its lock
    or connection belongs to that thread from the first statement to the commit)."""
    if not store.native_async:
        return await asyncio.to_thread(transact, store, history, effect, graph)
    with _store_errors():
        async with _aacross_processes(store, history, effect.key), \
                store.atransaction(effect.key) as writer:
            flow, result = effect.flow, None
            while True:
                try:
                    write = flow.send(result)
                except StopIteration as stop:
                    return stop.value
                result = await store_job(write, store, history, writer, graph).acall()


def _drive(flow: Generator[Any, Any, T], handle: Callable[[Any], Any]) -> T:
    """Run ``flow`` with blocking calls; memkit errors are thrown back into it."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            result, error = handle(effect), None
        except MemkitError as exc:
            result, error = None, exc


def _failure(effect: Effect) -> type[StoreError]:
    """The error an engine's own exception becomes: the graph's, or the vector store's."""
    graph = isinstance(effect, GraphEffect)
    return GraphStoreError if graph else VectorStoreError


class _store_errors:
    """Wrap an engine's own exceptions in ``kind`` (VectorStoreError by default); memkit
    errors pass through."""

    def __init__(self, kind: type[StoreError] = VectorStoreError) -> None:
        self.kind = kind

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None or isinstance(exc, MemkitError | NotImplementedError):
            return
        if isinstance(exc, Exception):
            raise self.kind(f"{type(exc).__name__}: {exc}") from exc


def apply_batch(store: VectorStore, history: HistoryStore, batch: WriteBatch) -> Applied:
    """Apply ``batch`` to an open store outside a ``Memory`` (tools, tests)."""
    return transact(store, history, transaction(batch))  # type: ignore[no-any-return]


async def aapply_batch(store: VectorStore, history: HistoryStore, batch: WriteBatch) -> Applied:
    return await atransact(store, history, transaction(batch))  # type: ignore[no-any-return]
