"""A closed memory refuses every call with one clear error, on every store, before it
touches the store (a closed SQLite connection said "Cannot operate on a closed database";
an in-memory store went on answering)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from memkit import AsyncMemory, ClosedError, Memory
from memkit.testing import HashEmbedder
from tests.pipeline.conftest import MakeMemory

ID = "00000000-0000-0000-0000-000000000000"
ALICE = {"user_id": "alice"}

#: every public method but close/aclose, with arguments it would accept on an open memory
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "add": (("I like tea",), {**ALICE, "infer": False}),
    "search": (("tea",), ALICE),
    "get": ((ID,), {}),
    "get_all": ((), ALICE),
    "update": ((ID, "I like coffee"), {}),
    "delete": ((ID,), {}),
    "delete_all": ((), ALICE),
    "history": ((ID,), {}),
    "changes": ((), {}),
    "watch": ((), ALICE),
    "versions": ((ID,), {}),
    "revert": ((ID,), {}),
    "supersede": ((ID, "I like coffee"), {}),
    "purge": ((), ALICE),
    "reset": ((), {}),
    "repair": ((), {}),
    "prune": ((), ALICE),
    "consolidate": ((), ALICE),
    "stats": ((), {}),
    "feedback": ((ID,), {"useful": True}),
    "search_log": ((), {}),
    "export": ((), {}),
    "import_": (([],), {}),
    "reembed": ((HashEmbedder(dimension=8),), {}),
    "index_folder": (("NOTES",), ALICE),
    "watch_folder": (("NOTES",), ALICE),
    "update_task": ((ID,), {"status": "done"}),
    "startup_context": ((), ALICE),
    "get_entity": (("Alice",), ALICE),
    "get_entities": ((), ALICE),
    "get_entity_graph": (("Alice",), ALICE),
    "add_entity": (("Alice",), ALICE),
    "add_relation": (("Alice", "likes", "tea"), ALICE),
    "delete_relation": (("Alice", "likes", "tea"), ALICE),
    "delete_entity": (("Alice",), ALICE),
}


@pytest.mark.parametrize("cls", [Memory, AsyncMemory])
def test_the_table_names_every_public_method(cls: type) -> None:
    public = {name for name, member in inspect.getmembers(cls, callable)
              if not name.startswith("_") and name not in ("close", "aclose", "from_config")}
    assert public == set(CALLS)


@pytest.mark.every_store
def test_every_call_on_a_closed_memory_raises_closed_error(make_memory: MakeMemory,
                                                           tmp_path: Path) -> None:
    memory = make_memory(config={"graph_store": {  # the graph methods get past "no graph"
        "provider": "sqlite", "config": {"path": str(tmp_path / "graph.db")}}})
    memory.add("I like tea", user_id="alice", infer=False)
    memory.aclose() if memory.is_async else memory.close()
    for name, (args, kwargs) in CALLS.items():
        args = tuple(str(tmp_path) if a == "NOTES" else a for a in args)
        with pytest.raises(ClosedError, match="closed"):
            getattr(memory, name)(*args, **kwargs)
    memory.aclose() if memory.is_async else memory.close()  # closing again is harmless


def test_a_memory_used_after_its_with_block_raises_closed_error(make_memory: MakeMemory) -> None:
    memory = make_memory()
    if memory.is_async:
        async def use() -> AsyncMemory:
            async with memory.memory as m:  # type: ignore[union-attr]
                await m.add("I like tea", user_id="alice", infer=False)
            return m
        closed: Any = memory.loop.run_until_complete(use())
        with pytest.raises(ClosedError):
            memory.loop.run_until_complete(closed.get_all(user_id="alice"))
    else:
        with memory.memory as m:  # type: ignore[union-attr]
            m.add("I like tea", user_id="alice", infer=False)
        with pytest.raises(ClosedError):
            m.get_all(user_id="alice")
