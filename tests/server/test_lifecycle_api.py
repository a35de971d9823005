"""/v1/stats/, /v1/consolidate/, feedback and the search log over HTTP, bound to the API
key's scope; consolidation_complete on the change feed, from a REST consolidation and from
the automatic one an add starts, when they merged something."""

from __future__ import annotations

import httpx

from memkit import AsyncMemory
from memkit.server import create_app
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder
from tests.server.conftest import KEYS, echo_llm, serving
from tests.server.test_events import _subscribe

TEXTS = ("User likes green tea", "user likes green tea!", "User plays chess")


def _memory(**lifecycle: object) -> AsyncMemory:
    return AsyncMemory({"lifecycle": lifecycle}, llm=echo_llm(), embedder=HashEmbedder(),
                       vector_store=InMemoryStore())


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10)


def test_stats_consolidate_feedback_and_search_log_are_scope_bound() -> None:
    with serving(create_app(_memory(search_log=True), api_keys=KEYS)) as url:
        alice, bob = _client(url, "alice-key"), _client(url, "bob-key")
        ids = [alice.post("/v1/memories/", json={"messages": t, "infer": False}
                          ).json()["results"][0]["id"] for t in TEXTS]
        bob.post("/v1/memories/", json={"messages": "Bob likes green tea", "infer": False})

        stats = alice.get("/v1/stats/").json()
        assert stats["memories"] == 3 and stats["by_state"]["current"] == 3
        assert sum(stats["confidence_histogram"]) == 3
        assert bob.get("/v1/stats/").json()["memories"] == 1
        assert bob.get("/v1/stats/", params={"user_id": "alice"}).status_code == 403

        dry = alice.post("/v1/consolidate/", json={}).json()
        assert dry["dry_run"] and len(dry["clusters"]) == 1
        assert alice.get("/v1/stats/").json()["memories"] == 3
        done = alice.post("/v1/consolidate/", json={"dry_run": False}).json()
        assert not done["dry_run"] and len(done["clusters"][0]["merged"]) == 1
        assert alice.get("/v1/stats/").json()["memories"] == 2
        assert bob.get("/v1/stats/").json()["memories"] == 1  # another scope: untouched

        alice.post("/v1/memories/search/", json={"query": "chess"})
        assert alice.post(f"/v1/memories/{ids[2]}/feedback/", json={"useful": True}
                          ).json() == {"id": ids[2], "useful": True}
        assert bob.post(f"/v1/memories/{ids[2]}/feedback/", json={"useful": False}
                        ).status_code == 403
        [logged] = alice.get("/v1/searches/").json()
        assert logged["query"] is None and logged["result_ids"][0] == ids[2]
        assert bob.get("/v1/searches/").json() == []


def test_sse_consolidation_complete_from_automatic_runs_and_from_rest() -> None:
    with serving(create_app(_memory(consolidate_every=2), api_keys=KEYS)) as url:
        thread, events, sub, stream = _subscribe(url, "alice-key", want=9)
        try:
            alice = _client(url, "alice-key")
            for text in (*TEXTS[:2], "User plays chess", "user plays chess!"):
                alice.post("/v1/memories/", json={"messages": text, "infer": False})
            _client(url, "bob-key").post("/v1/consolidate/", json={"dry_run": False})
            alice.post("/v1/consolidate/", json={"dry_run": False})  # merges nothing: no event
            alice.post("/v1/memories/", json={"messages": "User reads", "infer": False})
            thread.join(10)
        finally:
            stream.__exit__(None, None, None)
            sub.close()
    assert [e["event"] for e in events] == 2 * [
        "memory_created", "memory_created", "memory_deleted", "consolidation_complete",
    ] + ["memory_created"]
    for created, merged, complete in ((events[1], events[2], events[3]),
                                      (events[5], events[6], events[7])):
        assert complete["user_id"] == "alice" and complete["clusters"] == 1
        assert list(complete["merged"].values()) == [[merged["id"]]]
        assert merged["id"] == created["id"]  # the newer copy merges into the older one
    assert events[8]["memory"] == "User reads"


def test_prune_forgets_low_confidence_memories_of_the_keys_scope() -> None:
    with serving(create_app(_memory(), api_keys=KEYS)) as url:
        alice, bob = _client(url, "alice-key"), _client(url, "bob-key")
        keep = alice.post("/v1/memories/", json={"messages": "User plays chess",
                                                 "infer": False}).json()["results"][0]["id"]
        weak = alice.post("/v1/memories/", json={"messages": "User once tried golf",
                                                 "infer": False}).json()["results"][0]["id"]
        bob.post("/v1/memories/", json={"messages": "Bob tried golf", "infer": False})
        for memory_id in (weak, weak, weak, weak, weak):
            alice.post(f"/v1/memories/{memory_id}/feedback/", json={"useful": False})
        dry = alice.post("/v1/prune/", json={"below": 0.5}).json()
        assert [e["id"] for e in dry["results"]] == [weak]
        assert alice.get(f"/v1/memories/{weak}/").status_code == 200
        done = alice.post("/v1/prune/", json={"below": 0.5, "dry_run": False}).json()
        assert [e["id"] for e in done["results"]] == [weak]
        assert alice.get(f"/v1/memories/{weak}/").status_code == 404
        assert alice.get(f"/v1/memories/{keep}/").status_code == 200
        assert len(bob.get("/v1/memories/").json()["results"]) == 1
        assert bob.post("/v1/prune/", json={"user_id": "alice"}).status_code == 403


def test_a_callers_read_reinforces_a_memory_the_routes_own_checks_do_not() -> None:
    with serving(create_app(_memory(reinforce=True, flush_every=1), api_keys=KEYS)) as url:
        alice = _client(url, "alice-key")
        tea, chess, golf = (alice.post("/v1/memories/", json={"messages": t, "infer": False}
                                       ).json()["results"][0]["id"]
                            for t in ("User likes tea", "User plays chess", "User golfs"))

        def accesses(memory_id: str) -> int:
            item = alice.get(f"/v1/memories/{memory_id}/", params={"reinforce": False}).json()
            return int(item["access_count"])

        alice.get(f"/v1/memories/{tea}/")
        assert accesses(tea) == 1
        alice.post(f"/v1/memories/{chess}/feedback/", json={"useful": False})
        alice.put(f"/v1/memories/{chess}/", json={"importance": 0.5})
        alice.get(f"/v1/memories/{chess}/history/")
        chess_item = alice.get(f"/v1/memories/{chess}/", params={"reinforce": False}).json()
        assert chess_item["access_count"] == 0 and chess_item["confidence"] == 0.8
        alice.delete(f"/v1/memories/{golf}/")
        [ended] = alice.get(f"/v1/memories/{golf}/versions/").json()
        assert ended["valid_to"] is not None and ended["access_count"] == 0


def test_subjects_filter_and_confirmations_count_over_rest() -> None:
    from memkit.testing import ScriptedLLM

    said = {"facts": [{"text": "Ana lives in Lyon", "type": "fact", "importance": 0.5,
                       "subject": "Ana"},
                      {"text": "User likes tea", "type": "preference", "importance": 0.5,
                       "subject": "user"}]}
    memory = AsyncMemory(llm=ScriptedLLM([said, said]), embedder=HashEmbedder(),
                         vector_store=InMemoryStore())
    with serving(create_app(memory, api_keys=KEYS)) as url:
        alice = _client(url, "alice-key")
        first = alice.post("/v1/memories/", json={"messages": "Ana lives in Lyon; I like tea"})
        lyon = first.json()["results"][0]
        assert lyon["metadata"] == {"subject": "Ana"}
        about = alice.get("/v1/memories/", params={"filters": '{"subject": "Ana"}'}).json()
        assert [m["id"] for m in about["results"]] == [lyon["id"]]
        again = alice.post("/v1/memories/", json={"messages": "As I said: Lyon, tea"}).json()
        assert [e["event"] for e in again["results"]] == ["NONE", "NONE"]
        item = alice.get(f"/v1/memories/{lyon['id']}/").json()
        assert item["metadata"] == {"subject": "Ana", "confirmations": 1}
        assert alice.get("/v1/stats/").json()["confirmations"] == 2
