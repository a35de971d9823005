"""LlamaIndex on memkit (extra ``llama-index``): a long-term memory block for LlamaIndex's
``Memory``, and memkit's memory tools as LlamaIndex tools.

::

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.memory import Memory
    from memkit import AsyncMemory
    from memkit.integrations.llama_index import MemkitMemoryBlock, memory_tools

    store = AsyncMemory()
    memory = Memory.from_defaults(session_id="alice-1",
                                  memory_blocks=[MemkitMemoryBlock(memory=store, user_id="alice")])
    agent = FunctionAgent(llm=..., tools=memory_tools(store, user_id="alice"))
    await agent.run("What should I cook?", memory=memory)

Messages that leave LlamaIndex's short-term chat history are handed to the block, which
adds them to memkit (``infer=True``: an LLM extracts facts and updates or removes
contradicted ones). Each turn the block searches the scope's memories for the latest
user message and LlamaIndex puts the best ones in the model's context. The scope given
here is fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.tools import FunctionTool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("llama-index-core is not installed; install it with: "
                      "pip install 'memkit-ai[llama-index]'") from exc
from pydantic import Field, PrivateAttr, model_validator

from memkit import MemkitError
from memkit.integrations._common import Scope, acall, arguments_model, error_text
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    import memkit

__all__ = ["MemkitMemoryBlock", "memory_tools"]

_ROLES = {MessageRole.USER: "user", MessageRole.ASSISTANT: "assistant", MessageRole.SYSTEM: "system"}


class MemkitMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block over one memkit scope of ``memory`` (``Memory`` or
    ``AsyncMemory``). ``infer=False`` stores messages verbatim (no LLM call); ``limit`` and
    ``threshold`` bound how many memories enter the context."""

    name: str = Field(default="memkit", description="The name of the memory block.")
    memory: Any = Field(description="The memkit Memory or AsyncMemory.")
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    infer: bool = True
    limit: int = Field(default=5, ge=1)
    threshold: float | None = Field(default=None, ge=0, le=1)
    _scope: Scope = PrivateAttr()

    @model_validator(mode="after")
    def _bind_scope(self) -> MemkitMemoryBlock:
        self._scope = Scope(self.user_id, self.agent_id, self.run_id)
        return self

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        question = next((m.content or "" for m in reversed(messages or []) if m.role == MessageRole.USER), "")
        if not question.strip():
            return ""
        found = await acall(self.memory, "search", question, **self._scope.ids, limit=self.limit,
                            threshold=self.threshold)
        return "\n".join(f"- {item.memory}" for item in found.results)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turns = [{"role": _ROLES[m.role], "content": m.content} for m in messages
                 if m.role in _ROLES and (m.content or "").strip()]
        if not turns:
            return
        sessions = {m.additional_kwargs.get("session_id") for m in messages} - {None}
        metadata = {"session_id": sessions.pop()} if len(sessions) == 1 else None
        await acall(self.memory, "add", turns, **self._scope.ids, metadata=metadata, infer=self.infer)


def _tool(spec: ToolSpec, tools: MemoryTools) -> FunctionTool:
    async def run(**arguments: Any) -> Any:
        try:
            return await tools.acall(spec.name, arguments)
        except MemkitError as exc:
            return error_text(exc)

    return FunctionTool.from_defaults(async_fn=run, name=spec.name, description=spec.description,
                                      fn_schema=arguments_model(spec, tools.fixed))


def memory_tools(
    memory: memkit.Memory | memkit.AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[FunctionTool]:
    """memkit's memory tools (all, or ``names``) as LlamaIndex tools over ``memory``. A memkit
    error is returned to the model as the tool's output (``"error: ..."``)."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_tool(spec, tools) for spec in tools.specs]
