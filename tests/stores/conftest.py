"""Store factories for the contract suite.

Every store backend registers one factory here; ``store`` is parametrised
over all of them, so tests/stores/test_contract.py runs against each engine.
A factory returns a fresh, empty, not-yet-opened store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from memkit.stores.base import VectorStore
from memkit.stores.memory import InMemoryStore

StoreFactory = Callable[[pytest.TempPathFactory, str], VectorStore]


def _memory(tmp: pytest.TempPathFactory, name: str) -> VectorStore:
    return InMemoryStore(collection_name=name)


FACTORIES: dict[str, StoreFactory] = {
    "memory": _memory,
}


@pytest.fixture(params=sorted(FACTORIES))
def store_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], VectorStore]]:
    made: list[VectorStore] = []

    def make(name: str = "contract") -> VectorStore:
        store = FACTORIES[request.param](tmp_path_factory, name)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
