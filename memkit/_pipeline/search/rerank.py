"""Search results reordered by a reranker (``search(..., rerank=True)``): a feature wrapped
around a ranking, with the handler that answers its :class:`Rerank` effect."""

from __future__ import annotations

from memkit._errors import ConfigError
from memkit._models import SearchResult
from memkit._pipeline.calls import Handlers, Job
from memkit._pipeline.effects import Flow, Rerank, ask
from memkit.rerankers.base import Ranking, Reranker


def reranked_flow(search: Flow[SearchResult], query: str, limit: int) -> Flow[SearchResult]:
    """``search`` (asked for more candidates than ``limit``), its results reordered by the
    reranker and cut to ``limit``; each result's score becomes the reranker's."""
    found = yield from search
    if not found.results:
        return found
    ranking = yield from ask(Rerank(query, tuple(item.memory for item in found.results)))
    results = [found.results[index].model_copy(update={"score": round(score, 6)})
               for index, score in ranking[:limit]]
    return SearchResult(results=results, relations=found.relations)


def rerank_handlers(reranker: Reranker | None) -> Handlers:
    """The :class:`Rerank` effect answered by ``reranker`` (``None``: a clear error)."""

    def answer(effect: Rerank) -> Job[Ranking]:
        if reranker is None:
            raise ConfigError("search(rerank=True) needs a reranker: set the config's reranker "
                              "section (provider litellm, llm or onnx) or pass reranker=")
        return Job(lambda: reranker.rerank(effect.query, effect.documents),
                   lambda: reranker.arerank(effect.query, effect.documents), store=False)

    return {Rerank: answer}
