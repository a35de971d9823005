"""The graph's data model: scopes, entity identity and the rows a write is checked into.

An entity is identified by its scope and its normalised name
(:func:`normalise`), so "Alice" and " alice " are one entity; its id is derived
from both (:func:`entity_id`), which keeps one scope's writes from ever naming
another scope's entity. A relation ``source -[TYPE]-> target`` is open until a
decision closes it (``valid_to`` set); closed relations are kept for history.

A scope here is the exact ``(user_id, agent_id, run_id)`` triple an add was
made with: each scope has a graph of its own.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from memkit._errors import GraphError

UNKNOWN = "unknown"
_NAMESPACE = uuid.UUID("6b7c2f0e-3d7a-4c1e-9a55-2f1f5d0c9e41")
_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>"
_RELATION_TYPE = re.compile(r"[^A-Z0-9]+")
MAX_NAME = 200


@dataclass(frozen=True, slots=True)
class GraphScope:
    """The scope a graph belongs to: the exact ids an add was made with."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def key(self) -> str:
        return json.dumps([self.user_id, self.agent_id, self.run_id])

    @property
    def empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.run_id is None


def normalise(name: str) -> str:
    """The identity of an entity name: NFKC, case-folded, spaces collapsed, edge punctuation off."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return _SPACES.sub(" ", text).strip().strip(_EDGE_PUNCTUATION).strip()


def relation_type(name: str) -> str:
    """``"works at"`` -> ``"WORKS_AT"``; raises GraphError when nothing is left."""
    text = _RELATION_TYPE.sub("_", unicodedata.normalize("NFKC", name).upper()).strip("_")
    if not text:
        raise GraphError(f"not a relation type: {name!r}")
    return text[:MAX_NAME]


def entity_id(scope: GraphScope, name: str) -> str:
    """The id of the entity called ``name`` in ``scope`` (the same for every spelling)."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps([scope.key, normalise(name)])))


def check_name(name: object) -> str:
    """An entity name as given, stripped; raises GraphError for an empty or huge one."""
    if not isinstance(name, str) or not normalise(name) or len(name) > MAX_NAME:
        raise GraphError(f"not an entity name: {name!r}")
    return " ".join(name.split())


def scope_fields(scope: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The scope fields given in ``scope`` (at least one) and their values."""
    fields = [f for f in ("user_id", "agent_id", "run_id") if scope.get(f) is not None]
    if not fields:
        raise GraphError("forgetting a scope's graph needs user_id, agent_id or run_id")
    return fields, {f: scope[f] for f in fields}


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    name: str
    type: str
    summary: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class Relation:
    """``source -[type]-> target``; ``weight`` counts its mentions; open while ``valid_to`` is None."""

    id: str
    source: str
    type: str
    target: str
    source_id: str
    target_id: str
    weight: float
    confidence: float
    valid_from: str
    valid_to: str | None
    memory_ids: tuple[str, ...]
    user_id: str | None
    agent_id: str | None
    run_id: str | None

    @property
    def triple(self) -> tuple[str, str, str]:
        return self.source, self.type, self.target


@dataclass(frozen=True, slots=True)
class Subgraph:
    """Entities and the open relations between them."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class NewEntity:
    name: str
    type: str = UNKNOWN
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class NewRelation:
    """A mention of ``source -[type]-> target``; missing endpoints are created as "unknown"."""

    source: str
    type: str
    target: str
    confidence: float = 1.0
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EntityRow:
    """What a store writes for an entity: names checked, id derived."""

    id: str
    name: str
    norm: str
    type: str
    summary: str | None

    @classmethod
    def of(cls, scope: GraphScope, entity: NewEntity) -> EntityRow:
        name = check_name(entity.name)
        kind = (normalise(entity.type) if isinstance(entity.type, str) else "") or UNKNOWN
        return cls(entity_id(scope, name), name, normalise(name), kind[:MAX_NAME], entity.summary)


@dataclass(frozen=True, slots=True)
class RelationRow:
    """What a store writes for a relation mention (duplicates in one call merged)."""

    id: str
    source: EntityRow
    type: str
    target: EntityRow
    weight: float
    confidence: float
    memory_ids: tuple[str, ...]


def entity_rows(scope: GraphScope, entities: Sequence[NewEntity]) -> list[EntityRow]:
    """Checked rows, one per entity: the first spelling names it; a later known type or a
    later summary wins."""
    merged: dict[str, EntityRow] = {}
    for entity in entities:
        row = EntityRow.of(scope, entity)
        before = merged.get(row.id)
        if before is not None:
            row = replace(before, type=before.type if row.type == UNKNOWN else row.type,
                          summary=before.summary if row.summary is None else row.summary)
        merged[row.id] = row
    return list(merged.values())


def relation_rows(scope: GraphScope, relations: Sequence[NewRelation]) -> list[RelationRow]:
    """Checked rows, one per distinct (source, type, target); self-loops raise GraphError."""
    merged: dict[tuple[str, str, str], RelationRow] = {}
    for rel in relations:
        source = EntityRow.of(scope, NewEntity(rel.source))
        target = EntityRow.of(scope, NewEntity(rel.target))
        if source.id == target.id:
            raise GraphError(f"a relation from {rel.source!r} to itself")
        kind = relation_type(rel.type)
        key = (source.id, kind, target.id)
        confidence = min(1.0, max(0.0, float(rel.confidence)))
        before = merged.get(key)
        if before is None:
            merged[key] = RelationRow(str(uuid.uuid4()), source, kind, target, 1.0, confidence,
                                      tuple(dict.fromkeys(rel.memory_ids)))
        else:
            merged[key] = RelationRow(  # the first spelling names the endpoints
                before.id, before.source, kind, before.target, before.weight + 1.0,
                max(before.confidence, confidence),
                tuple(dict.fromkeys((*before.memory_ids, *rel.memory_ids))))
    return list(merged.values())


def check_depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
        raise GraphError(f"depth must be 0, 1, 2 or 3, got {depth!r}")
    return depth
