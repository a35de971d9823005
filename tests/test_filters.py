"""The filter language: parsing the dict form, and what the reference evaluator means."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memkit import FilterError
from memkit._filters import (
    MISSING,
    OPERATORS,
    And,
    Condition,
    Not,
    Or,
    all_of,
    condition,
    fields_of,
    matches,
    parse_filter,
)
from memkit._time import to_iso

# -- parsing ------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPERATORS)
def test_every_operator_parses_in_each_form(op: str) -> None:
    value: Any = ["a", 1] if op in ("in", "nin") else "a"
    expected = Condition(
        field="k", operator=op, value=tuple(value) if isinstance(value, list) else value  # type: ignore[arg-type]
    )
    assert parse_filter({"field": "k", "operator": op, "value": value}) == expected
    assert parse_filter({"k": {op: value}}) == expected
    assert parse_filter({"k": {"$" + op: value}}) == expected


def test_shorthand_forms() -> None:
    assert parse_filter({"k": 2}) == Condition(field="k", operator="eq", value=2)
    assert parse_filter({"a": 1, "b": "x"}) == And(items=(
        Condition(field="a", operator="eq", value=1), Condition(field="b", operator="eq", value="x"),
    ))
    assert parse_filter({"p": {"gte": 2, "lt": 5}}) == And(items=(
        Condition(field="p", operator="gte", value=2), Condition(field="p", operator="lt", value=5),
    ))
    assert parse_filter(None) is None and parse_filter({}) is None
    tree = Condition(field="a", operator="eq", value=1)
    assert parse_filter(tree) is tree


@pytest.mark.parametrize("and_key,or_key,not_key", [
    ("AND", "OR", "NOT"), ("$and", "$or", "$not"), ("and", "or", "not"),
])
def test_combinators(and_key: str, or_key: str, not_key: str) -> None:
    a, b = Condition(field="a", operator="eq", value=1), Condition(field="b", operator="eq", value=2)
    assert parse_filter({and_key: [{"a": 1}, {"b": 2}]}) == And(items=(a, b))
    assert parse_filter({or_key: [{"a": 1}, {"b": 2}]}) == Or(items=(a, b))
    assert parse_filter({not_key: {"a": 1}}) == Not(item=a)
    nested = parse_filter({and_key: [{or_key: [{"a": 1}, {not_key: {"b": 2}}]}]})
    assert nested == And(items=(Or(items=(a, Not(item=b))),))


def test_time_fields_are_normalised_to_one_utc_format() -> None:
    local = "2024-05-01T14:00:00+02:00"
    assert parse_filter({"created_at": {"gte": local}}) == Condition(
        field="created_at", operator="gte", value="2024-05-01T12:00:00.000000+00:00"
    )
    assert parse_filter({"created_at": {"contains": "2024"}}) == Condition(
        field="created_at", operator="contains", value="2024"
    )


def test_time_fields_take_lists_in_in_and_nin() -> None:
    when = datetime(2024, 5, 1, 12, tzinfo=UTC)
    parsed = parse_filter({"updated_at": {"in": [when, "2024-05-01T14:00:00+02:00"]}})
    assert parsed == Condition(field="updated_at", operator="in", value=(to_iso(when),) * 2)


@pytest.mark.parametrize("raw,message", [
    ({"k": {"between": 1}}, "unknown operator 'between' on field 'k'; expected one of eq, ne"),
    ({"field": "k", "operator": "like", "value": 1}, "unknown operator 'like'"),
    ({"a.b": 1}, "invalid field name 'a.b'"),
    ({'a"b': 1}, "invalid field name 'a\"b'"),
    ({"a\\b": 1}, "invalid field name"),
    ({"$where": 1}, "invalid field name '$where'"),
    ({"a\nb": 1}, "invalid field name"),
    ({"x" * 129: 1}, "at most 128 characters"),
    ({"": 1}, "field names are non-empty strings"),
    ({"k": float("nan")}, "k eq: nan is not a finite number"),
    ({"k": {"lt": float("inf")}}, "k lt: inf is not a finite number"),
    ({"k": {"gt": True}}, "k gt: order comparisons take a number or a string, not a boolean"),
    ({"k": [1, 2]}, 'filter.k: a bare list is ambiguous; write {"in": [...]}'),
    ({"AND": []}, "filter.AND: expected at least one filter"),
    ({"OR": {"a": 1}}, "filter.OR: expected a list of filters"),
    ({"AND": "a"}, "filter.AND: expected a list of filters"),
    ({"k": {"in": "abc"}}, "k in: expected a list of values, got 'abc'"),
    ({"k": {"nin": 3}}, "k nin: expected a list of values"),
    ({"k": {"icontains": 3}}, "k icontains: expected a string, got 3"),
    ({"k": {"eq": None}}, "k eq: expected a string, number or boolean, got None"),
    ({"k": {"eq": {"x": 1}}}, "expected a string, number or boolean"),
    ({"k": {"in": [1, [2]]}}, "k in: expected a string, number or boolean, got [2]"),
    ({"k": {}}, "filter.k: expected at least one operator"),
    ({"NOT": {}}, "filter.NOT: expected a non-empty dict"),
    ({"created_at": {"gt": "yesterday"}}, "created_at gt: 'yesterday' is not an ISO 8601 timestamp"),
    ({"created_at": 5}, "created_at eq: expected a datetime or an ISO 8601 string, got 5"),
])
def test_invalid_filters_raise_precise_errors(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(FilterError) as error:
        parse_filter(raw)
    assert message in str(error.value)


@pytest.mark.parametrize("bad", [[{"a": 1}], "a=1", 3])
def test_a_filter_must_be_a_dict(bad: object) -> None:
    with pytest.raises(FilterError, match="a filter is a dict or a filter model"):
        parse_filter(bad)


def test_helpers() -> None:
    a = condition("a", "$eq", 1)
    assert all_of(None, None) is None and all_of(a) is a and all_of(a, None, a) == And(items=(a, a))
    expr = parse_filter({"OR": [{"a": 1}, {"NOT": {"b": {"gt": 1}}}], "c": 2})
    assert expr is not None and fields_of(expr) == {"a", "b", "c"}


# -- evaluation ----------------------------------------------------------------------


def check(raw: dict[str, Any], record: dict[str, Any]) -> bool:
    return matches(parse_filter(raw), lambda name: record.get(name, MISSING))


def test_numbers_compare_numerically_and_never_equal_bools_or_strings() -> None:
    assert check({"n": 1}, {"n": 1.0}) and check({"n": 1.0}, {"n": 1})
    assert not check({"n": 1}, {"n": True}) and not check({"n": True}, {"n": 1})
    assert not check({"n": 1}, {"n": "1"}) and not check({"n": "1"}, {"n": 1})
    assert check({"n": False}, {"n": False}) and not check({"n": False}, {"n": 0})
    assert check({"n": {"gt": 1}}, {"n": 1.5}) and not check({"n": {"gt": 1}}, {"n": "2"})


def test_missing_and_none_fields_fail_positive_operators_and_pass_negations() -> None:
    for record in ({}, {"k": None}):
        for op, value in [("eq", 1), ("in", [1]), ("gt", 0), ("lte", "z"), ("contains", "a"),
                          ("icontains", "a")]:
            assert not check({"k": {op: value}}, record)
        assert check({"k": {"ne": 1}}, record) and check({"k": {"nin": [1]}}, record)


def test_ne_and_nin_are_exactly_not_eq_and_not_in() -> None:
    values: list[Any] = [1, 1.0, "1", True, False, None, [1], "a", 0]
    for value in values:
        record = {"k": value}
        for target in (1, "1", True, "a"):
            assert check({"k": {"ne": target}}, record) == (not check({"k": target}, record))
            assert check({"k": {"nin": [target, 0]}}, record) == (
                not check({"k": {"in": [target, 0]}}, record)
            )


def test_lists_never_equal_scalars_but_contain_them() -> None:
    record = {"tags": ["a", "B", 1, True]}
    assert not check({"tags": "a"}, record) and not check({"tags": {"in": ["a"]}}, record)
    assert not check({"tags": {"gt": "0"}}, record)
    assert check({"tags": {"contains": "a"}}, record) and not check({"tags": {"contains": "b"}}, record)
    assert check({"tags": {"contains": 1}}, record) and check({"tags": {"contains": True}}, record)
    assert not check({"tags": {"contains": "1"}}, {"tags": [1]})
    assert check({"tags": {"icontains": "b"}}, record)
    assert not check({"tags": {"icontains": "1"}}, {"tags": [1]})
    assert not check({"tags": {"icontains": "a"}}, {"tags": ["abc"]})  # whole elements only


def test_string_order_is_by_code_point() -> None:
    assert check({"s": {"lt": "a"}}, {"s": "Z"})  # "Z" (90) < "a" (97)
    assert check({"s": {"gt": "9"}}, {"s": "a"}) and check({"s": {"lt": "9"}}, {"s": "10"})
    assert check({"s": {"gt": "z"}}, {"s": "é"})
    assert not check({"s": {"gt": 1}}, {"s": "2"}) and not check({"s": {"lt": "2"}}, {"s": 1})


def test_contains_is_a_case_sensitive_substring_and_icontains_lowers_both_sides() -> None:
    assert check({"m": {"contains": "tea"}}, {"m": "likes tea"})
    assert not check({"m": {"contains": "Tea"}}, {"m": "likes tea"})
    assert check({"m": {"contains": ""}}, {"m": "x"})
    assert not check({"m": {"contains": 1}}, {"m": "1"})
    assert check({"m": {"icontains": "TEA"}}, {"m": "Likes Tea"})
    assert check({"m": {"icontains": "STRASSE"}}, {"m": "strasse"})
    assert not check({"m": {"icontains": "strasse"}}, {"m": "straße"})  # lower(), not casefold()
    assert check({"m": {"icontains": "İ"}}, {"m": "i̇stanbul"})
    assert not check({"m": {"icontains": "a"}}, {"m": 5})


def test_not_is_the_complement_and_and_or_compose() -> None:
    record = {"a": 1, "b": "x"}
    assert check({"AND": [{"a": 1}, {"b": "x"}]}, record)
    assert not check({"AND": [{"a": 1}, {"b": "y"}]}, record)
    assert check({"OR": [{"a": 2}, {"b": "x"}]}, record)
    assert not check({"NOT": {"OR": [{"a": 2}, {"b": "x"}]}}, record)
    assert check({"NOT": {"missing": {"gt": 1}}}, record)
    assert matches(None, lambda name: MISSING)
