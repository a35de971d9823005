"""Hostile input at the public boundary: clear MemkitErrors (FilterError for filters),
nothing stored, and the same answer from every store."""

from __future__ import annotations

from typing import Any

import pytest

from memkit import FilterError, MemkitError, NotFoundError, ScopeError
from memkit._filters import MAX_CONDITIONS, MAX_DEPTH, parse_filter
from memkit._pipeline.inputs import (
    MAX_CONVERSATION_CHARS,
    MAX_METADATA_CHARS,
    MAX_TEXT_CHARS,
    bounded_words,
)
from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts

SURROGATE, NUL = "\ud800", "\x00"


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"NOT": value}
    return value


@pytest.mark.parametrize("bad", [SURROGATE, NUL, "\udfff tail"])
@pytest.mark.parametrize("where", ["message", "message-part", "name", "metadata-value",
                                   "metadata-nested", "user_id", "prompt"])
def test_nul_and_lone_surrogates_are_refused_on_add(
    make_memory: MakeMemory, bad: str, where: str
) -> None:
    m = make_memory(ScriptedLLM())
    kwargs: dict[str, Any] = {"user_id": "u", "infer": False}
    messages: Any = f"I like {bad} tea"
    if where == "message-part":
        messages = [{"role": "user", "content": [{"type": "text", "text": f"a{bad}"}]}]
    elif where != "message":
        messages = "I like tea"
    if where == "name":
        messages = [{"role": "user", "content": "I like tea", "name": f"bo{bad}b"}]
    elif where == "metadata-value":
        kwargs["metadata"] = {"topic": f"tea{bad}"}
    elif where == "metadata-nested":
        kwargs["metadata"] = {"topic": {"inner": [f"tea{bad}"]}}
    elif where == "user_id":
        kwargs["user_id"] = f"u{bad}"
    elif where == "prompt":
        kwargs |= {"prompt": f"extract {bad}", "infer": True}
    error = ScopeError if where == "user_id" else MemkitError
    with pytest.raises(error, match=r"NUL|lone surrogate"):
        m.add(messages, **kwargs)
    assert m.get_all(user_id="u").results == []


@pytest.mark.parametrize("bad", [SURROGATE, NUL])
def test_nul_and_lone_surrogates_are_refused_on_update(make_memory: MakeMemory, bad: str) -> None:
    m = make_memory()
    item = m.add("I like tea", user_id="u", infer=False).results[0]
    with pytest.raises(MemkitError, match=r"NUL|lone surrogate"):
        m.update(item.id, f"I like {bad}")
    with pytest.raises(MemkitError, match=r"NUL|lone surrogate"):
        m.update(item.id, "I like coffee", metadata={"k": bad})
    assert m.get(item.id).memory == "I like tea"


@pytest.mark.parametrize("memory_id", [SURROGATE, NUL, "x" * 10_000, "", "a\x00b"])
def test_hostile_ids_are_not_found(make_memory: MakeMemory, memory_id: str) -> None:
    m = make_memory()
    assert m.get(memory_id) is None
    assert m.history(memory_id) == []
    with pytest.raises(NotFoundError):
        m.delete(memory_id)
    with pytest.raises(NotFoundError):
        m.update(memory_id, "text")


@pytest.mark.parametrize("case", ["message", "conversation", "metadata-size", "metadata-depth",
                                  "metadata-int", "scope-length", "query"])
def test_oversized_input_is_refused_with_the_limit(make_memory: MakeMemory, case: str) -> None:
    m = make_memory(ScriptedLLM())
    kwargs: dict[str, Any] = {"user_id": "u", "infer": False}
    messages: Any = "I like tea"
    if case == "message":
        messages = "x" * (MAX_TEXT_CHARS + 1)
    elif case == "conversation":
        messages = ["y" * MAX_TEXT_CHARS] * (MAX_CONVERSATION_CHARS // MAX_TEXT_CHARS + 1)
    elif case == "metadata-size":
        kwargs["metadata"] = {"blob": "z" * MAX_METADATA_CHARS}
    elif case == "metadata-depth":
        deep: Any = "leaf"
        for _ in range(5000):
            deep = {"k": deep}
        kwargs["metadata"] = {"deep": deep}
    elif case == "metadata-int":
        kwargs["metadata"] = {"n": 2**64}
    elif case == "scope-length":
        kwargs["user_id"] = "u" * 1000
    if case == "query":
        with pytest.raises(MemkitError, match="limit"):
            m.search("tea " * 60_000, user_id="u")
        return
    with pytest.raises(MemkitError, match=r"limit|nested|64 bits|characters"):
        m.add(messages, **kwargs)
    assert m.get_all(user_id="u").results == []


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000])
def test_filters_nested_thousands_deep_are_filter_errors(make_memory: MakeMemory, depth: int) -> None:
    m = make_memory()
    m.add("I like tea", user_id="u", infer=False, metadata={"a": 1})
    deep = _nested(depth, {"a": 1})
    with pytest.raises(FilterError, match="nest at most"):
        m.get_all(user_id="u", filters=deep)
    with pytest.raises(FilterError, match="nest at most"):
        m.search("tea", user_id="u", filters=deep)
    assert parse_filter(_nested(MAX_DEPTH - 1, {"a": 1})) is not None


@pytest.mark.parametrize("filters", [
    {"OR": [{"a": i} for i in range(MAX_CONDITIONS + 1)]},
    {"a": {"in": list(range(10_001))}},
    {"a": 2**64},
    {"a": "x" * 10_001},
    {"a": f"t{NUL}a"},
    {"a": {"contains": SURROGATE}},
    {f"a{SURROGATE}": 1},
    {"a": {"in": ["ok", NUL]}},
], ids=["conditions", "values", "huge-int", "long-string", "nul", "surrogate", "field-surrogate",
        "nul-in-list"])
def test_oversized_or_hostile_filters_are_filter_errors(
    make_memory: MakeMemory, filters: dict[str, Any]
) -> None:
    m = make_memory()
    with pytest.raises(FilterError):
        m.get_all(user_id="u", filters=filters)


@pytest.mark.every_store
def test_a_filter_at_every_bound_runs_on_every_store(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("I like tea", user_id="u", infer=False, metadata={"a": 3, "tag": "green"})
    nots = 2 * ((MAX_DEPTH - 2) // 2)  # an even number: the innermost condition decides
    widest = {"AND": [_nested(nots, {"tag": {"icontains": "GRE"}}) if i == 0
                      else {"a": {"nin": list(range(100 + i * 30, 130 + i * 30))}}
                      for i in range(MAX_CONDITIONS - 1)]}
    assert [i.memory for i in m.get_all(user_id="u", filters=widest).results] == ["I like tea"]
    widest["AND"][1] = {"a": {"in": [3]}}
    assert [i.memory for i in m.get_all(user_id="u", filters=widest).results] == ["I like tea"]
    widest["AND"][1] = {"a": {"nin": [3]}}
    assert m.get_all(user_id="u", filters=widest).results == []


@pytest.mark.every_store
def test_nul_in_metadata_is_refused_the_same_way_on_every_store(make_memory: MakeMemory) -> None:
    m = make_memory()
    with pytest.raises(MemkitError, match="NUL"):
        m.add("tea", user_id="u", infer=False, metadata={"k": f"a{NUL}b"})
    m.add("tea", user_id="u", infer=False, metadata={"k": "a"})
    with pytest.raises(FilterError, match="NUL"):
        m.get_all(user_id="u", filters={"k": {"contains": f"a{NUL}"}})
    assert len(m.get_all(user_id="u", filters={"k": {"contains": "a"}}).results) == 1


@pytest.mark.every_store
def test_keyword_queries_with_nul_or_repeated_words_work_on_every_store(make_memory: MakeMemory) -> None:
    m = make_memory()
    if not m.vector_store.supports_keyword:
        pytest.skip(f"{m.vector_store.provider} has no keyword search")
    m.add(["I like green tea", "I like coffee"], user_id="u", infer=False)
    for query in ("gr\x00een tea", "tea\x00", "tea " * 25_000, "\x00\x00"):
        found = [i.memory for i in m.search(query, user_id="u", mode="keyword").results]
        assert found == ([] if query == "\x00\x00" else ["I like green tea"])


def test_keyword_queries_are_deduplicated_and_capped() -> None:
    assert bounded_words("tea Tea TEA tea\x00coffee , !!") == "tea coffee"
    many = " ".join(f"w{i}" for i in range(1000))
    assert bounded_words(many).split() == [f"w{i}" for i in range(32)]
    assert bounded_words("x" * 500) == "x" * 64


def test_search_refuses_a_lone_surrogate_in_the_query(make_memory: MakeMemory) -> None:
    m = make_memory()
    with pytest.raises(MemkitError, match="lone surrogate"):
        m.search(f"tea {SURROGATE}", user_id="u")


def test_the_facts_of_a_surrogate_free_conversation_are_stored(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([facts("User likes tea")]))
    assert [e.event for e in m.add("I like tea \U0001f375", user_id="u").results] == ["ADD"]
