"""mem0's config dicts (1.0.x and 2.x) translated into memkit's.

``MemoryConfig`` runs :func:`translate` before validating, so ``Memory.from_config``
takes a mem0 config as it is. Provider names become litellm model strings; each key
is mapped to what does the same thing in memkit, or refused with a ConfigError that
names it. Nothing is accepted and dropped.

    >>> translate({"llm": {"provider": "anthropic", "config": {"model": "claude-3-5-haiku-latest"}}})
    {'llm': {'provider': 'litellm', 'config': {'model': 'anthropic/claude-3-5-haiku-latest'}}}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from memkit._errors import ConfigError

#: mem0 LLM / embedder provider -> litellm model prefix ("" = the model string as it is)
LLM_PREFIXES = {
    "openai": "", "openai_structured": "", "anthropic": "anthropic/", "ollama": "ollama/",
    "azure_openai": "azure/", "azure_openai_structured": "azure/", "groq": "groq/",
    "together": "together_ai/", "gemini": "gemini/", "deepseek": "deepseek/", "xai": "xai/",
    "aws_bedrock": "bedrock/", "lmstudio": "lm_studio/", "vllm": "hosted_vllm/",
}
EMBEDDER_PREFIXES = {
    "openai": "", "ollama": "ollama/", "azure_openai": "azure/", "gemini": "gemini/",
    "together": "together_ai/", "aws_bedrock": "bedrock/", "lmstudio": "lm_studio/",
    "vertexai": "vertex_ai/",
}
#: mem0's default model per provider, used when its config names none
LLM_DEFAULTS = {"anthropic": "claude-3-5-haiku-latest", "ollama": "llama3.1:70b", "groq": "llama3-70b-8192"}
EMBEDDER_DEFAULTS = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text",
                     "gemini": "models/text-embedding-004"}
#: mem0 embedders that, with this model, are memkit's offline local embedder
LOCAL_MODELS = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
LOCAL_PROVIDERS = frozenset({"huggingface", "fastembed"})
BASE_URL_KEYS = ("openai_base_url", "ollama_base_url", "anthropic_base_url", "deepseek_base_url",
                 "xai_base_url", "lmstudio_base_url", "vllm_base_url", "huggingface_base_url")

TOP_LEVEL = frozenset({"history_db_path", "version", "custom_fact_extraction_prompt",
                       "custom_update_memory_prompt", "custom_prompt", "enable_graph",
                       "custom_instructions"})
#: mem0's reranker providers (memkit's are litellm, llm and onnx)
MEM0_RERANKERS = frozenset({"cohere", "sentence_transformer", "huggingface", "llm_reranker",
                            "zero_entropy"})
VERSIONS = frozenset({"v1.1"})


def is_mem0(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` uses a key or provider name that only mem0 has."""
    if TOP_LEVEL & config.keys():
        return True
    if _provider(config.get("reranker")) in MEM0_RERANKERS:
        return True
    return any(
        _provider(config.get(section)) in names
        for section, names in (("llm", LLM_PREFIXES), ("embedder", {*EMBEDDER_PREFIXES, *LOCAL_PROVIDERS}))
    ) or _mem0_store(config.get("vector_store"))


def translate(config: Mapping[str, Any]) -> dict[str, Any]:
    """memkit's config for a mem0 config; a memkit config comes back unchanged."""
    if not is_mem0(config):
        return dict(config)
    out = {k: v for k, v in config.items() if k not in TOP_LEVEL}
    prompts = dict(out.pop("custom_prompts", None) or {})
    version = config.get("version", "v1.1")
    if version not in VERSIONS:
        raise ConfigError(f"version: memkit returns mem0's v1.1 shape ({{'results': [...]}}), not {version!r}")
    if config.get("enable_graph") and not config.get("graph_store"):
        raise ConfigError("enable_graph: give graph_store too (provider sqlite, postgres or neo4j)")
    reranker = _section(config, "reranker")
    if reranker is not None and reranker[1] in MEM0_RERANKERS:
        out["reranker"] = _reranker(*reranker)
    if config.get("custom_instructions") is not None:
        raise ConfigError("custom_instructions: memkit takes a whole extraction prompt instead; "
                          "put your instructions into custom_fact_extraction_prompt")
    if "history_db_path" in config:
        history = dict(out.get("history") or {})
        history["db_path"] = config["history_db_path"]
        out["history"] = history
    for mem0_key, key in (("custom_fact_extraction_prompt", "fact_extraction"),
                          ("custom_prompt", "fact_extraction"),
                          ("custom_update_memory_prompt", "update_decision")):
        if config.get(mem0_key) is not None:
            prompts[key] = config[mem0_key]
    if prompts:
        out["custom_prompts"] = prompts
    embedder = _section(config, "embedder")
    if embedder is not None:
        out["embedder"] = _embedder(*embedder)
    llm = _section(config, "llm")
    if llm is not None:
        out["llm"] = _llm(*llm)
    store = _section(config, "vector_store")
    if store is not None:
        out["vector_store"] = _store(*store, out.get("embedder"))
    return out


def _reranker(name: str, provider: str, options: dict[str, Any]) -> dict[str, Any]:
    """mem0's Cohere reranker as litellm's; the others name memkit's way to the same."""
    if provider == "cohere":
        unknown = set(options) - {"model", "api_key"}
        if unknown:
            raise ConfigError(f"{name}.config.{sorted(unknown)[0]}: memkit's rerankers take "
                              "model and api_key (search(limit=...) sets how many results come back)")
        model = str(options.get("model") or "rerank-english-v3.0")
        config = {"model": model if "/" in model else f"cohere/{model}"}
        if options.get("api_key"):
            config["api_key"] = str(options["api_key"])
        return {"provider": "litellm", "config": config}
    instead = ('provider "llm" (one listwise call; config.model)' if provider == "llm_reranker"
               else 'provider "onnx" with config.path: a folder holding a cross-encoder exported '
               'to ONNX and its tokenizer.json' if provider in ("sentence_transformer", "huggingface")
               else 'provider "litellm" (any reranker litellm serves)')
    raise ConfigError(f"{name}: memkit has no {provider!r} reranker; use {instead}")


def _provider(section: Any) -> str | None:
    if isinstance(section, str):
        return section
    if isinstance(section, Mapping):
        provider = section.get("provider")
        return provider if isinstance(provider, str) else None
    return None


def _section(config: Mapping[str, Any], name: str) -> tuple[str, str, dict[str, Any]] | None:
    section = config.get(name)
    if section is None:
        return None
    if isinstance(section, str):
        return name, section, {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{name} must be an object with 'provider' and 'config'")
    unknown = set(section) - {"provider", "config"}
    if unknown:
        raise ConfigError(f"{name}.{sorted(unknown)[0]}: unknown key")
    return name, str(section.get("provider", "")), dict(section.get("config") or {})


def _take(where: str, options: dict[str, Any], handlers: Mapping[str, Callable[[Any], None]]) -> None:
    """Run the handler of each key; a key without one is an error that names it."""
    for key, value in options.items():
        handler = handlers.get(key)
        if handler is None:
            raise ConfigError(f"{where}.config.{key}: memkit has no equivalent of this mem0 option")
        handler(value)


def _only(where: str, allowed: object) -> Callable[[Any], None]:
    """A key memkit honours only at the value that means what memkit does."""
    def check(value: Any) -> None:
        if value not in (None, allowed):
            raise ConfigError(f"{where}: memkit supports only {allowed!r}, got {value!r}")
    return check


def _model_string(where: str, provider: str, prefixes: Mapping[str, str], model: str | None) -> str:
    if not model:
        raise ConfigError(f"{where}.config.model: required for provider {provider!r}")
    prefix = prefixes[provider]
    return model if not prefix or model.startswith(prefix) else prefix + model


def _azure(where: str, out: dict[str, Any]) -> Callable[[Any], None]:
    names = {"api_key": "api_key", "azure_endpoint": "api_base", "api_version": "api_version",
             "azure_deployment": "model", "default_headers": "extra_headers"}

    def take(value: Any) -> None:
        for key, item in dict(value or {}).items():
            if key not in names:
                raise ConfigError(f"{where}.config.azure_kwargs.{key}: memkit has no equivalent")
            if item is not None:
                out[names[key]] = item
    return take


def _common(where: str, out: dict[str, Any]) -> dict[str, Callable[[Any], None]]:
    def put(name: str) -> Callable[[Any], None]:
        def store(value: Any) -> None:
            if value is not None:
                out[name] = value
        return store

    handlers: dict[str, Callable[[Any], None]] = {
        "model": put("model"), "api_key": put("api_key"),
        "azure_kwargs": _azure(where, out), "http_client_proxies": _only(f"{where}.config.http_client_proxies", None),
    }
    handlers.update({key: put("api_base") for key in BASE_URL_KEYS})
    return handlers


def _llm(where: str, provider: str, options: dict[str, Any]) -> dict[str, Any]:
    if provider not in LLM_PREFIXES:
        return {"provider": provider, "config": options}
    out: dict[str, Any] = {}
    handlers = _common(where, out)
    handlers.update({
        "temperature": lambda v: out.__setitem__("temperature", v),
        "max_tokens": lambda v: out.__setitem__("max_tokens", v),
        "top_p": lambda v: out.__setitem__("top_p", v),
        "top_k": lambda v: out.__setitem__("top_k", v),
        "enable_vision": _only(f"{where}.config.enable_vision", False),
        "vision_details": _only(f"{where}.config.vision_details", "auto"),
    })
    _take(where, options, handlers)
    out.setdefault("model", LLM_DEFAULTS.get(provider))
    out["model"] = _model_string(where, provider, LLM_PREFIXES, out["model"])
    return {"provider": "litellm", "config": out}


def _embedder(where: str, provider: str, options: dict[str, Any]) -> dict[str, Any]:
    if provider in LOCAL_PROVIDERS:
        model = options.get("model")
        if model not in LOCAL_MODELS or set(options) - {"model", "embedding_dims"} or \
                options.get("embedding_dims", 384) != 384:
            raise ConfigError(f"{where}: memkit runs {sorted(LOCAL_MODELS)[0]} offline "
                              f"(provider 'local'); other {provider} models are not supported")
        return {"provider": "local", "config": {}}
    if provider not in EMBEDDER_PREFIXES:
        return {"provider": provider, "config": options}
    out: dict[str, Any] = {}
    handlers = _common(where, out)
    handlers["embedding_dims"] = lambda v: out.__setitem__("dimensions", v)
    handlers["output_dimensionality"] = lambda v: out.__setitem__("dimensions", v)
    _take(where, options, handlers)
    out.setdefault("model", EMBEDDER_DEFAULTS.get(provider))
    out["model"] = _model_string(where, provider, EMBEDDER_PREFIXES, out["model"])
    return {"provider": "litellm", "config": out}


_STORE_KEYS = {
    "qdrant": {"collection_name", "host", "port", "path", "url", "api_key"},
    "chroma": {"collection_name", "host", "port", "path"},
    "pgvector": {"collection_name"},
}
_MEM0_STORE_KEYS = frozenset({"embedding_model_dims", "on_disk", "dbname", "user", "password", "hnsw",
                              "diskann", "minconn", "maxconn", "sslmode", "connection_string"})


def _mem0_store(section: Any) -> bool:
    if not isinstance(section, Mapping) or not isinstance(section.get("config"), Mapping):
        return False
    return bool(_MEM0_STORE_KEYS & section["config"].keys())


def _store(where: str, provider: str, options: dict[str, Any], embedder: Any) -> dict[str, Any]:
    if provider not in _STORE_KEYS:
        return {"provider": provider, "config": options}
    out: dict[str, Any] = {}
    dims = options.pop("embedding_model_dims", None)
    if dims is not None:
        _check_dims(where, dims, embedder)
    handlers: dict[str, Callable[[Any], None]] = {
        key: (lambda k: lambda v: out.__setitem__(k, v) if v is not None else None)(key)
        for key in _STORE_KEYS[provider]
    }
    if provider == "qdrant":
        handlers["on_disk"] = _on_disk(where, options)
    if provider == "pgvector":
        dsn: dict[str, Any] = {}
        for key in ("dbname", "user", "password", "host", "port", "sslmode"):
            handlers[key] = (lambda k: lambda v: dsn.__setitem__(k, v) if v is not None else None)(key)
        handlers["connection_string"] = lambda v: out.__setitem__("dsn", v)
        handlers["maxconn"] = lambda v: out.__setitem__("pool_size", v)
        handlers["minconn"] = _only(f"{where}.config.minconn", 1)
        handlers["hnsw"] = _only(f"{where}.config.hnsw", True)
        handlers["diskann"] = _only(f"{where}.config.diskann", False)
    _take(where, options, handlers)
    if provider == "pgvector" and "dsn" not in out and dsn:
        out["dsn"] = postgres_dsn(dsn)
    return {"provider": provider, "config": out}


def _on_disk(where: str, options: Mapping[str, Any]) -> Callable[[Any], None]:
    """memkit's local Qdrant (``path``) always persists; a server decides for itself."""
    def check(value: Any) -> None:
        if value and "path" not in options:
            raise ConfigError(f"{where}.config.on_disk: persistence is the Qdrant server's setting; "
                              "give 'path' for a local, persistent collection")
    return check


def postgres_dsn(parts: dict[str, Any]) -> str:
    auth = quote(str(parts.get("user", "")), safe="")
    if parts.get("password") is not None:
        auth += ":" + quote(str(parts["password"]), safe="")
    host = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
    query = f"?sslmode={parts['sslmode']}" if parts.get("sslmode") else ""
    return f"postgresql://{auth + '@' if auth else ''}{host}/{parts.get('dbname', 'postgres')}{query}"


def _check_dims(where: str, dims: Any, embedder: Any) -> None:
    """mem0 declares the vector size in the store; memkit takes it from the embedder."""
    section: Mapping[str, Any] = embedder if isinstance(embedder, Mapping) else {"provider": "local"}
    provider = section.get("provider")
    options: dict[str, Any] = section.get("config") or {}
    if provider == "local":
        expected: Any = 384
    elif provider == "litellm":
        expected = options.get("dimensions")
        if expected is None:
            options["dimensions"] = dims
            return
    else:
        return
    if dims != expected:
        raise ConfigError(f"{where}.config.embedding_model_dims: {dims} differs from the "
                          f"embedder's {expected} dimensions")
