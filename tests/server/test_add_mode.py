"""The REST door takes the config's add_mode: a server built from a config with
``add_mode="one_call"`` adds in one LLM answer (litellm's offline mock_response)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from memkit.server import create_app
from tests.server.conftest import serving

# Operations with relations beside them: the one-call answer's shape, which an extraction
# (two calls) cannot read, so an ADD proves the add went through one call.
ONE_ANSWER = {"memory": [{"event": "ADD", "text": "User likes green tea", "type": "preference",
                          "importance": 0.7, "subject": "user"}], "relations": []}


def test_a_server_configured_for_one_call_adds_in_one_answer(tmp_path: Path) -> None:
    app = create_app(config={
        "add_mode": "one_call",
        "llm": {"provider": "litellm", "config": {"model": "gpt-4o-mini",
                                                  "mock_response": json.dumps(ONE_ANSWER)}},
        "embedder": {"provider": "hash"}, "vector_store": {"provider": "memory"},
        "history": {"db_path": str(tmp_path / "history.db")}})
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        added = client.post("/v1/memories/", json={"messages": "I like green tea",
                                                   "user_id": "u"})
        assert added.status_code == 200, added.text
        [event] = added.json()["results"]
        assert (event["event"], event["memory"]) == ("ADD", "User likes green tea")
        listed = client.get("/v1/memories/", params={"user_id": "u"}).json()["results"]
        assert [(m["memory"], m["memory_type"]) for m in listed] == [
            ("User likes green tea", "preference")]
