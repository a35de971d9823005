"""Filters checked on text fields held in RAM: the SQLite store's scope check without SQL.

The store keeps :data:`FIELDS` of every row beside its vector (a column each, ``None``
where the field is missing), so the filter of a search (a scope and the validity
window, mostly) is checked on its best rows without asking the file.
:func:`columnar` turns a filter into such a check, with the reference evaluator's
semantics (:mod:`memkit._filters.evaluate`) for fields holding text or nothing, or
returns None when the filter names another field or asks ``contains``/``icontains``:
SQL checks those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from memkit._filters import And, Condition, Filter, Not, Or

#: the fields held in RAM: the scope, the creation time and the validity window
FIELDS = ("user_id", "agent_id", "run_id", "created_at", "valid_from", "valid_to", "expires_at")
_COLUMN = {name: i for i, name in enumerate(FIELDS)}

Columns = Sequence[npt.NDArray[np.object_] | None]
"""A column per field of :data:`FIELDS` (in that order), each value ``str`` or ``None``;
``None`` for a column whose every value is ``None`` (nothing to compare)."""
Check = Callable[[Columns, npt.NDArray[np.intp]], npt.NDArray[np.bool_]]
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

    def combined(columns: Columns, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
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
        def equal(columns: Columns, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
            out, values = np.zeros(len(at), np.bool_), columns[column]
            if values is not None:
                values = values[at]
                for text in texts:
                    out |= values == text
            return out

        return equal

    def ordered(columns: Columns, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        out, values = np.zeros(len(at), np.bool_), columns[column]
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
