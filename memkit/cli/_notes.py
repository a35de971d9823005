"""``memkit index DIR``, ``memkit watch DIR`` and ``memkit startup``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from memkit.cli._common import AgentOpt, JsonOpt, RunOpt, UserOpt, emit, fail, open_memory, with_hint

if TYPE_CHECKING:
    from memkit import IndexResult

FolderArg = Annotated[str, typer.Argument(metavar="DIR", help="A folder of markdown notes.")]
MaxBytesOpt = Annotated[int, typer.Option(
    "--max-file-bytes", min=1, max=10_000_000, help="Skip larger files (reported).")]


def _summary(result: IndexResult) -> str:
    line = (f"{result.files} files: {result.added} sections added, {result.moved} moved, "
            f"{result.removed} removed, {result.unchanged} unchanged")
    for skipped in result.skipped:
        line += f"\nskipped {skipped.path}: {skipped.reason}"
    return line


def index(
    ctx: typer.Context, folder: FolderArg,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    max_file_bytes: MaxBytesOpt = 100_000, as_json: JsonOpt = False,
) -> None:
    """Index the markdown files of DIR, one memory per section; run it again to sync."""
    with open_memory(ctx) as memory:
        result = memory.index_folder(folder, user_id=user_id, agent_id=agent_id, run_id=run_id,
                                     max_file_bytes=max_file_bytes)
    emit(result.model_dump(mode="json"), as_json, lambda: print(_summary(result)))


def watch(
    ctx: typer.Context, folder: FolderArg,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    max_file_bytes: MaxBytesOpt = 100_000,
    debounce_ms: Annotated[int, typer.Option(
        "--debounce-ms", min=1, max=60_000, help="Group changes over this many ms.")] = 500,
) -> None:
    """Index DIR, then keep its memories in sync as files change (extra: notes)."""

    def report(result: IndexResult) -> None:
        if result.changed or result.skipped:
            print(_summary(result), flush=True)

    with open_memory(ctx) as memory:
        try:
            running = memory.watch_folder(folder, user_id=user_id, agent_id=agent_id,
                                          run_id=run_id, max_file_bytes=max_file_bytes,
                                          debounce_ms=debounce_ms, on_index=report)
        except ImportError as exc:  # one plain line: rich would wrap the install command
            print(f"error: {with_hint(exc, 'notes')}", file=sys.stderr)
            raise typer.Exit(1) from None
        print(f"watching {folder} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        try:
            while running.running:
                running.wait(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            running.stop()
        if running.error is not None:
            fail(f"watching stopped: {type(running.error).__name__}: {running.error}")


def startup(
    ctx: typer.Context,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    budget_tokens: Annotated[int, typer.Option(
        "--budget-tokens", min=1, max=1_000_000, help="Token budget (characters / 4).")] = 1000,
    as_json: JsonOpt = False,
) -> None:
    """The startup briefing of a scope: open tasks, startup memories, the most important."""
    with open_memory(ctx) as memory:
        context = memory.startup_context(user_id=user_id, agent_id=agent_id, run_id=run_id,
                                         budget_tokens=budget_tokens)
    emit(context.model_dump(mode="json"), as_json,
          lambda: print(context.text or "(nothing to brief)", end="" if context.text else "\n"))


def register(app: typer.Typer) -> None:
    """Add the notes commands to ``app``."""
    app.command()(index)
    app.command()(watch)
    app.command()(startup)
