"""The change feed across processes: a stream on one worker of ``memkit serve --workers 2``
sees what the other worker and a separate Python process write, in commit order, each
change once, the entities a graph creates and the consolidations that merge memories
among them; ``Last-Event-ID`` resumes with exactly the changes missed; a key bound to a
scope sees that scope only. On the embedded default (SQLite) and on pgvector with the
history in PostgreSQL (LISTEN/NOTIFY).

Each write is acknowledged before the next one starts, so commit order is the order the
test writes in. Waits are for events, with a generous limit (tests/server/workers.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import unique_name
from tests.server.workers import PATIENCE, EventStream, Workers, script_env, serving_workers

pytestmark = pytest.mark.slow  # servers and scripts run as subprocesses

#: another program on the same memory: no server, just ``Memory`` over the same config
SCRIPT = """
import json, os, sys
from memkit import Memory
memory = Memory(json.loads(os.environ["MEMKIT_CONFIG"]))
for user, text in json.loads(sys.argv[1]):
    memory.add(text, user_id=user, infer=False)
memory.close()
"""


def _script_adds(config: dict[str, Any], adds: list[tuple[str, str]]) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(adds)], env=script_env(config),
                          capture_output=True, text=True, timeout=4 * PATIENCE)
    assert done.returncode == 0, done.stderr


def _add(server: Workers, key: str, worker: str, text: str) -> str:
    client, _ = server.client(key, worker)
    try:
        added = client.post("/v1/memories/", json={"messages": text, "infer": False})
    finally:
        client.close()
    assert added.status_code == 200, added.text
    return str(added.json()["results"][0]["id"])


def _changed(server: Workers, key: str, worker: str, method: str, memory_id: str,
             text: str | None = None) -> None:
    client, _ = server.client(key, worker)
    try:
        done = client.request(method, f"/v1/memories/{memory_id}/",
                              json=None if text is None else {"text": text})
    finally:
        client.close()
    assert done.status_code == 200, done.text


def _feed_across_workers_and_a_script(config: dict[str, Any]) -> None:
    tag = uuid.uuid4().hex[:8]

    def text(what: str) -> str:
        return f"{what} {tag}"

    with serving_workers(config) as server:
        one, two = server.instances()
        alice = EventStream(server.client("alice-key", one)[0])
        admin = EventStream(server.client("admin-key", two)[0])
        first = _add(server, "alice-key", two, text("alice via the other worker"))
        _add(server, "bob-key", one, text("bob via the streaming worker"))
        _script_adds(config, [("alice", text("alice by a script")),
                              ("bob", text("bob by a script"))])
        _changed(server, "alice-key", one, "PUT", first, text("alice edited"))
        _changed(server, "alice-key", two, "DELETE", first)
        _add(server, "alice-key", one, text("alice last"))

        seen = alice.until(text("alice last"))
        assert [(e["event"], e["memory"]) for e in seen] == [
            ("memory_created", text("alice via the other worker")),
            ("memory_created", text("alice by a script")),
            ("memory_updated", text("alice edited")),
            ("memory_deleted", None),
            ("memory_created", text("alice last"))]
        assert seen[3]["id"] == first and {e["user_id"] for e in seen} == {"alice"}
        assert len({e["event_id"] for e in seen}) == len(seen)
        everything = admin.until(text("alice last"))
        assert [(e["user_id"], e["memory"]) for e in everything if e["event"] == "memory_created"
                ] == [("alice", text("alice via the other worker")),
                      ("bob", text("bob via the streaming worker")),
                      ("alice", text("alice by a script")), ("bob", text("bob by a script")),
                      ("alice", text("alice last"))]
        admin.close()

        alice.close()  # what is written while the client is away, it gets on reconnecting
        _add(server, "alice-key", two, text("alice missed 1"))
        _add(server, "bob-key", two, text("bob meanwhile"))
        _add(server, "alice-key", one, text("alice missed 2"))
        back = EventStream(server.client("alice-key", two)[0], last_event_id=seen[-1]["event_id"])
        _add(server, "alice-key", one, text("alice after reconnecting"))
        resumed = back.until(text("alice after reconnecting"))
        back.close()
        assert [(e["event"], e["memory"]) for e in resumed] == [
            ("memory_created", text("alice missed 1")), ("memory_created", text("alice missed 2")),
            ("memory_created", text("alice after reconnecting"))]

        client, _ = server.client("alice-key")
        wrong = client.get("/v1/events", headers={"Last-Event-ID": "not-a-position"})
        client.close()
        assert wrong.status_code == 400 and "position" in wrong.json()["error"]["message"]


def test_feed_across_workers_on_sqlite(tmp_path: Path) -> None:
    _feed_across_workers_and_a_script({
        "vector_store": {"provider": "sqlite", "config": {"path": str(tmp_path / "m.db")}},
        "embedder": {"provider": "hash"}})


def _on_postgres(dsn: str, name: str) -> dict[str, Any]:
    """A config with the memories and their history in PostgreSQL, as collection ``name``."""
    return {"vector_store": {"provider": "pgvector",
                             "config": {"dsn": dsn, "collection_name": name}},
            "history": {"provider": "postgres", "config": {"dsn": dsn, "table": f"{name}_h"}},
            "embedder": {"provider": "hash"}}


def test_feed_across_workers_on_pgvector(pg_dsn: str) -> None:
    _feed_across_workers_and_a_script(_on_postgres(pg_dsn, unique_name("feed")))


def _post(server: Workers, key: str, worker: str, path: str, body: dict[str, Any]) -> Any:
    client, _ = server.client(key, worker)
    try:
        done = client.post(path, json=body)
    finally:
        client.close()
    assert done.status_code == 200, done.text
    return done.json()


def _entities_and_consolidations_across_workers(config: dict[str, Any]) -> None:
    """``entity_created`` and ``consolidation_complete`` made through one worker reach a
    stream on the other, in commit order among the memories' changes, each with an id that
    ``Last-Event-ID`` resumes after; another key's entities stay out of alice's stream."""
    tag = uuid.uuid4().hex[:8]

    def text(what: str) -> str:
        return f"{what} {tag}"

    def merge_pair(worker: str, fact: str) -> None:  # two near-duplicates, then a merge
        for variant in (fact, fact.lower() + "!"):
            _add(server, "alice-key", worker, variant)
        _post(server, "alice-key", worker, "/v1/consolidate/", {"dry_run": False})

    with serving_workers(config) as server:
        one, two = server.instances()
        alice = EventStream(server.client("alice-key", one)[0])
        bob = EventStream(server.client("bob-key", one)[0])
        _post(server, "alice-key", two, "/v1/memories/", {
            "messages": text("lunch at Acme"), "infer": False, "entities": ["Acme"]})
        _post(server, "alice-key", two, "/v1/entities/", {"name": "Berlin", "type": "city"})
        _post(server, "bob-key", two, "/v1/entities/", {"name": "Bobland"})
        merge_pair(two, "User plays chess")
        _add(server, "alice-key", two, text("alice marks the end"))
        _add(server, "bob-key", two, text("bob marks the end"))

        seen = alice.until(text("alice marks the end"))
        assert [(e["event"], e.get("name") or e["memory"]) for e in seen] == [
            ("memory_created", text("lunch at Acme")), ("entity_created", "Acme"),
            ("entity_created", "Berlin"), ("memory_created", "User plays chess"),
            ("memory_created", "user plays chess!"), ("memory_deleted", None),
            ("consolidation_complete", None), ("memory_created", text("alice marks the end"))]
        berlin, complete = seen[2], seen[6]
        assert (berlin["type"], berlin["user_id"], berlin["agent_id"]) == ("city", "alice", None)
        assert seen[1]["type"] == "unknown"  # named by an add: of no known type
        kept, merged = seen[3]["id"], seen[4]["id"]
        assert (complete["user_id"], complete["clusters"], complete["merged"]) == (
            "alice", 1, {kept: [merged]})
        assert seen[5]["id"] == merged and complete["examined"] == 3
        assert all(e["event_id"] for e in seen) and len({e["event_id"] for e in seen}) == 8
        assert [(e["event"], e.get("name") or e["memory"])
                for e in bob.until(text("bob marks the end"))] == [
            ("entity_created", "Bobland"), ("memory_created", text("bob marks the end"))]
        bob.close()

        alice.close()  # entities and merges made while away come back on reconnecting
        _post(server, "alice-key", one, "/v1/entities/Acme/relations/",
              {"relation": "in", "target": "Paris"})
        merge_pair(one, "User likes tea")
        _add(server, "alice-key", one, text("alice is back"))
        back = EventStream(server.client("alice-key", two)[0],
                           last_event_id=complete["event_id"])
        resumed = back.until(text("alice is back"))
        assert [(e["event"], e.get("name") or e["memory"]) for e in resumed] == [
            ("memory_created", text("alice marks the end")), ("entity_created", "Paris"),
            ("memory_created", "User likes tea"), ("memory_created", "user likes tea!"),
            ("memory_deleted", None), ("consolidation_complete", None),
            ("memory_created", text("alice is back"))]
        again = EventStream(server.client("alice-key", one)[0],
                            last_event_id=resumed[1]["event_id"])  # after the entity
        assert [e["event"] for e in again.until(text("alice is back"))] == [
            "memory_created", "memory_created", "memory_deleted", "consolidation_complete",
            "memory_created"]
        again.close()
        back.close()


def test_entities_and_consolidations_across_workers_on_sqlite(tmp_path: Path) -> None:
    _entities_and_consolidations_across_workers({
        "vector_store": {"provider": "sqlite", "config": {"path": str(tmp_path / "m.db")}},
        "graph_store": {"provider": "sqlite"}, "embedder": {"provider": "hash"}})


def test_entities_and_consolidations_across_workers_on_postgres(pg_dsn: str) -> None:
    name = unique_name("feedg")
    _entities_and_consolidations_across_workers(_on_postgres(pg_dsn, name) | {
        "graph_store": {"provider": "postgres",
                        "config": {"dsn": pg_dsn, "graph_name": f"{name}_g"}}})
