"""Micro-batching: concurrent async embeddings of one event loop become one model call.

Thirty-two concurrent ``AsyncMemory.add`` calls each embed a few texts. Run one
by one in worker threads they oversubscribe the cores and pay the model's
per-call cost 32 times; here the calls that arrive while a batch is running
wait for it to finish and then go together, in one worker thread, so the event
loop never runs the model and never more than one batch per loop runs at once.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memkit.embeddings.base import Matrix


@dataclass(slots=True)
class _Queue:
    waiting: list[tuple[tuple[str, ...], asyncio.Future[Matrix]]] = field(default_factory=list)
    running: bool = False
    task: asyncio.Task[None] | None = None  # held so the running batch is not collected


class MicroBatcher:
    """Coalesces the concurrent ``await batcher.embed(texts)`` calls of each event loop.

    ``embed`` is the blocking model call; it runs in a worker thread on the
    texts of every waiting call, at most ``max_texts`` at a time.
    """

    def __init__(self, embed: Callable[[Sequence[str]], Matrix], max_texts: int = 256) -> None:
        self._embed = embed
        self._max_texts = max_texts
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def embed(self, texts: Sequence[str]) -> Matrix:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[Matrix] = loop.create_future()
        queue.waiting.append((tuple(texts), future))
        if not queue.running:
            queue.running = True
            queue.task = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        """Run batches until no call is waiting; calls arriving meanwhile join the next one."""
        try:
            while queue.waiting:
                batch = self._take(queue)
                texts = [text for request, _ in batch for text in request]
                try:
                    rows = await asyncio.to_thread(self._embed, texts)
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                start = 0
                for request, future in batch:
                    if not future.done():
                        future.set_result(np.ascontiguousarray(rows[start : start + len(request)]))
                    start += len(request)
        finally:
            queue.running = False

    def _take(self, queue: _Queue) -> list[tuple[tuple[str, ...], asyncio.Future[Matrix]]]:
        taken, count = 0, 0
        for request, _ in queue.waiting:
            if taken and count + len(request) > self._max_texts:
                break
            taken += 1
            count += len(request)
        batch, queue.waiting = queue.waiting[:taken], queue.waiting[taken:]
        return batch
