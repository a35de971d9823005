"""Tasks: a task's status changes in place, recorded in its history."""

from __future__ import annotations

from dataclasses import replace

from memkit._errors import InvalidArgument
from memkit._models import MemoryItem
from memkit._pipeline.effects import Flow
from memkit._pipeline.features.task_fields import STATUS_PREFIX, task_status_of
from memkit._pipeline.memories import current_flow
from memkit._pipeline.write.apply import apply, history_row, scope_key
from memkit._time import after
from memkit.stores.base import WriteBatch


def update_task_flow(memory_id: str, status: str, now: str) -> Flow[MemoryItem]:
    """Set a task's status in place; the change is an UPDATE event of its history whose old
    and new values read ``status: <status>`` (``revert`` sets the old status back)."""
    checked = task_status_of(status)
    record = yield from current_flow(memory_id, now)
    if record.memory_type != "task":
        raise InvalidArgument(f"memory {record.id} is not a task (its memory_type is "
                          f"{record.memory_type!r}); add tasks with memory_type='task'")
    before = record.metadata.get("status")
    changed = replace(record, updated_at=after(record.updated_at, now), vector=None,
                      metadata={**record.metadata, "status": checked})
    history = [] if before == checked else [
        history_row(record, "UPDATE", STATUS_PREFIX + str(before), STATUS_PREFIX + checked, now)]
    yield from apply(WriteBatch(updates=[changed], history=history, dedup_scope=scope_key(record)))
    return changed.to_item()
