"""memkit: long-term memory for AI agents.

An LLM curates the memory: it extracts facts from conversations and decides,
against what is stored, whether to add, update or delete. ``Memory`` and
``AsyncMemory`` run that pipeline over pluggable vector stores.
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING, Any

# onnxruntime (the local embedder, the SQLite store's ANN index, e5) writes a device id
# for its telemetry under ~/.cache unless told not to; memkit keeps no telemetry.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from memkit._errors import (
    ClosedError,
    ConfigError,
    ConflictError,
    EmbeddingError,
    FilterError,
    GraphError,
    GraphStoreError,
    InvalidArgument,
    LLMError,
    MemkitError,
    NotFoundError,
    ScopeError,
    StaleVersionError,
    StoreError,
    VectorStoreError,
)

if TYPE_CHECKING:
    from memkit._async_memory import AsyncMemory
    from memkit._config import MemoryConfig
    from memkit._filters import And, Condition, Filter, Not, Or, parse_filter
    from memkit._mem0_import import Mem0ImportResult, import_mem0
    from memkit._memory import Memory
    from memkit._models import (
        MEMORY_TYPES,
        TASK_STATUSES,
        AddResult,
        Change,
        ConsolidationCluster,
        ConsolidationResult,
        DeleteResult,
        EntityGraph,
        ExportedMemory,
        GraphEntity,
        GraphRelation,
        HistoryList,
        HistoryRecord,
        ImportResult,
        MemoryEvent,
        MemoryItem,
        MemoryStats,
        OperationError,
        ReembedResult,
        ScopeCount,
        SearchLogEntry,
        SearchResult,
        Usage,
    )
    from memkit._notes.models import IndexResult, SkippedFile, StartupContext, StartupItem
    from memkit._notes.watch import FolderWatch

__version__ = "0.1.0"

_LAZY = {
    "Memory": "memkit._memory", "AsyncMemory": "memkit._async_memory",
    "MemoryConfig": "memkit._config",
    "AddResult": "memkit._models", "Change": "memkit._models", "HistoryList": "memkit._models",
    "HistoryRecord": "memkit._models",
    "DeleteResult": "memkit._models", "ExportedMemory": "memkit._models",
    "ConsolidationCluster": "memkit._models", "ConsolidationResult": "memkit._models",
    "MemoryStats": "memkit._models", "ReembedResult": "memkit._models",
    "SearchLogEntry": "memkit._models", "ScopeCount": "memkit._models",
    "ImportResult": "memkit._models", "EntityGraph": "memkit._models",
    "GraphEntity": "memkit._models", "GraphRelation": "memkit._models",
    "MemoryEvent": "memkit._models", "MemoryItem": "memkit._models",
    "OperationError": "memkit._models", "SearchResult": "memkit._models", "Usage": "memkit._models",
    "And": "memkit._filters", "Condition": "memkit._filters", "Filter": "memkit._filters",
    "Not": "memkit._filters", "Or": "memkit._filters", "parse_filter": "memkit._filters",
    "MEMORY_TYPES": "memkit._models",
    "IndexResult": "memkit._notes.models", "SkippedFile": "memkit._notes.models",
    "StartupContext": "memkit._notes.models", "StartupItem": "memkit._notes.models",
    "FolderWatch": "memkit._notes.watch", "TASK_STATUSES": "memkit._models",
    "import_mem0": "memkit._mem0_import", "Mem0ImportResult": "memkit._mem0_import",
}

__all__ = [
    "MEMORY_TYPES", "TASK_STATUSES", "AddResult", "And", "AsyncMemory", "Change", "ClosedError",
    "Condition", "ConfigError",
    "ConflictError", "ConsolidationCluster", "ConsolidationResult",
    "DeleteResult", "EmbeddingError", "EntityGraph", "ExportedMemory", "Filter", "FilterError",
    "FolderWatch", "GraphEntity", "GraphError", "GraphRelation", "GraphStoreError", "HistoryList",
    "HistoryRecord", "ImportResult", "IndexResult", "InvalidArgument", "LLMError",
    "Mem0ImportResult", "MemkitError", "Memory", "MemoryConfig",
    "MemoryEvent", "MemoryItem", "MemoryStats", "Not", "NotFoundError", "OperationError", "Or",
    "ReembedResult", "ScopeCount", "ScopeError", "SearchLogEntry", "SearchResult", "SkippedFile",
    "StaleVersionError", "StartupContext", "StartupItem", "StoreError", "Usage", "VectorStoreError", "__version__",
    "import_mem0", "parse_filter",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memkit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
