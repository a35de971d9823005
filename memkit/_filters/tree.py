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
from memkit._text import bad_code_point
from memkit._time import to_iso

Operator = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"]
OPERATORS: tuple[Operator, ...] = (
    "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains",
)
Scalar: TypeAlias = str | int | float | bool

BUILTIN_FIELDS = frozenset({
    "memory", "user_id", "agent_id", "run_id", "created_at", "updated_at", "hash",
    "valid_from", "valid_to", "expires_at", "supersedes",
    "memory_type", "importance", "confidence", "access_count", "last_accessed_at",
})
TIME_FIELDS = frozenset({"created_at", "updated_at", "valid_from", "valid_to", "expires_at",
                         "last_accessed_at"})
NUMBER_FIELDS = frozenset({"importance", "confidence", "access_count"})
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
# Forbidden in field names: control characters, double quote, backslash, dot
# (a path separator in several engines) and a leading "$" (an operator prefix).
_BAD_FIELD = re.compile('[\x00-\x1f\x7f"\\\\.\ud800-\udfff]|^\\$')
MAX_FIELD_LENGTH = 128
# Bounds on the dict form, so that every store runs what parses (SQLite nests at
# most 1000 expression levels; every translator and the evaluator recurse).
MAX_DEPTH = 16
MAX_CONDITIONS = 256
MAX_VALUES = 10_000  # list elements of in/nin, over the whole filter
MAX_VALUE_CHARS = 10_000
_INT64 = (-(2**63), 2**63 - 1)


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Condition(_Node):
    """``field operator value``, e.g. ``Condition(field="topic", operator="eq", value="food")``."""

    field: str
    operator: Operator
    value: Scalar | tuple[Scalar, ...]


class And(_Node):
    """Every item holds."""

    items: tuple[Filter, ...]


class Or(_Node):
    """At least one item holds."""

    items: tuple[Filter, ...]


class Not(_Node):
    """The item does not hold."""

    item: Filter


Filter: TypeAlias = Condition | And | Or | Not
"""A filter expression tree; ``parse_filter`` builds one from the dict form."""

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
    if isinstance(value, str):
        problem = bad_code_point(value)
        if problem is not None:
            raise FilterError(f"{where}: the value {problem}")
        if len(value) > MAX_VALUE_CHARS:
            raise FilterError(f"{where}: a value of {len(value)} characters; the limit is "
                              f"{MAX_VALUE_CHARS}")
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise FilterError(f"{where}: integers must fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"{where}: {value!r} is not a finite number")
        return value
    raise FilterError(f"{where}: expected a string, number or boolean, got {value!r}"[:300])


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
    """Parse the dict form (or pass a tree through). ``None`` and ``{}`` mean no filter.

    The dict form may nest MAX_DEPTH levels and hold MAX_CONDITIONS conditions
    with MAX_VALUES list elements in all; beyond that it is a :class:`FilterError`.
    """
    if obj is None:
        return None
    if isinstance(obj, Condition | And | Or | Not):
        return obj
    if not isinstance(obj, Mapping):
        raise FilterError(f"a filter is a dict or a filter model, got {type(obj).__name__}")
    if not obj:
        return None
    return _Parser().parse(obj, "filter", 1)


class _Parser:
    """One parse of the dict form, counting what it has built."""

    def __init__(self) -> None:
        self.conditions = 0
        self.values = 0

    def parse(self, obj: object, path: str, depth: int) -> Filter:
        if depth > MAX_DEPTH:
            raise FilterError(f"{path[:200]}: filters may nest at most {MAX_DEPTH} levels")
        if isinstance(obj, Condition | And | Or | Not):
            return obj
        if not isinstance(obj, Mapping) or not obj:
            raise FilterError(f"{path}: expected a non-empty dict, got {obj!r}"[:300])
        if set(obj) == {"field", "operator", "value"}:
            return self.condition(obj["field"], obj["operator"], obj["value"])
        parts: list[Filter] = []
        for key, value in obj.items():
            combinator = _COMBINATORS.get(key) if isinstance(key, str) else None
            where = f"{path}.{key}"
            if combinator == "NOT":
                parts.append(Not(item=self.parse(value, where, depth + 1)))
            elif combinator is not None:
                if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                    raise FilterError(f"{where}: expected a list of filters, got {value!r}"[:300])
                if not value:
                    raise FilterError(f"{where}: expected at least one filter")
                if len(value) > MAX_CONDITIONS:
                    raise FilterError(f"{where}: more than {MAX_CONDITIONS} filters")
                items = tuple(self.parse(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
                parts.append(And(items=items) if combinator == "AND" else Or(items=items))
            else:
                parts.extend(self.field(key, value, where))
        return parts[0] if len(parts) == 1 else And(items=tuple(parts))

    def field(self, field: object, value: object, where: str) -> list[Filter]:
        name = check_field_name(field)
        if isinstance(value, Mapping):
            if not value:
                raise FilterError(f"{where}: expected at least one operator")
            return [self.condition(name, op, v) for op, v in value.items()]
        if isinstance(value, list | tuple):
            raise FilterError(f'{where}: a bare list is ambiguous; write {{"in": [...]}}')
        return [self.condition(name, "eq", value)]

    def condition(self, field: str, operator: str, value: Any) -> Condition:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise FilterError(f"a filter may hold at most {MAX_CONDITIONS} conditions")
        if isinstance(value, list | tuple):
            self.values += len(value)
            if self.values > MAX_VALUES:
                raise FilterError(f"a filter may list at most {MAX_VALUES} values in all")
        return condition(field, operator, value)


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
