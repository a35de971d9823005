"""Tolerant, bounded parsing of LLM answers into facts and operations.

An answer is read in time linear in its length whatever it holds: it is
capped at :data:`MAX_ANSWER_CHARS`, code fences and ``<think>`` blocks are
found by plain scanning, bracketed spans are found in one pass, and only spans
nested at most :data:`MAX_NESTING` deep, with integers of at most
:data:`MAX_INT_DIGITS` digits, are decoded. Anything else is a
:class:`ParseError`, which the add pipeline reports.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memkit._errors import MemkitError
from memkit._pipeline.features.lifecycle import importance_of, memory_type_of

MAX_ANSWER_CHARS = 256_000
MAX_NESTING = 16
MAX_INT_DIGITS = 64
# Spans decoded per answer: each decode is linear in its span, and this caps their sum.
_DECODE_BUDGET_FACTOR = 4

_TRAILING_COMMA = re.compile(r",[ \t\r\n]*([}\]])")
_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class ParseError(ValueError):
    """The answer holds no JSON of the expected shape."""


def clean(text: str) -> str:
    """An LLM's string made storable: lone surrogates become U+FFFD, NUL bytes go."""
    return _SURROGATE.sub("\ufffd", text).replace("\x00", "")


def _without_think(text: str) -> str:
    lowered = text.lower()
    if "<think>" not in lowered:
        return text
    out: list[str] = []
    position = 0
    while True:
        start = lowered.find("<think>", position)
        if start < 0:
            break
        end = lowered.find("</think>", start)
        if end < 0:
            break
        out.append(text[position:start])
        position = end + len("</think>")
    out.append(text[position:])
    return "".join(out)


def _candidates(text: str) -> list[str]:
    """The contents of code fences (language tag dropped), then the whole text."""
    text = _without_think(text)
    parts = text.split("```")
    found = []
    for inside in parts[1:-1:2]:
        first, newline, rest = inside.partition("\n")
        tag_only = newline and re.fullmatch(r"[A-Za-z0-9_-]*\s*", first)
        found.append(rest if tag_only else inside)
    found.append(text)
    return found


def _spans(text: str) -> list[tuple[int, int]]:
    """Balanced ``[...]``/``{...}`` spans (quotes respected) at most MAX_NESTING deep,
    outermost first, in one pass."""
    stack: list[list[int]] = []  # [start, deepest nesting inside]
    spans: list[tuple[int, int, int]] = []  # (level, start, end)
    quote, escaped, previous = "", False, ""
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "[{":
            stack.append([index, 1])
        elif char in "]}":
            if not stack:
                continue
            start, nesting = stack.pop()
            if nesting <= MAX_NESTING:
                spans.append((len(stack), start, index + 1))
            if stack:
                stack[-1][1] = max(stack[-1][1], nesting + 1)
        elif stack and (char == '"' or (char == "'" and previous in "[{,:")):
            quote = char  # an apostrophe only where a Python string could start
        if not char.isspace():
            previous = char
    spans.sort()
    return [(start, end) for _, start, end in spans]


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ParseError(f"an integer of {len(digits)} digits")
    return int(digits)


def _finite_float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise ParseError(f"a number out of range: {digits[:20]}")
    return value


def _no_constant(name: str) -> Any:
    raise ParseError(f"{name} is not a JSON number")


_NOTHING: Any = object()


def _decoded(span: str) -> Any:
    """The JSON (or Python-literal) value of a span, or _NOTHING."""
    for variant in (span, _TRAILING_COMMA.sub(r"\1", span)):
        try:
            return json.loads(variant, parse_int=_bounded_int, parse_float=_finite_float,
                              parse_constant=_no_constant)
        except (ValueError, RecursionError):
            pass
    if _LONG_DIGITS.search(span) is not None:
        return _NOTHING
    try:
        return ast.literal_eval(_TRAILING_COMMA.sub(r"\1", span))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOTHING


def _decode_first(text: str) -> Any:
    budget = _DECODE_BUDGET_FACTOR * len(text)
    for start, end in _spans(text):
        budget -= end - start
        if budget < 0:
            break
        value = _decoded(text[start:end])
        if value is not _NOTHING:
            return value
    raise ParseError("no JSON value found")


def load_json(text: str) -> Any:
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the answer is empty")
    if len(text) > MAX_ANSWER_CHARS:
        raise ParseError(f"the answer has {len(text)} characters, over the limit of "
                         f"{MAX_ANSWER_CHARS}")
    last: ParseError | None = None
    for candidate in _candidates(text):
        try:
            return _decode_first(candidate)
        except ParseError as exc:
            last = exc
    raise last or ParseError("no JSON value found")


def _unwrap(value: Any, keys: tuple[str, ...], what: str) -> list[Any]:
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                if value[key] is None:
                    raise ParseError(f"{key!r} is null; expected a list of {what}")
                value = value[key]
                break
        else:
            if len(value) == 1 and isinstance(next(iter(value.values())), list):
                value = next(iter(value.values()))
            else:
                raise ParseError(f"expected a list of {what} or an object with one of {keys}")
    if not isinstance(value, list):
        raise ParseError(f"expected a list of {what}, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted fact; ``problems`` says which of its attributes were rejected."""

    text: str
    memory_type: str | None = None
    importance: float | None = None
    problems: tuple[str, ...] = ()
    #: who or what the fact is about ("user", "Alice")
    subject: str | None = None


def _fact(item: Any) -> Fact:
    if not isinstance(item, dict):
        if not isinstance(item, str):
            raise ParseError(f"a fact must be a string, got {item!r}"[:200])
        return Fact(clean(item).strip())
    text = next((item[k] for k in ("fact", "text", "memory", "data") if k in item), None)
    if not isinstance(text, str):
        raise ParseError(f"a fact must be a string, got {text!r}"[:200])
    problems: list[str] = []
    kind: str | None = None
    raw_kind = item.get("type", item.get("memory_type"))
    if raw_kind is not None:
        try:
            kind = memory_type_of(clean(raw_kind) if isinstance(raw_kind, str) else raw_kind)
        except MemkitError as exc:
            problems.append(str(exc))
    importance: float | None = None
    if item.get("importance") is not None:
        try:
            importance = importance_of(item["importance"])
        except MemkitError as exc:
            problems.append(str(exc))
    subject = _subject(item.get("subject"), problems)
    return Fact(clean(text).strip(), kind, importance, tuple(problems), subject)


MAX_SUBJECT_CHARS = 100


def _subject(value: object, problems: list[str]) -> str | None:
    """The fact's subject: one line of at most 100 characters (absent or empty: none)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value.strip()) > MAX_SUBJECT_CHARS or any(
            c in value.strip() for c in "\r\n"):
        problems.append(f"subject must be one line of at most {MAX_SUBJECT_CHARS} "
                        f"characters, got {value!r}"[:300])
        return None
    return clean(value).strip()


def parse_fact_items(text: str) -> list[Fact]:
    """Facts from an extraction answer, with the type and importance the LLM gave;
    raises ParseError. A bad type or importance is left out and named in ``problems``."""
    items = _unwrap(load_json(text), ("facts", "fact", "memories"), "facts")
    out: dict[str, Fact] = {}
    for item in items:
        fact = _fact(item)
        if fact.text and fact.text not in out:
            out[fact.text] = fact
    return list(out.values())


def parse_facts(text: str) -> list[str]:
    """The texts of :func:`parse_fact_items`."""
    return [fact.text for fact in parse_fact_items(text)]


class Decision(BaseModel):
    """One operation the LLM asked for; ``id`` is a label shown to it, ``old_memory``
    the text it believes that label holds (cross-checked before an UPDATE or DELETE)."""

    model_config = ConfigDict(extra="ignore")

    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    id: str | None = None
    text: str | None = None
    old_memory: str | None = None

    @field_validator("event", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("id", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return str(value)
        if isinstance(value, int):
            return str(value)
        return clean(value).strip() if isinstance(value, str) else value

    @field_validator("text", "old_memory", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean(value) if isinstance(value, str) else value


_OPERATION_KEYS = ("memory", "operations", "events", "memories")


def _decision(item: Any) -> Decision | dict[str, Any]:
    """One operation, or the raw item (fit to be reported) when it fails validation."""
    if isinstance(item, dict) and "text" not in item and "data" in item:
        item = {**item, "text": item["data"]}
    try:
        return Decision.model_validate(item)
    except ValidationError:
        return _storable(item) if isinstance(item, dict) else {"value": _storable(item)}


def parse_decisions(text: str) -> list[dict[str, Any] | Decision]:
    """Operations from a decision answer. Items that fail validation come back as raw dicts.

    Raises ParseError when the answer as a whole is not a list of operations.
    """
    return [_decision(item) for item in _unwrap(load_json(text), _OPERATION_KEYS, "operations")]


def _storable(value: Any) -> Any:
    """A raw operation, fit to be reported: strings cleaned, keys made strings."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_storable(v) for v in value]
    if isinstance(value, bytes | complex) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        return repr(value)
    return value


class Triple(BaseModel):
    """One relation the extraction answer stated."""

    model_config = ConfigDict(extra="ignore")

    source: str
    relation: str
    target: str
    source_type: str = "unknown"
    target_type: str = "unknown"

    @field_validator("source_type", "target_type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        return "unknown" if value is None else value

    @field_validator("source", "relation", "target", "source_type", "target_type")
    @classmethod
    def _clean(cls, value: str) -> str:
        return clean(value)


def parse_extraction(text: str, checked: int = 100) -> tuple[list[Fact], list[Triple | dict[str, Any]]]:
    """Facts and relations from one extraction answer (the first ``checked`` relations
    validated; the rest are only counted). Relations that fail validation come back as
    raw dicts; a missing ``relations`` key is no relations. Raises ParseError."""
    return parse_fact_items(text), _relations(load_json(text), checked)


def _relations(value: Any, checked: int) -> list[Triple | dict[str, Any]]:
    raw = value.get("relations") if isinstance(value, dict) else None
    if not isinstance(raw, list):
        return []
    out: list[Triple | dict[str, Any]] = []
    for item in raw[:checked]:
        try:
            out.append(Triple.model_validate(item))
        except ValidationError:
            out.append(_storable(item) if isinstance(item, dict) else {"value": _storable(item)})
    out.extend({} for _ in raw[checked:])
    return out


Operations = tuple[list[Decision | dict[str, Any]], list[Fact], list[Triple | dict[str, Any]]]


def parse_operations(text: str, checked: int = 100) -> Operations:
    """The one-call answer: its operations, the facts its ADD and UPDATE texts state (with
    the type and importance the LLM gave them), and its relations (as
    :func:`parse_extraction`). An item without an event is a fact to ADD (a model that
    answered with facts only); items that fail validation come back as raw dicts.
    Raises ParseError when the answer as a whole is not a list of operations."""
    value = load_json(text)
    operations: list[Decision | dict[str, Any]] = []
    facts: list[Fact] = []
    for item in _unwrap(value, (*_OPERATION_KEYS, "facts"), "operations"):
        if isinstance(item, str) or (isinstance(item, dict) and "event" not in item):
            try:
                fact = _fact(item)
            except ParseError:
                operations.append(_decision(item))
                continue
            facts.append(fact)
            operations.append(Decision(event="ADD", text=fact.text))
            continue
        operation = _decision(item)
        operations.append(operation)
        if isinstance(operation, Decision) and operation.event in ("ADD", "UPDATE") and (
                operation.text and isinstance(item, dict)):
            facts.append(_fact({**item, "text": operation.text}))
    return operations, facts, _relations(value, checked)
