"""Filters checked on text fields held in RAM: the SQLite store's scope check without SQL.

The store keeps :data:`FIELDS` of every row beside its vector (a column each, ``None``
where the field is missing), so the filter of a search (a scope and the validity
window, mostly) is checked on its best rows without asking the file.
:func:`columnar` turns a filter into such a check, with the reference evaluator's
semantics (:mod:`memkit._filters.evaluate`) for fields holding text or nothing, or
returns None when the filter names another field or asks ``contains``/``icontains``:
SQL checks those. The scope fields are also held as numbers, one per distinct text
(:class:`Held`): a scope check then compares integers, not strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memkit._filters import And, Condition, Filter, Not, Or

#: the fields held in RAM: the scope, the creation time and the validity window
FIELDS = ("user_id", "agent_id", "run_id", "created_at", "valid_from", "valid_to", "expires_at")
_COLUMN = {name: i for i, name in enumerate(FIELDS)}

#: the fields also held as codes (:class:`Held`): the first of :data:`FIELDS`
SCOPE = ("user_id", "agent_id", "run_id")
assert FIELDS[: len(SCOPE)] == SCOPE

Columns = Sequence[npt.NDArray[np.object_] | None]
"""A column per field of :data:`FIELDS` (in that order), each value ``str`` or ``None``;
``None`` for a column whose every value is ``None`` (nothing to compare)."""


@dataclass(frozen=True, slots=True)
class Held:
    """What a check reads: ``values``, the :data:`Columns`, and for the fields of
    :data:`SCOPE` (those ``coded`` holds, in order; None: not held so) each row's text as its
    number in ``codes`` (-1: no text): a scope check compares integers."""

    values: Columns
    coded: Sequence[npt.NDArray[np.int64] | None] = ()
    codes: Mapping[str, int] = field(default_factory=dict)


def encode(column: npt.NDArray[np.object_], codes: dict[str, int]) -> npt.NDArray[np.int64]:
    """Each value's number in ``codes`` (a text not met before gets the next one), -1 for
    a value that is not text."""
    return np.fromiter((codes.setdefault(v, len(codes)) if isinstance(v, str) else -1
                        for v in column), np.int64, len(column))


def held(values: Columns) -> Held:
    """``values`` with the scope fields coded (one set of codes for them all)."""
    codes: dict[str, int] = {}
    return Held(values, [None if (column := values[i]) is None else encode(column, codes)
                         for i in range(len(SCOPE))], codes)


Check = Callable[[Held, npt.NDArray[np.intp]], npt.NDArray[np.bool_]]
"""Which of the rows at some positions of the columns a filter keeps."""


def columnar(expr: Filter | None) -> Check | None:
    """Which of some rows ``expr`` keeps, or None when it cannot be told from the fields."""
    if expr is None:
        return lambda columns, at: np.ones(len(at), np.bool_)
    if isinstance(expr, Condition):
        return _condition(expr)
    if isinstance(expr, Not):
        inner = columnar(expr.item)
        return None if inner is None else lambda columns, at: ~inner(columns, at)
    items = [columnar(item) for item in expr.items]
    parts = [item for item in items if item is not None]
    if len(parts) < len(items):
        return None
    both = isinstance(expr, And)
    assert both or isinstance(expr, Or)

    def combined(columns: Held, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        out = np.full(len(at), both, np.bool_)
        for part in parts:
            if both:
                out &= part(columns, at)
            else:
                out |= part(columns, at)
        return out

    return combined


def _condition(cond: Condition) -> Check | None:
    column = _COLUMN.get(cond.field)
    op, target = cond.operator, cond.value
    if column is None or op in ("contains", "icontains"):
        return None
    if op in ("ne", "nin"):  # exactly NOT eq / NOT in: a missing field passes
        inner = _condition(cond.model_copy(update={"operator": "eq" if op == "ne" else "in"}))
        assert inner is not None
        return lambda columns, at: ~inner(columns, at)
    targets = target if isinstance(target, tuple) else (target,)
    texts = [t for t in targets if isinstance(t, str)]  # text never equals nor orders a number

    if op in ("eq", "in"):
        def equal(columns: Held, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
            out, values = np.zeros(len(at), np.bool_), columns.values[column]
            coded = columns.coded[column] if column < len(columns.coded) else None
            if coded is not None:  # a row's code is a text's iff it holds that text
                numbers = coded[at]
                for text in texts:
                    code = columns.codes.get(text)
                    if code is not None:
                        out |= numbers == code
            elif values is not None:
                values = values[at]
                for text in texts:
                    out |= values == text
            return out

        return equal

    def ordered(columns: Held, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        out, values = np.zeros(len(at), np.bool_), columns.values[column]
        if values is not None and texts:  # an order operator takes one value
            values = values[at]
            present = np.asarray(values != None, np.bool_)  # noqa: E711 (elementwise)
            out[present] = _ORDER[op](values[present], texts[0])
        return out

    return ordered


_ORDER: dict[str, Callable[[npt.NDArray[np.object_], str], npt.NDArray[np.bool_]]] = {
    "gt": lambda values, text: np.asarray(values > text, np.bool_),
    "gte": lambda values, text: np.asarray(values >= text, np.bool_),
    "lt": lambda values, text: np.asarray(values < text, np.bool_),
    "lte": lambda values, text: np.asarray(values <= text, np.bool_),
}
