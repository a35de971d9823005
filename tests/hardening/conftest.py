"""The hardening suite runs through ``Memory`` and ``AsyncMemory`` (the pipeline suite's
``make_memory``), over the in-memory store (the reference evaluator) and SQLite; a test
marked ``every_store`` runs over every registered store instead (tests/conftest.py).
REST tests use the server suite's ``client`` (a real uvicorn server)."""

from __future__ import annotations

from tests.pipeline.conftest import make_memory, shell  # noqa: F401
from tests.server.conftest import base_url, client  # noqa: F401
