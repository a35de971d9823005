"""The real REST server under uvicorn on 127.0.0.1, in a thread, over test doubles."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import uvicorn
from fastapi import FastAPI

from memkit import AsyncMemory
from memkit.llms.base import LLMRequest
from memkit.server import create_app
from memkit.stores.memory import InMemoryStore
from memkit.testing import FunctionLLM, HashEmbedder

KEYS = {
    "admin-key": {"admin": True},
    "alice-key": {"user_id": "alice"},
    "bob-key": {"user_id": "bob"},
    "open-key": {},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yield its base URL."""
    # the socket is bound here and handed over: no other process can take the port between
    # choosing it and serving on it
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a hang guard, long enough for a loaded machine
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def echo_llm() -> FunctionLLM:
    """Extraction: the last user message is the fact; decision: ADD every fact."""
    last: list[str] = []

    def answer(request: LLMRequest) -> Any:
        if request.purpose == "extraction":
            text = request.messages[-1]["content"].rsplit("\n", 1)[-1].split(": ", 1)[-1].strip()
            last[:] = [text]
            return {"facts": list(last)}
        return {"memory": [{"event": "ADD", "text": t} for t in last]}

    return FunctionLLM(answer)


def new_memory() -> AsyncMemory:
    return AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=InMemoryStore())


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serving(create_app(new_memory(), api_keys=KEYS)) as url:
        yield url


Client = Callable[[str], httpx.Client]


@pytest.fixture
def client(base_url: str) -> Iterator[Client]:
    opened: list[httpx.Client] = []

    def make(key: str) -> httpx.Client:
        c = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"},
                         timeout=10)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.close()
