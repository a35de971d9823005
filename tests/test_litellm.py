"""The litellm path with no mocks of memkit's code: litellm's mock_response, and an
OpenAI-compatible HTTP server on 127.0.0.1 that fails the way providers fail."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memkit import AsyncMemory, LLMError, Memory
from memkit.embeddings.litellm import LiteLLMEmbedder
from memkit.llms.litellm import LiteLLM
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, block_real_requests


class Stub:
    """Answers /v1/chat/completions from a script of (status, body) and records requests."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, **body})
                status, payload = stub.script.pop(0) if stub.script else (500, {"error": "empty"})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, content: Any) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        self.script.append((200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }))

    def fail(self, status: int) -> None:
        self.script.append((status, {"error": {"message": f"status {status}", "type": "x",
                                               "code": str(status)}}))


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    yield server
    server.server.shutdown()


def _llm(stub: Stub) -> LiteLLM:
    return LiteLLM("openai/stub-model", api_base=stub.url, api_key="sk-test", retry_wait=0.01)


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Any:
    import asyncio

    def call(stub: Stub, *args: Any, **kwargs: Any) -> Any:
        if request.param == "sync":
            with Memory(llm=_llm(stub), embedder=HashEmbedder(), vector_store=InMemoryStore()) as m:
                return m.add(*args, **kwargs)

        async def go() -> Any:
            async with AsyncMemory(llm=_llm(stub), embedder=HashEmbedder(),
                                   vector_store=InMemoryStore()) as m:
                return await m.add(*args, **kwargs)

        return asyncio.run(go())

    return call


def test_add_through_litellm_mock_response() -> None:
    llm = LiteLLM("gpt-4o-mini", mock_response='{"facts": ["User likes tea"]}')
    with Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as m:
        result = m.add("I like tea", user_id="u")
    assert [e.memory for e in result.results] == ["User likes tea"]
    assert result.usage.llm_calls == 1 and result.usage.prompt_tokens > 0


def test_rate_limits_are_retried_and_the_add_succeeds(stub: Stub, run: Any) -> None:
    stub.fail(429)
    stub.fail(429)
    stub.reply({"facts": ["User likes tea"]})
    result = run(stub, "I like tea", user_id="u")
    assert [e.event for e in result.results] == ["ADD"]
    assert len(stub.requests) == 3
    assert result.usage.prompt_tokens == 11


def test_server_errors_are_retried_at_most_three_times(stub: Stub, run: Any) -> None:
    for _ in range(5):
        stub.fail(503)
    with pytest.raises(LLMError):
        run(stub, "I like tea", user_id="u")
    assert len(stub.requests) == 4


def test_auth_errors_fail_at_once(stub: Stub, run: Any) -> None:
    stub.fail(401)
    stub.reply({"facts": ["never reached"]})
    with pytest.raises(LLMError, match=r"401|uthentication"):
        run(stub, "I like tea", user_id="u")
    assert len(stub.requests) == 1


def test_bad_requests_fail_at_once(stub: Stub, run: Any) -> None:
    stub.fail(400)
    with pytest.raises(LLMError):
        run(stub, "I like tea", user_id="u")
    assert len(stub.requests) == 1


def test_requests_carry_the_conversation_and_ask_for_json(stub: Stub) -> None:
    stub.reply({"facts": ["User likes tea"]})
    with Memory(llm=_llm(stub), embedder=HashEmbedder(), vector_store=InMemoryStore()) as m:
        m.add("I like tea", user_id="u")
    sent = stub.requests[0]
    assert sent["model"] == "stub-model"
    assert "I like tea" in sent["messages"][-1]["content"]
    assert sent.get("temperature") == 0


def test_litellm_embedder_against_the_stub(stub: Stub) -> None:
    stub.script.append((200, {"object": "list", "model": "e", "data": [
        {"object": "embedding", "index": 1, "embedding": [0.0, 2.0, 0.0]},
        {"object": "embedding", "index": 0, "embedding": [3.0, 0.0, 0.0]},
    ], "usage": {"prompt_tokens": 2, "total_tokens": 2}}))
    embedder = LiteLLMEmbedder("openai/emb", api_base=stub.url, api_key="k", dimensions=3)
    rows = embedder.embed(["a", "b"])
    assert rows.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_block_real_requests_refuses_a_provider_call() -> None:
    with block_real_requests():
        llm = LiteLLM("gpt-4o-mini", api_key="sk-not-used")
        with Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as m, \
                pytest.raises(LLMError, match="blocked"):
            m.add("I like tea", user_id="u")
