"""memkit's memory tools for agents, defined once.

The MCP server, the OpenAI and Anthropic tool definitions and the framework
integrations (``memkit.integrations``) are all built from :data:`TOOLS`::

    from memkit import Memory
    from memkit.tools import MemoryTools, openai_tools

    tools = MemoryTools(Memory(), user_id="alice")   # the agent's memories, scope fixed
    openai_tools(hidden=tools.fixed)                 # for chat.completions(tools=...)
    tools.call("search_memories", {"query": "diet"})

Scope fields given to :class:`MemoryTools` are fixed: they leave the schemas the
model sees, and a call cannot change them.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from memkit import InvalidArgument, NotFoundError
from memkit._graph_tools import GRAPH_TOOLS
from memkit._toolspec import (
    AgentId,
    Args,
    Json,
    Plan,
    RunId,
    ScopeArgs,
    ToolSpec,
    UserId,
    dump,
    single,
)

if TYPE_CHECKING:
    from memkit._async_memory import AsyncMemory
    from memkit._memory import Memory

__all__ = [
    "TOOLS", "ChatMessage", "MemoryTools", "ToolSpec", "anthropic_tools", "openai_tools", "tool_spec",
]

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")

Filters = Annotated[dict[str, Any] | None, Field(description=(
    'Optional metadata/field filter, e.g. {"topic": "food"}, {"priority": {"gte": 2}}, '
    '{"OR": [{"topic": "food"}, {"topic": "travel"}]}. Operators: eq, ne, gt, gte, lt, lte, '
    "in, nin, contains, icontains; combinators AND, OR, NOT."))]
MemoryId = Annotated[str, Field(description="The memory's id, as returned by another tool.")]
Surface = Annotated[Literal["startup"] | None, Field(description=(
    '"startup": the memory is shown in the startup briefing (memory_startup).'))]
AsOf = Annotated[str | None, Field(description=(
    "Optional ISO 8601 time: answer with what was valid then (past versions included) "
    'instead of now, e.g. "2025-03-15".'))]
ExpiresAt = Annotated[str | None, Field(description=(
    "Optional ISO 8601 time after which the memory is hidden."))]
MemoryType = Annotated[str | None, Field(description=(
    'Optional kind, e.g. "task" (a to-do with a status, open at first), "preference", '
    '"decision", "fact".'))]
Importance = Annotated[float | None, Field(ge=0, le=1, description=(
    "Optional importance from 0 to 1."))]
Confidence = Annotated[float | None, Field(ge=0, le=1, description=(
    "Optional confidence from 0 to 1 (default 1)."))]
IncludeExpired = Annotated[bool, Field(description="true: expired memories too.")]
Entity = Annotated[str | None, Field(min_length=1, description=(
    "Optional: only the memories about this entity (its name or id), e.g. \"Alice\"; "
    "needs a knowledge graph."))]
Metadata = Annotated[dict[str, Any] | None, Field(
    description="Optional labels merged into the memory's metadata.")]


class ChatMessage(BaseModel):
    """One message of a conversation handed to ``add_memory``."""

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str


class _AddMemoryArgs(Args):
    content: Annotated[str | list[ChatMessage], Field(description=(
        "What to remember: a sentence, or a conversation as a list of {role, content}."))]
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    metadata: Annotated[dict[str, Any] | None, Field(
        description='Optional labels stored with the memory, e.g. {"topic": "food"}.')] = None
    infer: Annotated[bool, Field(description=(
        "true: an LLM extracts facts and updates or removes contradicted memories. "
        "false: store the text verbatim, no LLM call."))] = True
    dry_run: Annotated[bool, Field(description=(
        "true: only report what would change; nothing is stored."))] = False
    memory_type: MemoryType = None
    importance: Importance = None
    confidence: Confidence = None
    expires_at: ExpiresAt = None
    surface: Surface = None
    entities: Annotated[list[str] | None, Field(max_length=100, description=(
        'Optional entities the memory is about, by name or id, e.g. ["Alice", "Acme"]: '
        "linked to it in the knowledge graph (needs a graph store)."))] = None


class _SearchMemoriesArgs(Args):
    query: Annotated[str, Field(description="What to look for, in natural language.")]
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    limit: Annotated[int, Field(ge=1, le=100, description="How many at most.")] = 10
    offset: Annotated[int, Field(ge=0, le=100_000, description=(
        "Skip this many results: for the next page, the same query and limit with "
        "offset + limit."))] = 0
    filters: Filters = None
    threshold: Annotated[float | None, Field(
        ge=0, le=1, description="Drop results scoring below this (0..1).")] = None
    mode: Annotated[Literal["hybrid", "vector", "keyword"] | None, Field(description=(
        "hybrid (default where the store has keyword search), vector or keyword."))] = None
    min_confidence: Annotated[float | None, Field(ge=0, le=1, description=(
        "Drop memories whose confidence is below this (0..1)."))] = None
    as_of: AsOf = None
    include_expired: IncludeExpired = False
    graph: Annotated[bool | None, Field(description=(
        "Expand through the entities the query names (default: on with a graph store)."))
                     ] = None
    rerank: Annotated[bool, Field(description=(
        "true: reorder the best results with the configured reranker."))] = False
    entity: Entity = None


class _MemoryIdArgs(Args):
    memory_id: MemoryId


class _ListMemoriesArgs(Args):
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    filters: Filters = None
    limit: Annotated[int, Field(ge=1, le=1000, description="How many at most.")] = 100
    as_of: AsOf = None
    include_expired: IncludeExpired = False
    surface: Annotated[Literal["startup"] | None, Field(description=(
        '"startup": only the memories marked for the startup briefing.'))] = None
    offset: Annotated[int, Field(ge=0, le=1_000_000, description=(
        "Skip this many: for the next page, the same arguments with offset + limit."))] = 0
    entity: Entity = None


class _TaskUpdateArgs(Args):
    memory_id: MemoryId
    status: Annotated[Literal["open", "in_progress", "done", "cancelled"], Field(
        description="The task's new status.")]


class _StartupArgs(Args):
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    budget_tokens: Annotated[int, Field(ge=1, le=100_000, description=(
        "The most tokens the briefing may take."))] = 1000


class _IndexFolderArgs(Args):
    path: Annotated[str, Field(min_length=1, description=(
        "A folder of markdown notes on the machine running memkit."))]
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    max_file_bytes: Annotated[int, Field(ge=1, description=(
        "Files larger than this are skipped."))] = 100_000


class _UpdateMemoryArgs(Args):
    memory_id: MemoryId
    text: Annotated[str | None, Field(min_length=1, description=(
        "The memory's new text (leave out to change only the other fields)."))] = None
    metadata: Metadata = None
    expires_at: ExpiresAt = None
    memory_type: MemoryType = None
    importance: Importance = None
    confidence: Confidence = None
    surface: Surface = None
    if_updated_at: Annotated[str | None, Field(description=(
        "The updated_at of the memory as you read it: if it changed since, the update fails "
        "and nothing changes (read it again, then decide)."))] = None


class _SupersedeArgs(Args):
    memory_id: MemoryId
    text: Annotated[str, Field(min_length=1, description="The text that replaces it.")]
    metadata: Metadata = None
    expires_at: ExpiresAt = None


class _RevertArgs(Args):
    event_id: Annotated[str, Field(description="The id of an event from memory_history.")]


class _DeleteAllMemoriesArgs(Args):
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None
    filters: Filters = None


class _PruneArgs(ScopeArgs):
    below: Annotated[float, Field(ge=0, le=1, description=(
        "Forget memories whose confidence is below this."))] = 0.05
    dry_run: Annotated[bool, Field(description=(
        "true (default): only report them; false: forget them."))] = True
    filters: Filters = None


class _StatsArgs(ScopeArgs):
    filters: Filters = None


class _ConsolidateArgs(ScopeArgs):
    threshold: Annotated[float | None, Field(gt=0, le=1, description=(
        "Cosine similarity from which memories are near-duplicates (default 0.9)."))] = None
    dry_run: Annotated[bool, Field(description=(
        "true (default): only report the clusters; false: merge them."))] = True
    filters: Filters = None


class _FeedbackArgs(Args):
    memory_id: MemoryId
    useful: Annotated[bool, Field(description=(
        "true: the memory helped (it is reinforced); false: it did not (its confidence drops)."))]



def _kwargs(a: BaseModel, scope: Json, *positional: str) -> Json:
    """Every argument but the positional ones, as keywords, in the call's scope: a field
    added to a tool's arguments reaches its Memory method without another edit."""
    fields = {n: getattr(a, n) for n in type(a).model_fields
              if n not in positional and n not in SCOPE_FIELDS}
    return {**(scope if set(SCOPE_FIELDS) <= set(type(a).model_fields) else {}), **fields}


def _plan_add(a: _AddMemoryArgs, scope: Json) -> Plan:
    messages = a.content if isinstance(a.content, str) else [m.model_dump() for m in a.content]
    return single("add", (messages,), _kwargs(a, scope, "content"))


def _plan_search(a: _SearchMemoriesArgs, scope: Json) -> Plan:
    return single("search", (a.query,), _kwargs(a, scope, "query"))


def _plan_get(a: _MemoryIdArgs, scope: Json) -> Plan:
    def render(item: Any) -> Json:
        if item is None:
            raise NotFoundError(f"no memory with id {a.memory_id!r}")
        return dump(item)
    return single("get", (a.memory_id,), {}, render)


def _plan_list(a: _ListMemoriesArgs, scope: Json) -> Plan:
    return single("get_all", (), _kwargs(a, scope))


def _plan_task_update(a: _TaskUpdateArgs, scope: Json) -> Plan:
    return single("update_task", (a.memory_id,), {"status": a.status})


def _plan_startup(a: _StartupArgs, scope: Json) -> Plan:
    return single("startup_context", (), _kwargs(a, scope))


def _plan_index_folder(a: _IndexFolderArgs, scope: Json) -> Plan:
    return single("index_folder", (a.path,), _kwargs(a, scope, "path"))


def _plan_update(a: _UpdateMemoryArgs, scope: Json) -> Plan:
    return single("update", (a.memory_id, a.text), _kwargs(a, scope, "memory_id", "text"))


def _plan_delete(a: _MemoryIdArgs, scope: Json) -> Plan:
    return single("delete", (a.memory_id,), {}, lambda _: {"deleted": a.memory_id})


def _plan_delete_all(a: _DeleteAllMemoriesArgs, scope: Json) -> Plan:
    return single("delete_all", (), _kwargs(a, scope), lambda deleted: {
        "deleted": deleted.count, "ids": [e.id for e in deleted.results]})


def _plan_history(a: _MemoryIdArgs, scope: Json) -> Plan:
    return single("history", (a.memory_id,), {}, lambda rows: {
        "results": [r.model_dump(mode="json") for r in rows]})


def _plan_versions(a: _MemoryIdArgs, scope: Json) -> Plan:
    def render(chain: Any) -> Json:
        if not chain:
            raise NotFoundError(f"no memory with id {a.memory_id!r}")
        return {"results": [v.model_dump(mode="json") for v in chain]}
    return single("versions", (a.memory_id,), {}, render)


def _plan_supersede(a: _SupersedeArgs, scope: Json) -> Plan:
    return single("supersede", (a.memory_id, a.text), _kwargs(a, scope, "memory_id", "text"))


def _plan_revert(a: _RevertArgs, scope: Json) -> Plan:
    return single("revert", (a.event_id,), {})


def _plan_stats(a: _StatsArgs, scope: Json) -> Plan:
    return single("stats", (), _kwargs(a, scope))


def _plan_prune(a: _PruneArgs, scope: Json) -> Plan:
    return single("prune", (), _kwargs(a, scope))


def _plan_consolidate(a: _ConsolidateArgs, scope: Json) -> Plan:
    return single("consolidate", (), _kwargs(a, scope))


def _plan_feedback(a: _FeedbackArgs, scope: Json) -> Plan:
    return single("feedback", (a.memory_id,), {"useful": a.useful}, lambda _: {
        "memory_id": a.memory_id, "useful": a.useful})


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("add_memory", "Remember something about the user or the conversation. Returns what "
             "changed: one event per memory (ADD, UPDATE, DELETE or NONE) with its id.",
             _AddMemoryArgs, _plan_add, read_only=False, destructive=False),
    ToolSpec("search_memories", "Find the memories most relevant to a query, best first, each with a score.",
             _SearchMemoriesArgs, _plan_search, read_only=True, destructive=False),
    ToolSpec("get_memory", "One memory by id: its text, metadata, scope and timestamps.",
             _MemoryIdArgs, _plan_get, read_only=True, destructive=False),
    ToolSpec("list_memories", "Every memory of a scope, newest first.",
             _ListMemoriesArgs, _plan_list, read_only=True, destructive=False),
    ToolSpec("update_memory", "Replace a memory's text (the old text stays in its history).",
             _UpdateMemoryArgs, _plan_update, read_only=False, destructive=True, idempotent=True),
    ToolSpec("delete_memory", "Forget one memory (its history stays readable).",
             _MemoryIdArgs, _plan_delete, read_only=False, destructive=True),
    ToolSpec("delete_all_memories", "Forget every memory of a scope (optionally only those matching "
             "filters). Returns how many were deleted.",
             _DeleteAllMemoriesArgs, _plan_delete_all, read_only=False, destructive=True),
    ToolSpec("memory_history", "Every change to one memory, oldest first: ADD, UPDATE (old and new "
             "text), DELETE.", _MemoryIdArgs, _plan_history, read_only=True, destructive=False),
    ToolSpec("memory_versions", "The versions of a memory, oldest first, each with when it was valid "
             "(valid_from, valid_to) and the version it replaced (supersedes).",
             _MemoryIdArgs, _plan_versions, read_only=True, destructive=False),
    ToolSpec("memory_supersede", "Replace an outdated memory by a new one (a new id); the old one "
             "stays as a past version. A memory already superseded cannot be superseded again.",
             _SupersedeArgs, _plan_supersede, read_only=False, destructive=False),
    ToolSpec("memory_revert", "Undo one change (an ADD, UPDATE or DELETE event of memory_history). "
             "Returns the event that records the undoing; an event can be reverted once.",
             _RevertArgs, _plan_revert, read_only=False, destructive=False),
    ToolSpec("get_memory_stats", "Statistics of a scope's memories: counts by type and state, "
             "growth per day, a confidence histogram, the most accessed memories and (with a "
             "graph) the top entities.", _StatsArgs, _plan_stats, read_only=True,
             destructive=False),
    ToolSpec("memory_prune", "Forget memories whose confidence has fallen below a threshold; "
             "dry_run (default true) only lists them.", _PruneArgs, _plan_prune,
             read_only=False, destructive=True),
    ToolSpec("memory_consolidate", "Find near-duplicate memories of a scope and, with "
             "dry_run false, merge each group into its most confident member (the others stay "
             "as past versions).", _ConsolidateArgs, _plan_consolidate, read_only=False,
             destructive=True),
    ToolSpec("memory_feedback", "Say whether a memory was useful: useful ones are reinforced, "
             "others lose confidence.", _FeedbackArgs, _plan_feedback, read_only=False,
             destructive=False),
    ToolSpec("memory_task_update", "Set the status of a task (a memory added with memory_type "
             '"task"): open, in_progress, done or cancelled.',
             _TaskUpdateArgs, _plan_task_update, read_only=False, destructive=False,
             idempotent=True),
    ToolSpec("memory_startup", "A briefing to read at the start of a session: open tasks, "
             "memories marked for startup and the most important ones, as text and items.",
             _StartupArgs, _plan_startup, read_only=True, destructive=False),
    ToolSpec("index_folder", "Index a folder of markdown notes (one memory per section, with "
             "its path and lines) or bring the index up to date with the files; memories of "
             "removed sections end.", _IndexFolderArgs, _plan_index_folder, read_only=False,
             destructive=True, idempotent=True),
    *GRAPH_TOOLS,
)
"""Every memory tool, in the order the definitions list them; the graph tools last."""
_BY_NAME = {spec.name: spec for spec in TOOLS}


def tool_spec(name: str) -> ToolSpec:
    """The spec of the tool ``name``; ``KeyError`` naming the tools for an unknown one."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown memory tool {name!r}; the tools are {sorted(_BY_NAME)}") from None


def _selected(names: Collection[str] | None, graph: bool) -> list[ToolSpec]:
    if names is None:
        return [s for s in TOOLS if graph or not s.graph]
    return [tool_spec(n) for n in names]


def openai_tools(names: Collection[str] | None = None, *, hidden: Collection[str] = (),
                 graph: bool = False) -> list[Json]:
    """OpenAI function-calling definitions (``tools=`` of chat completions): ``names``, or
    every tool (the graph tools too with ``graph=True``: they need a graph store)."""
    return [{"type": "function", "function": {"name": s.name, "description": s.description,
                                              "parameters": s.parameters(hidden)}}
            for s in _selected(names, graph)]


def anthropic_tools(names: Collection[str] | None = None, *, hidden: Collection[str] = (),
                    graph: bool = False) -> list[Json]:
    """Anthropic Messages API tool definitions (``tools=``): ``names``, or every tool (the
    graph tools too with ``graph=True``)."""
    return [{"name": s.name, "description": s.description, "input_schema": s.parameters(hidden)}
            for s in _selected(names, graph)]


class MemoryTools:
    """Runs the tools on a ``Memory`` (:meth:`call`) or an ``AsyncMemory`` (:meth:`acall`).

    ``user_id`` / ``agent_id`` / ``run_id`` given here are fixed (``fixed=True``, the
    default for agents: the model cannot reach another user's memories) or only
    defaults for what a call leaves out (``fixed=False``, as the MCP server does).
    ``names`` (default: every tool, the graph tools when the memory has a graph store)
    are the tools :attr:`specs` offers.
    """

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        fixed: bool = True,
        names: Collection[str] | None = None,
    ) -> None:
        self.memory = memory
        self.scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        self.fixed: frozenset[str] = frozenset(
            f for f, v in self.scope.items() if v is not None) if fixed else frozenset()
        self.specs = _selected(names, memory.graph_store is not None)

    def parameters(self, name: str) -> Json:
        """The schema of ``name`` as this object's model sees it (fixed scope fields left out)."""
        return tool_spec(name).parameters(self.fixed)

    def _plan(self, name: str, arguments: Mapping[str, Any]) -> Plan:
        spec = tool_spec(name)
        given = set(arguments) & self.fixed
        if given:
            raise InvalidArgument(f"{sorted(given)[0]} is fixed for these tools")
        try:
            args = spec.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            raise InvalidArgument(f"invalid arguments for {name}: {exc}") from None
        scope = {f: getattr(args, f, None) or self.scope[f] for f in SCOPE_FIELDS}
        return spec.plan(args, scope)

    def _check_owned(self, args: tuple[Any, ...], item: Any) -> None:
        """With a fixed scope, a memory of another scope is as good as absent."""
        if item is None or any(getattr(item, f) != self.scope[f] for f in self.fixed):
            raise NotFoundError(f"no memory with id {args[0]!r}")

    def call(self, name: str, arguments: Mapping[str, Any]) -> Json:
        """Run a tool on a sync ``Memory``; the result is JSON-ready. MemkitError on failure."""
        plan = self._plan(name, arguments)
        if inspect.iscoroutinefunction(self.memory.get):
            raise TypeError("this MemoryTools wraps an AsyncMemory; use acall()")
        result: Any = None
        try:
            while True:
                method, args, kwargs = plan.send(result)
                if self.fixed and method in _BY_ID:
                    self._check_owned(args, self.memory.get(args[0], reinforce=False))
                result = getattr(self.memory, method)(*args, **kwargs)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def acall(self, name: str, arguments: Mapping[str, Any]) -> Json:
        """Run a tool on an ``AsyncMemory`` (natively) or a ``Memory`` (in a worker thread)."""
        import asyncio

        plan = self._plan(name, arguments)

        async def run(method: str, *args: Any, **kwargs: Any) -> Any:
            bound = getattr(self.memory, method)
            if inspect.iscoroutinefunction(bound):
                return await bound(*args, **kwargs)
            return await asyncio.to_thread(bound, *args, **kwargs)

        result: Any = None
        try:
            while True:
                method, args, kwargs = plan.send(result)
                if self.fixed and method in _BY_ID:
                    self._check_owned(args, await run("get", args[0], reinforce=False))
                result = await run(method, *args, **kwargs)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


#: the methods that take a memory id, whose memory must be in a fixed scope
_BY_ID = frozenset({"get", "update", "delete", "history", "supersede", "feedback",
                    "update_task"})
