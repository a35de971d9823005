"""Entities <-> memories: the entities an add names, and the memories about an entity.

An entity is referred to by name (any spelling, or an alias) or by id. The memories
about it are those its open relations came from and those whose adds named it
(``add(..., entities=[...])``). ``search`` and ``get_all`` narrow to them with
``entity=``: the store is asked for the records of those memories' texts (their hashes),
so the narrowing is one more condition of the store's own filter and paging stays
the store's: stable across pages, never cut after the fact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memkit._errors import InvalidArgument
from memkit._filters import Filter
from memkit._models import SearchResult
from memkit._pipeline.effects import (
    EntitiesById,
    EntityMemoryIds,
    FindRelations,
    Flow,
    Get,
    ResolveNames,
    ask,
)
from memkit.graph.base import GraphError, GraphScope, check_name, entity_id
from memkit.stores.base import Record, hash_filter

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MAX_ENTITIES = 100


def entity_refs_of(value: object) -> tuple[str, ...]:
    """``entities=``: a list of entity names or ids (checked, duplicates dropped)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgument("entities must be a list of entity names or ids, e.g. "
                              '["Alice", "Acme"]')
    if len(value) > MAX_ENTITIES:
        raise InvalidArgument(f"at most {MAX_ENTITIES} entities per add, got {len(value)}")
    return tuple(dict.fromkeys(entity_ref_of(v) for v in value))


def entity_ref_of(value: object) -> str:
    """One entity name or id, checked."""
    if not isinstance(value, str):
        raise InvalidArgument(f"an entity is named by a string (its name or id), got "
                              f"{type(value).__name__}")
    try:
        return check_name(value)
    except GraphError as exc:
        raise InvalidArgument(str(exc)) from None


def named_entities(scope: GraphScope, refs: Sequence[str]) -> Flow[list[str]]:
    """The names of the entities ``refs`` name: an id of one of the scope's entities is that
    entity's name, another string a name as given; an id that names none raises."""
    by_id: dict[str, str] = {}
    ids = [r for r in refs if _ID.fullmatch(r)]
    if ids:
        by_id = {e.id: e.name for e in (yield from ask(EntitiesById(scope, ids)))}
    unknown = [r for r in ids if r not in by_id]
    if unknown:
        raise InvalidArgument(f"no entity with id {unknown[0]!r} in this scope")
    return [by_id.get(r, r) for r in refs]


def about_entity(scope: GraphScope, ref: str) -> Flow[list[str]]:
    """The ids of the memories about the entity ``ref`` (name, alias or id) names: behind its
    open relations, or named with it on add. None for an entity the scope does not know."""
    [found] = (yield from ask(EntitiesById(scope, [ref]))) if _ID.fullmatch(ref) else [None]
    if found is not None:
        name = found.name
    else:
        resolved: dict[str, str] = yield from ask(ResolveNames(scope, [ref]))
        if ref not in resolved:
            return []
        name = resolved[ref]
    named = yield from ask(EntityMemoryIds(scope, [entity_id(scope, name)]))
    relations = yield from ask(FindRelations(scope, source=name))
    relations += yield from ask(FindRelations(scope, target=name))
    return sorted({*named, *(m for r in relations for m in r.memory_ids)})


def narrowed_to_entity(scope: GraphScope, ref: str, selection: Filter | None,
                       past: bool) -> Flow[Filter | None]:
    """``selection`` narrowed to the memories about ``ref`` (their texts; ``past``: their
    earlier versions' too, for ``as_of``), or ``None`` when there are none."""
    hashes: set[str] = set()
    for memory_id in (yield from about_entity(scope, ref)):
        record: Record | None = yield from ask(Get(memory_id))
        seen: set[str] = set()
        while record is not None and record.id not in seen:
            seen.add(record.id)
            hashes.add(record.hash)
            link = record.supersedes if past else None
            record = None if link is None else (yield from ask(Get(link)))
    return hash_filter(selection, sorted(hashes)) if hashes else None


def entity_flow(scope: GraphScope, ref: str, selection: Filter | None, past: bool,
                run: Callable[[Filter | None], Flow[SearchResult]]) -> Flow[SearchResult]:
    """``run`` on ``selection`` narrowed to the memories about ``ref``; nothing when the
    entity has none."""
    narrowed = yield from narrowed_to_entity(scope, ref, selection, past)
    if narrowed is None:
        return SearchResult()
    return (yield from run(narrowed))
