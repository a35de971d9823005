"""The ``memkit`` command. Heavy modules are imported inside the commands that need them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from memkit import MemkitError
from memkit._net import is_loopback
from memkit.cli._common import (
    AgentOpt,
    AsOfOpt,
    ConfidenceOpt,
    EntityOpt,
    ExpiredOpt,
    ExpiresOpt,
    FiltersOpt,
    ImportanceOpt,
    JsonOpt,
    LimitOpt,
    MetadataOpt,
    RunOpt,
    SurfaceOpt,
    TypeOpt,
    UserOpt,
    emit,
    fail,
    json_arg,
    open_memory,
    resolve_id,
    settings_of,
    table,
    with_hint,
)
from memkit.cli._config import Settings, memory_config
from memkit.stores import store_names

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="memkit", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Long-term memory for AI agents: add, search and manage memories; serve them over "
         "REST or MCP. Configure with --config FILE, MEMKIT_CONFIG, or the flags below.",
)
@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[str | None, typer.Option(
        "--config", "-c", help="Config file (JSON or YAML). Default: $MEMKIT_CONFIG.")] = None,
    store: Annotated[str | None, typer.Option(
        help=f"Vector store provider: {store_names()}.")] = None,
    path: Annotated[str | None, typer.Option(help="The sqlite store's file.")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedder provider: local, e5, litellm.")
                        ] = None,
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", help="Any litellm model string, e.g. ollama/llama3.1.")] = None,
    verbose: Annotated[int, typer.Option(
        "--verbose", "-v", count=True,
        help="Log to stderr: -v memkit's and its libraries' INFO lines, -vv DEBUG.")] = 0,
) -> None:
    ctx.obj = Settings(config, store, path, embedder, llm_model, verbose)
    if verbose:
        import logging

        logging.basicConfig(level=ctx.obj.log_level, format="%(levelname)s %(name)s: %(message)s")


@app.command()
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What to remember.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    metadata: MetadataOpt = None,
    infer: Annotated[bool, typer.Option(
        "--infer/--no-infer", help="Let the LLM curate facts, or store the text verbatim.")
                     ] = True,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show the decided operations; store nothing.")] = False,
    expires_at: ExpiresOpt = None,
    timestamp: Annotated[str | None, typer.Option(
        help="When it was said (ISO 8601; default: now).")] = None,
    memory_type: TypeOpt = None, importance: ImportanceOpt = None,
    confidence: ConfidenceOpt = None, surface: SurfaceOpt = None,
    filters: Annotated[str | None, typer.Option(
        "--filters", "-f", help="JSON: which memories the LLM may update or delete.")] = None,
    prompt: Annotated[str | None, typer.Option(help="Replaces the extraction prompt.")] = None,
    on_error: Annotated[str | None, typer.Option(
        help="raise, or degrade: report model failures and store what it can.")] = None,
    entities: Annotated[list[str] | None, typer.Option(
        "--entity", "-e", help="An entity (name or id) the text is about; repeat for more "
        "(needs a graph store).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a text (with --infer, the LLM extracts and reconciles facts)."""
    from rich.console import Console

    waiting = Console(stderr=True).status("the model is reading the text…") if infer and not as_json else None
    with open_memory(ctx) as memory:
        if waiting is not None:
            waiting.start()
        try:
            result = memory.add(text, user_id=user_id, agent_id=agent_id, run_id=run_id,
                                metadata=json_arg(metadata, "--metadata"), infer=infer,
                                dry_run=dry_run, expires_at=expires_at, timestamp=timestamp,
                                memory_type=memory_type, importance=importance,
                                confidence=confidence, surface=surface,
                                filters=json_arg(filters, "--filters"),
                                prompt=prompt, on_error=on_error,  # type: ignore[arg-type]
                                entities=entities)
        finally:
            if waiting is not None:
                waiting.stop()
    data = result.model_dump(mode="json")
    emit(data, as_json, lambda: table(data["results"], ["event", "id", "memory"]))
    for error in result.errors:
        print(f"skipped ({error.stage}): {error.message}", file=sys.stderr)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    limit: LimitOpt = 10,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many results (the next page: "
                                                    "--offset plus --limit).")] = 0,
    filters: FiltersOpt = None,
    threshold: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    mode: Annotated[str | None, typer.Option(help="hybrid, vector or keyword.")] = None,
    as_of: AsOfOpt = None, include_expired: ExpiredOpt = False,
    min_confidence: Annotated[float | None, typer.Option(
        min=0, max=1, help="Drop memories of lower confidence.")] = None,
    graph: Annotated[bool | None, typer.Option(
        "--graph/--no-graph", help="Graph expansion (default: on with a graph store).")] = None,
    rerank: Annotated[bool, typer.Option(help="Reorder with the configured reranker.")
                      ] = False,
    entity: EntityOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The memories of a scope most relevant to a query."""
    with open_memory(ctx) as memory:
        result = memory.search(query, user_id=user_id, agent_id=agent_id, run_id=run_id,
                               limit=limit, offset=offset,
                               filters=json_arg(filters, "--filters"),
                               threshold=threshold, mode=mode,  # type: ignore[arg-type]
                               as_of=as_of, include_expired=include_expired,
                               min_confidence=min_confidence, graph=graph, rerank=rerank,
                               entity=entity)
    data = result.model_dump(mode="json")
    rows = [{**row, "location": item.location} for row, item in zip(data["results"], result,
                                                                     strict=True)]
    where = ["location"] if any(item.location for item in result) else []
    emit(data, as_json, lambda: table(rows, ["score", "id", "memory", *where]))


@app.command()
def get(
    ctx: typer.Context, memory_id: Annotated[str, typer.Argument(metavar="ID")],
    reinforce: Annotated[bool, typer.Option(
        "--reinforce/--no-reinforce",
        help="Count the read as a use (with reinforcement on); --no-reinforce only looks.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """One memory by id (or a unique prefix of it)."""
    with open_memory(ctx) as memory:
        item = memory.get(resolve_id(memory, memory_id), reinforce=reinforce)
    if item is None:
        fail(f"no memory with id {memory_id!r}")
    data = item.model_dump(mode="json", exclude={"score"})
    emit(data, as_json, lambda: table([{"field": k, "value": v} for k, v in data.items()],
                                        ["field", "value"]))


@app.command("list")
def list_(
    ctx: typer.Context,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    limit: LimitOpt = 100, filters: FiltersOpt = None, as_of: AsOfOpt = None,
    include_expired: ExpiredOpt = False, surface: SurfaceOpt = None,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many (the next page: --offset "
                                                    "plus --limit).")] = 0,
    entity: EntityOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A scope's memories valid now (or --as-of then), newest first."""
    with open_memory(ctx) as memory:
        result = memory.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                filters=json_arg(filters, "--filters"), limit=limit,
                                as_of=as_of, include_expired=include_expired, surface=surface,
                                offset=offset, entity=entity)
    data = result.model_dump(mode="json")
    emit(data, as_json, lambda: table(data["results"], ["id", "memory", "updated_at"]))


@app.command()
def update(
    ctx: typer.Context, memory_id: Annotated[str, typer.Argument(metavar="ID")],
    text: Annotated[str | None, typer.Argument(
        help="The new text (leave out to change only the options' fields).")] = None,
    metadata: Annotated[str | None, typer.Option("--metadata", "-m", help="JSON, merged.")
                        ] = None,
    expires_at: ExpiresOpt = None, memory_type: TypeOpt = None,
    importance: ImportanceOpt = None, confidence: ConfidenceOpt = None,
    surface: SurfaceOpt = None,
    if_updated_at: Annotated[str | None, typer.Option(
        "--if-updated-at", help="The updated_at you read: fail, changing nothing, if the "
                                "memory changed since.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a memory's text, or set its fields (ID: the id or a unique prefix of it)."""
    with open_memory(ctx) as memory:
        item = memory.update(resolve_id(memory, memory_id), text,
                             metadata=json_arg(metadata, "--metadata"), expires_at=expires_at,
                             memory_type=memory_type, importance=importance,
                             confidence=confidence, surface=surface,
                             if_updated_at=if_updated_at)
    data = item.model_dump(mode="json", exclude={"score"})
    emit(data, as_json, lambda: print(f"updated {data['id']}: {data['memory']}"))


@app.command()
def delete(
    ctx: typer.Context,
    memory_id: Annotated[str | None, typer.Argument(metavar="[ID]")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Delete every memory of the scope.")
                    ] = False,
    hard: Annotated[bool, typer.Option(
        "--hard", help="Remove for good, past versions too (with --all: purge the scope).")
                    ] = False,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    filters: FiltersOpt = None,
    actor_id: Annotated[str | None, typer.Option(
        "--actor-id", help="Who deletes (kept on the history rows; with --all, only for --hard).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete one memory by id (or a unique prefix), or with --all every memory of a scope.
    A delete ends validity (--as-of reads still see it); --hard removes for good."""
    if (memory_id is None) == (not all_):
        fail("give either an ID or --all with a scope")
    with open_memory(ctx) as memory:
        if memory_id is not None:
            memory.delete(resolve_id(memory, memory_id), hard=hard, actor_id=actor_id)
            count = 1
        elif hard:
            count = memory.purge(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                 filters=json_arg(filters, "--filters"), actor_id=actor_id)
        else:
            count = memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                      filters=json_arg(filters, "--filters")).count
    emit({"deleted": count}, as_json, lambda: print(f"deleted {count}"))


@app.command()
def history(
    ctx: typer.Context, memory_id: Annotated[str, typer.Argument(metavar="ID")],
    as_json: JsonOpt = False,
) -> None:
    """Every change to a memory, oldest first (ID: the id or a unique prefix of it)."""
    with open_memory(ctx) as memory:
        records = memory.history(memory_id)
        if not records:
            records = memory.history(resolve_id(memory, memory_id))
        rows = [r.model_dump(mode="json") for r in records]
    emit(rows, as_json, lambda: table(
        rows, ["id", "timestamp", "event", "old_value", "new_value", "reverts"]))


@app.command()
def versions(
    ctx: typer.Context, memory_id: Annotated[str, typer.Argument(metavar="ID")],
    as_json: JsonOpt = False,
) -> None:
    """A memory's version chain, oldest first, with when each version was valid."""
    with open_memory(ctx) as memory:
        chain = memory.versions(memory_id) or memory.versions(resolve_id(memory, memory_id))
        rows = [v.model_dump(mode="json", exclude={"score"}) for v in chain]
    if not rows:
        fail(f"no memory with id {memory_id!r}")
    emit(rows, as_json, lambda: table(rows, ["id", "valid_from", "valid_to", "memory"]))


@app.command()
def supersede(
    ctx: typer.Context, memory_id: Annotated[str, typer.Argument(metavar="ID")],
    text: Annotated[str, typer.Argument(help="The text that replaces it.")],
    metadata: MetadataOpt = None, expires_at: ExpiresOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a memory by a new one (new id); the old one stays as a past version."""
    with open_memory(ctx) as memory:
        item = memory.supersede(resolve_id(memory, memory_id), text,
                                metadata=json_arg(metadata, "--metadata"),
                                expires_at=expires_at)
    data = item.model_dump(mode="json", exclude={"score"})
    emit(data, as_json, lambda: print(f"superseded {memory_id} by {data['id']}: {data['memory']}"))


@app.command()
def revert(
    ctx: typer.Context, event_id: Annotated[str, typer.Argument(metavar="EVENT_ID")],
    as_json: JsonOpt = False,
) -> None:
    """Undo one ADD, UPDATE or DELETE (an event id from `memkit history`)."""
    with open_memory(ctx) as memory:
        undo = memory.revert(event_id)
    data = undo.model_dump(mode="json")
    emit(data, as_json, lambda: print(f"reverted {event_id} ({undo.event} {undo.memory_id})"))


@app.command()
def export(
    ctx: typer.Context,
    output: Annotated[Path | None, typer.Argument(help="JSONL file (default: stdout).")
                      ] = None,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    filters: FiltersOpt = None,
) -> None:
    """Write every memory (or a scope's) with its history, one JSON object per line."""
    with open_memory(ctx) as memory:
        exported = memory.export(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                 filters=json_arg(filters, "--filters"))
    lines = (json.dumps(m.model_dump(mode="json"), ensure_ascii=False) + "\n" for m in exported)
    if output is None:
        sys.stdout.writelines(lines)
        return
    with output.open("w", encoding="utf-8") as out:
        out.writelines(lines)
    print(f"exported {len(exported)} memories to {output}", file=sys.stderr)


@app.command("import")
def import_(
    ctx: typer.Context,
    source: Annotated[Path | None, typer.Argument(
        exists=True, dir_okay=False, help="A memkit JSONL export or a mem0 get_all JSON.")] = None,
    from_mem0: Annotated[Path | None, typer.Option(
        "--from-mem0", exists=True, dir_okay=False,
        help="Read a mem0 1.0.x store itself: this JSON file is its mem0 config (vector_store,"
             " history_db_path).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="With --from-mem0: report what would be imported, write nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Load an export, or a mem0 store, keeping ids, timestamps and history (existing ids are
    skipped)."""
    from rich.console import Console
    from rich.progress import Progress

    from memkit.cli._transfer import import_from_mem0, parse_export

    if (source is None) == (from_mem0 is None):
        fail("give an export file, or --from-mem0 with a mem0 config file (not both)")
    if from_mem0 is not None:
        with open_memory(ctx) as memory:
            try:
                report = import_from_mem0(memory, from_mem0, dry_run)
            except (MemkitError, ImportError) as exc:
                fail(str(exc))
    else:
        if dry_run:
            fail("--dry-run goes with --from-mem0")
        assert source is not None
        rows, errors = parse_export(source.read_text(encoding="utf-8"))
        with open_memory(ctx) as memory, Progress(console=Console(stderr=True),
                                              disable=as_json) as progress:
            task = progress.add_task("importing", total=len(rows))

            def counted() -> Iterator[dict[str, Any]]:
                for row in rows:
                    yield row
                    progress.advance(task)

            report = memory.import_(counted())
        report.errors[:0] = errors
    data = report.model_dump(mode="json")

    def render() -> None:
        verb = "would import" if dry_run else "imported"
        print(f"{verb} {report.imported}, skipped {report.skipped}")
        for error in report.errors:
            print(f"  {error}", file=sys.stderr)

    emit(data, as_json, render)
    if report.errors:
        raise typer.Exit(1)


@app.command()
def stats(ctx: typer.Context, user_id: UserOpt = None, agent_id: AgentOpt = None,
          run_id: RunOpt = None, filters: FiltersOpt = None, as_json: JsonOpt = False) -> None:
    """Memories by type and state, growth per day, a confidence histogram, the most accessed
    memories and top entities, of a scope (every scope without -u/-a/-r)."""
    from memkit.cli._stats import render_stats

    with open_memory(ctx) as memory:
        report = memory.stats(user_id=user_id, agent_id=agent_id, run_id=run_id,
                              filters=json_arg(filters, "--filters"))
        data = {**report.model_dump(mode="json"), "store": memory.config.vector_store.provider,
                "embedder": memory.embedder.model_name}
    emit(data, as_json, lambda: render_stats(data))


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    workers: Annotated[int, typer.Option(
        min=1, help="Processes serving the one port (each with the same config and keys).")] = 1,
    allow_unauthenticated: Annotated[bool, typer.Option(
        help="Allow a non-loopback host with no API keys (the API then still refuses "
             "non-loopback clients).")] = False,
    prune_every: Annotated[str | None, typer.Option(
        help="Prune every scope this often (90s, 30m, 1h, 1d); over server.schedule.")] = None,
    prune_below: Annotated[float | None, typer.Option(
        min=0, max=1, help="What a scheduled prune forgets: confidence below this (0.05).")] = None,
    consolidate_every: Annotated[str | None, typer.Option(
        help="Merge near-duplicates in every scope this often (90s, 30m, 1h, 1d).")] = None,
    repair_every: Annotated[str | None, typer.Option(
        help="Write the graph work a graph outage left owed this often (default 1m; off).")
    ] = None,
    access_log: Annotated[bool | None, typer.Option(
        help="Log a line per request to stderr; over server.access_log (default: on with -v).")
    ] = None,
) -> None:
    """Serve the REST API (extra: server). Keys: config server.api_keys or MEMKIT_API_KEYS.
    Upkeep on a schedule: --prune-every / --consolidate-every / --repair-every, or
    server.schedule."""
    try:
        import uvicorn

        from memkit.cli._serve import (
            SHUTDOWN_GRACE,
            build_app,
            logs_requests,
            serve_workers,
            shared_store_problem,
        )
        from memkit.server import load_keys
    except ImportError as exc:
        fail(with_hint(exc, "server"))
    settings = settings_of(ctx)
    config = settings.resolve()
    given = {"prune_every": prune_every, "prune_below": prune_below,
             "consolidate_every": consolidate_every, "repair_every": repair_every}
    if any(v is not None for v in given.values()):
        server = config.setdefault("server", {})
        if not isinstance(server, dict):
            fail("the config's server section must be a mapping")
        server["schedule"] = {**(server.get("schedule") or {}),
                              **{k: v for k, v in given.items() if v is not None}}
    try:
        keys = load_keys(None, config)
        if not keys and not is_loopback(host) and not allow_unauthenticated:
            fail(f"no API keys are configured, so the server only listens on loopback; "
                 f"set MEMKIT_API_KEYS (or server.api_keys in the config) to serve on {host}",
                 code=2)
        problem = shared_store_problem(config) if workers > 1 else None
        if workers > 1 and _scheduled(config):
            problem = ("a schedule (server.schedule, --prune-every, --consolidate-every) runs "
                       "in one process: serve it from a separate memkit serve --workers 1")
        if problem:
            fail(f"--workers {workers}: {problem}", code=2)
        access_log = logs_requests(config, access_log, settings.verbose)
        app_ = build_app(config)  # in the parent too: a bad config fails once, here
    except (MemkitError, ImportError) as exc:
        fail(str(exc))
    print(f"memkit: the dashboard is at http://{_netloc(host, port)}/ui/", flush=True)
    uvicorn_level = "debug" if settings.verbose > 1 else "info"
    if workers == 1:
        uvicorn.run(app_, host=host, port=port, log_level=uvicorn_level,
                    access_log=access_log, timeout_graceful_shutdown=SHUTDOWN_GRACE)
        return
    import asyncio

    asyncio.run(app_.state.memory.aclose())
    serve_workers(config, host=host, port=port, workers=workers, log_level=settings.log_level,
                  uvicorn_log_level=uvicorn_level, access_log=access_log)


def _scheduled(config: dict[str, Any]) -> bool:
    server = config.get("server")
    schedule = server.get("schedule") if isinstance(server, dict) else None
    return isinstance(schedule, dict) and any(
        schedule.get(k) is not None for k in ("prune_every", "consolidate_every"))


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _stdio_in_a_terminal() -> None:
    """Someone ran ``memkit mcp`` by hand: say what it waits for, and let Ctrl-C stop it at
    once (the stdio reader blocks in a thread that would otherwise hold the exit until Enter).
    The handler is in place before the message, so a Ctrl-C right after it is not missed."""
    import os
    import signal

    def stop(_signum: int, _frame: object) -> None:
        sys.stderr.write("\nmemkit MCP server: stopped.\n")
        sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, stop)
    sys.stderr.write("memkit MCP server: waiting for an MCP client on stdio. An MCP client (Claude "
                     "Desktop, an IDE) starts this command itself; see docs/mcp.md. Press Ctrl-C to stop.\n")
    sys.stderr.flush()


@app.command()
def mcp(
    ctx: typer.Context,
    transport: Annotated[Literal["stdio", "http"], typer.Option(
        help="stdio (for desktop clients) or http (streamable HTTP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP interface.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8766,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
) -> None:
    """Serve memkit's tools over MCP (extra: mcp). Default scope: the flags, else
    MEMKIT_USER_ID / MEMKIT_AGENT_ID / MEMKIT_RUN_ID."""
    try:
        from memkit.mcp import create_server, default_scope
    except ImportError as exc:
        fail(with_hint(exc, "mcp"))
    from memkit import AsyncMemory

    if transport == "http" and not is_loopback(host):
        fail("the MCP HTTP transport has no authentication; serve it on loopback only", code=2)
    env = default_scope()
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    defaults = {k: given[k] or env[k] for k in given}
    try:
        memory = AsyncMemory(memory_config(settings_of(ctx).resolve()))
    except (MemkitError, ImportError) as exc:
        fail(str(exc))
    settings = settings_of(ctx)
    server = create_server(memory, defaults=defaults, close_memory=True, log_level=settings.log_level)
    if transport == "stdio":
        if sys.stdin.isatty():
            _stdio_in_a_terminal()
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
