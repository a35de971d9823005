"""search's ``rerank`` through every front door: the tools (MCP's and the integrations'),
REST (GET and POST) and the CLI, with a reranker double and litellm's offline mock."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import httpx

from memkit import AsyncMemory, Memory
from memkit.rerankers.base import Ranking, Reranker
from memkit.server import create_app
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM
from memkit.tools import MemoryTools, openai_tools
from tests.cli.test_commands import _env
from tests.server.conftest import echo_llm, serving

TEXTS = ["green tea in the morning", "tea with lemon", "tea ceremony in Kyoto"]


class Longest(Reranker):
    """Longer documents first: an order the search does not give these texts."""

    def rerank(self, query: str, documents: Sequence[str]) -> Ranking:
        order = sorted(range(len(documents)), key=lambda i: (-len(documents[i]), i))
        return [(i, 1.0 - n / 10) for n, i in enumerate(order)]

    async def arerank(self, query: str, documents: Sequence[str]) -> Ranking:
        return self.rerank(query, documents)


LONGEST_FIRST = sorted(TEXTS, key=len, reverse=True)


def test_the_search_tool_takes_rerank() -> None:
    memory = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore(),
                    reranker=Longest())
    tools = MemoryTools(memory, user_id="alice")
    for text in TEXTS:
        tools.call("add_memory", {"content": text, "infer": False})
    found = tools.call("search_memories", {"query": "tea", "rerank": True})
    assert [r["memory"] for r in found["results"]] == LONGEST_FIRST
    assert "rerank" in openai_tools(["search_memories"])[0]["function"]["parameters"]["properties"]


def test_rest_search_takes_rerank_by_get_and_post() -> None:
    memory = AsyncMemory(llm=echo_llm(), embedder=HashEmbedder(), vector_store=InMemoryStore(),
                         reranker=Longest())
    with serving(create_app(memory, api_keys={"k": {}})) as url:
        c = httpx.Client(base_url=url, headers={"Authorization": "Bearer k"}, timeout=10)
        for text in TEXTS:
            c.post("/v1/memories/", json={"messages": text, "user_id": "u", "infer": False})
        got = c.get("/v1/memories/search/", params={"q": "tea", "user_id": "u", "rerank": "true"})
        posted = c.post("/v1/memories/search/", json={"query": "tea", "user_id": "u",
                                                      "rerank": True})
        plain = c.post("/v1/memories/search/", json={"query": "tea", "user_id": "u"})
    assert [h["memory"] for h in got.json()["results"]] == LONGEST_FIRST
    assert posted.json() == got.json()
    assert [h["memory"] for h in plain.json()["results"]] != LONGEST_FIRST


def test_the_cli_search_takes_rerank(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    config = folder / "memkit.json"
    config.write_text(json.dumps({
        "vector_store": {"provider": "sqlite", "config": {"path": str(folder / "m.db")}},
        "embedder": {"provider": "hash"},
        "reranker": {"provider": "llm", "config": {  # litellm's offline mock answer
            "model": "gpt-4o-mini", "mock_response": json.dumps({"ranking": ["3", "2", "1"]})}}}))

    with Memory(json.loads(config.read_text())) as memory:
        for text in TEXTS:
            memory.add(text, user_id="u", infer=False)
        plain = memory.search("tea", user_id="u", limit=10).results
    done = subprocess.run([sys.executable, "-m", "memkit.cli", "--config", str(config), "search",
                           "tea", "-u", "u", "--rerank", "--json"],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    reranked = json.loads(done.stdout)["results"]
    assert [h["memory"] for h in reranked] == [item.memory for item in reversed(plain)]
    assert [h["score"] for h in reranked] == [1.0, round(2 / 3, 6), round(1 / 3, 6)]
