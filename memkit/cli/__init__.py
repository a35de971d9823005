"""The ``memkit`` command line (typer + rich; extras ``server`` / ``mcp``)."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``memkit`` console script."""
    try:
        from memkit.cli._app import app
    except ImportError as exc:  # typer or rich missing
        raise SystemExit(f"{exc}; install the CLI with: pip install 'memkit-ai[server]'") from None
    app()


__all__ = ["main"]
