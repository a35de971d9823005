"""Flaky and misconfigured providers: a missing key fails at once with the fix; Chroma's
"Nothing found on disk" right after a write is retried a bounded number of times."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from memkit import AsyncMemory, EmbeddingError, LLMError, Memory, VectorStoreError
from memkit._retry import is_auth_error, is_transient
from memkit.embeddings.litellm import LiteLLMEmbedder
from memkit.llms.litellm import LiteLLM
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder

LOOPBACK = "http://127.0.0.1:9/v1"  # the request guard lets loopback through; nothing listens


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """litellm with no OpenAI key, counting the calls memkit makes into it."""
    import litellm

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    calls = {"sync": 0, "async": 0}
    for name, kind in (("completion", "sync"), ("acompletion", "async"),
                       ("embedding", "sync"), ("aembedding", "async")):
        real = getattr(litellm, name)

        def wrapper(*args: Any, _real: Any = real, _kind: str = kind, **kwargs: Any) -> Any:
            calls[_kind] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(litellm, name, wrapper)
    yield calls


def test_a_missing_llm_key_fails_at_once_naming_the_fix(counted: dict[str, int]) -> None:
    llm = LiteLLM("gpt-4o-mini", api_base=LOOPBACK, retry_wait=0.01)
    with (Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as m,
          pytest.raises(LLMError, match="no valid API key") as caught):
        m.add("I like tea", user_id="u")
    assert "OPENAI_API_KEY" in str(caught.value) and "infer=False" in str(caught.value)
    assert counted["sync"] == 1

    async def go() -> None:
        async with AsyncMemory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as a:
            with pytest.raises(LLMError, match="infer=False"):
                await a.add("I like tea", user_id="u")

    asyncio.run(go())
    assert counted["async"] == 1


def test_a_missing_embedding_key_fails_at_once_naming_the_fix(counted: dict[str, int]) -> None:
    embedder = LiteLLMEmbedder("text-embedding-3-small", api_base=LOOPBACK, retry_wait=0.01)
    with pytest.raises(EmbeddingError, match=r"no valid API key.*local"):
        embedder.embed(["tea"])
    assert counted["sync"] == 1


class _Failure(Exception):
    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class AuthenticationError(_Failure):
    pass


class InternalServerError(_Failure):
    pass


@pytest.mark.parametrize("exc, auth", [
    (AuthenticationError("bad key", 401), True),
    (_Failure("forbidden", 403), True),
    (InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`", 500),
     True),
    (_Failure("The api_key client option must be set"), True),
    (InternalServerError("upstream exploded", 500), False),
    (_Failure("Rate limit reached", 429), False),
])
def test_auth_errors_are_never_transient(exc: Exception, auth: bool) -> None:
    assert is_auth_error(exc) is auth
    assert is_transient(exc) is not auth


# -- Chroma ---------------------------------------------------------------------------

NOT_FLUSHED = "Error executing plan: Error creating hnsw segment reader: Nothing found on disk"


class Flaky:
    """A chroma collection whose queries and writes fail ``failures`` times first, with the
    error chroma#4212 gives."""

    def __init__(self, inner: Any, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.attempts: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def call(**kwargs: Any) -> Any:
            self.attempts[name] = self.attempts.get(name, 0) + 1
            if name in ("query", "add", "upsert") and self.failures > 0:
                self.failures -= 1
                raise RuntimeError(NOT_FLUSHED)
            return method(**kwargs)

        return call


@pytest.fixture
def chroma() -> Iterator[Any]:
    pytest.importorskip("chromadb")
    from memkit.stores.chroma import ChromaStore

    store = ChromaStore(collection_name=f"flaky_{uuid.uuid4().hex}")
    store.open(HashEmbedder().dimension, HashEmbedder().model_name)
    yield store
    store.close()


def test_chroma_not_flushed_reads_are_retried(chroma: Any) -> None:
    with Memory(llm=LiteLLM(), embedder=HashEmbedder(), vector_store=chroma) as m:
        m.add("I like tea", user_id="u", infer=False)
        chroma._collection = Flaky(chroma._collection, failures=3)
        assert [i.memory for i in m.search("tea", user_id="u").results] == ["I like tea"]
        assert chroma._collection.attempts["query"] == 4


def test_chroma_retries_are_bounded(chroma: Any) -> None:
    with Memory(llm=LiteLLM(), embedder=HashEmbedder(), vector_store=chroma) as m:
        m.add("I like tea", user_id="u", infer=False)
        chroma._collection = Flaky(chroma._collection, failures=100)
        with pytest.raises(VectorStoreError, match="Nothing found on disk"):
            m.search("tea", user_id="u")
        assert chroma._collection.attempts["query"] == 7


def test_chroma_retried_writes_store_once(chroma: Any) -> None:
    """Chroma's writes are upserts and deletes by id: a retry cannot duplicate a memory."""
    with Memory(llm=LiteLLM(), embedder=HashEmbedder(), vector_store=chroma) as m:
        m.get_all(user_id="u")  # opens the store (which would replace the collection below)
        chroma._collection = Flaky(chroma._collection, failures=1)
        m.add("I like tea", user_id="u", infer=False)
        assert chroma._collection.attempts["upsert"] == 2
        assert [i.memory for i in m.get_all(user_id="u").results] == ["I like tea"]
