"""``server.schedule``: prune, consolidation and graph repair on a schedule inside the
server process, beside the requests it serves, logged, on the change feed, and stopped on
shutdown."""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx
import pytest

from memkit import AsyncMemory, ConfigError
from memkit._pipeline.features.outbox import OUTBOX
from memkit.server import Schedule, create_app
from memkit.server._schedule import duration_of
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.graph.test_memory import extraction, rel
from tests.graph.test_outbox import FlakyGraph
from tests.server.conftest import serving


def test_scheduled_prune_and_consolidation_run_beside_requests_and_stop_on_shutdown(
        caplog: pytest.LogCaptureFixture) -> None:
    memory = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())
    app = create_app(memory, config={"server": {"schedule": {
        "prune_every": 0.05, "consolidate_every": "0.05s", "prune_below": 0.1}}})
    scheduler = app.state.scheduler
    caplog.set_level(logging.INFO, logger="memkit.server")
    with serving(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        def add(text: str, **fields: object) -> str:
            body = {"messages": text, "user_id": "alice", "infer": False, **fields}
            return str(client.post("/v1/memories/", json=body).json()["results"][0]["id"])

        faded = add("A passing thought", confidence=0.05)
        kept = add("User likes green tea")
        twin = add("user likes green tea!")
        deadline = time.monotonic() + 60
        while len(client.get("/v1/memories/", params={"user_id": "alice"}).json()["results"]) > 1:
            assert time.monotonic() < deadline, "no scheduled prune and consolidation ran"
            time.sleep(0.05)
        history = client.get(f"/v1/memories/{faded}/history/").json()
        assert [h["event"] for h in history] == ["ADD", "DELETE"]
        assert {kept, twin} & {m["id"] for m in client.get(
            "/v1/memories/", params={"user_id": "alice"}).json()["results"]}
        states = client.get("/v1/stats/", params={"user_id": "alice"}).json()["by_state"]
        assert (states["current"], states["deleted"], states["superseded"]) == (1, 1, 1)
    assert scheduler.runs["prune"] >= 1 and scheduler.runs["consolidate"] >= 1
    runs = dict(scheduler.runs)
    time.sleep(0.2)  # stopped with the server: no run after shutdown
    assert scheduler.runs == runs
    said = [r.getMessage() for r in caplog.records if r.name == "memkit.server"]
    assert "scheduled prune: 1 memories below confidence 0.1 forgotten" in said
    assert any(m.startswith("scheduled consolidate: 1 memories merged in 1 clusters") for m in said)


def test_no_schedule_runs_nothing() -> None:
    app = create_app(AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                                 vector_store=InMemoryStore()))
    with serving(app):
        pass
    assert app.state.scheduler.runs == {"prune": 0, "consolidate": 0, "repair": 0}


def _graph_outage_app(tmp_path: Any, **options: Any) -> tuple[Any, FlakyGraph, SQLiteStore]:
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    graph = FlakyGraph(str(tmp_path / "graph.db"))
    memory = AsyncMemory(llm=ScriptedLLM([extraction(["Alice works at Acme"], [
        rel("Alice", "works at", "Acme")])]), embedder=HashEmbedder(), vector_store=store,
        history=store.history(), graph_store=graph)
    return create_app(memory, **options), graph, store


def _fail_an_add(client: httpx.Client, graph: FlakyGraph) -> str:
    """An add during a graph outage: 503, its memory stored; the graph back after it."""
    assert client.get("/v1/memories/", params={"user_id": "u"}).status_code == 200
    graph.fail_after(0)
    failed = client.post("/v1/memories/", json={"messages": "Alice works at Acme",
                                                "user_id": "u"})
    assert failed.status_code == 503
    [item] = client.get("/v1/memories/", params={"user_id": "u"}).json()["results"]
    graph.up()
    return str(item["id"])


def _written(client: httpx.Client, memory_id: str) -> None:
    [works] = client.get("/v1/entities/Alice/relations/",
                         params={"user_id": "u"}).json()["relations"]
    assert (works["target"], works["memory_ids"]) == ("Acme", [memory_id])


def test_scheduled_repair_writes_the_graph_work_an_outage_left_owed(tmp_path: Any) -> None:
    """A graph outage fails an add with 503 after its memory is stored; once the graph is
    back the scheduled repair writes its relation, with no request asking for it."""
    app, graph, store = _graph_outage_app(tmp_path, schedule={"repair_every": 0.05})
    with serving(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        item = _fail_an_add(client, graph)
        deadline = time.monotonic() + 60
        while store.history().get(OUTBOX):
            assert time.monotonic() < deadline, "no scheduled repair ran"
            time.sleep(0.05)
        _written(client, item)
    assert app.state.scheduler.runs["repair"] >= 1


def test_repair_over_rest_takes_an_admin_key(tmp_path: Any) -> None:
    app, graph, _ = _graph_outage_app(tmp_path, schedule={"repair_every": "off"}, api_keys={
        "root": {"admin": True}, "u-key": {"user_id": "u"}})
    with serving(app) as url, httpx.Client(
            base_url=url, timeout=10, headers={"Authorization": "Bearer u-key"}) as client:
        item = _fail_an_add(client, graph)
        assert client.post("/v1/repair/").status_code == 403  # it works across scopes
        admin = {"Authorization": "Bearer root"}
        assert client.post("/v1/repair/", headers=admin).json() == {"repaired": 1}
        _written(client, item)
        assert client.post("/v1/repair/", headers=admin).json() == {"repaired": 0}
    assert app.state.scheduler.runs["repair"] == 0


def test_durations_and_schedule_mistakes() -> None:
    assert [duration_of(v) for v in ("90s", "30m", "1h", "1.5d", 2, " 2 M ")] == [
        90, 1800, 3600, 129_600, 2, 120]
    assert Schedule.of(None).repair_every == 60 and Schedule.of(
        {"repair_every": "off"}).repair_every is None
    for bad in ({"prune_every": "soon"}, {"prune_every": 0}, {"prune_every": True},
                {"prune_below": 2}, {"nope": 1}, {"repair_every": "never"}):
        with pytest.raises(ConfigError, match=r"server\.schedule"):
            Schedule.of(bad)
    with pytest.raises(ConfigError, match=r"server\.schedule\.consolidate_every"):
        create_app(AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                               vector_store=InMemoryStore()),
                   config={"server": {"schedule": {"consolidate_every": "-1h"}}})
