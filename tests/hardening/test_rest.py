"""Hostile requests to the REST server answer 4xx with an error body, never 5xx."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import Client

DEEP_FILTER = '{"NOT":' * 5000 + '{"a": 1}' + "}" * 5000
DEEP_ARRAY = "[" * 3000 + "]" * 3000

BODIES = {
    "surrogate-message": ("POST", "/v1/memories/", '{"messages": "I like \\ud800 tea"}'),
    "surrogate-message-list": ("POST", "/v1/memories/",
                               '{"messages": [{"role": "user", "content": "\\udfff"}]}'),
    "nul-metadata": ("POST", "/v1/memories/",
                     '{"messages": "tea", "infer": false, "metadata": {"k": "a\\u0000b"}}'),
    "deep-metadata": ("POST", "/v1/memories/", '{"messages": "tea", "infer": false, '
                      '"metadata": {"k": ' + '{"k":' * 100 + "1" + "}" * 100 + "}}"),
    "huge-int-metadata": ("POST", "/v1/memories/", '{"messages": "tea", "infer": false, '
                          '"metadata": {"n": ' + "9" * 30 + "}}"),
    "surrogate-query": ("POST", "/v1/memories/search/", '{"query": "tea \\ud800"}'),
    "deep-filter-body": ("POST", "/v1/memories/search/",
                         '{"query": "tea", "filters": ' + DEEP_FILTER + "}"),
    "filter-depth-17": ("POST", "/v1/memories/search/",
                        '{"query": "tea", "filters": ' + '{"NOT":' * 17 + '{"a": 1}' + "}" * 17
                        + "}"),
    "filter-huge-int": ("POST", "/v1/memories/search/",
                        '{"query": "tea", "filters": {"a": ' + "9" * 5000 + "}}"),
    "filter-many-values": ("POST", "/v1/memories/search/",
                           '{"query": "tea", "filters": {"a": {"in": '
                           + json.dumps(list(range(20_000))) + "}}}"),
    "filter-nul": ("POST", "/v1/memories/search/",
                   '{"query": "tea", "filters": {"a": "\\u0000"}}'),
    "add-filter-deep": ("POST", "/v1/memories/",
                        '{"messages": "tea", "filters": ' + '{"NOT":' * 40 + '{"a": 1}'
                        + "}" * 40 + "}"),
    "surrogate-update": ("PUT", "/v1/memories/some-id/", '{"text": "x\\ud800"}'),
    "invalid-utf8": ("POST", "/v1/memories/", b'{"messages": "\xff\xfe tea"}'),
}


@pytest.mark.parametrize("method, path, body", BODIES.values(), ids=BODIES.keys())
def test_hostile_bodies_answer_4xx(client: Client, method: str, path: str,
                                   body: str | bytes) -> None:
    response = client("alice-key").request(method, path, content=body,
                                           headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["message"]


@pytest.mark.parametrize("filters", [DEEP_ARRAY, '{"NOT":' * 1500 + "{}" + "}" * 1500,
                                     '{"a": ' + "9" * 5000 + "}", "{", "[1]", '{"a": NaN}'],
                         ids=["deep-array", "deep-object", "huge-int", "truncated", "not-object",
                              "nan"])
def test_hostile_filters_parameters_answer_400(client: Client, filters: str) -> None:
    for path in ("/v1/memories/", "/v1/memories/search/"):
        response = client("alice-key").get(path, params={"filters": filters, "q": "tea"})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["type"] == "filter_error"
    response = client("alice-key").delete("/v1/memories/", params={"filters": filters})
    assert response.status_code == 400, response.text


def test_a_nul_in_a_query_still_searches(client: Client) -> None:
    alice = client("alice-key")
    assert alice.post("/v1/memories/", json={"messages": "I like oolong", "infer": False}
                      ).status_code == 200
    response = alice.post("/v1/memories/search/", json={"query": "oo\u0000long oolong",
                                                       "mode": "keyword"})
    assert response.status_code == 200, response.text
    assert [r["memory"] for r in response.json()["results"]] == ["I like oolong"]


def test_degrade_is_available_over_rest(client: Client) -> None:
    response = client("alice-key").post("/v1/memories/", json={
        "messages": "tea", "infer": False, "on_error": "degrade"})
    assert response.status_code == 200 and response.json()["errors"] == []
    response = client("alice-key").post("/v1/memories/", json={
        "messages": "tea", "on_error": "sometimes"})
    assert response.status_code == 422
