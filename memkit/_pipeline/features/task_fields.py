"""Task statuses and ``surface``, checked where memories are written.

A task is a memory of type ``task`` whose ``metadata["status"]`` is one of
:data:`TASK_STATUSES` (``open`` when not given). ``metadata["surface"] =
"startup"`` marks any memory for :func:`memkit._pipeline.features.startup.startup_flow`.
"""

from __future__ import annotations

from typing import Any

from memkit._errors import (
    InvalidArgument,
)
from memkit._models import TASK_STATUSES
from memkit.stores.base import Record

OPEN_STATUSES = ("open", "in_progress")
SURFACES = ("startup",)


STATUS_PREFIX = "status: "
"""A status change is an UPDATE event from ``status: <old>`` to ``status: <new>``."""


def status_change(old_value: str | None, new_value: str | None) -> tuple[str, str] | None:
    """(old, new) status of a history event that changed a task's status, else None."""
    values = [v[len(STATUS_PREFIX):] if v and v.startswith(STATUS_PREFIX) else None
              for v in (old_value, new_value)]
    if values[0] in TASK_STATUSES and values[1] in TASK_STATUSES:
        return str(values[0]), str(values[1])
    return None


def task_status_of(value: object) -> str:
    if not isinstance(value, str) or value not in TASK_STATUSES:
        raise InvalidArgument(f"a task's status must be one of {', '.join(TASK_STATUSES)}; "
                          f"got {value!r}"[:300])
    return value


def surface_of(value: object) -> str:
    if not isinstance(value, str) or value not in SURFACES:
        raise InvalidArgument(f"surface must be one of {', '.join(SURFACES)}; got {value!r}"[:300])
    return value


def with_task_status(metadata: dict[str, Any], memory_type: object) -> dict[str, Any]:
    """``metadata`` of a memory of ``memory_type``: a task's status checked, ``open`` by default."""
    if memory_type != "task":
        return metadata
    return {**metadata, "status": task_status_of(metadata.get("status", "open"))}


def with_surface(metadata: dict[str, Any], surface: object) -> dict[str, Any]:
    return metadata if surface is None else {**metadata, "surface": surface_of(surface)}


def checked_update(record: Record, metadata: dict[str, Any] | None,
                   lifecycle: dict[str, Any] | None) -> dict[str, Any] | None:
    """The metadata an update merges in, with the status checked when the memory is (or
    becomes) a task."""
    kind = (lifecycle or {}).get("memory_type", record.memory_type)
    if kind != "task" or (record.memory_type == "task" and "status" not in (metadata or {})):
        return metadata
    merged = with_task_status({**record.metadata, **(metadata or {})}, kind)
    return {**(metadata or {}), "status": merged["status"]}
