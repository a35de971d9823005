"""``memkit consolidate``, ``memkit prune`` and ``memkit repair``: the upkeep of the memory."""

from __future__ import annotations

from typing import Annotated

import typer

from memkit.cli._common import (
    AgentOpt,
    FiltersOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    emit,
    json_arg,
    open_memory,
    table,
)


def consolidate(
    ctx: typer.Context,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    run_id: RunOpt = None,
    threshold: Annotated[float | None, typer.Option(
        "--threshold", "-t", help="Cosine similarity of near-duplicates (default: config, 0.9).",
    )] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run/--apply", help="Only report the clusters (the default), or merge them.",
    )] = True,
    filters: FiltersOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Merge near-duplicate memories, per scope (every scope without -u/-a/-r)."""
    with open_memory(ctx) as memory:
        report = memory.consolidate(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                    threshold=threshold, dry_run=dry_run,
                                    filters=json_arg(filters, "--filters"))

    def render() -> None:
        verb = "would merge" if report.dry_run else "merged"
        print(f"{len(report.clusters)} clusters among {report.examined} memories; "
              f"{verb} {report.merged}")
        rows = [{"keeper": c.keeper.memory, "id": c.keeper.id, "merged": len(c.merged),
                 "merged texts": " | ".join(i.memory for i in c.merged)}
                for c in report.clusters]
        if rows:
            table(rows, ["id", "keeper", "merged", "merged texts"])

    emit(report.model_dump(mode="json"), as_json, render)


def prune(
    ctx: typer.Context,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    below: Annotated[float, typer.Option(
        min=0, max=1, help="Forget memories whose confidence is below this.")] = 0.05,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run/--apply", help="Only list them (the default), or forget them.")] = True,
    filters: FiltersOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget memories of low confidence (decayed, with lifecycle.decay on), per scope (every
    scope without -u/-a/-r); each ends as a delete ends it."""
    with open_memory(ctx) as memory:
        report = memory.prune(below, dry_run=dry_run, user_id=user_id, agent_id=agent_id,
                              run_id=run_id, filters=json_arg(filters, "--filters"))
    data = report.model_dump(mode="json")

    def render() -> None:
        verb = "would forget" if dry_run else "forgot"
        print(f"{verb} {report.count}")
        if data["results"]:
            table(data["results"], ["id", "memory"])

    emit(data, as_json, render)


def repair(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Write to the graph what changes left owed when the graph store failed after their
    memories were stored (every scope). The next change does it too, and memkit serve
    every minute."""
    with open_memory(ctx) as memory:
        repaired = memory.repair()
    emit({"repaired": repaired}, as_json,
         lambda: print(f"wrote the owed graph work of {repaired} changes"))
