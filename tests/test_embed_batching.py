"""Concurrent async embeddings are coalesced into few model calls, each caller gets its rows
(or its own error)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from memkit import EmbeddingError
from memkit.embeddings.base import Matrix
from memkit.embeddings.batching import MicroBatcher
from memkit.testing import HashEmbedder


class Recording:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[int] = set()
        self.inner = HashEmbedder()

    def __call__(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        if "boom" in texts:
            raise RuntimeError("model failed")
        return self.inner.embed(texts)


def test_concurrent_calls_share_model_calls_and_get_their_own_rows() -> None:
    model = Recording()
    batcher = MicroBatcher(model)
    requests = [[f"text {i}", f"other {i}"] if i % 2 else [f"text {i}"] for i in range(32)]

    async def main() -> list[Matrix]:
        return await asyncio.gather(*(batcher.embed(r) for r in requests))

    results = asyncio.run(main())
    assert len(model.calls) < len(requests) / 4
    assert sum(len(c) for c in model.calls) == sum(len(r) for r in requests)
    for request, rows in zip(requests, results, strict=True):
        np.testing.assert_array_equal(rows, HashEmbedder().embed(request))
    assert threading.get_ident() not in model.threads  # never on the event loop's thread


def test_a_failing_batch_fails_only_the_caller_whose_text_fails() -> None:
    model = Recording()
    batcher = MicroBatcher(model)

    async def main() -> tuple[list[object], Matrix]:
        results = await asyncio.gather(batcher.embed(["boom"]), batcher.embed(["fine"]),
                                       return_exceptions=True)
        return results, await batcher.embed(["after"])

    (failed, fine), after = asyncio.run(main())
    assert ["boom", "fine"] in model.calls  # they went together first
    assert isinstance(failed, RuntimeError)
    np.testing.assert_array_equal(fine, HashEmbedder().embed(["fine"]))
    assert after.shape == (1, HashEmbedder().dimension)


def test_batches_stay_under_the_text_cap() -> None:
    model = Recording()
    batcher = MicroBatcher(model, max_texts=5)

    async def main() -> None:
        await asyncio.gather(*(batcher.embed(["a", "b"]) for _ in range(10)))

    asyncio.run(main())
    assert all(len(c) <= 5 for c in model.calls)
    assert sum(len(c) for c in model.calls) == 20


def test_each_event_loop_has_its_own_queue() -> None:
    batcher = MicroBatcher(Recording())
    for _ in range(2):  # a closed loop's queue must not block the next loop
        rows = asyncio.run(batcher.embed(["x"]))
        assert rows.shape[0] == 1


@pytest.mark.timeout(120)  # the callers of a cancelled batching task waited for ever
def test_a_cancelled_batching_task_fails_its_callers_instead_of_leaving_them_waiting() -> None:
    inside, go = threading.Event(), threading.Event()

    def model(texts: Sequence[str]) -> Matrix:
        inside.set()
        go.wait(60)
        return HashEmbedder().embed(texts)

    batcher = MicroBatcher(model)

    async def main() -> tuple[list[object], Matrix]:
        running = asyncio.create_task(batcher.embed(["tea"]))
        await asyncio.to_thread(inside.wait)
        waiting = asyncio.create_task(batcher.embed(["coffee"]))  # for the next batch
        await asyncio.sleep(0)
        callers = {asyncio.current_task(), running, waiting}
        for task in asyncio.all_tasks() - callers:  # a shutdown that spares the callers
            task.cancel()
        go.set()
        results = await asyncio.gather(running, waiting, return_exceptions=True)
        return results, await batcher.embed(["after"])

    results, after = asyncio.run(main())
    assert [type(r) for r in results] == [EmbeddingError, EmbeddingError]
    assert after.shape == (1, HashEmbedder().dimension)
