"""Developer sessions: nox -s tests | lint | typecheck | docs | bench."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
PYTHON = "3.11"


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """The README's test command: installs .venv, starts PostgreSQL and Chroma, runs pytest."""
    session.run("bash", "scripts/test.sh", *session.posargs, external=True)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "memkit", "tests", "bench", "examples", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[all]", "mypy")
    session.run("mypy", "--strict", "memkit")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    session.install("-e", ".[local,docs]")
    session.run("mkdocs", "build", "--strict")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Every benchmark; figures go to bench/results/*.json and docs/benchmarks.md."""
    session.install("-e", ".[all]", "matplotlib", "aiohttp")
    for script in ("embedder", "locomo", "loo", "scale", "vs_mem0", "hostile", "notes",
                   "server_load"):
        session.run("python", f"bench/{script}.py", *session.posargs)
