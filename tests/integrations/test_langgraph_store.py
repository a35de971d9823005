"""LangGraph's own store tests, run against ``MemkitStore``.

They test the adapter (namespaces, keys, values, LangGraph's filter and search semantics
mapped onto memkit's public API), so they run on one backend per filter translation: the
in-process store, SQLite's SQL and PostgreSQL's SQL. That every backend gives the same
answers to the same calls is the store contract and filter congruence suites' job
(tests/stores/), which run on every backend; running this suite on all ten cost ~2 min of CI.

The tests are not copied here: the source distribution of the installed
``langgraph-checkpoint`` is fetched from the package index (pip's cache answers after
the first time) and its ``tests/test_store.py`` runs in a child pytest, where
``_langgraph_plugin`` makes its ``InMemoryStore(...)`` a ``MemkitStore`` over the
backend under test.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.stores.conftest import FACTORIES

pytest.importorskip("langgraph.store.base", reason="pip install 'memkit-ai[langgraph]'")
pytest.importorskip("pytest_mock", reason="LangGraph's store tests use pytest-mock")

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "langgraph-checkpoint"


@pytest.fixture(scope="session")
def langgraph_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LangGraph's store tests from the sdist of the installed langgraph-checkpoint."""
    version = importlib.metadata.version(DISTRIBUTION)
    downloads = tmp_path_factory.mktemp("langgraph-sdist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
         "--no-deps", "--no-binary", ":all:", f"{DISTRIBUTION}=={version}",
         "-d", os.fspath(downloads)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (archive,) = downloads.glob("*.tar.gz")
    suite = tmp_path_factory.mktemp("langgraph-suite")
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = Path(member.name)
            if name.parent.name == "tests" and name.name in ("test_store.py", "embed_test_utils.py"):
                (suite / name.name).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    assert (suite / "test_store.py").is_file(), f"no tests/test_store.py in {archive.name}"
    (suite / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n"
                                      "asyncio_default_fixture_loop_scope = function\n")
    return suite


BACKENDS = ("memory", "sqlite", "pgvector")
assert set(BACKENDS) <= set(FACTORIES)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow
def test_langgraph_store_suite(backend: str, langgraph_suite: Path) -> None:
    env = {**os.environ, "MEMKIT_LANGGRAPH_BACKEND": backend,
           "MEMKIT_LANGGRAPH_SUITE": os.fspath(langgraph_suite),
           "PYTHONPATH": os.pathsep.join([os.fspath(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "tests.integrations._langgraph_plugin", "--import-mode=importlib",
         "-c", os.fspath(langgraph_suite / "pytest.ini"), "--rootdir", os.fspath(langgraph_suite),
         os.fspath(langgraph_suite / "test_store.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 100, summary
