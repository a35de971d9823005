"""A graph outage during an add loses nothing: the add's transaction records the graph work
it owes, and the next add (or ``repair()``) writes it once the graph is back, without the
client sending the add again. Through Memory and AsyncMemory, with a graph store that
fails on command (a SQLite graph in a file of its own, so not in the store's transactions)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Generator
from typing import Any, TypeVar

import pytest

from memkit import AsyncMemory, Memory, StoreError
from memkit._pipeline.features.outbox import OUTBOX
from memkit.graph.sqlite import SQLiteGraph
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.graph.test_memory import extraction, rel
from tests.pipeline.conftest import Shell, ops

T = TypeVar("T")


class Outage:
    """A graph store that serves ``budget`` more operations, then fails each one until
    :meth:`up`."""

    budget: int | None = None

    def fail_after(self, operations: int) -> None:
        self.budget = operations

    def up(self) -> None:
        self.budget = None

    def spend(self, op: Generator[Any, Any, Any]) -> None:
        if self.budget is not None:
            if self.budget <= 0:
                op.close()
                raise ConnectionError("the graph engine is down")
            self.budget -= 1


class FlakyGraph(Outage, SQLiteGraph):
    def _run(self, op: Generator[Any, Any, T]) -> T:
        self.spend(op)
        return super()._run(op)


@pytest.fixture(params=["sync", "async"])
def memory(request: pytest.FixtureRequest, tmp_path: Any,
           graph_loop: asyncio.AbstractEventLoop) -> Any:
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    graph = FlakyGraph(str(tmp_path / "graph.db"))
    llm = ScriptedLLM([
        extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")]),
        extraction(["Bob drinks tea"], [rel("Bob", "drinks", "tea", "person", "drink")]),
        ops({"event": "ADD", "text": "Bob drinks tea"}),
    ])
    cls = Memory if request.param == "sync" else AsyncMemory
    shell = Shell(cls(llm=llm, embedder=HashEmbedder(), vector_store=store,
                      history=store.history(), graph_store=graph), graph_loop)
    shell.get_all(user_id="u")  # opened while the graph is up
    yield shell, graph, store
    if shell.is_async:
        graph_loop.run_until_complete(shell.memory.aclose())
    else:
        shell.memory.close()


def _relations(m: Shell, name: str) -> list[Any]:
    return list(m.get_entity_graph(name, user_id="u").relations)


@pytest.mark.parametrize("served", [0, 3], ids=["down-before", "down-mid-write"])
@pytest.mark.parametrize("how", ["next-add", "repair"])
def test_a_graph_outage_during_an_add_is_repaired_without_sending_it_again(
        memory: Any, served: int, how: str) -> None:
    m, graph, store = memory
    graph.fail_after(served)
    with pytest.raises(StoreError):
        m.add("Alice works at Acme", user_id="u")
    [item] = m.get_all(user_id="u").results  # acknowledged in the store and its history
    assert item.memory == "Alice works at Acme"
    assert [h.event for h in m.history(item.id)] == ["ADD"]
    [pending] = store.history().get(OUTBOX)
    assert pending.event == "GRAPH_PENDING" and item.id in (pending.new_value or "")
    graph.up()
    if how == "repair":
        assert m.repair() == 1
    else:
        m.add("Bob drinks tea", user_id="u")
        assert [r.target for r in _relations(m, "Bob")] == ["tea"]
    [works] = _relations(m, "Alice")  # one relation, one mention, whether or not it was
    assert (works.source, works.relation, works.target) == ("Alice", "WORKS_AT", "Acme")
    assert works.weight == 1.0 and works.memory_ids == [item.id]  # written before the outage
    assert m.get_entity("Acme", user_id="u").type == "organization"
    assert [h.event for h in m.history(works.id)] == ["RELATION_ADD"]
    assert store.history().get(OUTBOX) == [] and m.repair() == 0
    assert [r.weight for r in _relations(m, "Alice")] == [1.0]
    created = [json.loads(c.new_value)["name"] for c in m.changes(user_id="u")
               if c.event == "ENTITY_ADD"]  # once each, whatever the failed try wrote
    assert created == ["Acme", "Alice", *(["Bob", "tea"] if how == "next-add" else [])]


def test_an_outage_that_lasts_keeps_the_work_pending(memory: Any) -> None:
    m, graph, store = memory
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.add("Alice works at Acme", user_id="u")
    with pytest.raises(StoreError):
        m.repair()
    with pytest.raises(StoreError):  # the owed work goes first: this add writes nothing
        m.add("Bob drinks tea", user_id="u")
    assert [i.memory for i in m.get_all(user_id="u").results] == ["Alice works at Acme"]
    assert len(store.history().get(OUTBOX)) == 1
    graph.up()
    assert m.repair() == 1
    assert [r.target for r in _relations(m, "Alice")] == ["Acme"]
    assert m.get_entities(user_id="u", type="drink") == []
    assert store.history().get(OUTBOX) == []


def test_a_purge_forgets_the_pending_work_of_its_memories(memory: Any, tmp_path: Any) -> None:
    m, graph, store = memory
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.add("Alice works at Acme", user_id="u", metadata={"topic": "work"})
    graph.up()
    assert m.purge(user_id="u", filters={"topic": "work"}) == 1  # not the whole scope
    assert store.history().get(OUTBOX) == [] and m.repair() == 0
    assert m.get_entities(user_id="u") == []
    assert b"Acme" not in (tmp_path / "memkit.db").read_bytes()


@pytest.mark.engine
@pytest.mark.timeout(240)
def test_postgres_graph_stopped_during_an_add_is_written_after_its_restart(tmp_path: Any) -> None:
    """A PostgreSQL of the test's own holds the graph (the store is SQLite): stopped, an add
    stores its memory and fails; started again, repair() writes the relation, once."""
    from memkit.graph.postgres import PostgresGraph
    from tests.server._own_engines import OwnPostgres

    own = OwnPostgres()
    try:
        own.start()
        store = SQLiteStore(str(tmp_path / "memkit.db"))
        memory = Memory(llm=ScriptedLLM([extraction(["Alice works at Acme"], [
            rel("Alice", "works at", "Acme")])]), embedder=HashEmbedder(), vector_store=store,
            history=store.history(), graph_store=PostgresGraph(own.dsn))
        assert memory.get_entities(user_id="u") == []  # opened while PostgreSQL runs
        own.stop()
        with pytest.raises(StoreError):
            memory.add("Alice works at Acme", user_id="u")
        [item] = memory.get_all(user_id="u").results
        assert len(store.history().get(OUTBOX)) == 1
        own.start()
        deadline = time.monotonic() + 90
        while True:  # the first call within a second of the last failed connect fails too
            try:
                assert memory.repair() == 1
                break
            except StoreError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        [works] = memory.get_entity_graph("Alice", user_id="u").relations
        assert (works.target, works.weight, works.memory_ids) == ("Acme", 1.0, [item.id])
        assert [h.event for h in memory.history(works.id)] == ["RELATION_ADD"]
        assert memory.repair() == 0 and store.history().get(OUTBOX) == []
        memory.close()
    finally:
        own.close()


def test_the_memory_repair_tool_writes_the_owed_work(memory: Any, graph_loop: Any) -> None:
    from memkit.tools import MemoryTools

    m, graph, _ = memory
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.add("Alice works at Acme", user_id="u")
    graph.up()
    tools = MemoryTools(m.memory, user_id="u")
    repaired = (graph_loop.run_until_complete(tools.acall("memory_repair", {})) if m.is_async
                else tools.call("memory_repair", {}))
    assert repaired == {"repaired": 1}
    assert [r.target for r in _relations(m, "Alice")] == ["Acme"]


def test_work_left_for_a_graph_waits_while_a_joined_graph_is_configured(tmp_path: Any) -> None:
    """Pending work is owed to its graph: a memory whose graph shares the store's file
    leaves it alone, and the first memory configured with that graph again writes it."""
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    graph = FlakyGraph(str(tmp_path / "graph.db"))
    llm = ScriptedLLM([extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")])])
    with Memory(llm=llm, embedder=HashEmbedder(), vector_store=store, graph_store=graph) as m:
        m.get_all(user_id="u")
        graph.fail_after(0)
        with pytest.raises(StoreError):
            m.add("Alice works at Acme", user_id="u")
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                graph_store=store.graph()) as joined:
        joined.add("Bob drinks tea", user_id="u", infer=False)
        assert joined.repair() == 0
        assert sorted(i.memory for i in joined.get_all(user_id="u").results) == [
            "Alice works at Acme", "Bob drinks tea"]
        assert len(store.history().get(OUTBOX)) == 1
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                graph_store=SQLiteGraph(str(tmp_path / "graph.db"))) as m:
        assert [r.target for r in m.get_entity_graph("Alice", user_id="u").relations] == ["Acme"]
        assert store.history().get(OUTBOX) == []
