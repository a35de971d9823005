"""Filters through the public API, on every store, through both shells."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memkit import FilterError
from tests.pipeline.conftest import MakeMemory, Shell


def _seed(m: Shell) -> None:
    rows = [
        ("standup notes", {"priority": 3, "tags": ["work", "daily"], "team": "Core"}, 1),
        ("grocery list", {"priority": 1, "tags": ["home"], "done": True}, 2),
        ("tax return", {"priority": 2.5, "team": "core"}, 3),
        ("birthday gift ideas", {}, 4),
    ]
    for text, metadata, day in rows:
        m.add(text, user_id="u", infer=False, metadata=metadata,
              timestamp=datetime(2024, 1, day, tzinfo=UTC))
    m.add("someone else's note", user_id="other", infer=False, metadata={"priority": 3})


CASES = [
    ({"priority": 3}, {"standup notes"}),
    ({"priority": {"ne": 3}}, {"grocery list", "tax return", "birthday gift ideas"}),
    ({"priority": {"gt": 1, "lte": 3}}, {"standup notes", "tax return"}),
    ({"priority": {"in": [1, 2.5]}}, {"grocery list", "tax return"}),
    ({"priority": {"nin": [1, 2.5]}}, {"standup notes", "birthday gift ideas"}),
    ({"tags": {"contains": "daily"}}, {"standup notes"}),
    ({"team": {"icontains": "CORE"}}, {"standup notes", "tax return"}),
    ({"team": "core"}, {"tax return"}),
    ({"memory": {"contains": "list"}}, {"grocery list"}),
    ({"done": True}, {"grocery list"}),
    ({"done": 1}, set()),
    ({"created_at": {"gte": "2024-01-03"}}, {"tax return", "birthday gift ideas"}),
    ({"OR": [{"priority": 1}, {"NOT": {"team": {"icontains": "core"}}}]},
     {"grocery list", "birthday gift ideas"}),
    ({"AND": [{"priority": {"gte": 1}}, {"NOT": {"tags": {"contains": "home"}}}]},
     {"standup notes", "tax return"}),
    ({"field": "priority", "operator": "lt", "value": 3}, {"grocery list", "tax return"}),
    ({"missing_key": {"ne": "x"}}, {"standup notes", "grocery list", "tax return",
                                    "birthday gift ideas"}),
]


@pytest.mark.parametrize(("filters", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_filters_select_exactly_the_matching_memories(
    make_memory: MakeMemory, filters: dict[str, object], expected: set[str]
) -> None:
    m = make_memory()
    _seed(m)
    try:
        got = {i.memory for i in m.get_all(user_id="u", filters=filters).results}
    except FilterError as exc:  # only a form the store declares unsupported
        store = m.memory.vector_store
        assert store.unsupported_filters, f"{type(store).__name__} rejected {filters}: {exc}"
        return
    assert got == expected
    found = {i.memory for i in m.search("notes list return ideas", user_id="u", filters=filters,
                                         mode="vector").results}
    assert found == expected


@pytest.mark.parametrize("bad", [
    {"priority": {"between": [1, 2]}},
    {"priority": [1, 2]},
    {"AND": []},
    {"AND": {"priority": 1}},
    {"pri\"ority": 1},
    {"a.b": 1},
    {"$where": 1},
    {"priority": {"gt": True}},
    {"priority": {"gt": float("nan")}},
    {"priority": {"in": "abc"}},
    {"created_at": {"gt": "yesterday"}},
    {"tags": {"icontains": 3}},
    "priority = 1",
])
def test_invalid_filters_raise_filter_error_and_change_nothing(make_memory: MakeMemory, bad: object) -> None:
    m = make_memory()
    _seed(m)
    for call in (lambda: m.get_all(user_id="u", filters=bad),
                 lambda: m.search("x", user_id="u", filters=bad),
                 lambda: m.delete_all(user_id="u", filters=bad),
                 lambda: m.add("new", user_id="u", infer=False, filters=bad)):
        with pytest.raises(FilterError):
            call()
    assert len(m.get_all(user_id="u").results) == 4


@pytest.mark.every_store
def test_delete_all_with_filters_deletes_only_matches(make_memory: MakeMemory) -> None:
    m = make_memory()
    _seed(m)
    assert m.delete_all(user_id="u", filters={"priority": {"gte": 2}}).count == 2
    assert {i.memory for i in m.get_all(user_id="u").results} == {"grocery list", "birthday gift ideas"}


@pytest.mark.every_store
def test_filters_cannot_widen_the_scope(make_memory: MakeMemory) -> None:
    m = make_memory()
    _seed(m)
    got = m.get_all(user_id="u", filters={"OR": [{"user_id": "other"}, {"priority": 3}]}).results
    assert {i.memory for i in got} == {"standup notes"}
