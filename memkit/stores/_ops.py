"""One operation protocol for every backend, and its two drivers.

An operation is a generator: it yields a step (a SQL statement, a Cypher query,
a call to make on a client library) and receives that step's result, and it
returns the operation's result. It is written once and holds no I/O, so the
same operation serves the sync and the async methods of a store::

    def _count(self) -> Op[Statement, int]:
        rows = yield Statement("SELECT count(*) FROM t")
        return rows[0][0]

A backend says how to carry out one step, blocking (``execute``) or awaiting
(``aexecute``); :func:`run` and :func:`arun` are the only loops that drive
operations. :func:`translated` adapts an operation written in one kind of step
(the graph's portable SQL, a page walk's id lists) to a backend's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

S = TypeVar("S")
U = TypeVar("U")
T = TypeVar("T")

#: an operation yielding steps of type ``S`` and returning ``T``
Op = Generator[S, Any, T]


def run(op: Generator[S, Any, T], execute: Callable[[S], Any]) -> T:
    """Drive ``op``: each step is carried out by ``execute`` and its result sent back.
    An error of ``execute`` ends the operation (the generator is closed)."""
    result: Any = None
    try:
        while True:
            result = execute(op.send(result))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()


async def arun(op: Generator[S, Any, T], execute: Callable[[S], Awaitable[Any]]) -> T:
    """:func:`run` with an ``execute`` that awaits."""
    result: Any = None
    try:
        while True:
            result = await execute(op.send(result))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()


def translated(
    op: Generator[S, Any, T], step: Callable[[S], U], result: Callable[[Any], Any] = lambda r: r,
) -> Generator[U, Any, T]:
    """``op`` with each step passed through ``step`` and each answer through ``result``."""
    answer: Any = None
    while True:
        try:
            asked = op.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = result((yield step(asked)))


__all__ = ["Op", "arun", "run", "translated"]
