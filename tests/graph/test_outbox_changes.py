"""A graph outage during a delete, a prune, a supersede or a consolidation loses nothing
either: the change's transaction records the graph work it owes (relations to close, or
to move to another memory), and once the graph is back the next change, ``repair()``, or
the first operation of a new Memory does it, once. Then store, history and graph agree.

Through Memory and AsyncMemory, on a SQLite graph in a file of its own and on the Bolt
server (FalkorDB), each failing on command in front of the real engine; a purge, which
erases the graph first, is refused as a whole while the graph is down."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memkit import AsyncMemory, Memory, StoreError
from memkit._pipeline.features.outbox import OUTBOX
from memkit.graph.neo4j import Neo4jGraph
from memkit.graph.sqlite import SQLiteGraph
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import engine_address, unique_name
from tests.graph.test_memory import extraction, rel
from tests.graph.test_outbox import Outage
from tests.pipeline.conftest import Shell, ops


class FlakyBolt(Outage, Neo4jGraph):
    """The Bolt graph, failing on command before each operation reaches the server."""

    def _run(self, op: Any) -> Any:
        self.spend(op)
        return super()._run(op)

    async def _arun(self, op: Any) -> Any:
        self.spend(op)
        return await super()._arun(op)


class FlakySQLite(Outage, SQLiteGraph):
    def _run(self, op: Any) -> Any:
        self.spend(op)
        return super()._run(op)


def _flaky(kind: str, tmp_path: Any, drivers: tuple[Any, Any]) -> Any:
    if kind == "sqlite":
        return FlakySQLite(str(tmp_path / "graph.db"))
    engine_address("MEMKIT_TEST_BOLT_URL")
    return FlakyBolt(os.environ["MEMKIT_TEST_BOLT_URL"], label=unique_name("O"), indexes=False,
                     driver=drivers[0], async_driver=drivers[1])


ALICE = extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")])
BOB = extraction(["Bob drinks tea"], [rel("Bob", "drinks", "tea", "person", "drink")])
ALICE_AGAIN = extraction(["Alice works at Acme!"], [rel("Alice", "works at", "Acme")])


@pytest.fixture(params=["sqlite", "bolt"])
def open_memory(request: pytest.FixtureRequest, mode: str, tmp_path: Any,
                graph_loop: asyncio.AbstractEventLoop,
                bolt_drivers: tuple[Any, Any]) -> Iterator[Callable[..., Any]]:
    """``open_memory(answers)``: a memory on one SQLite store and one flaky graph; calling
    it again opens another Memory on the same store and graph (a restarted process)."""
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    graph = _flaky(str(request.param), tmp_path, bolt_drivers)
    opened: list[Shell] = []

    def open_memory(answers: list[Any]) -> tuple[Shell, Any, SQLiteStore]:
        cls = Memory if mode == "sync" else AsyncMemory
        shell = Shell(cls(llm=ScriptedLLM(answers), embedder=HashEmbedder(), vector_store=store,
                          history=store.history(), graph_store=graph), graph_loop)
        opened.append(shell)
        return shell, graph, store

    yield open_memory
    graph.up()
    graph.reset()
    if mode == "async":
        graph_loop.run_until_complete(graph.aclose())
    else:
        graph.close()
    store.close()


def _relations(m: Shell, name: str) -> list[Any]:
    return list(m.get_entity_graph(name, user_id="u", include_closed=True).relations)


def _owed(store: SQLiteStore) -> int:
    return len(store.history().get(OUTBOX))


def _repaired(m: Shell, how: str, graph: Any, open_memory: Callable[..., Any]) -> Shell:
    """Bring the graph back and let ``how`` do the owed work; the memory to look through."""
    graph.up()
    if how == "repair":
        assert m.repair() == 1
        return m
    if how == "next-add":
        m.add("Bob drinks tea", user_id="u")
        return m
    fresh, _, _ = open_memory([])  # a new process: its first operation replays
    assert fresh.get_all(user_id="u") is not None
    return fresh


HOWS = ["repair", "next-add", "new-memory"]


@pytest.mark.parametrize("served", [0, 1], ids=["down-before", "down-mid-write"])
@pytest.mark.parametrize("how", HOWS)
def test_a_delete_during_an_outage_closes_its_relations_once_the_graph_is_back(
        open_memory: Callable[..., Any], served: int, how: str) -> None:
    m, graph, store = open_memory([ALICE, BOB, ops({"event": "ADD", "text": "Bob drinks tea"})])
    item = m.add("Alice works at Acme", user_id="u").results[0]
    graph.fail_after(served)
    with pytest.raises(StoreError):
        m.delete(item.id)
    assert m.get_all(user_id="u").results == []  # acknowledged by the store and its history
    assert [h.event for h in m.history(item.id)] == ["ADD", "DELETE"]
    assert _owed(store) == 1
    seen = _repaired(m, how, graph, open_memory)
    [works] = _relations(seen, "Alice")
    assert works.valid_to is not None and works.memory_ids == [item.id]
    assert [h.event for h in seen.history(works.id)] == ["RELATION_ADD", "RELATION_CLOSE"]
    assert _owed(store) == 0 and seen.repair() == 0
    assert [h.event for h in seen.history(works.id)] == ["RELATION_ADD", "RELATION_CLOSE"]


def test_a_prune_during_an_outage_closes_its_relations_once_the_graph_is_back(
        open_memory: Callable[..., Any]) -> None:
    m, graph, store = open_memory([ALICE, BOB, ops({"event": "ADD", "text": "Bob drinks tea"})])
    weak = m.add("Alice works at Acme", user_id="u", confidence=0.1).results[0]
    kept = m.add("Bob drinks tea", user_id="u").results[0]
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.prune(below=0.5, user_id="u", dry_run=False)
    assert [i.id for i in m.get_all(user_id="u").results] == [kept.id]
    assert _owed(store) == 1
    with pytest.raises(StoreError):  # still down: the owed work stays owed
        m.repair()
    graph.up()
    assert m.repair() == 1
    [works] = _relations(m, "Alice")
    assert works.valid_to is not None and works.memory_ids == [weak.id]
    assert [h.event for h in m.history(works.id)] == ["RELATION_ADD", "RELATION_CLOSE"]
    [drinks] = _relations(m, "Bob")
    assert drinks.valid_to is None  # another memory's relation stays open
    assert _owed(store) == 0


@pytest.mark.parametrize("how", HOWS)
def test_a_supersede_during_an_outage_moves_its_relations_once_the_graph_is_back(
        open_memory: Callable[..., Any], how: str) -> None:
    m, graph, store = open_memory([ALICE, BOB, ops({"event": "ADD", "text": "Bob drinks tea"})])
    old = m.add("Alice works at Acme", user_id="u").results[0]
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.supersede(old.id, "Alice works at Acme Corp")
    [new] = m.get_all(user_id="u").results
    assert new.memory == "Alice works at Acme Corp" and [v.id for v in m.versions(new.id)] == [
        old.id, new.id]
    assert _owed(store) == 1
    seen = _repaired(m, how, graph, open_memory)
    [works] = _relations(seen, "Alice")
    assert works.valid_to is None and works.memory_ids == [new.id]
    assert _owed(store) == 0


def test_a_consolidation_during_an_outage_moves_its_relations_once_the_graph_is_back(
        open_memory: Callable[..., Any]) -> None:
    m, graph, store = open_memory([
        ALICE, ALICE_AGAIN, ops({"event": "ADD", "text": "Alice works at Acme!"})])
    m.add("Alice works at Acme", user_id="u")
    m.add("Alice works at Acme!", user_id="u")
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.consolidate(user_id="u", dry_run=False)
    [keeper] = m.get_all(user_id="u").results
    assert _owed(store) == 1
    graph.up()
    assert m.repair() == 1
    [works] = _relations(m, "Alice")
    assert works.valid_to is None and works.memory_ids == [keeper.id]
    assert _owed(store) == 0


def test_a_purge_while_the_graph_is_down_changes_nothing_and_succeeds_after(
        open_memory: Callable[..., Any]) -> None:
    m, graph, _ = open_memory([ALICE])
    item = m.add("Alice works at Acme", user_id="u").results[0]
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.purge(user_id="u")
    assert [i.id for i in m.get_all(user_id="u").results] == [item.id]
    assert [h.event for h in m.history(item.id)] == ["ADD"]
    graph.up()
    assert len(_relations(m, "Alice")) == 1  # the graph still agrees with the store
    assert m.purge(user_id="u") == 1
    assert m.get_all(user_id="u").results == [] and m.get_entities(user_id="u") == []


def test_two_workers_repairing_at_once_do_the_work_once(
        open_memory: Callable[..., Any], mode: str,
        graph_loop: asyncio.AbstractEventLoop) -> None:
    """Each Memory stands for a worker: both repair the same owed delete; the relation's
    close is in the history once."""
    first, graph, store = open_memory([ALICE])
    second, _, _ = open_memory([])
    item = first.add("Alice works at Acme", user_id="u").results[0]
    assert second.get(item.id) is not None  # opened: its first operation is behind it
    graph.fail_after(0)
    with pytest.raises(StoreError):
        first.delete(item.id)
    graph.up()
    if mode == "async":
        async def both() -> list[int]:
            return list(await asyncio.gather(first.memory.repair(), second.memory.repair()))
        done = graph_loop.run_until_complete(both())
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(lambda m: m.repair(), [first, second]))
    assert sorted(done) == [0, 1]
    [works] = _relations(first, "Alice")
    assert [h.event for h in first.history(works.id)] == ["RELATION_ADD", "RELATION_CLOSE"]
    assert _owed(store) == 0



def _repair_in_a_process(store_path: str, graph_path: str, start: Any) -> None:
    store = SQLiteStore(store_path)
    memory = Memory(llm=ScriptedLLM([]), embedder=HashEmbedder(), vector_store=store,
                    history=store.history(), graph_store=SQLiteGraph(graph_path))
    start.wait(60)
    memory.repair()  # its first operation replays, and then this
    memory.close()


@pytest.mark.slow  # two Python processes start
def test_two_processes_replaying_the_same_owed_work_do_it_once(tmp_path: Any) -> None:
    import multiprocessing

    store_path, graph_path = str(tmp_path / "memkit.db"), str(tmp_path / "graph.db")
    store, graph = SQLiteStore(store_path), FlakySQLite(graph_path)
    m = Memory(llm=ScriptedLLM([ALICE]), embedder=HashEmbedder(), vector_store=store,
               history=store.history(), graph_store=graph)
    item = m.add("Alice works at Acme", user_id="u").results[0]
    graph.fail_after(0)
    with pytest.raises(StoreError):
        m.delete(item.id)
    graph.up()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [context.Process(target=_repair_in_a_process, args=(store_path, graph_path, start))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    [works] = m.get_entity_graph("Alice", user_id="u", include_closed=True).relations
    assert works.valid_to is not None
    assert [h.event for h in m.history(works.id)] == ["RELATION_ADD", "RELATION_CLOSE"]
    assert _owed(store) == 0
    m.close()
