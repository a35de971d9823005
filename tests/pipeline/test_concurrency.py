"""Concurrent adds of the same fact into one scope leave one memory."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from memkit import AsyncMemory, Memory
from memkit.llms.base import LLMRequest
from memkit.testing import FunctionLLM, HashEmbedder
from tests.stores.conftest import FACTORIES


def _same_fact(request: LLMRequest) -> dict[str, Any]:
    if request.purpose == "decision":
        return {"memory": [{"event": "ADD", "text": "User likes tea"}]}
    return {"facts": ["User likes tea"]}


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = FACTORIES[request.param](tmp_path_factory, "concurrency")
    yield made
    made.close()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("infer", [True, False])
def test_eight_threads_adding_one_fact_leave_one_memory(store: Any, infer: bool) -> None:
    m = Memory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(), vector_store=store)
    barrier = threading.Barrier(8)
    results: list[Any] = []

    def worker() -> None:
        barrier.wait()
        results.append(m.add("I like tea" if not infer else "tea!", user_id="u", infer=infer))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8, "a worker failed"
    items = m.get_all(user_id="u").results
    assert len(items) == 1
    events = [e for r in results for e in r.results]
    assert sum(e.event == "ADD" for e in events) == 1
    assert {e.id for e in events} == {items[0].id}
    assert [h.event for h in m.history(items[0].id)] == ["ADD"]


@pytest.mark.parametrize("infer", [True, False])
def test_eight_tasks_adding_one_fact_leave_one_memory(store: Any, infer: bool) -> None:
    async def main() -> None:
        async with AsyncMemory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(),
                               vector_store=store) as m:
            results = await asyncio.gather(*(
                m.add("I like tea" if not infer else "tea!", user_id="u", infer=infer)
                for _ in range(8)
            ))
            items = (await m.get_all(user_id="u")).results
            assert len(items) == 1
            events = [e for r in results for e in r.results]
            assert sum(e.event == "ADD" for e in events) == 1
            assert {e.id for e in events} == {items[0].id}

    asyncio.run(main())


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_sync_threads_and_async_tasks_on_one_store_exclude_each_other(
    store: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A Memory and an AsyncMemory over the same store object: one write lock for both."""
    from memkit.history.sqlite import SQLiteHistory

    history = (store.history() if hasattr(store, "history")
               else SQLiteHistory(str(tmp_path_factory.mktemp("h") / "history.db")))
    sync = Memory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(), vector_store=store,
                  history=history)
    start = threading.Barrier(5)
    results: list[Any] = []

    def worker() -> None:
        start.wait()
        results.append(sync.add("I like tea", user_id="u", infer=False))

    async def tasks() -> list[Any]:
        m = AsyncMemory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(), vector_store=store,
                        history=history)
        await asyncio.to_thread(start.wait)
        return list(await asyncio.gather(*(m.add("I like tea", user_id="u", infer=False)
                                           for _ in range(4))))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    results.extend(asyncio.run(tasks()))
    for t in threads:
        t.join()
    assert len(results) == 8, "a writer failed"
    items = sync.get_all(user_id="u").results
    assert len(items) == 1
    events = [e for r in results for e in r.results]
    assert sum(e.event == "ADD" for e in events) == 1
    assert {e.id for e in events} == {items[0].id}
    assert [h.event for h in sync.history(items[0].id)] == ["ADD"]


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_memory_opened_on_the_store_while_another_writes_loses_nothing(store: Any) -> None:
    """Each Memory made over a store opens it again at its first call; writes already
    running keep landing."""
    m = Memory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(), vector_store=store)
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def writer(k: int) -> None:
        start.wait()
        for i in range(10):
            try:
                m.add(f"fact {i} of writer {k}", user_id="u", infer=False)
            except Exception as exc:  # collected: the assertion below names it
                failures.append(exc)

    def opener() -> None:
        start.wait()
        for _ in range(10):  # a shell opens the store at its first call
            Memory(llm=FunctionLLM(_same_fact), embedder=HashEmbedder(),
                   vector_store=store).get_all(user_id="u")

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=opener))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(m.get_all(user_id="u", limit=100).results) == 30
