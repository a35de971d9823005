"""What ``Memory`` and ``AsyncMemory`` share: building the components from the config
(with the stores' declared colocation hooks) and the settings the request builders read."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from functools import partial
from os import PathLike, fspath
from typing import Any, Self

from memkit._config import (
    GraphStoreConfig,
    MemoryConfig,
    RerankerConfig,
    default_llm_config,
    load_config,
)
from memkit._errors import ConfigError
from memkit._hints import check_options, did_you_mean, keyword_parameters, unknown_provider
from memkit._imports import load_object
from memkit._notes.models import IndexResult
from memkit._notes.watch import FolderWatch
from memkit._pipeline import requests
from memkit._pipeline.effects import Flow
from memkit._pipeline.features.graph import GraphSettings
from memkit._pipeline.features.lifecycle import Lifecycle, LifecycleState, flush_flow
from memkit._pipeline.features.notes import NOTE_FILES
from memkit._pipeline.requests import Settings
from memkit._pipeline.runtime import Runtime
from memkit._pipeline.search.flow import SearchSettings
from memkit._pipeline.search.rerank import rerank_handlers
from memkit._time import utcnow
from memkit.embeddings import PROVIDERS as EMBEDDERS
from memkit.embeddings.base import Embedder
from memkit.graph import PROVIDERS as GRAPHS
from memkit.graph.base import GraphStore
from memkit.history import PROVIDERS as HISTORIES
from memkit.history.base import HistoryStore
from memkit.llms import PROVIDERS as LLMS
from memkit.llms.base import LLM
from memkit.rerankers import PROVIDERS as RERANKERS
from memkit.rerankers.base import Reranker
from memkit.stores import PROVIDERS as STORES
from memkit.stores.base import VectorStore


def _build(kind: str, registry: dict[str, str], provider: str, options: dict[str, Any]) -> Any:
    if provider not in registry:
        raise ConfigError(unknown_provider(kind, provider, registry))
    cls = load_object(registry[provider])
    check_options(f"{kind.replace(' ', '_')}.config ({provider})", cls, options)
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"invalid {kind} config for {provider!r}: {exc}") from exc


def _default_reranker(cfg: RerankerConfig, llm: LLM) -> Reranker:
    """The configured reranker; the LLM reranker without a model uses the memory's LLM."""
    options = dict(cfg.config)
    if cfg.provider == "llm" and "model" not in options:
        options["llm"] = llm
    return _build("reranker", RERANKERS, cfg.provider, options)  # type: ignore[no-any-return]


class Client:
    """Construction and components, shared by Memory and AsyncMemory."""

    config: MemoryConfig
    _runtime: Runtime

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Refuse an unknown argument in the user's terms: ``Memory()``, not this base class,
        with the closest valid name (``vectorstore`` -> ``vector_store``)."""
        valid = keyword_parameters(Client.__init__) or frozenset()
        for key in kwargs:
            if key not in valid:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}"
                                f"{did_you_mean(key, valid) or ';'} it takes "
                                f"{', '.join(sorted(valid - {'self'}))}")
        return super().__new__(cls)

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
        reranker: Reranker | None = None,
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
        life = cfg.lifecycle
        #: accesses and add counts: the lifecycle feature's state
        self._state = LifecycleState(life.flush_every)
        if reranker is None and cfg.reranker is not None:
            reranker = _default_reranker(cfg.reranker, llm)
        #: what search(rerank=True) reorders with (closed with the client)
        self._reranker = reranker
        self._runtime = Runtime(llm, embedder, vector_store, history, graph_store, handlers={
            **self._state.handlers(), **NOTE_FILES, **rerank_handlers(reranker)})
        graph_cfg = cfg.graph_store or GraphStoreConfig()
        self._settings = Settings(
            config=cfg, clock=clock or utcnow,
            lifecycle=Lifecycle(
                decay=life.decay, half_lives={**Lifecycle().half_lives, **life.half_life_days},
                default_half_life=life.default_half_life_days,
                reinforce=life.decay if life.reinforce is None else life.reinforce,
                step=life.reinforcement, penalty=life.feedback_penalty),
            search=SearchSettings(**cfg.search.model_dump()),
            graph=None if graph_store is None else GraphSettings(
                graph_store.joins(vector_store), graph_cfg.entity_threshold),
            graph_depth=graph_cfg.search_depth,
            keyword_search=vector_store.supports_keyword,
            rerank_candidates=(cfg.reranker or RerankerConfig()).candidates,
        )
        self._runtime.on_open = partial(requests.repair, self._settings)

    @staticmethod
    def _default_history(cfg: MemoryConfig, store: VectorStore) -> HistoryStore:
        options = dict(cfg.history.config)
        path = cfg.history.db_path or options.get("db_path")
        if cfg.history.provider == "sqlite":
            shared = store.colocated_history()
            if shared is not None and (path is None or _same_file(path, shared)):
                return shared  # in the store's file and transactions
        if cfg.history.provider == "sqlite":
            options.setdefault("db_path", cfg.history.db_path or store.default_history_path)
        return _build("history", HISTORIES, cfg.history.provider, options)  # type: ignore[no-any-return]

    @staticmethod
    def _default_graph(cfg: MemoryConfig, store: VectorStore) -> GraphStore:
        assert cfg.graph_store is not None
        provider, options = cfg.graph_store.provider, cfg.graph_store.config
        if provider == "sqlite":
            shared = store.colocated_graph()
            if shared is not None and ("path" not in options
                                       or _same_file(options["path"], shared)):
                return shared
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

    @property
    def history_store(self) -> HistoryStore:
        return self._runtime.history

    def _watch(self, path: str | PathLike[str], max_file_bytes: int, debounce_ms: int,
               on_index: Callable[[IndexResult], Any] | None, user_id: str | None,
               agent_id: str | None, run_id: str | None) -> FolderWatch:
        """The watch runs the index with blocking calls in its thread, for either shell."""
        self._runtime.refuse_closed()
        requests.index(self._settings, path, max_file_bytes, user_id, agent_id, run_id).close()  # arguments checked now

        def index() -> IndexResult:
            return self._runtime.run(requests.index(self._settings, path, max_file_bytes, user_id, agent_id, run_id))

        return FolderWatch(fspath(path), index, debounce_ms=debounce_ms, on_index=on_index).start()

    def _repair(self) -> Flow[int]:
        """The replay of owed graph work that ``repair()`` runs; as the first operation it is
        the replay a new client does when it opens, so that one is not run (and this one
        counts the work)."""
        self._runtime.on_open = None
        return requests.repair(self._settings)

    def close(self) -> None:
        """Write buffered reinforcements, then release the store's, the history's and the
        models' resources (from synchronous code: async clients are dropped, not awaited).
        Closing again does nothing; any other call then raises :class:`ClosedError`."""
        if self._runtime.closed:
            return
        try:
            self._runtime.run(flush_flow(self._settings.lifecycle))
        finally:
            self._runtime.close()
            if self._reranker is not None:
                self._reranker.close()


def _same_file(path: object, part: object) -> bool:
    """Whether ``path`` names the SQLite file ``part`` (a colocated history or graph) lives
    in: it then joins the store's connection, as it does by default (a second connection
    would wait for the store's own transaction and fail as "database is locked")."""
    own = getattr(part, "path", None)
    if not isinstance(path, str) or not isinstance(own, str) or ":memory:" in (path, own):
        return False
    return os.path.realpath(os.path.expanduser(path)) == os.path.realpath(own)
