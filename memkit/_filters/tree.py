"""The portable filter language: one expression tree, parsed from dicts.

A filter is a :class:`Condition` ``{field, operator, value}`` or a composition
``And`` / ``Or`` / ``Not``. The dict form accepted by :func:`parse_filter`::

    {"field": "priority", "operator": "gte", "value": 2}
    {"priority": 2}                       # shorthand for eq
    {"priority": {"gte": 2, "lt": 5}}     # several operators: all must hold
    {"AND": [...]}, {"OR": [...]}, {"NOT": {...}}
    {"a": 1, "b": 2}                      # several keys: all must hold

Semantics are defined once, by :mod:`memkit._filters.evaluate`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from memkit._errors import FilterError
from memkit._time import to_iso

Operator = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"]
OPERATORS: tuple[Operator, ...] = (
    "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains",
)
Scalar: TypeAlias = str | int | float | bool

BUILTIN_FIELDS = frozenset({
    "memory", "user_id", "agent_id", "run_id", "created_at", "updated_at", "hash",
    "valid_from", "valid_to", "expires_at", "supersedes",
})
TIME_FIELDS = frozenset({"created_at", "updated_at", "valid_from", "valid_to", "expires_at"})
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
# Forbidden in field names: control characters, double quote, backslash, dot
# (a path separator in several engines) and a leading "$" (an operator prefix).
_BAD_FIELD = re.compile(r'[\x00-\x1f\x7f"\\.]|^\$')
MAX_FIELD_LENGTH = 128


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Condition(_Node):
    field: str
    operator: Operator
    value: Scalar | tuple[Scalar, ...]


class And(_Node):
    items: tuple[Filter, ...]


class Or(_Node):
    items: tuple[Filter, ...]


class Not(_Node):
    item: Filter


Filter: TypeAlias = Condition | And | Or | Not

_ALIASES = {"$" + op: op for op in OPERATORS} | {op: op for op in OPERATORS}
_COMBINATORS = {"AND": "AND", "OR": "OR", "NOT": "NOT", "$and": "AND", "$or": "OR", "$not": "NOT",
                "and": "AND", "or": "OR", "not": "NOT"}


def check_field_name(field: object) -> str:
    if not isinstance(field, str) or not field:
        raise FilterError(f"field names are non-empty strings, got {field!r}")
    if len(field) > MAX_FIELD_LENGTH or _BAD_FIELD.search(field):
        raise FilterError(
            f"invalid field name {field!r}: at most {MAX_FIELD_LENGTH} characters, no control "
            'characters, \'"\', "\\\\" or ".", and no leading "$"'
        )
    return field


def _scalar(value: object, where: str) -> Scalar:
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"{where}: {value!r} is not a finite number")
        return value
    raise FilterError(f"{where}: expected a string, number or boolean, got {value!r}")


def condition(field: str, operator: str, value: Any) -> Condition:
    """Build a validated :class:`Condition`; raises :class:`FilterError`."""
    field = check_field_name(field)
    op = _ALIASES.get(operator) if isinstance(operator, str) else None
    if op is None:
        raise FilterError(
            f"unknown operator {operator!r} on field {field!r}; expected one of {', '.join(OPERATORS)}"
        )
    where = f"{field} {op}"
    if op in ("in", "nin"):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise FilterError(f"{where}: expected a list of values, got {value!r}")
        items = tuple(
            _time_value(v, where) if field in TIME_FIELDS else _scalar(v, where) for v in value
        )
        return Condition(field=field, operator=op, value=items)
    if field in TIME_FIELDS and op not in ("contains", "icontains"):
        value = _time_value(value, where)
    scalar = _scalar(value, where)
    if op in ("gt", "gte", "lt", "lte") and isinstance(scalar, bool):
        raise FilterError(f"{where}: order comparisons take a number or a string, not a boolean")
    if op == "icontains" and not isinstance(scalar, str):
        raise FilterError(f"{where}: expected a string, got {value!r}")
    return Condition(field=field, operator=op, value=scalar)


def _time_value(value: object, where: str) -> str:
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, str):
        try:
            return to_iso(datetime.fromisoformat(value))
        except ValueError:
            raise FilterError(f"{where}: {value!r} is not an ISO 8601 timestamp") from None
    raise FilterError(f"{where}: expected a datetime or an ISO 8601 string, got {value!r}")


def parse_filter(obj: object) -> Filter | None:
    """Parse the dict form (or pass a tree through). ``None`` and ``{}`` mean no filter."""
    if obj is None:
        return None
    if isinstance(obj, Condition | And | Or | Not):
        return obj
    if not isinstance(obj, Mapping):
        raise FilterError(f"a filter is a dict or a filter model, got {type(obj).__name__}")
    if not obj:
        return None
    return _parse(obj, "filter")


def _parse(obj: object, path: str) -> Filter:
    if isinstance(obj, Condition | And | Or | Not):
        return obj
    if not isinstance(obj, Mapping) or not obj:
        raise FilterError(f"{path}: expected a non-empty dict, got {obj!r}")
    if set(obj) == {"field", "operator", "value"}:
        return condition(obj["field"], obj["operator"], obj["value"])
    parts: list[Filter] = []
    for key, value in obj.items():
        combinator = _COMBINATORS.get(key) if isinstance(key, str) else None
        where = f"{path}.{key}"
        if combinator == "NOT":
            parts.append(Not(item=_parse(value, where)))
        elif combinator is not None:
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                raise FilterError(f"{where}: expected a list of filters, got {value!r}")
            if not value:
                raise FilterError(f"{where}: expected at least one filter")
            items = tuple(_parse(v, f"{where}[{i}]") for i, v in enumerate(value))
            parts.append(And(items=items) if combinator == "AND" else Or(items=items))
        else:
            parts.extend(_parse_field(key, value, where))
    return parts[0] if len(parts) == 1 else And(items=tuple(parts))


def _parse_field(field: object, value: object, where: str) -> list[Filter]:
    name = check_field_name(field)
    if isinstance(value, Mapping):
        if not value:
            raise FilterError(f"{where}: expected at least one operator")
        return [condition(name, op, v) for op, v in value.items()]
    if isinstance(value, list | tuple):
        raise FilterError(f'{where}: a bare list is ambiguous; write {{"in": [...]}}')
    return [condition(name, "eq", value)]


def all_of(*filters: Filter | None) -> Filter | None:
    """The conjunction of the given filters, ignoring ``None``."""
    present = [f for f in filters if f is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else And(items=tuple(present))


def fields_of(expr: Filter) -> set[str]:
    """Every field name an expression mentions."""
    if isinstance(expr, Condition):
        return {expr.field}
    if isinstance(expr, Not):
        return fields_of(expr.item)
    return set().union(*(fields_of(i) for i in expr.items))
