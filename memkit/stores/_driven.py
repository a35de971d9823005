"""Stores whose operations are written once, as generators of engine calls.

An operation (``_insert``, ``_search``, ...) yields what the engine must do and
receives the answers; the store supplies one driver that runs it with blocking
calls (``_run``) and one that awaits (``_arun``). The public sync and async
methods below are then the same line each, for every such store.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import time
from abc import abstractmethod
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from memkit._errors import MemkitError, VectorStoreError
from memkit._filters import Filter
from memkit.stores._ops import arun, run
from memkit.stores.base import (
    PROJECTION_PAGE,
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    check_projection,
    projected,
)

T = TypeVar("T")
C = TypeVar("C")
Op = Generator[Any, Any, T]


Transient = Callable[[Exception], bool]
#: waits (seconds) before each retry of a call that failed transiently
RETRY_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _never(exc: Exception) -> bool:
    return False


def run_calls(op: Generator[Callable[[C], Any], Any, T], client: C, engine: str,
              lock: contextlib.AbstractContextManager[Any] | None = None,
              transient: Transient = _never) -> T:
    """Drive ``op``: each yielded call is made on ``client`` (retried with short waits while
    ``transient(error)``); engine errors become :class:`~memkit.VectorStoreError`."""

    def execute(call: Callable[[C], Any]) -> Any:
        for wait in (*RETRY_WAITS, None):
            with lock or contextlib.nullcontext():
                try:
                    return call(client)
                except MemkitError:
                    raise
                except Exception as exc:
                    if wait is None or not transient(exc):
                        raise VectorStoreError(f"{engine}: {exc}") from exc
            time.sleep(wait)

    return run(op, execute)


async def arun_calls(op: Generator[Callable[[C], Any], Any, T], client: Any, engine: str,
                     transient: Transient = _never) -> T:
    """Drive ``op`` on an async client whose methods mirror the sync client's as coroutines."""

    async def execute(call: Callable[[C], Any]) -> Any:
        for wait in (*RETRY_WAITS, None):
            try:
                return await call(client)
            except MemkitError:
                raise
            except Exception as exc:
                if wait is None or not transient(exc):
                    raise VectorStoreError(f"{engine}: {exc}") from exc
            await asyncio.sleep(wait)

    return await arun(op, execute)


class DrivenStore(VectorStore):
    """A :class:`VectorStore` built from generator operations and two drivers."""

    @abstractmethod
    def _run(self, op: Op[T]) -> T: ...

    @abstractmethod
    async def _arun(self, op: Op[T]) -> T: ...

    def _run_read(self, op: Op[T]) -> T:
        """Run a read (get, search, list, count, project); an engine whose reads need no
        transaction overrides it."""
        return self._run(op)

    async def _arun_read(self, op: Op[T]) -> T:
        return await self._arun(op)

    @abstractmethod
    def _reset(self) -> Op[None]: ...

    @abstractmethod
    def _insert(self, records: Sequence[Record]) -> Op[None]: ...

    @abstractmethod
    def _update(self, records: Sequence[Record]) -> Op[None]: ...

    @abstractmethod
    def _delete(self, ids: Sequence[str]) -> Op[None]: ...

    @abstractmethod
    def _get(self, id: str) -> Op[Record | None]: ...

    @abstractmethod
    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[builtins.list[Hit]]: ...

    def _keyword_search(self, text: str, limit: int, filter: Filter | None) -> Op[builtins.list[Hit]]:
        raise NotImplementedError(f"{type(self).__name__} has no keyword search")

    @abstractmethod
    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[builtins.list[Record], str | None]]: ...

    @abstractmethod
    def _count(self, filter: Filter | None) -> Op[int]: ...

    def _project(self, fields: Sequence[str],
                 filter: Filter | None) -> Op[builtins.list[tuple[Any, ...]]]:
        """:meth:`VectorStore.project` as pages of ``_list``; an engine that selects
        columns overrides it."""
        check_projection(fields)
        rows: builtins.list[tuple[Any, ...]] = []
        cursor: str | None = None
        while True:
            page, cursor = yield from self._list(filter, PROJECTION_PAGE, cursor, "id")
            rows.extend(projected(page, fields))
            if cursor is None:
                return rows

    def reset(self) -> None:
        self._run(self._reset())

    def insert(self, records: Sequence[Record]) -> None:
        self._run(self._insert(records))

    def update(self, records: Sequence[Record]) -> None:
        self._run(self._update(records))

    def delete(self, ids: Sequence[str]) -> None:
        self._run(self._delete(ids))

    def get(self, id: str) -> Record | None:
        return self._run_read(self._get(id))

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        return self._run_read(self._search(vector, limit, filter))

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        return self._run_read(self._keyword_search(text, limit, filter))

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        return self._run_read(self._list(filter, limit, cursor, order))

    def count(self, filter: Filter | None = None) -> int:
        return self._run_read(self._count(filter))

    def project(self, fields: Sequence[str],
                filter: Filter | None = None) -> builtins.list[tuple[Any, ...]]:
        return self._run_read(self._project(fields, filter))

    async def areset(self) -> None:
        await self._arun(self._reset())

    async def ainsert(self, records: Sequence[Record]) -> None:
        await self._arun(self._insert(records))

    async def aupdate(self, records: Sequence[Record]) -> None:
        await self._arun(self._update(records))

    async def adelete(self, ids: Sequence[str]) -> None:
        await self._arun(self._delete(ids))

    async def aget(self, id: str) -> Record | None:
        return await self._arun_read(self._get(id))

    async def asearch(
        self, vector: Vector, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await self._arun_read(self._search(vector, limit, filter))

    async def akeyword_search(
        self, text: str, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await self._arun_read(self._keyword_search(text, limit, filter))

    async def alist(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        return await self._arun_read(self._list(filter, limit, cursor, order))

    async def acount(self, filter: Filter | None = None) -> int:
        return await self._arun_read(self._count(filter))

    async def aproject(self, fields: Sequence[str],
                       filter: Filter | None = None) -> builtins.list[tuple[Any, ...]]:
        return await self._arun_read(self._project(fields, filter))
