"""The REST API's routes, at module level; the app (memkit.server._app) supplies the
memory and the change feed through ``app.state``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memkit import (
    AddResult,
    AsyncMemory,
    FilterError,
    HistoryRecord,
    InvalidArgument,
    MemoryEvent,
    MemoryItem,
    NotFoundError,
    SearchResult,
    StaleVersionError,
)
from memkit._net import is_loopback
from memkit.server._auth import LOCAL_GRANT, Grant, ScopeForbidden, find_grant, scope_for
from memkit.server._errors import ERROR_RESPONSES, PRECONDITION_RESPONSE, AuthError
from memkit.server._events import Streams
from memkit.server._schemas import (
    ENTITY_FILTER,
    AddBody,
    Deleted,
    MemoryPage,
    SearchBody,
    SearchMode,
    SupersedeBody,
    UpdateBody,
)

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)


def filters_param(raw: str | None) -> dict[str, Any] | None:
    """The ``filters`` query parameter: a JSON object."""
    if raw is None or raw == "":
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to decode
        raise FilterError(f"filters must be a JSON object: {exc}"[:300]) from None
    if not isinstance(value, dict):
        raise FilterError("filters must be a JSON object")
    return value


def item_scope(item: MemoryItem | MemoryEvent | HistoryRecord) -> dict[str, str | None]:
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


# async, as FastAPI runs a plain function dependency in its threadpool: a thread hop a request
async def _memory(request: Request) -> AsyncMemory:
    memory: AsyncMemory = request.app.state.memory
    return memory


async def _feed(request: Request) -> Streams:
    feed: Streams = request.app.state.events
    return feed


Mem = Annotated[AsyncMemory, Depends(_memory)]
Feed = Annotated[Streams, Depends(_feed)]


async def visible(mem: AsyncMemory, grant: Grant, memory_id: str,
                  reinforce: bool = False) -> MemoryItem:
    """The current memory ``memory_id`` if the key may see it; a route's own check reads it
    without reinforcing it (only a caller's read is a use)."""
    item = await mem.get(memory_id, reinforce=reinforce)
    if item is None:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    if not grant.can_see(item_scope(item)):
        raise ScopeForbidden("this memory is outside the API key's scope")
    return item


async def in_chain(mem: AsyncMemory, grant: Grant, memory_id: str) -> MemoryItem:
    """The version ``memory_id`` names, valid now or not (past, deleted, expired)."""
    found = next((v for v in await mem.versions(memory_id) if v.id == memory_id), None)
    if found is None:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    if not grant.can_see(item_scope(found)):
        raise ScopeForbidden("this memory is outside the API key's scope")
    return found


@router.post("/memories/", response_model=AddResult, summary="Add memories")
async def add_memories(body: AddBody, grant: Auth, mem: Mem) -> AddResult:
    """Remember a conversation; with ``infer`` the LLM curates it into facts."""
    scope: dict[str, Any] = scope_for(
        grant, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
    messages: Any = (body.messages if isinstance(body.messages, str)
                     else [m.model_dump(exclude_none=True) for m in body.messages])
    return await mem.add(messages, user_id=scope["user_id"], agent_id=scope["agent_id"],
                         run_id=scope["run_id"], metadata=body.metadata, infer=body.infer,
                         timestamp=body.timestamp, prompt=body.prompt, filters=body.filters,
                         on_error=body.on_error, expires_at=body.expires_at,
                         dry_run=body.dry_run, memory_type=body.memory_type,
                         importance=body.importance, confidence=body.confidence,
                         surface=body.surface, entities=body.entities)


@router.get("/memories/", response_model=MemoryPage, summary="List a scope's memories")
async def list_memories(
    grant: Auth, mem: Mem,
    user_id: Annotated[str | None, Query(min_length=1)] = None,
    agent_id: Annotated[str | None, Query(min_length=1)] = None,
    run_id: Annotated[str | None, Query(min_length=1)] = None,
    filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    as_of: Annotated[datetime | None, Query(description="What was valid then")] = None,
    include_expired: bool = False,
    surface: Annotated[Literal["startup"] | None, Query(
        description="Only the memories marked for the startup briefing")] = None,
    entity: Annotated[str | None, Query(min_length=1, description=ENTITY_FILTER)] = None,
) -> MemoryPage:
    """Newest first, ``limit`` at a time from ``offset``; valid now unless ``as_of``."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    found = await mem.get_all(**scope, filters=filters_param(filters), limit=limit + 1,
                              offset=offset, as_of=as_of, include_expired=include_expired,
                              surface=surface, entity=entity)
    page = found.results[:limit]
    more = len(found.results) > limit
    return MemoryPage(results=page, offset=offset, limit=limit,
                      next_offset=offset + limit if more else None)


@router.delete("/memories/", response_model=Deleted, summary="Delete a scope's memories")
async def delete_all_memories(
    grant: Auth, mem: Mem,
    user_id: Annotated[str | None, Query(min_length=1)] = None,
    agent_id: Annotated[str | None, Query(min_length=1)] = None,
    run_id: Annotated[str | None, Query(min_length=1)] = None,
    filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
    purge: Annotated[bool, Query(description="Remove every record for good (past versions "
                                             "and deleted memories too)")] = False,
    actor_id: Annotated[str | None, Query(min_length=1, description=(
        "With purge: who asked, kept on the history's audit rows"))] = None,
) -> Deleted:
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    parsed = filters_param(filters)
    if purge:
        return Deleted(deleted=await mem.purge(**scope, filters=parsed, actor_id=actor_id))
    deleted = await mem.delete_all(**scope, filters=parsed)
    return Deleted(deleted=deleted.count)


@router.get("/memories/search/", response_model=SearchResult, summary="Search (query string)")
async def search_get(
    grant: Auth, mem: Mem,
    q: Annotated[str | None, Query(description="What to look for")] = None,
    query: Annotated[str | None, Query(description="The same as q (the POST body's name)")] = None,
    user_id: Annotated[str | None, Query(min_length=1)] = None,
    agent_id: Annotated[str | None, Query(min_length=1)] = None,
    run_id: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=100_000, description="Skip this many results "
                                 "(the next page: offset + limit)")] = 0,
    threshold: Annotated[float | None, Query(ge=0, le=1)] = None,
    min_confidence: Annotated[float | None, Query(ge=0, le=1)] = None,
    mode: SearchMode | None = None,
    filters: Annotated[str | None, Query(description="A filter as a JSON object")] = None,
    as_of: Annotated[datetime | None, Query(description="What was valid then")] = None,
    include_expired: bool = False,
    graph: Annotated[bool | None, Query(description="Graph expansion (default: on with a "
                                                    "graph store)")] = None,
    rerank: Annotated[bool, Query(description="Reorder with the configured reranker")] = False,
    entity: Annotated[str | None, Query(min_length=1, description=ENTITY_FILTER)] = None,
) -> SearchResult:
    text = q if q is not None else query
    if text is None or (q is not None and query is not None):
        raise InvalidArgument("give the query as q or as query (one of them)")
    body = SearchBody(query=text, user_id=user_id, agent_id=agent_id, run_id=run_id,
                      limit=limit, offset=offset, threshold=threshold,
                      min_confidence=min_confidence, mode=mode,
                      filters=filters_param(filters), as_of=as_of,
                      include_expired=include_expired, graph=graph, rerank=rerank,
                      entity=entity)
    return await search_post(body, grant, mem)


@router.post("/memories/search/", response_model=SearchResult, summary="Search (with filters)")
async def search_post(body: SearchBody, grant: Auth, mem: Mem) -> SearchResult:
    """The scope's memories most relevant to ``query``, best first; with ``scopes``, those of
    several scopes, each within the key's scope (a key bound to a field forces it in)."""
    given = {"user_id": body.user_id, "agent_id": body.agent_id, "run_id": body.run_id}
    scope: dict[str, Any] = scope_for(grant, **given)
    scopes = None
    if body.scopes is not None:
        scopes = [scope_for(grant, **s.model_dump()) for s in body.scopes]
        scope = given  # the call's own scope fields must be empty (400 otherwise)
    return await mem.search(body.query, **scope, limit=body.limit, offset=body.offset,
                            filters=body.filters,
                            threshold=body.threshold, min_confidence=body.min_confidence,
                            mode=body.mode, as_of=body.as_of,
                            include_expired=body.include_expired, graph=body.graph,
                            rerank=body.rerank, entity=body.entity,
                            scopes=scopes)


def etag(item: MemoryItem) -> str:
    """The memory's version as an entity tag: its ``updated_at`` as the JSON shows it, quoted
    (a client that listed the memory can send ``If-Match`` without reading it again)."""
    return f'"{item.model_dump(mode="json", include={"updated_at"})["updated_at"]}"'


def required_version(if_match: str | None, current: MemoryItem) -> datetime | None:
    """The ``updated_at`` an update must still find, from ``If-Match`` (None: any; ``*``
    asks only that the memory exists). StaleVersionError (412) if no tag names the
    current version (strong comparison: a weak tag never matches)."""
    if if_match is None or if_match.strip() == "*":
        return None
    if etag(current) not in [tag.strip() for tag in if_match.split(",")]:
        raise StaleVersionError(f"memory {current.id} changed since the version in If-Match "
                                f"(its ETag is now {etag(current)}); nothing was changed")
    return current.updated_at


_VERSIONED: dict[int | str, dict[str, Any]] = {200: {"headers": {"ETag": {
    "description": "This version of the memory (for If-Match)", "schema": {"type": "string"}}}}}


@router.get("/memories/{memory_id}/", response_model=MemoryItem, summary="Get a memory",
            responses=_VERSIONED)
async def get_memory(
    memory_id: str, grant: Auth, mem: Mem, response: Response,
    reinforce: Annotated[bool, Query(description=(
        "Count the read as a use (with reinforcement on); false only looks")),
    ] = True,
) -> MemoryItem:
    """The ``ETag`` header names this version; send it back as ``If-Match`` to update it
    only if nobody changed it since."""
    item = await visible(mem, grant, memory_id, reinforce)
    response.headers["ETag"] = etag(item)
    return item


@router.put("/memories/{memory_id}/", response_model=MemoryItem, summary="Update a memory",
            responses={**_VERSIONED, **PRECONDITION_RESPONSE})
async def update_memory(
    memory_id: str, body: UpdateBody, grant: Auth, mem: Mem, response: Response,
    if_match: Annotated[str | None, Header(description=(
        "The ETag of the version you edited: 412 if the memory changed since"))] = None,
) -> MemoryItem:
    expected = required_version(if_match, await visible(mem, grant, memory_id))
    item = await mem.update(memory_id, body.text, metadata=body.metadata,
                            expires_at=body.expires_at, memory_type=body.memory_type,
                            importance=body.importance, confidence=body.confidence,
                            surface=body.surface,
                            if_updated_at=expected)
    response.headers["ETag"] = etag(item)
    return item


@router.delete("/memories/{memory_id}/", response_model=Deleted, summary="Delete a memory")
async def delete_memory(
    memory_id: str, grant: Auth, mem: Mem,
    hard: Annotated[bool, Query(description="Remove it and its past versions for good")] = False,
    actor_id: Annotated[str | None, Query(min_length=1, description=(
        "Who deleted it, kept on the history row"))] = None,
) -> Deleted:
    """Ends the memory's validity (``as_of`` reads still see it); ``hard`` removes it and
    its past versions, also once it is no longer valid (deleted, expired or replaced)."""
    await (in_chain(mem, grant, memory_id) if hard else visible(mem, grant, memory_id))
    await mem.delete(memory_id, hard=hard, actor_id=actor_id)
    return Deleted(deleted=1)


@router.get("/memories/{memory_id}/history/", response_model=list[HistoryRecord],
            summary="A memory's history")
async def memory_history(memory_id: str, grant: Auth, mem: Mem) -> list[HistoryRecord]:
    """Every change, oldest first; still readable after the memory is deleted."""
    rows = await mem.history(memory_id)
    item = await mem.get(memory_id, reinforce=False)
    scope = item_scope(item) if item else (item_scope(rows[-1]) if rows else None)
    if scope is None:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    if not grant.can_see(scope):
        raise ScopeForbidden("this memory is outside the API key's scope")
    return rows

@router.post("/memories/{memory_id}/supersede/", response_model=MemoryItem,
             summary="Replace a memory by a new one")
async def supersede_memory(memory_id: str, body: SupersedeBody, grant: Auth,
                           mem: Mem) -> MemoryItem:
    """A new memory (new id) replaces this one, which stays as a past version; 409 if this
    version was already superseded."""
    await in_chain(mem, grant, memory_id)  # a superseded version is 409, not 404
    return await mem.supersede(memory_id, body.text, metadata=body.metadata,
                               expires_at=body.expires_at)

@router.get("/memories/{memory_id}/versions/", response_model=list[MemoryItem],
            summary="A memory's version chain")
async def memory_versions(memory_id: str, grant: Auth, mem: Mem) -> list[MemoryItem]:
    """Past versions and the current one, oldest first (from any version's id)."""
    chain = await mem.versions(memory_id)
    if not chain:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    if not grant.can_see(item_scope(chain[-1])):
        raise ScopeForbidden("this memory is outside the API key's scope")
    return chain

@router.post("/memories/{memory_id}/history/{event_id}/revert/", response_model=HistoryRecord,
             summary="Undo one change")
async def revert_event(memory_id: str, event_id: str, grant: Auth,
                       mem: Mem) -> HistoryRecord:
    """Undo one ADD, UPDATE or DELETE of the memory's history; 409 if it was already
    reverted or the memory changed since."""
    rows = await mem.history(memory_id)
    if not any(r.id == event_id for r in rows):
        raise NotFoundError(f"memory {memory_id!r} has no event {event_id!r}")
    if not grant.can_see(item_scope(rows[-1])):
        raise ScopeForbidden("this memory is outside the API key's scope")
    return await mem.revert(event_id)

@router.post("/reset/", summary="Delete every memory and all history (admin keys only)")
async def reset(grant: Auth, mem: Mem) -> dict[str, bool]:
    if not grant.admin:
        raise ScopeForbidden("only an admin API key may reset the store")
    await mem.reset()
    return {"reset": True}


@router.get("/events", summary="Change feed (Server-Sent Events)",
            response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "memory_created / memory_updated / "
                                            "memory_deleted / consolidation_complete / "
                                            "entity_created events"}})
async def events(
    grant: Auth, mem: Mem, feed: Feed,
    user_id: Annotated[str | None, Query(min_length=1)] = None,
    agent_id: Annotated[str | None, Query(min_length=1)] = None,
    run_id: Annotated[str | None, Query(min_length=1)] = None,
    last_event_id: Annotated[str | None, Header(description=(
        "Resume after this event (the `id` of the last event received)"))] = None,
) -> StreamingResponse:
    """Each change the key may see (optionally narrowed to a scope), made through any
    server process or by any other process on the same memory, in commit order; with
    ``Last-Event-ID``, from the change after that one."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    narrow = {k: v for k, v in scope.items() if v is not None}
    if last_event_id is not None:
        await mem.changes(last_event_id, limit=1, **narrow)  # a bad id is a 400 before the stream
    return StreamingResponse(feed.stream(mem, grant, narrow, last_event_id),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
