"""Which front door reaches each public ``Memory`` operation, and with which parameters.

One row per public method of :class:`~memkit.Memory` (``AsyncMemory`` has the same ones).
Each row names the operation on every surface: the REST routes (``"POST /v1/memories/"``),
the tool (``memkit.tools``: the OpenAI/Anthropic definitions, the framework integrations
and the MCP server, which is built from them) and the CLI command (``"graph show"``). An
operation absent from a surface says why in ``absent``; a parameter absent from a surface
where the operation is says why in ``skipped`` (``"*"``: on every surface). ``renamed``
gives a parameter's name where it differs (``messages`` is ``content`` for a model);
``defaults`` why a surface's default differs from Python's.

``tests/test_capabilities.py`` walks this table against the OpenAPI schema, the MCP
server's tool list, the typer app and ``memkit.tools``: a parameter added to ``Memory``
fails the test until every surface has it or the table says why not. Dashboards and
integrations read it to know what each door offers::

    from memkit.capabilities import CAPABILITIES, capability

    capability("prune").rest        # ('POST /v1/prune/',)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = ["CAPABILITIES", "SURFACES", "Capability", "Surface", "capability"]

Surface = Literal["rest", "tool", "cli"]
SURFACES: tuple[Surface, ...] = ("rest", "tool", "cli")

_ALIAS = "mem0's name for a parameter the surface takes under memkit's name"
_SCOPE_KEY = "REST binds the scope to the API key; one scope per request"
_CALLBACK = "a Python callable; a remote caller cannot pass one"
_REPLAY = "GET /v1/events with Last-Event-ID replays the changes after a position, then follows"
_FEED_TOOL = "a feed of every change is for applications, not for a model's turn"
_FEED_CLI = "follow the feed over REST (GET /v1/events) or in Python"
_SERVER_FILES = "reads files on the server's machine; an operator's job, not a remote caller's"


def _frozen(value: Mapping[str, Mapping[str, str]] | None = None) -> Mapping[str, Mapping[str, str]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in (value or {}).items()})


@dataclass(frozen=True)
class Capability:
    """One public operation and where it is reachable (module docstring)."""

    method: str
    rest: tuple[str, ...] = ()
    tool: str | None = None
    cli: str | None = None
    absent: Mapping[str, str] = field(default_factory=dict)
    skipped: Mapping[str, Mapping[str, str]] = field(default_factory=_frozen)
    renamed: Mapping[str, Mapping[str, str]] = field(default_factory=_frozen)
    defaults: Mapping[str, str] = field(default_factory=dict)

    def reaches(self, surface: Surface) -> bool:
        return bool(self.rest) if surface == "rest" else getattr(self, surface) is not None

    def why_skipped(self, parameter: str, surface: Surface) -> str | None:
        """Why ``parameter`` is not on ``surface`` (``None``: it must be there)."""
        reasons = self.skipped.get(parameter, {})
        return reasons.get(surface) or reasons.get("*")


def _cap(method: str, rest: tuple[str, ...] = (), tool: str | None = None,
         cli: str | None = None, *, absent: Mapping[str, str] | None = None,
         skipped: Mapping[str, Mapping[str, str]] | None = None,
         renamed: Mapping[str, Mapping[str, str]] | None = None,
         defaults: Mapping[str, str] | None = None) -> Capability:
    return Capability(method, rest, tool, cli, MappingProxyType(dict(absent or {})),
                      _frozen(skipped), _frozen(renamed), MappingProxyType(dict(defaults or {})))


_PAGE = "a page for a person or a model to read, not 100"
_GRAPH_CLI = "the graph is written by adds and the API; the CLI shows and exports it"


def _each(field: str, *names: str) -> dict[str, dict[str, str]]:
    """The tool takes a list ``field`` of items, each with these parameters."""
    return {name: {"tool": f"{field}[].{name}"} for name in names}

_MCP_SCOPE = {"tool": "MCP tools act in one scope, the caller's"}

CAPABILITIES: tuple[Capability, ...] = (
    _cap("add", ("POST /v1/memories/",), "add_memory", "add",
         skipped={"expiration_date": {"*": _ALIAS},
                  "filters": {"tool": "which memories the LLM may change is the operator's "
                                      "choice, not the model's"},
                  "prompt": {"tool": "the extraction prompt is the operator's, not the model's"},
                  "on_error": {"tool": "the server's configuration decides"},
                  "timestamp": {"tool": "a model adds what it hears now"}},
         renamed={"messages": {"tool": "content", "cli": "text"}}),
    _cap("search", ("GET /v1/memories/search/", "POST /v1/memories/search/"),
         "search_memories", "search",
         skipped={"top_k": {"*": _ALIAS},
                  "scopes": {**_MCP_SCOPE, "cli": "one scope per command",
                             "rest": "a list of scopes needs a body: POST only"}},
         defaults={"limit": _PAGE}),
    _cap("get", ("GET /v1/memories/{memory_id}/",), "get_memory", "get",
         skipped={"reinforce": {"tool": "a model reads a memory to use it: its read counts"}}),
    _cap("get_all", ("GET /v1/memories/",), "list_memories", "list",
         skipped={"top_k": {"*": _ALIAS}},
         defaults={"limit": "None in Python means 100, the surfaces' default"}),
    _cap("update", ("PUT /v1/memories/{memory_id}/",), "update_memory", "update",
         skipped={"data": {"*": _ALIAS}},
         renamed={"if_updated_at": {"rest": "if-match"}}),
    _cap("delete", ("DELETE /v1/memories/{memory_id}/",), "delete_memory", "delete",
         skipped={"hard": {"tool": "removing for good is a privacy request, not a model's "
                                   "decision"},
                  "actor_id": {"tool": "who acted is the application's to record, not a model's claim"}},
         renamed={"memory_id": {"cli": "memory_id"}}),
    _cap("delete_all", ("DELETE /v1/memories/",), "delete_all_memories", "delete"),
    _cap("purge", ("DELETE /v1/memories/",), None, "delete",
         absent={"tool": "removes records for good; not a model's decision"}),
    _cap("history", ("GET /v1/memories/{memory_id}/history/",), "memory_history", "history"),
    _cap("changes", (), None, None,
         absent={"rest": _REPLAY, "tool": _FEED_TOOL, "cli": _FEED_CLI}),
    _cap("watch", ("GET /v1/events",), None, None,
         absent={"tool": _FEED_TOOL, "cli": _FEED_CLI},
         renamed={"after": {"rest": "last-event-id"}}),
    _cap("versions", ("GET /v1/memories/{memory_id}/versions/",), "memory_versions",
         "versions"),
    _cap("revert", ("POST /v1/memories/{memory_id}/history/{event_id}/revert/",),
         "memory_revert", "revert"),
    _cap("supersede", ("POST /v1/memories/{memory_id}/supersede/",), "memory_supersede",
         "supersede"),
    _cap("reset", ("POST /v1/reset/",), None, None,
         absent={"tool": "wipes every scope; not a model's decision",
                 "cli": "delete the store's file, or use the API with an admin key"}),
    _cap("repair", ("POST /v1/repair/",), "memory_repair", "repair"),
    _cap("prune", ("POST /v1/prune/",), "memory_prune", "prune"),
    _cap("consolidate", ("POST /v1/consolidate/",), "memory_consolidate", "consolidate"),
    _cap("stats", ("GET /v1/stats/",), "get_memory_stats", "stats"),
    _cap("feedback", ("POST /v1/memories/{memory_id}/feedback/",), "memory_feedback", None,
         absent={"cli": "feedback comes from the agent that used a memory"}),
    _cap("search_log", ("GET /v1/searches/",), None, None,
         absent={"tool": "the log is the operator's view of the searches",
                 "cli": "read it over REST or in Python"}),
    _cap("export", (), None, "export",
         absent={"rest": "a bulk dump; run memkit export on the server",
                 "tool": "a bulk dump; not for a model"}),
    _cap("import_", (), None, "import",
         absent={"rest": "a bulk load; run memkit import on the server",
                 "tool": "a bulk load; not for a model"},
         renamed={"memories": {"cli": "source"}}),
    _cap("reembed", (), None, "reembed",
         absent={"rest": "rewrites every vector with another model: an operator's job",
                 "tool": "rewrites every vector: an operator's job"},
         skipped={"on_progress": {"cli": _CALLBACK}},
         renamed={"embedder": {"cli": "model"}}),
    _cap("index_folder", ("POST /v1/index/",), "index_folder", "index",
         renamed={"path": {"cli": "folder"}}),
    _cap("watch_folder", (), None, "watch",
         absent={"rest": "a long-running watch of the server's files",
                 "tool": "a long-running watch of the server's files"},
         skipped={"on_index": {"cli": _CALLBACK}},
         renamed={"path": {"cli": "folder"}}),
    _cap("update_task", ("PUT /v1/tasks/{memory_id}/",), "memory_task_update", None,
         absent={"cli": "memkit update keeps a task's text; its status is set over REST, MCP "
                        "or in Python"}),
    _cap("startup_context", ("GET /v1/startup/",), "memory_startup", "startup"),
    _cap("get_entity", ("GET /v1/entities/{name}/",), None, None,
         absent={"tool": "search_entities and get_entity_graph return entities",
                 "cli": "memkit graph show prints it with its neighbourhood"}),
    _cap("get_entities", ("GET /v1/entities/",), "search_entities", None,
         absent={"cli": "memkit graph export writes every entity with its relations"}),
    _cap("get_entity_graph", ("GET /v1/entities/{name}/relations/",), "get_entity_graph",
         "graph show", defaults={"depth": "two hops make a readable tree on a terminal"},
         skipped={"include_closed": {
             "tool": "a model reasons over the relations that hold now; ended ones are history",
             "cli": "graph show prints what holds now; the dashboard and REST show ended relations"}}),
    _cap("add_entity", ("POST /v1/entities/", "PUT /v1/entities/{name}/"), "create_entities",
         None, absent={"cli": _GRAPH_CLI}, renamed=_each("entities", "name", "type", "summary")),
    _cap("add_relation", ("POST /v1/entities/{name}/relations/",), "create_relations", None,
         absent={"cli": _GRAPH_CLI},
         renamed={**_each("relations", "source", "relation", "target", "source_type",
                          "target_type"), "source": {"rest": "name",
                                                     "tool": "relations[].source"}}),
    _cap("delete_relation", ("DELETE /v1/entities/{name}/relations/",), "delete_relations",
         None, absent={"cli": _GRAPH_CLI},
         renamed={**_each("relations", "relation", "target"),
                  "source": {"rest": "name", "tool": "relations[].source"}}),
    _cap("delete_entity", ("DELETE /v1/entities/{name}/",), "delete_entities", None,
         absent={"cli": _GRAPH_CLI}, renamed={"name": {"tool": "names"}}),
    _cap("close", (), None, None,
         absent={"rest": "the server owns its memory's life", "tool": "the host's job",
                 "cli": "each command closes what it opened"}),
)
"""Every public ``Memory`` operation (module docstring)."""

_BY_METHOD = {c.method: c for c in CAPABILITIES}


def capability(method: str) -> Capability:
    """The row of ``Memory.<method>``; ``KeyError`` for a name that is not one."""
    return _BY_METHOD[method]
