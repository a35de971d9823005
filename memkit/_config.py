"""Configuration: every part is ``{provider, config}``; components passed in override it."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memkit._errors import ConfigError
from memkit._hints import unknown_key
from memkit._mem0_config import translate


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if isinstance(value, dict):
            valid = set(cls.model_fields)
            for key in value:
                if key not in valid:
                    raise ValueError(unknown_key(_where(cls), str(key), valid))
        return value


class LLMConfig(_Section):
    """``provider="litellm"``; ``config``: model (any litellm model string), api_key,
    api_base, temperature, max_tokens, and other litellm keyword arguments."""

    provider: str = "litellm"
    config: dict[str, Any] = Field(default_factory=dict)


class EmbedderConfig(_Section):
    """``provider="local"`` (offline all-MiniLM-L6-v2), ``"e5"`` (offline
    multilingual-e5-small, ``memkit-ai[e5]``) or ``"litellm"``."""

    provider: str = "local"
    config: dict[str, Any] = Field(default_factory=dict)


class VectorStoreConfig(_Section):
    """``provider``: sqlite (default), memory, qdrant, chroma, pgvector, milvus, lancedb, faiss or redis
    (``memkit.stores.PROVIDERS``)."""

    provider: str = "sqlite"
    config: dict[str, Any] = Field(default_factory=dict)


class HistoryConfig(_Section):
    """Where history is kept when the vector store is not sqlite (sqlite keeps it in its file)."""

    provider: str = "sqlite"
    db_path: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class GraphStoreConfig(_Section):
    """``provider``: sqlite (with a sqlite vector store and no ``path``: in its file, in the
    same transactions), postgres (with pgvector on the same DSN: in its transactions) or
    neo4j; ``config``: the graph store's arguments. ``search_depth``: hops
    ``search(graph=True)`` walks from the entities a query names; ``entity_threshold``:
    the name-embedding cosine at which a new name merges into an existing entity."""

    provider: str = "sqlite"
    config: dict[str, Any] = Field(default_factory=dict)
    search_depth: int = Field(default=2, ge=1, le=3)
    entity_threshold: float = Field(default=0.85, gt=0, le=1)


class CustomPrompts(_Section):
    fact_extraction: str | None = None
    update_decision: str | None = None


class SearchConfig(_Section):
    mode: Literal["hybrid", "vector", "keyword"] | None = None
    # The defaults were chosen by leaving one LoCoMo dev conversation out (bench/loo.py,
    # docs/benchmarks.md).
    vector_weight: float = Field(default=0.5, ge=0)
    keyword_weight: float = Field(default=0.5, ge=0)
    candidates: int = Field(default=100, ge=1)
    keyword_exponent: float = Field(default=1.5, gt=0)
    """Above 1, weak keyword matches lift a memory less than the best ones (docs/pipeline.md)."""
    temporal_weight: float = Field(default=0.4, ge=0, le=1)
    """How much a query asking *when* raises memories that say when, and a query naming
    a day or month raises the memories of that period (docs/pipeline.md)."""
    common_word_share: float = Field(default=0.35, gt=0, le=1)
    """Hybrid search skips query words found in more than this share of its vector
    candidates (1 keeps every word; docs/pipeline.md)."""
    context_share: float = Field(default=0.2, ge=0, le=1)
    """Hybrid search lends a dialogue turn this share of the keyword scores of the turns
    near it (0: none; docs/pipeline.md)."""
    context_turns: int = Field(default=3, ge=1, le=10)
    """How many turns before and after a dialogue turn lend it their keyword scores."""
    question_penalty: float = Field(default=0.02, ge=0, le=1)
    """Vector and hybrid search lower a memory that ends in a question mark by this much:
    it asks for what the turns after it tell (0: none; docs/pipeline.md)."""


class RerankerConfig(_Section):
    """``provider``: "litellm" (any reranker ``litellm.rerank`` serves: Cohere, Jina,
    Voyage, ...; ``config.model`` such as ``"cohere/rerank-english-v3.0"``), "llm" (one
    listwise LLM call; ``config.model``, else the memory's LLM) or "onnx" (a local
    cross-encoder; ``config.path``: a folder with ``model.onnx`` and ``tokenizer.json``).
    ``candidates``: how many search results ``search(rerank=True)`` reorders."""

    provider: str = "litellm"
    config: dict[str, Any] = Field(default_factory=dict)
    candidates: int = Field(default=20, ge=1, le=1000)


class LifecycleConfig(_Section):
    """Confidence decay and reinforcement (``docs/lifecycle.md``)."""

    decay: bool = False
    """Decay confidence over time; search scores become relevance x confidence."""
    half_life_days: dict[str, float | None] = Field(default_factory=dict)
    """Half-lives per memory type, over the built-in ones; ``None``: never decays."""
    default_half_life_days: float | None = Field(default=30.0, gt=0)
    """For memories without a type, or of a type not in ``half_life_days``."""
    reinforce: bool | None = None
    """Search hits and reads (``get``) raise confidence and count accesses (default: when decay is on)."""
    reinforcement: float = Field(default=0.1, ge=0, le=1)
    flush_every: int = Field(default=64, ge=1)
    """Accessed memories buffered before their reinforcement is written in one go."""
    consolidate_threshold: float = Field(default=0.9, gt=0, le=1)
    """Cosine similarity from which two memories are near-duplicates (``consolidate``)."""
    consolidate_every: int | None = Field(default=None, ge=1)
    """Consolidate a scope after every this many memories added to it (off by default)."""
    feedback_penalty: float = Field(default=0.2, ge=0, le=1)
    """Confidence taken off by ``feedback(memory_id, useful=False)``."""
    search_log: bool = False
    """Log each search (query hash, k, result ids, latency) beside the history."""
    search_log_text: bool = False
    """Keep the query text in the search log too (otherwise only its SHA-256)."""

    @field_validator("half_life_days")
    @classmethod
    def _positive(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        for name, days in value.items():
            if days is not None and not days > 0:
                raise ValueError(f"half-life of {name!r} must be positive days or None")
        return value


class MemoryConfig(_Section):
    """All of memkit's configuration; every field has an offline default.

    A mem0 config dict (1.0.x or 2.x keys and provider names) is accepted too and
    translated; see ``docs/migrating-from-mem0.md``."""

    llm: LLMConfig = Field(default_factory=LLMConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    vector_store: VectorStoreConfig = Field(default_factory=VectorStoreConfig)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    custom_prompts: CustomPrompts = Field(default_factory=CustomPrompts)
    search: SearchConfig = Field(default_factory=SearchConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
    candidates_per_fact: int = Field(default=5, ge=1, le=50)
    dedup_threshold: float | None = Field(default=None, gt=0, le=1)
    """Cosine similarity from which a new memory is a near-duplicate of one its scope holds:
    it is not added, and the add reports the existing memory as NONE (off when None)."""
    add_mode: Literal["two_calls", "one_call"] = "two_calls"
    """How ``add`` with inference asks the LLM: "two_calls" (the default) extracts the facts,
    then decides against the memories they find; "one_call" shows the memories the
    conversation's own messages find and extracts and decides in one answer (fewer tokens
    and one round trip; docs/pipeline.md)."""
    graph_store: GraphStoreConfig | None = None
    """Graph memory: entities and relations beside the memories (off when None)."""
    reranker: RerankerConfig | None = None
    """What ``search(rerank=True)`` reorders the results with (none when None)."""
    on_error: Literal["raise", "degrade"] = "raise"
    """What ``add`` does when the LLM or the embedder fails: raise (the default), or
    "degrade": return what could be done, with every failure in ``AddResult.errors``."""

    daily_log_dir: str | None = None
    """A folder where each ``add`` appends what it remembered to ``YYYY-MM-DD.md`` (off when
    None; indexed notes are not logged)."""

    @model_validator(mode="before")
    @classmethod
    def _from_mem0(cls, value: Any) -> Any:
        return translate(value) if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _one_prompt_in_one_call(self) -> MemoryConfig:
        prompts = self.custom_prompts
        if self.add_mode == "one_call" and (prompts.fact_extraction or prompts.update_decision):
            raise ValueError("custom_prompts replace the prompts of the two-call add; "
                             "add_mode 'one_call' has one prompt of its own: drop one of them")
        return self

    @field_validator("llm", "embedder", "vector_store", "graph_store", "reranker", mode="before")
    @classmethod
    def _provider_string(cls, value: Any) -> Any:
        return {"provider": value} if isinstance(value, str) else value


_SECTION_NAMES = {"LLMConfig": "llm", "EmbedderConfig": "embedder", "VectorStoreConfig": "vector_store",
                  "HistoryConfig": "history", "GraphStoreConfig": "graph_store",
                  "CustomPrompts": "custom_prompts", "SearchConfig": "search",
                  "LifecycleConfig": "lifecycle", "MemoryConfig": "the config"}


def _where(cls: type[BaseModel]) -> str:
    return _SECTION_NAMES.get(cls.__name__, cls.__name__)


def load_config(config: MemoryConfig | dict[str, Any] | None) -> MemoryConfig:
    """``config`` validated; a mistake is a :class:`ConfigError` that names the key and the fix."""
    if isinstance(config, MemoryConfig):
        return config
    try:
        return MemoryConfig.model_validate(config or {})
    except ValidationError as exc:
        raise ConfigError(_config_message(exc)) from None


def _config_message(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "config"
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(message if message.startswith("unknown key") else f"{where}: {message}")
    return "invalid config: " + "; ".join(lines)


def default_llm_config() -> dict[str, Any]:
    """The litellm model: ``MEMKIT_LLM_MODEL`` or gpt-4o-mini."""
    return {"model": os.environ.get("MEMKIT_LLM_MODEL", "gpt-4o-mini")}
