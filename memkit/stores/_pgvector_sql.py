"""SQL over a pgvector collection table: filter translation and the record row.

:func:`translate` turns the filter tree into parameterised SQL with the
reference semantics (:mod:`memkit._filters.evaluate`): every condition is
two-valued (never NULL, so ``NOT`` is the exact complement); ``jsonb_typeof``
keeps numbers, strings, booleans and lists apart; strings order by code point
(``COLLATE "C"``). One limit: a number compared with a number of the other kind
(int with float) goes through float8, so integers beyond 2**53 may compare
equal to a nearby float where Python says they differ.

``folded`` holds every string (and every string in a list) of the record,
built-ins and metadata alike, lower-cased by Python's :meth:`str.lower`, so that
``icontains`` means exactly what the reference evaluator says whatever the
database's locale.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from memkit._errors import FilterError
from memkit._filters import (
    BUILTIN_FIELDS,
    NUMBER_FIELDS,
    TIME_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Or,
    Scalar,
)
from memkit._postgres import Params
from memkit._time import to_datetime, to_iso
from memkit.stores.base import Record

_TEXT_COLUMNS = frozenset({"memory", "hash", "user_id", "agent_id", "run_id", "supersedes",
                           "memory_type"})
_PERIOD_COLUMNS = ("valid_from", "valid_to", "expires_at", "last_accessed_at")
ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'  # to_char() of memkit._time.to_iso
COLUMNS = (
    "id, memory, hash, user_id, agent_id, run_id, created_at, updated_at, metadata,"
    " valid_from, valid_to, expires_at, supersedes,"
    " memory_type, importance, confidence, access_count, last_accessed_at"
)
RANK = 18  # the column after COLUMNS in a ranked row
#: the columns an insert writes, and their types for a binary COPY
_INSERTED_AS = {
    "id": "text", "embedding": "vector", "memory": "text", "hash": "text", "user_id": "text",
    "agent_id": "text", "run_id": "text", "created_at": "timestamptz",
    "updated_at": "timestamptz", "metadata": "jsonb", "folded": "jsonb",
    "valid_from": "timestamptz", "valid_to": "timestamptz", "expires_at": "timestamptz",
    "supersedes": "text", "memory_type": "text", "importance": "float8",
    "confidence": "float8", "access_count": "int8", "last_accessed_at": "timestamptz",
}
INSERTED = tuple(_INSERTED_AS)
INSERTED_TYPES = tuple(_INSERTED_AS.values())


# -- filter translation --------------------------------------------------------


_FALSE = "FALSE"
_ISO_LITERAL = sql.Literal(ISO_FORMAT).as_string(None)


@functools.lru_cache(maxsize=64)
def identifier(name: str) -> str:
    """``name`` quoted as a SQL identifier (a column or table name, never a value)."""
    return sql.Identifier(name).as_string(None)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_canonical_time(value: str) -> bool:
    try:
        return to_iso(value) == value
    except (ValueError, TypeError):
        return False


def _number(p: Params, value: int | float) -> tuple[str, str]:
    """The cast for a JSON number and the parameter, exact for ints, float8 for floats."""
    if isinstance(value, float):
        return "float8", p.add(value)
    return "numeric", f"{p.add(value)}::numeric"


_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _json_compare(p: Params, value: str, op: str, target: Scalar) -> str:
    """``value`` (a jsonb expression) ``op`` ``target``, with the evaluator's type rules."""
    operator = "=" if op == "eq" else _ORDER.get(op, "")
    if isinstance(target, int | float) and not isinstance(target, bool):
        cast, param = _number(p, target)
        return (f"CASE jsonb_typeof({value}) WHEN 'number' THEN ({value})::{cast} {operator}"
                f" {param} ELSE FALSE END")
    if isinstance(target, str):
        return (f"CASE jsonb_typeof({value}) WHEN 'string' THEN ({value} #>> '{{}}')"
                f' COLLATE "C" {operator} {p.add(target)} ELSE FALSE END')
    if op == "eq":
        return (f"CASE jsonb_typeof({value}) WHEN 'boolean' THEN ({value})::boolean ="
                f" {p.add(target)} ELSE FALSE END")
    return _FALSE


def _any_element(value: str, predicate: str) -> str:
    return f"EXISTS (SELECT 1 FROM jsonb_array_elements({value}) AS element(e) WHERE {predicate})"


def _metadata(p: Params, cond: Condition, value: str | None = None) -> str:
    """A metadata key (or ``value``, another jsonb expression) tested like a JSON value."""
    if value is None:
        value = f"(metadata -> {p.add(cond.field)})"
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        return _or([_json_compare(p, value, "eq", t) for t in target])
    if op in ("eq", "gt", "gte", "lt", "lte"):
        assert not isinstance(target, tuple)
        return _json_compare(p, value, op, target)
    assert not isinstance(target, tuple)  # contains
    in_list = _any_element(value, _json_compare(p, "e", "eq", target))
    if not isinstance(target, str):
        return f"CASE jsonb_typeof({value}) WHEN 'array' THEN {in_list} ELSE FALSE END"
    return (f"CASE jsonb_typeof({value}) WHEN 'string' THEN strpos({value} #>> '{{}}',"
            f" {p.add(target)}) > 0 WHEN 'array' THEN {in_list} ELSE FALSE END")


def _icontains(p: Params, cond: Condition) -> str:
    if not isinstance(cond.value, str):
        raise FilterError(f"{cond.field} icontains: expected a string, got {cond.value!r}")
    value = f"(folded -> {p.add(cond.field)})"
    needle = p.add(cond.value.lower())
    in_list = _any_element(value, f"jsonb_typeof(e) = 'string' AND (e #>> '{{}}') = {needle}")
    return (f"CASE jsonb_typeof({value}) WHEN 'string' THEN strpos({value} #>> '{{}}', {needle})"
            f" > 0 WHEN 'array' THEN {in_list} ELSE FALSE END")


def _text_column(p: Params, cond: Condition) -> str:
    column = identifier(cond.field)
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        strings = [t for t in target if isinstance(t, str)]
        if not strings:
            return _FALSE
        test = f"{column} = ANY({p.add(strings)})"
    elif not isinstance(target, str):
        return _FALSE
    elif op == "eq":
        test = f"{column} = {p.add(target)}"
    elif op == "contains":
        test = f"strpos({column}, {p.add(target)}) > 0"
    else:
        test = f'{column} COLLATE "C" {_ORDER[op]} {p.add(target)}'
    # A NULL column is a missing field: false, never NULL.
    return f"({test} AND {column} IS NOT NULL)"


def _time_column(p: Params, cond: Condition) -> str:
    """A timestamp column; NULL (a missing field) makes every test false, never NULL."""
    return f"COALESCE({_time_test(p, cond)}, FALSE)"


def _time_test(p: Params, cond: Condition) -> str:
    column = identifier(cond.field)
    text = f"to_char({column} AT TIME ZONE 'UTC', {_ISO_LITERAL})"
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        times = [to_datetime(t) for t in target if isinstance(t, str) and _is_canonical_time(t)]
        return f"{column} = ANY({p.add(times)})" if times else _FALSE
    if not isinstance(target, str):
        return _FALSE
    if op == "contains":
        return f"strpos({text}, {p.add(target)}) > 0"
    if op == "eq":
        if not _is_canonical_time(target):
            return _FALSE
        return f"{column} = {p.add(to_datetime(target))}"
    if _is_canonical_time(target):  # the index can serve it
        return f"{column} {_ORDER[op]} {p.add(to_datetime(target))}"
    return f'{text} COLLATE "C" {_ORDER[op]} {p.add(target)}'


def _or(parts: list[str]) -> str:
    return f"({' OR '.join(parts)})" if parts else _FALSE


def _translate(p: Params, expr: Filter) -> str:
    if isinstance(expr, And):
        return f"({' AND '.join(_translate(p, i) for i in expr.items)})"
    if isinstance(expr, Or):
        return _or([_translate(p, i) for i in expr.items])
    if isinstance(expr, Not):
        return f"(NOT {_translate(p, expr.item)})"
    if expr.operator in ("ne", "nin"):
        positive = expr.model_copy(update={"operator": "eq" if expr.operator == "ne" else "in"})
        return f"(NOT {_translate(p, positive)})"
    if expr.operator == "icontains":
        return _icontains(p, expr)
    if expr.field in TIME_FIELDS:
        return _time_column(p, expr)
    if expr.field in _TEXT_COLUMNS:
        return _text_column(p, expr)
    if expr.field in NUMBER_FIELDS:  # a NULL column is SQL NULL jsonb: every test false
        return _metadata(p, expr, f"to_jsonb({identifier(expr.field)})")
    return _metadata(p, expr)


def translate(filter: Filter | None) -> tuple[str, dict[str, Any]]:
    """The filter as the text of a SQL boolean expression over a collection table, and its
    parameters.

    Parameters are named ``f0``, ``f1``, ... (``%(f0)s`` in the text); values and
    metadata keys are never spliced into the SQL text, only the quoted names of
    built-in columns. Text, not :mod:`psycopg.sql` objects: a search's filter is
    translated on every call, and composing those costs more than the query.
    """
    if filter is None:
        return "TRUE", {}
    params = Params()
    return _translate(params, filter), params.values


# -- records -------------------------------------------------------------------


def _lowered(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, list):
        return [v.lower() if isinstance(v, str) else v for v in value]
    return None


# The records of one insert mostly share their timestamps: each is parsed once.
_iso = functools.lru_cache(maxsize=4096)(to_iso)
_when = functools.lru_cache(maxsize=4096)(to_datetime)


def folded(record: Record) -> dict[str, Any]:
    """Lower-cased strings of every field ``icontains`` can see (built-ins shadow metadata)."""
    view = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    view.update(
        memory=record.memory, hash=record.hash, user_id=record.user_id,
        agent_id=record.agent_id, run_id=record.run_id,
        created_at=_iso(record.created_at), updated_at=_iso(record.updated_at),
        supersedes=record.supersedes, memory_type=record.memory_type,
        **{k: _iso(getattr(record, k)) for k in _PERIOD_COLUMNS if getattr(record, k)},
    )
    out = {k: _lowered(v) for k, v in view.items()}
    return {k: v for k, v in out.items() if v is not None}


def row_params(record: Record) -> dict[str, Any]:
    return {
        "id": record.id, "embedding": record.vector, "memory": record.memory,
        "hash": record.hash, "user_id": record.user_id, "agent_id": record.agent_id,
        "run_id": record.run_id, "created_at": _when(record.created_at),
        "updated_at": _when(record.updated_at), "metadata": Jsonb(record.metadata),
        "folded": Jsonb(folded(record)), "supersedes": record.supersedes,
        "memory_type": record.memory_type, "importance": record.importance,
        "confidence": record.confidence, "access_count": record.access_count,
        **{k: None if getattr(record, k) is None else _when(getattr(record, k))
           for k in _PERIOD_COLUMNS},
    }


def row_of(record: Record) -> tuple[Any, ...]:
    """The values of :data:`INSERTED` for ``record``."""
    params = row_params(record)
    return tuple(params[column] for column in INSERTED)


def record_of(row: Sequence[Any]) -> Record:
    id, memory, hash, user_id, agent_id, run_id, created_at, updated_at, metadata = row[:9]
    valid_from, valid_to, expires_at = (None if t is None else to_iso(t) for t in row[9:12])
    memory_type, importance, confidence, access_count, last_accessed_at = row[13:18]
    return Record(
        id=id, memory=memory, hash=hash, user_id=user_id, agent_id=agent_id, run_id=run_id,
        created_at=to_iso(created_at), updated_at=to_iso(updated_at), metadata=dict(metadata),
        valid_from=valid_from, valid_to=valid_to, expires_at=expires_at, supersedes=row[12],
        memory_type=memory_type, importance=importance, confidence=confidence,
        access_count=access_count,
        last_accessed_at=None if last_accessed_at is None else to_iso(last_accessed_at),
    )

