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
COLUMNS = sql.SQL(
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


_FALSE = sql.SQL("FALSE")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_canonical_time(value: str) -> bool:
    try:
        return to_iso(value) == value
    except (ValueError, TypeError):
        return False


def _number(p: Params, value: int | float) -> tuple[sql.Composable, sql.Composable]:
    """The cast for a JSON number and the parameter, exact for ints, float8 for floats."""
    if isinstance(value, float):
        return sql.SQL("float8"), p.add(value)
    return sql.SQL("numeric"), sql.SQL("{}::numeric").format(p.add(value))


_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _json_compare(p: Params, value: sql.Composable, op: str, target: Scalar) -> sql.Composable:
    """``value`` (a jsonb expression) ``op`` ``target``, with the evaluator's type rules."""
    if isinstance(target, int | float) and not isinstance(target, bool):
        cast, param = _number(p, target)
        operator = sql.SQL("=" if op == "eq" else _ORDER[op])
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'number' THEN ({v})::{cast} {op} {t} ELSE FALSE END"
        ).format(v=value, cast=cast, op=operator, t=param)
    if isinstance(target, str):
        operator = sql.SQL("=" if op == "eq" else _ORDER[op])
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'string' THEN ({v} #>> '{{}}') COLLATE \"C\" {op} {t}"
            " ELSE FALSE END"
        ).format(v=value, op=operator, t=p.add(target))
    if op == "eq":
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'boolean' THEN ({v})::boolean = {t} ELSE FALSE END"
        ).format(v=value, t=p.add(target))
    return _FALSE


def _any_element(value: sql.Composable, predicate: sql.Composable) -> sql.Composable:
    return sql.SQL(
        "EXISTS (SELECT 1 FROM jsonb_array_elements({v}) AS element(e) WHERE {pred})"
    ).format(v=value, pred=predicate)


def _metadata(p: Params, cond: Condition, value: sql.Composable | None = None) -> sql.Composable:
    """A metadata key (or ``value``, another jsonb expression) tested like a JSON value."""
    if value is None:
        value = sql.SQL("(metadata -> {})").format(p.add(cond.field))
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        return _or([_json_compare(p, value, "eq", t) for t in target])
    if op in ("eq", "gt", "gte", "lt", "lte"):
        assert not isinstance(target, tuple)
        return _json_compare(p, value, op, target)
    assert not isinstance(target, tuple)  # contains
    in_list = _any_element(value, _json_compare(p, sql.SQL("e"), "eq", target))
    if not isinstance(target, str):
        return sql.SQL(
            "CASE jsonb_typeof({v}) WHEN 'array' THEN {l} ELSE FALSE END"
        ).format(v=value, l=in_list)
    return sql.SQL(
        "CASE jsonb_typeof({v}) WHEN 'string' THEN strpos({v} #>> '{{}}', {t}) > 0"
        " WHEN 'array' THEN {l} ELSE FALSE END"
    ).format(v=value, t=p.add(target), l=in_list)


def _icontains(p: Params, cond: Condition) -> sql.Composable:
    if not isinstance(cond.value, str):
        raise FilterError(f"{cond.field} icontains: expected a string, got {cond.value!r}")
    value = sql.SQL("(folded -> {})").format(p.add(cond.field))
    needle = p.add(cond.value.lower())
    in_list = _any_element(
        value, sql.SQL("jsonb_typeof(e) = 'string' AND (e #>> '{{}}') = {t}").format(t=needle)
    )
    return sql.SQL(
        "CASE jsonb_typeof({v}) WHEN 'string' THEN strpos({v} #>> '{{}}', {t}) > 0"
        " WHEN 'array' THEN {l} ELSE FALSE END"
    ).format(v=value, t=needle, l=in_list)


def _text_column(p: Params, cond: Condition) -> sql.Composable:
    column = sql.Identifier(cond.field)
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        strings = [t for t in target if isinstance(t, str)]
        if not strings:
            return _FALSE
        test = sql.SQL("{c} = ANY({t})").format(c=column, t=p.add(strings))
    elif not isinstance(target, str):
        return _FALSE
    elif op == "eq":
        test = sql.SQL("{c} = {t}").format(c=column, t=p.add(target))
    elif op == "contains":
        test = sql.SQL("strpos({c}, {t}) > 0").format(c=column, t=p.add(target))
    else:
        test = sql.SQL('{c} COLLATE "C" {op} {t}').format(
            c=column, op=sql.SQL(_ORDER[op]), t=p.add(target)
        )
    # A NULL column is a missing field: false, never NULL.
    return sql.SQL("({test} AND {c} IS NOT NULL)").format(test=test, c=column)


def _time_column(p: Params, cond: Condition) -> sql.Composable:
    """A timestamp column; NULL (a missing field) makes every test false, never NULL."""
    test = _time_test(p, cond)
    return sql.SQL("COALESCE({test}, FALSE)").format(test=test)


def _time_test(p: Params, cond: Condition) -> sql.Composable:
    column = sql.Identifier(cond.field)
    text = sql.SQL("to_char({c} AT TIME ZONE 'UTC', {f})").format(
        c=column, f=sql.Literal(ISO_FORMAT)
    )
    op, target = cond.operator, cond.value
    if op == "in":
        assert isinstance(target, tuple)
        times = [to_datetime(t) for t in target if isinstance(t, str) and _is_canonical_time(t)]
        return sql.SQL("{c} = ANY({t})").format(c=column, t=p.add(times)) if times else _FALSE
    if not isinstance(target, str):
        return _FALSE
    if op == "contains":
        return sql.SQL("strpos({text}, {t}) > 0").format(text=text, t=p.add(target))
    if op == "eq":
        if not _is_canonical_time(target):
            return _FALSE
        return sql.SQL("{c} = {t}").format(c=column, t=p.add(to_datetime(target)))
    operator = sql.SQL(_ORDER[op])
    if _is_canonical_time(target):  # the index can serve it
        return sql.SQL("{c} {op} {t}").format(c=column, op=operator, t=p.add(to_datetime(target)))
    return sql.SQL('{text} COLLATE "C" {op} {t}').format(text=text, op=operator, t=p.add(target))


def _or(parts: list[sql.Composable]) -> sql.Composable:
    if not parts:
        return _FALSE
    return sql.SQL("({})").format(sql.SQL(" OR ").join(parts))


def _translate(p: Params, expr: Filter) -> sql.Composable:
    if isinstance(expr, And):
        return sql.SQL("({})").format(sql.SQL(" AND ").join(_translate(p, i) for i in expr.items))
    if isinstance(expr, Or):
        return _or([_translate(p, i) for i in expr.items])
    if isinstance(expr, Not):
        return sql.SQL("(NOT {})").format(_translate(p, expr.item))
    if expr.operator in ("ne", "nin"):
        positive = expr.model_copy(update={"operator": "eq" if expr.operator == "ne" else "in"})
        return sql.SQL("(NOT {})").format(_translate(p, positive))
    if expr.operator == "icontains":
        return _icontains(p, expr)
    if expr.field in TIME_FIELDS:
        return _time_column(p, expr)
    if expr.field in _TEXT_COLUMNS:
        return _text_column(p, expr)
    if expr.field in NUMBER_FIELDS:  # a NULL column is SQL NULL jsonb: every test false
        return _metadata(p, expr, sql.SQL("to_jsonb({})").format(sql.Identifier(expr.field)))
    return _metadata(p, expr)


def translate(filter: Filter | None) -> tuple[sql.Composable, dict[str, Any]]:
    """The filter as a SQL boolean expression over a collection table, and its parameters.

    Parameters are named ``f0``, ``f1``, ...; values and field names are never
    spliced into the SQL text.
    """
    if filter is None:
        return sql.SQL("TRUE"), {}
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

