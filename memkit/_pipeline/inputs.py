"""Validation of what callers pass in: scope, messages, metadata, queries, ids.

Every limit below raises a :class:`~memkit.MemkitError` naming it; the REST
server answers those with 400. Text may not hold NUL or lone surrogates
(:mod:`memkit._text`); filters are checked by :func:`memkit._filters.parse_filter`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memkit._errors import FilterError, InvalidArgument, ScopeError
from memkit._filters import BUILTIN_FIELDS, Condition, Filter, all_of, check_field_name
from memkit._text import bad_code_point
from memkit._time import to_iso
from memkit.llms.base import Message

ROLES = frozenset({"system", "user", "assistant", "tool", "function", "developer"})

MAX_TEXT_CHARS = 100_000  # one message, one memory's text
MAX_MESSAGES = 10_000
MAX_CONVERSATION_CHARS = 1_000_000
MAX_QUERY_CHARS = 200_000
MAX_ID_CHARS = 256  # user_id, agent_id, run_id, a memory id, a message's name
MAX_METADATA_CHARS = 64_000  # the metadata as compact JSON
MAX_METADATA_DEPTH = 16
MAX_KEYWORD_TERMS = 32
MAX_KEYWORD_TERM_CHARS = 64
_INT64 = (-(2**63), 2**63 - 1)
_SEPARATORS = re.compile(r"[\s\x00-\x1f\x7f]+")


def text_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()


def text_of(value: object, what: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    """A caller's string: at most ``limit`` characters, no NUL, no lone surrogate."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidArgument(f"{what} has {len(value)} characters; the limit is {limit}")
    problem = bad_code_point(value)
    if problem is not None:
        raise InvalidArgument(f"{what} {problem}")
    return value


def query_of(query: object) -> str:
    """A search query; a NUL in it reads as a space (a query is never stored)."""
    if isinstance(query, str):
        query = query.replace("\x00", " ")
    return text_of(query, "the query", limit=MAX_QUERY_CHARS)


def bounded_words(query: str) -> str:
    """The words keyword search looks for: split at whitespace and control characters,
    kept when they hold a letter or digit, de-duplicated ignoring case, at most
    MAX_KEYWORD_TERMS of at most MAX_KEYWORD_TERM_CHARS characters each."""
    terms: dict[str, str] = {}
    for word in _SEPARATORS.split(query):
        if not any(ch.isalnum() for ch in word):
            continue
        word = word[:MAX_KEYWORD_TERM_CHARS]
        terms.setdefault(word.casefold(), word)
        if len(terms) == MAX_KEYWORD_TERMS:
            break
    return " ".join(terms.values())


def memory_id_of(memory_id: object) -> str | None:
    """The id as given, or ``None`` when no memory can have it."""
    if not isinstance(memory_id, str) or not memory_id or len(memory_id) > MAX_ID_CHARS:
        return None
    return None if bad_code_point(memory_id) is not None else memory_id


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
                raise ScopeError(f"{name} must be a non-empty string, got {value!r}"[:300])
            if isinstance(value, str):
                problem = bad_code_point(value)
                if len(value) > MAX_ID_CHARS or problem is not None:
                    raise ScopeError(f"{name} {problem or f'has over {MAX_ID_CHARS} characters'}")
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
        raise InvalidArgument(f"messages must be a string or a list of messages, got {type(messages).__name__}")
    if len(items) > MAX_MESSAGES:
        raise InvalidArgument(f"{len(items)} messages; the limit is {MAX_MESSAGES} per call")
    out: list[Message] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        if not isinstance(item, Mapping) or "content" not in item:
            raise InvalidArgument(
                f"message {index} must be a dict with 'role' and 'content', got {item!r}"[:300])
        role = item.get("role", "user")
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidArgument(f"message {index} has unknown role {role!r}"[:300])
        content = text_of(_content(item["content"], index), f"message {index} content")
        message: Message = {"role": role, "content": content}
        if item.get("name"):
            message["name"] = text_of(str(item["name"]), f"message {index} name",
                                      limit=MAX_ID_CHARS)
        out.append(message)
    total = sum(len(m["content"]) for m in out)
    if total > MAX_CONVERSATION_CHARS:
        raise InvalidArgument(f"the messages hold {total} characters; the limit is "
                          f"{MAX_CONVERSATION_CHARS} per call")
    return out


def _content(content: object, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # OpenAI content parts: keep the text ones
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    if content is None:
        return ""
    raise InvalidArgument(f"message {index} content must be a string, got {type(content).__name__}")


def metadata_of(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidArgument(f"metadata must be a dict, got {type(metadata).__name__}")
    for key in metadata:
        try:
            check_field_name(key)
        except FilterError as exc:
            raise InvalidArgument(f"metadata key: {exc}") from None
        if key in BUILTIN_FIELDS:
            raise InvalidArgument(f"metadata key {key!r} is reserved for the built-in field")
    _check_values(metadata)
    try:
        encoded = json.dumps(dict(metadata), allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"metadata must be JSON-serialisable: {exc}"[:300]) from None
    if len(encoded) > MAX_METADATA_CHARS:
        raise InvalidArgument(
            f"metadata is {len(encoded)} characters as JSON; the limit is {MAX_METADATA_CHARS}")
    return dict(json.loads(encoded))


def _check_values(metadata: Mapping[Any, Any]) -> None:
    """Depth, strings and integers of metadata, without recursion."""
    pending: list[tuple[object, int, str]] = [(metadata, 1, "metadata")]
    while pending:
        value, depth, where = pending.pop()
        if isinstance(value, str):
            problem = bad_code_point(value)
            if problem is not None:
                raise InvalidArgument(f"{where} {problem}")
        elif isinstance(value, int) and not isinstance(value, bool):
            if not _INT64[0] <= value <= _INT64[1]:
                raise InvalidArgument(f"{where}: integers must fit in 64 bits")
        elif isinstance(value, Mapping | list | tuple):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidArgument(f"metadata is nested over {MAX_METADATA_DEPTH} levels deep")
            if isinstance(value, Mapping):
                for key, item in value.items():
                    if isinstance(key, str):
                        pending.append((key, depth + 1, f"{where} key"))
                    pending.append((item, depth + 1, f"{where}[{str(key)[:40]!r}]"))
            else:
                pending.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))


def on_error_of(value: object) -> Literal["raise", "degrade"]:
    if value == "raise" or value == "degrade":
        return value
    raise InvalidArgument(f"on_error must be 'raise' or 'degrade', got {value!r}"[:300])


def limit_of(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit must be a positive integer, got {limit!r}")
    return limit


def bounded_int(name: str, value: object, high: int) -> int:
    """``value`` if it is an integer from 1 to ``high``; else a MemkitError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= high:
        raise InvalidArgument(f"{name} must be an integer from 1 to {high}, got {value!r}"[:300])
    return value


def timestamp_of(value: object) -> str:
    """A caller's timestamp (datetime, ISO 8601 string or epoch seconds) as the stored ISO form."""
    try:
        return to_iso(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise InvalidArgument(f"invalid timestamp {value!r}: {exc}") from None


SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


def scope_and_filters(
    user_id: str | None, agent_id: str | None, run_id: str | None, filters: Mapping[str, Any] | None,
    *, required: bool = True,
) -> tuple[Scope, dict[str, Any] | None]:
    """The scope, with scope fields given as plain values inside ``filters`` (mem0 2.x:
    ``filters={"user_id": "alice"}``) lifted out of the filter; the rest of the filter.

    A field given both ways with different values matches nothing. A scope field with an operator
    (``{"user_id": {"in": [...]}}``) stays in the filter; anything but a dict (a
    filter model, or something ``parse_filter`` will reject) passes through as it is.
    """
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    if filters is not None and not isinstance(filters, Mapping):
        # not a filter object: parse_filter reports it as a FilterError
        scope = Scope.of(user_id, agent_id, run_id, required=required)
        return scope, filters
    rest = None if filters is None else dict(filters)
    if rest is not None:
        for name in SCOPE_FIELDS:
            value = rest.get(name)
            # a value that differs from the given scope stays a condition: the two never
            # both hold, so nothing matches (and no other scope is reached)
            if isinstance(value, str) and given[name] in (None, value):
                given[name] = rest.pop(name)
    scoped_by_filter = rest is not None and any(name in rest for name in SCOPE_FIELDS)
    scope = Scope.of(given["user_id"], given["agent_id"], given["run_id"],
                     required=required and not scoped_by_filter)
    return scope, rest or None


def limit_or_top_k(limit: int | None, top_k: int | None, default: int) -> int:
    """``limit``, or mem0's name for it, ``top_k``; both given must agree."""
    if limit is not None and top_k is not None and limit != top_k:
        raise InvalidArgument(f"limit={limit} and top_k={top_k} disagree; give one of them")
    chosen = limit if limit is not None else top_k
    return limit_of(default if chosen is None else chosen)
