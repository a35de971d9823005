"""A pytest plugin that points LangGraph's own store tests at ``MemkitStore``.

``tests/integrations/test_langgraph_store.py`` runs LangGraph's ``tests/test_store.py``
(taken at test time from the ``langgraph-checkpoint`` source distribution on PyPI,
the version that is installed) in a child pytest with ``-p`` this plugin. Their tests
build ``InMemoryStore(...)``; this plugin replaces that class, before their module is
imported, with a ``MemkitStore`` over one memkit vector store backend, named by
``MEMKIT_LANGGRAPH_BACKEND`` (a key of ``tests.stores.conftest.FACTORIES``).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from memkit.integrations.langgraph import MemkitStore
from memkit.stores.base import VectorStore
from memkit.testing import HashEmbedder
from tests.stores.conftest import FACTORIES, _drop_chroma_collections, _drop_milvus_collections

_made: list[VectorStore] = []


class _Tmp:
    """The two ``TempPathFactory`` methods the store factories call."""

    def __init__(self) -> None:
        self._base = Path(tempfile.mkdtemp(prefix="memkit-langgraph-"))
        self._count = 0

    def mktemp(self, name: str) -> Path:
        self._count += 1
        path = self._base / f"{name}{self._count}"
        path.mkdir()
        return path

    def getbasetemp(self) -> Path:
        return self._base


_tmp = _Tmp()


class InMemoryStore(MemkitStore):
    """What LangGraph's tests construct: a ``MemkitStore`` on the chosen backend."""

    def __init__(self, *, index: Any = None, **kwargs: Any) -> None:
        factory = FACTORIES[os.environ["MEMKIT_LANGGRAPH_BACKEND"]]
        store = factory(_tmp, f"langgraph{len(_made)}")  # type: ignore[arg-type]
        _made.append(store)
        super().__init__(store, index=index, embedder=None if index is not None else HashEmbedder(),
                         **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    import langgraph.store.memory

    suite = Path(os.environ["MEMKIT_LANGGRAPH_SUITE"])
    # Their module imports ``tests.embed_test_utils``; ``tests`` here is memkit's package.
    spec = importlib.util.spec_from_file_location("tests.embed_test_utils",
                                                  suite / "embed_test_utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules["tests.embed_test_utils"] = module
    spec.loader.exec_module(module)
    langgraph.store.memory.InMemoryStore = InMemoryStore  # type: ignore[misc, assignment]


def pytest_unconfigure(config: pytest.Config) -> None:
    _drop_chroma_collections(_made)
    for store in _made:
        store.close()
    _drop_milvus_collections(_made)
