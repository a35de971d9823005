"""Google ADK on memkit (extra ``google-adk``): a ``BaseMemoryService``, and memkit's memory
tools as ADK tools.

::

    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import load_memory
    from memkit import AsyncMemory
    from memkit.integrations.google_adk import MemkitMemoryService

    runner = Runner(app_name="travel", agent=LlmAgent(name="assistant", model=..., tools=[load_memory]),
                    session_service=InMemorySessionService(),
                    memory_service=MemkitMemoryService(AsyncMemory()))
    # after a conversation: await runner.memory_service.add_session_to_memory(session)

ADK names the scope of every call: its ``user_id`` is memkit's ``user_id`` and its
``app_name`` is memkit's ``agent_id``, so two apps on one memkit store keep apart; the
session id is stored in the memory's metadata (``session_id``), not as a run scope, so
what one session taught is found in the next. Adding a session runs memkit's pipeline
(``infer=True``: an LLM extracts facts and updates or removes contradicted ones);
adding it again after more turns does not duplicate what is already stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    from google.adk.events import Event
    from google.adk.memory import BaseMemoryService
    from google.adk.memory.base_memory_service import SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions import Session
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("google-adk is not installed; install it with: "
                      "pip install 'memkit-ai[google-adk]'") from exc

from memkit import InvalidArgument, MemkitError, NotFoundError
from memkit.integrations._common import Scope, acall, error_text
from memkit.tools import MemoryTools, ToolSpec, tool_spec

if TYPE_CHECKING:
    import memkit

__all__ = ["MemkitMemoryService", "memory_tools"]


class MemkitMemoryService(BaseMemoryService):
    """ADK's memory service over ``memory`` (a ``Memory`` or ``AsyncMemory``).

    ``infer`` is how sessions and events are stored (``False``: each message verbatim, no
    LLM call); ``limit`` and ``threshold`` bound what :meth:`search_memory` returns.
    """

    def __init__(self, memory: memkit.Memory | memkit.AsyncMemory, *, infer: bool = True,
                 limit: int = 10, threshold: float | None = None) -> None:
        self.memory = memory
        self.infer, self.limit, self.threshold = infer, limit, threshold

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember what was said in ``session`` (text parts of its user and model turns)."""
        await self._add(session.app_name, session.user_id, session.events, session.id, None)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember the text of ``events`` (a delta of a session); ``custom_metadata`` is stored
        with the memories."""
        await self._add(app_name, user_id, events, session_id, custom_metadata)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store each entry's text verbatim (no LLM call), with its and the call's metadata."""
        scope = _scope(app_name, user_id)
        for entry in memories:
            text = _text(entry.content)
            if not text:
                raise InvalidArgument("a memory entry without text cannot be stored")
            metadata = {**(custom_metadata or {}), **entry.custom_metadata}
            if entry.author:
                metadata["author"] = entry.author
            await acall(self.memory, "add", text, **scope.ids, metadata=metadata or None, infer=False)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The memories of ``user_id`` in ``app_name`` nearest ``query``, best first."""
        found = await acall(self.memory, "search", query, **_scope(app_name, user_id).ids,
                            limit=self.limit, threshold=self.threshold)
        return SearchMemoryResponse(memories=[_entry(item) for item in found.results])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget one memory by the id ``search_memory`` gave; ``NotFoundError`` if it is not
        a memory of this user and app."""
        if memory_id is None:
            raise InvalidArgument("delete_memory needs the memory_id of a search result")
        item = await acall(self.memory, "get", memory_id)
        if item is None or not _scope(app_name, user_id).owns(item):
            raise NotFoundError(f"no memory with id {memory_id!r}")
        await acall(self.memory, "delete", memory_id)

    async def _add(self, app_name: str, user_id: str, events: Sequence[Event], session_id: str | None,
                   custom_metadata: Mapping[str, object] | None) -> None:
        messages = [{"role": "user" if event.author == "user" else "assistant", "content": text}
                    for event in events if (text := _text(event.content))]
        if not messages:
            return
        metadata: dict[str, Any] = dict(custom_metadata or {})
        if session_id:
            metadata["session_id"] = session_id
        await acall(self.memory, "add", messages, **_scope(app_name, user_id).ids,
                    metadata=metadata or None, infer=self.infer)


def _scope(app_name: str, user_id: str) -> Scope:
    return Scope(user_id=user_id, agent_id=app_name)


def _text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return " ".join(part.text for part in content.parts if part.text and not part.thought).strip()


def _entry(item: memkit.MemoryItem) -> MemoryEntry:
    return MemoryEntry(
        id=item.id, content=types.Content(role="user", parts=[types.Part(text=item.memory)]),
        custom_metadata={**item.metadata, "score": item.score}, timestamp=item.updated_at.isoformat(),
        author=item.metadata.get("author"))


class _MemkitTool(BaseTool):
    """One memory tool, declared to the model with memkit's JSON schema. Without a scope of
    its own (``tools`` is None) it runs in the scope of the invocation: ADK's user and app."""

    def __init__(self, spec: ToolSpec, memory: memkit.Memory | memkit.AsyncMemory,
                 tools: MemoryTools | None) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self._memory, self._tools = memory, tools

    def _get_declaration(self) -> types.FunctionDeclaration:
        hidden = self._tools.fixed if self._tools is not None else ("user_id", "agent_id", "run_id")
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=tool_spec(self.name).parameters(hidden))

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        tools = self._tools or MemoryTools(self._memory, user_id=tool_context.user_id,
                                           agent_id=tool_context.session.app_name, names=[self.name])
        try:
            return await tools.acall(self.name, args)
        except MemkitError as exc:
            return {"error": error_text(exc)}


def memory_tools(
    memory: memkit.Memory | memkit.AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[BaseTool]:
    """memkit's memory tools (all, or ``names``) as ADK tools over ``memory``. With no scope
    given here, each call runs in the invocation's scope, as :class:`MemkitMemoryService`
    maps it (ADK's ``user_id``, its ``app_name`` as ``agent_id``); the model sees no scope
    arguments either way. A memkit error is returned to the model as ``{"error": ...}``."""
    specs = MemoryTools(memory, names=names).specs  # the graph tools too, with a graph store
    if user_id is None and agent_id is None and run_id is None:
        return [_MemkitTool(spec, memory, None) for spec in specs]
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_MemkitTool(spec, memory, tools) for spec in specs]
