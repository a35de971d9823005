"""Validation of what callers pass in: scope, messages, metadata."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memkit._errors import FilterError, MemkitError, ScopeError
from memkit._filters import BUILTIN_FIELDS, Condition, Filter, all_of, check_field_name
from memkit._time import to_iso
from memkit.llms.base import Message

ROLES = frozenset({"system", "user", "assistant", "tool", "function", "developer"})


def text_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Scope:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @classmethod
    def of(
        cls, user_id: str | None, agent_id: str | None, run_id: str | None, *, required: bool = True
    ) -> Scope:
        for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ScopeError(f"{name} must be a non-empty string, got {value!r}")
        scope = cls(user_id, agent_id, run_id)
        if required and scope.empty:
            raise ScopeError()
        return scope

    @property
    def empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.run_id is None

    def filter(self) -> Filter | None:
        return all_of(*(
            Condition(field=name, operator="eq", value=value)
            for name, value in (
                ("user_id", self.user_id), ("agent_id", self.agent_id), ("run_id", self.run_id)
            )
            if value is not None
        ))


def messages_of(messages: object) -> list[Message]:
    """A string, one message dict, or a list of ``{role, content, name?}``."""
    if isinstance(messages, str):
        items: Sequence[Any] = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        items = [messages]
    elif isinstance(messages, Sequence):
        items = messages
    else:
        raise MemkitError(f"messages must be a string or a list of messages, got {type(messages).__name__}")
    out: list[Message] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        if not isinstance(item, Mapping) or "content" not in item:
            raise MemkitError(f"message {index} must be a dict with 'role' and 'content', got {item!r}")
        role = item.get("role", "user")
        if role not in ROLES:
            raise MemkitError(f"message {index} has unknown role {role!r}")
        message: Message = {"role": role, "content": _content(item["content"], index)}
        if item.get("name"):
            message["name"] = str(item["name"])
        out.append(message)
    return out


def _content(content: object, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # OpenAI content parts: keep the text ones
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(p for p in parts if p)
    if content is None:
        return ""
    raise MemkitError(f"message {index} content must be a string, got {type(content).__name__}")


def metadata_of(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise MemkitError(f"metadata must be a dict, got {type(metadata).__name__}")
    for key in metadata:
        try:
            check_field_name(key)
        except FilterError as exc:
            raise MemkitError(f"metadata key: {exc}") from None
        if key in BUILTIN_FIELDS:
            raise MemkitError(f"metadata key {key!r} is reserved for the built-in field")
    try:
        return dict(json.loads(json.dumps(dict(metadata), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise MemkitError(f"metadata must be JSON-serialisable: {exc}") from None


def limit_of(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise MemkitError(f"limit must be a positive integer, got {limit!r}")
    return limit


def timestamp_of(value: object) -> str:
    """A caller's timestamp (datetime, ISO 8601 string or epoch seconds) as the stored ISO form."""
    try:
        return to_iso(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise MemkitError(f"invalid timestamp {value!r}: {exc}") from None


SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


def scope_and_filters(
    user_id: str | None, agent_id: str | None, run_id: str | None, filters: object
) -> tuple[Scope, object]:
    """The scope, with scope fields given as plain values inside ``filters`` (mem0 2.x:
    ``filters={"user_id": "alice"}``) lifted out of the filter; the rest of the filter.

    A field given both ways with different values matches nothing. A scope field with an operator
    (``{"user_id": {"in": [...]}}``) stays in the filter; anything but a dict (a
    filter model, or something ``parse_filter`` will reject) passes through as it is.
    """
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    if not isinstance(filters, Mapping):
        return Scope.of(user_id, agent_id, run_id), filters
    rest = dict(filters)
    if rest:
        for name in SCOPE_FIELDS:
            value = rest.get(name)
            # a value that differs from the given scope stays a condition: the two never
            # both hold, so nothing matches (and no other scope is reached)
            if isinstance(value, str) and given[name] in (None, value):
                given[name] = rest.pop(name)
    scoped_by_filter = any(name in rest for name in SCOPE_FIELDS)
    scope = Scope.of(given["user_id"], given["agent_id"], given["run_id"], required=not scoped_by_filter)
    return scope, rest or None


def limit_or_top_k(limit: int | None, top_k: int | None, default: int) -> int:
    """``limit``, or mem0's name for it, ``top_k``; both given must agree."""
    if limit is not None and top_k is not None and limit != top_k:
        raise MemkitError(f"limit={limit} and top_k={top_k} disagree; give one of them")
    chosen = limit if limit is not None else top_k
    return limit_of(default if chosen is None else chosen)
