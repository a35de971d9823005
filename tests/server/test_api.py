"""Every endpoint of the REST API, driven over HTTP against uvicorn."""

from __future__ import annotations

import json
import uuid

import httpx

from memkit.server import create_app
from tests.server.conftest import Client, new_memory, serving


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def test_add_list_get_update_history_delete(client: Client) -> None:
    c = client("open-key")
    user = _user()
    added = c.post("/v1/memories/", json={"messages": "I like green tea", "user_id": user,
                                          "metadata": {"topic": "drinks"}})
    assert added.status_code == 200, added.text
    (event,) = added.json()["results"]
    assert event["event"] == "ADD" and event["memory"] == "I like green tea"
    memory_id = event["id"]

    got = c.get(f"/v1/memories/{memory_id}/").json()
    assert got["memory"] == "I like green tea" and got["user_id"] == user
    assert got["metadata"] == {"topic": "drinks"}

    listed = c.get("/v1/memories/", params={"user_id": user}).json()
    assert [m["id"] for m in listed["results"]] == [memory_id]
    assert listed["next_offset"] is None

    updated = c.put(f"/v1/memories/{memory_id}/", json={"text": "I like black tea"})
    assert updated.status_code == 200 and updated.json()["memory"] == "I like black tea"
    fields = c.put(f"/v1/memories/{memory_id}/", json={"confidence": 0.7, "importance": 0.3,
                                                        "memory_type": "preference"}).json()
    assert (fields["memory"], fields["confidence"], fields["importance"],
            fields["memory_type"]) == ("I like black tea", 0.7, 0.3, "preference")
    unsure = c.post("/v1/memories/", json={"messages": "maybe coffee", "user_id": user,
                                           "infer": False, "confidence": 0.2}).json()
    assert c.get(f"/v1/memories/{unsure['results'][0]['id']}/").json()["confidence"] == 0.2
    assert c.post("/v1/memories/", json={"messages": "x", "user_id": user,
                                         "confidence": 2}).status_code == 422

    assert c.delete(f"/v1/memories/{memory_id}/").json() == {"deleted": 1}
    assert c.get(f"/v1/memories/{memory_id}/").status_code == 404
    history = c.get(f"/v1/memories/{memory_id}/history/").json()
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]
    assert history[1]["old_value"] == "I like green tea"


def test_search_get_and_post_with_filters(client: Client) -> None:
    c = client("open-key")
    user = _user()
    for text, topic in (("I like green tea", "drinks"), ("I play chess", "games")):
        r = c.post("/v1/memories/", json={"messages": text, "user_id": user, "infer": False,
                                          "metadata": {"topic": topic}})
        assert r.status_code == 200
    hits = c.get("/v1/memories/search/", params={"q": "green tea", "user_id": user}).json()
    assert hits["results"][0]["memory"] == "I like green tea"
    filtered = c.post("/v1/memories/search/", json={
        "query": "green tea", "user_id": user, "filters": {"topic": "games"}}).json()
    assert [h["memory"] for h in filtered["results"]] == ["I play chess"]
    via_query = c.get("/v1/memories/search/", params={
        "q": "tea", "user_id": user, "filters": json.dumps({"topic": {"eq": "games"}})}).json()
    assert [h["memory"] for h in via_query["results"]] == ["I play chess"]


def test_pagination(client: Client) -> None:
    c = client("open-key")
    user = _user()
    for i in range(5):
        c.post("/v1/memories/", json={"messages": f"fact number {i}", "user_id": user,
                                      "infer": False})
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = c.get("/v1/memories/", params={"user_id": user, "limit": 2,
                                              "offset": offset}).json()
        assert len(page["results"]) <= 2
        seen += [m["id"] for m in page["results"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == 5


def test_search_pages_by_get_and_post(client: Client) -> None:
    c = client("open-key")
    user = _user()
    for i in range(7):
        c.post("/v1/memories/", json={"messages": f"tea note {i}", "user_id": user,
                                      "infer": False})
    whole = [h["id"] for h in c.post("/v1/memories/search/", json={
        "query": "tea note", "user_id": user, "limit": 3}).json()["results"]]
    posted = [[h["id"] for h in c.post("/v1/memories/search/", json={
        "query": "tea note", "user_id": user, "limit": 3, "offset": o}).json()["results"]]
        for o in (0, 3, 6, 9)]
    got = [[h["id"] for h in c.get("/v1/memories/search/", params={
        "q": "tea note", "user_id": user, "limit": 3, "offset": o}).json()["results"]]
        for o in (0, 3, 6, 9)]
    assert posted == got and posted[0] == whole
    assert [len(p) for p in posted] == [3, 3, 1, 0]
    assert len({i for p in posted for i in p}) == 7
    assert c.get("/v1/memories/search/", params={"q": "x", "offset": -1}).status_code == 422


def test_delete_all_for_a_scope(client: Client) -> None:
    c = client("open-key")
    user, other = _user(), _user()
    for u in (user, user, other):
        c.post("/v1/memories/", json={"messages": f"note {uuid.uuid4()}", "user_id": u,
                                      "infer": False})
    assert c.delete("/v1/memories/", params={"user_id": user}).json() == {"deleted": 2}
    assert c.get("/v1/memories/", params={"user_id": user}).json()["results"] == []
    assert len(c.get("/v1/memories/", params={"user_id": other}).json()["results"]) == 1


def test_errors_have_one_shape(client: Client) -> None:
    c = client("open-key")
    no_scope = c.post("/v1/memories/", json={"messages": "hi"})
    assert no_scope.status_code == 400
    assert no_scope.json()["error"]["type"] == "scope_error"
    bad_filter = c.post("/v1/memories/search/", json={"query": "x", "user_id": "u",
                                                      "filters": {"topic": {"regex": "x"}}})
    assert bad_filter.status_code == 400
    assert bad_filter.json()["error"]["type"] == "filter_error"
    missing = c.get(f"/v1/memories/{uuid.uuid4()}/")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"


def test_malformed_bodies_are_422_and_change_nothing(client: Client) -> None:
    c = client("open-key")
    user = _user()
    bodies: list[bytes] = [
        b"{not json", b"[]", b'{"user_id": "%s"}' % user.encode(),
        json.dumps({"messages": 5, "user_id": user}).encode(),
        json.dumps({"messages": "x", "user_id": user, "infer": "perhaps"}).encode(),
        json.dumps({"messages": "x", "user_id": user, "unknown": 1}).encode(),
        json.dumps({"messages": [{"role": "wizard", "content": "x"}], "user_id": user}).encode(),
    ]
    for body in bodies:
        r = c.post("/v1/memories/", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"]["type"] == "validation_error"
    assert c.post("/v1/memories/search/", json={"query": "x", "limit": 0}).status_code == 422
    assert c.put(f"/v1/memories/{uuid.uuid4()}/", json={"text": ""}).status_code == 422
    assert c.get("/v1/memories/", params={"user_id": user}).json()["results"] == []


def test_body_over_the_limit_is_413(client: Client) -> None:
    r = client("open-key").post("/v1/memories/", json={"messages": "x" * 1_100_000,
                                                       "user_id": "u"})
    assert r.status_code == 413
    assert r.json()["error"]["type"] == "payload_too_large"


def test_reset_needs_an_admin_key(client: Client) -> None:
    assert client("open-key").post("/v1/reset/").status_code == 403
    assert client("alice-key").post("/v1/reset/").status_code == 403


def test_reset_with_an_admin_key() -> None:
    with serving(create_app(new_memory(), api_keys={"root": {"admin": True}})) as url:
        c = httpx.Client(base_url=url, headers={"Authorization": "Bearer root"},
                         timeout=60)  # a hang guard: a reset on a loaded machine can pass 5 s
        c.post("/v1/memories/", json={"messages": "x", "user_id": "u", "infer": False})
        assert c.post("/v1/reset/").json() == {"reset": True}
        assert c.get("/v1/memories/", params={"user_id": "u"}).json()["results"] == []


def test_health_and_openapi(base_url: str) -> None:
    assert httpx.get(f"{base_url}/health").json()["status"] == "ok"
    paths = httpx.get(f"{base_url}/openapi.json").json()["paths"]
    assert {"/v1/memories/", "/v1/memories/search/", "/v1/memories/{memory_id}/",
            "/v1/memories/{memory_id}/history/", "/v1/reset/", "/v1/events"} <= set(paths)
    one = paths["/v1/memories/{memory_id}/"]
    assert "ETag" in one["get"]["responses"]["200"]["headers"]
    assert "412" in one["put"]["responses"] and "ETag" in one["put"]["responses"]["200"]["headers"]
    assert ("if-match", "header") in [(p["name"], p["in"]) for p in one["put"]["parameters"]]


def test_search_takes_q_or_query_on_both_routes(client: Client) -> None:
    c = client("open-key")
    user = _user()
    assert c.post("/v1/memories/", json={"messages": "I like green tea", "user_id": user,
                                         "infer": False}).status_code == 200
    for response in (c.get("/v1/memories/search/", params={"query": "green tea", "user_id": user}),
                     c.post("/v1/memories/search/", json={"q": "green tea", "user_id": user})):
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["memory"] == "I like green tea"
    neither = c.get("/v1/memories/search/", params={"user_id": user})
    assert neither.status_code == 400 and "q or as query" in neither.text


def test_a_delete_records_who_asked(client: Client) -> None:
    c = client("open-key")
    user = _user()
    added = c.post("/v1/memories/", json={"messages": "I like green tea", "user_id": user, "infer": False})
    memory_id = added.json()["results"][0]["id"]
    assert c.delete(f"/v1/memories/{memory_id}/", params={"actor_id": "support-desk"}).status_code == 200
    history = c.get(f"/v1/memories/{memory_id}/history/").json()
    assert history[-1]["event"] == "DELETE" and history[-1]["actor_id"] == "support-desk"


def test_an_update_with_if_match_refuses_to_overwrite_a_change_made_since(client: Client) -> None:
    c = client("open-key")
    memory_id = c.post("/v1/memories/", json={"messages": "I like green tea", "user_id": _user(),
                                              "infer": False}).json()["results"][0]["id"]
    read = c.get(f"/v1/memories/{memory_id}/")
    assert read.headers["ETag"] == f'"{read.json()["updated_at"]}"'
    mine = read.headers["ETag"]
    theirs = c.put(f"/v1/memories/{memory_id}/", json={"text": "I like black tea"},
                   headers={"If-Match": mine})
    assert theirs.status_code == 200 and theirs.headers["ETag"] != mine
    assert theirs.headers["ETag"] == c.get(f"/v1/memories/{memory_id}/").headers["ETag"]
    for tag in (mine, f"W/{theirs.headers['ETag']}", '"nope"'):
        stale = c.put(f"/v1/memories/{memory_id}/", json={"text": "I like mint tea"},
                      headers={"If-Match": tag})
        assert stale.status_code == 412, stale.text
        assert stale.json()["error"]["type"] == "precondition_failed"
        assert theirs.headers["ETag"] in stale.json()["error"]["message"]
    assert c.get(f"/v1/memories/{memory_id}/").json()["memory"] == "I like black tea"
    assert [h["event"] for h in c.get(f"/v1/memories/{memory_id}/history/").json()] == [
        "ADD", "UPDATE"]
    for tag in (f'"nope", {theirs.headers["ETag"]}', "*"):
        assert c.put(f"/v1/memories/{memory_id}/", json={"importance": 0.5},
                     headers={"If-Match": tag}).status_code == 200
    assert c.put(f"/v1/memories/{uuid.uuid4()}/", json={"text": "x"},
                 headers={"If-Match": mine}).status_code == 404
