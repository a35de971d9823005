"""A call: one effect as a blocking call and as an awaitable call.

The drivers (memkit._pipeline.runtime) turn each effect into a :class:`Job`. The
store, history, graph and model effects are in their table; a feature that owns
in-process state or local files gives the runtime :data:`Handlers` for its own
effects (memkit._pipeline.features.lifecycle, .notes), so the drivers know
effects, not features.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Job(Generic[T]):
    """One effect as a blocking call and as an awaitable call; ``store`` calls need an open store."""

    call: Callable[[], T]
    acall: Callable[[], Awaitable[T]]
    store: bool = True


Handlers = Mapping[type[Any], Callable[[Any], Job[Any]]]
"""A feature's effects, each type mapped to the job that answers it."""


def job(
    sync: Callable[P, T], asynchronous: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
) -> Job[T]:
    return Job(lambda: sync(*args, **kwargs), lambda: asynchronous(*args, **kwargs))


def local(call: Callable[[], T]) -> Job[T]:
    """A job on in-process state: the same call for both drivers."""

    async def acall() -> T:
        return call()

    return Job(call, acall, store=False)


def files(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Job[T]:
    """A job on local files: blocking, or in a worker thread for the async driver."""
    return Job(lambda: call(*args, **kwargs), lambda: asyncio.to_thread(call, *args, **kwargs),
               store=False)
