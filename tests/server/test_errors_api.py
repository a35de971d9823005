"""Errors over HTTP: an engine that fails (the vector store's or the graph's) is a 503 with
``Retry-After``; an invalid argument is a 400, and in Python a ValueError."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from memkit import AsyncMemory, GraphStoreError, InvalidArgument, Memory
from memkit.graph.neo4j import Neo4jGraph
from memkit.graph.sqlite import SQLiteGraph
from memkit.server import create_app
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder
from tests.server.conftest import KEYS, echo_llm, free_port, serving


def _unreachable_graph() -> Neo4jGraph:
    return Neo4jGraph(f"bolt://127.0.0.1:{free_port()}", indexes=False)  # nothing listens


def test_a_graph_engine_outage_is_a_503_with_retry_after(tmp_path: Path) -> None:
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(),
                         vector_store=SQLiteStore(str(tmp_path / "m.db")),
                         graph_store=_unreachable_graph())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"})
        failed = alice.get("/v1/entities/")
        assert failed.status_code == 503, failed.text
        assert failed.json()["error"]["type"] == "store_error"
        assert int(failed.headers["Retry-After"]) > 0


def test_a_vector_store_outage_is_a_503_with_retry_after(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "m.db"))
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=store)
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"})
        assert alice.get("/v1/memories/").status_code == 200
        store.close()  # the engine goes away under the server
        failed = alice.get("/v1/memories/")
        assert failed.status_code == 503, failed.text
        assert int(failed.headers["Retry-After"]) > 0


def test_an_invalid_argument_is_a_400(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "m.db"))
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=store,
                         graph_store=store.graph())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"})
        loop = alice.post("/v1/entities/Acme/relations/", json={"relation": "is",
                                                                 "target": "acme"})
        assert loop.status_code == 400, loop.text
        assert loop.json()["error"]["type"] == "invalid_request"
        assert "Retry-After" not in loop.headers


def test_in_python_engine_failures_and_invalid_arguments_are_told_apart(tmp_path: Path) -> None:
    with Memory(embedder=HashEmbedder(), vector_store=SQLiteStore(str(tmp_path / "m.db")),
                graph_store=_unreachable_graph()) as m:
        with pytest.raises(GraphStoreError):
            m.get_entities(user_id="alice")
        for bad in (lambda: m.search("x", user_id="alice", mode="fuzzy"),  # type: ignore[arg-type]
                    lambda: m.add("x", user_id="alice", metadata=[]),  # type: ignore[arg-type]
                    lambda: m.get_entity_graph("Alice", depth=9, user_id="alice")):
            with pytest.raises(InvalidArgument) as caught:
                bad()
            assert isinstance(caught.value, ValueError)


class _DownOnOpen(SQLiteGraph):
    """A graph whose engine refuses the first ``failures`` opens."""

    failures = 1

    def open(self) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection refused")
        super().open()

    async def aopen(self) -> None:
        self.open()


@pytest.mark.parametrize("kind", [Memory, AsyncMemory])
def test_an_engine_down_when_the_memory_first_opens_is_a_store_error_then_recovers(
        tmp_path: Path, kind: type[Memory] | type[AsyncMemory]) -> None:
    memory = kind(embedder=HashEmbedder(), vector_store=SQLiteStore(str(tmp_path / "m.db")),
                  graph_store=_DownOnOpen(str(tmp_path / "g.db")))

    async def search() -> object:
        result = memory.search("x", user_id="alice")
        return await result if isinstance(memory, AsyncMemory) else result

    with pytest.raises(GraphStoreError, match="ConnectionError: connection refused"):
        asyncio.run(search())
    assert asyncio.run(search()).results == []  # type: ignore[attr-defined]  # opened now
