"""The reference evaluator: what every filter means, on every store.

Rules (stores must return exactly what this returns, or raise FilterError):

- A field is a built-in (``memory``, ``hash``, ``user_id``, ``agent_id``,
  ``run_id``, ``created_at``, ``updated_at``, ``valid_from``, ``valid_to``,
  ``expires_at``, ``supersedes``, ``memory_type``, ``importance``,
  ``confidence``, ``access_count``, ``last_accessed_at``) or a key of the
  caller's metadata. An absent
  key, or a value of ``None``, is *missing*.
- ``eq``: numbers (int or float, never bool) compare numerically, strings by
  equality, booleans with booleans. Any other pairing is false: ``1`` does not
  equal ``"1"`` or ``True``. A missing or list-valued field is never equal.
- ``ne`` is exactly ``NOT eq``; ``nin`` is exactly ``NOT in``. So a missing
  field satisfies ``ne`` and ``nin``.
- ``gt``/``gte``/``lt``/``lte``: number with number, string with string (by
  Unicode code point; timestamps are stored in one UTC ISO format, so they
  order in time). Anything else, and a missing field, is false.
- ``in``: ``eq`` to at least one element.
- ``contains``: a string field contains the string value (case-sensitive
  substring); a list field has an element ``eq`` to the value.
- ``icontains``: the same, after ``str.lower()`` on both sides; on a list
  field, an element that is a string equal to the value ignoring case.
- ``NOT`` is the complement; ``AND``/``OR`` as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memkit._filters.tree import And, Condition, Filter, Not, Or

MISSING: Any = object()

Lookup = Callable[[str], Any]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(a: object, b: object) -> bool:
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) and isinstance(b, bool):
        return a is b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def _order(a: Any, b: Any, op: str) -> bool:
    if not ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    if op == "gt":
        return bool(a > b)
    if op == "gte":
        return bool(a >= b)
    if op == "lt":
        return bool(a < b)
    return bool(a <= b)


def _condition(cond: Condition, value: Any) -> bool:
    op, target = cond.operator, cond.value
    if op == "ne":
        return not _condition(cond.model_copy(update={"operator": "eq"}), value)
    if op == "nin":
        return not _condition(cond.model_copy(update={"operator": "in"}), value)
    if value is MISSING or value is None:
        return False
    if op == "eq":
        return not isinstance(value, list) and _equal(value, target)
    if op == "in":
        assert isinstance(target, tuple)
        return not isinstance(value, list) and any(_equal(value, t) for t in target)
    if op in ("gt", "gte", "lt", "lte"):
        return not isinstance(value, list) and _order(value, target, op)
    if op == "contains":
        if isinstance(value, list):
            return any(_equal(v, target) for v in value)
        return isinstance(value, str) and isinstance(target, str) and target in value
    # icontains
    assert isinstance(target, str)
    needle = target.lower()
    if isinstance(value, list):
        return any(isinstance(v, str) and v.lower() == needle for v in value)
    return isinstance(value, str) and needle in value.lower()


def matches(expr: Filter | None, lookup: Lookup) -> bool:
    """Whether a record, seen through ``lookup(field) -> value | MISSING``, matches."""
    if expr is None:
        return True
    if isinstance(expr, Condition):
        return _condition(expr, lookup(expr.field))
    if isinstance(expr, And):
        return all(matches(i, lookup) for i in expr.items)
    if isinstance(expr, Or):
        return any(matches(i, lookup) for i in expr.items)
    assert isinstance(expr, Not)
    return not matches(expr.item, lookup)
