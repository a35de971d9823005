"""``Memory.watch`` and ``AsyncMemory.watch``: follow a memory's changes as they commit, in
any process that shares the history."""

from __future__ import annotations

import time
from collections import deque
from contextlib import AsyncExitStack
from types import TracebackType

from memkit._models import Change
from memkit._pipeline import requests
from memkit._pipeline.inputs import Scope
from memkit._pipeline.runtime import Runtime
from memkit.history._feed import Beacon

#: how long a follower waits for its history's beacon before it reads again anyway
RECHECK_SECONDS = 5.0
#: how often ``Memory.watch`` (no event loop to be woken in) reads the history
POLL_SECONDS = 0.2


class ChangeWatch:
    """The changes of a scope as they commit, from any process that shares the history::

        async with memory.watch(user_id="alice") as changes:
            async for change in changes:
                print(change.event, change.memory_id, change.new_value)

    What commits after entering is delivered (or, with ``after``, everything after that
    position), each change once, in commit order; ``change.position`` resumes after it.
    """

    def __init__(self, runtime: Runtime, after: str | None, user_id: str | None,
                 agent_id: str | None, run_id: str | None, batch: int = 100) -> None:
        Scope.of(user_id, agent_id, run_id, required=False)  # bad input fails here, not later
        runtime.refuse_closed()
        self._runtime = runtime
        self._scope = (user_id, agent_id, run_id)
        self.batch = batch
        """The most changes one :meth:`read` returns."""
        self.position = after
        """Where the next :meth:`read` starts: the position of the last change read."""
        self._pending: deque[Change] = deque()
        self._stack = AsyncExitStack()
        self._beacon: Beacon | None = None

    async def __aenter__(self) -> ChangeWatch:
        self._runtime.refuse_closed()
        history = self._runtime.history
        self._beacon = await self._stack.enter_async_context(history.follow())
        if self.position is None:
            self.position = await history.ahead()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self._beacon = None
        await self._stack.aclose()

    def __aiter__(self) -> ChangeWatch:
        return self

    async def __anext__(self) -> Change:
        while not self._pending:
            heard = self.heard
            self._pending.extend(await self.read())
            if not self._pending:
                await self.wait(heard)
        return self._pending.popleft()

    @property
    def heard(self) -> int:
        """How often the history said a change may have committed (take it before a
        :meth:`read`, then :meth:`wait` for it to move)."""
        if self._beacon is None:
            raise RuntimeError("use the watch as `async with memory.watch(...) as changes:`")
        return self._beacon.count

    async def read(self) -> list[Change]:
        """The changes committed since the last read (at most a batch; none if nothing new),
        without waiting: every change committed before the call is in it or an earlier one
        once it returns fewer than a batch."""
        self.heard  # noqa: B018 - raises outside ``async with``
        batch = await self._runtime.arun(
            requests.changes(self.position, *self._scope, self.batch))
        if batch:
            self.position = batch[-1].position
        return batch

    async def wait(self, heard: int, timeout: float = RECHECK_SECONDS) -> int:
        """Wait, at most ``timeout`` seconds, until :attr:`heard` moves from ``heard``; the
        new count."""
        self.heard  # noqa: B018 - raises outside ``async with``
        assert self._beacon is not None
        return await self._beacon.wait(heard, timeout)


class PollingWatch:
    """:class:`ChangeWatch` for ``Memory``: the same changes, read every
    :data:`POLL_SECONDS` while none is waiting::

        with memory.watch(user_id="alice") as changes:
            for change in changes:
                print(change.event, change.memory_id, change.new_value)
    """

    def __init__(self, runtime: Runtime, after: str | None, user_id: str | None,
                 agent_id: str | None, run_id: str | None, batch: int = 100) -> None:
        Scope.of(user_id, agent_id, run_id, required=False)
        runtime.refuse_closed()
        self._runtime = runtime
        self._scope = (user_id, agent_id, run_id)
        self._batch = batch
        self.position = after
        """The position of the last change delivered (where a new watch would resume)."""
        self._pending: deque[Change] = deque()
        self._open = False

    def __enter__(self) -> PollingWatch:
        self._runtime.refuse_closed()
        if self.position is None:
            self.position = self._runtime.history.head()
        self._open = True
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._open = False

    def __iter__(self) -> PollingWatch:
        return self

    def __next__(self) -> Change:
        if not self._open:
            raise RuntimeError("use the watch as `with memory.watch(...) as changes:`")
        while not self._pending:
            self._pending.extend(self._runtime.run(
                requests.changes(self.position, *self._scope, self._batch)))
            if not self._pending:
                time.sleep(POLL_SECONDS)
        change = self._pending.popleft()
        self.position = change.position
        return change
