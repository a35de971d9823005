"""Agno on memkit (extra ``agno``): Agno's ``MemoryManager`` with memkit as the store and the
curator, and memkit's memory tools as Agno functions.

::

    from agno.agent import Agent
    from memkit import Memory
    from memkit.integrations.agno import MemkitMemoryManager, memory_tools

    memory = Memory()
    agent = Agent(model=..., user_id="alice", update_memory_on_run=True,
                  memory_manager=MemkitMemoryManager(memory, agent_id="chef"),
                  tools=memory_tools(memory, user_id="alice", agent_id="chef"))

Agno hands the manager each run's messages (``update_memory_on_run``) and reads the
user's memories into the model's context (``add_memories_to_context``); with memkit as the
manager, memkit's pipeline decides what to remember (``infer=True``: an LLM extracts facts
and updates or removes contradicted ones) instead of Agno's own memory prompt, and the
memories live in memkit's store with their history. Agno names the user of each call;
``agent_id`` and ``run_id`` given here are fixed for every call, and ``user_id`` given here
is the user when Agno names none. ``Agent.run`` needs a ``Memory``; ``Agent.arun`` takes a
``Memory`` or an ``AsyncMemory``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

try:
    from agno.db.schemas import UserMemory
    from agno.memory import MemoryManager
    from agno.models.message import Message
    from agno.tools.function import Function
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("agno is not installed; install it with: pip install 'memkit-ai[agno]'") from exc

from memkit import InvalidArgument, MemkitError, NotFoundError
from memkit.integrations._common import Scope, acall, call, error_text, is_async
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    import memkit

__all__ = ["MemkitMemoryManager", "memory_tools"]

_AGNO_DEFAULT_USER = "default"  # the user Agno's own MemoryManager assumes when none is named


class MemkitMemoryManager(MemoryManager):
    """An Agno ``MemoryManager`` whose memories are memkit's, in the scope of each call.

    ``infer`` is how runs and tasks are stored (``False``: messages verbatim, no LLM call);
    ``topics`` given to Agno are stored as the memory's ``topics`` metadata.
    """

    def __init__(
        self,
        memory: memkit.Memory | memkit.AsyncMemory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        infer: bool = True,
        debug_mode: bool = False,
    ) -> None:
        super().__init__(debug_mode=debug_mode)
        self.memory = memory
        self.bound = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        self.infer = infer

    def _scope(self, user_id: str | None) -> Scope:
        return Scope(user_id or self.bound["user_id"] or _AGNO_DEFAULT_USER,
                     self.bound["agent_id"], self.bound["run_id"])

    # -- reading ------------------------------------------------------------------

    def read_from_db(self, user_id: str | None = None) -> dict[str, list[UserMemory]]:
        scope = self._scope(user_id)
        found = call(self.memory, "get_all", **scope.ids)
        return {scope.ids["user_id"]: [_user_memory(item) for item in found.results]}

    async def aread_from_db(self, user_id: str | None = None) -> dict[str, list[UserMemory]]:
        scope = self._scope(user_id)
        found = await acall(self.memory, "get_all", **scope.ids)
        return {scope.ids["user_id"]: [_user_memory(item) for item in found.results]}

    def get_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        """The user's memories, newest first."""
        return next(iter(self.read_from_db(user_id).values()))

    async def aget_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        """The user's memories, newest first."""
        return next(iter((await self.aread_from_db(user_id)).values()))

    def get_user_memory(self, memory_id: str, user_id: str | None = None) -> UserMemory | None:
        """One memory of the user, or None (also for a memory of another scope)."""
        item = call(self.memory, "get", memory_id)
        return _user_memory(item) if item is not None and self._scope(user_id).owns(item) else None

    def search_user_memories(
        self,
        query: str | None = None,
        limit: int | None = None,
        retrieval_method: Literal["last_n", "first_n", "agentic"] | None = None,
        user_id: str | None = None,
    ) -> list[UserMemory]:
        """``"agentic"``: memkit's search for ``query``, best first; ``"last_n"`` (the default) /
        ``"first_n"``: the newest / oldest ``limit`` memories."""
        scope = self._scope(user_id)
        if retrieval_method == "agentic":
            if not query:
                raise InvalidArgument("an agentic search needs a query")
            found = call(self.memory, "search", query, **scope.ids, limit=limit or 10).results
        else:
            found = call(self.memory, "get_all", **scope.ids).results
            if retrieval_method == "first_n":
                found = found[::-1]
            found = found[:limit] if limit else found
        return [_user_memory(item) for item in found]

    # -- writing ------------------------------------------------------------------

    def add_user_memory(self, memory: UserMemory, user_id: str | None = None) -> str | None:
        """Store ``memory`` verbatim (no LLM call); its id is memkit's."""
        result = call(self.memory, "add", memory.memory, **self._scope(user_id).ids,
                      metadata=_metadata(memory), infer=False)
        return next((event.id for event in result.results), None)

    def replace_user_memory(self, memory_id: str, memory: UserMemory, user_id: str | None = None) -> str | None:
        """Replace the text of one memory of the user (the old text stays in its history)."""
        self._owned(memory_id, user_id)
        call(self.memory, "update", memory_id, memory.memory)
        return memory_id

    def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """Forget one memory of the user (its history stays readable)."""
        self._owned(memory_id, user_id)
        call(self.memory, "delete", memory_id)

    def clear_user_memories(self, user_id: str | None = None) -> None:
        """Forget every memory of the user in this manager's scope."""
        call(self.memory, "delete_all", **self._scope(user_id).ids)

    async def aclear_user_memories(self, user_id: str | None = None) -> None:
        """Forget every memory of the user in this manager's scope."""
        await acall(self.memory, "delete_all", **self._scope(user_id).ids)

    def clear(self) -> None:
        """Forget every memory of the bound (or Agno's default) user in this manager's scope."""
        self.clear_user_memories()

    def create_user_memories(
        self,
        message: str | None = None,
        messages: list[Message] | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        user_id: str | None = None,
        run_metrics: Any = None,
    ) -> str:
        """Remember what a run's messages say about the user; returns what changed."""
        turns = _turns(message, messages)
        if not turns:
            return "nothing to remember"
        return _summary(call(self.memory, "add", turns, **self._scope(user_id).ids, infer=self.infer))

    async def acreate_user_memories(
        self,
        message: str | None = None,
        messages: list[Message] | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        user_id: str | None = None,
        run_metrics: Any = None,
    ) -> str:
        """Remember what a run's messages say about the user; returns what changed."""
        turns = _turns(message, messages)
        if not turns:
            return "nothing to remember"
        return _summary(await acall(self.memory, "add", turns, **self._scope(user_id).ids,
                                    infer=self.infer))

    def update_memory_task(self, task: str, user_id: str | None = None) -> str:
        """Agno's agentic memory tool: memkit's pipeline applies ``task`` ("remember that...",
        "I moved to Lisbon") to the user's memories."""
        return _summary(call(self.memory, "add", task, **self._scope(user_id).ids, infer=True))

    async def aupdate_memory_task(self, task: str, user_id: str | None = None) -> str:
        """Agno's agentic memory tool, async."""
        return _summary(await acall(self.memory, "add", task, **self._scope(user_id).ids, infer=True))

    def optimize_memories(self, user_id: str | None = None, strategy: Any = None, apply: bool = True) -> Any:
        """Refused: Agno's optimisation rewrites its own database. memkit's counterpart is
        ``Memory.consolidate(user_id=..., dry_run=False)``, which merges near-duplicates and
        keeps the others as past versions."""
        raise InvalidArgument("optimize_memories is Agno's own store's; with memkit use "
                          "memory.consolidate(user_id=..., dry_run=False)")

    async def aoptimize_memories(self, user_id: str | None = None, strategy: Any = None,
                                 apply: bool = True) -> Any:
        """Refused, as :meth:`optimize_memories`."""
        self.optimize_memories(user_id, strategy, apply)

    def _owned(self, memory_id: str, user_id: str | None) -> None:
        if self.get_user_memory(memory_id, user_id) is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")


def _user_memory(item: memkit.MemoryItem) -> UserMemory:
    topics = item.metadata.get("topics")
    return UserMemory(memory=item.memory, memory_id=item.id, user_id=item.user_id, agent_id=item.agent_id,
                      topics=list(topics) if isinstance(topics, list) else None,
                      created_at=int(item.created_at.timestamp()), updated_at=int(item.updated_at.timestamp()))


def _metadata(memory: UserMemory) -> dict[str, Any] | None:
    metadata: dict[str, Any] = {}
    if memory.topics:
        metadata["topics"] = list(memory.topics)
    if memory.input:
        metadata["input"] = memory.input
    return metadata or None


def _turns(message: str | None, messages: list[Message] | None) -> list[dict[str, str]]:
    if message:
        return [{"role": "user", "content": message}]
    return [{"role": m.role, "content": text} for m in messages or []
            if m.role in ("user", "assistant") and (text := m.get_content_string().strip())]


def _summary(result: memkit.AddResult) -> str:
    changes = [f"{event.event} {event.id}: {event.memory}" for event in result.results if event.event != "NONE"]
    return "; ".join(changes) or "no change"


def _function(spec: ToolSpec, tools: MemoryTools) -> Function:
    def run(**arguments: Any) -> str:
        try:
            return json.dumps(tools.call(spec.name, arguments), ensure_ascii=False)
        except MemkitError as exc:
            return error_text(exc)

    async def arun(**arguments: Any) -> str:
        try:
            return json.dumps(await tools.acall(spec.name, arguments), ensure_ascii=False)
        except MemkitError as exc:
            return error_text(exc)

    return Function(name=spec.name, description=spec.description, parameters=tools.parameters(spec.name),
                    entrypoint=arun if is_async(tools.memory) else run, skip_entrypoint_processing=True)


def memory_tools(
    memory: memkit.Memory | memkit.AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[Function]:
    """memkit's memory tools (all, or ``names``) as Agno functions over ``memory``. A memkit
    error is returned to the model as the tool's output (``"error: ..."``)."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_function(spec, tools) for spec in tools.specs]
