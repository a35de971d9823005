"""Request builders: a public method's arguments, checked and turned into the flow that
runs it. ``Memory`` and ``AsyncMemory`` call the same builder and run its flow with their
own driver, so an argument is checked once, here."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from os import PathLike, fspath
from typing import Any, Unpack

from memkit._config import MemoryConfig
from memkit._errors import ConfigError, InvalidArgument, MemkitError, ScopeError
from memkit._filters import Condition, Filter, all_of, parse_filter
from memkit._models import (
    AddResult,
    Change,
    ConsolidationResult,
    DeleteResult,
    EntityGraph,
    ExportedMemory,
    GraphEntity,
    GraphRelation,
    MemoryItem,
    MemoryStats,
    ReembedResult,
    SearchLogEntry,
    SearchResult,
)
from memkit._notes.models import IndexResult, StartupContext
from memkit._pipeline.add.flow import AddRequest, add_flow
from memkit._pipeline.effects import Flow
from memkit._pipeline.features.consolidate import auto_flow, consolidate_flow
from memkit._pipeline.features.entities import entity_flow, entity_ref_of, entity_refs_of
from memkit._pipeline.features.feedback import logged_search_flow, search_log_flow
from memkit._pipeline.features.forget import prune_flow, purge_flow
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
from memkit._pipeline.features.graph_writes import repair_flow
from memkit._pipeline.features.lifecycle import Lifecycle, lifecycle_fields
from memkit._pipeline.features.notes import daily_log_flow, index_flow, max_file_bytes_of
from memkit._pipeline.features.reembed import Progress, reembed_flow
from memkit._pipeline.features.startup import budget_of, startup_flow
from memkit._pipeline.features.stats import stats_flow
from memkit._pipeline.features.task_fields import surface_of, with_surface, with_task_status
from memkit._pipeline.features.transfer import export_flow
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
    changes_flow,
    delete_all_flow,
    get_all_flow,
    supersede_flow,
    update_flow,
)
from memkit._pipeline.options import (
    AddOptions,
    GetAllOptions,
    PurgeOptions,
    ScopeOptions,
    SearchOptions,
    Timestamp,
    UpdateOptions,
)
from memkit._pipeline.search.flow import SearchSettings, search_flow
from memkit._pipeline.search.paging import offset_of, paged_flow
from memkit._pipeline.search.rerank import reranked_flow
from memkit._pipeline.search.scopes import any_scope, scopes_of
from memkit._pipeline.write.versions import valid_at
from memkit._time import to_iso
from memkit.embeddings.base import Embedder
from memkit.graph.base import GraphScope
from memkit.stores.base import Vector


@dataclass(frozen=True, slots=True)
class Settings:
    """What the builders read of a client: its config and the settings built from it
    (memkit._client)."""

    config: MemoryConfig
    #: what "now" is (a test passes a clock it moves)
    clock: Callable[[], datetime]
    lifecycle: Lifecycle
    search: SearchSettings
    #: with a graph store: how an add writes to it
    graph: GraphSettings | None
    graph_depth: int
    #: whether the vector store has keyword search
    keyword_search: bool
    #: how many results search(rerank=True) hands the reranker
    rerank_candidates: int = 20

    def now(self) -> str:
        return to_iso(self.clock())


def _when(s: Settings, value: Timestamp | None) -> str:
    return timestamp_of(value if value is not None else s.clock())


def _expiry(expires_at: Timestamp | None, expiration_date: Timestamp | None) -> str | None:
    """``expires_at``, or mem0's name for it."""
    if expires_at is not None and expiration_date is not None:
        raise MemkitError("give expires_at or expiration_date (its mem0 name), not both")
    chosen = expires_at if expires_at is not None else expiration_date
    return None if chosen is None else timestamp_of(chosen)


def _valid(s: Settings, as_of: Timestamp | None, include_expired: bool) -> Filter:
    return valid_at(_when(s, as_of), include_expired=bool(include_expired))


def add(s: Settings, messages: str | dict[str, Any] | list[dict[str, Any]], /,
        **o: Unpack[AddOptions]) -> Flow[AddResult]:
    prompts = s.config.custom_prompts
    one_call = s.config.add_mode == "one_call"
    if o.get("prompt") is not None and one_call:
        raise InvalidArgument("prompt= replaces the extraction prompt of the two-call add; "
                              "this memory's add_mode is 'one_call', which has one prompt of "
                              "its own")
    lifecycle = lifecycle_fields(o.get("memory_type"), o.get("importance"), o.get("confidence"))
    named = entity_refs_of(o.get("entities"))
    if named and s.graph is None:
        raise ConfigError("entities= links memories to graph entities: configure a graph store "
                          "(graph_store=...)")
    timestamp, on_error = o.get("timestamp"), o.get("on_error")
    request = AddRequest(
        messages=messages_of(messages),
        scope=Scope.of(o.get("user_id"), o.get("agent_id"), o.get("run_id")),
        metadata=with_task_status(with_surface(metadata_of(o.get("metadata")), o.get("surface")),
                                  lifecycle.get("memory_type")),
        filters=parse_filter(o.get("filters")),
        prompt=None if (prompt := o.get("prompt")) is None else text_of(prompt, "prompt"),
        infer=bool(o.get("infer", True)),
        timestamp=timestamp_of(timestamp if timestamp is not None else s.clock()),
        extraction_prompt=prompts.fact_extraction,
        decision_prompt=prompts.update_decision,
        candidates_per_fact=s.config.candidates_per_fact,
        on_error=on_error_of(on_error if on_error is not None else s.config.on_error),
        expires_at=_expiry(o.get("expires_at"), o.get("expiration_date")),
        dry_run=bool(o.get("dry_run", False)),
        lifecycle=lifecycle,
        graph=s.graph,
        entities=named,
        dedup_threshold=s.config.dedup_threshold,
        one_call=one_call,
    )
    life = s.config.lifecycle
    flow = add_flow(request)
    if life.consolidate_every is not None and not request.dry_run:
        flow = auto_flow(flow, request.scope.filter(), life.consolidate_every,
                         life.consolidate_threshold, s.now(), s.lifecycle, s.graph)
    if s.config.daily_log_dir is not None and not request.dry_run:
        flow = daily_log_flow(flow, s.config.daily_log_dir, s.now())
    return flow


def search(s: Settings, query: str, /, **o: Unpack[SearchOptions]) -> Flow[SearchResult]:
    user_id, agent_id, run_id, filters = (o.get("user_id"), o.get("agent_id"), o.get("run_id"),
                                          o.get("filters"))
    graph, entity, scopes, rerank = (o.get("graph"), o.get("entity"), o.get("scopes"),
                                     bool(o.get("rerank", False)))
    threshold, mode, min_confidence = o.get("threshold"), o.get("mode"), o.get("min_confidence")
    as_of = o.get("as_of")
    if scopes is None:
        scope, rest = scope_and_filters(user_id, agent_id, run_id, filters)
        where = scope.filter()
    else:  # several scopes, named on purpose; the graph is walked within one scope only
        if graph:
            raise MemkitError("graph search runs in one scope; it cannot be used with scopes=")
        if entity is not None:
            raise InvalidArgument("entity= narrows to one scope's entity; it cannot be used "
                                  "with scopes=")
        scope, rest, graph = Scope(), filters, False
        where = any_scope(scopes_of(scopes, user_id, agent_id, run_id))
    selection = all_of(where, parse_filter(rest), _valid(s, as_of, o.get("include_expired", False)))
    limit = limit_or_top_k(o.get("limit"), o.get("top_k"), 100)
    page = offset_of(o.get("offset", 0))
    now = s.now()
    graphed = graph is not False and (graph is not None or s.graph is not None)
    graph_scope = _graph_scope(s, scope.user_id, scope.agent_id, scope.run_id)[1] \
        if graphed or entity is not None else None

    def searched(selection: Filter | None) -> Flow[SearchResult]:
        def ranked(window: int, vector: Vector | None, life: Lifecycle) -> Flow[SearchResult]:
            pool = max(window, s.rerank_candidates) if rerank else window
            search = partial(search_flow, query, selection, pool, threshold, mode,
                             s.search, s.keyword_search, life,
                             now, min_confidence)
            if graph_scope is None or not graphed:
                flow = search(vector=vector)
            else:
                flow = graph_search_flow(lambda given: search(vector=given), query, graph_scope,
                                         selection, s.graph_depth, pool, vector)
            return reranked_flow(flow, query, window) if rerank else flow

        keyword_only = (mode or s.search.mode) == "keyword" and not graphed
        return paged_flow(ranked, query, page, limit, s.lifecycle, now, embed=not keyword_only)

    flow = searched(selection) if entity is None or graph_scope is None else entity_flow(
        graph_scope, entity_ref_of(entity), selection, as_of is not None, searched)
    life = s.config.lifecycle
    if not life.search_log:
        return flow
    return logged_search_flow(flow, query, limit, scope, now, life.search_log_text)


def _scope(o: ScopeOptions, *, required: bool = True) -> tuple[Scope, dict[str, Any] | None]:
    return scope_and_filters(o.get("user_id"), o.get("agent_id"), o.get("run_id"),
                             o.get("filters"), required=required)


def _graph_scope(s: Settings, user_id: str | None, agent_id: str | None,
                 run_id: str | None) -> tuple[str, GraphScope]:
    """The lock key and the scope of a graph operation; a graph store must be configured."""
    if s.graph is None:
        raise ConfigError("no graph store is configured: pass graph_store= or set "
                          "graph_store in the config")
    scope = Scope.of(user_id, agent_id, run_id)
    selection = scope.filter()
    key = "" if selection is None else selection.model_dump_json()
    return key, GraphScope(scope.user_id, scope.agent_id, scope.run_id)


def get_all(s: Settings, /, **o: Unpack[GetAllOptions]) -> Flow[SearchResult]:
    scope, rest = _scope(o)
    surface, as_of, entity = o.get("surface"), o.get("as_of"), o.get("entity")
    surfaced = None if surface is None else Condition(field="surface", operator="eq",
                                                      value=surface_of(surface))
    selection = all_of(scope.filter(), parse_filter(rest), surfaced,
                       _valid(s, as_of, o.get("include_expired", False)))
    listed = partial(get_all_flow, limit=limit_or_top_k(o.get("limit"), o.get("top_k"), 100),
                     lifecycle=s.lifecycle, now=s.now(),
                     offset=offset_of(o.get("offset", 0), 1_000_000))
    if entity is None:
        return listed(selection)
    graph_scope = _graph_scope(s, scope.user_id, scope.agent_id, scope.run_id)[1]
    return entity_flow(graph_scope, entity_ref_of(entity), selection, as_of is not None, listed)


def update(s: Settings, memory_id: str, text: str | None = None, /,
           **o: Unpack[UpdateOptions]) -> Flow[MemoryItem]:
    data, metadata, expires_at, surface = (o.get("data"), o.get("metadata"), o.get("expires_at"),
                                           o.get("surface"))
    if text is not None and data is not None:
        raise MemkitError("update() takes the new text once: as text or as data=")
    lifecycle = lifecycle_fields(o.get("memory_type"), o.get("importance"), o.get("confidence"))
    new_text = text if text is not None else None if data is None else str(data)
    if new_text is None and not (lifecycle or metadata or expires_at is not None
                                 or surface is not None):
        raise MemkitError("update() needs a new text, metadata, expires_at, memory_type, "
                          "importance, confidence or surface")
    expected = o.get("if_updated_at")
    return update_flow(memory_id, new_text, with_surface(metadata_of(metadata), surface),
                       _expiry(expires_at, None), s.now(), lifecycle,
                       None if expected is None else timestamp_of(expected))


def delete_all(s: Settings, /, **o: Unpack[ScopeOptions]) -> Flow[DeleteResult]:
    scope, rest = _scope(o)
    if scope.empty:
        raise ScopeError()
    return delete_all_flow(scope, parse_filter(rest), s.now(), s.graph)


def purge(s: Settings, /, **o: Unpack[PurgeOptions]) -> Flow[int]:
    scope, rest = _scope(o)
    if scope.empty:
        raise ScopeError()
    return purge_flow(scope, parse_filter(rest), s.now(), s.graph is not None,
                      actor_of(o.get("actor_id")))


def repair(s: Settings, /) -> Flow[int]:
    """Replay the graph work a graph outage left pending (none without a graph of its own
    transactions: a graph sharing the store's commits with its memories)."""
    if s.graph is None or s.graph.joined:
        return _nothing()
    return repair_flow()


def _nothing() -> Flow[int]:
    return 0
    yield


def actor_of(actor_id: object) -> str | None:
    """Who deleted or purged, as the history keeps it."""
    return None if actor_id is None else text_of(actor_id, "actor_id")[:200]


def export(s: Settings, /, **o: Unpack[ScopeOptions]) -> Flow[list[ExportedMemory]]:
    scope, rest = _scope(o, required=False)
    return export_flow(all_of(scope.filter(), parse_filter(rest)))


def prune(s: Settings, below: float, dry_run: bool, /,
          **o: Unpack[ScopeOptions]) -> Flow[DeleteResult]:
    scope, rest = _scope(o, required=False)
    return prune_flow(all_of(scope.filter(), parse_filter(rest)), below, bool(dry_run),
                      s.now(), s.lifecycle, s.graph)


def consolidate(s: Settings, threshold: float | None, dry_run: bool, /,
                **o: Unpack[ScopeOptions]) -> Flow[ConsolidationResult]:
    scope, rest = _scope(o, required=False)
    chosen = s.config.lifecycle.consolidate_threshold if threshold is None else threshold
    return consolidate_flow(all_of(scope.filter(), parse_filter(rest)), chosen, bool(dry_run),
                            s.now(), s.lifecycle, s.graph)


def stats(s: Settings, /, **o: Unpack[ScopeOptions]) -> Flow[MemoryStats]:
    scope, rest = _scope(o, required=False)
    return stats_flow(all_of(scope.filter(), parse_filter(rest)), s.now(), s.lifecycle,
                      s.graph is not None)


def search_log(s: Settings, user_id: str | None, agent_id: str | None, run_id: str | None,
                limit: int) -> Flow[list[SearchLogEntry]]:
    scope = Scope.of(user_id, agent_id, run_id, required=False)
    return search_log_flow(scope, limit_or_top_k(limit, None, 100))


def changes(after: str | None, user_id: str | None, agent_id: str | None, run_id: str | None,
            limit: int) -> Flow[list[Change]]:
    return changes_flow(after, Scope.of(user_id, agent_id, run_id, required=False),
                        limit_or_top_k(limit, None, 100))


def reembed(s: Settings, current: Embedder, embedder: Embedder, batch_size: int,
            on_progress: Progress | None) -> Flow[ReembedResult]:
    return reembed_flow(current, embedder, batch_size, time.perf_counter,
                        on_progress, graph=s.graph is not None)


# -- notes, tasks, startup ------------------------------------------------------------


def index(s: Settings, path: str | PathLike[str], max_file_bytes: int, user_id: str | None,
           agent_id: str | None, run_id: str | None) -> Flow[IndexResult]:
    return index_flow(fspath(path), Scope.of(user_id, agent_id, run_id),
                      max_file_bytes_of(max_file_bytes), s.now())


def startup(s: Settings, budget_tokens: int, user_id: str | None, agent_id: str | None,
             run_id: str | None) -> Flow[StartupContext]:
    scope = Scope.of(user_id, agent_id, run_id)
    return startup_flow(scope.filter(), budget_of(budget_tokens), s.now(), s.lifecycle)


# -- graph ---------------------------------------------------------------------------


def get_entity(s: Settings, name: str, user_id: str | None, agent_id: str | None,
                run_id: str | None) -> Flow[GraphEntity | None]:
    return get_entity_flow(_graph_scope(s, user_id, agent_id, run_id)[1], name)


def get_entities(s: Settings, type: str | None, limit: int, user_id: str | None,
                  agent_id: str | None, run_id: str | None) -> Flow[list[GraphEntity]]:
    scope = _graph_scope(s, user_id, agent_id, run_id)[1]
    return get_entities_flow(scope, type, limit_or_top_k(limit, None, 100))


def get_entity_graph(s: Settings, name: str | list[str], depth: int, user_id: str | None,
                      agent_id: str | None, run_id: str | None,
                      include_closed: bool = False,
                      include_memories: bool = False) -> Flow[EntityGraph]:
    names = [name] if isinstance(name, str) else list(name)
    return entity_graph_flow(_graph_scope(s, user_id, agent_id, run_id)[1], names, depth,
                             bool(include_closed), s.now() if include_memories else None)


def add_entity(s: Settings, name: str, type: str | None, summary: str | None,
                user_id: str | None, agent_id: str | None,
                run_id: str | None) -> Flow[GraphEntity]:
    key, scope = _graph_scope(s, user_id, agent_id, run_id)
    return add_entity_flow(key, scope, name, type, summary, s.now())


def add_relation(s: Settings, source: str, relation: str, target: str,
                  source_type: str | None, target_type: str | None, user_id: str | None,
                  agent_id: str | None, run_id: str | None) -> Flow[GraphRelation]:
    key, scope = _graph_scope(s, user_id, agent_id, run_id)
    return add_relation_flow(key, scope, source, relation, target, source_type, target_type,
                             s.now())


def delete_relation(s: Settings, source: str, relation: str, target: str,
                     user_id: str | None, agent_id: str | None, run_id: str | None) -> Flow[int]:
    key, scope = _graph_scope(s, user_id, agent_id, run_id)
    return delete_relation_flow(key, scope, source, relation, target, s.now())


def delete_entity(s: Settings, name: str, user_id: str | None, agent_id: str | None,
                   run_id: str | None) -> Flow[bool]:
    key, scope = _graph_scope(s, user_id, agent_id, run_id)
    return delete_entity_flow(key, scope, name, s.now())




def supersede(s: Settings, memory_id: str, text: str, metadata: dict[str, Any] | None,
              expires_at: Timestamp | None) -> Flow[MemoryItem]:
    return supersede_flow(memory_id, text, metadata_of(metadata), _expiry(expires_at, None),
                          s.now(), s.graph)
