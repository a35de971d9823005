"""What a memory tool is (:class:`ToolSpec`) and the pieces its arguments share; the tools
themselves are in :mod:`memkit.tools` and :mod:`memkit._graph_tools`."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Collection, Generator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Json = dict[str, Any]
Step = tuple[str, tuple[Any, ...], dict[str, Any]]
"""One call of a public ``Memory`` method: its name, positional and keyword arguments."""
Plan = Generator[Step, Any, Json]
"""A tool's work: it yields the calls it needs, receives their results and returns the
tool's JSON. One plan serves ``Memory`` and ``AsyncMemory`` (the runner drives it)."""

UserId = Annotated[str | None, Field(description="Whose memories (default: the tools' user).")]
AgentId = Annotated[str | None, Field(description="Which agent's memories (default: the tools' agent).")]
RunId = Annotated[str | None, Field(description="Which session's memories (default: the tools' run).")]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScopeArgs(Args):
    user_id: UserId = None
    agent_id: AgentId = None
    run_id: RunId = None


def dump(result: Any) -> Json:
    return result.model_dump(mode="json")  # type: ignore[no-any-return]


def single(method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
           render: Callable[[Any], Json] = dump) -> Plan:
    """The plan of a tool that is one call, its result rendered by ``render``."""
    return render((yield method, args, kwargs))


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it tells the model, its arguments, and its effects.
    ``graph``: the tool needs a graph store (offered only where one is configured)."""

    name: str
    description: str
    arguments: type[BaseModel]
    plan: Callable[[Any, Json], Plan]
    read_only: bool
    destructive: bool
    idempotent: bool = False
    graph: bool = False

    def parameters(self, hidden: Collection[str] = ()) -> Json:
        """The JSON schema of the arguments, without the ``hidden`` fields."""
        schema = copy.deepcopy(self.arguments.model_json_schema())
        schema.pop("title", None)
        for name in hidden:
            schema.get("properties", {}).pop(name, None)
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r not in hidden]
        return schema

    def signature(self, hidden: Collection[str] = ()) -> inspect.Signature:
        """A keyword-only signature of the arguments, for frameworks that read one."""
        params = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if field.is_required() else field.default,
                annotation=Annotated[field.annotation, field],
            )
            for name, field in self.arguments.model_fields.items() if name not in hidden
        ]
        return inspect.Signature(params, return_annotation=dict[str, Any])
