"""Typed field slots: how Milvus and LanceDB make every filter mean what the evaluator says.

A record's fields (built-ins and metadata) are split by type into slots, each
named by its kind and a hash of the field name (so any field name is a safe
identifier)::

    n  number (as a float)   b  boolean   s  string   l  lower-cased string
    ln / lb / ls / ll        the numbers, booleans, strings, lower-cased strings of a list

A slot holds one type, a list never sits in a scalar slot and a missing field
has no slot value, so each condition of the reference evaluator
(:mod:`memkit._filters.evaluate`) becomes a condition on one or two slots.
:func:`translate` writes the expression once; a :class:`Dialect` spells each
piece in one engine's syntax and guarantees that every leaf is true or false,
never unknown, so ``NOT`` is the exact complement.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from memkit._filters import BUILTIN_FIELDS, And, Condition, Filter, Not, Or, Scalar
from memkit.stores.base import Record

SCALAR_KINDS = ("n", "b", "s", "l")
LIST_KINDS = ("ln", "lb", "ls", "ll")


def slot(kind: str, field: str) -> str:
    """The name of ``field``'s slot of ``kind``."""
    return f"{kind}_{hashlib.blake2b(field.encode(), digest_size=8).hexdigest()}"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def slots(record: Record) -> dict[str, Any]:
    """Every slot value of ``record``: ``{slot name: value}``."""
    fields = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    fields.update({k: getattr(record, k) for k in BUILTIN_FIELDS})
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, bool):
            out[slot("b", name)] = value
        elif _is_number(value):
            out[slot("n", name)] = float(value)
        elif isinstance(value, str):
            out[slot("s", name)] = value
            out[slot("l", name)] = value.lower()
        elif isinstance(value, list):
            strings = [v for v in value if isinstance(v, str)]
            for kind, items in (("lb", [v for v in value if isinstance(v, bool)]),
                                ("ln", [float(v) for v in value if _is_number(v)]),
                                ("ls", strings), ("ll", [s.lower() for s in strings])):
                if items:
                    out[slot(kind, name)] = items
    return out


class Dialect(ABC):
    """One engine's spelling of the pieces. Every piece is a two-valued boolean expression."""

    #: an expression no record satisfies
    never: ClassVar[str]
    #: the engine's words for ``not``, ``and``, ``or``
    words: ClassVar[dict[str, str]]

    @abstractmethod
    def compare(self, slot: str, op: str, value: Scalar) -> str:
        """``slot <op> value`` (``op`` one of ``==``, ``>``, ``>=``, ``<``, ``<=``); false when
        the slot is missing."""

    @abstractmethod
    def has(self, slot: str, value: Scalar) -> str:
        """The list in ``slot`` has an element equal to ``value``."""

    @abstractmethod
    def substring(self, slot: str, text: str) -> str:
        """The string in ``slot`` contains ``text``."""

    def not_(self, expr: str) -> str:
        return f"({self.words['not']} {expr})"

    def join(self, word: str, exprs: list[str]) -> str:
        """``exprs`` (at least one) joined by ``word``: ``"and"`` or ``"or"``."""
        return "(" + f" {self.words[word]} ".join(exprs) + ")"


_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _kind(value: Scalar, scalar: bool = True) -> str:
    kind = "b" if isinstance(value, bool) else "s" if isinstance(value, str) else "n"
    return kind if scalar else "l" + kind


def _any(d: Dialect, exprs: list[str]) -> str:
    return d.join("or", exprs) if exprs else d.never


def _condition(d: Dialect, cond: Condition) -> str:
    field, op, value = cond.field, cond.operator, cond.value
    if op in ("ne", "nin"):
        positive = cond.model_copy(update={"operator": "eq" if op == "ne" else "in"})
        return d.not_(_condition(d, positive))
    if op == "in":
        assert isinstance(value, tuple)
        return _any(d, [d.compare(slot(_kind(v), field), "==", v) for v in value])
    assert not isinstance(value, tuple)
    if op == "eq":
        return d.compare(slot(_kind(value), field), "==", value)
    if op in _ORDER:
        return d.compare(slot(_kind(value), field), _ORDER[op], value)
    if op == "contains":
        element = d.has(slot(_kind(value, scalar=False), field), value)
        if not isinstance(value, str):
            return element
        return d.join("or", [d.substring(slot("s", field), value), element])
    assert isinstance(value, str)  # icontains
    needle = value.lower()
    return d.join("or", [d.substring(slot("l", field), needle), d.has(slot("ll", field), needle)])


def translate(expr: Filter, dialect: Dialect) -> str:
    """The engine expression selecting exactly the records the reference evaluator accepts."""
    if isinstance(expr, Condition):
        return _condition(dialect, expr)
    if isinstance(expr, Not):
        return dialect.not_(translate(expr.item, dialect))
    word = "and" if isinstance(expr, And) else "or"
    assert isinstance(expr, And | Or)
    return dialect.join(word, [translate(i, dialect) for i in expr.items])
