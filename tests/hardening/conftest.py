"""The hardening suite runs through ``Memory`` and ``AsyncMemory`` (the pipeline suite's
``make_memory``), over the in-memory store (the reference evaluator) and SQLite; a test
that asks for the ``every_store`` fixture runs over every registered store instead.
REST tests use the server suite's ``client`` (a real uvicorn server)."""

from __future__ import annotations

import pytest

from tests.pipeline.conftest import make_memory, shell  # noqa: F401
from tests.server.conftest import base_url, client  # noqa: F401
from tests.stores.conftest import FACTORIES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_name" in metafunc.fixturenames:
        names = FACTORIES if "every_store" in metafunc.fixturenames else ("memory", "sqlite")
        metafunc.parametrize("store_name", sorted(names))


@pytest.fixture
def every_store() -> None:
    """Marks a test that runs over every store (see pytest_generate_tests)."""
