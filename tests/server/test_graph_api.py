"""/v1/entities/...: the graph over HTTP, bound to the API key's scope."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from memkit import AsyncMemory
from memkit.server import create_app
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder
from tests.server.conftest import KEYS, echo_llm, serving


@contextmanager
def _graph_server(tmp_path: Path) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """A server over a SQLite store with its graph; clients for alice's and bob's keys."""
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=store,
                         graph_store=store.graph())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        yield (httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"}),
               httpx.Client(base_url=url, headers={"Authorization": "Bearer bob-key"}))


def test_seed001_case35_entity_endpoints_v1_entities_are_scope_bound(tmp_path: Path) -> None:
    with _graph_server(tmp_path) as (alice, bob):
        added = alice.post("/v1/entities/Alice/relations/", json={
            "relation": "works at", "target": "Acme", "source_type": "person"})
        assert added.status_code == 200, added.text
        assert (added.json()["relation"], added.json()["target"]) == ("WORKS_AT", "Acme")
        alice.post("/v1/entities/Acme/relations/", json={"relation": "in", "target": "Berlin"})

        assert {e["name"] for e in alice.get("/v1/entities/").json()} == {
            "Alice", "Acme", "Berlin"}
        assert alice.get("/v1/entities/alice/").json()["type"] == "person"
        graph = alice.get("/v1/entities/Alice/relations/", params={"depth": 2}).json()
        assert sorted(e["name"] for e in graph["entities"]) == ["Acme", "Alice", "Berlin"]

        assert bob.get("/v1/entities/").json() == []
        assert bob.get("/v1/entities/Alice/").status_code == 404
        assert bob.get("/v1/entities/", params={"user_id": "alice"}).status_code == 403
        assert bob.delete("/v1/entities/Alice/").json() == {"deleted": 0}

        loop = alice.post("/v1/entities/Acme/relations/", json={"relation": "is", "target": "acme"})
        assert (loop.status_code, loop.json()["error"]["type"]) == (400, "invalid_request")
        found = alice.post("/v1/memories/search/", json={"query": "Acme", "graph": True}).json()
        assert ("Acme", "IN", "Berlin") in {
            (r["source"], r["relation"], r["target"]) for r in found["relations"]}
        assert bob.post("/v1/memories/search/", json={"query": "Acme"}).json()["relations"] == []

        gone = alice.delete("/v1/entities/Acme/relations/",
                            params={"relation": "in", "target": "Berlin"})
        assert gone.json() == {"deleted": 1}
        assert alice.delete("/v1/entities/Acme/").json() == {"deleted": 1}
        assert alice.get("/v1/entities/Alice/relations/").json()["relations"] == []
        alice.close()
        bob.close()


def test_entities_are_created_and_updated_and_relations_listed(tmp_path: Path) -> None:
    with _graph_server(tmp_path) as (alice, bob):
        made = alice.post("/v1/entities/", json={"name": "Acme", "summary": "a shop"})
        assert made.status_code == 200, made.text
        assert (made.json()["name"], made.json()["type"]) == ("Acme", "unknown")
        typed = alice.put("/v1/entities/acme/", json={"type": "organisation"}).json()
        assert (typed["name"], typed["type"], typed["summary"]) == (
            "Acme", "organisation", "a shop")
        assert alice.post("/v1/entities/", json={"name": ""}).status_code == 422
        assert alice.put("/v1/entities/Acme/", json={"user_id": "bob"}).status_code == 403

        assert alice.get("/v1/relations/").json() == []
        alice.post("/v1/entities/Alice/relations/", json={"relation": "works at",
                                                          "target": "Acme"})
        alice.post("/v1/entities/Acme/relations/", json={"relation": "in", "target": "Berlin"})
        listed = alice.get("/v1/relations/").json()
        assert sorted((r["source"], r["relation"], r["target"]) for r in listed) == [
            ("Acme", "IN", "Berlin"), ("Alice", "WORKS_AT", "Acme")]
        assert len(alice.get("/v1/relations/", params={"limit": 1}).json()) == 1
        assert alice.get("/v1/relations/", params={"type": "organisation"}).json() == []
        assert bob.get("/v1/relations/").json() == []


def test_an_entitys_memories_over_http(tmp_path: Path) -> None:
    from memkit.testing import ScriptedLLM

    rel = {"source": "Alice", "relation": "works at", "target": "Acme"}
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    memory = AsyncMemory(llm=ScriptedLLM([{"facts": ["Alice works at Acme"],
                                           "relations": [rel]}]),
                         embedder=HashEmbedder(), vector_store=store, graph_store=store.graph())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"})
        bob = httpx.Client(base_url=url, headers={"Authorization": "Bearer bob-key"})
        [event] = alice.post("/v1/memories/", json={"messages": "Alice works at Acme"}
                             ).json()["results"]
        about = alice.get("/v1/entities/acme/memories/").json()
        assert [(m["id"], m["memory"]) for m in about] == [(event["id"], "Alice works at Acme")]
        graph = alice.get("/v1/entities/Alice/relations/",
                          params={"include_memories": True}).json()
        assert [m["id"] for m in graph["memories"]] == [event["id"]]
        assert alice.get("/v1/entities/Alice/relations/").json()["memories"] == []
        assert alice.get("/v1/entities/nobody/memories/").status_code == 404
        assert bob.get("/v1/entities/Acme/memories/").status_code == 404


def test_adds_name_entities_and_reads_narrow_to_one(tmp_path: Path) -> None:
    with _graph_server(tmp_path) as (alice, bob):
        for text, named in (("Lunch at Acme", ["Alice", "Acme"]), ("Alice likes tea", ["alice"]),
                            ("Alice hikes", ["Alice"])):
            added = alice.post("/v1/memories/", json={"messages": text, "infer": False,
                                                      "entities": named})
            assert added.status_code == 200, added.text
        assert [e["name"] for e in alice.get("/v1/entities/").json()] == ["Acme", "Alice"]
        acme = alice.get("/v1/entities/Acme/").json()["id"]
        listed = alice.get("/v1/memories/", params={"entity": acme}).json()
        assert [m["memory"] for m in listed["results"]] == ["Lunch at Acme"]
        page = alice.get("/v1/memories/", params={"entity": "Alice", "limit": 2, "offset": 2})
        assert (len(page.json()["results"]), page.json()["next_offset"]) == (1, None)
        first = alice.get("/v1/memories/", params={"entity": "Alice", "limit": 2}).json()
        assert first["next_offset"] == 2
        assert {m["memory"] for m in [*first["results"], *page.json()["results"]]} == {
            "Lunch at Acme", "Alice likes tea", "Alice hikes"}
        found = alice.get("/v1/memories/search/", params={"q": "tea", "entity": "Acme"}).json()
        assert [m["memory"] for m in found["results"]] == ["Lunch at Acme"]
        posted = alice.post("/v1/memories/search/", json={"query": "tea", "entity": "alice",
                                                          "limit": 1, "offset": 1}).json()
        assert len(posted["results"]) == 1
        assert bob.get("/v1/memories/", params={"entity": "Alice"}).json()["results"] == []
        bad = alice.post("/v1/memories/", json={"messages": "x", "entities": "Alice"})
        assert bad.status_code == 422
        alice.close()
        bob.close()
