"""A listwise reranker through an LLM: one call orders every candidate.

The candidates are shown under short labels (``1``, ``2``, ...), never their ids, each
cut to ``max_chars``; the model answers with the labels, most relevant first. Labels
it leaves out keep their search order after the ones it ranked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memkit._errors import LLMError
from memkit.llms.base import LLM, LLMRequest
from memkit.rerankers.base import Ranking, Reranker, complete

SYSTEM = """\
You order passages by how well they answer a search query, most relevant first. \
Answer with JSON only: {"ranking": ["<label>", ...]} holding every passage's label once."""

_LABEL = re.compile(r"\d+")


class LLMReranker(Reranker):
    """``LLMReranker(model="gpt-4o-mini")`` builds a litellm model (extra keyword arguments
    go to it); ``LLMReranker(llm=...)`` uses an LLM you have. ``max_documents`` bounds a
    call (more candidates are cut to it, the rest keep their order after), ``max_chars``
    each passage, and with ``model`` the answer's tokens."""

    def __init__(self, llm: LLM | None = None, *, model: str | None = None,
                 max_documents: int = 50, max_chars: int = 300, **options: Any) -> None:
        if (llm is None) == (model is None):
            raise ValueError("give the LLM reranker a model (or an llm), not both")
        if max_documents < 1 or max_chars < 1:
            raise ValueError("max_documents and max_chars must be at least 1")
        self._owned = llm is None
        if llm is None:
            from memkit.llms.litellm import LiteLLM

            options.setdefault("max_tokens", 6 * max_documents + 32)
            llm = LiteLLM(str(model), **options)
        self.llm = llm
        self.max_documents = max_documents
        self.max_chars = max_chars

    def request(self, query: str, documents: Sequence[str]) -> LLMRequest:
        shown = documents[: self.max_documents]
        labels = [str(n) for n in range(1, len(shown) + 1)]
        passages = "\n".join(f"[{label}] {_cut(text, self.max_chars)}"
                             for label, text in zip(labels, shown, strict=True))
        schema = {"type": "object", "properties": {"ranking": {
            "type": "array", "items": {"type": "string", "enum": labels}}},
            "required": ["ranking"], "additionalProperties": False}
        return LLMRequest([{"role": "system", "content": SYSTEM},
                           {"role": "user", "content": f"Query: {query}\n\nPassages:\n{passages}"}],
                          json_schema=schema, schema_name="ranking", purpose="rerank")

    def ranking(self, answer: str, count: int) -> Ranking:
        """The model's answer as a ranking of ``count`` documents."""
        try:
            value = json.loads(answer.strip().removeprefix("```json").strip("`\n "))
        except ValueError:
            value = None
        labels = value.get("ranking") if isinstance(value, dict) else value
        if not isinstance(labels, list):
            raise LLMError(f"the LLM reranker's answer is not a ranking: {answer[:300]!r}")
        order = [int(m[0]) - 1 for label in labels if (m := _LABEL.search(str(label)))]
        shown = min(count, self.max_documents)
        ranked = [i for i in dict.fromkeys(order) if 0 <= i < shown]
        return complete([(i, 1.0 - rank / shown) for rank, i in enumerate(ranked)], count)

    def rerank(self, query: str, documents: Sequence[str]) -> Ranking:
        if not documents:
            return []
        answer = self.llm.complete(self.request(query, documents))
        return self.ranking(answer.text, len(documents))

    async def arerank(self, query: str, documents: Sequence[str]) -> Ranking:
        if not documents:
            return []
        answer = await self.llm.acomplete(self.request(query, documents))
        return self.ranking(answer.text, len(documents))

    def close(self) -> None:
        if self._owned:  # an LLM given to it (the memory's) is closed by its owner
            self.llm.close()


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0] + " ..."
