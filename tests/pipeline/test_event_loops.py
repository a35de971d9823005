"""One ``AsyncMemory`` used from one event loop after another (a script that calls
``asyncio.run`` per step, a test suite with a loop per test)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memkit import AsyncMemory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM


class OpenWaits(SQLiteStore):
    """A store whose opening waits for ``go``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.inside, self.go = threading.Event(), threading.Event()

    def open(self, dimension: int, model: str) -> None:
        self.inside.set()
        self.go.wait(60)
        super().open(dimension, model)


def test_calls_on_a_new_loop_open_the_store_after_a_first_open_was_cancelled(
    tmp_path: Path,
) -> None:
    store = OpenWaits(str(tmp_path / "memkit.db"))
    m = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store)

    async def first_requests_time_out(waits: ThreadPoolExecutor) -> None:
        searches = [asyncio.create_task(m.search("tea", user_id="alice")) for _ in range(2)]
        await asyncio.get_running_loop().run_in_executor(waits, store.inside.wait)
        for search in searches:
            search.cancel()
        await asyncio.wait(searches)
        assert all(search.cancelled() for search in searches)
        store.go.set()

    async def then_adds() -> list[str]:
        async with m:
            done = await asyncio.gather(*(m.add(f"Likes tea number {i}", user_id="alice",
                                                infer=False) for i in range(3)))
            return [e.memory for result in done for e in result.results]

    with ThreadPoolExecutor(1) as waits:
        asyncio.run(first_requests_time_out(waits))
    assert asyncio.run(then_adds()) == [f"Likes tea number {i}" for i in range(3)]
