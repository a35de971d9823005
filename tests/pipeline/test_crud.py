"""CRUD, scoping and history through the public API (seed cases: CRUD, scoping, history)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from memkit import MemoryItem, NotFoundError, ScopeError
from tests.pipeline.conftest import MakeMemory

pytestmark = pytest.mark.every_store


def test_add_without_inference_stores_each_message_verbatim(make_memory: MakeMemory) -> None:
    m = make_memory()
    result = m.add(
        [
            {"role": "system", "content": "be nice"},
            {"role": "user", "content": "I love hiking", "name": "alice"},
            {"role": "assistant", "content": "Hiking is great"},
        ],
        user_id="alice", infer=False, metadata={"source": "chat"},
    )
    assert [e.event for e in result.results] == ["ADD", "ADD"]
    assert result.usage.llm_calls == 0
    stored = {i.memory: i for i in m.get_all(user_id="alice").results}
    assert set(stored) == {"I love hiking", "Hiking is great"}
    assert stored["I love hiking"].metadata == {"source": "chat", "role": "user", "name": "alice"}
    assert stored["Hiking is great"].metadata["role"] == "assistant"


def test_add_without_inference_skips_exact_duplicates(make_memory: MakeMemory) -> None:
    m = make_memory()
    first = m.add("I love hiking", user_id="alice", infer=False)
    again = m.add(["I love hiking", "I love hiking"], user_id="alice", infer=False)
    assert [e.event for e in again.results] == ["NONE"]
    assert again.results[0].id == first.results[0].id
    assert len(m.get_all(user_id="alice").results) == 1
    other = m.add("I love hiking", user_id="bob", infer=False)
    assert other.results[0].event == "ADD"


def test_get_returns_the_memory_with_all_fields(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", agent_id="a", run_id="r", infer=False).results[0]
    item = m.get(event.id)
    assert isinstance(item, MemoryItem)
    assert (item.memory, item.user_id, item.agent_id, item.run_id) == ("Likes tea", "u", "a", "r")
    assert item.hash == hashlib.md5(b"Likes tea").hexdigest()
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None
    assert m.get("00000000-0000-4000-8000-000000000000") is None


def test_update_changes_text_hash_and_updated_at_and_is_searchable(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False, metadata={"k": 1}).results[0]
    before = m.get(event.id)
    assert before is not None
    updated = m.update(event.id, "Likes green tea")
    assert updated.memory == "Likes green tea"
    assert updated.created_at == before.created_at
    assert updated.updated_at >= before.updated_at
    assert updated.metadata == before.metadata
    after = m.get(event.id)
    assert after is not None and after.memory == "Likes green tea" and after.hash != before.hash
    top = m.search("green tea", user_id="u").results[0]
    assert top.id == event.id


def test_update_and_delete_of_unknown_id_raise_not_found(make_memory: MakeMemory) -> None:
    m = make_memory()
    with pytest.raises(NotFoundError):
        m.update("no-such-id", "text")
    with pytest.raises(NotFoundError):
        m.delete("no-such-id")


def test_delete_removes_the_memory_and_keeps_its_history(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False).results[0]
    m.delete(event.id)
    assert m.get(event.id) is None
    assert m.get_all(user_id="u").results == []
    history = m.history(event.id)
    assert [h.event for h in history] == ["ADD", "DELETE"]
    assert history[-1].is_deleted and history[-1].old_value == "Likes tea"


def test_history_is_chronological_with_old_and_new_values(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("v1", user_id="u", infer=False).results[0]
    m.update(event.id, "v2")
    m.update(event.id, "v3")
    history = m.history(event.id)
    assert [(h.event, h.old_value, h.new_value) for h in history] == [
        ("ADD", None, "v1"), ("UPDATE", "v1", "v2"), ("UPDATE", "v2", "v3"),
    ]
    assert all(h.memory_id == event.id and h.user_id == "u" for h in history)
    assert [h.timestamp for h in history] == sorted(h.timestamp for h in history)


def test_scopes_are_isolated(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("alice fact", user_id="alice", infer=False)
    m.add("bob fact", user_id="bob", infer=False)
    m.add("agent fact", agent_id="helper", infer=False)
    m.add("run fact", user_id="alice", run_id="r1", infer=False)
    assert {i.memory for i in m.get_all(user_id="bob").results} == {"bob fact"}
    assert {i.memory for i in m.get_all(user_id="alice").results} == {"alice fact", "run fact"}
    assert {i.memory for i in m.get_all(user_id="alice", run_id="r1").results} == {"run fact"}
    assert {i.memory for i in m.get_all(agent_id="helper").results} == {"agent fact"}
    assert {i.memory for i in m.search("fact", user_id="bob").results} == {"bob fact"}


@pytest.mark.parametrize("call", ["add", "search", "get_all", "delete_all"])
def test_missing_scope_raises_scope_error(make_memory: MakeMemory, call: str) -> None:
    m = make_memory()
    args = {"add": ("hello",), "search": ("hello",)}.get(call, ())
    kwargs = {"infer": False} if call == "add" else {}
    with pytest.raises(ScopeError, match="At least one of user_id, agent_id, or run_id"):
        getattr(m, call)(*args, **kwargs)


def test_delete_all_removes_every_memory_of_the_scope_only(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add([f"fact number {i}" for i in range(1203)], user_id="many", infer=False)
    m.add("keep me", user_id="other", infer=False)
    added = {m.memory: m.id for m in m.get_all(user_id="many", limit=2000).results}
    deleted = m.delete_all(user_id="many")
    assert deleted.count == 1203
    assert {(e.id, e.event, e.user_id) for e in deleted.results} == {
        (i, "DELETE", "many") for i in added.values()}
    assert {e.old_memory for e in deleted.results} == set(added)
    assert m.get_all(user_id="many").results == []
    assert [i.memory for i in m.get_all(user_id="other").results] == ["keep me"]


def test_get_all_is_newest_first_and_honours_limit(make_memory: MakeMemory) -> None:
    m = make_memory()
    for day in (3, 1, 2):
        m.add(f"day {day}", user_id="u", infer=False, timestamp=datetime(2024, 1, day, tzinfo=UTC))
    items = m.get_all(user_id="u").results
    assert [i.memory for i in items] == ["day 3", "day 2", "day 1"]
    assert [i.memory for i in m.get_all(user_id="u", limit=2).results] == ["day 3", "day 2"]


def test_timestamp_sets_created_and_updated_at(make_memory: MakeMemory) -> None:
    m = make_memory()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    event = m.add("old memory", user_id="u", infer=False, timestamp=when).results[0]
    item = m.get(event.id)
    assert item is not None and item.created_at == when and item.updated_at == when
    assert m.history(event.id)[0].timestamp == when
    iso = m.add("iso memory", user_id="u", infer=False, timestamp="2022-01-02T03:04:05Z").results[0]
    got = m.get(iso.id)
    assert got is not None and got.created_at == datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_search_orders_by_score_with_scores_in_unit_interval(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(["User likes Python programming", "User owns a cat", "The weather is cold"],
          user_id="u", infer=False)
    results = m.search("python programming", user_id="u").results
    assert results[0].memory == "User likes Python programming"
    scores = [r.score for r in results]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert len(m.search("python", user_id="u", limit=1).results) == 1
    high = m.search("python programming", user_id="u", threshold=0.99).results
    assert all(r.score is not None and r.score >= 0.99 for r in high)


def test_reset_clears_memories_and_history(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("something", user_id="u", infer=False).results[0]
    m.reset()
    assert m.get(event.id) is None
    assert m.history(event.id) == []
    assert m.add("something", user_id="u", infer=False).results[0].event == "ADD"


def test_results_dump_to_json(make_memory: MakeMemory) -> None:
    m = make_memory()
    result = m.add("Likes tea", user_id="u", infer=False)
    dumped = result.model_dump(mode="json")
    assert dumped["results"][0]["event"] == "ADD"
    assert set(dumped["usage"]) == {"llm_calls", "prompt_tokens", "completion_tokens", "cost_usd"}
    item = m.search("tea", user_id="u").results[0].model_dump(mode="json")
    assert set(item) >= {"id", "memory", "hash", "metadata", "user_id", "agent_id", "run_id",
                         "created_at", "updated_at", "score"}
    assert isinstance(item["created_at"], str)
