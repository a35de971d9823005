"""Store factories for the contract and congruence suites.

Every store backend registers one :class:`StoreFactory` in ``FACTORIES``;
``store_factory`` is parametrised over all of them, so
tests/stores/test_contract.py and test_filter_congruence.py run against each
engine. A factory is called ``factory(tmp_path_factory, name)`` and returns a
fresh, empty, not-yet-opened store. A store that persists also gives
``reopen(store)``: a second handle on the same collection (after the first is
closed), which the persistence tests use.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from memkit.stores.base import VectorStore
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore


@dataclass(frozen=True)
class StoreFactory:
    make: Callable[[pytest.TempPathFactory, str], VectorStore]
    reopen: Callable[[VectorStore], VectorStore] | None = None

    def __call__(self, tmp: pytest.TempPathFactory, name: str) -> VectorStore:
        return self.make(tmp, name)

    @property
    def persistent(self) -> bool:
        return self.reopen is not None


def _memory(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    return InMemoryStore(collection_name=name)


def _sqlite(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    return SQLiteStore(os.fspath(tmp.mktemp("sqlite") / "memkit.db"), collection_name=name)


def _reopen_sqlite(store: VectorStore) -> VectorStore:
    assert isinstance(store, SQLiteStore)
    return SQLiteStore(store.path, collection_name=store.collection_name)


def _pgvector(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.pgvector import PgVectorStore
    from tests.conftest import engine_address, unique_name

    # One table per (test, name): the engine outlives a test.
    return PgVectorStore(engine_address("MEMKIT_TEST_PG_DSN"), collection_name=unique_name(name))


def _reopen_pgvector(store: VectorStore) -> VectorStore:
    from memkit.stores.pgvector import PgVectorStore

    assert isinstance(store, PgVectorStore)
    return PgVectorStore(store.dsn, collection_name=store.collection_name)


def _qdrant_local(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.qdrant import QdrantStore

    return QdrantStore(path=":memory:", collection_name=name)


def _chroma_embedded(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.chroma import ChromaStore

    return ChromaStore(path=os.fspath(tmp.mktemp("chroma")), collection_name=name)


def _chroma_server(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.chroma import ChromaStore
    from tests.conftest import engine_address, unique_name

    return ChromaStore(url=engine_address("MEMKIT_TEST_CHROMA_URL"),
                       collection_name=unique_name(f"{name}-{uuid.uuid4().hex[:8]}"))


def _reopen_chroma(store: VectorStore) -> VectorStore:
    from memkit.stores.chroma import ChromaStore

    assert isinstance(store, ChromaStore)
    return ChromaStore(path=store.path, url=store.url, collection_name=store.collection_name)


def _drop_chroma_collections(stores: list[VectorStore]) -> None:
    from memkit.stores.chroma import ChromaStore

    for name in {s.collection_name for s in stores if isinstance(s, ChromaStore) and s.url}:
        assert isinstance(stores[0], ChromaStore)
        with contextlib.suppress(Exception):  # never opened
            stores[0].client.delete_collection(name)


def _lancedb(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.lancedb import LanceDBStore

    return LanceDBStore(os.fspath(tmp.mktemp("lancedb")), collection_name=name)


def _reopen_lancedb(store: VectorStore) -> VectorStore:
    from memkit.stores.lancedb import LanceDBStore

    assert isinstance(store, LanceDBStore)
    return LanceDBStore(store.path, collection_name=store.collection_name)


def _faiss(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.faiss import FaissStore

    return FaissStore(os.fspath(tmp.mktemp("faiss")), collection_name=name)


def _reopen_faiss(store: VectorStore) -> VectorStore:
    from memkit.stores.faiss import FaissStore

    assert isinstance(store, FaissStore)
    return FaissStore(store.path, collection_name=store.collection_name)


def _redis(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.redis import RedisStore
    from tests.conftest import engine_address, unique_name

    return RedisStore(engine_address("MEMKIT_TEST_REDIS_URL"),
                      collection_name=unique_name(f"{name}-{uuid.uuid4().hex[:8]}"))


def _reopen_redis(store: VectorStore) -> VectorStore:
    from memkit.stores.redis import RedisStore

    assert isinstance(store, RedisStore)
    return RedisStore(store.url, collection_name=store.collection_name)


def _milvus(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    from memkit.stores.milvus import MilvusStore

    # One Milvus Lite file (so one embedded server, ~2-4 s to start) for the whole run;
    # each store gets its own collection, dropped at teardown.
    uri = os.fspath(tmp.getbasetemp() / "milvus-lite.db")
    return MilvusStore(uri, collection_name=f"{name}_{uuid.uuid4().hex[:12]}")


def _reopen_milvus(store: VectorStore) -> VectorStore:
    from memkit.stores.milvus import MilvusStore

    assert isinstance(store, MilvusStore)
    return MilvusStore(store.uri, collection_name=store.collection_name)


def _drop_milvus_collections(stores: list[VectorStore]) -> None:
    from memkit.stores.milvus import MilvusStore

    milvus = [s for s in stores if isinstance(s, MilvusStore)]
    if milvus:
        from pymilvus import MilvusClient

        client = MilvusClient(uri=milvus[0].uri, grpc_options={  # as MilvusStore: no pings
            "grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": False})
        for name in {s.collection_name for s in milvus}:
            client.drop_collection(name)
        client.close()


FACTORIES: dict[str, StoreFactory] = {
    "memory": StoreFactory(_memory),
    "qdrant-local": StoreFactory(_qdrant_local),
    "chroma-embedded": StoreFactory(_chroma_embedded, reopen=_reopen_chroma),
    "chroma-server": StoreFactory(_chroma_server, reopen=_reopen_chroma),
    "sqlite": StoreFactory(_sqlite, reopen=_reopen_sqlite),
    "pgvector": StoreFactory(_pgvector, reopen=_reopen_pgvector),
    "lancedb": StoreFactory(_lancedb, reopen=_reopen_lancedb),
    "milvus": StoreFactory(_milvus, reopen=_reopen_milvus),
    "faiss": StoreFactory(_faiss, reopen=_reopen_faiss),
    "redis": StoreFactory(_redis, reopen=_reopen_redis),
}


@dataclass
class Stores:
    """Makes (and at teardown closes) stores of one backend for one test."""

    name: str
    factory: StoreFactory
    tmp: pytest.TempPathFactory
    made: list[VectorStore] = field(default_factory=list)

    def __call__(self, collection: str = "contract") -> VectorStore:
        return self._keep(self.factory(self.tmp, collection))

    @property
    def persistent(self) -> bool:
        return self.factory.persistent

    def reopen(self, store: VectorStore) -> VectorStore:
        """A new handle on ``store``'s collection (close ``store`` first)."""
        assert self.factory.reopen is not None, f"{self.name} does not persist"
        return self._keep(self.factory.reopen(store))

    def _keep(self, store: VectorStore) -> VectorStore:
        self.made.append(store)
        return store


@pytest.fixture(params=sorted(FACTORIES))
def store_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stores]:
    stores = Stores(request.param, FACTORIES[request.param], tmp_path_factory)
    yield stores
    _drop_chroma_collections(stores.made)
    for store in stores.made:
        store.close()
    _drop_milvus_collections(stores.made)
