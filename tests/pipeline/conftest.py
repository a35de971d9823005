"""The pipeline suite runs every test through both ``Memory`` and ``AsyncMemory``, over
the in-memory and SQLite stores; a test marked ``every_store`` (store semantics: dedup,
concurrency, versions, re-embed, purge) runs over every store registered in
tests/stores/conftest.py (``store_name`` is parametrised in tests/conftest.py)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from memkit import AsyncMemory, Memory
from memkit.embeddings.base import Embedder
from memkit.history.sqlite import SQLiteHistory
from memkit.llms.base import LLM, LLMRequest
from memkit.stores.base import VectorStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.stores.conftest import FACTORIES


class Shell:
    """Calls a Memory or an AsyncMemory the same way: coroutines are run to completion."""

    def __init__(self, memory: Memory | AsyncMemory, loop: asyncio.AbstractEventLoop) -> None:
        self.memory = memory
        self.loop = loop
        self.is_async = isinstance(memory, AsyncMemory)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.memory, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: self.loop.run_until_complete(attr(*a, **k))
        return attr


def facts(*texts: str) -> dict[str, Any]:
    return {"facts": list(texts)}


def ops(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"memory": list(operations)}


def shown_labels(request: LLMRequest) -> dict[str, str]:
    """Memory text -> the label a decision (or one-call) prompt showed it under (its
    ``label: text`` lines, before the new facts or the conversation)."""
    shown = request.messages[-1]["content"].split("\n\n")[0]
    lines = shown.removeprefix("Existing memories:\n").splitlines()
    return {text: label for label, text in (line.split(": ", 1) for line in lines)}


MakeMemory = Callable[..., Shell]


@pytest.fixture(params=["sync", "async"])
def shell(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_memory(
    shell: str, store_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MakeMemory]:
    loop = asyncio.new_event_loop()
    made: list[Shell] = []
    count = 0

    def make(
        llm: LLM | None = None,
        *,
        store: VectorStore | None = None,
        embedder: Embedder | None = None,
        config: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> Shell:
        nonlocal count
        count += 1
        cls = Memory if shell == "sync" else AsyncMemory
        if store is None:
            store = FACTORIES[store_name](tmp_path_factory, f"pipeline{count}")
        history = None
        if not hasattr(store, "history") and "history" not in (config or {}):
            # Its own history file, not the user's ~/.memkit/history.db.
            path = tmp_path_factory.mktemp("history") / "history.db"
            history = SQLiteHistory(str(path))
        memory = cls(
            config,
            llm=llm if llm is not None else ScriptedLLM(),
            embedder=embedder if embedder is not None else HashEmbedder(),
            vector_store=store,
            history=history,
            clock=clock,
        )
        wrapped = Shell(memory, loop)
        made.append(wrapped)
        return wrapped

    yield make
    for wrapped in made:
        if wrapped.is_async:
            loop.run_until_complete(wrapped.memory.aclose())  # type: ignore[union-attr]
        else:
            wrapped.memory.close()  # type: ignore[union-attr]
    loop.close()
