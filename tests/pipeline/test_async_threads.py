"""``AsyncMemory`` over a store with no async client: the store's calls never run on the
event loop, and a search's calls are one job for a worker thread (one hand-off)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memkit import AsyncMemory, Memory
from memkit.stores.base import Hit
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder

_job = threading.local()  # the number of the worker-thread job running on this thread


class _NumberedJobs(ThreadPoolExecutor):
    """The event loop's executor, numbering each job it is handed."""

    def __init__(self) -> None:
        super().__init__(4)
        self._numbers = itertools.count(1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        number = next(self._numbers)

        def numbered() -> Any:
            _job.number = number
            try:
                return fn(*args, **kwargs)
            finally:
                _job.number = None

        return super().submit(numbered)


class _Watched(SQLiteStore):
    """Records the worker-thread job each search call runs in (None: not in one)."""

    def __init__(self, path: str) -> None:
        super().__init__(path=path)
        self.calls: list[tuple[str, int | None]] = []

    def search(self, vector: Any, limit: int, filter: Any = None) -> list[Hit]:
        self.calls.append(("search", getattr(_job, "number", None)))
        return super().search(vector, limit, filter)

    def keyword_search(self, text: str, limit: int, filter: Any = None) -> list[Hit]:
        self.calls.append(("keyword_search", getattr(_job, "number", None)))
        return super().keyword_search(text, limit, filter)


def test_a_search_runs_its_store_calls_as_one_worker_thread_job(tmp_path: Path) -> None:
    store = _Watched(str(tmp_path / "m.db"))
    assert not store.native_async
    queries = ("green tea", "chess Sundays")

    async def main() -> list[list[str]]:
        asyncio.get_running_loop().set_default_executor(_NumberedJobs())
        async with AsyncMemory(embedder=HashEmbedder(), vector_store=store) as m:
            for text in ("User likes green tea", "User plays chess on Sundays"):
                await m.add(text, user_id="u", infer=False)
            store.calls.clear()
            found = [await m.search(q, user_id="u", mode="hybrid") for q in queries]
            return [[item.memory for item in result.results] for result in found]

    found = asyncio.run(main())
    assert [kind for kind, _ in store.calls] == ["search", "keyword_search"] * 2
    assert all(number is not None for _, number in store.calls)  # never on the event loop
    for first, second in (store.calls[0:2], store.calls[2:4]):
        assert first[1] == second[1]  # one hand-off for both of a search's calls

    m = Memory(embedder=HashEmbedder(), vector_store=SQLiteStore(path=str(tmp_path / "m.db")))
    assert found == [[item.memory for item in m.search(q, user_id="u", mode="hybrid").results]
                     for q in queries]  # the same results as the blocking shell
    m.close()
