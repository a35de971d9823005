"""What the ``memkit`` commands share: option types, settings, the memory, output, errors."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from memkit import MemkitError
from memkit._errors import NO_LLM_FIX, NO_LLM_FIX_CLI
from memkit.cli._config import Settings, memory_config

if TYPE_CHECKING:
    from memkit import Memory

UserOpt = Annotated[str | None, typer.Option("--user-id", "-u", help="Scope: user id.")]
AgentOpt = Annotated[str | None, typer.Option("--agent-id", "-a", help="Scope: agent id.")]
RunOpt = Annotated[str | None, typer.Option("--run-id", "-r", help="Scope: run id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
FiltersOpt = Annotated[str | None, typer.Option(
    "--filters", "-f", help='A filter as JSON, e.g. \'{"topic": "food"}\'.')]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="How many at most.")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", help="ISO 8601 time: what was valid then (default: now).")]
ExpiresOpt = Annotated[str | None, typer.Option(
    "--expires-at", help="ISO 8601 time after which the memory is hidden.")]
TypeOpt = Annotated[str | None, typer.Option(
    "--memory-type", help='e.g. task, preference, decision, fact.')]
ImportanceOpt = Annotated[float | None, typer.Option(min=0, max=1, help="From 0 to 1.")]
ConfidenceOpt = Annotated[float | None, typer.Option(
    min=0, max=1, help="Where the confidence starts, 0 to 1 (default 1).")]
SurfaceOpt = Annotated[str | None, typer.Option(
    help='"startup": shown in the startup briefing.')]
ExpiredOpt = Annotated[bool, typer.Option("--include-expired", help="Expired memories too.")]
MetadataOpt = Annotated[str | None, typer.Option("--metadata", "-m", help="JSON object.")]
EntityOpt = Annotated[str | None, typer.Option(
    help="Only the memories about this entity (name or id; needs a graph store).")]


def settings_of(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    return settings if isinstance(settings, Settings) else Settings()


def fail(message: str, code: int = 1) -> NoReturn:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def open_memory(ctx: typer.Context) -> Iterator[Memory]:
    from memkit import Memory

    try:
        memory = Memory(memory_config(settings_of(ctx).resolve()))
    except (MemkitError, ImportError) as exc:
        fail(str(exc))
    try:
        yield memory
    except MemkitError as exc:
        fail(f"{type(exc).__name__}: {str(exc).replace(NO_LLM_FIX, NO_LLM_FIX_CLI)}")
    finally:
        memory.close()


def json_arg(raw: str | None, what: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        fail(f"{what} must be a JSON object: {exc}")
    if not isinstance(value, dict):
        fail(f"{what} must be a JSON object")
    return value


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def emit(data: Any, as_json: bool, render: Callable[[], None]) -> None:
    if as_json:
        print_json(data)
    else:
        render()


ID_COLUMNS = frozenset({"id", "memory_id"})


def with_hint(exc: ImportError, extra: str) -> str:
    """An import error as one line that names the install command."""
    message = str(exc)
    return message if "pip install" in message else f"{message}; install it with: pip install 'memkit-ai[{extra}]'"


def resolve_id(memory: Memory, given: str) -> str:
    """``given`` if a memory has that id, else the one memory whose id starts with it."""
    try:
        if memory.get(given, reinforce=False) is not None:
            return given
    except MemkitError:
        pass
    matches: list[str] = []
    for record in memory.export():
        if record.id.startswith(given):
            matches.append(record.id)
            if len(matches) > 5:
                break
    if not matches:
        fail(f"no memory with id {given!r}")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        fail(f"id prefix {given!r} is ambiguous; it matches {shown}")
    return matches[0]


def table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        if column in ID_COLUMNS:  # ids stay whole on one line, to be copied
            table.add_column(column, no_wrap=True, min_width=36)
        else:
            table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(cell(row.get(c)) for c in columns))
    Console().print(table)


_ISO_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(\.\d+)?)?(Z|[+-]00:00)$")


def cell(value: Any) -> str:
    """A table cell: times in UTC to the minute (``--json`` keeps them whole), None blank."""
    if value is None:
        return ""
    text = str(value)
    match = _ISO_TIME.match(text)
    return f"{match.group(1)} {match.group(2)}" if match else text
