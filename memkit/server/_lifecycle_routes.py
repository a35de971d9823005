"""The lifecycle endpoints: statistics, consolidation, feedback and the search log, bound
to the API key's scope like memories; the graph repair, for admin keys."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from memkit import ConsolidationResult, DeleteResult, MemoryStats, SearchLogEntry
from memkit.server._auth import ScopeForbidden, scope_for
from memkit.server._errors import ERROR_RESPONSES
from memkit.server._routes import Auth, Mem, filters_param, visible
from memkit.server._schemas import RequestBody

lifecycle_router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES, tags=["lifecycle"])
Id = Annotated[str | None, Query(min_length=1)]


class ConsolidateBody(RequestBody):
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)
    threshold: float | None = Field(None, gt=0, le=1, description="Cosine similarity of "
                                    "near-duplicates (default: the server's configuration).")
    dry_run: bool = Field(True, description="Only report the clusters (the default).")
    filters: dict[str, Any] | None = None


class PruneBody(RequestBody):
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)
    below: float = Field(0.05, ge=0, le=1, description="Forget memories whose confidence "
                         "(decayed, when decay is on) is below this.")
    dry_run: bool = Field(True, description="Only report them (the default).")
    filters: dict[str, Any] | None = None


class FeedbackBody(RequestBody):
    useful: bool


class FeedbackAck(RequestBody):
    id: str
    useful: bool


class RepairAck(RequestBody):
    repaired: int = Field(description="How many changes' owed graph work was written.")


@lifecycle_router.get("/stats/", response_model=MemoryStats, summary="Statistics of a scope")
async def stats(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                run_id: Id = None,
                filters: Annotated[str | None, Query(description="A filter as a JSON object")]
                = None) -> MemoryStats:
    """Counts by type and state, growth per day, the confidence histogram, the most
    accessed memories and, with a graph store, the top entities."""
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await mem.stats(**scope, filters=filters_param(filters))


@lifecycle_router.post("/consolidate/", response_model=ConsolidationResult,
                       summary="Merge near-duplicate memories")
async def consolidate(body: ConsolidateBody, grant: Auth, mem: Mem) -> ConsolidationResult:
    """Clusters of near-duplicates per scope, each merged into its most confident member
    (``dry_run``, the default, only reports them); a ``consolidation_complete`` event per
    scope follows a merge."""
    scope: dict[str, Any] = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id,
                                      run_id=body.run_id)
    return await mem.consolidate(**scope, threshold=body.threshold, dry_run=body.dry_run,
                                 filters=body.filters)


@lifecycle_router.post("/prune/", response_model=DeleteResult,
                       summary="Forget memories of low confidence")
async def prune(body: PruneBody, grant: Auth, mem: Mem) -> DeleteResult:
    """Memories whose confidence is below ``below`` end as a delete ends them (``dry_run``,
    the default, only lists them); a ``memory_deleted`` event follows each."""
    scope: dict[str, Any] = scope_for(grant, user_id=body.user_id, agent_id=body.agent_id,
                                      run_id=body.run_id)
    return await mem.prune(body.below, dry_run=body.dry_run, filters=body.filters, **scope)


@lifecycle_router.post("/repair/", response_model=RepairAck,
                       summary="Write the graph work a graph outage left owed (admin keys only)")
async def repair(grant: Auth, mem: Mem) -> RepairAck:
    """The relations that changes committed while the graph store failed still owe the
    graph, in every scope (the server does it every minute by itself, and the next change
    does it first)."""
    if not grant.admin:
        raise ScopeForbidden("only an admin API key may repair (it works across scopes)")
    return RepairAck(repaired=await mem.repair())


@lifecycle_router.post("/memories/{memory_id}/feedback/", response_model=FeedbackAck,
                       summary="Say whether a memory was useful")
async def feedback(memory_id: str, body: FeedbackBody, grant: Auth, mem: Mem) -> FeedbackAck:
    """Useful reinforces the memory as a search hit does; not useful lowers its confidence."""
    await visible(mem, grant, memory_id)
    await mem.feedback(memory_id, useful=body.useful)
    return FeedbackAck(id=memory_id, useful=body.useful)


@lifecycle_router.get("/searches/", response_model=list[SearchLogEntry],
                      summary="The search log of a scope")
async def search_log(grant: Auth, mem: Mem, user_id: Id = None, agent_id: Id = None,
                     run_id: Id = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[SearchLogEntry]:
    """The newest logged searches (empty unless the server logs searches)."""
    scope = scope_for(grant, user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await mem.search_log(**scope, limit=limit)
