"""Embeddings through litellm (OpenAI, Azure, Ollama, Gemini, ... any litellm embedding model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memkit._errors import EmbeddingError
from memkit._guard import check_request
from memkit._imports import aimport_litellm, import_litellm
from memkit._retry import async_retrying, provider_failure, retrying
from memkit.embeddings.base import Embedder, Matrix, normalise

_FALLBACK = ("embedder.config.api_key", 'use the offline local embedder (embedder provider "local")')

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536, "ollama/nomic-embed-text": 768,
}


class LiteLLMEmbedder(Embedder):
    """``LiteLLMEmbedder(model="text-embedding-3-small", dimensions=None)``.

    ``dimensions`` is the vector size; unknown models without it are probed
    with one embedding call the first time the size is needed.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        api_base: str | None = None,
        batch_size: int = 256,
        retries: int = 3,
        retry_wait: float = 0.5,
        **extra: Any,
    ) -> None:
        self.model_name = model
        self._dimension = dimensions or KNOWN_DIMENSIONS.get(model)
        self.batch_size = batch_size
        self.retries = retries
        self.retry_wait = retry_wait
        self._base: dict[str, Any] = {"model": model, **extra}
        if dimensions is not None and model.startswith("text-embedding-3"):
            self._base["dimensions"] = dimensions
        for key, value in (("api_key", api_key), ("api_base", api_base)):
            if value is not None:
                self._base[key] = value

    @property
    def dimension(self) -> int:  # type: ignore[override]
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        return [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]

    def _rows(self, response: Any) -> list[list[float]]:
        data = sorted(response.data, key=lambda d: _get(d, "index"))
        return [list(_get(d, "embedding")) for d in data]

    def embed(self, texts: Sequence[str]) -> Matrix:
        litellm = import_litellm()
        rows: list[list[float]] = []
        try:
            for batch in self._batches(texts):
                kwargs = {**self._base, "input": batch}
                check_request(kwargs)
                for attempt in retrying(self.retries, self.retry_wait):
                    with attempt:
                        rows.extend(self._rows(litellm.embedding(**kwargs)))
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(provider_failure(
                litellm, f"embedding with {self.model_name!r}", self.model_name, self._base.get("api_base"), exc,
                _FALLBACK)) from None
        return normalise(rows, len(texts), self._dimension)

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        litellm = await aimport_litellm()
        rows: list[list[float]] = []
        try:
            for batch in self._batches(texts):
                kwargs = {**self._base, "input": batch}
                check_request(kwargs)
                async for attempt in async_retrying(self.retries, self.retry_wait):
                    with attempt:
                        rows.extend(self._rows(await litellm.aembedding(**kwargs)))
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(provider_failure(
                litellm, f"embedding with {self.model_name!r}", self.model_name, self._base.get("api_base"), exc,
                _FALLBACK)) from None
        return normalise(rows, len(texts), self._dimension)


def _get(item: Any, key: str) -> Any:
    return item[key] if isinstance(item, dict) else getattr(item, key)
