"""The REST API: FastAPI handlers over :class:`~memkit.AsyncMemory`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

import memkit
from memkit._errors import (
    EmbeddingError,
    FilterError,
    LLMError,
    MemkitError,
    NotFoundError,
    ScopeError,
    VectorStoreError,
)
from memkit._memory import AsyncMemory
from memkit._models import AddResult, HistoryRecord, MemoryItem, SearchResult
from memkit.server._auth import (
    LOCAL_GRANT,
    Grant,
    ScopeForbidden,
    find_grant,
    is_loopback,
    load_keys,
    scope_for,
)
from memkit.server._events import Broadcaster, ChangeEvent
from memkit.server._limits import BodySizeLimit
from memkit.server._schemas import (
    AddBody,
    Deleted,
    ErrorBody,
    MemoryPage,
    SearchBody,
    SearchMode,
    UpdateBody,
)

_ERROR_TYPES: list[tuple[type[Exception], int, str]] = [
    (NotFoundError, 404, "not_found"),
    (ScopeError, 400, "scope_error"),
    (FilterError, 400, "filter_error"),
    (LLMError, 502, "llm_error"),
    (EmbeddingError, 502, "embedding_error"),
    (VectorStoreError, 503, "store_error"),
    (MemkitError, 400, "invalid_request"),
]
_HTTP_TYPES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               413: "payload_too_large", 422: "validation_error"}
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": kind}
    for code, kind in ((400, "invalid request"), (401, "missing or unknown API key"),
                       (403, "outside the key's scope"), (413, "body too large"),
                       (422, "malformed body or parameters"))
}


class AuthError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": {"type": kind, "message": message}}, status, headers=headers)


def _memkit_error(exc: MemkitError) -> JSONResponse:
    for cls, status, kind in _ERROR_TYPES:
        if isinstance(exc, cls):
            return error_response(status, kind, str(exc))
    raise AssertionError("unreachable")  # pragma: no cover


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemkitError)
    async def on_memkit(_: Request, exc: MemkitError) -> JSONResponse:
        return _memkit_error(exc)

    @app.exception_handler(ScopeForbidden)
    async def on_forbidden(_: Request, exc: ScopeForbidden) -> JSONResponse:
        return error_response(403, "forbidden", str(exc))

    @app.exception_handler(AuthError)
    async def on_auth(_: Request, exc: AuthError) -> JSONResponse:
        return error_response(exc.status, _HTTP_TYPES[exc.status], str(exc))

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "validation_error", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, _HTTP_TYPES.get(exc.status_code, "http_error"),
                              str(exc.detail))

    @app.exception_handler(Exception)
    async def on_crash(_: Request, exc: Exception) -> JSONResponse:
        return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")


def _filters_param(raw: str | None) -> dict[str, Any] | None:
    """The ``filters`` query parameter: a JSON object."""
    if raw is None or raw == "":
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FilterError(f"filters must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise FilterError("filters must be a JSON object")
    return value


def _item_scope(item: MemoryItem | HistoryRecord) -> dict[str, str | None]:
    return {"user_id": item.user_id, "agent_id": item.agent_id, "run_id": item.run_id}


_bearer = HTTPBearer(auto_error=False)


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Grant:
    """The grant of the request's bearer key (401 without a known one)."""
    keys: dict[str, Grant] = request.app.state.api_keys
    if not keys:
        client = request.client.host if request.client else None
        if not is_loopback(client):
            raise AuthError(401, "this server has no API keys configured and only "
                                 "accepts requests from its own machine")
        return LOCAL_GRANT
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise AuthError(401, "missing API key: send 'Authorization: Bearer <key>'")
    grant = find_grant(keys, credentials.credentials)
    if grant is None:
        raise AuthError(401, "unknown API key")
    return grant


Auth = Annotated[Grant, Depends(authenticate)]


def create_app(
    memory: AsyncMemory | None = None,
    *,
    api_keys: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    max_body_bytes: int = 1_000_000,
) -> FastAPI:
    """The REST API over ``memory`` (or an ``AsyncMemory`` built from ``config``).

    Keys come from ``api_keys``, else ``config["server"]["api_keys"]``, else the
    ``MEMKIT_API_KEYS`` environment variable (JSON). With no key configured anywhere,
    the API accepts only clients on the loopback interface, each with full rights.
    """
    keys = load_keys(api_keys, config)
    owned = memory is None
    if memory is None:
        memory_config = {k: v for k, v in (config or {}).items() if k not in ("server", "mcp")}
        memory = AsyncMemory(memory_config)
    mem = memory
    feed = Broadcaster()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            feed.close()
            if owned:
                await mem.aclose()

    app = FastAPI(
        title="memkit", version=memkit.__version__, lifespan=lifespan,
        description="Long-term memory for AI agents. Every endpoint but /health takes "
                    "`Authorization: Bearer <key>`; a key bound to a scope only sees that scope.",
    )
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    _install_error_handlers(app)
    app.state.memory = mem
    app.state.events = feed
    app.state.api_keys = keys

    async def visible(grant: Grant, memory_id: str) -> MemoryItem:
        item = await mem.get(memory_id)
        if item is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        if not grant.can_see(_item_scope(item)):
            raise ScopeForbidden("this memory is outside the API key's scope")
        return item

    router = APIRouter(prefix="/v1", responses=_ERROR_RESPONSES)

    @router.post("/memories/", response_model=AddResult, summary="Add memories")
    async def add_memories(body: AddBody, grant: Auth) -> AddResult:
        """Remember a conversation; with ``infer`` the LLM curates it into facts."""
        scope = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
        messages: Any = (body.messages if isinstance(body.messages, str)
                         else [m.model_dump(exclude_none=True) for m in body.messages])
        result = await mem.add(messages, **scope, metadata=body.metadata, infer=body.infer,
                               timestamp=body.timestamp, prompt=body.prompt, filters=body.filters)
        events = []
        for ev in result.results:
            if ev.event == "ADD":
                events.append(ChangeEvent.of("memory_created", ev.id, scope, memory=ev.memory))
            elif ev.event == "UPDATE":
                item = await mem.get(ev.id)
                where = _item_scope(item) if item else scope
                events.append(ChangeEvent.of("memory_updated", ev.id, where, memory=ev.memory))
            elif ev.event == "DELETE":
                rows = await mem.history(ev.id)
                where = _item_scope(rows[-1]) if rows else scope
                events.append(ChangeEvent.of("memory_deleted", ev.id, where))
        feed.publish(events)
        return result

    @router.get("/memories/", response_model=MemoryPage, summary="List a scope's memories")
    async def list_memories(
        grant: Auth,
        user_id: Annotated[str | None, Query(min_length=1)] = None,
        agent_id: Annotated[str | None, Query(min_length=1)] = None,
        run_id: Annotated[str | None, Query(min_length=1)] = None,
        filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> MemoryPage:
        """Newest first, ``limit`` at a time from ``offset``."""
        scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
        found = await mem.get_all(**scope, filters=_filters_param(filters),
                                  limit=offset + limit + 1)
        page = found.results[offset:offset + limit]
        more = len(found.results) > offset + limit
        return MemoryPage(results=page, offset=offset, limit=limit,
                          next_offset=offset + limit if more else None)

    @router.delete("/memories/", response_model=Deleted, summary="Delete a scope's memories")
    async def delete_all_memories(
        grant: Auth,
        user_id: Annotated[str | None, Query(min_length=1)] = None,
        agent_id: Annotated[str | None, Query(min_length=1)] = None,
        run_id: Annotated[str | None, Query(min_length=1)] = None,
        filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
    ) -> Deleted:
        scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
        parsed = _filters_param(filters)
        doomed = (await mem.get_all(**scope, filters=parsed, limit=10**9)).results
        count = await mem.delete_all(**scope, filters=parsed)
        feed.publish(ChangeEvent.of("memory_deleted", m.id, _item_scope(m)) for m in doomed)
        return Deleted(deleted=count)

    @router.get("/memories/search/", response_model=SearchResult, summary="Search (query string)")
    async def search_get(
        grant: Auth,
        q: Annotated[str, Query(description="What to look for")],
        user_id: Annotated[str | None, Query(min_length=1)] = None,
        agent_id: Annotated[str | None, Query(min_length=1)] = None,
        run_id: Annotated[str | None, Query(min_length=1)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
        threshold: Annotated[float | None, Query(ge=0, le=1)] = None,
        mode: SearchMode | None = None,
        filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
    ) -> SearchResult:
        body = SearchBody(query=q, user_id=user_id, agent_id=agent_id, run_id=run_id,
                          limit=limit, threshold=threshold, mode=mode,
                          filters=_filters_param(filters))
        return await search_post(body, grant)

    @router.post("/memories/search/", response_model=SearchResult, summary="Search (with filters)")
    async def search_post(body: SearchBody, grant: Auth) -> SearchResult:
        """The scope's memories most relevant to ``query``, best first."""
        scope: dict[str, Any] = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
        return await mem.search(body.query, **scope, limit=body.limit, filters=body.filters,
                                threshold=body.threshold, mode=body.mode)

    @router.get("/memories/{memory_id}/", response_model=MemoryItem, summary="Get a memory")
    async def get_memory(memory_id: str, grant: Auth) -> MemoryItem:
        return await visible(grant, memory_id)

    @router.put("/memories/{memory_id}/", response_model=MemoryItem, summary="Update a memory")
    async def update_memory(memory_id: str, body: UpdateBody, grant: Auth) -> MemoryItem:
        await visible(grant, memory_id)
        item = await mem.update(memory_id, body.text, metadata=body.metadata)
        feed.publish([ChangeEvent.of("memory_updated", item.id, _item_scope(item),
                                  memory=item.memory)])
        return item

    @router.delete("/memories/{memory_id}/", response_model=Deleted, summary="Delete a memory")
    async def delete_memory(memory_id: str, grant: Auth) -> Deleted:
        item = await visible(grant, memory_id)
        await mem.delete(memory_id)
        feed.publish([ChangeEvent.of("memory_deleted", item.id, _item_scope(item))])
        return Deleted(deleted=1)

    @router.get("/memories/{memory_id}/history/", response_model=list[HistoryRecord],
                summary="A memory's history")
    async def memory_history(memory_id: str, grant: Auth) -> list[HistoryRecord]:
        """Every change, oldest first; still readable after the memory is deleted."""
        rows = await mem.history(memory_id)
        item = await mem.get(memory_id)
        scope = _item_scope(item) if item else (_item_scope(rows[-1]) if rows else None)
        if scope is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        if not grant.can_see(scope):
            raise ScopeForbidden("this memory is outside the API key's scope")
        return rows

    @router.post("/reset/", summary="Delete every memory and all history (admin keys only)")
    async def reset(grant: Auth) -> dict[str, bool]:
        if not grant.admin:
            raise ScopeForbidden("only an admin API key may reset the store")
        await mem.reset()
        return {"reset": True}

    @router.get("/events", summary="Change feed (Server-Sent Events)",
                response_class=StreamingResponse,
                responses={200: {"content": {"text/event-stream": {}},
                                 "description": "memory_created / memory_updated / "
                                                "memory_deleted events"}})
    async def events(
        grant: Auth,
        user_id: Annotated[str | None, Query(min_length=1)] = None,
        agent_id: Annotated[str | None, Query(min_length=1)] = None,
        run_id: Annotated[str | None, Query(min_length=1)] = None,
    ) -> StreamingResponse:
        """Each change the key may see (optionally narrowed to a scope), as it happens."""
        scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
        narrow = {k: v for k, v in scope.items() if v is not None}
        return StreamingResponse(feed.stream(grant, narrow), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    app.include_router(router)

    @app.get("/health", summary="Liveness (no key needed)")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": memkit.__version__}

    return app
