"""Micro-batching: concurrent async embeddings of one event loop become one model call.

Thirty-two concurrent ``AsyncMemory.add`` calls each embed a few texts. Run one
by one in worker threads they oversubscribe the cores and pay the model's
per-call cost 32 times; here the calls that arrive while a batch is running
wait for it to finish and then go together, in one worker thread, so the event
loop never runs the model and never more than one batch per loop runs at once.
:meth:`Embedder.aembed <memkit.embeddings.base.Embedder.aembed>` goes through
one batcher per embedder.

A batch that fails, or whose answer is not one row per text, is retried call by
call (each call in its own worker thread), so one caller's bad text fails that
caller alone.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memkit._errors import EmbeddingError

Rows = npt.NDArray[np.float32]
Waiting = tuple[tuple[str, ...], "asyncio.Future[Rows]"]


@dataclass(slots=True)
class _Queue:
    waiting: list[Waiting] = field(default_factory=list)
    running: bool = False
    task: asyncio.Task[None] | None = None  # held so the running batch is not collected


class MicroBatcher:
    """Coalesces the concurrent ``await batcher.embed(texts)`` calls of each event loop.

    ``embed`` is the blocking model call; it runs in a worker thread on the
    texts of every waiting call, at most ``max_texts`` at a time (a call with
    more goes alone).
    """

    def __init__(self, embed: Callable[[Sequence[str]], Rows], max_texts: int = 256) -> None:
        self._embed = embed
        self._max_texts = max_texts
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def embed(self, texts: Sequence[str]) -> Rows:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[Rows] = loop.create_future()
        queue.waiting.append((tuple(texts), future))
        if not queue.running:
            queue.running = True
            queue.task = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        """Run batches until no call is waiting; calls arriving meanwhile join the next one.
        Cancelled (a shutdown that cancels every task but its own), it fails the calls it
        leaves, which would otherwise wait for ever."""
        batch: list[Waiting] = []
        try:
            while queue.waiting:
                batch = self._take(queue)
                texts = [text for request, _ in batch for text in request]
                try:
                    rows = await asyncio.to_thread(self._embed, texts)
                    # a call alone gets the model's answer as it is; the caller checks it
                    answers = [rows] if len(batch) == 1 else _split(rows, batch)
                except Exception as exc:
                    if len(batch) == 1:
                        _settle(batch[0][1], exc)
                    else:
                        await self._one_by_one(batch)
                    continue
                for (_, future), answer in zip(batch, answers, strict=True):
                    _settle(future, answer)
        finally:
            queue.running = False
            left, queue.waiting = [*batch, *queue.waiting], []
            for _, future in left:
                _settle(future, EmbeddingError("the embedding was cancelled with memkit's "
                                               "batching task"))

    async def _one_by_one(self, batch: list[Waiting]) -> None:
        """Each call of a failed batch on its own, at once (as if never batched), so a
        model that fails for every text costs one call's time, not one per caller."""
        outcomes = await asyncio.gather(
            *(asyncio.to_thread(self._embed, request) for request, _ in batch),
            return_exceptions=True)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome
            _settle(future, outcome)

    def _take(self, queue: _Queue) -> list[Waiting]:
        taken, count = 0, 0
        for request, _ in queue.waiting:
            if taken and count + len(request) > self._max_texts:
                break
            taken += 1
            count += len(request)
        batch, queue.waiting = queue.waiting[:taken], queue.waiting[taken:]
        return batch


def _split(rows: Rows, batch: list[Waiting]) -> list[Rows]:
    """Each call's rows of a batch's answer; a ValueError unless the answer has one row per
    text (rows shifted by a skipped text would give later calls another text's vectors)."""
    matrix = np.asarray(rows, dtype=np.float32)
    counts = [len(request) for request, _ in batch]
    if matrix.ndim != 2 or len(matrix) != sum(counts):
        raise ValueError(f"the model answered shape {matrix.shape} for {sum(counts)} texts")
    return np.split(matrix, np.cumsum(counts)[:-1])


def _settle(future: asyncio.Future[Rows], outcome: Rows | Exception) -> None:
    if future.done():  # its caller was cancelled
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
