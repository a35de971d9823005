"""The embedder interface: texts in, one float32 row per text out."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memkit._errors import EmbeddingError
from memkit.embeddings.batching import MicroBatcher

Matrix = npt.NDArray[np.float32]


class Embedder(ABC):
    """``dimension`` and ``model_name`` identify the vector space a store is bound to."""

    dimension: int
    model_name: str
    _batcher: MicroBatcher | None = None

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Matrix:
        """A ``(len(texts), dimension)`` float32 matrix, rows L2-normalised."""

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        """Async embedding; the default runs :meth:`embed` in a worker thread, on the texts
        of this call and of the calls made on the same event loop while the previous
        batch ran (memkit.embeddings.batching)."""
        if isinstance(texts, str):
            raise TypeError("aembed() takes a sequence of strings, not a single string")
        if not texts:
            return await asyncio.to_thread(self.embed, texts)
        batcher = self._batcher
        if batcher is None:
            batcher = MicroBatcher(self.embed)
            object.__setattr__(self, "_batcher", batcher)  # a frozen dataclass can embed too
        return await batcher.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        """Search queries; an asymmetric model (e5) embeds them differently from what is
        stored. The default is :meth:`embed`."""
        return self.embed(texts)

    async def aembed_query(self, texts: Sequence[str]) -> Matrix:
        """Async :meth:`embed_query`: :meth:`aembed` unless ``embed_query`` is overridden,
        then that in a worker thread."""
        if type(self).embed_query is Embedder.embed_query:
            return await self.aembed(texts)
        return await asyncio.to_thread(self.embed_query, texts)

    def close(self) -> None:  # noqa: B027 - optional
        """Release resources."""


def normalise(rows: object, expected_count: int, dimension: int | None) -> Matrix:
    """Validate an embedder's output and L2-normalise it."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder returned something that is not a matrix: {exc}") from exc
    if matrix.ndim != 2 or matrix.shape[0] != expected_count:
        raise EmbeddingError(
            f"embedder returned shape {matrix.shape}, expected ({expected_count}, dimension)"
        )
    if dimension is not None and matrix.shape[1] != dimension:
        raise EmbeddingError(
            f"embedder returned {matrix.shape[1]}-dimensional vectors, expected {dimension}"
        )
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError("embedder returned NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)
