"""AutoGen on memkit (extra ``autogen``): ``autogen_core``'s ``Memory`` protocol, and memkit's
memory tools as AutoGen tools.

::

    from autogen_agentchat.agents import AssistantAgent
    from memkit import AsyncMemory
    from memkit.integrations.autogen import MemkitMemory, memory_tools

    memory = AsyncMemory()
    agent = AssistantAgent("assistant", model_client=...,
                           memory=[MemkitMemory(memory, user_id="alice")],
                           tools=memory_tools(memory, user_id="alice"))

Before each model call the agent asks :meth:`MemkitMemory.update_context`, which searches
the memories of the scope for the latest user message and adds the best ones to the
model's context as a system message. ``add`` runs memkit's pipeline (``infer=True``: an
LLM extracts facts and updates or removes contradicted ones). The scope given here is
fixed: the tools' schemas have no scope arguments, and ``clear`` forgets this scope only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    from autogen_core import CancellationToken
    from autogen_core.memory import (
        Memory,
        MemoryContent,
        MemoryMimeType,
        MemoryQueryResult,
        UpdateContextResult,
    )
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import SystemMessage, UserMessage
    from autogen_core.tools import BaseTool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("autogen-core is not installed; install it with: "
                      "pip install 'memkit-ai[autogen]'") from exc
from pydantic import BaseModel

from memkit import InvalidArgument
from memkit.integrations._common import Scope, acall, arguments_model
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    import memkit

__all__ = ["MemkitMemory", "memory_tools"]

_TEXT_TYPES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value, MemoryMimeType.JSON.value}


class MemkitMemory(Memory):
    """An AutoGen ``Memory`` over one memkit scope of ``memory`` (a ``Memory`` or ``AsyncMemory``).

    ``infer`` is how :meth:`add` stores content (``False``: verbatim, no LLM call);
    ``limit`` and ``threshold`` bound what :meth:`query` and :meth:`update_context` return.
    """

    component_type = "memory"

    def __init__(
        self,
        memory: memkit.Memory | memkit.AsyncMemory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        infer: bool = True,
        limit: int = 5,
        threshold: float | None = None,
        name: str = "memkit",
    ) -> None:
        self.memory = memory
        self.scope = Scope(user_id, agent_id, run_id)
        self.infer, self.limit, self.threshold, self.name = infer, limit, threshold, name

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        """Remember ``content`` (text, markdown or JSON; its metadata is stored with it)."""
        await acall(self.memory, "add", _text(content), **self.scope.ids,
                    metadata=dict(content.metadata or {}) or None, infer=self.infer)

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The scope's memories nearest ``query``, best first. ``limit``, ``filters`` and
        ``threshold`` may be given as keyword arguments."""
        text = query if isinstance(query, str) else _text(query)
        unknown = set(kwargs) - {"limit", "filters", "threshold"}
        if unknown:
            raise InvalidArgument(f"unknown query arguments {sorted(unknown)}; use limit, filters or threshold")
        found = await acall(self.memory, "search", text, **self.scope.ids,
                            limit=kwargs.get("limit", self.limit), filters=kwargs.get("filters"),
                            threshold=kwargs.get("threshold", self.threshold))
        return MemoryQueryResult(results=[_content(item) for item in found.results])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the memories relevant to the latest user message to ``model_context``."""
        messages = await model_context.get_messages()
        question = next((_message_text(m) for m in reversed(messages) if isinstance(m, UserMessage)), "")
        if not question.strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self.query(question)
        if found.results:
            lines = "\n".join(f"{i}. {m.content!s}" for i, m in enumerate(found.results, 1))
            await model_context.add_message(SystemMessage(
                content=f"Relevant memories about the user (most relevant first):\n{lines}"))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Forget every memory of this scope (their history stays readable)."""
        await acall(self.memory, "delete_all", **self.scope.ids)

    async def close(self) -> None:
        """Nothing to release: the memkit memory belongs to the caller, who closes it."""


def _text(content: MemoryContent) -> str:
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else content.mime_type
    if mime not in _TEXT_TYPES:
        raise InvalidArgument(f"memkit remembers text, markdown or JSON, not {mime}")
    if isinstance(content.content, str):
        return content.content
    if isinstance(content.content, dict):
        return json.dumps(content.content, ensure_ascii=False)
    raise InvalidArgument(f"memkit remembers text, not {type(content.content).__name__} content")


def _message_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(part for part in message.content if isinstance(part, str))


def _content(item: memkit.MemoryItem) -> MemoryContent:
    metadata = {**item.metadata, "id": item.id, "score": item.score,
                "created_at": item.created_at.isoformat(), "updated_at": item.updated_at.isoformat()}
    return MemoryContent(content=item.memory, mime_type=MemoryMimeType.TEXT, metadata=metadata)


class _MemkitTool(BaseTool[BaseModel, BaseModel]):
    """One memory tool; its result is a JSON object (a dict), shown to the model as JSON."""

    def __init__(self, spec: ToolSpec, tools: MemoryTools) -> None:
        # BaseTool's return type is bound to pydantic models; these tools return dicts.
        super().__init__(arguments_model(spec, tools.fixed), dict, spec.name,  # type: ignore[arg-type]
                         spec.description)
        self._tools = tools

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        return await self._tools.acall(self.name, args.model_dump(exclude_unset=True))

    def return_value_as_string(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)


def memory_tools(
    memory: memkit.Memory | memkit.AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[BaseTool[BaseModel, BaseModel]]:
    """memkit's memory tools (all, or ``names``) as AutoGen tools over ``memory``. A memkit
    error raises from the tool; AutoGen's agents return it to the model as an error result."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_MemkitTool(spec, tools) for spec in tools.specs]
