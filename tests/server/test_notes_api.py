"""Tasks, the startup briefing, surface, cross-scope search and folder indexing over REST
(issue 15): each bound to the API key's scope."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import Client


def _task(client: Client, key: str, text: str, **extra: object) -> str:
    r = client(key).post("/v1/memories/", json={"messages": text, "infer": False,
                                                "memory_type": "task", **extra})
    assert r.status_code == 200, r.text
    return str(r.json()["results"][0]["id"])


def test_tasks_and_startup_over_rest(client: Client) -> None:
    alice = client("alice-key")
    tid = _task(client, "alice-key", "Prepare the demo", importance=0.9)
    alice.post("/v1/memories/", json={"messages": "Speak French with Alice", "infer": False,
                                      "surface": "startup"})
    r = alice.put(f"/v1/tasks/{tid}/", json={"status": "in_progress"})
    assert r.status_code == 200 and r.json()["metadata"]["status"] == "in_progress"
    bad = alice.put(f"/v1/tasks/{tid}/", json={"status": "finished"})
    assert bad.status_code == 422
    listed = alice.get("/v1/tasks/", params={"status": "in_progress"}).json()["results"]
    assert [t["id"] for t in listed] == [tid]
    surfaced = alice.get("/v1/memories/", params={"surface": "startup"}).json()["results"]
    assert [m["memory"] for m in surfaced] == ["Speak French with Alice"]

    briefing = alice.get("/v1/startup/", params={"budget_tokens": 500}).json()
    assert briefing["text"].startswith(f"## Open tasks\n- [in_progress] Prepare the demo (task id: {tid})")
    assert "## Remember\n- Speak French with Alice" in briefing["text"]
    assert [i["section"] for i in briefing["items"]] == ["task", "startup"]

    assert client("bob-key").put(f"/v1/tasks/{tid}/", json={"status": "done"}).status_code == 403
    assert client("bob-key").get("/v1/startup/").json()["items"] == []
    history = alice.get(f"/v1/memories/{tid}/history/").json()
    assert [h["new_value"] for h in history] == ["Prepare the demo", "status: in_progress"]


def test_search_over_several_scopes_stays_within_the_key(client: Client) -> None:
    admin = client("admin-key")
    for scope in ({"user_id": "carol"}, {"user_id": "dave"}, {"agent_id": "helper"},
                  {"user_id": "alice", "agent_id": "helper"}):
        text = f"{'/'.join(scope.values())} plays the cello"
        admin.post("/v1/memories/", json={"messages": text, "infer": False, **scope})
    body = {"query": "cello", "scopes": [{"user_id": "carol"}, {"user_id": "dave"}]}
    found = admin.post("/v1/memories/search/", json=body).json()["results"]
    assert sorted(r["memory"] for r in found) == ["carol plays the cello", "dave plays the cello"]
    assert client("alice-key").post("/v1/memories/search/", json=body).status_code == 403
    own = client("alice-key").post("/v1/memories/search/", json={
        "query": "cello", "scopes": [{"agent_id": "helper"}, {"run_id": "r1"}]}).json()
    assert [r["memory"] for r in own["results"]] == ["alice/helper plays the cello"]
    both = admin.post("/v1/memories/search/", json={**body, "user_id": "carol"})
    assert both.status_code == 400


def test_indexing_a_folder_needs_an_admin_key(client: Client, tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("# Wifi\nThe office wifi password is on the fridge.\n")
    body = {"path": str(tmp_path), "user_id": "alice"}
    assert client("alice-key").post("/v1/index/", json=body).status_code == 403
    r = client("admin-key").post("/v1/index/", json=body)
    assert r.status_code == 200 and r.json()["added"] == 1
    hit = client("alice-key").get("/v1/memories/search/", params={"q": "wifi"}).json()["results"][0]
    assert hit["metadata"]["path"] == str((tmp_path / "n.md").resolve())
    assert hit["metadata"]["line_start"] == 1
