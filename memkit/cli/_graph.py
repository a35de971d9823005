"""``memkit graph show NAME --depth 2`` (a tree) and ``memkit graph export`` (JSON, GraphML)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal
from xml.sax.saxutils import escape, quoteattr

import typer

from memkit.cli._common import AgentOpt, JsonOpt, RunOpt, UserOpt, fail, open_memory

graph_app = typer.Typer(no_args_is_help=True, help="The graph: entities and relations.")


@graph_app.command("show")
def show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The entity to start from.")],
    depth: Annotated[int, typer.Option(min=0, max=3, help="Hops to follow.")] = 2,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    include_memories: Annotated[bool, typer.Option(
        "--memories", help="Also list the memories the relations came from.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """An entity's neighbourhood, as a tree of relations."""
    with open_memory(ctx) as memory:
        if memory.graph_store is None:
            fail("no graph store is configured (set graph_store in the config)")
        graph = memory.get_entity_graph(name, depth=depth, user_id=user_id, agent_id=agent_id,
                                        run_id=run_id, include_memories=include_memories)
    data = graph.model_dump(mode="json")
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return
    if not data["entities"]:
        fail(f"no entity called {name!r} in this scope")
    from rich.console import Console
    from rich.tree import Tree

    types = {e["name"]: e["type"] for e in data["entities"]}
    edges: dict[str, list[tuple[str, str]]] = {}
    for r in data["relations"]:
        edges.setdefault(r["source"], []).append((f"-[{r['relation']}]->", r["target"]))
        edges.setdefault(r["target"], []).append((f"<-[{r['relation']}]-", r["source"]))
    root_name = next((e["name"] for e in data["entities"]
                      if e["name"].casefold() == name.casefold()), data["entities"][0]["name"])
    tree = Tree(f"[bold]{root_name}[/] ({types.get(root_name, 'unknown')})")
    _grow(tree, root_name, edges, types, depth, {root_name})
    Console().print(tree)
    for item in data["memories"]:
        print(f"  {item['id']}  {item['memory']}")


def _grow(node: Any, name: str, edges: dict[str, list[tuple[str, str]]], types: dict[str, str],
          depth: int, seen: set[str]) -> None:
    if depth <= 0:
        return
    for arrow, other in sorted(edges.get(name, [])):
        child = node.add(f"{arrow} [bold]{other}[/] ({types.get(other, 'unknown')})")
        if other not in seen:
            _grow(child, other, edges, types, depth - 1, seen | {other})


@graph_app.command("export")
def export(
    ctx: typer.Context,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    format: Annotated[Literal["json", "graphml"], typer.Option(
        "--format", "-f", help="json or graphml.")] = "json",
    limit: Annotated[int, typer.Option(min=1, help="Entities at most.")] = 100_000,
) -> None:
    """Every entity of a scope and the open relations among them, to stdout."""
    with open_memory(ctx) as memory:
        if memory.graph_store is None:
            fail("no graph store is configured (set graph_store in the config)")
        scope: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        entities = memory.get_entities(**scope, limit=limit)
        graph = memory.get_entity_graph([e.name for e in entities], depth=0, user_id=user_id,
                                        agent_id=agent_id, run_id=run_id)
    data = graph.model_dump(mode="json")
    if format == "json":
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(graphml(data))


def graphml(data: dict[str, Any]) -> str:
    """The graph as GraphML: nodes keyed by entity id, edges carrying the relation."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
        '  <key id="name" for="node" attr.name="name" attr.type="string"/>',
        '  <key id="type" for="node" attr.name="type" attr.type="string"/>',
        '  <key id="relation" for="edge" attr.name="relation" attr.type="string"/>',
        '  <key id="weight" for="edge" attr.name="weight" attr.type="double"/>',
        '  <graph id="memkit" edgedefault="directed">',
    ]
    ids = {e["name"]: e["id"] for e in data["entities"]}
    for e in data["entities"]:
        lines.append(f'    <node id={quoteattr(e["id"])}><data key="name">{_text(e["name"])}'
                     f'</data><data key="type">{_text(e["type"])}</data></node>')
    for r in data["relations"]:
        lines.append(
            f'    <edge id={quoteattr(r["id"])} source={quoteattr(ids[r["source"]])}'
            f' target={quoteattr(ids[r["target"]])}><data key="relation">'
            f'{_text(r["relation"])}</data><data key="weight">{r["weight"]}</data></edge>')
    lines += ["  </graph>", "</graphml>", ""]
    return "\n".join(lines)


def _text(value: str) -> str:
    return escape(value)
