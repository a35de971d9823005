"""The keyword arguments of the public operations whose signatures are written out twice
(:class:`memkit.Memory` and ``AsyncMemory``, where users see and read them): here they are
written once more, as typed dicts the request builders take (``**o: Unpack[...]``), so a
builder never repeats a parameter list. A missing key means the documented default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from memkit._pipeline.add.flow import OnError
from memkit._pipeline.search.flow import SearchMode

Timestamp = datetime | str | int | float
"""A point in time: a datetime, an ISO-8601 string or epoch seconds."""


class ScopeOptions(TypedDict, total=False):
    """Whose memories: the scope ids, or the scope given inside ``filters``."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
    filters: dict[str, Any] | None


class PurgeOptions(ScopeOptions, total=False):
    """:meth:`memkit.Memory.purge`."""

    actor_id: str | None


class WrittenOptions(TypedDict, total=False):
    """What a write sets on the memories it writes (``add``, ``update``)."""

    metadata: dict[str, Any] | None
    expires_at: Timestamp | None
    memory_type: str | None
    importance: float | None
    confidence: float | None
    surface: str | None


class AddOptions(ScopeOptions, WrittenOptions, total=False):
    """:meth:`memkit.Memory.add`."""

    prompt: str | None
    infer: bool
    timestamp: Timestamp | None
    on_error: OnError | None
    expiration_date: Timestamp | None
    dry_run: bool
    entities: Sequence[str] | None


class UpdateOptions(WrittenOptions, total=False):
    """:meth:`memkit.Memory.update` (besides the id and the new text)."""

    data: str | None
    if_updated_at: Timestamp | None


class ListOptions(ScopeOptions, total=False):
    """Which valid memories, and which page of them (``search``, ``get_all``)."""

    limit: int | None
    top_k: int | None
    as_of: Timestamp | None
    include_expired: bool
    offset: int
    entity: str | None


class SearchOptions(ListOptions, total=False):
    """:meth:`memkit.Memory.search` (besides the query)."""

    threshold: float | None
    mode: SearchMode | None
    min_confidence: float | None
    graph: bool | None
    scopes: Sequence[Mapping[str, str | None]] | None
    rerank: bool


class GetAllOptions(ListOptions, total=False):
    """:meth:`memkit.Memory.get_all`."""

    surface: str | None
