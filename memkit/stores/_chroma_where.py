"""How the Chroma store keeps a record in Chroma metadata, and filters as Chroma ``where``.

Chroma metadata is flat, its lists hold one type, and ``where`` has no
``$not``, no substring match on metadata and numeric-only ranges. So each
record's metadata holds the record as JSON (``"record"``) and a typed index of
its fields::

    n:f number (as a float: Chroma compares an integer field with a float operand
        by truncating the operand)   b:f boolean   s:f string   t:f timestamps in epoch µs
    ln:f / lb:f / ls:f / ll:f   the numbers (as floats), booleans, strings and
                                lower-cased strings of a list
    has                         the index keys present, for "missing" under negation
    id3                         the id's first three characters when they are hex digits
                                (every UUID's), else ``*``: the id's bucket for list pages

Negation is pushed to the leaves (``$ne``/``$nin``/``$not_contains`` hold on a
missing key; a negated range also accepts a key absent from ``has``).
``memory`` is the Chroma document: ``contains`` on it, as a top-level
conjunct, becomes ``where_document``. What Chroma cannot express (a substring
of any other field, ``icontains`` on ``memory``, ``contains`` on ``memory``
under ``OR``, ordering strings other than timestamps) is relaxed to "true" in
the query, which then selects a superset, and memkit keeps the candidates the
reference evaluator accepts: such filters are exact, at the cost of reading
every candidate (see :func:`translate`).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from memkit._filters import BUILTIN_FIELDS, TIME_FIELDS, And, Condition, Filter, Not, Or
from memkit._time import to_datetime
from memkit.stores.base import Record

Where = dict[str, Any]

NEVER: Where = {"has": {"$contains": ""}}  # "has" never holds the empty string
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_COMPLEMENT = {"gt": "$lte", "gte": "$lt", "lt": "$gte", "lte": "$gt"}
#: the hex buckets of ids, in order; ids whose first three characters are not hex digits
#: are in the bucket ``ODD``
BUCKETS = [f"{i:03x}" for i in range(16**3)]
ODD = "*"
SECOND_US = 1_000_000
YEAR_US = 366 * 86_400 * SECOND_US
_HEX3 = re.compile(r"[0-9a-f]{3}")

# -- metadata --------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def epoch_us(value: str) -> int | None:
    try:
        return (to_datetime(value) - _EPOCH) // timedelta(microseconds=1)
    except ValueError:
        return None


def encode_metadata(record: Record) -> dict[str, Any]:
    """The Chroma metadata of a record: the record as JSON and its typed field index."""
    meta: dict[str, Any] = {"record": json.dumps(record.payload(), ensure_ascii=False)}
    fields = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    fields.update({k: getattr(record, k) for k in BUILTIN_FIELDS})
    for name, value in fields.items():
        if isinstance(value, bool):
            meta[f"b:{name}"] = value
        elif _is_number(value):
            meta[f"n:{name}"] = float(value)
        elif isinstance(value, str):
            meta[f"s:{name}"] = value
            if name in TIME_FIELDS and (micros := epoch_us(value)) is not None:
                meta[f"t:{name}"] = micros
        elif isinstance(value, list):
            strings = [v for v in value if isinstance(v, str)]
            for key, items in (
                (f"lb:{name}", [v for v in value if isinstance(v, bool)]),
                (f"ln:{name}", [float(v) for v in value if _is_number(v)]),
                (f"ls:{name}", strings),
                (f"ll:{name}", [s.lower() for s in strings]),
            ):
                if items:
                    meta[key] = items
    meta["has"] = ["record", *sorted(meta)]
    meta["id3"] = bucket_of(record.id)
    return meta


def bucket_of(id: str) -> str:
    """The ``id3`` bucket of an id."""
    return id[:3] if _HEX3.fullmatch(id[:3]) else ODD


def now_us() -> int:
    return (datetime.now(UTC) - _EPOCH) // timedelta(microseconds=1)


def decode_record(id: str, metadata: dict[str, Any]) -> Record:
    return Record.from_payload(id, json.loads(metadata["record"]))


# -- filters ---------------------------------------------------------------


class Translated(NamedTuple):
    """A filter as Chroma's ``where`` and ``where_document`` (``None``: no condition).

    When ``exact`` is false they select a superset: the records must then be
    checked with the reference evaluator.
    """

    where: Where | None
    document: Where | None
    exact: bool


def all_of(parts: builtins.list[Where | None]) -> Where | None:
    """AND; ``None`` is true."""
    present = [p for p in parts if p is not None]
    if any(p is NEVER for p in present):
        return NEVER
    if not present:
        return None
    return present[0] if len(present) == 1 else {"$and": present}


def _any(parts: builtins.list[Where | None]) -> Where | None:
    """OR; ``None`` is true, an empty OR is false."""
    if any(p is None for p in parts):
        return None
    present = [p for p in parts if p is not NEVER]
    if not present:
        return NEVER
    return present[0] if len(present) == 1 else {"$or": present}


def _typed(field: str, value: object, kinds: tuple[str, str, str]) -> tuple[str, Any]:
    boolean, number, string = kinds
    if isinstance(value, bool):
        return f"{boolean}:{field}", value
    if isinstance(value, str):
        return f"{string}:{field}", value
    assert isinstance(value, int | float)
    return f"{number}:{field}", float(value)


def _expressible(cond: Condition) -> bool:
    """Whether Chroma's ``where`` can say exactly what ``cond`` says."""
    op, value = cond.operator, cond.value
    if op in ("contains", "icontains"):
        return not isinstance(value, str)
    if op in _COMPLEMENT:
        return _is_number(value) or (
            isinstance(value, str) and cond.field in TIME_FIELDS and epoch_us(value) is not None)
    return True


def _condition(cond: Condition, negate: bool) -> Where | None:
    field, op, value = cond.field, cond.operator, cond.value
    if op in ("ne", "nin"):
        return _condition(cond.model_copy(update={"operator": op[1:] if op == "nin" else "eq"}),
                          not negate)
    if not _expressible(cond):
        return None  # relaxed to true: the caller checks the candidates
    if op == "eq":
        key, operand = _typed(field, value, ("b", "n", "s"))
        return {key: {"$ne" if negate else "$eq": operand}}
    if op == "in":
        assert isinstance(value, tuple)
        groups: dict[str, builtins.list[Any]] = {}
        for item in value:
            key, operand = _typed(field, item, ("b", "n", "s"))
            groups.setdefault(key, []).append(operand)
        if negate:
            return all_of([{k: {"$nin": v}} for k, v in groups.items()])
        return _any([{k: {"$in": v}} for k, v in groups.items()])
    if op == "contains":  # an element of a list
        key, operand = _typed(field, value, ("lb", "ln", "ls"))
        return {key: {"$not_contains" if negate else "$contains": operand}}
    # gt / gte / lt / lte
    bound: int | float
    if isinstance(value, str):
        micros = epoch_us(value)
        assert micros is not None
        key, bound = f"t:{field}", micros
    else:
        assert isinstance(value, int | float)
        key, bound = f"n:{field}", float(value)
    if not negate:
        return {key: {f"${op}": bound}}
    return _any([{"has": {"$not_contains": key}}, {key: {_COMPLEMENT[op]: bound}}])


def _where(expr: Filter, negate: bool) -> Where | None:
    if isinstance(expr, Condition):
        return _condition(expr, negate)
    if isinstance(expr, Not):
        return _where(expr.item, not negate)
    parts = [_where(i, negate) for i in expr.items]
    return all_of(parts) if isinstance(expr, And) != negate else _any(parts)


def _conditions(expr: Filter) -> Iterator[Condition]:
    if isinstance(expr, Condition):
        yield expr
    elif isinstance(expr, Not):
        yield from _conditions(expr.item)
    else:
        for item in expr.items:
            yield from _conditions(item)


def _conjuncts(expr: Filter, negate: bool) -> Generator[tuple[Filter, bool], None, None]:
    if isinstance(expr, Not):
        yield from _conjuncts(expr.item, not negate)
    elif (isinstance(expr, And) and not negate) or (isinstance(expr, Or) and negate):
        for item in expr.items:
            yield from _conjuncts(item, negate)
    else:
        yield expr, negate


def translate(expr: Filter) -> Translated:
    """The ``where`` and ``where_document`` of ``expr``.

    Negation is pushed to the leaves, so the expression is monotone in them:
    a leaf Chroma cannot express, taken as true, widens the selection to a
    superset (``exact`` is then false). A ``memory`` substring that is a
    top-level conjunct becomes ``where_document``.
    """
    where: builtins.list[Where | None] = []
    document: builtins.list[Where] = []
    exact = True
    for item, negate in _conjuncts(expr, False):
        if (isinstance(item, Condition) and item.field == "memory"
                and item.operator == "contains" and isinstance(item.value, str)):
            if item.value == "":  # every memory contains ""
                if negate:
                    where.append(NEVER)
                continue
            document.append({"$not_contains" if negate else "$contains": item.value})
        else:
            where.append(_where(item, negate))
            exact = exact and all(_expressible(c) for c in _conditions(item))
    combined_document = None if not document else (
        document[0] if len(document) == 1 else {"$and": document}
    )
    return Translated(all_of(where), combined_document, exact)
