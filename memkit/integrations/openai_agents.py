"""The OpenAI Agents SDK on memkit (extra ``openai-agents``): memory tools as function tools.

::

    from agents import Agent
    from memkit import AsyncMemory
    from memkit.integrations.openai_agents import memory_function_tools

    agent = Agent(name="assistant", tools=memory_function_tools(AsyncMemory(), user_id="alice"))

The scope given here is fixed for the model. A memkit error is returned to the model
as the tool's output (``"error: ..."``), so it can correct the call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    from agents import FunctionTool, RunContextWrapper
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("openai-agents is not installed; install it with: "
                      "pip install 'memkit-ai[openai-agents]'") from exc

from memkit import InvalidArgument, MemkitError
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    from memkit import AsyncMemory, Memory

__all__ = ["memory_function_tools"]


def _tool(spec: ToolSpec, tools: MemoryTools) -> FunctionTool:
    async def invoke(_: RunContextWrapper[Any], raw: str) -> str:
        try:
            arguments = json.loads(raw or "{}")
            if not isinstance(arguments, dict):
                raise InvalidArgument("the arguments must be a JSON object")
            return json.dumps(await tools.acall(spec.name, arguments), ensure_ascii=False)
        except (MemkitError, json.JSONDecodeError) as exc:
            return f"error: {type(exc).__name__}: {exc}"

    return FunctionTool(name=spec.name, description=spec.description,
                        params_json_schema=tools.parameters(spec.name), on_invoke_tool=invoke,
                        strict_json_schema=False)


def memory_function_tools(
    memory: Memory | AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[FunctionTool]:
    """memkit's memory tools (all, or ``names``) as Agents SDK function tools over ``memory``."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_tool(spec, tools) for spec in tools.specs]
