"""Search across several scopes, named on purpose: ``search(..., scopes=[...])``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memkit._errors import InvalidArgument, ScopeError
from memkit._filters import Filter, Or
from memkit._pipeline.inputs import SCOPE_FIELDS, Scope

MAX_SCOPES = 20


def scopes_of(scopes: object, *given: str | None) -> list[Scope]:
    """The scopes of ``scopes=``: 1 to MAX_SCOPES mappings of user_id / agent_id / run_id,
    none empty. ``given`` (the call's own scope arguments) must all be None."""
    if any(value is not None for value in given):
        raise InvalidArgument("give scopes= or user_id/agent_id/run_id, not both")
    if isinstance(scopes, str | bytes | Mapping) or not isinstance(scopes, Sequence):
        raise InvalidArgument("scopes must be a list of scopes, e.g. [{'user_id': 'a'}, "
                          "{'user_id': 'b'}]")
    if not 0 < len(scopes) <= MAX_SCOPES:
        raise InvalidArgument(f"scopes must hold 1 to {MAX_SCOPES} scopes, got {len(scopes)}")
    out: list[Scope] = []
    for index, scope in enumerate(scopes):
        if not isinstance(scope, Mapping) or set(scope) - set(SCOPE_FIELDS):
            raise ScopeError(f"scopes[{index}] must be a dict of {', '.join(SCOPE_FIELDS)}, "
                             f"got {scope!r}"[:300])
        out.append(Scope.of(scope.get("user_id"), scope.get("agent_id"), scope.get("run_id")))
    return out


def any_scope(scopes: Sequence[Scope]) -> Filter:
    """Memories of any of ``scopes``."""
    filters = [s.filter() for s in scopes]
    present = [f for f in filters if f is not None]
    return present[0] if len(present) == 1 else Or(items=tuple(present))
