"""The change feed delivers each change to the keys that may see it."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.server.conftest import Client


def _read_events(response: httpx.Response, want: int, out: list[dict[str, Any]],
                 ready: threading.Event) -> None:
    kind = ""
    for line in response.iter_lines():
        if line == ": connected":
            ready.set()
        elif line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: "):
            out.append({**json.loads(line[len("data: "):]), "event": kind})
            if len(out) >= want:
                return


def _subscribe(base_url: str, key: str, want: int) -> tuple[threading.Thread, list[dict[str, Any]],
                                                            httpx.Client, Any]:
    client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"},
                          timeout=httpx.Timeout(10, read=10))
    stream = client.stream("GET", "/v1/events")
    response = stream.__enter__()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    out: list[dict[str, Any]] = []
    ready = threading.Event()
    thread = threading.Thread(target=_read_events, args=(response, want, out, ready), daemon=True)
    thread.start()
    assert ready.wait(10)
    return thread, out, client, stream


def test_sse_delivers_created_updated_deleted(base_url: str, client: Client) -> None:
    thread, events, sub, stream = _subscribe(base_url, "alice-key", want=3)
    try:
        alice = client("alice-key")
        text = f"alice note {uuid.uuid4()}"
        memory_id = alice.post("/v1/memories/", json={"messages": text, "infer": False}
                               ).json()["results"][0]["id"]
        alice.put(f"/v1/memories/{memory_id}/", json={"text": text + " (edited)"})
        alice.delete(f"/v1/memories/{memory_id}/")
        thread.join(10)
    finally:
        stream.__exit__(None, None, None)
        sub.close()
    assert [e["event"] for e in events] == ["memory_created", "memory_updated", "memory_deleted"]
    assert {e["id"] for e in events} == {memory_id}
    assert events[0]["user_id"] == "alice" and events[0]["memory"] == text


def test_sse_hides_other_scopes(base_url: str, client: Client) -> None:
    thread, events, sub, stream = _subscribe(base_url, "alice-key", want=1)
    try:
        client("bob-key").post("/v1/memories/", json={"messages": f"bob {uuid.uuid4()}",
                                                      "infer": False})
        client("alice-key").post("/v1/memories/", json={"messages": f"alice {uuid.uuid4()}",
                                                        "infer": False})
        thread.join(10)
    finally:
        stream.__exit__(None, None, None)
        sub.close()
    assert [(e["event"], e["user_id"]) for e in events] == [("memory_created", "alice")]


def test_sse_tells_of_the_entities_the_graph_creates(tmp_path: Path) -> None:
    from tests.server.test_graph_api import _graph_server

    with _graph_server(tmp_path) as (alice, bob):
        thread, events, sub, stream = _subscribe(str(alice.base_url), "alice-key", want=6)
        try:
            alice.post("/v1/memories/", json={"messages": "Lunch at Acme", "infer": False,
                                              "entities": ["Alice", "Acme"]})
            alice.post("/v1/memories/", json={"messages": "Alice hikes", "infer": False,
                                              "entities": ["alice"]})  # known: no event
            alice.post("/v1/entities/", json={"name": "Berlin", "type": "city"})
            alice.put("/v1/entities/berlin/", json={"summary": "a city"})  # an update
            bob.post("/v1/entities/", json={"name": "Bobland"})  # bob's: not alice's to see
            alice.post("/v1/entities/Alice/relations/", json={"relation": "lives in",
                                                              "target": "Berlin"})
            alice.post("/v1/entities/Alice/relations/", json={"relation": "visits",
                                                              "target": "Paris"})
            thread.join(10)
        finally:
            stream.__exit__(None, None, None)
            sub.close()
        alice.close()
        bob.close()
    assert [(e["event"], e.get("name")) for e in events] == [
        ("memory_created", None), ("entity_created", "Acme"), ("entity_created", "Alice"),
        ("memory_created", None), ("entity_created", "Berlin"), ("entity_created", "Paris")]
    berlin = events[4]
    assert (berlin["type"], berlin["user_id"], berlin["agent_id"], berlin["run_id"]) == (
        "city", "alice", None, None)  # the entity's type and scope
    assert [e["type"] for e in events if e["event"] == "entity_created"] == [
        "unknown", "unknown", "city", "unknown"]
    assert len({e["id"] for e in events}) == 6
