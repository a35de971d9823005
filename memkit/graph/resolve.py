"""Identity beyond spelling: which entity a name means, by id, by alias, then by embedding.

Name embeddings are kept with the entities (float16, in the graph's own tables
or node properties), never in an engine's vector index; :func:`resolve_names`
is :meth:`~memkit.graph.base.GraphStore.resolve` written once for every engine.
"""

from __future__ import annotations

import base64
from collections.abc import Generator, Sequence
from typing import Any, Protocol

import numpy as np

from memkit.graph.model import GraphScope, check_name, entity_id, normalise


def encode_vector(vector: Sequence[float]) -> str:
    """A name embedding as stored: float16, base64 (small enough for any engine's parameters)."""
    return base64.b64encode(np.asarray(vector, dtype=np.float16).tobytes()).decode()


def decode_vector(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)


def nearest(vector: Sequence[float], candidates: Sequence[tuple[str, str]],
            threshold: float) -> str | None:
    """The id among ``candidates`` (id, encoded vector) whose vector is nearest to ``vector``
    by cosine, when that cosine is at least ``threshold``."""
    query = np.asarray(vector, dtype=np.float32)
    # vectors of another model (a re-embedding's failed graph write) compare with nothing
    rows = [(id, row) for id, row in ((id, decode_vector(v)) for id, v in candidates)
            if row.shape == query.shape]
    if not rows:
        return None
    matrix = np.stack([row for _, row in rows])
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    cosines = matrix @ query / np.where(norms == 0, 1.0, norms)
    best = int(np.argmax(cosines))
    return rows[best][0] if float(cosines[best]) >= threshold else None


class NameLookups(Protocol):
    """The engine queries :func:`resolve_names` is built from."""

    def names_by_id(self, scope: GraphScope,
                    ids: Sequence[str]) -> Generator[Any, Any, dict[str, str]]: ...
    def names_by_alias(self, scope: GraphScope,
                       norms: Sequence[str]) -> Generator[Any, Any, dict[str, str]]: ...
    def embedded(self, scope: GraphScope) -> Generator[Any, Any, list[tuple[str, str, str]]]: ...
    def add_aliases(self, scope: GraphScope,
                    aliases: Sequence[tuple[str, str]]) -> Generator[Any, Any, None]: ...
    def support_aliases(self, scope: GraphScope, norms: Sequence[str],
                        memory_ids: Sequence[str]) -> Generator[Any, Any, None]: ...


def resolve_names(engine: NameLookups, scope: GraphScope, names: Sequence[str],
                  vectors: Sequence[Sequence[float]] | None, threshold: float,
                  memory_ids: Sequence[str] = ()) -> Generator[Any, Any, dict[str, str]]:
    """:meth:`GraphStore.resolve`, once for every engine: by id, then alias, then embedding.
    The aliases used are recorded as used by ``memory_ids``."""
    ids = {name: entity_id(scope, check_name(name)) for name in names}
    by_id = yield from engine.names_by_id(scope, sorted(set(ids.values())))
    found = {name: by_id[i] for name, i in ids.items() if i in by_id}
    rest = {normalise(n): n for n in names if n not in found}
    used: list[str] = []
    if rest:
        by_alias = yield from engine.names_by_alias(scope, sorted(rest))
        found.update({rest.pop(norm): name for norm, name in by_alias.items()})
        used += sorted(by_alias)
    if rest and vectors is not None:
        vector_of = dict(zip(names, vectors, strict=True))
        rows = yield from engine.embedded(scope)
        candidates = [(id, embedding) for id, _, embedding in rows]
        name_of = {id: name for id, name, _ in rows}
        aliases = []
        for norm, name in rest.items():
            match = nearest(vector_of[name], candidates, threshold)
            if match is not None:
                found[name] = name_of[match]
                aliases.append((norm, match))
        if aliases:
            yield from engine.add_aliases(scope, aliases)
            used += [norm for norm, _ in aliases]
    if used and memory_ids:
        yield from engine.support_aliases(scope, used, memory_ids)
    return found
