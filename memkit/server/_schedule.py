"""Upkeep on a schedule inside the server process: prune and consolidate every so often,
and write the graph work a graph outage left owed.

Configured in the config's ``server.schedule`` section (or by ``memkit serve
--prune-every 1h --consolidate-every 1d --repair-every 1m``)::

    server:
      schedule:
        prune_every: 1h        # a duration: 90s, 30m, 1h, 1d, or seconds as a number
        prune_below: 0.05      # what prune() forgets: confidence below this
        consolidate_every: 1d
        consolidate_threshold: 0.9   # default: lifecycle.consolidate_threshold
        repair_every: 1m       # the default, with a graph store; off: no repair

Each job runs over every scope of the store, as an admin's ``prune(dry_run=False)``,
``consolidate(dry_run=False)`` or ``repair()`` would, in the server's event loop between
requests (the
store's work runs as any request's does, so requests are served meanwhile). What it did
is logged (logger ``memkit.server``: INFO when a run changed something, which ``memkit -v
serve`` shows; DEBUG otherwise) and, being in the history, on the change feed. On shutdown
a job that is running finishes; no other starts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memkit import AsyncMemory, ConfigError

log = logging.getLogger("memkit.server")

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}


def duration_of(value: object) -> float:
    """Seconds, from a number of seconds or a text such as ``"90s"``, ``"30m"``, ``"1h"``,
    ``"1d"``; at least 0.01 s."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value)):
        seconds = float(match[1]) * _UNIT_SECONDS[(match[2] or "s").lower()]
    else:
        raise ValueError(f"not a duration (e.g. 90s, 30m, 1h, 1d): {value!r}"[:200])
    if not seconds >= 0.01:
        raise ValueError(f"a duration must be at least 0.01 seconds, got {value!r}"[:200])
    return seconds


class Schedule(BaseModel):
    """The ``server.schedule`` config section (module docstring); prune and consolidate
    are off unless their interval is given; repair runs every minute unless ``off`` (it
    writes only what a graph outage left owed, and is safe in every worker: two processes
    replaying the same work do it once)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prune_every: float | None = None
    prune_below: float = Field(default=0.05, ge=0, le=1)
    consolidate_every: float | None = None
    consolidate_threshold: float | None = Field(default=None, gt=0, le=1)
    repair_every: float | None = 60.0

    @field_validator("prune_every", "consolidate_every", "repair_every", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float | None:
        off = value is None or (isinstance(value, str) and value.strip().lower() == "off")
        return None if off else duration_of(value)

    @classmethod
    def of(cls, value: Schedule | Mapping[str, Any] | None) -> Schedule:
        """``value`` checked; a mistake is a :class:`~memkit.ConfigError` naming the key."""
        if isinstance(value, Schedule):
            return value
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError("server.schedule must be a mapping of its keys")
        try:
            return cls.model_validate(dict(value or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"server.schedule.{'.'.join(str(p) for p in e['loc'])}: "
                f"{str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors(include_url=False))
            raise ConfigError(f"invalid config: {problems}") from None


@dataclass
class Scheduler:
    """Runs a :class:`Schedule`'s jobs on ``memory`` from :meth:`start` to :meth:`stop`;
    ``runs`` counts the finished runs of each job."""

    schedule: Schedule
    memory: AsyncMemory
    runs: dict[str, int] = field(default_factory=lambda: {"prune": 0, "consolidate": 0,
                                                          "repair": 0})
    _stop: asyncio.Event | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        self._stop = asyncio.Event()
        jobs: list[tuple[str, float | None, Callable[[], Awaitable[tuple[bool, str]]]]] = [
            ("prune", self.schedule.prune_every, self._prune),
            ("consolidate", self.schedule.consolidate_every, self._consolidate),
            # without a graph store nothing is ever owed
            ("repair", self.schedule.repair_every if self.memory.graph_store else None,
             self._repair)]
        for name, every, job in jobs:
            if every is not None:
                log.info("scheduled %s every %s s", name, f"{every:g}")
                self._tasks.append(asyncio.create_task(self._every(name, every, job),
                                                       name=f"memkit {name}"))

    async def stop(self) -> None:
        """No new run starts; a running one finishes."""
        if self._stop is not None:
            self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _every(self, name: str, every: float,
                     job: Callable[[], Awaitable[tuple[bool, str]]]) -> None:
        assert self._stop is not None
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), every)
                return
            except TimeoutError:
                pass
            try:
                changed, said = await job()
                log.log(logging.INFO if changed else logging.DEBUG, "scheduled %s: %s", name, said)
            except Exception:  # logged; the next run tries again
                log.exception("scheduled %s failed", name)
            self.runs[name] += 1

    async def _prune(self) -> tuple[bool, str]:
        below = self.schedule.prune_below
        report = await self.memory.prune(below, dry_run=False)
        return bool(report.results), (f"{len(report.results)} memories below confidence "
                                      f"{below:g} forgotten")

    async def _consolidate(self) -> tuple[bool, str]:
        report = await self.memory.consolidate(threshold=self.schedule.consolidate_threshold,
                                               dry_run=False)
        return bool(report.clusters), (f"{report.merged} memories merged in "
                                       f"{len(report.clusters)} clusters of {report.examined} "
                                       "examined")

    async def _repair(self) -> tuple[bool, str]:
        done = await self.memory.repair()
        return bool(done), f"the owed graph work of {done} changes written"
