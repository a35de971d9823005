"""An engine stops and starts again under a running server, with clients adding and searching.

Per engine (PostgreSQL holding the store, history and graph; the Chroma server holding
the store; FalkorDB's Bolt server holding the graph), each test starts an engine of its
own and the REST server in a process of its own (tests/server/_fault_server.py), and
checks what a user of the server relies on:

- while the engine is down, every request is answered at once with a 503 and a
  ``Retry-After`` header (a hang would end in the clients' timeout; nothing is a 500);
- once the engine is back, the same server process serves again: every client goes on
  and finishes its adds, retrying the ones that failed;
- no acknowledged add is lost and none is half-applied: each client's scope holds its
  facts once each, each with one ``ADD`` in its history and its relation in the graph.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.server._own_engines import (
    OwnChroma,
    OwnEngine,
    OwnFalkorDB,
    OwnPostgres,
    accepts,
    free_port,
    stop_process,
    wait_until,
)

pytestmark = [pytest.mark.engine, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
CLIENTS, FACTS = 4, 6
#: a request that takes longer than this hangs (an outage answers in milliseconds)
CLIENT_TIMEOUT = 20.0
#: how long the test waits for its clients to reach each step before it fails
STEP_DEADLINE = 90.0


def _postgres() -> tuple[OwnEngine, str]:
    engine = OwnPostgres()
    return engine, engine.dsn


def _chroma() -> tuple[OwnEngine, str]:
    engine = OwnChroma()
    return engine, engine.url


def _falkordb() -> tuple[OwnEngine, str]:
    engine = OwnFalkorDB()
    return engine, engine.bolt_url


ENGINES: dict[str, Callable[[], tuple[OwnEngine, str]]] = {
    "pgvector": _postgres, "chroma": _chroma, "bolt": _falkordb}


@dataclass
class Outage:
    """What the test's phases are: ``stopping`` once the engine is told to stop; ``down``
    from the moment it has stopped until its restart begins."""

    stopping: threading.Event = field(default_factory=threading.Event)
    down: threading.Event = field(default_factory=threading.Event)
    #: (kind, status, Retry-After, sent while down, answered while down)
    answers: list[tuple[str, int, str | None, bool, bool]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    acked: dict[int, dict[str, str]] = field(default_factory=dict)  # client -> text -> id
    #: client -> kind -> 503s to requests sent while the engine was down
    refused: dict[int, dict[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, client: int, kind: str) -> int:
        with self.lock:
            return self.refused.get(client, {}).get(kind, 0)


def fact(client: int, i: int) -> str:
    return f"k{client}x{i} relates to v{client}x{i}"


def request(http: httpx.Client, outage: Outage, client: int, kind: str, text: str,
            ) -> httpx.Response | None:
    """Add ``text`` to the client's scope, or search for it; the answer is recorded (and
    ``None`` returned when there is none)."""
    user, sent_down = f"u{client}", outage.down.is_set()
    try:
        response = (http.post("/v1/memories/", json={
            "messages": [{"role": "user", "content": text}], "user_id": user})
            if kind == "add" else
            http.get("/v1/memories/search/", params={"query": text, "user_id": user}))
    except httpx.HTTPError as exc:
        with outage.lock:
            outage.failures.append(f"client {client} {kind}: {exc!r}")
        return None
    with outage.lock:
        outage.answers.append((kind, response.status_code, response.headers.get("retry-after"),
                               sent_down, outage.down.is_set()))
        if response.status_code == 503 and sent_down:
            counts = outage.refused.setdefault(client, {})
            counts[kind] = counts.get(kind, 0) + 1
    return response


def run_client(base: str, outage: Outage, client: int, stop: threading.Event) -> None:
    """Add FACTS facts one after the other, each until it is acknowledged, searching after
    every attempt; the third waits for the engine's stop to begin."""
    with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT) as http:
        for i in range(FACTS):
            text = fact(client, i)
            if i == 2:
                outage.stopping.wait(STEP_DEADLINE)
            while not stop.is_set():
                added = request(http, outage, client, "add", text)
                request(http, outage, client, "search", text)
                if added is None:
                    return
                if added.status_code == 200:
                    [event] = added.json()["results"]
                    with outage.lock:
                        outage.acked.setdefault(client, {})[text] = event["id"]
                    break
                time.sleep(0.02)


def wait_for(condition: Callable[[], bool], what: str, outage: Outage) -> None:
    deadline = time.monotonic() + STEP_DEADLINE
    while not condition():
        assert not outage.failures, outage.failures
        assert time.monotonic() < deadline, f"clients did not {what} in {STEP_DEADLINE:.0f} s"
        time.sleep(0.02)


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> Iterator[tuple[str, OwnEngine, str]]:
    own, address = ENGINES[request.param]()
    try:
        own.start()
        yield request.param, own, address
    finally:
        own.close()


@pytest.fixture
def server(engine: tuple[str, OwnEngine, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    kind, own, address = engine
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                    os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.server._fault_server", str(port), kind, address,
         str(own.folder / "memkit")], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: accepts(port), "the server", process)
        yield f"http://127.0.0.1:{port}", process
    finally:
        stop_process(process, 15)


def test_an_engine_outage_is_503s_and_the_server_serves_again_losing_nothing(
        engine: tuple[str, OwnEngine, str], server: tuple[str, subprocess.Popen[bytes]]) -> None:
    kind, own, _ = engine
    base, process = server
    outage, stop = Outage(), threading.Event()
    clients = [threading.Thread(target=run_client, args=(base, outage, c, stop), daemon=True)
               for c in range(CLIENTS)]
    for thread in clients:
        thread.start()
    try:
        wait_for(lambda: all(len(outage.acked.get(c, {})) >= 2 for c in range(CLIENTS)),
                 "acknowledge two adds each", outage)
        outage.stopping.set()
        own.stop()
        outage.down.set()
        wait_for(lambda: all(outage.count(c, "add") >= 2 and outage.count(c, "search") >= 2
                             for c in range(CLIENTS)), "see the outage", outage)
        listed = httpx.get(f"{base}/v1/memories/", params={"user_id": "u0"},
                           timeout=CLIENT_TIMEOUT)
        # without its graph, a memory still lists what it holds; without its store, not
        assert listed.status_code == (200 if kind == "bolt" else 503), listed.text
        outage.down.clear()
        own.start()
        for thread in clients:
            thread.join(STEP_DEADLINE)
        assert not any(thread.is_alive() for thread in clients), "clients did not finish"
    finally:
        stop.set()
    assert outage.failures == []
    assert process.poll() is None  # the one server process served throughout

    statuses = {(k, status) for k, status, *_ in outage.answers}
    assert statuses <= {("add", 200), ("add", 503), ("search", 200), ("search", 503)}
    assert all(after == "5" for _, status, after, *_ in outage.answers if status == 503)
    assert {status for _, status, _, sent, answered in outage.answers if sent and answered} \
        == {503}  # while the engine was down, nothing else
    assert all(len(outage.acked[c]) == FACTS for c in range(CLIENTS))

    with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT) as http:
        for client in range(CLIENTS):
            user = f"u{client}"
            acked = outage.acked[client]
            stored = http.get("/v1/memories/", params={"user_id": user, "limit": 100}).json()
            assert sorted((m["memory"], m["id"]) for m in stored["results"]) == sorted(
                acked.items())  # each acknowledged fact once, under the id it was given
            for text, memory_id in acked.items():
                events = http.get(f"/v1/memories/{memory_id}/history/").json()
                assert [e["event"] for e in events] == ["ADD"], (kind, text)
                source = text.split()[0]
                graph = http.get(f"/v1/entities/{source}/relations/",
                                 params={"user_id": user}).json()
                assert [(r["source"], r["target"], r["memory_ids"]) for r in graph["relations"]
                        ] == [(source, text.split()[-1], [memory_id])], (kind, text)
            found = http.get("/v1/memories/search/", params={"query": fact(client, 0),
                                                              "user_id": user}).json()
            assert found["results"][0]["id"] == acked[fact(client, 0)]


def test_a_memory_in_process_raises_store_errors_while_postgres_is_down_and_serves_after() -> None:
    """The SDK's side of the same outage (sync pools): a StoreError at once, then service."""
    from memkit import Memory, StoreError
    from memkit.graph.postgres import PostgresGraph
    from memkit.history.postgres import PostgresHistory
    from memkit.stores.pgvector import PgVectorStore
    from memkit.testing import HashEmbedder, ScriptedLLM

    own = OwnPostgres()
    try:
        own.start()
        memory = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                        vector_store=PgVectorStore(own.dsn), history=PostgresHistory(own.dsn),
                        graph_store=PostgresGraph(own.dsn))
        kept = memory.add("the first fact", user_id="u", infer=False).results[0].id
        own.stop()
        for call in (lambda: memory.search("fact", user_id="u"),
                     lambda: memory.add("the second fact", user_id="u", infer=False),
                     lambda: memory.get_all(user_id="u")):
            with pytest.raises(StoreError):
                call()
        own.start()
        deadline = time.monotonic() + STEP_DEADLINE
        while True:  # the first call within a second of the last failed connect fails too
            try:
                added = memory.add("the second fact", user_id="u", infer=False).results[0].id
                break
            except StoreError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert sorted(m.id for m in memory.get_all(user_id="u").results) == sorted([kept, added])
        assert [h.event for h in memory.history(added)] == ["ADD"]
        memory.close()
    finally:
        own.close()
