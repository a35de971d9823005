"""``Memory`` and ``AsyncMemory``: two thin shells over the same flows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from os import PathLike, fspath
from typing import Any, Self

from memkit._config import GraphStoreConfig, MemoryConfig, default_llm_config, load_config
from memkit._errors import ConfigError, MemkitError, ScopeError
from memkit._filters import Condition, Filter, all_of, parse_filter
from memkit._hints import check_options, unknown_provider
from memkit._imports import load_object
from memkit._models import (
    AddResult,
    ConsolidationResult,
    DeleteResult,
    EntityGraph,
    ExportedMemory,
    GraphEntity,
    GraphRelation,
    HistoryList,
    HistoryRecord,
    ImportResult,
    MemoryItem,
    MemoryStats,
    ReembedResult,
    SearchLogEntry,
    SearchResult,
)
from memkit._notes.models import IndexResult, StartupContext
from memkit._notes.watch import FolderWatch
from memkit._pipeline.add.flow import AddRequest, OnError, add_flow
from memkit._pipeline.effects import Flow
from memkit._pipeline.features.consolidate import auto_flow, consolidate_flow
from memkit._pipeline.features.feedback import feedback_flow, logged_search_flow, search_log_flow
from memkit._pipeline.features.graph import (
    GraphSettings,
    add_entity_flow,
    add_relation_flow,
    delete_entity_flow,
    delete_relation_flow,
    entity_graph_flow,
    get_entities_flow,
    get_entity_flow,
)
from memkit._pipeline.features.graph_search import graph_search_flow
from memkit._pipeline.features.lifecycle import Lifecycle, LifecycleState, flush_flow, lifecycle_fields, prune_flow
from memkit._pipeline.features.notes import NOTE_FILES, daily_log_flow, index_flow, max_file_bytes_of
from memkit._pipeline.features.reembed import Progress, reembed_flow
from memkit._pipeline.features.startup import budget_of, startup_flow
from memkit._pipeline.features.stats import stats_flow
from memkit._pipeline.features.task_fields import surface_of, with_surface, with_task_status
from memkit._pipeline.features.tasks import update_task_flow
from memkit._pipeline.features.transfer import export_flow, import_flow
from memkit._pipeline.inputs import (
    Scope,
    limit_or_top_k,
    messages_of,
    metadata_of,
    on_error_of,
    scope_and_filters,
    text_of,
    timestamp_of,
)
from memkit._pipeline.memories import (
    delete_all_flow,
    delete_flow,
    get_all_flow,
    get_flow,
    history_flow,
    purge_flow,
    reset_flow,
    revert_flow,
    supersede_flow,
    update_flow,
)
from memkit._pipeline.runtime import Runtime
from memkit._pipeline.search.flow import SearchMode, SearchSettings, search_flow
from memkit._pipeline.search.paging import offset_of, paged_flow
from memkit._pipeline.search.scopes import any_scope, scopes_of
from memkit._pipeline.write.versions import chain_flow, valid_at
from memkit._time import to_iso, utcnow
from memkit.embeddings import PROVIDERS as EMBEDDERS
from memkit.embeddings.base import Embedder
from memkit.graph import PROVIDERS as GRAPHS
from memkit.graph.base import GraphScope, GraphStore
from memkit.history import PROVIDERS as HISTORIES
from memkit.history.base import HistoryStore
from memkit.llms import PROVIDERS as LLMS
from memkit.llms.base import LLM
from memkit.stores import PROVIDERS as STORES
from memkit.stores.base import Vector, VectorStore

Timestamp = datetime | str | int | float


def _build(kind: str, registry: dict[str, str], provider: str, options: dict[str, Any]) -> Any:
    if provider not in registry:
        raise ConfigError(unknown_provider(kind, provider, registry))
    cls = load_object(registry[provider])
    check_options(f"{kind.replace(' ', '_')}.config ({provider})", cls, options)
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"invalid {kind} config for {provider!r}: {exc}") from exc


class _Shell:
    """Construction and components, shared by Memory and AsyncMemory."""

    config: MemoryConfig
    _runtime: Runtime

    def __init__(
        self,
        config: MemoryConfig | dict[str, Any] | None = None,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        vector_store: VectorStore | None = None,
        history: HistoryStore | None = None,
        clock: Callable[[], datetime] | None = None,
        graph_store: GraphStore | None = None,
    ) -> None:
        cfg = load_config(config)
        self.config = cfg
        if llm is None:
            llm = _build("llm", LLMS, cfg.llm.provider, {**default_llm_config(), **cfg.llm.config})
        if embedder is None:
            embedder = _build("embedder", EMBEDDERS, cfg.embedder.provider, cfg.embedder.config)
        if vector_store is None:
            vector_store = _build("vector store", STORES, cfg.vector_store.provider,
                                  cfg.vector_store.config)
        if history is None:
            history = self._default_history(cfg, vector_store)
        if graph_store is None and cfg.graph_store is not None:
            graph_store = self._default_graph(cfg, vector_store)
        #: accesses and add counts: the lifecycle feature's state
        self._state = LifecycleState()
        self._runtime = Runtime(llm, embedder, vector_store, history, graph_store,
                                handlers={**self._state.handlers(), **NOTE_FILES})
        graph_cfg = cfg.graph_store or GraphStoreConfig()
        self._graph_depth = graph_cfg.search_depth
        self._graph = None if graph_store is None else GraphSettings(
            graph_store.joins(vector_store), graph_cfg.entity_threshold)
        self._search_settings = SearchSettings(**cfg.search.model_dump())
        #: what "now" is (a test passes a clock it moves)
        self._clock = clock or utcnow
        life = cfg.lifecycle
        self._lifecycle = Lifecycle(
            decay=life.decay, half_lives={**Lifecycle().half_lives, **life.half_life_days},
            default_half_life=life.default_half_life_days,
            reinforce=life.decay if life.reinforce is None else life.reinforce,
            step=life.reinforcement, penalty=life.feedback_penalty)
        self._state.accesses.flush_every = life.flush_every

    def _now(self) -> str:
        return to_iso(self._clock())

    @staticmethod
    def _default_history(cfg: MemoryConfig, store: VectorStore) -> HistoryStore:
        shared = getattr(store, "history", None)
        if cfg.history.db_path is None and cfg.history.provider == "sqlite" and callable(shared):
            return shared()  # type: ignore[no-any-return]
        options = dict(cfg.history.config)
        if cfg.history.provider == "sqlite":
            default = ":memory:" if store.provider == "memory" else "~/.memkit/history.db"
            options.setdefault("db_path", cfg.history.db_path or default)
        return _build("history", HISTORIES, cfg.history.provider, options)  # type: ignore[no-any-return]

    @staticmethod
    def _default_graph(cfg: MemoryConfig, store: VectorStore) -> GraphStore:
        assert cfg.graph_store is not None
        shared = getattr(store, "graph", None)
        provider, options = cfg.graph_store.provider, cfg.graph_store.config
        if provider == "sqlite" and "path" not in options and callable(shared):
            return shared()  # type: ignore[no-any-return]
        return _build("graph store", GRAPHS, provider, options)  # type: ignore[no-any-return]

    @classmethod
    def from_config(cls, config_dict: dict[str, Any], **components: Any) -> Self:
        """Build from a config dict; components (llm=, embedder=, ...) override it."""
        return cls(load_config(config_dict), **components)

    def __repr__(self) -> str:
        llm = self._runtime.llm
        model = getattr(llm, "model", None) or type(llm).__name__
        return (f"{type(self).__name__}(store={self._runtime.store.provider!r}, "
                f"embedder={self._runtime.embedder.model_name!r}, llm={model!r})")

    @property
    def vector_store(self) -> VectorStore:
        return self._runtime.store

    @property
    def embedder(self) -> Embedder:
        return self._runtime.embedder

    @property
    def llm(self) -> LLM:
        return self._runtime.llm

    @property
    def graph_store(self) -> GraphStore | None:
        return self._runtime.graph


def _when(self: _Shell, value: Timestamp | None) -> str:
    return timestamp_of(value if value is not None else self._clock())


def _expiry(expires_at: Timestamp | None, expiration_date: Timestamp | None) -> str | None:
    """``expires_at``, or mem0's name for it."""
    if expires_at is not None and expiration_date is not None:
        raise MemkitError("give expires_at or expiration_date (its mem0 name), not both")
    chosen = expires_at if expires_at is not None else expiration_date
    return None if chosen is None else timestamp_of(chosen)


def _valid(self: _Shell, as_of: Timestamp | None, include_expired: bool) -> Filter:
    return valid_at(_when(self, as_of), include_expired=bool(include_expired))


def _add(
    self: _Shell,
    /,
    messages: str | dict[str, Any] | list[dict[str, Any]],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    filters: dict[str, Any] | None = None,
    prompt: str | None = None,
    infer: bool = True,
    timestamp: Timestamp | None = None,
    on_error: OnError | None = None,
    expires_at: Timestamp | None = None,
    expiration_date: Timestamp | None = None,
    dry_run: bool = False,
    memory_type: str | None = None,
    importance: float | None = None,
    surface: str | None = None,
) -> Flow[AddResult]:
    prompts = self.config.custom_prompts
    lifecycle = lifecycle_fields(memory_type, importance)
    request = AddRequest(
        messages=messages_of(messages),
        scope=Scope.of(user_id, agent_id, run_id),
        metadata=with_task_status(with_surface(metadata_of(metadata), surface),
                                  lifecycle.get("memory_type")),
        filters=parse_filter(filters),
        prompt=None if prompt is None else text_of(prompt, "prompt"),
        infer=bool(infer),
        timestamp=timestamp_of(timestamp if timestamp is not None else self._clock()),
        extraction_prompt=prompts.fact_extraction,
        decision_prompt=prompts.update_decision,
        candidates_per_fact=self.config.candidates_per_fact,
        on_error=on_error_of(on_error if on_error is not None else self.config.on_error),
        expires_at=_expiry(expires_at, expiration_date),
        dry_run=bool(dry_run),
        lifecycle=lifecycle,
        graph=self._graph,
    )
    life = self.config.lifecycle
    flow = add_flow(request)
    if life.consolidate_every is not None and not request.dry_run:
        flow = auto_flow(flow, request.scope.filter(), life.consolidate_every,
                         life.consolidate_threshold, self._now(), self._lifecycle, self._graph)
    if self.config.daily_log_dir is not None and not request.dry_run:
        flow = daily_log_flow(flow, self.config.daily_log_dir, self._now())
    return flow


def _search(
    self: _Shell,
    /,
    query: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    limit: int | None = None,
    filters: dict[str, Any] | None = None,
    threshold: float | None = None,
    mode: SearchMode | None = None,
    top_k: int | None = None,
    as_of: Timestamp | None = None,
    include_expired: bool = False,
    min_confidence: float | None = None,
    graph: bool | None = None,
    scopes: Sequence[Mapping[str, str | None]] | None = None,
    offset: int = 0,
) -> Flow[SearchResult]:
    if scopes is None:
        scope, rest = scope_and_filters(user_id, agent_id, run_id, filters)
        where = scope.filter()
    else:  # several scopes, named on purpose; the graph is walked within one scope only
        if graph:
            raise MemkitError("graph search runs in one scope; it cannot be used with scopes=")
        scope, rest, graph = Scope(), filters, False
        where = any_scope(scopes_of(scopes, user_id, agent_id, run_id))
    selection = all_of(where, parse_filter(rest), _valid(self, as_of, include_expired))
    limit = limit_or_top_k(limit, top_k, 100)
    now = self._now()
    graphed = graph is not False and (graph is not None or self._graph is not None)
    graph_scope = _graph_scope(self, scope.user_id, scope.agent_id, scope.run_id)[1] \
        if graphed else None

    def ranked(window: int, vector: Vector | None, life: Lifecycle) -> Flow[SearchResult]:
        search = partial(search_flow, query, selection, window, threshold, mode,
                         self._search_settings, self._runtime.store.supports_keyword, life,
                         now, min_confidence)
        if graph_scope is None:
            return search(vector=vector)
        return graph_search_flow(lambda given: search(vector=given), query, graph_scope,
                                 selection, self._graph_depth, window, vector)

    keyword_only = (mode or self._search_settings.mode) == "keyword" and not graphed
    flow = paged_flow(ranked, query, offset_of(offset), limit, self._lifecycle, now,
                      embed=not keyword_only)
    life = self.config.lifecycle
    if not life.search_log:
        return flow
    return logged_search_flow(flow, query, limit, scope, now, life.search_log_text)


def _graph_scope(self: _Shell, user_id: str | None, agent_id: str | None,
                 run_id: str | None) -> tuple[str, GraphScope]:
    """The lock key and the scope of a graph operation; a graph store must be configured."""
    if self._graph is None:
        raise ConfigError("no graph store is configured: pass graph_store= or set "
                          "graph_store in the config")
    scope = Scope.of(user_id, agent_id, run_id)
    selection = scope.filter()
    key = "" if selection is None else selection.model_dump_json()
    return key, GraphScope(scope.user_id, scope.agent_id, scope.run_id)


def _get_all(
    self: _Shell,
    /,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
    limit: int | None = None,
    top_k: int | None = None,
    as_of: Timestamp | None = None,
    include_expired: bool = False,
    surface: str | None = None,
) -> Flow[SearchResult]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters)
    surfaced = None if surface is None else Condition(field="surface", operator="eq",
                                                      value=surface_of(surface))
    selection = all_of(scope.filter(), parse_filter(rest), surfaced,
                       _valid(self, as_of, include_expired))
    return get_all_flow(selection, limit_or_top_k(limit, top_k, 100), self._lifecycle,
                        self._now())


def _update(
    self: _Shell,
    /,
    memory_id: str,
    text: str | None = None,
    *,
    metadata: dict[str, Any] | None = None,
    data: str | None = None,
    expires_at: Timestamp | None = None,
    memory_type: str | None = None,
    importance: float | None = None,
    surface: str | None = None,
) -> Flow[MemoryItem]:
    if text is not None and data is not None:
        raise MemkitError("update() takes the new text once: as text or as data=")
    lifecycle = lifecycle_fields(memory_type, importance)
    new_text = text if text is not None else None if data is None else str(data)
    if new_text is None and not (lifecycle or metadata or expires_at is not None
                                 or surface is not None):
        raise MemkitError("update() needs a new text, metadata, expires_at, memory_type, "
                          "importance or surface")
    return update_flow(memory_id, new_text, with_surface(metadata_of(metadata), surface),
                       _expiry(expires_at, None), self._now(), lifecycle)


def _delete_all(
    self: _Shell,
    /,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[DeleteResult]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters)
    if scope.empty:
        raise ScopeError()
    return delete_all_flow(scope, parse_filter(rest), self._now())


def _purge(
    self: _Shell,
    /,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[int]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters)
    if scope.empty:
        raise ScopeError()
    return purge_flow(scope, parse_filter(rest))


def _export(
    self: _Shell,
    /,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[list[ExportedMemory]]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters, required=False)
    return export_flow(all_of(scope.filter(), parse_filter(rest)))


def _prune(
    self: _Shell,
    /,
    below: float,
    dry_run: bool,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[DeleteResult]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters, required=False)
    return prune_flow(all_of(scope.filter(), parse_filter(rest)), below, bool(dry_run),
                      self._now(), self._lifecycle)


def _consolidate(
    self: _Shell,
    /,
    threshold: float | None,
    dry_run: bool,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[ConsolidationResult]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters, required=False)
    chosen = self.config.lifecycle.consolidate_threshold if threshold is None else threshold
    return consolidate_flow(all_of(scope.filter(), parse_filter(rest)), chosen, bool(dry_run),
                            self._now(), self._lifecycle, self._graph)


def _stats(
    self: _Shell,
    /,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    filters: dict[str, Any] | None = None,
) -> Flow[MemoryStats]:
    scope, rest = scope_and_filters(user_id, agent_id, run_id, filters, required=False)
    return stats_flow(all_of(scope.filter(), parse_filter(rest)), self._now(), self._lifecycle,
                      self._graph is not None)


def _search_log(self: _Shell, user_id: str | None, agent_id: str | None, run_id: str | None,
                limit: int) -> Flow[list[SearchLogEntry]]:
    scope = Scope.of(user_id, agent_id, run_id, required=False)
    return search_log_flow(scope, limit_or_top_k(limit, None, 100))


def _reembed(self: _Shell, embedder: Embedder, batch_size: int,
             on_progress: Progress | None) -> Flow[ReembedResult]:
    return reembed_flow(self._runtime.embedder, embedder, batch_size, time.perf_counter,
                        on_progress, graph=self._graph is not None)


# -- notes, tasks, startup ------------------------------------------------------------


def _index(self: _Shell, path: str | PathLike[str], max_file_bytes: int, user_id: str | None,
           agent_id: str | None, run_id: str | None) -> Flow[IndexResult]:
    return index_flow(fspath(path), Scope.of(user_id, agent_id, run_id),
                      max_file_bytes_of(max_file_bytes), self._now())


def _watch(self: _Shell, path: str | PathLike[str], max_file_bytes: int, debounce_ms: int,
           on_index: Callable[[IndexResult], Any] | None, user_id: str | None,
           agent_id: str | None, run_id: str | None) -> FolderWatch:
    """The watch runs the index with blocking calls in its thread, for either shell."""
    _index(self, path, max_file_bytes, user_id, agent_id, run_id).close()  # arguments checked now

    def index() -> IndexResult:
        return self._runtime.run(_index(self, path, max_file_bytes, user_id, agent_id, run_id))

    return FolderWatch(fspath(path), index, debounce_ms=debounce_ms, on_index=on_index).start()


def _startup(self: _Shell, budget_tokens: int, user_id: str | None, agent_id: str | None,
             run_id: str | None) -> Flow[StartupContext]:
    scope = Scope.of(user_id, agent_id, run_id)
    return startup_flow(scope.filter(), budget_of(budget_tokens), self._now(), self._lifecycle)


# -- graph ---------------------------------------------------------------------------


def _get_entity(self: _Shell, name: str, user_id: str | None, agent_id: str | None,
                run_id: str | None) -> Flow[GraphEntity | None]:
    return get_entity_flow(_graph_scope(self, user_id, agent_id, run_id)[1], name)


def _get_entities(self: _Shell, type: str | None, limit: int, user_id: str | None,
                  agent_id: str | None, run_id: str | None) -> Flow[list[GraphEntity]]:
    scope = _graph_scope(self, user_id, agent_id, run_id)[1]
    return get_entities_flow(scope, type, limit_or_top_k(limit, None, 100))


def _get_entity_graph(self: _Shell, name: str | list[str], depth: int, user_id: str | None,
                      agent_id: str | None, run_id: str | None) -> Flow[EntityGraph]:
    names = [name] if isinstance(name, str) else list(name)
    return entity_graph_flow(_graph_scope(self, user_id, agent_id, run_id)[1], names, depth)


def _add_entity(self: _Shell, name: str, type: str | None, summary: str | None,
                user_id: str | None, agent_id: str | None,
                run_id: str | None) -> Flow[GraphEntity]:
    key, scope = _graph_scope(self, user_id, agent_id, run_id)
    return add_entity_flow(key, scope, name, type, summary, self._now())


def _add_relation(self: _Shell, source: str, relation: str, target: str,
                  source_type: str | None, target_type: str | None, user_id: str | None,
                  agent_id: str | None, run_id: str | None) -> Flow[GraphRelation]:
    key, scope = _graph_scope(self, user_id, agent_id, run_id)
    return add_relation_flow(key, scope, source, relation, target, source_type, target_type,
                             self._now())


def _delete_relation(self: _Shell, source: str, relation: str, target: str,
                     user_id: str | None, agent_id: str | None, run_id: str | None) -> Flow[int]:
    key, scope = _graph_scope(self, user_id, agent_id, run_id)
    return delete_relation_flow(key, scope, source, relation, target, self._now())


def _delete_entity(self: _Shell, name: str, user_id: str | None, agent_id: str | None,
                   run_id: str | None) -> Flow[bool]:
    key, scope = _graph_scope(self, user_id, agent_id, run_id)
    return delete_entity_flow(key, scope, name, self._now())


class Memory(_Shell):
    """Long-term memory. ``Memory()`` runs offline on embedded defaults::

        with Memory() as m:
            m.add("I prefer dark mode", user_id="alice", infer=False)
            m.search("UI preferences", user_id="alice")
    """

    def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        prompt: str | None = None,
        infer: bool = True,
        timestamp: Timestamp | None = None,
        on_error: OnError | None = None,
        expires_at: Timestamp | None = None,
        expiration_date: Timestamp | None = None,
        dry_run: bool = False,
        memory_type: str | None = None,
        importance: float | None = None,
        surface: str | None = None,
    ) -> AddResult:
        """Remember a conversation (a string, a message dict or a list of them).

        With ``infer=True`` an LLM extracts facts and decides, against what the
        scope already holds, whether to ADD, UPDATE, DELETE or do nothing; with
        ``infer=False`` each message is stored as it is. At least one of
        ``user_id``, ``agent_id`` and ``run_id`` is required. ``filters`` narrows
        the memories the LLM compares with; ``prompt`` replaces the extraction
        prompt; ``timestamp`` dates the memories (default: now) and is when they
        become valid (an UPDATE ends the old text's validity then). ``expires_at``
        (mem0's ``expiration_date``) hides the memories after that time.
        ``dry_run=True`` returns the decided operations, usage and errors and
        applies nothing. ``on_error="degrade"`` (default: the config's ``on_error``, "raise")
        reports LLM and embedding failures in ``AddResult.errors`` and stores
        what it can, instead of raising. ``memory_type`` (one of ``MEMORY_TYPES`` or a
        word of your own) and ``importance`` (0 to 1) are given to every memory this
        add writes, over what the extraction says. A ``memory_type="task"`` memory gets
        ``metadata["status"]`` "open" unless given one of ``TASK_STATUSES``;
        ``surface="startup"`` puts the memories in :meth:`startup_context`.
        """
        return self._runtime.run(_add(
            self, messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            filters=filters, prompt=prompt, infer=infer, timestamp=timestamp, on_error=on_error,
            expires_at=expires_at, expiration_date=expiration_date, dry_run=dry_run,
            memory_type=memory_type, importance=importance, surface=surface))

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        min_confidence: float | None = None,
        graph: bool | None = None,
        scopes: Sequence[Mapping[str, str | None]] | None = None,
        offset: int = 0,
    ) -> SearchResult:
        """Memories of the scope most relevant to ``query``, highest score first.

        ``limit`` (default 100; ``top_k`` is the same, mem0's name) caps the
        results. The scope may also be given inside ``filters``
        (``filters={"user_id": "alice"}``, as in mem0 2.x). ``mode`` is "hybrid"
        (default where the store has keyword search), "vector" or "keyword";
        ``threshold`` drops results scoring below it. Only memories valid now
        are searched; ``as_of`` searches what was valid then (past versions
        included), ``include_expired`` keeps expired ones. With decay on (config
        ``lifecycle.decay``) the score is relevance x confidence; ``min_confidence``
        drops memories whose confidence is below it. ``graph`` (default: on
        when a graph store is configured): the entities the query names expand
        ``graph_store.search_depth`` hops, memories linked to them join the
        ranking, and ``relations`` carries the relations found. ``scopes`` (instead of
        ``user_id``/``agent_id``/``run_id``) searches several scopes at once, e.g.
        ``scopes=[{"user_id": "alice"}, {"agent_id": "shared"}]``; never without it.
        ``offset`` skips that many results of the query's order: keep ``limit`` and step
        ``offset`` by it to read page after page, none twice, none skipped (see
        ``docs/pipeline.md``, "Paging").
        """
        return self._runtime.run(_search(
            self, query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit,
            filters=filters, threshold=threshold, mode=mode, top_k=top_k, as_of=as_of,
            include_expired=include_expired, min_confidence=min_confidence, graph=graph,
            scopes=scopes, offset=offset))

    def get(self, memory_id: str) -> MemoryItem | None:
        """The memory with this id if it is valid now, or ``None`` (see :meth:`versions`)."""
        return self._runtime.run(get_flow(memory_id, self._now(), self._lifecycle))

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        surface: str | None = None,
    ) -> SearchResult:
        """The scope's memories (matching ``filters``), newest first; at most ``limit``
        (default 100; ``top_k`` is mem0's name for it). The scope may be given inside
        ``filters`` (``filters={"user_id": "alice"}``). Only memories valid now, or
        ``as_of`` then; ``include_expired`` keeps expired ones. ``surface="startup"`` keeps
        the memories marked so."""
        return self._runtime.run(_get_all(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters, limit=limit,
            top_k=top_k, as_of=as_of, include_expired=include_expired, surface=surface))

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        data: str | None = None,
        expires_at: Timestamp | None = None,
        memory_type: str | None = None,
        importance: float | None = None,
        surface: str | None = None,
    ) -> MemoryItem:
        """Replace a memory's text (re-embedded); ``metadata`` is merged into its metadata.
        ``data=`` is mem0's name for ``text``. The memory keeps its id; the old text
        stays as a past version (see :meth:`versions`), valid until now.
        ``expires_at`` sets a new expiry; ``memory_type`` and ``importance`` set those.
        Without a new text the other fields change in place (no new version).
        ``surface="startup"`` marks the memory for :meth:`startup_context`."""
        return self._runtime.run(_update(self, memory_id, text, metadata=metadata, data=data,
                                         expires_at=expires_at, memory_type=memory_type,
                                         importance=importance, surface=surface))

    def delete(self, memory_id: str, *, hard: bool = False) -> None:
        """End a memory's validity: it is no longer returned, but its text stays for
        ``as_of`` reads and its history stays readable. ``hard=True`` removes it and its
        past versions for good (use it, or :meth:`purge`, for privacy deletes).
        Unknown id: NotFoundError."""
        return self._runtime.run(delete_flow(memory_id, bool(hard), self._now()))

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """Delete every memory of the scope (matching ``filters``; the scope may be given
        inside them); one DELETE event per memory, ``.count`` of them."""
        return self._runtime.run(_delete_all(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    def history(self, memory_id: str) -> HistoryList:
        """Every change to a memory, oldest first (a list that prints as a table)."""
        return self._runtime.run(history_flow(memory_id))

    def versions(self, memory_id: str) -> list[MemoryItem]:
        """The version chain ``memory_id`` belongs to, oldest first: past versions (each
        with its ``valid_from``/``valid_to``) and the current one. Any version's id walks
        the whole chain; ``supersedes`` links each version to the one before it."""
        return self._runtime.run(chain_flow(memory_id))

    def revert(self, event_id: str) -> HistoryRecord:
        """Undo one ADD, UPDATE or DELETE of :meth:`history` (by the event's id) and
        return the event that records the undoing (its ``reverts`` is ``event_id``).

        The memory must still be as that event left it (revert later events
        first); reverting an event twice raises ConflictError.
        """
        return self._runtime.run(revert_flow(event_id, self._now()))

    def supersede(
        self, memory_id: str, text: str, *, metadata: dict[str, Any] | None = None,
        expires_at: Timestamp | None = None,
    ) -> MemoryItem:
        """Replace a memory by a new one (a new id, ``supersedes`` = the old id); the old
        one stays as a past version, valid until now. A version is superseded once: a
        second supersede of it raises ConflictError."""
        return self._runtime.run(supersede_flow(
            memory_id, text, metadata_of(metadata), _expiry(expires_at, None), self._now()))

    def purge(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> int:
        """Remove every record of the scope (matching ``filters``) for good: current
        memories, past versions and deleted ones. Returns how many were removed."""
        return self._runtime.run(_purge(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    def reset(self) -> None:
        """Delete every memory and all history."""
        return self._runtime.run(reset_flow())

    def prune(
        self,
        below: float = 0.05,
        *,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """Forget memories whose confidence (decayed, when decay is on) is below ``below``:
        each ends as :meth:`delete` ends a memory (a DELETE event; still readable with
        ``as_of`` and :meth:`versions`). ``dry_run`` (the default) only reports them. Without
        a scope, every memory of the store is considered."""
        return self._runtime.run(_prune(self, below, dry_run, user_id=user_id,
                                        agent_id=agent_id, run_id=run_id, filters=filters))

    def consolidate(
        self,
        *,
        threshold: float | None = None,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> ConsolidationResult:
        """Merge clusters of near-duplicate memories, scope by scope (every scope of the
        store when none is given): vectors at least ``threshold`` similar (default: config
        ``lifecycle.consolidate_threshold``, 0.9) whose words overlap. Each cluster merges
        into its member of highest confidence, with metadata united; the others end and
        join its version chain (see :meth:`versions`), nothing is removed. ``dry_run`` (the
        default) only reports the clusters."""
        return self._runtime.run(_consolidate(
            self, threshold, dry_run, user_id=user_id, agent_id=agent_id, run_id=run_id,
            filters=filters))

    def stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> MemoryStats:
        """Counts by type and state, growth per day, the confidence histogram and the
        most accessed memories, of the scope (of the whole store when none is given)."""
        return self._runtime.run(_stats(self, user_id=user_id, agent_id=agent_id,
                                        run_id=run_id, filters=filters))

    def feedback(self, memory_id: str, *, useful: bool) -> None:
        """Say whether a memory was useful: ``True`` reinforces it as a search hit does,
        ``False`` takes ``lifecycle.feedback_penalty`` (0.2) off its confidence. Written
        with the buffered accesses (see ``docs/lifecycle.md``)."""
        return self._runtime.run(feedback_flow(memory_id, useful, self._now(), self._lifecycle))

    def search_log(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None, limit: int = 100) -> list[SearchLogEntry]:
        """The newest logged searches of the scope (every scope without one); the log is
        kept only with ``lifecycle.search_log`` on."""
        return self._runtime.run(_search_log(self, user_id, agent_id, run_id, limit))

    def export(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[ExportedMemory]:
        """Every memory (of the scope, when given) with its history, in id order."""
        return self._runtime.run(_export(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    def import_(self, memories: Iterable[ExportedMemory | Mapping[str, Any]]) -> ImportResult:
        """Write exported memories as they are: ids, timestamps and history kept.

        Takes ``export()``'s items or their JSON objects (and mem0's ``get_all``
        items). Texts are embedded as ``add`` embeds them; an id that exists,
        or a text its scope already holds, is skipped.
        """
        return self._runtime.run(import_flow(memories))

    def reembed(self, embedder: Embedder, *, batch_size: int = 256,
                on_progress: Progress | None = None) -> ReembedResult:
        """Give every record (all scopes; past versions and deleted memories too) a vector
        by ``embedder``, then use it from now on.

        The new vectors are built beside the old ones, which keep answering searches
        meanwhile; the store switches to them in one step. Reopening the store then needs
        the new embedder (the old one raises :class:`ConfigError`). ``on_progress(done,
        total)`` is called after each batch of ``batch_size`` texts. A failure leaves the
        store as it was.
        """
        return self._runtime.run(_reembed(self, embedder, batch_size, on_progress))

    # -- notes, tasks, startup ------------------------------------------------------------
    def index_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                     agent_id: str | None = None, run_id: str | None = None,
                     max_file_bytes: int = 100_000) -> IndexResult:
        """Index the markdown files under ``path`` into the scope, one memory per section
        (no LLM), with its ``path``, ``heading``, ``line_start``/``line_end`` and
        ``content_hash`` in metadata. Again: unchanged sections are kept, changed ones
        re-embedded, those of removed (or skipped) files ended. Files over
        ``max_file_bytes`` are skipped and listed in ``IndexResult.skipped``."""
        return self._runtime.run(_index(self, path, max_file_bytes, user_id, agent_id, run_id))

    def watch_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                     agent_id: str | None = None, run_id: str | None = None,
                     max_file_bytes: int = 100_000, debounce_ms: int = 500,
                     on_index: Callable[[IndexResult], Any] | None = None) -> FolderWatch:
        """Index ``path`` (as :meth:`index_folder`), then keep it in sync in a background
        thread: changes grouped over ``debounce_ms`` trigger an index, whose result goes
        to ``on_index``. Needs the ``notes`` extra (watchfiles). Stop it with ``.stop()``."""
        return _watch(self, path, max_file_bytes, debounce_ms, on_index, user_id, agent_id,
                      run_id)

    def update_task(self, memory_id: str, *, status: str) -> MemoryItem:
        """Set a task's status (one of ``TASK_STATUSES``), in place; the change is an UPDATE
        event of its history ("status: open" -> "status: done")."""
        return self._runtime.run(update_task_flow(memory_id, status, self._now()))

    def startup_context(self, *, user_id: str | None = None, agent_id: str | None = None,
                        run_id: str | None = None, budget_tokens: int = 1000) -> StartupContext:
        """A briefing for the start of a session: open tasks (in progress first), memories
        marked ``surface="startup"``, then the most important ones, within
        ``budget_tokens`` (counted as characters / 4), as ``.text`` for a system prompt
        and as ``.items``."""
        return self._runtime.run(_startup(self, budget_tokens, user_id, agent_id, run_id))

    # -- graph (a graph store must be configured) --------------------------------------
    def get_entity(self, name: str, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> GraphEntity | None:
        """The entity ``name`` means in the scope (any spelling, or a name merged into it)."""
        return self._runtime.run(_get_entity(self, name, user_id, agent_id, run_id))

    def get_entities(self, *, type: str | None = None, limit: int = 100,
                     user_id: str | None = None, agent_id: str | None = None,
                     run_id: str | None = None) -> list[GraphEntity]:
        """The scope's entities (of ``type``), by name."""
        return self._runtime.run(_get_entities(self, type, limit, user_id, agent_id, run_id))

    def get_entity_graph(self, name: str | list[str], *, depth: int = 1,
                         user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None) -> EntityGraph:
        """The entities within ``depth`` (0-3) open relations of ``name`` (one name or a
        list), and the open relations among them."""
        return self._runtime.run(_get_entity_graph(self, name, depth, user_id, agent_id, run_id))

    def add_entity(self, name: str, *, type: str | None = None, summary: str | None = None,
                   user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> GraphEntity:
        """Create an entity, or update it: a known ``type`` replaces "unknown", a ``summary``
        the old one."""
        return self._runtime.run(_add_entity(self, name, type, summary, user_id, agent_id,
                                             run_id))

    def add_relation(self, source: str, relation: str, target: str, *,
                     source_type: str | None = None, target_type: str | None = None,
                     user_id: str | None = None, agent_id: str | None = None,
                     run_id: str | None = None) -> GraphRelation:
        """Record ``source -[relation]-> target`` (a known one gains weight); missing entities
        are created, typed when a type is given."""
        return self._runtime.run(_add_relation(self, source, relation, target, source_type,
                                               target_type, user_id, agent_id, run_id))

    def delete_relation(self, source: str, relation: str, target: str, *,
                        user_id: str | None = None, agent_id: str | None = None,
                        run_id: str | None = None) -> int:
        """Delete ``source -[relation]-> target`` (open and closed); how many were deleted."""
        return self._runtime.run(_delete_relation(self, source, relation, target, user_id,
                                                  agent_id, run_id))

    def delete_entity(self, name: str, *, user_id: str | None = None,
                      agent_id: str | None = None, run_id: str | None = None) -> bool:
        """Delete an entity and its relations; the memories stay. False when there was none."""
        return self._runtime.run(_delete_entity(self, name, user_id, agent_id, run_id))

    def close(self) -> None:
        """Write buffered reinforcements, then release the store's, the history's and the
        models' resources."""
        try:
            self._runtime.run(flush_flow(self._lifecycle))
        finally:
            self._runtime.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemory(_Shell):
    """The same memory with every method a coroutine; I/O is natively async where the
    components are (litellm, and the stores with async clients)::

        async with AsyncMemory() as m:
            await m.add("I prefer dark mode", user_id="alice")
    """

    async def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        prompt: str | None = None,
        infer: bool = True,
        timestamp: Timestamp | None = None,
        on_error: OnError | None = None,
        expires_at: Timestamp | None = None,
        expiration_date: Timestamp | None = None,
        dry_run: bool = False,
        memory_type: str | None = None,
        importance: float | None = None,
        surface: str | None = None,
    ) -> AddResult:
        """See :meth:`Memory.add`."""
        return await self._runtime.arun(_add(
            self, messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            filters=filters, prompt=prompt, infer=infer, timestamp=timestamp, on_error=on_error,
            expires_at=expires_at, expiration_date=expiration_date, dry_run=dry_run,
            memory_type=memory_type, importance=importance, surface=surface))

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        min_confidence: float | None = None,
        graph: bool | None = None,
        scopes: Sequence[Mapping[str, str | None]] | None = None,
        offset: int = 0,
    ) -> SearchResult:
        """See :meth:`Memory.search`."""
        return await self._runtime.arun(_search(
            self, query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit,
            filters=filters, threshold=threshold, mode=mode, top_k=top_k, as_of=as_of,
            include_expired=include_expired, min_confidence=min_confidence, graph=graph,
            scopes=scopes, offset=offset))

    async def get(self, memory_id: str) -> MemoryItem | None:
        """See :meth:`Memory.get`."""
        return await self._runtime.arun(get_flow(memory_id, self._now(), self._lifecycle))

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        surface: str | None = None,
    ) -> SearchResult:
        """See :meth:`Memory.get_all`."""
        return await self._runtime.arun(_get_all(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters, limit=limit,
            top_k=top_k, as_of=as_of, include_expired=include_expired, surface=surface))

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        data: str | None = None,
        expires_at: Timestamp | None = None,
        memory_type: str | None = None,
        importance: float | None = None,
        surface: str | None = None,
    ) -> MemoryItem:
        """See :meth:`Memory.update`."""
        return await self._runtime.arun(_update(self, memory_id, text, metadata=metadata,
                                                data=data, expires_at=expires_at,
                                                memory_type=memory_type, importance=importance,
                                                surface=surface))

    async def delete(self, memory_id: str, *, hard: bool = False) -> None:
        """See :meth:`Memory.delete`."""
        return await self._runtime.arun(delete_flow(memory_id, bool(hard), self._now()))

    async def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """See :meth:`Memory.delete_all`."""
        return await self._runtime.arun(_delete_all(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    async def history(self, memory_id: str) -> HistoryList:
        """See :meth:`Memory.history`."""
        return await self._runtime.arun(history_flow(memory_id))

    async def versions(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`Memory.versions`."""
        return await self._runtime.arun(chain_flow(memory_id))

    async def revert(self, event_id: str) -> HistoryRecord:
        """See :meth:`Memory.revert`."""
        return await self._runtime.arun(revert_flow(event_id, self._now()))

    async def supersede(
        self, memory_id: str, text: str, *, metadata: dict[str, Any] | None = None,
        expires_at: Timestamp | None = None,
    ) -> MemoryItem:
        """See :meth:`Memory.supersede`."""
        return await self._runtime.arun(supersede_flow(
            memory_id, text, metadata_of(metadata), _expiry(expires_at, None), self._now()))

    async def purge(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> int:
        """See :meth:`Memory.purge`."""
        return await self._runtime.arun(_purge(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    async def reset(self) -> None:
        """See :meth:`Memory.reset`."""
        return await self._runtime.arun(reset_flow())

    async def prune(
        self,
        below: float = 0.05,
        *,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """See :meth:`Memory.prune`."""
        return await self._runtime.arun(_prune(self, below, dry_run, user_id=user_id,
                                               agent_id=agent_id, run_id=run_id, filters=filters))

    async def consolidate(
        self,
        *,
        threshold: float | None = None,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> ConsolidationResult:
        """See :meth:`Memory.consolidate`."""
        return await self._runtime.arun(_consolidate(
            self, threshold, dry_run, user_id=user_id, agent_id=agent_id, run_id=run_id,
            filters=filters))

    async def stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> MemoryStats:
        """See :meth:`Memory.stats`."""
        return await self._runtime.arun(_stats(self, user_id=user_id, agent_id=agent_id,
                                               run_id=run_id, filters=filters))

    async def feedback(self, memory_id: str, *, useful: bool) -> None:
        """See :meth:`Memory.feedback`."""
        return await self._runtime.arun(feedback_flow(memory_id, useful, self._now(),
                                                      self._lifecycle))

    async def search_log(self, *, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None, limit: int = 100) -> list[SearchLogEntry]:
        """See :meth:`Memory.search_log`."""
        return await self._runtime.arun(_search_log(self, user_id, agent_id, run_id, limit))

    async def export(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[ExportedMemory]:
        """See :meth:`Memory.export`."""
        return await self._runtime.arun(_export(
            self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    async def import_(
        self, memories: Iterable[ExportedMemory | Mapping[str, Any]]
    ) -> ImportResult:
        """See :meth:`Memory.import_`."""
        return await self._runtime.arun(import_flow(memories))

    # -- notes, tasks, startup ------------------------------------------------------------
    async def index_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                           agent_id: str | None = None, run_id: str | None = None,
                           max_file_bytes: int = 100_000) -> IndexResult:
        """See :meth:`Memory.index_folder`."""
        return await self._runtime.arun(_index(self, path, max_file_bytes, user_id, agent_id,
                                               run_id))

    async def watch_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                           agent_id: str | None = None, run_id: str | None = None,
                           max_file_bytes: int = 100_000, debounce_ms: int = 500,
                           on_index: Callable[[IndexResult], Any] | None = None) -> FolderWatch:
        """See :meth:`Memory.watch_folder`; the watch thread indexes with blocking calls
        (``on_index`` is called in that thread)."""
        return await asyncio.to_thread(_watch, self, path, max_file_bytes, debounce_ms,
                                       on_index, user_id, agent_id, run_id)

    async def update_task(self, memory_id: str, *, status: str) -> MemoryItem:
        """See :meth:`Memory.update_task`."""
        return await self._runtime.arun(update_task_flow(memory_id, status, self._now()))

    async def startup_context(self, *, user_id: str | None = None, agent_id: str | None = None,
                              run_id: str | None = None,
                              budget_tokens: int = 1000) -> StartupContext:
        """See :meth:`Memory.startup_context`."""
        return await self._runtime.arun(_startup(self, budget_tokens, user_id, agent_id,
                                                 run_id))

    # -- graph ---------------------------------------------------------------------------
    async def reembed(self, embedder: Embedder, *, batch_size: int = 256,
                      on_progress: Progress | None = None) -> ReembedResult:
        """See :meth:`Memory.reembed`."""
        return await self._runtime.arun(_reembed(self, embedder, batch_size, on_progress))

    async def get_entity(self, name: str, *, user_id: str | None = None,
                         agent_id: str | None = None, run_id: str | None = None,
                         ) -> GraphEntity | None:
        """See :meth:`Memory.get_entity`."""
        return await self._runtime.arun(_get_entity(self, name, user_id, agent_id, run_id))

    async def get_entities(self, *, type: str | None = None, limit: int = 100,
                           user_id: str | None = None, agent_id: str | None = None,
                           run_id: str | None = None) -> list[GraphEntity]:
        """See :meth:`Memory.get_entities`."""
        return await self._runtime.arun(_get_entities(self, type, limit, user_id, agent_id,
                                                      run_id))

    async def get_entity_graph(self, name: str | list[str], *, depth: int = 1,
                               user_id: str | None = None, agent_id: str | None = None,
                               run_id: str | None = None) -> EntityGraph:
        """See :meth:`Memory.get_entity_graph`."""
        return await self._runtime.arun(_get_entity_graph(self, name, depth, user_id, agent_id,
                                                          run_id))

    async def add_entity(self, name: str, *, type: str | None = None,
                         summary: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None, run_id: str | None = None) -> GraphEntity:
        """See :meth:`Memory.add_entity`."""
        return await self._runtime.arun(_add_entity(self, name, type, summary, user_id,
                                                    agent_id, run_id))

    async def add_relation(self, source: str, relation: str, target: str, *,
                           source_type: str | None = None, target_type: str | None = None,
                           user_id: str | None = None, agent_id: str | None = None,
                           run_id: str | None = None) -> GraphRelation:
        """See :meth:`Memory.add_relation`."""
        return await self._runtime.arun(_add_relation(self, source, relation, target,
                                                      source_type, target_type, user_id,
                                                      agent_id, run_id))

    async def delete_relation(self, source: str, relation: str, target: str, *,
                              user_id: str | None = None, agent_id: str | None = None,
                              run_id: str | None = None) -> int:
        """See :meth:`Memory.delete_relation`."""
        return await self._runtime.arun(_delete_relation(self, source, relation, target,
                                                         user_id, agent_id, run_id))

    async def delete_entity(self, name: str, *, user_id: str | None = None,
                            agent_id: str | None = None, run_id: str | None = None) -> bool:
        """See :meth:`Memory.delete_entity`."""
        return await self._runtime.arun(_delete_entity(self, name, user_id, agent_id, run_id))

    async def aclose(self) -> None:
        """Write buffered reinforcements, then release resources, closing async clients on
        this event loop."""
        try:
            await self._runtime.arun(flush_flow(self._lifecycle))
        finally:
            await self._runtime.aclose()

    def close(self) -> None:
        """Release resources from synchronous code (async clients are dropped, not awaited);
        buffered reinforcements are written first, with blocking calls."""
        try:
            self._runtime.run(flush_flow(self._lifecycle))
        finally:
            self._runtime.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
