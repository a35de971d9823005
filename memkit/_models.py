"""Public result models. ``model_dump(mode="json")`` gives the JSON shape."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkit._display import html_table, one_line, plural, scope_of, text_table

Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]
GraphEventName = Literal["RELATION_ADD", "RELATION_CLOSE", "RELATION_DELETE", "ENTITY_ADD",
                         "ENTITY_DELETE"]
PurgeEventName = Literal["PURGE"]
"""What a purged record leaves in the history: the event, without any text."""
PendingEventName = Literal["GRAPH_PENDING"]
"""Graph work an add still owes (``memory_id`` ``memkit:graph-pending``), gone once done."""
ConsolidateEventName = Literal["CONSOLIDATE"]
"""A consolidation that merged memories, once per scope it merged in (``memory_id``: the
run's id; ``new_value``: JSON with ``examined``, ``clusters`` and ``merged``)."""

MEMORY_TYPES = ("observation", "decision", "learning", "error", "pattern", "preference", "fact",
                "procedure", "task")
"""The built-in memory types; a caller may use a word of its own."""
TASK_STATUSES = ("open", "in_progress", "done", "cancelled")
"""The statuses of a task (``memory_type="task"``); a new task is ``open``."""


class ResultModel(BaseModel):
    """A typed result that also reads like mem0's dicts: ``item["memory"]``, ``item.get("score")``."""

    model_config = ConfigDict(extra="forbid")

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in type(self).model_fields

    def get(self, key: str, default: Any = None) -> Any:
        """The field ``key``, or ``default`` when the model has no such field."""
        return getattr(self, key) if key in self else default

    def __repr__(self) -> str:
        """One line: the fields that differ from their defaults (``str()`` gives the table)."""
        fields = {name: value for name, value in self if value != type(self).model_fields[name].default
                  and not isinstance(value, BaseModel | list)}
        return one_line(type(self).__name__, **fields)


class _StoredMemory(ResultModel):
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
    memory_type: str | None = None
    importance: float | None = None
    confidence: float | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None


class MemoryItem(_StoredMemory):
    """One stored memory (``score`` is set by search). ``confidence`` is as of reading:
    decayed since its last access when decay is on (see ``docs/lifecycle.md``)."""

    score: float | None = None

    def __repr__(self) -> str:
        return one_line("MemoryItem", self.id[:8], *filter(None, [scope_of(self)]), text=self.memory,
                        score=self.score, type=self.memory_type)

    def __str__(self) -> str:
        return text_table(f"memory {self.id}", ["field", "value"], self._rows())

    def _repr_html_(self) -> str:
        return html_table(f"memory {self.id}", ["field", "value"], self._rows())

    def _rows(self) -> list[tuple[str, Any]]:
        return [(name, value) for name, value in self if value not in (None, {})]

    @property
    def location(self) -> str | None:
        """``path:line`` of a section of an indexed note (``Memory.index_folder``), else None."""
        path, line = self.metadata.get("path"), self.metadata.get("line_start")
        if self.metadata.get("source") != "notes" or not path or not line:
            return None
        return f"{path}:{line}"


class MemoryEvent(ResultModel):
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

    def __repr__(self) -> str:
        return one_line(self.event, self.id[:8], *filter(None, [scope_of(self)]), text=self.memory)


class OperationError(ResultModel):
    """An operation that was not applied, and why. ``embedding`` appears only with
    ``on_error="degrade"``."""

    stage: Literal["extraction", "decision", "validation", "embedding", "apply", "graph"]
    message: str
    operation: dict[str, Any] | None = None


class Usage(ResultModel):
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


_ADD_COLUMNS = ["event", "id", "memory", "old_memory", "metadata"]
_SEARCH_COLUMNS = ["score", "id", "memory", "location", "metadata", "user_id", "agent_id", "run_id",
                   "updated_at"]
_HISTORY_COLUMNS = ["timestamp", "event", "old_value", "new_value"]


class GraphRelation(ResultModel):
    """``source -[relation]-> target`` in the graph; open while ``valid_to`` is None."""

    id: str
    source: str
    relation: str
    target: str
    weight: float = 1.0
    confidence: float = 1.0
    valid_from: datetime
    valid_to: datetime | None = None
    memory_ids: list[str] = Field(default_factory=list)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class GraphEntity(ResultModel):
    """An entity of one scope's graph."""

    id: str
    name: str
    type: str
    summary: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: datetime
    updated_at: datetime


class EntityGraph(ResultModel):
    """Entities and the open relations among them; with ``include_memories``, the current
    memories the relations came from."""

    entities: list[GraphEntity] = Field(default_factory=list)
    relations: list[GraphRelation] = Field(default_factory=list)
    memories: list[MemoryItem] = Field(default_factory=list)


class AddResult(ResultModel):
    """The outcome of ``Memory.add``: one event per memory touched, in ``results``; with a
    graph store, the relations it added (or mentioned again) and those it closed.

    Iterating it, ``len()`` and ``result["results"]`` work as on mem0's dict.
    """

    results: list[MemoryEvent] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    errors: list[OperationError] = Field(default_factory=list)
    relations: list[GraphRelation] = Field(default_factory=list)
    closed_relations: list[GraphRelation] = Field(default_factory=list)
    #: the entities this add created (extracted, or named with ``entities=``)
    entities: list[GraphEntity] = Field(default_factory=list)
    #: the automatic consolidation this add started (``lifecycle.consolidate_every``)
    consolidation: ConsolidationResult | None = None

    def __iter__(self) -> Iterator[MemoryEvent]:  # type: ignore[override]
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def _table(self) -> tuple[str, list[str], list[tuple[Any, ...]]]:
        title = f"{plural(len(self.results), 'event')}, {plural(self.usage.llm_calls, 'LLM call')}"
        if self.errors:
            title += f", {len(self.errors)} skipped: " + "; ".join(e.message for e in self.errors)
        columns = [c for c in _ADD_COLUMNS if c in ("event", "id", "memory")
                   or any(getattr(e, c) for e in self.results)]
        return title, columns, [tuple(getattr(e, c) for c in columns) for e in self.results]

    def __repr__(self) -> str:
        events = ", ".join(f"{e.event} {e.memory[:24]!r}" for e in self.results[:3])
        more = f" +{len(self.results) - 3}" if len(self.results) > 3 else ""
        return one_line("AddResult", plural(len(self.results), "event") + (f": {events}{more}" if events else ""),
                        llm_calls=self.usage.llm_calls, skipped=len(self.errors) or None)

    def __str__(self) -> str:
        return text_table(*self._table())

    def _repr_html_(self) -> str:
        return html_table(*self._table())


class DeleteResult(ResultModel):
    """The outcome of ``Memory.delete_all``: one DELETE event per memory deleted."""

    results: list[MemoryEvent] = Field(default_factory=list)

    @property
    def count(self) -> int:
        """How many memories were deleted."""
        return len(self.results)

    def __iter__(self) -> Iterator[MemoryEvent]:  # type: ignore[override]
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


class SearchResult(ResultModel):
    """Memories, best first (search) or newest first (get_all), in ``results``.

    Iterating it, ``len()`` and ``result["results"][0]["memory"]`` work as on mem0's dict.
    """

    results: list[MemoryItem] = Field(default_factory=list)
    #: with graph search: the open relations around the entities the query names
    relations: list[GraphRelation] = Field(default_factory=list)

    def __iter__(self) -> Iterator[MemoryItem]:  # type: ignore[override]
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def _table(self) -> tuple[str, list[str], list[tuple[Any, ...]]]:
        columns = [c for c in _SEARCH_COLUMNS if any(getattr(m, c) not in (None, {}) for m in self.results)]
        rows = [tuple(getattr(m, c) for c in columns) for m in self.results]
        return plural(len(self.results), "memory"), columns or ["memory"], rows

    def __repr__(self) -> str:
        best = ", ".join(f"{m.memory[:24]!r}" + (f" ({m.score:.2f})" if m.score is not None else "")
                         for m in self.results[:2])
        more = f" +{len(self.results) - 2}" if len(self.results) > 2 else ""
        relations = plural(len(self.relations), "relation") if self.relations else None
        return one_line("SearchResult", plural(len(self.results), "memory") + (f": {best}{more}" if best else ""),
                        graph=relations)

    def __str__(self) -> str:
        return text_table(*self._table())

    def _repr_html_(self) -> str:
        return html_table(*self._table())


class HistoryRecord(ResultModel):
    """One change to one memory (or, with a graph, to a relation or an entity: ``memory_id``
    is then its id; or a consolidation's summary, ``CONSOLIDATE``). A purged memory keeps
    only ``PURGE`` records: no text, the time, the scope."""

    id: str
    memory_id: str
    event: Event | GraphEventName | PurgeEventName | PendingEventName | ConsolidateEventName
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

    def __repr__(self) -> str:
        return one_line("HistoryRecord", self.event, self.memory_id[:8], self.timestamp.isoformat(" ", "seconds"),
                        text=self.new_value if self.new_value is not None else self.old_value,
                        actor=self.actor_id)


class Change(HistoryRecord):
    """A change as the change feed gives it (``Memory.changes``, ``AsyncMemory.watch``): its
    history record and its ``position`` in commit order. A memory's ``ADD``, ``UPDATE``,
    ``DELETE``, or ``PURGE`` (removed for good); a graph's ``ENTITY_ADD`` (``memory_id``: the
    entity's id; ``new_value``: JSON with its ``name`` and ``type``); or a ``CONSOLIDATE``."""

    #: where the feed resumes after this change: pass it back as ``after``
    position: str


class ConsolidationCluster(ResultModel):
    """Near-duplicates merged (or, in a dry run, to be merged) into ``keeper``."""

    keeper: MemoryItem
    merged: list[MemoryItem] = Field(default_factory=list)


class ConsolidationResult(ResultModel):
    """The outcome of ``Memory.consolidate``: the clusters found among ``examined``
    current memories; with ``dry_run`` nothing was changed."""

    dry_run: bool
    examined: int = 0
    clusters: list[ConsolidationCluster] = Field(default_factory=list)

    @property
    def merged(self) -> int:
        """How many memories were (or would be) merged into another."""
        return sum(len(c.merged) for c in self.clusters)


AddResult.model_rebuild()
class ReembedResult(ResultModel):
    """The outcome of ``Memory.reembed``: ``memories`` records (current memories, past
    versions and deleted ones) now hold vectors of ``new_model``; ``seconds`` it took."""

    memories: int
    old_model: str
    old_dimension: int
    new_model: str
    new_dimension: int
    seconds: float


class ScopeCount(ResultModel):
    """How many current memories one scope holds (``MemoryStats.by_scope``)."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memories: int = 0


class MemoryStats(ResultModel):
    """What ``Memory.stats`` reports. ``memories``: current ones; ``by_type``: current
    ones per ``memory_type`` ("untyped" without one); ``by_scope``: current ones per
    scope, the fullest first; ``by_state``: every record as
    current, superseded (a past version), deleted, expired or future (valid later);
    ``growth``: memories created per day (``YYYY-MM-DD``, past versions not counted);
    ``confidence_histogram``: current memories in ten bins of confidence, [0, 0.1) to
    [0.9, 1.0]; ``most_accessed``: up to ten, by ``access_count``; ``top_entities``
    (with a graph store): up to ten entity names by their open relations, ``entities`` and
    ``relations`` (open ones) the totals of the current memories' scopes;
    ``average_confidence`` of the current memories, ``low_confidence`` how many are below
    0.05 (what ``prune()`` forgets by default); ``oldest``/``newest``: when the oldest and
    newest current memories were created; ``confirmations``: how often adds re-stated the
    current memories (their ``metadata["confirmations"]`` summed)."""

    memories: int = 0
    by_type: dict[str, int] = Field(default_factory=dict)
    by_scope: list[ScopeCount] = Field(default_factory=list)
    by_state: dict[str, int] = Field(default_factory=dict)
    growth: dict[str, int] = Field(default_factory=dict)
    confidence_histogram: list[int] = Field(default_factory=lambda: [0] * 10)
    most_accessed: list[MemoryItem] = Field(default_factory=list)
    top_entities: dict[str, int] = Field(default_factory=dict)
    entities: int = 0
    relations: int = 0
    average_confidence: float | None = None
    low_confidence: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    confirmations: int = 0
    decay: bool = False

    def __repr__(self) -> str:
        types = ", ".join(f"{name} {count}" for name, count in sorted(
            self.by_type.items(), key=lambda item: -item[1])[:4])
        fields: dict[str, Any] = {k: v for k, v in self.by_state.items() if k != "current" and v}
        fields["decay"] = "on" if self.decay else None
        return one_line("MemoryStats", plural(self.memories, "memory") + (f" ({types})" if types else ""), **fields)

    def __str__(self) -> str:
        rows: list[tuple[str, Any]] = [("memories", self.memories), ("by type", self.by_type),
                                       ("by state", self.by_state), ("decay", "on" if self.decay else "off")]
        if self.top_entities:
            rows.append(("top entities", self.top_entities))
        return text_table("memory stats", ["what", "value"], rows)


class SearchLogEntry(ResultModel):
    """One search in the search log (``lifecycle.search_log``): a SHA-256 of the query,
    the query itself only with ``lifecycle.search_log_text``, the limit asked for (``k``),
    the ids returned, best first, and how long the search took."""

    id: str
    timestamp: datetime
    query_hash: str
    query: str | None = None
    k: int
    result_ids: list[str] = Field(default_factory=list)
    latency_ms: float
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class ExportedMemory(_StoredMemory):
    """A memory with its history, as ``Memory.export`` gives and ``Memory.import_`` takes."""

    history: list[HistoryRecord] = Field(default_factory=list)


class ImportResult(ResultModel):
    """The outcome of ``Memory.import_``: memories written, skipped (id or text already
    stored in the scope) and rejected, with why."""

    imported: int = 0
    skipped: int = 0
    errors: list[str] = Field(default_factory=list)
class HistoryList(list[HistoryRecord]):
    """What ``Memory.history`` returns: a list of records, oldest first, that prints as a table."""

    def _table(self) -> tuple[str, list[str], list[tuple[Any, ...]]]:
        title = f"history of {self[0].memory_id}" if self else "no history"
        return title, _HISTORY_COLUMNS, [(r.timestamp, r.event, r.old_value, r.new_value) for r in self]

    def __str__(self) -> str:
        return text_table(*self._table())

    def _repr_html_(self) -> str:
        return html_table(*self._table())
