"""Server addresses from the environment (``QDRANT_*``, ``CHROMA_*``, ``NEO4J_*``,
``REDIS_URL``): used
when the config names no place, never over an explicit one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from memkit import ConfigError, Memory, VectorStoreError
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import unique_name

_VARIABLES = ("QDRANT_URL", "QDRANT_HOST", "QDRANT_PORT", "QDRANT_API_KEY", "CHROMA_URL",
              "CHROMA_HOST", "CHROMA_PORT", "NEO4J_URI", "NEO4J_URL", "NEO4J_USERNAME",
              "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE", "REDIS_URL")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory(store: dict[str, object]) -> Memory:
    return Memory({"vector_store": store}, llm=ScriptedLLM(), embedder=HashEmbedder())


def test_chroma_host_and_port_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                   chroma_url: str) -> None:
    server = urlparse(chroma_url)
    monkeypatch.setenv("CHROMA_HOST", str(server.hostname))
    monkeypatch.setenv("CHROMA_PORT", str(server.port))
    name = unique_name("envchroma")
    with _memory({"provider": "chroma", "config": {"collection_name": name}}) as m:
        m.add("Likes rye bread", user_id="alice", infer=False)
        assert m.vector_store.url == f"http://{server.hostname}:{server.port}"  # type: ignore[attr-defined]
        assert [i.memory for i in m.get_all(user_id="alice").results] == ["Likes rye bread"]
        m.vector_store.client.delete_collection(name)  # type: ignore[attr-defined]


def test_chroma_url_from_the_environment_and_an_explicit_path_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, chroma_url: str,
) -> None:
    monkeypatch.setenv("CHROMA_URL", chroma_url)
    name = unique_name("envchroma")
    with _memory({"provider": "chroma", "config": {"collection_name": name}}) as server:
        server.add("Likes rye bread", user_id="alice", infer=False)
        with _memory({"provider": "chroma", "config": {"path": str(tmp_path),
                                                       "collection_name": name}}) as local:
            assert local.vector_store.url is None  # type: ignore[attr-defined]
            assert local.get_all(user_id="alice").results == []
        assert len(server.get_all(user_id="alice").results) == 1
        server.vector_store.client.delete_collection(name)  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_qdrant_url_from_the_environment_and_an_explicit_path_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QDRANT_URL", f"http://127.0.0.1:{_closed_port()}")
    m = _memory({"provider": "qdrant"})
    with pytest.raises(VectorStoreError, match="Connection refused"):
        m.add("x", user_id="u", infer=False)
    with _memory({"provider": "qdrant", "config": {"path": ":memory:"}}) as local:
        local.add("Likes rye bread", user_id="alice", infer=False)
        assert len(local.get_all(user_id="alice").results) == 1


def test_neo4j_address_and_login_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (not connected here: the test command's Bolt server stalls new connections after a
    # driver closes, so the graph suite keeps one driver for the run)
    from memkit.graph.neo4j import Neo4jGraph

    monkeypatch.setenv("NEO4J_URI", "bolt://db.example:7687")
    monkeypatch.setenv("NEO4J_USERNAME", "reader")
    monkeypatch.setenv("NEO4J_DATABASE", "memories")
    graph = Neo4jGraph()
    assert (graph.url, graph.username, graph.database) == (
        "bolt://db.example:7687", "reader", "memories")
    given = Neo4jGraph(url="bolt://127.0.0.1:7687", username="neo4j", database="neo4j")
    assert (given.url, given.username, given.database) == ("bolt://127.0.0.1:7687", "neo4j", "neo4j")
    monkeypatch.delenv("NEO4J_URI")
    assert Neo4jGraph().url == "bolt://localhost:7687"


def test_a_port_that_is_not_a_number_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_HOST", "127.0.0.1")
    monkeypatch.setenv("QDRANT_PORT", "sixty")
    with pytest.raises(ConfigError, match="QDRANT_PORT='sixty' is not a port number"):
        _memory({"provider": "qdrant"})


def test_redis_url_from_the_environment_unless_given(monkeypatch: pytest.MonkeyPatch,
                                                    redis_url: str) -> None:
    from memkit.stores.redis import RedisStore

    monkeypatch.setenv("REDIS_URL", redis_url)
    name = unique_name("envredis")
    with _memory({"provider": "redis", "config": {"collection_name": name}}) as m:
        m.add("Likes rye bread", user_id="alice", infer=False)
        assert [i.memory for i in m.get_all(user_id="alice").results] == ["Likes rye bread"]
        m.vector_store.reset()
    assert RedisStore(url="redis://127.0.0.1:1").url == "redis://127.0.0.1:1"
