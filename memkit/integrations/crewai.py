"""CrewAI on memkit (extra ``crewai``): memkit as CrewAI's ``Memory`` (a crew's or an
agent's ``memory=``), and memkit's memory tools as CrewAI tools.

::

    from crewai import Agent, Crew, Task
    from memkit import Memory
    from memkit.integrations.crewai import MemkitMemory, memory_tools

    memory = Memory()
    crew = Crew(agents=[...], tasks=[...],
                memory=MemkitMemory(memory, user_id="alice", agent_id="trip-crew"))
    writer = Agent(role=..., goal=..., backstory=...,
                   tools=memory_tools(memory, user_id="alice", agent_id="trip-crew"))

CrewAI's memory is its unified ``Memory`` (1.15; the ``ExternalMemory`` and long-term
storages of 1.6 and earlier are gone): an agent recalls from it before each task, hands
it each task's result afterwards, and gets its "Search memory" and "Save to memory"
tools. ``MemkitMemory`` is that ``Memory`` with memkit behind it: what CrewAI remembers
goes through memkit's ``add`` (``infer=True``: an LLM extracts facts and updates or
removes contradicted ones) and recall is memkit's search, so CrewAI's own LLM analysis,
embedder and storage are not used (a recall's ``depth`` makes no difference). The
memkit scope given here is fixed. CrewAI's scope paths (a ``root_scope``,
``memory.scope("/project")``) are kept in each memory's metadata and narrow what CrewAI
remembers against, recalls, lists and forgets within it; so are its categories, source
and private flag. CrewAI calls its memory synchronously: ``MemkitMemory`` takes a
``Memory``; ``memory_tools`` also takes an ``AsyncMemory`` (CrewAI's async tool path).
Give ``MemkitMemory`` to the ``Crew`` when the crew is copied (``kickoff_for_each``,
``train``, ``test``): CrewAI copies an agent by dumping and re-validating it, which turns
an agent's own ``memory=`` into a plain CrewAI ``Memory``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypedDict

try:
    from crewai.memory.types import MemoryMatch, MemoryRecord, ScopeInfo
    from crewai.memory.unified_memory import Memory as CrewMemory
    from crewai.memory.utils import join_scope_paths
    from crewai.tools import BaseTool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("crewai is not installed; install it with: pip install 'memkit-ai[crewai]'") from exc
from pydantic import BaseModel, ConfigDict

from memkit import MemkitError, NotFoundError
from memkit.integrations._common import Scope, arguments_model, error_text, is_async
from memkit.tools import MemoryTools, ToolSpec

if TYPE_CHECKING:
    import memkit

__all__ = ["MemkitMemory", "memory_tools"]

# metadata keys of a memory that CrewAI wrote; its record shows the rest as metadata
_SCOPE, _PREFIXES, _CATEGORIES, _SOURCE, _PRIVATE = (
    "crewai_scope", "crewai_scopes", "categories", "crewai_source", "crewai_private")
_KEYS = frozenset({_SCOPE, _PREFIXES, _CATEGORIES, _SOURCE, _PRIVATE})


class MemkitMemory(CrewMemory):
    """CrewAI's ``Memory`` over one memkit scope of ``memory``.

    ``infer=False`` stores what CrewAI remembers verbatim (no LLM call). ``root_scope``,
    ``read_only`` and ``default_importance`` (for a memory without an importance) mean
    what they mean in CrewAI. CrewAI's LLM, embedder, storage and ranking settings are not
    taken: memkit's configuration decides those.
    """

    def __init__(
        self,
        memory: memkit.Memory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        infer: bool = True,
        root_scope: str | None = None,
        read_only: bool = False,
        default_importance: float = 0.5,
    ) -> None:
        if is_async(memory):
            raise TypeError("CrewAI calls its memory synchronously; give MemkitMemory a memkit Memory")
        records = _ScopeRecords(memory, Scope(user_id, agent_id, run_id), infer, default_importance)
        super().__init__(storage=records, root_scope=root_scope, read_only=read_only,
                         default_importance=default_importance)

    @property
    def memkit(self) -> memkit.Memory:
        """The memkit ``Memory`` underneath."""
        return self._records.memory

    @property
    def _records(self) -> _ScopeRecords:
        records: _ScopeRecords = self._storage
        return records

    def extract_memories(self, content: str) -> list[str]:
        """``[content]``: memkit's pipeline extracts the facts when it is remembered."""
        return [content] if content.strip() else []

    def _encode_batch(
        self,
        contents: list[str],
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        root_scope: str | None = None,
    ) -> list[MemoryRecord]:
        # CrewAI's remember() and remember_many() (its events, save pool and read_only)
        # run this; memkit's add takes the place of CrewAI's encoding flow.
        path = join_scope_paths(root_scope, scope)
        written = {_SCOPE: path, _PREFIXES: _prefixes(path)}
        if categories:
            written[_CATEGORIES] = list(categories)
        if source is not None:
            written[_SOURCE] = source
        if private:
            written[_PRIVATE] = True
        return [record for content in contents
                for record in self._records.add(content, {**(metadata or {}), **written}, importance, path)]

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int = 10,
        depth: str = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """memkit's search for ``query`` in the scope (best first); a private memory is
        found by its own ``source`` or with ``include_private``."""
        self.drain_writes()
        path = join_scope_paths(self.root_scope, scope) if scope is not None or self.root_scope else None
        visible = None if include_private else _visible_to(source)
        found = self.memkit.search(query, **self._records.ids, limit=limit,
                                   filters=_all_of(_under(path), _any_category(categories), visible))
        return [MemoryMatch(record=self._records.record(item), score=item.score or 0.0,
                            match_reasons=["semantic"]) for item in found.results]

    def update(
        self,
        record_id: str,
        content: str | None = None,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
    ) -> MemoryRecord:
        """Change one memory of the scope; a new ``content`` is a new version in memkit
        (the old text stays in its history) and ``metadata`` is merged into its metadata."""
        existing = self._records.get_record(record_id)
        if existing is None:
            raise NotFoundError(f"no memory with id {record_id!r}")
        if self.read_only:
            return existing
        changed: dict[str, Any] = dict(metadata or {})
        if scope is not None:
            changed |= {_SCOPE: scope, _PREFIXES: _prefixes(scope)}
        if categories is not None:
            changed[_CATEGORIES] = list(categories)
        item = self.memkit.update(record_id, content, metadata=changed or None, importance=importance)
        return self._records.record(item)

    def close(self) -> None:
        """Wait for CrewAI's pending saves; the memkit ``Memory`` stays open (it is the caller's)."""
        self.drain_writes()
        self._save_pool.shutdown(wait=True)


class _Ids(TypedDict):
    user_id: str | None
    agent_id: str | None
    run_id: str | None


class _ScopeRecords:
    """CrewAI's record operations (list, count, scope info, delete) on one memkit scope:
    the ``storage`` of a ``MemkitMemory``, which CrewAI's own methods call."""

    def __init__(self, memory: memkit.Memory, scope: Scope, infer: bool, default_importance: float) -> None:
        self.memory, self.scope, self.infer = memory, scope, infer
        self.ids = _Ids(user_id=scope.user_id, agent_id=scope.agent_id, run_id=scope.run_id)
        self.default_importance = default_importance

    def __deepcopy__(self, memo: dict[int, Any]) -> _ScopeRecords:
        return self  # a copied crew shares its memory, as CrewAI's copies share their storage

    def add(self, content: str, metadata: dict[str, Any], importance: float | None,
            path: str) -> list[MemoryRecord]:
        result = self.memory.add(content, **self.ids, metadata=metadata, importance=importance,
                                 filters=_under(path), infer=self.infer)
        touched = [self.memory.get(event.id, reinforce=False)  # what was written, not a use
                   for event in result.results if event.event != "DELETE"]
        return [self.record(item) for item in touched if item is not None]

    def get_record(self, record_id: str) -> MemoryRecord | None:
        item = self.memory.get(record_id)
        return self.record(item) if item is not None and self.scope.owns(item) else None

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        metadata = [{key: value} for key, value in (metadata_filter or {}).items()]
        before = {"created_at": {"lt": _aware(older_than)}} if older_than else None
        filters = _all_of(_under(scope_prefix), _any_category(categories), before, *metadata)
        if record_ids is None:
            return self.memory.delete_all(**self.ids, filters=filters).count
        doomed = [item.id for item in self._items(filters) if item.id in set(record_ids)]
        for memory_id in doomed:
            self.memory.delete(memory_id)
        return len(doomed)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200,
                     offset: int = 0) -> list[MemoryRecord]:
        if limit <= 0 or offset < 0:
            return []
        found = self.memory.get_all(**self.ids, filters=_under(scope_prefix), limit=offset + limit)
        return [self.record(item) for item in found.results[offset:]]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = scope.rstrip("/") or "/"
        records = [self.record(item) for item in self._items(_under(path))]
        created = [record.created_at for record in records]
        return ScopeInfo(path=path, record_count=len(records),
                         categories=sorted({c for record in records for c in record.categories}),
                         oldest_record=min(created, default=None), newest_record=max(created, default=None),
                         child_scopes=_children(path, [record.scope for record in records]))

    def list_scopes(self, parent: str = "/") -> list[str]:
        path = parent.rstrip("/") or "/"
        return _children(path, [self.record(item).scope for item in self._items(_under(path))])

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        records = [self.record(item) for item in self._items(_under(scope_prefix))]
        return dict(Counter(c for record in records for c in record.categories))

    def count(self, scope_prefix: str | None = None) -> int:
        return self.memory.stats(**self.ids, filters=_under(scope_prefix)).memories

    def reset(self, scope_prefix: str | None = None) -> None:
        self.memory.delete_all(**self.ids, filters=_under(scope_prefix))

    def record(self, item: memkit.MemoryItem) -> MemoryRecord:
        """The memory as CrewAI's record (its scope, categories, source and private flag
        from the metadata memkit keeps)."""
        meta = item.metadata
        categories = meta.get(_CATEGORIES)
        return MemoryRecord(
            id=item.id, content=item.memory, scope=meta.get(_SCOPE) or "/",
            categories=[str(c) for c in categories] if isinstance(categories, list) else [],
            metadata={key: value for key, value in meta.items() if key not in _KEYS},
            importance=item.importance if item.importance is not None else self.default_importance,
            created_at=_naive(item.created_at), last_accessed=_naive(item.last_accessed_at or item.updated_at),
            source=meta.get(_SOURCE), private=meta.get(_PRIVATE) is True)

    def _items(self, filters: dict[str, Any] | None) -> list[memkit.MemoryItem]:
        total = self.memory.stats(**self.ids, filters=filters).memories
        return self.memory.get_all(**self.ids, filters=filters, limit=total).results if total else []


def _prefixes(path: str) -> list[str]:
    """``"/a/b"`` -> ``["/", "/a", "/a/b"]``: what a memory at ``path`` lies under."""
    parts = [part for part in path.split("/") if part]
    return ["/", *("/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1))]


def _under(path: str | None) -> dict[str, Any] | None:
    if path is None or not path.strip("/"):
        return None
    return {_PREFIXES: {"contains": "/" + path.strip("/")}}


def _any_category(categories: list[str] | None) -> dict[str, Any] | None:
    return {"OR": [{_CATEGORIES: {"contains": c}} for c in categories]} if categories else None


def _visible_to(source: str | None) -> dict[str, Any]:
    public = {_PRIVATE: {"ne": True}}
    return {"OR": [public, {_SOURCE: source}]} if source is not None else public


def _all_of(*filters: dict[str, Any] | None) -> dict[str, Any] | None:
    given = [f for f in filters if f is not None]
    return {"AND": given} if len(given) > 1 else (given[0] if given else None)


def _children(path: str, scopes: list[str]) -> list[str]:
    start = "/" if path == "/" else path + "/"
    return sorted({start + rest.split("/", 1)[0] for scope in scopes
                   if scope.startswith(start) and (rest := scope[len(start):])})


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment  # CrewAI's times are naive UTC


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


class _MemkitTool(BaseTool):
    """One memkit memory tool; a memkit error is the tool's output (``"error: ..."``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    tools: Any

    def _run(self, **arguments: Any) -> str:
        try:
            return json.dumps(self.tools.call(self.name, arguments), ensure_ascii=False)
        except MemkitError as exc:
            return error_text(exc)

    async def _arun(self, **arguments: Any) -> str:
        try:
            return json.dumps(await self.tools.acall(self.name, arguments), ensure_ascii=False)
        except MemkitError as exc:
            return error_text(exc)


def _tool(spec: ToolSpec, tools: MemoryTools) -> BaseTool:
    schema: type[BaseModel] = arguments_model(spec, tools.fixed)
    return _MemkitTool(name=spec.name, description=spec.description, args_schema=schema, tools=tools)


def memory_tools(
    memory: memkit.Memory | memkit.AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[BaseTool]:
    """memkit's memory tools (all, or ``names``) as CrewAI tools over ``memory``, for an
    ``Agent(tools=...)``."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    return [_tool(spec, tools) for spec in tools.specs]
