"""What the framework adapters share: a bound scope, calls that work on ``Memory`` and
``AsyncMemory`` alike, and tool arguments without the fixed scope fields.

Only memkit's public API is used here, as in every integration.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, create_model

from memkit import MemkitError, ScopeError

if TYPE_CHECKING:
    from memkit import AsyncMemory, Memory, MemoryItem
    from memkit.tools import ToolSpec


@dataclass(frozen=True)
class Scope:
    """The memkit scope an adapter reads and writes: at least one of the three ids."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    def __post_init__(self) -> None:
        if not self.ids:
            raise ScopeError()

    @property
    def ids(self) -> dict[str, str]:
        """The ids that are set, as keyword arguments for ``Memory`` methods."""
        given = {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}
        return {name: value for name, value in given.items() if value is not None}

    def owns(self, item: MemoryItem) -> bool:
        """Whether ``item`` lies in this scope (a memory of another scope is as good as absent)."""
        return all(getattr(item, name) == value for name, value in self.ids.items())


async def acall(memory: Memory | AsyncMemory, method: str, *args: Any, **kwargs: Any) -> Any:
    """``memory.method(...)``: awaited on an ``AsyncMemory``, in a worker thread on a ``Memory``."""
    bound = getattr(memory, method)
    if inspect.iscoroutinefunction(bound):
        return await bound(*args, **kwargs)
    return await asyncio.to_thread(bound, *args, **kwargs)


def is_async(memory: Memory | AsyncMemory) -> bool:
    """Whether ``memory`` is an ``AsyncMemory`` (its methods are coroutines)."""
    return inspect.iscoroutinefunction(memory.get)


def call(memory: Memory | AsyncMemory, method: str, *args: Any, **kwargs: Any) -> Any:
    """``memory.method(...)`` on a sync ``Memory``; a clear error for an ``AsyncMemory``."""
    bound = getattr(memory, method)
    if is_async(memory):
        raise TypeError(f"{method}() was called synchronously on an AsyncMemory; "
                        "use the framework's async API or a Memory")
    return bound(*args, **kwargs)


def arguments_model(spec: ToolSpec, hidden: Collection[str]) -> type[BaseModel]:
    """A pydantic model of ``spec``'s arguments without the ``hidden`` (fixed) fields, for
    frameworks that describe a tool by a model rather than a JSON schema."""
    fields: dict[str, Any] = {name: (field.annotation, field)
                              for name, field in spec.arguments.model_fields.items() if name not in hidden}
    return create_model(f"{spec.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def error_text(exc: MemkitError) -> str:
    """A memkit error as the text a model sees in a tool result, so it can correct the call."""
    return f"error: {type(exc).__name__}: {exc}"
