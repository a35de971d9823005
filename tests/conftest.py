"""Shared fixtures: where the real engines are, and the test tiers.

``bash scripts/test.sh`` starts PostgreSQL (with pgvector) and a Chroma server
and exports their addresses. Run pytest on its own and the tests that need an
engine skip, with the reason; in CI (``CI=true``) they fail instead, so a
missing engine is never mistaken for a green run.

Tiers (markers registered in pyproject.toml): a test that asks for
``store_name`` runs over the two embedded stores (memory, SQLite) unless it is
marked ``every_store`` (store semantics: dedup, concurrency, versions,
re-embed, purge), which runs it over every registered store. Every test case
that needs an engine or a store library beyond those two is marked ``engine``
here, from its parameters; ``bash scripts/test.sh --fast`` runs
``-m "not engine and not slow"`` and starts no engine.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

ENGINES = {
    "MEMKIT_TEST_PG_DSN": "scripts/test.sh starts PostgreSQL",
    "MEMKIT_TEST_CHROMA_URL": "scripts/test.sh starts a Chroma server",
    "MEMKIT_TEST_QDRANT_URL": "point it at a Qdrant server; none can be installed here",
    "MEMKIT_TEST_BOLT_URL": "scripts/test.sh starts a Bolt server (FalkorDB)",
    "MEMKIT_TEST_REDIS_URL": "scripts/test.sh starts Redis with its search module",
    "MEMKIT_TEST_NEO4J_URL": "point it at a Neo4j 5 server (bolt://...) for the tests that"
    " need real transactions; none can be installed here",
}
_NOT_IN_CI = frozenset({"MEMKIT_TEST_QDRANT_URL", "MEMKIT_TEST_NEO4J_URL"})

#: the stores the fast tier runs on, and every test asking for ``store_name`` by default
EMBEDDED_STORES = ("memory", "sqlite")
#: graph backends (tests/graph) that need an engine
_ENGINE_GRAPHS = frozenset({"postgres", "pgvector-postgres", "bolt", "neo4j"})
#: graph backends on a Bolt server (tests/graph)
_BOLT_GRAPHS = frozenset({"bolt", "neo4j"})
#: the fixtures below that give an engine's address
#: ``browser`` (tests/ui): Chromium, which scripts/engines.sh installs like an engine
_ENGINE_FIXTURES = frozenset({"pg_dsn", "chroma_url", "qdrant_url", "redis_url", "browser"})


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def engine_address(variable: str) -> str:
    """The engine address in ``variable``, or skip (fail in CI) saying how to set it.

    Qdrant and Neo4j have no server here, so their tests skip even in CI.
    """
    value = os.environ.get(variable)
    if value:
        return value
    reason = f"set {variable} ({ENGINES[variable]})"
    if in_ci() and variable not in _NOT_IN_CI:
        pytest.fail(f"{reason}: CI runs every engine; run the tests with bash scripts/test.sh")
    pytest.skip(reason)


def unique_name(prefix: str) -> str:
    """A table/collection name of at most 40 characters, unique to the running test."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "")
    digest = hashlib.sha1(f"{test}\0{os.getpid()}".encode()).hexdigest()[:10]
    return f"{prefix[:29]}_{digest}"


@pytest.fixture
def pg_dsn() -> str:
    return engine_address("MEMKIT_TEST_PG_DSN")


@pytest.fixture
def chroma_url() -> str:
    return engine_address("MEMKIT_TEST_CHROMA_URL")


@pytest.fixture
def redis_url() -> str:
    return engine_address("MEMKIT_TEST_REDIS_URL")


@pytest.fixture
def qdrant_url() -> str:
    return engine_address("MEMKIT_TEST_QDRANT_URL")


@pytest.fixture(autouse=True, scope="session")
def _no_real_model_requests() -> Iterator[None]:
    """The suite never calls a real provider: litellm requests off this machine raise."""
    from memkit.testing import block_real_requests

    with block_real_requests():
        yield


@pytest.fixture(autouse=True, scope="session")
def _patient_http_clients() -> Iterator[None]:
    """httpx gives up after 5 s by default. The suite runs in two processes beside its
    engines, and on a loaded machine a local server can take longer to answer: every httpx
    client the tests make without a timeout of their own waits up to a minute instead (a
    hang guard, never a timing claim)."""
    from httpx import _config

    default = _config.DEFAULT_TIMEOUT_CONFIG  # the default every httpx client and call shares
    saved = (default.connect, default.read, default.write, default.pool)
    default.connect = default.read = default.write = default.pool = 60.0
    yield
    default.connect, default.read, default.write, default.pool = saved


_STORE_FILES = {"test_sqlite_store.py": "sqlite", "test_pgvector.py": "pgvector",
                "test_qdrant.py": "qdrant-local", "test_chroma.py": "chroma"}
_per_store: dict[str, dict[str, int]] = {}


def _store_of(nodeid: str) -> str | None:
    from tests.stores.conftest import FACTORIES

    path, _, rest = nodeid.partition("::")
    params = rest.partition("[")[2]
    for name in sorted(FACTORIES, key=len, reverse=True):
        if re.search(rf"(?:^|-){re.escape(name)}(?:-|\]|$)", params):
            return name
    return _STORE_FILES.get(path.rsplit("/", 1)[-1])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``store_name``: the embedded stores, or every registered store for ``every_store`` tests."""
    if "store_name" not in metafunc.fixturenames or any(
        "store_name" in _argnames(mark) for mark in metafunc.definition.iter_markers("parametrize")
    ):
        return
    from tests.stores.conftest import FACTORIES

    every = metafunc.definition.get_closest_marker("every_store") is not None
    metafunc.parametrize("store_name", sorted(FACTORIES) if every else EMBEDDED_STORES)


def _argnames(mark: pytest.Mark) -> list[str]:
    names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def _engine_names() -> frozenset[str]:
    from tests.stores.conftest import FACTORIES

    return frozenset(FACTORIES).difference(EMBEDDED_STORES) | _ENGINE_GRAPHS


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``engine`` every case that asks for an engine's address or is parametrised with a
    store or graph beyond the embedded ones, and groups the cases that must share one process
    when the suite runs in several (scripts/test.sh: ``pytest -n 2 --dist loadgroup``)."""
    engines = _engine_names()
    for item in items:
        params = getattr(item, "callspec", None)
        values = params.params.values() if params is not None else ()
        if _ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ())) or any(
            isinstance(v, str) and v in engines for v in values
        ):
            item.add_marker(pytest.mark.engine)
        group = _process_group(item, values)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _process_group(item: pytest.Item, values: Any) -> str | None:
    """The Bolt server's cases run in one process: that server stalls every new connection
    after a driver closes one gracefully (tests/graph/conftest.py), which a second process
    ending would do. A module whose fixtures outlive one case (a served app, a loaded store,
    a browser) runs in one process, which sets them up once."""
    if "bolt_drivers" in getattr(item, "fixturenames", ()) and any(
        v in _BOLT_GRAPHS for v in values if isinstance(v, str)
    ):
        return "bolt-server"
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope in ("module", "package") for defs in definitions for d in defs):
        return item.nodeid.partition("::")[0]
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        store = _store_of(report.nodeid)
        if store is not None:
            counts = _per_store.setdefault(store, {})
            counts[report.outcome] = counts.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _per_store:
        return
    terminalreporter.section("tests per vector store")
    for store in sorted(_per_store):
        counts = _per_store[store]
        line = ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "skipped") if k in counts)
        terminalreporter.write_line(f"{store:<16} {line}")
