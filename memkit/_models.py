"""Public result models. ``model_dump(mode="json")`` gives the JSON shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _StoredMemory(_Model):
    id: str
    memory: str
    hash: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    supersedes: str | None = None


class MemoryItem(_StoredMemory):
    """One stored memory (``score`` is set by search)."""

    score: float | None = None


class MemoryEvent(_Model):
    """What one operation did to one memory, with the memory's scope."""

    id: str
    event: Event
    memory: str
    old_memory: str | None = None
    new_memory: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class OperationError(_Model):
    """An operation that was not applied, and why."""

    stage: Literal["extraction", "decision", "validation", "apply"]
    message: str
    operation: dict[str, Any] | None = None


class Usage(_Model):
    """LLM usage of one call to ``add``."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def plus(self, other: Usage) -> Usage:
        cost: float | None
        if self.llm_calls == 0:
            cost = other.cost_usd
        elif other.llm_calls == 0:
            cost = self.cost_usd
        elif self.cost_usd is None or other.cost_usd is None:
            cost = None
        else:
            cost = self.cost_usd + other.cost_usd
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=cost,
        )


class AddResult(_Model):
    """The outcome of ``Memory.add``."""

    results: list[MemoryEvent] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    errors: list[OperationError] = Field(default_factory=list)


class DeleteResult(_Model):
    """The outcome of ``Memory.delete_all``: one DELETE event per memory deleted."""

    results: list[MemoryEvent] = Field(default_factory=list)

    @property
    def count(self) -> int:
        """How many memories were deleted."""
        return len(self.results)


class SearchResult(_Model):
    """Memories, best first (search) or in store order (get_all)."""

    results: list[MemoryItem] = Field(default_factory=list)


class HistoryRecord(_Model):
    """One change to one memory."""

    id: str
    memory_id: str
    event: Event
    old_value: str | None = None
    new_value: str | None = None
    timestamp: datetime
    is_deleted: bool = False
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    role: str | None = None
    #: the id of the event this one undid (``Memory.revert``)
    reverts: str | None = None


class ExportedMemory(_StoredMemory):
    """A memory with its history, as ``Memory.export`` gives and ``Memory.import_`` takes."""

    history: list[HistoryRecord] = Field(default_factory=list)


class ImportResult(_Model):
    """The outcome of ``Memory.import_``: memories written, skipped (id or text already
    stored in the scope) and rejected, with why."""

    imported: int = 0
    skipped: int = 0
    errors: list[str] = Field(default_factory=list)
