"""API keys: 401 without a known key, 403 outside the key's scope, whatever the route."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from memkit.server import create_app
from tests.server.conftest import Client, new_memory, serving


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"},
                                     {"Authorization": "Basic YWxpY2U6eA=="}])
def test_missing_or_unknown_key_is_401(base_url: str, headers: dict[str, str]) -> None:
    r = httpx.get(f"{base_url}/v1/memories/", params={"user_id": "alice"}, headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "unauthorized"
    assert r.headers["www-authenticate"] == "Bearer"


def _bobs_memory(client: Client) -> str:
    r = client("bob-key").post("/v1/memories/", json={
        "messages": f"bob's secret {uuid.uuid4()}", "infer": False, "metadata": {"kind": "secret"}})
    assert r.status_code == 200
    return str(r.json()["results"][0]["id"])


def test_bound_key_is_forced_into_its_scope(client: Client) -> None:
    alice = client("alice-key")
    r = alice.post("/v1/memories/", json={"messages": "alice likes tea", "infer": False})
    assert r.status_code == 200
    item = alice.get(f"/v1/memories/{r.json()['results'][0]['id']}/").json()
    assert item["user_id"] == "alice"
    assert all(m["user_id"] == "alice" for m in alice.get("/v1/memories/").json()["results"])


def test_bound_key_cannot_name_another_scope(client: Client) -> None:
    alice = client("alice-key")
    assert alice.post("/v1/memories/", json={"messages": "x", "user_id": "bob"}).status_code == 403
    assert alice.get("/v1/memories/", params={"user_id": "bob"}).status_code == 403
    assert alice.get("/v1/memories/search/", params={"q": "x", "user_id": "bob"}).status_code == 403
    assert alice.post("/v1/memories/search/", json={"query": "x", "user_id": "bob"}).status_code == 403
    assert alice.delete("/v1/memories/", params={"user_id": "bob"}).status_code == 403
    assert alice.get("/v1/events", params={"user_id": "bob"}).status_code == 403


def test_bound_key_cannot_touch_another_users_memory_by_id(client: Client) -> None:
    memory_id = _bobs_memory(client)
    alice = client("alice-key")
    assert alice.get(f"/v1/memories/{memory_id}/").status_code == 403
    assert alice.put(f"/v1/memories/{memory_id}/", json={"text": "hacked"}).status_code == 403
    assert alice.delete(f"/v1/memories/{memory_id}/").status_code == 403
    assert alice.get(f"/v1/memories/{memory_id}/history/").status_code == 403
    bob = client("bob-key")
    assert bob.get(f"/v1/memories/{memory_id}/").json()["memory"].startswith("bob's secret")
    assert bob.delete(f"/v1/memories/{memory_id}/").status_code == 200
    assert alice.get(f"/v1/memories/{memory_id}/history/").status_code == 403


def test_filters_cannot_reach_another_scope(client: Client) -> None:
    _bobs_memory(client)
    alice = client("alice-key")
    escape = {"OR": [{"user_id": "bob"}, {"kind": "secret"}]}
    searched = alice.post("/v1/memories/search/", json={"query": "secret", "filters": escape})
    assert searched.status_code == 200
    assert all(m["user_id"] == "alice" for m in searched.json()["results"])
    listed = alice.get("/v1/memories/", params={"filters": json.dumps({"user_id": "bob"})})
    assert listed.status_code == 200 and listed.json()["results"] == []  # matches nothing
    nested = alice.get("/v1/memories/", params={"filters": json.dumps({"NOT": {"user_id": "x"}})})
    assert all(m["user_id"] == "alice" for m in nested.json()["results"])
    deleted = alice.delete("/v1/memories/", params={"filters": json.dumps({"kind": "secret"})})
    assert deleted.status_code == 200
    bob_left = client("bob-key").get("/v1/memories/", params={
        "filters": json.dumps({"kind": "secret"})}).json()["results"]
    assert bob_left, "alice's delete_all reached bob's memories"


def test_without_keys_loopback_clients_get_full_rights() -> None:
    with serving(create_app(new_memory(), api_keys={})) as url:
        r = httpx.post(f"{url}/v1/memories/", json={"messages": "x", "user_id": "u",
                                                    "infer": False})
        assert r.status_code == 200


def test_no_other_origin_may_change_anything_and_a_keyless_server_wants_a_local_host() -> None:
    with serving(create_app(new_memory(), api_keys={})) as url:
        body = {"messages": "x", "user_id": "u", "infer": False}
        forged = httpx.post(f"{url}/v1/memories/", json=body, headers={"Origin": "http://evil.example"})
        assert forged.status_code == 403 and "another origin" in forged.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/reset/", headers={"Origin": "null"}).status_code == 403
        own = httpx.post(f"{url}/v1/memories/", json=body, headers={"Origin": url})
        assert own.status_code == 200
        assert httpx.get(f"{url}/v1/stats/", headers={"Origin": "http://evil.example"}).status_code == 200
        rebound = httpx.get(f"{url}/v1/memories/", params={"user_id": "u"},
                            headers={"Host": "evil.example:80"})  # a DNS name rebound to 127.0.0.1
        assert rebound.status_code == 403
        assert httpx.get(f"{url.replace('127.0.0.1', 'localhost')}/health").status_code == 200
    with serving(create_app(new_memory(), api_keys={"k": {}})) as url:
        forged = httpx.post(f"{url}/v1/memories/", json=body, headers={
            "Origin": "http://evil.example", "Authorization": "Bearer k"})
        assert forged.status_code == 403
        named = httpx.get(f"{url}/health", headers={"Host": "memkit.example"})
        assert named.status_code == 200  # with keys, any host name may serve the API


def test_a_page_of_another_site_may_not_even_read_the_api() -> None:
    """A read can change state (the search log, reinforcement), so what a browser says
    another site's page sent is refused on /v1/, keys or not; what no browser marks, what
    the server's own pages send and an address typed in are not."""
    for keys, auth in (({}, {}), ({"k": {}}, {"Authorization": "Bearer k"})):
        with serving(create_app(new_memory(), api_keys=keys)) as url:
            for site in ("cross-site", "same-site", "Cross-Site"):
                for path in ("/v1/stats/", "/v1/memories/?user_id=u", "/v1/events"):
                    refused = httpx.get(f"{url}{path}", headers={"Sec-Fetch-Site": site, **auth})
                    assert refused.status_code == 403, (site, path)
                    assert f"Sec-Fetch-Site: {site.lower()}" in refused.json()["error"]["message"]
                assert httpx.get(f"{url}/health", headers={"Sec-Fetch-Site": site}).status_code == 200
            for site in ("same-origin", "none"):
                fine = httpx.get(f"{url}/v1/stats/", headers={"Sec-Fetch-Site": site, **auth})
                assert fine.status_code == 200, site
            assert httpx.get(f"{url}/v1/stats/", headers=auth).status_code == 200
