"""The curated public surface, and what importing memkit costs."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import memkit

EXPECTED = {
    "Memory", "AsyncMemory", "MemoryConfig", "AddResult", "MemoryEvent", "MemoryItem",
    "SearchResult", "HistoryList", "HistoryRecord", "Change", "Usage", "OperationError", "MemkitError", "ScopeError",
    "FilterError", "VectorStoreError", "LLMError", "EmbeddingError", "NotFoundError",
    "ConfigError", "Condition", "And", "Or", "Not", "Filter", "parse_filter", "__version__",
    "DeleteResult", "ExportedMemory", "ImportResult", "ConflictError", "MEMORY_TYPES",
    "ConsolidationCluster", "ConsolidationResult", "MemoryStats",
    "EntityGraph", "GraphEntity", "GraphRelation", "SearchLogEntry",
    "ReembedResult", "ScopeCount", "Mem0ImportResult", "import_mem0",
    "TASK_STATUSES", "FolderWatch", "IndexResult", "SkippedFile", "StartupContext", "StartupItem",
    "InvalidArgument", "StoreError", "GraphError", "GraphStoreError", "StaleVersionError",
    "ClosedError",
}


def test_exports_are_exactly_the_public_api() -> None:
    assert set(memkit.__all__) == EXPECTED
    for name in memkit.__all__:
        assert getattr(memkit, name) is not None


def test_errors_share_one_base_that_is_not_the_builtin() -> None:
    errors = {name for name in memkit.__all__
              if isinstance(getattr(memkit, name), type) and issubclass(getattr(memkit, name),
                                                                        Exception)}
    assert errors == {
        "MemkitError", "ScopeError", "FilterError", "VectorStoreError", "LLMError",
        "EmbeddingError", "NotFoundError", "ConfigError", "ConflictError", "InvalidArgument",
        "StoreError", "GraphError", "GraphStoreError", "StaleVersionError", "ClosedError"}
    for name in errors:
        assert issubclass(getattr(memkit, name), memkit.MemkitError)
    for name in ("InvalidArgument", "ScopeError", "FilterError", "GraphError", "ConfigError"):
        assert issubclass(getattr(memkit, name), ValueError)
    for name in ("VectorStoreError", "GraphStoreError"):  # engine failures, retried later
        assert issubclass(getattr(memkit, name), memkit.StoreError)
        assert not issubclass(getattr(memkit, name), ValueError)
    assert issubclass(memkit.StaleVersionError, memkit.ConflictError)
    assert not issubclass(memkit.ClosedError, memkit.StoreError)  # retrying will not help
    assert memkit.MemkitError is not MemoryError
    assert str(memkit.ScopeError()) == "At least one of user_id, agent_id, or run_id must be provided"


def test_memory_and_async_memory_have_the_same_methods() -> None:
    import inspect

    names = ["add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "reset",
             "export", "import_", "versions", "supersede", "purge", "revert", "prune",
             "consolidate", "stats", "reembed", "index_folder", "watch_folder", "update_task",
             "startup_context", "changes"]
    for name in names:
        sync, async_ = getattr(memkit.Memory, name), getattr(memkit.AsyncMemory, name)
        assert inspect.signature(sync) == inspect.signature(async_)
        assert inspect.iscoroutinefunction(async_) and not inspect.iscoroutinefunction(sync)


def test_public_methods_have_real_signatures_and_docstrings() -> None:
    import inspect
    import typing

    sig = inspect.signature(memkit.Memory.add)
    assert list(sig.parameters)[:2] == ["self", "messages"]
    assert "user_id" in sig.parameters and sig.parameters["infer"].default is True
    hints = typing.get_type_hints(memkit.Memory.add)
    assert hints["return"] is memkit.AddResult
    assert typing.get_type_hints(memkit.AsyncMemory.search)["return"] is memkit.SearchResult
    assert typing.get_type_hints(memkit.Memory.delete_all)["return"] is memkit.DeleteResult
    for cls in (memkit.Memory, memkit.AsyncMemory):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                assert member.__doc__, f"{cls.__name__}.{name} has no docstring"
    try:
        memkit.Memory.search(None, "q", top_kk=3)  # type: ignore[arg-type, call-arg]
    except TypeError as exc:
        assert "search()" in str(exc) and "_search" not in str(exc)


def test_no_front_door_reaches_into_private_runtime() -> None:
    from pathlib import Path

    root = Path(memkit.__file__).parent
    for package in ("cli", "server", "mcp", "integrations", "ui"):
        for path in (root / package).glob("*.py"):
            text = path.read_text(encoding="utf-8")
            for private in ("._runtime", "memkit._memory", "memkit._pipeline", "server._auth"):
                if package == "server" and private == "server._auth":
                    continue
                assert private not in text, f"{path.name} uses {private}"


def test_integrations_use_only_the_public_api() -> None:
    import ast
    from pathlib import Path

    root = Path(memkit.__file__).parent / "integrations"
    found = set()
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                       else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for module in modules:
                private = module.startswith("memkit.") and any(
                    part.startswith("_") for part in module.split(".")[1:])
                if private and not module.startswith("memkit.integrations._"):
                    found.add((path.name, module))
    assert len(list(root.glob("*.py"))) >= 9
    assert found == set()


PROBE = """
import socket, sys, time
def refuse(*a, **k):
    raise AssertionError("memkit opened a socket on import")
socket.socket.connect = refuse
socket.create_connection = refuse
start = time.perf_counter()
import memkit
from memkit import Memory, AsyncMemory, MemoryConfig
elapsed = time.perf_counter() - start
heavy = [m for m in ("litellm", "onnxruntime", "tokenizers", "qdrant_client", "chromadb", "psycopg")
         if m in sys.modules]
print(f"{elapsed:.3f} {','.join(heavy)}")
"""


def test_import_is_light_and_offline() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    elapsed, _, heavy = out.stdout.strip().partition(" ")
    assert heavy == "", f"import memkit pulled in {heavy}"
    print(f"import memkit + Memory: {elapsed} s")


def test_graph_store_config_builds_the_graph_it_names(tmp_path: Any) -> None:
    import pytest

    from memkit.testing import HashEmbedder, ScriptedLLM

    def build(graph_store: Any) -> memkit.Memory:
        config = {"vector_store": {"provider": "sqlite", "config": {"path": str(tmp_path / "m.db")}},
                  "graph_store": graph_store}
        return memkit.Memory(config, llm=ScriptedLLM(), embedder=HashEmbedder())

    shared = build("sqlite")  # in the sqlite store's file and transactions
    assert shared.graph_store is not None and shared.graph_store.joins(shared.vector_store)
    shared.add_relation("Alice", "works at", "Acme", user_id="u")
    assert [e.name for e in shared.get_entities(user_id="u")] == ["Acme", "Alice"]
    shared.close()
    apart = build({"provider": "sqlite", "config": {"path": str(tmp_path / "g.db")},
                   "search_depth": 1, "entity_threshold": 0.9})
    assert apart.graph_store is not None and not apart.graph_store.joins(apart.vector_store)
    apart.close()
    with pytest.raises(memkit.ConfigError, match="unknown graph store provider"):
        build("nebula")
    with pytest.raises(memkit.ConfigError, match=r"unknown key .nope. in graph_store\.config"):
        build({"provider": "sqlite", "config": {"path": str(tmp_path / "g.db"), "nope": 1}})
    with pytest.raises(ValueError, match="search_depth"):
        memkit.MemoryConfig.model_validate({"graph_store": {"search_depth": 9}})
    with pytest.raises(ValueError, match="enable_graph"):
        memkit.MemoryConfig.model_validate({"enable_graph": True})
    plain = memkit.Memory({"vector_store": {"provider": "memory"}}, llm=ScriptedLLM(),
                          embedder=HashEmbedder())
    with pytest.raises(memkit.ConfigError, match="no graph store"):
        plain.get_entities(user_id="u")
