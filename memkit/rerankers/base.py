"""The reranker interface: a query and documents in, the documents' order out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

Ranking = list[tuple[int, float]]
"""``(index into the documents, score)``, best first; every document appears once."""


class Reranker(ABC):
    """Implement both methods; the async one must not block the event loop."""

    @abstractmethod
    def rerank(self, query: str, documents: Sequence[str]) -> Ranking: ...

    @abstractmethod
    async def arerank(self, query: str, documents: Sequence[str]) -> Ranking: ...

    def close(self) -> None:  # noqa: B027 - optional
        """Release resources."""


def complete(ranking: Ranking, count: int) -> Ranking:
    """``ranking`` with each index kept once, and the documents it left out after it, in
    their first order, scored below the lowest score given."""
    seen: set[int] = set()
    kept: Ranking = []
    for index, score in ranking:
        if 0 <= index < count and index not in seen:
            seen.add(index)
            kept.append((index, score))
    floor = min((score for _, score in kept), default=0.0)
    rest = [i for i in range(count) if i not in seen]
    return kept + [(i, floor - 1.0 - n) for n, i in enumerate(rest)]
