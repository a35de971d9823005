"""Any reranker litellm serves (``litellm.rerank``): Cohere, Jina, Voyage, Together,
Infinity, vLLM, Azure AI, ... ; ``model`` is litellm's model string."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memkit._errors import LLMError
from memkit._guard import check_request
from memkit._imports import aimport_litellm, import_litellm
from memkit._retry import async_retrying, provider_failure, retrying
from memkit.rerankers.base import Ranking, Reranker, complete

_FALLBACK = ("reranker.config.api_key", "search without rerank=True")


class LiteLLMReranker(Reranker):
    """``LiteLLMReranker("cohere/rerank-english-v3.0")``; extra keyword arguments go to
    ``litellm.rerank`` as they are (``api_base``, ``api_key``, provider options)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        retry_wait: float = 0.5,
        **extra: Any,
    ) -> None:
        self.model = model
        self.retries = retries
        self.retry_wait = retry_wait
        self._api_base = api_base
        self._base: dict[str, Any] = {"model": model, "timeout": timeout, **extra}
        for key, value in (("api_key", api_key), ("api_base", api_base)):
            if value is not None:
                self._base[key] = value

    def _kwargs(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        kwargs = {**self._base, "query": query, "documents": list(documents),
                  "top_n": len(documents), "return_documents": False}
        check_request(kwargs)
        return kwargs

    def rerank(self, query: str, documents: Sequence[str]) -> Ranking:
        if not documents:
            return []
        litellm = import_litellm()
        kwargs = self._kwargs(query, documents)
        try:
            for attempt in retrying(self.retries, self.retry_wait):
                with attempt:
                    response = litellm.rerank(**kwargs)
        except Exception as exc:
            raise LLMError(self._failure(litellm, exc)) from None
        return _ranking(response, len(documents))

    async def arerank(self, query: str, documents: Sequence[str]) -> Ranking:
        if not documents:
            return []
        litellm = await aimport_litellm()
        kwargs = self._kwargs(query, documents)
        try:
            async for attempt in async_retrying(self.retries, self.retry_wait):
                with attempt:
                    response = await litellm.arerank(**kwargs)
        except Exception as exc:
            raise LLMError(self._failure(litellm, exc)) from None
        return _ranking(response, len(documents))

    def _failure(self, litellm: Any, exc: BaseException) -> str:
        return provider_failure(litellm, f"rerank call to {self.model!r}", self.model,
                                self._api_base, exc, _FALLBACK)


def _ranking(response: Any, count: int) -> Ranking:
    results = response.get("results") if isinstance(response, dict) else getattr(
        response, "results", None)
    if not isinstance(results, list):
        raise LLMError(f"the reranker's answer has no results: {str(response)[:300]}")
    ranking: Ranking = []
    for item in results:
        get = item.get if isinstance(item, dict) else lambda k, o=item: getattr(o, k, None)
        index, score = get("index"), get("relevance_score")
        if isinstance(index, int) and isinstance(score, int | float):
            ranking.append((index, float(score)))
    ranking.sort(key=lambda pair: -pair[1])
    return complete(ranking, count)
