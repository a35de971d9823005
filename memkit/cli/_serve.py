"""``memkit serve``: the REST API and the dashboard, in one process or in N workers on one port.

With ``--workers N`` uvicorn starts N processes that share the listening socket; each
builds its own app (:func:`worker_app`) from the configuration the parent resolved,
handed down in an environment variable, so flags, the config file and the API keys mean
the same in every worker.
"""

from __future__ import annotations

import gc
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from memkit._errors import ConfigError

if TYPE_CHECKING:
    from fastapi import FastAPI

#: the resolved configuration and log level, for the workers (never read from a user's shell)
WORKER_ENV = "MEMKIT_SERVE_WORKER"
#: stores whose data lives in one process: N workers would be N separate memories
IN_PROCESS_STORES = frozenset({"memory"})
#: seconds a stopping server waits for open requests; a change feed (the dashboard's live
#: view, any SSE client) never ends by itself, so without it Ctrl-C would wait for the client
SHUTDOWN_GRACE = 3


def build_app(config: dict[str, Any]) -> FastAPI:
    """The REST API with the dashboard at ``/ui/``."""
    from memkit.server import create_app
    from memkit.ui import mount_ui

    app = create_app(config=config)
    mount_ui(app)
    # What start-up built (modules, routes, schemas, the memory) lives as long as the
    # server: kept out of the collector's sight, a full collection under load walks only
    # what requests made, a shorter pause of the event loop (docs/benchmarks.md, section 10)
    gc.collect()
    gc.freeze()
    return app


def worker_app() -> FastAPI:
    """One worker's app (uvicorn's ``factory``), from what :func:`serve_workers` handed down."""
    handed = json.loads(os.environ[WORKER_ENV])
    if handed["log_level"] != "WARNING":
        logging.basicConfig(level=handed["log_level"],
                            format="%(levelname)s %(name)s: %(message)s")
    return build_app(handed["config"])


def shared_store_problem(config: dict[str, Any]) -> str | None:
    """Why ``config``'s memory cannot be shared by several workers, or ``None``."""
    section = config.get("vector_store") or {}
    provider = section if isinstance(section, str) else section.get("provider", "sqlite")
    if provider in IN_PROCESS_STORES:
        return (f"the {provider!r} store lives in one process, so each worker would hold a "
                "memory of its own; use a store several processes share (sqlite, pgvector, "
                "a Qdrant, Chroma or Milvus server, ...) or --workers 1")
    return None


def logs_requests(config: dict[str, Any], flag: bool | None, verbose: int) -> bool:
    """Whether the server logs a line per request: ``--access-log`` / ``--no-access-log``,
    else the config's ``server.access_log``, else only with ``-v``. Off by default, as a
    line per request costs the server's one event loop about a tenth of its CPU."""
    if flag is not None:
        return flag
    server = config.get("server") or {}
    configured = server.get("access_log") if isinstance(server, dict) else None
    if configured is None:
        return verbose > 0
    if not isinstance(configured, bool):
        raise ConfigError(f"server.access_log must be true or false, not {configured!r}")
    return configured


def serve_workers(config: dict[str, Any], *, host: str, port: int, workers: int,
                  log_level: str, uvicorn_log_level: str, access_log: bool) -> None:
    """Run ``workers`` processes of the app on ``host:port`` until interrupted."""
    import uvicorn

    os.environ[WORKER_ENV] = json.dumps({"config": config, "log_level": log_level})
    uvicorn.run("memkit.cli._serve:worker_app", factory=True, host=host, port=port,
                workers=workers, log_level=uvicorn_log_level, access_log=access_log,
                timeout_graceful_shutdown=SHUTDOWN_GRACE)
