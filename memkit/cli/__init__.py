"""The ``memkit`` command line (typer + rich; extras ``server`` / ``mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


def build_app() -> typer.Typer:
    """The ``memkit`` typer app with every command registered (once)."""
    from memkit.cli._app import app
    from memkit.cli._eval import eval_app
    from memkit.cli._graph import graph_app
    from memkit.cli._lifecycle import consolidate, prune, repair
    from memkit.cli._notes import register
    from memkit.cli._reembed import reembed
    from memkit.cli._ui import ui

    if not any(group.name == "graph" for group in app.registered_groups):
        app.add_typer(graph_app, name="graph")
        app.add_typer(eval_app, name="eval")
        app.command("consolidate")(consolidate)
        app.command("prune")(prune)
        app.command("repair")(repair)
        app.command("reembed")(reembed)
        app.command("ui")(ui)
        register(app)
    return app


def main() -> None:
    """Entry point of the ``memkit`` console script."""
    try:
        app = build_app()
    except ImportError as exc:  # typer or rich missing
        raise SystemExit(f"{exc}; install the CLI with: pip install 'memkit-ai[server]'") from None
    try:
        app()
    except ImportError as exc:  # an optional piece a command needs; its message names the extra
        raise SystemExit(f"error: {exc}") from None


__all__ = ["build_app", "main"]
