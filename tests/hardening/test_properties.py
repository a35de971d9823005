"""Property-based hostility (hypothesis) through the public API and REST: only documented
memkit errors, nothing outside the add's scope changed, every skipped operation reported,
and SQLite answering every filter as the reference evaluator does."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memkit import (
    AsyncMemory,
    EmbeddingError,
    FilterError,
    LLMError,
    MemkitError,
    Memory,
    VectorStoreError,
)
from memkit._filters import OPERATORS
from memkit._pipeline.add.parsing import ParseError, parse_facts
from memkit._text import bad_code_point
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts
from tests.server.conftest import Client

HOSTILE = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])

# Every code point, lone surrogates and NUL included.
ANY_CHAR = st.characters(blacklist_categories=())
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=12),
    st.sampled_from(["", " ", "0", "1", "²", "٣", "-1", "1e3", "\x00", "\ud800", "{{", "[[",
                     "User has a dog", "User lives in Paris", "DROP TABLE x"]),
)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                        st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(JSON_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8)
_EVENTS = st.sampled_from(["ADD", "UPDATE", "DELETE", "NONE", "add", " Update ", "delete", "MERGE"])
EVENT = st.one_of(_EVENTS, _EVENTS, _EVENTS, JSON_SCALAR)  # mostly real events
_LABELS = st.sampled_from(["0", "1", "2", "7", "²", "①", "٣", "𝟙", " 1 ", "0x1", "1²"])
LABEL = st.one_of(_LABELS, _LABELS, _LABELS, st.integers(-2, 3), JSON_SCALAR)
OPERATION = st.one_of(
    st.fixed_dictionaries({"event": EVENT, "id": LABEL}, optional={
        "text": st.one_of(TEXT, JSON_SCALAR), "old_memory": st.one_of(TEXT, st.none()),
    }),
    st.fixed_dictionaries({"event": EVENT}, optional={"text": TEXT, "data": TEXT}),
    JSON,
)


def _event_of(item: Any) -> str | None:
    event = item.get("event") if isinstance(item, dict) else None
    return event.strip().upper() if isinstance(event, str) else None


def _must_answer(operations: list[Any]) -> int:
    """How many events or errors the operations must produce at least: one per distinct
    operation, except NONEs (no change to report) and ADDs of a text already added."""
    seen: set[str] = set()
    added: set[str] = set()
    for item in operations:
        if _event_of(item) == "NONE":
            continue
        text = item.get("text") if isinstance(item, dict) else None
        if _event_of(item) == "ADD" and isinstance(text, str):
            if text.strip() in added:
                continue
            added.add(text.strip())
        seen.add(json.dumps(item, sort_keys=True, default=repr))
    return len(seen)


def _snapshot(m: Any, user_id: str) -> list[tuple[str, str, list[str]]]:
    items = m.get_all(user_id=user_id).results
    return sorted((i.id, i.memory, [h.event for h in m.history(i.id)]) for i in items)


@HOSTILE
@given(operations=st.lists(OPERATION, max_size=5))
@example(operations=[{"event": "DELETE", "id": "²"}, {"event": "UPDATE", "id": "①", "text": "x"}])
@example(operations=[{"event": "NONE", "id": "٣"}, {"event": "ADD", "text": "a\ud800"}])
@example(operations=[{"event": "UPDATE", "id": "0", "text": "User has two dogs",
                      "old_memory": "User lives in Paris"},
                     {"event": "DELETE", "id": "1", "old_memory": "nothing alike at all"}])
@example(operations=[{"event": "UPDATE", "id": "0", "text": "x"}, {"event": "DELETE", "id": "0"},
                     {"event": "ADD", "text": "x"}, {"event": "ADD", "text": " x "}])
def test_hostile_decisions_never_escape_the_scope_and_are_all_reported(
    make_memory: MakeMemory, operations: list[Any]
) -> None:
    llm = ScriptedLLM([facts("User has a dog", "User lives in Paris")])
    m = make_memory(llm)
    m.add("dog, Paris", user_id="alice")
    m.add("Bob has a dog", user_id="bob", infer=False)
    bob, alice = _snapshot(m, "bob"), _snapshot(m, "alice")
    llm.push(facts("User has a dog named Rex"), {"memory": operations})

    result = m.add("My dog is Rex", user_id="alice")

    assert _snapshot(m, "bob") == bob
    changed = {e.id for e in result.results if e.event != "NONE"}
    before = {(i, text) for i, text, _ in alice}
    after = {(i, text) for i, text, _ in _snapshot(m, "alice")}
    assert {i for i, _ in before ^ after} == changed
    assert len(result.results) + len(result.errors) >= _must_answer(operations)
    assert all(e.stage in ("decision", "validation") for e in result.errors)


@HOSTILE
@given(answer=st.one_of(st.text(ANY_CHAR, max_size=60), JSON.map(json.dumps),
                        st.builds(lambda v: json.dumps({"facts": v}), JSON)))
def test_hostile_extraction_answers_store_only_parsed_facts_and_report_the_rest(
    make_memory: MakeMemory, answer: str
) -> None:
    m = make_memory(ScriptedLLM([answer, answer]))
    result = m.add("I like tea", user_id="u")
    try:
        expected = parse_facts(answer)
    except ParseError:
        assert result.results == [] and [e.stage for e in result.errors] == ["extraction"]
        return
    assert result.errors == []
    assert sorted(e.memory for e in result.results) == sorted(expected)
    stored = [i.memory for i in m.get_all(user_id="u").results]
    assert sorted(stored) == sorted(expected)
    assert all(s.encode("utf-8") for s in stored)


METADATA = st.dictionaries(st.sampled_from(["topic", "n", "a"]) | TEXT, JSON, max_size=3)
MESSAGES = st.one_of(TEXT, JSON, st.lists(st.one_of(TEXT, st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]) | TEXT,
     "content": st.one_of(TEXT, JSON)}, optional={"name": JSON})), max_size=3))


def _stored_as_refused_or_kept(m: Any, add: Any) -> None:
    """``add()`` is refused at the boundary (nothing stored, no component reached) or
    stores exactly what it reports, as valid Unicode with no NUL."""
    try:
        result = add()
    except MemkitError as exc:
        assert not isinstance(exc, VectorStoreError | EmbeddingError | LLMError), exc
        assert m.get_all(user_id="u").results == []
        return
    stored = m.get_all(user_id="u").results
    assert sorted(i.id for i in stored) == sorted({e.id for e in result.results})
    for item in stored:
        assert all(bad_code_point(s) is None for s in [item.memory, *_strings(item.metadata)])


@HOSTILE
@given(messages=MESSAGES)
def test_hostile_messages_are_refused_or_stored_intact(make_memory: MakeMemory,
                                                      messages: Any) -> None:
    m = make_memory()
    _stored_as_refused_or_kept(m, lambda: m.add(messages, user_id="u", infer=False))


@HOSTILE
@given(metadata=METADATA)
def test_hostile_metadata_is_refused_or_stored_intact(make_memory: MakeMemory,
                                                      metadata: Any) -> None:
    m = make_memory()
    _stored_as_refused_or_kept(
        m, lambda: m.add("I like tea", user_id="u", infer=False, metadata=metadata))


@HOSTILE
@given(query=st.one_of(TEXT, st.text(ANY_CHAR, max_size=300)),
       mode=st.sampled_from(["hybrid", "vector", "keyword"]))
def test_hostile_queries_search_or_name_the_bad_code_point(
    make_memory: MakeMemory, query: str, mode: str
) -> None:
    m = make_memory()
    m.add("I like green tea", user_id="u", infer=False)
    try:
        m.search(query, user_id="u", mode=mode)
    except MemkitError as exc:
        assert "lone surrogate" in str(exc)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# -- filters: SQLite against the reference evaluator ---------------------------------

RECORDS: list[tuple[str, dict[str, Any]]] = [
    ("green tea", {"a": 1, "tag": "green"}),
    ("black tea", {"a": 2.5, "tag": "GREEN Tea", "n": True}),
    ("coffee", {"a": "1", "tag": ["x", "Y"], "n": False}),
    ("water", {"a": None, "tag": ""}),
    ("juice", {"tag": "é", "n": 0}),
    ("milk", {"a": -3, "tag": ["green", 1, True]}),
]
FIELD = st.sampled_from(["a", "tag", "n", "memory", "missing", "created_at", "user_id"])
VALUE = st.one_of(st.integers(-3, 3), st.sampled_from([2.5, 0.0, -0.5, 1e300]), st.booleans(),
                  st.sampled_from(["green", "GREEN", "é", "É", "", "tea", "1", "x", "y",
                                   "2020-01-01T00:00:00", "\x00", "\ud800"]),
                  st.text(ANY_CHAR, max_size=3))
CONDITION = st.builds(lambda f, o, v: {f: {o: v}}, FIELD, st.sampled_from(OPERATORS),
                      st.one_of(VALUE, st.lists(VALUE, max_size=3)))
FILTER = st.recursive(CONDITION, lambda inner: st.one_of(
    st.builds(lambda xs: {"AND": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda xs: {"OR": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda x: {"NOT": x}, inner)), max_leaves=6)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, AsyncMemory]]:
    path = Path(tmp_path_factory.mktemp("twins")) / "memkit.db"
    sqlite = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                    vector_store=SQLiteStore(os.fspath(path)))
    reference = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                            vector_store=InMemoryStore())
    for text, metadata in RECORDS:
        sqlite.add(text, user_id="u", infer=False, metadata=metadata)
        asyncio.run(reference.add(text, user_id="u", infer=False, metadata=metadata))
    yield sqlite, reference
    sqlite.close()
    reference.close()


def _answer(call: Any) -> tuple[str, Any]:
    try:
        return "ok", sorted(i.memory for i in call().results)
    except FilterError:
        return "FilterError", None


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(filters=FILTER)
def test_sqlite_and_the_reference_evaluator_agree_on_hostile_filters(
    twins: tuple[Memory, AsyncMemory], filters: dict[str, Any]
) -> None:
    sqlite, reference = twins
    mine = _answer(lambda: sqlite.get_all(user_id="u", filters=filters))
    theirs = _answer(lambda: asyncio.run(reference.get_all(user_id="u", filters=filters)))
    assert mine == theirs


# -- REST ------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=TEXT, filters=st.one_of(st.none(), FILTER, JSON), metadata=st.one_of(st.none(), JSON),
       text=TEXT)
def test_hostile_rest_requests_never_answer_5xx(
    client: Client, query: str, filters: Any, metadata: Any, text: str
) -> None:
    alice = client("alice-key")
    body = json.dumps({"messages": text or "tea", "infer": False, "metadata": metadata})
    answers = [
        alice.post("/v1/memories/", content=body, headers={"Content-Type": "application/json"}),
        alice.post("/v1/memories/search/", content=json.dumps({"query": query, "filters": filters}),
                   headers={"Content-Type": "application/json"}),
        alice.get("/v1/memories/", params={"filters": json.dumps(filters)}),
    ]
    for answer in answers:
        assert answer.status_code < 500, answer.text
        if answer.status_code >= 400:
            assert answer.json()["error"]["message"]
