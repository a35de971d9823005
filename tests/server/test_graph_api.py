"""/v1/entities/...: the graph over HTTP, bound to the API key's scope."""

from __future__ import annotations

from pathlib import Path

import httpx

from memkit import AsyncMemory
from memkit.server import create_app
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder
from tests.server.conftest import KEYS, echo_llm, serving


def test_seed001_case35_entity_endpoints_v1_entities_are_scope_bound(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=store,
                         graph_store=store.graph())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"})
        bob = httpx.Client(base_url=url, headers={"Authorization": "Bearer bob-key"})
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
