"""The two drivers: one runs a flow with blocking calls, one with awaits.

A flow is a generator that yields effects (memkit._pipeline.effects) and
receives their results; it holds all the logic, so ``Memory`` and
``AsyncMemory`` share every line of it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from memkit._errors import MemkitError, VectorStoreError
from memkit._pipeline.effects import (
    Apply,
    Complete,
    Effect,
    Embed,
    Flow,
    Get,
    KeywordSearch,
    ListRecords,
    ReadHistory,
    Reset,
    Search,
)
from memkit.embeddings.base import Embedder, Matrix, normalise
from memkit.history.base import HistoryStore
from memkit.llms.base import LLM
from memkit.stores.base import VectorStore

T = TypeVar("T")


class Runtime:
    """The components a flow's effects run against."""

    def __init__(
        self, llm: LLM, embedder: Embedder, store: VectorStore, history: HistoryStore
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.store = store
        self.history = history
        self._opened = False
        self._open_lock = threading.Lock()

    # -- sync ------------------------------------------------------------
    def run(self, flow: Flow[T]) -> T:
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            try:
                result, error = self._handle(effect), None
            except MemkitError as exc:
                result, error = None, exc

    def _open(self) -> None:
        if not self._opened:
            with self._open_lock:
                if not self._opened:
                    self.store.open(self.embedder.dimension, self.embedder.model_name)
                    self._opened = True

    def _handle(self, effect: Effect) -> Any:
        match effect:
            case Complete(request):
                return self.llm.complete(request)
            case Embed(texts):
                return self._checked(texts, self.embedder.embed(texts) if texts else None)
        self._open()
        with _store_errors():
            match effect:
                case Search(vector, limit, filter):
                    return self.store.search(vector, limit=limit, filter=filter)
                case KeywordSearch(text, limit, filter):
                    return self.store.keyword_search(text, limit=limit, filter=filter)
                case Get(id):
                    return self.store.get(id)
                case ListRecords(filter, limit, cursor):
                    return self.store.list(filter, limit=limit, cursor=cursor)
                case Apply(batch):
                    return self.store.apply(batch, self.history)
                case ReadHistory(memory_id):
                    return self.history.get(memory_id)
                case Reset():
                    self.store.reset()
                    return self.history.reset()
        raise TypeError(f"unknown effect {effect!r}")

    def close(self) -> None:
        for part in (self.store, self.history, self.embedder, self.llm):
            part.close()

    # -- async -----------------------------------------------------------
    async def arun(self, flow: Flow[T]) -> T:
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            try:
                result, error = await self._ahandle(effect), None
            except MemkitError as exc:
                result, error = None, exc

    async def _aopen(self) -> None:
        if not self._opened:
            await self.store.aopen(self.embedder.dimension, self.embedder.model_name)
            self._opened = True

    async def _ahandle(self, effect: Effect) -> Any:
        match effect:
            case Complete(request):
                return await self.llm.acomplete(request)
            case Embed(texts):
                return self._checked(texts, await self.embedder.aembed(texts) if texts else None)
        await self._aopen()
        with _store_errors():
            match effect:
                case Search(vector, limit, filter):
                    return await self.store.asearch(vector, limit=limit, filter=filter)
                case KeywordSearch(text, limit, filter):
                    return await self.store.akeyword_search(text, limit=limit, filter=filter)
                case Get(id):
                    return await self.store.aget(id)
                case ListRecords(filter, limit, cursor):
                    return await self.store.alist(filter, limit=limit, cursor=cursor)
                case Apply(batch):
                    return await self.store.aapply(batch, self.history)
                case ReadHistory(memory_id):
                    return await self.history.aget(memory_id)
                case Reset():
                    await self.store.areset()
                    return await self.history.areset()
        raise TypeError(f"unknown effect {effect!r}")

    async def aclose(self) -> None:
        await self.store.aclose()
        await self.history.aclose()
        await asyncio.to_thread(self.embedder.close)
        await asyncio.to_thread(self.llm.close)

    # -- shared ----------------------------------------------------------
    def _checked(self, texts: Sequence[str], rows: object) -> Matrix:
        dimension = self.embedder.dimension
        if rows is None:
            return np.zeros((0, dimension), dtype=np.float32)
        return normalise(rows, len(texts), dimension)


class _store_errors:
    """Wrap a store's own exceptions in VectorStoreError; memkit errors pass through."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None or isinstance(exc, MemkitError | NotImplementedError):
            return
        if isinstance(exc, Exception):
            raise VectorStoreError(f"{type(exc).__name__}: {exc}") from exc

