"""The REST app: FastAPI over :class:`~memkit.AsyncMemory` (routes in memkit.server._routes)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

import memkit
from memkit import AsyncMemory
from memkit.server._auth import load_keys
from memkit.server._errors import install_error_handlers
from memkit.server._events import Streams
from memkit.server._graph_routes import graph_router, relations_router
from memkit.server._lifecycle_routes import lifecycle_router
from memkit.server._limits import BodySizeLimit, BrowserGuard
from memkit.server._notes_routes import notes_router
from memkit.server._routes import router
from memkit.server._schedule import Schedule, Scheduler


def create_app(
    memory: AsyncMemory | None = None,
    *,
    api_keys: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    max_body_bytes: int = 1_000_000,
    schedule: Schedule | Mapping[str, Any] | None = None,
) -> FastAPI:
    """The REST API over ``memory`` (or an ``AsyncMemory`` built from ``config``).

    Keys come from ``api_keys``, else ``config["server"]["api_keys"]``, else the
    ``MEMKIT_API_KEYS`` environment variable (JSON). With no key configured anywhere,
    the API accepts only clients on the loopback interface, each with full rights.
    ``schedule`` (else ``config["server"]["schedule"]``) prunes and consolidates every so
    often while the app runs (memkit.server._schedule; docs/server.md).
    """
    keys = load_keys(api_keys, config)
    if schedule is None:
        server = (config or {}).get("server") or {}
        schedule = server.get("schedule") if isinstance(server, Mapping) else None
    upkeep = Schedule.of(schedule)
    owned = memory is None
    if memory is None:
        memory_config = {k: v for k, v in (config or {}).items() if k not in ("server", "mcp")}
        memory = AsyncMemory(memory_config)
    mem = memory
    feed = Streams()
    scheduler = Scheduler(upkeep, mem)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        scheduler.start()
        try:
            yield
        finally:
            await scheduler.stop()
            feed.close()
            if owned:
                await mem.aclose()

    app = FastAPI(
        title="memkit", version=memkit.__version__, lifespan=lifespan,
        description="Long-term memory for AI agents. Every endpoint but /health takes "
                    "`Authorization: Bearer <key>`; a key bound to a scope only sees that scope.",
    )
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.add_middleware(BrowserGuard, keys=keys)
    install_error_handlers(app)
    app.state.memory = mem
    app.state.events = feed
    app.state.api_keys = keys
    app.state.scheduler = scheduler

    app.include_router(router)
    app.include_router(graph_router)
    app.include_router(relations_router)
    app.include_router(lifecycle_router)
    app.include_router(notes_router)

    instance = uuid.uuid4().hex[:12]

    @app.get("/health", summary="Liveness (no key needed)")
    async def health() -> dict[str, str]:
        """``instance`` names this server process (new at each start): with ``--workers``,
        which worker answered."""
        return {"status": "ok", "version": memkit.__version__, "instance": instance}

    return app
