"""Every store answers every filter exactly as the reference evaluator does.

A seeded generator writes filters in the dict form users write, over a corpus
with integers, floats, strings, booleans, lists, unicode, missing fields and
values whose type changes from record to record. Each store must return the
evaluator's set of ids through ``list``, ``search`` and ``count``, or raise
FilterError for a form it declares in ``unsupported_filters``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from memkit import FilterError
from memkit._filters import OPERATORS, And, Condition, Filter, Not, Or, matches, parse_filter
from memkit._time import to_iso
from memkit.stores.base import Record, VectorStore
from tests.stores.conftest import FACTORIES
from tests.stores.test_contract import DIM, MODEL, vec

SEED = 20240501
EXPRESSIONS = 400

HOSTILE_FIELD = "a'b; DROP TABLE memkit_records; --"
TIMES = [to_iso(f"2024-0{m}-0{d}T0{h}:00:00+00:00") for m, d, h in
         [(1, 1, 0), (1, 1, 9), (2, 3, 4), (3, 9, 1), (5, 5, 5), (9, 9, 9)]]
POOLS: dict[str, list[Any]] = {
    "n": [-5, 0, 1, 2, 3, 10, 42, 1_000_000, 2**40],
    "x": [0.5, -1.25, 1.0, 2.0, 3.14159, 1e10, -0.0, 1e-9],
    "s": ["", "a", "A", "apple", "Apple", "banana", "10", "9", "Café", "café", "straße",
          "STRASSE", "İstanbul", "ǅungla", "日本語", "emoji 🎉", "it's", "50% off", "under_score",
          "x'; DROP TABLE t; --", 'say "hi"', "back\\slash"],
    "b": [True, False],
    "tags": [["a", "B"], [], ["apple", 1, True], [2.5, "Café"], [["nested"]], ["x'; --"],
             [1, 2, 3], [False], ["CAFÉ", "straße"]],
    "mixed": [1, "1", True, 1.0, [1], None, {"k": 1}, "one", 0, False, "True", 2.5],
    "ключ": ["значение", "Значение", 7, "ß"],
    "my key": ["spaced", 1],
    HOSTILE_FIELD: ["' OR '1'='1", 1, True],
    "[0]": ["bracket", 0],
    "price$": [9.99, 10, "10"],
}
TEXTS = ["User likes tea", "user LIKES Tea!", "Café au lait", "naïve façade", "straße 5",
         "İstanbul trip", "DROP TABLE memkit; -- said 'bob'", "50% of \"quotes\"", "日本語のテキスト",
         "", "a_b%c", "NEAR(x y) OR *"]
SCOPES = {"user_id": ["alice", "bob", "Alice", None], "agent_id": ["x", "y", None],
          "run_id": ["r1", "r2", None]}
PERIODS = ("valid_from", "valid_to", "expires_at")
LIFECYCLE: dict[str, list[Any]] = {
    "memory_type": ["fact", "preference", "task", "Fact", "my own kind", "x'; --", None],
    "importance": [0.0, 0.25, 0.5, 1.0, 1 / 3, None],
    "confidence": [1.0, 0.05, 0.5, 0.999, None],
    "access_count": [0, 1, 3, 1000, None],
    "last_accessed_at": [*TIMES, None],
}
TIME_FIELDS = ("created_at", "updated_at", *PERIODS, "last_accessed_at")
FIELDS = [*POOLS, "memory", "hash", "user_id", "agent_id", "run_id", *TIME_FIELDS, "supersedes",
          *LIFECYCLE, "absent"]
EXTRA_VALUES: list[Any] = [0, 1, -1, 2.5, "a", "", "APPLE", True, False, "zzz", "Café", "1", 10]


def make_corpus() -> list[Record]:
    rng = random.Random(SEED)
    periods = random.Random(SEED + 1)  # its own stream: the other fields stay as they were
    lifecycle = random.Random(SEED + 2)
    records = []
    for i in range(70):
        metadata = {k: rng.choice(pool) for k, pool in POOLS.items() if rng.random() < 0.6}
        created = rng.choice(TIMES)
        records.append(Record(
            id=f"r{i:03}", memory=rng.choice(TEXTS), hash=f"hash{i % 9}",
            created_at=created, updated_at=max(created, rng.choice(TIMES)),
            metadata=metadata, vector=vec(f"r{i:03}"),
            **{k: rng.choice(v) for k, v in SCOPES.items()},
            **{k: periods.choice([*TIMES, None, None]) for k in PERIODS},
            supersedes=periods.choice([None, None, f"r{periods.randrange(70):03}"]),
            **{k: lifecycle.choice(v) for k, v in LIFECYCLE.items()},
        ))
    return records


CORPUS = make_corpus()


def _values(field: str) -> list[Any]:
    if field in POOLS:
        found: list[Any] = []
        for v in POOLS[field]:
            found.extend(v if isinstance(v, list) else [v])
        return [v for v in found if isinstance(v, str | int | float)] + EXTRA_VALUES
    if field in TIME_FIELDS:
        return TIMES
    if field in LIFECYCLE:
        return [v for v in LIFECYCLE[field] if v is not None] + EXTRA_VALUES
    if field == "supersedes":
        return ["r000", "r001", "r010", "r042", "r0", "R001"]
    if field == "memory":
        return [*TEXTS, "tea", "TEA", "é", "ß", "日本", "%", "_", "'"]
    if field == "hash":
        return [f"hash{i}" for i in range(10)]
    if field in SCOPES:
        return [v for v in SCOPES[field] if v is not None] + ["ALICE", "li"]
    return EXTRA_VALUES


def _condition(rng: random.Random) -> dict[str, Any]:
    field = rng.choice(FIELDS)
    op = rng.choice(OPERATORS)
    pool = _values(field)
    if field in TIME_FIELDS and op in ("contains", "icontains"):
        pool = ["2024-0", "T0", "+00:00", "2024-09-09", "t0"]
    value: Any
    if op in ("in", "nin"):
        value = rng.sample(pool, rng.randint(0, 4))
    elif op in ("gt", "gte", "lt", "lte"):
        value = rng.choice([v for v in pool if not isinstance(v, bool)])
    elif op == "icontains":
        text = rng.choice([v for v in pool if isinstance(v, str)] or ["a"])
        value = rng.choice([str.upper, str.lower, str.swapcase, str.title])(text)
    else:
        value = rng.choice(pool)
    style = rng.random()
    if op == "eq" and style < 0.3 and not isinstance(value, list):
        return {field: value}
    if style < 0.6:
        return {field: {rng.choice([op, "$" + op]): value}}
    return {"field": field, "operator": op, "value": value}


def _expression(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth >= 3 or roll < 0.4:
        return _condition(rng)
    if roll < 0.55:
        return {rng.choice(["NOT", "$not"]): _expression(rng, depth + 1)}
    children = [_expression(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    key = rng.choice(["AND", "OR", "$and", "$or", "and", "or"])
    return {key: children}


def generate(count: int = EXPRESSIONS, seed: int = SEED) -> list[tuple[dict[str, Any], Filter]]:
    rng = random.Random(seed)
    out: list[tuple[dict[str, Any], Filter]] = []
    while len(out) < count:
        raw = _expression(rng)
        try:
            parsed = parse_filter(raw)
        except FilterError:
            continue
        assert parsed is not None
        out.append((raw, parsed))
    return out


def features(expr: Filter) -> set[str]:
    """The operators and combinators an expression uses."""
    if isinstance(expr, Condition):
        return {expr.operator}
    if isinstance(expr, Not):
        return {"NOT"} | features(expr.item)
    kind = "AND" if isinstance(expr, And) else "OR"
    assert isinstance(expr, And | Or)
    return {kind}.union(*(features(i) for i in expr.items))


def expected(expr: Filter, corpus: list[Record] = CORPUS) -> set[str]:
    return {r.id for r in corpus if matches(expr, r.lookup)}


@pytest.fixture(scope="module", params=sorted(FACTORIES))
def loaded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VectorStore]:
    store = FACTORIES[request.param](tmp_path_factory, "congruence")
    store.open(DIM, MODEL)
    store.insert(CORPUS)
    yield store
    store.close()


def _list_ids(store: VectorStore, expr: Filter) -> set[str]:
    found: list[str] = []
    cursor: str | None = None
    while True:
        page, cursor = store.list(expr, limit=25, cursor=cursor)
        found.extend(r.id for r in page)
        if cursor is None:
            break
    assert len(found) == len(set(found)), "list returned duplicates"
    return set(found)


def _answers(store: VectorStore, expr: Filter) -> dict[str, set[str] | int]:
    return {
        "list": _list_ids(store, expr),
        "search": {h.record.id for h in store.search(vec("q"), limit=len(CORPUS) + 5, filter=expr)},
        "count": store.count(expr),
    }


def test_generator_covers_every_operator_and_combinator() -> None:
    exprs = generate()
    used = set().union(*(features(e) for _, e in exprs))
    assert used >= set(OPERATORS) | {"AND", "OR", "NOT"}
    sizes = [len(expected(e)) for _, e in exprs]
    assert sum(0 < n < len(CORPUS) for n in sizes) > len(sizes) // 3, "too few selective filters"


def test_every_store_returns_the_reference_ids(loaded: VectorStore) -> None:
    mismatches: list[str] = []
    rejected = 0
    for raw, expr in generate():
        want = expected(expr)
        try:
            got = _answers(loaded, expr)
        except FilterError as exc:
            declared = features(expr) & loaded.unsupported_filters
            if not declared:
                mismatches.append(f"{raw!r}: undeclared FilterError {exc}")
            rejected += 1
            continue
        for how, ids in got.items():
            target: set[str] | int = len(want) if how == "count" else want
            if ids != target:
                detail = (f"missing {sorted(want - ids)}, extra {sorted(ids - want)}"
                          if isinstance(ids, set) else f"{ids} != {target}")
                mismatches.append(f"{how} {raw!r}: {detail}")
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:15])
    assert rejected < EXPRESSIONS // 2 or loaded.unsupported_filters


# -- injection -----------------------------------------------------------------------------


HOSTILE_VALUES = ["' OR '1'='1", "'; DROP TABLE memkit_records; --", '" OR ""="', "%", "_",
                  "\\", "*", "NEAR(a b)", "a OR b", "$gt", ") OR (1=1"]
HOSTILE_FIELDS = [HOSTILE_FIELD, "x') OR 1=1 --", "key;", "[0]", "*", "a b", "ключ", "x$y",
                  "json_extract(metadata, '$')"]


def test_hostile_field_names_and_values_are_data(loaded: VectorStore) -> None:
    before = loaded.count()
    for field in HOSTILE_FIELDS:
        for value in [*HOSTILE_VALUES, 1, True]:
            for op in ("eq", "ne", "contains", "in"):
                raw = {field: {op: [value] if op == "in" else value}}
                expr = parse_filter(raw)
                assert expr is not None
                try:
                    got = _answers(loaded, expr)
                except FilterError:
                    assert features(expr) & loaded.unsupported_filters, raw
                    continue
                want = expected(expr)
                assert got == {"list": want, "search": want, "count": len(want)}, raw
    assert loaded.count() == before
    hostile = parse_filter({HOSTILE_FIELD: "' OR '1'='1"})
    assert hostile is not None
    assert _list_ids(loaded, hostile) == expected(hostile) != set()


def test_keyword_queries_with_operators_are_plain_words(loaded: VectorStore) -> None:
    if not loaded.supports_keyword:
        pytest.skip(f"{type(loaded).__name__} has no keyword search")
    before = loaded.count()
    dropping = {r.id for r in CORPUS if r.memory.startswith("DROP TABLE")}
    for query in ["'; DROP TABLE memkit; --", 'DROP" OR "TABLE', "DROP*", "(DROP", "-DROP",
                  "NOT DROP", "memory: DROP", "^DROP", "DROP AND NOT", 'DROP "']:
        found = {h.record.id for h in loaded.keyword_search(query, limit=len(CORPUS))}
        assert dropping <= found, query
    for query in ["NEAR(x y)", "OR", "*", '"', "AND OR NOT", "+", ":", "{}", ""]:
        loaded.keyword_search(query, limit=5)
    assert loaded.count() == before


def test_unicode_case_folding_matches_python_lower(loaded: VectorStore) -> None:
    for needle in ["CAFÉ", "İ", "STRASSE", "ǆ", "Ǆ", "ß"]:
        for field in ("memory", "s", "tags"):
            expr = parse_filter({field: {"icontains": needle}})
            assert expr is not None
            try:
                got = _list_ids(loaded, expr)
            except FilterError:
                assert "icontains" in loaded.unsupported_filters
                continue
            assert got == expected(expr), (field, needle)



def test_the_sqlite_stores_check_in_ram_returns_the_reference_rows() -> None:
    """The filters :func:`columnar` can tell from the fields held in RAM (the SQLite store
    checks a search's best rows with it) keep exactly the reference's records, also where
    a field is missing from every record (its column passed as None), with the scope
    fields compared as text or as codes."""
    from memkit.stores._columns import FIELDS as HELD
    from memkit.stores._columns import Held, columnar, held

    exprs = [e for _, e in generate(seed=SEED + 7)] + [parse_filter(raw) for raw in (
        {"user_id": "alice"}, {"user_id": {"in": ["bob", 3, True]}}, {"agent_id": {"ne": "x"}},
        {"valid_to": {"lte": TIMES[2]}}, {"NOT": {"expires_at": {"gt": TIMES[3]}}},
        {"run_id": {"nin": ["r1"]}}, {"agent_id": {"gte": 5}}, {"user_id": {"eq": 1.5}},
        {"user_id": {"lt": "b"}}, {"valid_to": {"ne": TIMES[1]}})]
    blank = [replace(r, agent_id=None, valid_to=None) for r in CORPUS]
    every = np.arange(len(CORPUS))
    told = 0
    for corpus in (CORPUS, blank):
        columns = [np.array([getattr(r, name) for r in corpus], dtype=object) for name in HELD]
        values = [None if all(v is None for v in c) else c for c in columns]
        for expr in exprs:
            check = columnar(expr)
            if check is None:
                continue
            told += 1
            for given in (Held(values), held(values)):
                kept = {r.id for r, keep in zip(corpus, check(given, every), strict=True) if keep}
                assert kept == expected(expr, corpus), expr
    assert told >= 40 and values[HELD.index("valid_to")] is None
    assert held(values).coded[HELD.index("agent_id")] is None
