"""Tasks, the startup briefing and folder indexing: ``/v1/tasks/``, ``/v1/startup/``,
``/v1/index/``, bound to the API key's scope like memories."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from memkit import IndexResult, MemoryItem, SearchResult, StartupContext
from memkit.server._auth import ScopeForbidden, scope_for
from memkit.server._errors import ERROR_RESPONSES
from memkit.server._routes import Auth, Mem, visible
from memkit.server._schemas import RequestBody

notes_router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES, tags=["notes and tasks"])
Id = Annotated[str | None, Query(min_length=1)]
Status = Literal["open", "in_progress", "done", "cancelled"]


class TaskBody(RequestBody):
    status: Status = Field(description="The task's new status.")


class IndexBody(RequestBody):
    path: str = Field(min_length=1, description="A folder of markdown notes on the server.")
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)
    max_file_bytes: int = Field(100_000, ge=1, le=10_000_000,
                                description="Larger files are skipped (and reported).")


@notes_router.get("/tasks/", response_model=SearchResult, summary="List a scope's tasks")
async def list_tasks(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                     run_id: Id = None, status: Status | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> SearchResult:
    """Memories of type ``task`` (with ``status``: only those), newest first."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    wanted: dict[str, Any] = {"memory_type": "task"}
    if status is not None:
        wanted["status"] = status
    return await mem.get_all(**scope, filters=wanted, limit=limit)


@notes_router.put("/tasks/{memory_id}/", response_model=MemoryItem, summary="Set a task's status")
async def update_task(memory_id: str, body: TaskBody, grant: Auth, mem: Mem) -> MemoryItem:
    await visible(mem, grant, memory_id)
    return await mem.update_task(memory_id, status=body.status)


@notes_router.get("/startup/", response_model=StartupContext,
                  summary="The startup briefing of a scope")
async def startup(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                  run_id: Id = None,
                  budget_tokens: Annotated[int, Query(ge=1, le=100_000)] = 1000) -> StartupContext:
    """Open tasks, memories marked ``surface="startup"`` and the most important ones, within
    ``budget_tokens``."""
    scope: dict[str, Any] = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await mem.startup_context(**scope, budget_tokens=budget_tokens)


@notes_router.post("/index/", response_model=IndexResult,
                   summary="Index a folder of markdown notes (admin keys only)")
async def index_folder(body: IndexBody, grant: Auth, mem: Mem) -> IndexResult:
    """The folder is read on the server's machine, so only an admin key may index one."""
    if not grant.admin:
        raise ScopeForbidden("only an admin API key may index a folder of the server")
    scope: dict[str, Any] = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id,
                                      run_id=body.run_id)
    return await mem.index_folder(body.path, **scope, max_file_bytes=body.max_file_bytes)
