"""The graph contract suite runs every test on every graph store, through the sync and the
async methods.

The Bolt server of the test command (FalkorDB, ``MEMKIT_TEST_BOLT_URL``) keeps
one sync and one async driver for the whole run: that server stalls a new
connection after a driver closes one gracefully. Each test gets a label of its
own there, a table prefix of its own on PostgreSQL, a file of its own on SQLite.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memkit import AsyncMemory, Memory
from memkit.graph.base import GraphStore
from memkit.history.base import HistoryStore
from memkit.stores.base import VectorStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import engine_address, unique_name
from tests.pipeline.conftest import Shell


class Graph:
    """Calls a graph store's sync methods, or its ``a``-prefixed ones run to completion."""

    def __init__(self, store: GraphStore, loop: asyncio.AbstractEventLoop, is_async: bool) -> None:
        self.store, self.loop, self.is_async = store, loop, is_async

    def __getattr__(self, name: str) -> Any:
        if not self.is_async:
            return getattr(self.store, name)
        method = getattr(self.store, "a" + name)
        assert inspect.iscoroutinefunction(method)
        return lambda *a, **k: self.loop.run_until_complete(method(*a, **k))


@pytest.fixture(scope="session")
def graph_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def bolt_drivers(graph_loop: asyncio.AbstractEventLoop) -> Iterator[tuple[Any, Any]]:
    url = os.environ.get("MEMKIT_TEST_BOLT_URL")
    if not url:
        yield None, None
        return
    import neo4j

    auth = ("falkordb", "")
    sync = neo4j.GraphDatabase.driver(url, auth=auth)
    asynchronous = graph_loop.run_until_complete(_async_driver(url, auth))
    yield sync, asynchronous  # never closed: see the module docstring


async def _async_driver(url: str, auth: tuple[str, str]) -> Any:
    import neo4j

    return neo4j.AsyncGraphDatabase.driver(url, auth=auth)


def _sqlite(tmp_path: Any, drivers: tuple[Any, Any]) -> GraphStore:
    from memkit.graph.sqlite import SQLiteGraph

    return SQLiteGraph(str(tmp_path / "graph.db"))


def _sqlite_store(tmp_path: Any, drivers: tuple[Any, Any]) -> GraphStore:
    from memkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(str(tmp_path / "memkit.db"))
    return store.graph()


def _postgres(tmp_path: Any, drivers: tuple[Any, Any]) -> GraphStore:
    from memkit.graph.postgres import PostgresGraph

    return PostgresGraph(engine_address("MEMKIT_TEST_PG_DSN"), graph_name=unique_name("g"))


def _bolt(tmp_path: Any, drivers: tuple[Any, Any]) -> GraphStore:
    from memkit.graph.neo4j import Neo4jGraph

    engine_address("MEMKIT_TEST_BOLT_URL")
    return Neo4jGraph(os.environ["MEMKIT_TEST_BOLT_URL"], label=unique_name("L"),
                      indexes=False, driver=drivers[0], async_driver=drivers[1])


def _neo4j(tmp_path: Any, drivers: tuple[Any, Any]) -> GraphStore:
    from memkit.graph.neo4j import Neo4jGraph

    url = engine_address("MEMKIT_TEST_NEO4J_URL")
    return Neo4jGraph(url, username=os.environ.get("MEMKIT_TEST_NEO4J_USER", "neo4j"),
                      password=os.environ.get("MEMKIT_TEST_NEO4J_PASSWORD", ""),
                      label=unique_name("L"))


GRAPHS: dict[str, Callable[[Any, tuple[Any, Any]], GraphStore]] = {
    "sqlite": _sqlite, "sqlite-store": _sqlite_store, "postgres": _postgres, "bolt": _bolt,
    "neo4j": _neo4j,
}


@pytest.fixture(params=sorted(GRAPHS))
def graph_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def graph(graph_name: str, mode: str, tmp_path: Any, graph_loop: asyncio.AbstractEventLoop,
          bolt_drivers: tuple[Any, Any]) -> Iterator[Graph]:
    store = GRAPHS[graph_name](tmp_path, bolt_drivers)
    g = Graph(store, graph_loop, mode == "async")
    g.open()
    yield g
    g.reset()
    if mode == "async":
        graph_loop.run_until_complete(store.aclose())
    else:
        store.close()


#: where the graph lives: in the sqlite store's file and transactions; in pgvector's database
#: and transactions; on the Bolt server, written after the memories' transaction commits
KINDS = ["sqlite-store", "pgvector-postgres", "bolt"]
JOINED = {"sqlite-store", "pgvector-postgres"}


@pytest.fixture(params=KINDS)
def graph_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _stores(kind: str, tmp_path: Any, index: int,
            drivers: tuple[Any, Any]) -> tuple[VectorStore, HistoryStore, GraphStore]:
    if kind == "pgvector-postgres":
        from memkit.graph.postgres import PostgresGraph
        from memkit.history.postgres import PostgresHistory
        from memkit.stores.pgvector import PgVectorStore

        dsn = engine_address("MEMKIT_TEST_PG_DSN")
        name = unique_name(f"g{index}")
        return (PgVectorStore(dsn, collection_name=name), PostgresHistory(dsn, table=f"{name}_h"),
                PostgresGraph(dsn, graph_name=name))
    store = SQLiteStore(str(tmp_path / f"memkit{index}.db"))
    if kind == "sqlite-store":
        return store, store.history(), store.graph()
    from memkit.graph.neo4j import Neo4jGraph

    url = engine_address("MEMKIT_TEST_BOLT_URL")  # one label per memory of the test
    return store, store.history(), Neo4jGraph(url, label=unique_name(f"L{index}"), indexes=False,
                                              driver=drivers[0], async_driver=drivers[1])


@pytest.fixture
def make(graph_kind: str, mode: str, tmp_path: Any, graph_loop: asyncio.AbstractEventLoop,
         bolt_drivers: tuple[Any, Any]) -> Iterator[Any]:
    made: list[Shell] = []

    def build(llm: ScriptedLLM, graph: bool = True, threshold: float = 0.85) -> Shell:
        store, history, graph_store = _stores(graph_kind, tmp_path, len(made), bolt_drivers)
        cls = Memory if mode == "sync" else AsyncMemory
        memory = cls({"graph_store": {"entity_threshold": threshold}} if graph else None,
                     llm=llm, embedder=HashEmbedder(), vector_store=store, history=history,
                     graph_store=graph_store if graph else None)
        shell = Shell(memory, graph_loop)
        made.append(shell)
        return shell

    yield build
    for shell in made:
        if shell.memory.graph_store is not None:
            store = shell.memory.graph_store
            if shell.is_async:
                graph_loop.run_until_complete(store.areset())
            else:
                store.reset()
        if shell.is_async:
            graph_loop.run_until_complete(shell.memory.aclose())  # type: ignore[union-attr]
        else:
            shell.memory.close()  # type: ignore[union-attr]
