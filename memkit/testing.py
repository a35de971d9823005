"""Test doubles for agents built on memkit, and a switch that blocks real model requests.

::

    from memkit import Memory
    from memkit.testing import HashEmbedder, ScriptedLLM

    llm = ScriptedLLM([{"facts": ["User likes tea"]}])
    m = Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore())
    m.add("I like tea", user_id="u1")
    assert llm.calls[0].purpose == "extraction"
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from memkit._guard import set_blocked
from memkit._models import Usage
from memkit.embeddings.base import Embedder, Matrix, normalise
from memkit.llms.base import LLM, LLMRequest, LLMResponse

Reply = str | dict[str, Any] | list[Any] | BaseException

__all__ = [
    "FunctionLLM", "HashEmbedder", "ScriptExhaustedError", "ScriptedLLM", "block_real_requests",
]


class ScriptExhaustedError(AssertionError):
    """A ScriptedLLM was asked for more replies than it was given."""


def _text(reply: Any) -> str:
    return reply if isinstance(reply, str) else json.dumps(reply)


def _usage(request: LLMRequest, text: str) -> Usage:
    prompt = sum(len(m.get("content", "")) for m in request.messages)
    return Usage(llm_calls=1, prompt_tokens=max(1, prompt // 4),
                 completion_tokens=max(1, len(text) // 4), cost_usd=None)


class ScriptedLLM(LLM):
    """Answers from a queue of replies (strings, or dicts/lists sent as JSON; an exception
    is raised). ``calls`` records every request. An empty queue fails loudly, with the prompt."""

    __test__ = False

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.calls: list[LLMRequest] = []

    def push(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        if not self.replies:
            prompt = "\n".join(f"[{m['role']}] {m['content']}" for m in request.messages)
            raise ScriptExhaustedError(
                f"ScriptedLLM has no reply left for call {len(self.calls)} "
                f"({request.purpose or 'completion'}). The prompt was:\n{prompt}"
            )
        reply = self.replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        text = _text(reply)
        return LLMResponse(text=text, usage=_usage(request, text))

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)


class FunctionLLM(LLM):
    """Answers with ``function(request)``, sync or async, returning a str, dict or list."""

    __test__ = False

    def __init__(self, function: Callable[[LLMRequest], Any | Awaitable[Any]]) -> None:
        self.function = function
        self.calls: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        reply = self.function(request)
        if inspect.isawaitable(reply):
            reply = asyncio.run(_await(reply))
        text = _text(reply)
        return LLMResponse(text=text, usage=_usage(request, text))

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        reply = self.function(request)
        if inspect.isawaitable(reply):
            reply = await reply
        text = _text(reply)
        return LLMResponse(text=text, usage=_usage(request, text))


async def _await(value: Awaitable[Any]) -> Any:
    return await value


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    """Deterministic bag-of-words embeddings: texts sharing words are near each other.

    Words are lower-cased and crudely stemmed, then hashed (md5, so stable across
    processes) into ``dimension`` signed buckets. ``model_name`` tells stores apart
    embedders that are otherwise alike (re-embedding tests).
    """

    __test__ = False

    def __init__(self, dimension: int = 256, model_name: str | None = None) -> None:
        self.dimension = dimension
        self.model_name = model_name or f"hash-bow-{dimension}"

    @staticmethod
    def _stem(word: str) -> str:
        for suffix in ("ing", "es", "s", "ed"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                return word[: -len(suffix)]
        return word

    def embed(self, texts: Sequence[str]) -> Matrix:
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.md5(self._stem(word).encode()).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimension
                matrix[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            if not matrix[row].any():
                matrix[row, 0] = 1e-3
        return normalise(matrix, len(texts), self.dimension)


@contextlib.contextmanager
def block_real_requests(block: bool = True) -> Iterator[None]:
    """While active, an LLM or embedding request through litellm that would leave the
    machine raises LLMError / EmbeddingError (``mock_response`` and 127.0.0.1 servers pass)."""
    previous = set_blocked(block)
    try:
        yield
    finally:
        set_blocked(previous)
