"""SQL over a table of memkit records: filter translation, the record row, pages and counts.

The SQLite and FAISS stores keep records in the same columns (``RECORD_COLUMNS``,
metadata as JSON) and query them through these functions. Filters become SQL
through :func:`translate`, a pure function whose results match
:mod:`memkit._filters.evaluate` exactly::

    >>> translate(Condition(field="user_id", operator="eq", value="alice"))
    ('user_id IS ?', ['alice'])
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from memkit._errors import FilterError, VectorStoreError
from memkit._filters import (
    BUILTIN_FIELDS,
    NUMBER_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Or,
    check_field_name,
)
from memkit.stores.base import (
    LIFECYCLE_FIELDS,
    TEMPORAL_FIELDS,
    Order,
    Record,
    cursor_key,
    cursor_of,
)

#: the SQL function :func:`translate` lowercases with (a connection registers :func:`lower`)
LOWER_FUNCTION = "memkit_lower"
RECORD_COLUMNS = (
    "id", "memory", "hash", "created_at", "updated_at", "user_id", "agent_id", "run_id",
    "metadata", *TEMPORAL_FIELDS, *LIFECYCLE_FIELDS,
)
SELECT = ", ".join(RECORD_COLUMNS)
#: :data:`SELECT` with a NULL where :class:`Record` has its vector: a row of it is Record's
#: fields in order (the metadata as text: :func:`record_in_order`)
SELECT_IN_ORDER = ", ".join((*RECORD_COLUMNS[:9], "NULL", *RECORD_COLUMNS[9:]))
assert [*RECORD_COLUMNS[:9], "vector", *RECORD_COLUMNS[9:]] == list(Record.__dataclass_fields__)

SQL = tuple[str, list[Any]]
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# -- filter translation ---------------------------------------------------------


def translate(expr: Filter | None) -> SQL:
    """A parameterised SQL condition over a records table, equal to the reference evaluator.

    Every sub-expression is two-valued (never NULL), so ``NOT`` is the exact
    complement. Field names travel as JSON-path parameters, never as SQL text.
    ``icontains`` calls the ``memkit_lower`` function the store registers.
    """
    if expr is None:
        return "1", []
    if isinstance(expr, Condition):
        return _condition(expr)
    if isinstance(expr, Not):
        sql, params = translate(expr.item)
        return f"NOT ({sql})", params
    if not expr.items:
        return ("1" if isinstance(expr, And) else "0"), []
    parts = [translate(item) for item in expr.items]
    joiner = " AND " if isinstance(expr, And) else " OR "
    assert isinstance(expr, And | Or)
    return "(" + joiner.join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]


class _Column:
    """A built-in field: a TEXT column, or NULL when missing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def text(self, template: str, params: list[Any]) -> SQL:
        if template == "{v} = ?":
            return f"{self.name} IS ?", params
        return f"({self.name} IS NOT NULL AND {template.format(v=self.name)})", params

    def number(self, template: str, params: list[Any]) -> SQL:
        return "0", []

    def boolean(self, value: bool) -> SQL:
        return "0", []

    def element(self, condition: str, params: list[Any]) -> SQL:
        return "0", []


class _NumberColumn(_Column):
    """A numeric built-in field: a REAL or INTEGER column, or NULL when missing."""

    def text(self, template: str, params: list[Any]) -> SQL:
        return "0", []

    def number(self, template: str, params: list[Any]) -> SQL:
        return f"({self.name} IS NOT NULL AND {template.format(v=self.name)})", params


class _MetadataKey:
    """A key of the metadata JSON, addressed by a JSON path passed as a parameter."""

    def __init__(self, name: str) -> None:
        self.path = f'$."{name}"'

    def text(self, template: str, params: list[Any]) -> SQL:
        value = template.format(v="json_extract(metadata, ?)")
        return (
            f"(json_type(metadata, ?) IS 'text' AND {value})",
            [self.path, self.path, *params],
        )

    def number(self, template: str, params: list[Any]) -> SQL:
        value = template.format(v="json_extract(metadata, ?)")
        return (
            f"(IFNULL(json_type(metadata, ?), '') IN ('integer', 'real') AND {value})",
            [self.path, self.path, *params],
        )

    def boolean(self, value: bool) -> SQL:
        return f"json_type(metadata, ?) IS '{'true' if value else 'false'}'", [self.path]

    def element(self, condition: str, params: list[Any]) -> SQL:
        """A list field with an element (``type``, ``value`` of json_each) meeting ``condition``."""
        return (
            "(json_type(metadata, ?) IS 'array' AND EXISTS"
            f" (SELECT 1 FROM json_each(metadata, ?) WHERE {condition}))",
            [self.path, self.path, *params],
        )


_Field = _Column | _MetadataKey
_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _condition(cond: Condition) -> SQL:
    name = check_field_name(cond.field)
    op, target = cond.operator, cond.value
    if op in ("ne", "nin"):
        positive = cond.model_copy(update={"operator": "eq" if op == "ne" else "in"})
        sql, params = _condition(positive)
        return f"NOT ({sql})", params
    field: _Field = _MetadataKey(name)
    if name in NUMBER_FIELDS:
        field = _NumberColumn(name)
    elif name in BUILTIN_FIELDS:
        field = _Column(name)
    if op == "in":
        assert isinstance(target, tuple)
        return _in(field, target)
    assert not isinstance(target, tuple)
    if op == "eq":
        return _in(field, (target,))
    if op in _ORDER:
        template = f"{{v}} {_ORDER[op]} ?"
        if isinstance(target, str):
            return field.text(template, [target])
        return field.number(template, [_number(target)])
    if op == "contains":
        return _contains(field, target)
    assert op == "icontains" and isinstance(target, str)
    needle = target.lower()
    return _any(
        field.text(f"instr({LOWER_FUNCTION}({{v}}), ?) > 0", [needle]),
        field.element(f"type = 'text' AND {LOWER_FUNCTION}(value) = ?", [needle]),
    )


def _in(field: _Field, targets: tuple[str | int | float | bool, ...]) -> SQL:
    texts = [t for t in targets if isinstance(t, str)]
    numbers = [_number(t) for t in targets if not isinstance(t, str | bool)]
    booleans = sorted({t for t in targets if isinstance(t, bool)})
    parts: list[SQL] = []
    if len(texts) == 1:
        parts.append(field.text("{v} = ?", texts))
    elif texts:
        parts.append(field.text(f"{{v}} IN ({marks(len(texts))})", texts))
    if numbers:
        parts.append(field.number(f"{{v}} IN ({marks(len(numbers))})", numbers))
    parts.extend(field.boolean(b) for b in booleans)
    return _any(*parts)


def _contains(field: _Field, target: str | int | float | bool) -> SQL:
    if isinstance(target, bool):
        kind = "true" if target else "false"
        return field.element(f"type = '{kind}'", [])
    if isinstance(target, str):
        return _any(
            field.text("instr({v}, ?) > 0", [target]),
            field.element("type = 'text' AND value = ?", [target]),
        )
    return field.element("type IN ('integer', 'real') AND value = ?", [_number(target)])


def _any(*parts: SQL) -> SQL:
    parts = tuple(p for p in parts if p[0] != "0")
    if not parts:
        return "0", []
    if len(parts) == 1:
        return parts[0]
    return "(" + " OR ".join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]


def _number(value: int | float | str | bool) -> int | float:
    assert isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise FilterError(f"{value} is outside SQLite's 64-bit integer range")
    return value


def marks(n: int) -> str:
    return ", ".join("?" * n)


def lower(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    return value.lower() if isinstance(value, str) else value


def fts_words(text: str) -> list[str]:
    """The words of ``text`` a keyword search looks for: each once, split at white space
    and control characters (so a NUL never reaches FTS5), those with a letter or digit."""
    return list(dict.fromkeys(
        w for w in _CONTROL.sub(" ", text).split() if any(ch.isalnum() for ch in w)
    ))


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the words of ``text``, each quoted so it is never syntax.

    Words repeat once, so a query of one word repeated costs what the word costs."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in fts_words(text)) or None


# -- records ------------------------------------------------------------------------


def select_page(conn: sqlite3.Connection, table: str, filter: Filter | None, limit: int,
                cursor: str | None, order: Order) -> tuple[list[Record], str | None]:
    """One ``list`` page of a records ``table`` (its columns those of ``RECORD_COLUMNS``)."""
    where, params = translate(filter)
    if order == "newest":
        by = "created_at DESC, id DESC"
        if cursor is not None:
            where, params = f"({where}) AND (created_at, id) < (?, ?)", [*params, *cursor_key(cursor)]
    else:
        by = "id"
        if cursor is not None:
            where, params = f"({where}) AND id > ?", [*params, cursor]
    rows = conn.execute(
        f"SELECT {SELECT} FROM {table} WHERE {where} ORDER BY {by} LIMIT ?",
        [*params, max(limit, 0) + 1],
    ).fetchall()
    page = [record_of(row) for row in rows[:limit]]
    return page, (cursor_of(page[-1], order) if len(rows) > limit and page else None)


def count_rows(conn: sqlite3.Connection, table: str, filter: Filter | None) -> int:
    """How many rows of a records ``table`` match ``filter``."""
    where, params = translate(filter)
    (n,) = conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()
    return int(n)



def record_row(record: Record) -> tuple[Any, ...]:
    try:
        metadata = json.dumps(
            record.metadata, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
    except (TypeError, ValueError) as exc:
        raise VectorStoreError(f"metadata of record {record.id} is not JSON: {exc}") from None
    return (
        record.id, record.memory, record.hash, record.created_at, record.updated_at,
        record.user_id, record.agent_id, record.run_id, metadata,
        *(getattr(record, k) for k in (*TEMPORAL_FIELDS, *LIFECYCLE_FIELDS)),
    )


def record_of(row: Sequence[Any]) -> Record:
    """A row of ``SELECT`` as a Record (a search builds a few hundred, so this is lean:
    positional: :data:`RECORD_COLUMNS` are :class:`Record`'s fields in order, but the vector)."""
    return Record(*row[:8], metadata_of(row[8]), None, *row[9:])  # type: ignore[call-arg]


def record_in_order(row: Sequence[Any]) -> Record:
    """A row of :data:`SELECT_IN_ORDER` as a Record (:func:`record_of`, cheaper)."""
    record = Record(*row)
    record.metadata = metadata_of(row[8])
    return record


#: metadata texts of scalar values only, parsed (searches decode the same records again and again)
_FLAT: dict[str, dict[str, Any]] = {}
_FLAT_KEPT = 8192


def metadata_of(text: str) -> dict[str, Any]:
    """A record's metadata column as a dict of its own (a copy when parsed before)."""
    if text == "{}":
        return {}
    parsed = _FLAT.get(text)
    if parsed is not None:
        return dict(parsed)  # scalar values: a copy shares nothing a caller could change
    value: dict[str, Any] = json.loads(text)
    if _flat(value):
        if len(_FLAT) >= _FLAT_KEPT:
            _FLAT.clear()
        _FLAT[text] = dict(value)
    return value


def _flat(metadata: dict[str, Any]) -> bool:
    return all(v is None or isinstance(v, str | int | float) for v in metadata.values())
