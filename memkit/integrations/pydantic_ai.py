"""pydantic-ai on memkit (extra ``pydantic-ai``): memkit's memory tools as a toolset.

::

    from pydantic_ai import Agent
    from memkit import AsyncMemory
    from memkit.integrations.pydantic_ai import memory_toolset

    agent = Agent("openai:gpt-4o-mini", toolsets=[memory_toolset(AsyncMemory(), user_id="alice")])

The scope given here is fixed: the model sees no ``user_id`` argument and cannot
reach another scope's memories. A memkit error goes back to the model as a retry
prompt naming the problem.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

try:
    from pydantic_ai import ModelRetry, Tool
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("pydantic-ai is not installed; install it with: "
                      "pip install 'memkit-ai[pydantic-ai]'") from exc

from memkit import MemkitError
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    from memkit import AsyncMemory, Memory

__all__ = ["memory_toolset"]


def _tool(spec: ToolSpec, tools: MemoryTools) -> Tool[Any]:
    async def call(**arguments: Any) -> dict[str, Any]:
        try:
            return await tools.acall(spec.name, arguments)
        except MemkitError as exc:
            raise ModelRetry(f"{type(exc).__name__}: {exc}") from exc

    function: Callable[..., Awaitable[dict[str, Any]]] = call
    return Tool.from_schema(function, name=spec.name, description=spec.description,
                            json_schema=tools.parameters(spec.name))


def memory_toolset(
    memory: Memory | AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> FunctionToolset[Any]:
    """A pydantic-ai toolset with memkit's memory tools (all, or ``names``) over ``memory``."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return FunctionToolset([_tool(spec, tools) for spec in tools.specs])
