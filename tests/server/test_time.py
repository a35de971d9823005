"""The REST API over time: as_of, dry runs, versions, supersede, revert, hard deletes."""

from __future__ import annotations

import uuid

import httpx

from tests.server.conftest import Client


def _add(c: httpx.Client, text: str, user: str, **extra: object) -> str:
    r = c.post("/v1/memories/", json={"messages": text, "user_id": user, "infer": False, **extra})
    assert r.status_code == 200, r.text
    return str(r.json()["results"][0]["id"])


def test_as_of_versions_supersede_and_revert(client: Client) -> None:
    c = client("alice-key")
    memory_id = _add(c, "Lives in Lisbon", "alice", timestamp="2025-01-01T00:00:00Z")
    assert c.put(f"/v1/memories/{memory_id}/", json={"text": "Lives in Berlin"}).status_code == 200
    versions = c.get(f"/v1/memories/{memory_id}/versions/").json()
    assert [v["memory"] for v in versions] == ["Lives in Lisbon", "Lives in Berlin"]
    then = versions[0]["valid_from"]
    past = c.get("/v1/memories/search/", params={"q": "lives", "user_id": "alice",
                                                 "as_of": then}).json()
    assert [m["memory"] for m in past["results"]] == ["Lives in Lisbon"]
    listed = c.get("/v1/memories/", params={"user_id": "alice", "as_of": then}).json()
    assert [m["memory"] for m in listed["results"]] == ["Lives in Lisbon"]
    body = c.post("/v1/memories/search/", json={"query": "lives", "user_id": "alice",
                                               "as_of": then}).json()
    assert [m["memory"] for m in body["results"]] == ["Lives in Lisbon"]

    history = c.get(f"/v1/memories/{memory_id}/history/").json()
    revert = f"/v1/memories/{memory_id}/history/{history[1]['id']}/revert/"
    undo = c.post(revert)
    assert undo.status_code == 200 and undo.json()["reverts"] == history[1]["id"]
    assert c.get(f"/v1/memories/{memory_id}/").json()["memory"] == "Lives in Lisbon"
    again = c.post(revert)
    assert again.status_code == 409 and again.json()["error"]["type"] == "conflict"

    newer = c.post(f"/v1/memories/{memory_id}/supersede/", json={"text": "Lives in Rome"})
    assert newer.status_code == 200 and newer.json()["supersedes"] == memory_id
    twice = c.post(f"/v1/memories/{memory_id}/supersede/", json={"text": "Lives in Oslo"})
    assert twice.status_code == 409

    other = client("bob-key")
    assert other.get(f"/v1/memories/{memory_id}/versions/").status_code == 403
    assert other.post(revert).status_code == 403


def test_dry_run_expiry_and_hard_deletes(client: Client) -> None:
    c = client("open-key")
    user = f"u-{uuid.uuid4().hex[:8]}"
    dry = c.post("/v1/memories/", json={"messages": "Likes tea", "user_id": user,
                                        "infer": False, "dry_run": True}).json()
    assert dry["results"][0]["event"] == "ADD"
    assert c.get("/v1/memories/", params={"user_id": user}).json()["results"] == []

    _add(c, "Promo ABC", user, expires_at="2000-01-01T00:00:00Z")
    assert c.get("/v1/memories/", params={"user_id": user}).json()["results"] == []
    shown = c.get("/v1/memories/", params={"user_id": user, "include_expired": True}).json()
    assert [m["memory"] for m in shown["results"]] == ["Promo ABC"]

    kept = _add(c, "Likes tea", user)
    assert c.put(f"/v1/memories/{kept}/", json={"text": "Likes coffee"}).status_code == 200
    assert c.delete(f"/v1/memories/{kept}/", params={"hard": True}).json() == {"deleted": 1}
    assert c.get(f"/v1/memories/{kept}/versions/").status_code == 404
    purged = c.delete("/v1/memories/", params={"user_id": user, "purge": True}).json()
    assert purged == {"deleted": 1}  # the expired memory


def test_a_memory_no_longer_valid_can_still_be_hard_deleted_by_its_scope(client: Client) -> None:
    c = client("alice-key")
    gone = _add(c, "Owned a kite", "alice")
    assert c.delete(f"/v1/memories/{gone}/").json() == {"deleted": 1}
    assert c.delete(f"/v1/memories/{gone}/", params={"hard": True}).status_code == 200
    assert c.get(f"/v1/memories/{gone}/versions/").status_code == 404
    other = _add(c, "Owned a boat", "alice")
    c.delete(f"/v1/memories/{other}/")
    refused = client("bob-key").delete(f"/v1/memories/{other}/", params={"hard": True})
    assert refused.status_code == 403
    assert c.get(f"/v1/memories/{other}/versions/").status_code == 200
