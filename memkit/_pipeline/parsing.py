"""Tolerant parsing of LLM answers into facts and operations, validated with pydantic."""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class ParseError(ValueError):
    """The answer holds no JSON of the expected shape."""


def _candidates(text: str) -> list[str]:
    text = _THINK.sub("", text)
    found = [m.group(1) for m in _FENCE.finditer(text)]
    found.append(text)
    return found


def _decode_first(text: str) -> Any:
    decoder = json.JSONDecoder()
    for index, char in enumerate(text):
        if char not in "[{":
            continue
        for variant in (text[index:], _TRAILING_COMMA.sub(r"\1", text[index:])):
            try:
                value, _ = decoder.raw_decode(variant)
                return value
            except json.JSONDecodeError:
                pass
        literal = _balanced(text, index)
        if literal is not None:
            try:
                return ast.literal_eval(_TRAILING_COMMA.sub(r"\1", literal))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    raise ParseError("no JSON value found")


def _balanced(text: str, start: int) -> str | None:
    """The bracketed span starting at ``start`` (quotes respected), for Python-literal answers."""
    depth, quote, escaped = 0, "", False
    for index in range(start, min(len(text), start + 200_000)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


def load_json(text: str) -> Any:
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the answer is empty")
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
                value = value[key]
                break
        else:
            if len(value) == 1 and isinstance(next(iter(value.values())), list):
                value = next(iter(value.values()))
            else:
                raise ParseError(f"expected a list of {what} or an object with one of {keys}")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"expected a list of {what}, got {type(value).__name__}")
    return value


class _Facts(BaseModel):
    facts: list[str]

    @field_validator("facts", mode="before")
    @classmethod
    def _texts(cls, items: list[Any]) -> list[str]:
        out: list[str] = []
        for item in items:
            if isinstance(item, dict):
                item = next((item[k] for k in ("fact", "text", "memory", "data") if k in item), None)
            if not isinstance(item, str):
                raise ValueError(f"a fact must be a string, got {item!r}")
            item = item.strip()
            if item and item not in out:
                out.append(item)
        return out


def parse_facts(text: str) -> list[str]:
    """Facts from an extraction answer; raises ParseError."""
    items = _unwrap(load_json(text), ("facts", "fact", "memories"), "facts")
    try:
        return _Facts(facts=items).facts
    except ValidationError as exc:
        raise ParseError(exc.errors()[0]["msg"]) from None


class Decision(BaseModel):
    """One operation the LLM asked for; ``id`` is a label shown to it."""

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
        return value.strip() if isinstance(value, str) else value


def parse_decisions(text: str) -> list[dict[str, Any] | Decision]:
    """Operations from a decision answer. Items that fail validation come back as raw dicts.

    Raises ParseError when the answer as a whole is not a list of operations.
    """
    items = _unwrap(load_json(text), ("memory", "operations", "events", "memories"), "operations")
    out: list[dict[str, Any] | Decision] = []
    for item in items:
        if isinstance(item, dict) and "text" not in item and "data" in item:
            item = {**item, "text": item["data"]}
        try:
            out.append(Decision.model_validate(item))
        except ValidationError:
            out.append(item if isinstance(item, dict) else {"value": item})
    return out
