"""The capability table (memkit.capabilities) against every front door: the OpenAPI
schema, the MCP server's tools, memkit.tools and the typer app. A parameter of a public
``Memory`` method must be on each surface that has the operation, with the same default,
or the table must say why not."""

from __future__ import annotations

import asyncio
import inspect
import typing
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")
pytest.importorskip("typer")

import typer.main
from pydantic import BaseModel

from memkit import AsyncMemory, Memory
from memkit.capabilities import CAPABILITIES, SURFACES, Capability, Surface, capability
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from memkit.tools import TOOLS, tool_spec

_EMPTY = inspect.Parameter.empty
Params = dict[str, Any]  # name -> default (_EMPTY: required)


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and inspect.isfunction(member)
            and name not in ("from_config", "aclose")}


def _openapi() -> dict[str, Any]:
    from memkit.server import create_app

    memory = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                         vector_store=SQLiteStore(":memory:"))
    return create_app(memory).openapi()


def _rest_params(schema: dict[str, Any], route: str) -> Params:
    verb, path = route.split(" ", 1)
    operation = schema["paths"].get(path, {}).get(verb.lower())
    if operation is None:
        raise LookupError(f"no route {route}")
    params: Params = {p["name"]: p.get("schema", {}).get("default", _EMPTY)
                      for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        ref = body["schema"]["$ref"].rsplit("/", 1)[-1]
        model = schema["components"]["schemas"][ref]
        required = set(model.get("required", []))
        for name, prop in model["properties"].items():
            params[name] = _EMPTY if name in required else prop.get("default")
    return params


def _cli() -> Any:
    from memkit.cli import build_app

    return typer.main.get_command(build_app())


def _cli_params(group: Any, path: str) -> Params:
    """The parameters of ``memkit <path>`` (typer's click command, found by name)."""
    command = group
    for word in path.split():
        command = command.commands.get(word)
        if command is None:
            raise LookupError(f"no command memkit {path}")
    return {p.name: (_EMPTY if p.required else p.default) for p in command.params if p.name}


def _fields(model: type[BaseModel], prefix: str = "") -> Params:
    """A model's fields; those of a list of models as ``field[].name``."""
    params: Params = {}
    for name, field in model.model_fields.items():
        params[prefix + name] = _EMPTY if field.is_required() else field.default
        item = typing.get_args(field.annotation)
        if typing.get_origin(field.annotation) is list and isinstance(item[0], type) \
                and issubclass(item[0], BaseModel):
            params.update(_fields(item[0], f"{prefix}{name}[]."))
    return params


def _tool_params(name: str) -> Params:
    try:
        return _fields(tool_spec(name).arguments)
    except KeyError:
        raise LookupError(f"no tool {name}") from None


def _mcp_tools() -> dict[str, dict[str, Any]]:
    from memkit.mcp import create_server

    memory = AsyncMemory({"graph_store": "sqlite"}, llm=ScriptedLLM(), embedder=HashEmbedder(),
                         vector_store=SQLiteStore(":memory:"))
    server = create_server(memory, defaults={})
    return {t.name: t.input_schema for t in asyncio.run(server.list_tools())}


def _surface_params(row: Capability, surface: Surface, openapi: dict[str, Any],
                    cli: Any) -> list[tuple[str, Params]]:
    if surface == "rest":
        return [(route, _rest_params(openapi, route)) for route in row.rest]
    if surface == "tool":
        assert row.tool is not None
        return [(row.tool, _tool_params(row.tool))]
    assert row.cli is not None
    return [(f"memkit {row.cli}", _cli_params(cli, row.cli))]


def gaps() -> list[str]:
    """Everything the front doors miss that the table does not explain."""
    found: list[str] = []
    openapi, cli = _openapi(), _cli()
    methods = _public(Memory)
    for row in CAPABILITIES:
        signature = methods[row.method]
        for surface in SURFACES:
            if not row.reaches(surface):
                if not row.absent.get(surface):
                    found.append(f"{row.method}: not on {surface}, and the table says not why")
                continue
            try:
                reached = _surface_params(row, surface, openapi, cli)
            except LookupError as exc:
                found.append(f"{row.method}: {exc}")
                continue
            for where, params in reached:
                for name, parameter in list(signature.parameters.items())[1:]:
                    if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                        continue
                    if row.why_skipped(name, surface):
                        continue
                    there = row.renamed.get(name, {}).get(surface, name)
                    if there not in params:
                        found.append(f"{row.method}({name}=): missing on {where}")
                        continue
                    mine, theirs = parameter.default, params[there]
                    if (mine is not _EMPTY and theirs is not _EMPTY and mine != theirs
                            and name not in row.defaults):
                        found.append(f"{row.method}({name}=): default {theirs!r} on {where}, "
                                     f"{mine!r} in Python")
    return found


def test_every_public_operation_has_a_row_and_the_shells_agree() -> None:
    sync, rows = _public(Memory), {c.method for c in CAPABILITIES}
    assert set(sync) == rows
    assert set(_public(AsyncMemory)) == rows
    for name, signature in sync.items():
        assert list(_public(AsyncMemory)[name].parameters) == list(signature.parameters)
    assert capability("search").tool == "search_memories"


def test_every_front_door_has_every_parameter_or_the_table_says_why() -> None:
    assert gaps() == []


def test_the_mcp_server_offers_exactly_the_tools_with_their_schemas() -> None:
    offered = _mcp_tools()
    assert set(offered) == {s.name for s in TOOLS}
    for spec in TOOLS:
        assert set(offered[spec.name]["properties"]) == set(spec.parameters()["properties"])
    named = {c.tool for c in CAPABILITIES if c.tool}
    assert named <= set(offered)
