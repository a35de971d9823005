"""The contract every vector store keeps, run against each engine, through sync and async.

``Driver`` exposes the sync API; in async mode each call runs the store's
``a*`` coroutine on one event loop per test, and batches go through the apply
flow inside the store's async transaction, so every test below covers both.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from memkit import ConfigError, VectorStoreError
from memkit._filters import Filter, parse_filter
from memkit._models import HistoryRecord
from memkit._pipeline.runtime import atransact, transact
from memkit._pipeline.write.apply import Applied, transaction
from memkit._time import to_iso
from memkit.history.base import HistoryStore
from memkit.stores.base import Hit, Order, Record, Vector, VectorStore, WriteBatch
from tests.stores.conftest import Stores

DIM = 8
MODEL = "contract-model"


class RecordingHistory(HistoryStore):
    def __init__(self) -> None:
        self.rows: list[HistoryRecord] = []

    def add(self, records: Sequence[HistoryRecord]) -> None:
        self.rows.extend(records)

    def get(self, memory_id: str) -> list[HistoryRecord]:
        return [r for r in self.rows if r.memory_id == memory_id]

    def event(self, event_id: str) -> HistoryRecord | None:
        return next((r for r in self.rows if r.id == event_id), None)

    def reset(self, cleared_at: str) -> None:
        self.rows.clear()

    def forget(self, memory_ids: Sequence[str]) -> None:
        self.rows = [r for r in self.rows if r.memory_id not in memory_ids or r.event == "PURGE"]

    def discard(self, event_ids: Sequence[str]) -> None:
        self.rows = [r for r in self.rows if r.id not in event_ids]

    def forget_scope(self, scope: Mapping[str, str], purged_at: str) -> None:
        self.rows = [r for r in self.rows if r.event == "PURGE"
                     or any(getattr(r, f) != v for f, v in scope.items())]


class Driver:
    """A store's sync API, called directly or through its coroutines on ``loop``."""

    def __init__(self, store: VectorStore, loop: asyncio.AbstractEventLoop | None) -> None:
        self.store = store
        self.loop = loop

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.loop is None:
            return getattr(self.store, name)(*args, **kwargs)
        return self.loop.run_until_complete(getattr(self.store, "a" + name)(*args, **kwargs))


    def open(self, dimension: int = DIM, model: str = MODEL) -> None:
        self._call("open", dimension, model)

    def close(self) -> None:
        self._call("close")

    def reset(self) -> None:
        self._call("reset")

    def insert(self, records: Sequence[Record]) -> None:
        self._call("insert", records)

    def update(self, record: Record) -> None:
        self._call("update", [record])

    def delete(self, ids: Sequence[str]) -> None:
        self._call("delete", ids)

    def get(self, id: str) -> Record | None:
        result: Record | None = self._call("get", id)
        return result

    def search(self, vector: Vector, *, limit: int, filter: Filter | None = None) -> list[Hit]:
        hits: list[Hit] = self._call("search", vector, limit=limit, filter=filter)
        return hits

    def keyword_search(self, text: str, *, limit: int, filter: Filter | None = None) -> list[Hit]:
        hits: list[Hit] = self._call("keyword_search", text, limit=limit, filter=filter)
        return hits

    def list(
        self, filter: Filter | None = None, *, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[list[Record], str | None]:
        page: tuple[list[Record], str | None] = self._call(
            "list", filter, limit=limit, cursor=cursor, order=order
        )
        return page

    def count(self, filter: Filter | None = None) -> int:
        n: int = self._call("count", filter)
        return n

    def project(self, fields: Sequence[str], filter: Filter | None = None) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._call("project", fields, filter)
        return rows

    def apply(self, batch: WriteBatch, history: HistoryStore) -> set[str]:
        """The skipped adds of ``batch`` run through the apply flow in a transaction."""
        effect = transaction(batch)
        if self.loop is None:
            applied: Applied = transact(self.store, history, effect)
        else:
            applied = self.loop.run_until_complete(atransact(self.store, history, effect))
        return set(applied.winners)

    def list_all(self, filter: Filter | None = None, page_size: int = 1000) -> list[Record]:
        out: list[Record] = []
        cursor: str | None = None
        while True:
            page, cursor = self.list(filter, limit=page_size, cursor=cursor)
            out.extend(page)
            if cursor is None:
                return out


class Env:
    """One test's stores of one backend, driven in one mode."""

    def __init__(self, stores: Stores, loop: asyncio.AbstractEventLoop | None) -> None:
        self.stores = stores
        self.loop = loop
        self.drivers: list[Driver] = []

    def new(self, collection: str = "contract", *, open: bool = True) -> Driver:
        driver = Driver(self.stores(collection), self.loop)
        self.drivers.append(driver)
        if open:
            driver.open()
        return driver

    def reopen(self, driver: Driver) -> Driver:
        driver.close()
        again = Driver(self.stores.reopen(driver.store), self.loop)
        self.drivers.append(again)
        return again


@pytest.fixture(params=["sync", "async"])
def env(request: pytest.FixtureRequest, store_factory: Stores) -> Any:
    loop = asyncio.new_event_loop() if request.param == "async" else None
    environment = Env(store_factory, loop)
    yield environment
    for driver in environment.drivers:
        driver.close()
    if loop is not None:
        loop.close()


@pytest.fixture
def s(env: Env) -> Driver:
    return env.new()


def vec(seed: int | str, dim: int = DIM) -> Vector:
    digest = hashlib.sha256(str(seed).encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    v = rng.normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


NOW = to_iso("2024-05-01T12:00:00+00:00")


def rec(
    id: str,
    text: str | None = None,
    *,
    user_id: str | None = "alice",
    agent_id: str | None = None,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    vector: Vector | None = None,
    hash: str | None = None,
) -> Record:
    text = text if text is not None else f"memory {id}"
    return Record(
        id=id, memory=text, hash=hash or hashlib.md5(text.encode()).hexdigest(),
        created_at=NOW, updated_at=NOW, user_id=user_id, agent_id=agent_id, run_id=run_id,
        metadata=metadata or {}, vector=vector if vector is not None else vec(id),
    )


def ids(items: Sequence[Hit] | Sequence[Record]) -> list[str]:
    return [i.record.id if isinstance(i, Hit) else i.id for i in items]


def f(obj: dict[str, Any]) -> Filter:
    parsed = parse_filter(obj)
    assert parsed is not None
    return parsed


# -- open ---------------------------------------------------------------------------


def test_reopening_with_another_dimension_or_model_raises_config_error(s: Driver) -> None:
    s.open(DIM, MODEL)  # the same again is fine
    with pytest.raises(ConfigError) as bad_dim:
        s.open(DIM * 2, MODEL)
    assert str(DIM) in str(bad_dim.value) and str(DIM * 2) in str(bad_dim.value)
    with pytest.raises(ConfigError) as bad_model:
        s.open(DIM, "other-model")
    assert MODEL in str(bad_model.value) and "other-model" in str(bad_model.value)


def test_wrong_vector_dimension_raises_vector_store_error(s: Driver) -> None:
    with pytest.raises(VectorStoreError):
        s.insert([rec("a", vector=np.ones(DIM + 1, np.float32))])
    s.insert([rec("b")])
    with pytest.raises(VectorStoreError):
        s.search(np.ones(DIM - 1, np.float32), limit=3)
    with pytest.raises(VectorStoreError):
        s.update(rec("b", "changed", vector=np.ones(DIM + 2, np.float32)))
    assert s.count() == 1


# -- CRUD -------------------------------------------------------------------------


def test_insert_then_get_returns_the_record_without_vector(s: Driver) -> None:
    metadata = {"n": 3, "x": 0.5, "tags": ["a", "b"], "flag": True, "nested": {"k": "v"}}
    original = rec("m1", "User likes tea", agent_id="bot", run_id="r1", metadata=metadata)
    original.memory_type, original.importance, original.confidence = "preference", 0.75, 0.5
    original.access_count, original.last_accessed_at = 3, "2025-01-02T03:04:05.000006+00:00"
    s.insert([original])
    got = s.get("m1")
    assert got is not None
    assert got.vector is None
    assert got == original.with_vector(None)
    assert s.get("missing") is None


def test_update_replaces_fields_and_keeps_the_vector_when_none(s: Driver) -> None:
    s.insert([rec("m1", "old text", metadata={"v": 1}), rec("m2")])
    s.update(rec("m1", "new text", metadata={"v": 2}, vector=None))
    got = s.get("m1")
    assert got is not None and got.memory == "new text" and got.metadata == {"v": 2}
    hits = s.search(vec("m1"), limit=1)
    assert ids(hits) == ["m1"] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].record.memory == "new text"
    s.update(rec("m1", "newer text", vector=vec("elsewhere")))
    assert ids(s.search(vec("elsewhere"), limit=1)) == ["m1"]


def test_delete_removes_records_and_ignores_unknown_ids(s: Driver) -> None:
    s.insert([rec("a"), rec("b"), rec("c")])
    s.delete(["a", "zzz"])
    assert s.get("a") is None
    assert sorted(ids(s.list_all())) == ["b", "c"]
    assert "a" not in ids(s.search(vec("a"), limit=10))


# -- search ---------------------------------------------------------------------------


def test_search_orders_by_cosine_with_scores_in_unit_interval(s: Driver) -> None:
    records = [rec(f"r{i:02}") for i in range(30)]
    s.insert(records)
    query = vec("query")
    expected = sorted(records, key=lambda r: -float(np.dot(r.vector, query)))  # type: ignore[arg-type]
    hits = s.search(query, limit=10)
    assert ids(hits) == ids(expected[:10])
    scores = [h.score for h in hits]
    assert all(0.0 <= x <= 1.0 for x in scores)
    assert scores == sorted(scores, reverse=True)
    best = float(np.dot(expected[0].vector, query))  # type: ignore[arg-type]
    assert scores[0] == pytest.approx((1 + best) / 2, abs=1e-5)
    assert all(h.record.vector is None for h in hits)


@pytest.mark.parametrize("limit", [1, 5, 29, 30, 100])
def test_search_returns_limit_hits_whenever_enough_exist(s: Driver, limit: int) -> None:
    s.insert([rec(f"r{i:02}") for i in range(30)])
    assert len(s.search(vec("q"), limit=limit)) == min(limit, 30)


def test_filtered_search_returns_k_hits_when_k_match(s: Driver) -> None:
    records = [
        rec(f"r{i:03}", metadata={"group": "rare" if i % 40 == 0 else "common"})
        for i in range(200)
    ]
    s.insert(records)
    rare = f({"group": "rare"})
    assert len(s.search(vec("q"), limit=3, filter=rare)) == 3
    hits = s.search(vec("q"), limit=10, filter=rare)
    assert sorted(ids(hits)) == [f"r{i:03}" for i in range(0, 200, 40)]
    assert all(h.record.metadata["group"] == "rare" for h in hits)


def test_scopes_are_isolated(s: Driver) -> None:
    s.insert([rec(f"a{i}", user_id="alice") for i in range(5)])
    s.insert([rec(f"b{i}", user_id="bob", agent_id="x") for i in range(4)])
    s.insert([rec("c0", user_id=None, agent_id="x", run_id="r")])
    alice, bob, agent = f({"user_id": "alice"}), f({"user_id": "bob"}), f({"agent_id": "x"})
    assert s.count(alice) == 5 and s.count(bob) == 4 and s.count(agent) == 5
    assert {h.record.user_id for h in s.search(vec("a0"), limit=100, filter=bob)} == {"bob"}
    assert sorted(ids(s.list_all(alice))) == [f"a{i}" for i in range(5)]
    both = f({"user_id": "bob", "agent_id": "x"})
    assert sorted(ids(s.search(vec("q"), limit=100, filter=both))) == [f"b{i}" for i in range(4)]


# -- list / count / reset ---------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 7, 40, 1000])
def test_list_paginates_in_ascending_id_order_without_gaps(s: Driver, page_size: int) -> None:
    all_ids = [f"id-{i:04}" for i in range(120)]
    s.insert([rec(i, metadata={"even": int(i[-1]) % 2 == 0}) for i in reversed(all_ids)])
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = s.list(limit=page_size, cursor=cursor)
        assert len(page) <= page_size
        seen.extend(ids(page))
        pages += 1
        if cursor is None:
            break
    assert seen == all_ids
    assert pages == -(-120 // page_size)
    even = ids(s.list_all(f({"even": True}), page_size=page_size))
    assert even == [i for i in all_ids if int(i[-1]) % 2 == 0]


@pytest.mark.parametrize("page_size", [1, 3, 1000])
def test_list_newest_first_pages_by_creation_time_then_id(s: Driver, page_size: int) -> None:
    days = [3, 1, 2, 2, 5, 1, 4, 2]
    records = [replace(rec(f"n{i}", user_id="alice" if i % 3 else "bob"),
                       created_at=to_iso(f"2024-05-0{day}T08:00:00+00:00"))
               for i, day in enumerate(days)]
    s.insert(records)
    expected = [r.id for r in sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)]
    for scope, wanted in ((None, expected),
                          (f({"user_id": "alice"}),
                           [i for i in expected if int(i[1:]) % 3])):
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page, cursor = s.list(scope, limit=page_size, cursor=cursor, order="newest")
            assert len(page) <= page_size
            seen.extend(ids(page))
            if cursor is None:
                break
        assert seen == wanted


@pytest.mark.parametrize("page_size", [1, 9, 100])
def test_list_pages_uuid_and_other_ids_in_id_order(s: Driver, page_size: int) -> None:
    uuids = [str(uuid.UUID(int=int.from_bytes(hashlib.sha256(b"%d" % i).digest()[:16], "big")))
             for i in range(150)]
    others = ["0a-x", "fff", "fff-1", "ab", "abc", "g00", "zz", "é", "0", "~", "ABC"]
    all_ids = uuids + others
    s.insert([rec(id, metadata={"k": n % 3}) for n, id in enumerate(all_ids)])
    assert ids(s.list_all(page_size=page_size)) == sorted(all_ids)
    assert ids(s.list_all(f({"k": 1}), page_size=page_size)) == sorted(
        id for n, id in enumerate(all_ids) if n % 3 == 1)
    for cursor in ("0a", "80000000", "fff-0", "zzz", ""):  # cursors that are no record's id
        page, _ = s.list(limit=page_size, cursor=cursor)
        assert ids(page) == sorted(i for i in all_ids if i > cursor)[:page_size]


@pytest.mark.parametrize("order", ["id", "newest"])
def test_list_continues_from_the_cursor_after_writes_between_pages(s: Driver, order: Order) -> None:
    def at(i: int, id: str, **fields: Any) -> Record:
        created = to_iso(f"2024-05-01T12:{i // 60:02}:{i % 60:02}+00:00")
        return replace(rec(id, **fields), created_at=created)

    def key(r: Record) -> tuple[str, str]:
        return (r.id, "") if order == "id" else (r.created_at, r.id)

    live = {r.id: r for r in (at(i, f"k{i:03}", metadata={"even": i % 2 == 0}) for i in range(60))}
    s.insert(list(live.values()))
    for round, (scope, fits) in enumerate(((None, lambda r: True),
                                           (f({"even": True}), lambda r: r.metadata["even"]))):
        first, cursor = s.list(scope, limit=7, cursor=None, order=order)
        assert cursor is not None
        ranked = sorted((r for r in live.values() if fits(r)), key=key, reverse=order == "newest")
        assert ids(first) == ids(ranked[:7])
        # between pages: deletes on both sides of the cursor, inserts on both sides, and
        # a record whose creation time moves it across the cursor
        gone = [ranked[3].id, ranked[9].id, ranked[20].id]
        s.delete(gone)
        added = [at(5, f"k004-{round}", metadata={"even": True}),
                 at(50, f"k050-{round}", metadata={"even": True})]
        s.insert(added)
        moved = replace(live[ranked[12].id], created_at=at(0, "x").created_at)
        s.update(moved)
        for id in gone:
            live.pop(id)
        live.update({r.id: r for r in [*added, moved]})
        rest: list[Record] = []
        while cursor is not None:
            page, cursor = s.list(scope, limit=7, cursor=cursor, order=order)
            assert len(page) <= 7
            rest.extend(page)
        last = key(first[-1])
        after = [r for r in live.values() if fits(r)
                 and (key(r) > last if order == "id" else key(r) < last)]
        expected = sorted(after, key=key, reverse=order == "newest")
        assert ids(rest) == ids(expected)


def test_count_with_and_without_filter(s: Driver) -> None:
    assert s.count() == 0
    s.insert([rec(f"r{i}", metadata={"n": i}) for i in range(12)])
    assert s.count() == 12
    assert s.count(f({"n": {"gte": 5}})) == 7


def test_project_gives_the_fields_of_every_matching_record(s: Driver) -> None:
    later = to_iso("2024-06-02T08:30:00.250000+00:00")
    records = [replace(rec(f"p{i:04}", user_id="alice" if i % 3 else "bob", run_id=f"r{i % 2}",
                           metadata={"n": i}),
                       created_at=to_iso(f"2024-05-{1 + i % 28:02}T10:00:00+00:00"),
                       valid_to=later if i % 5 == 0 else None,
                       supersedes=f"p{i - 1:04}" if i % 7 == 0 else None,
                       memory_type="fact" if i % 2 else None, importance=i / 1100,
                       confidence=None if i % 4 else 0.25, access_count=i % 3 or None,
                       last_accessed_at=later if i % 3 else None)
               for i in range(1050)]  # more than one page of a store that pages
    s.insert(records)
    fields = ("id", "created_at", "user_id", "run_id", "valid_to", "supersedes", "memory_type",
              "importance", "confidence", "access_count", "last_accessed_at", "expires_at")

    def values(r: Record) -> tuple[Any, ...]:
        return tuple(getattr(r, name) for name in fields)

    assert sorted(s.project(fields)) == sorted(values(r) for r in records)
    assert sorted(s.project(("id",), f({"user_id": "bob", "n": {"lt": 30}}))) == [
        (r.id,) for r in records[:30] if r.user_id == "bob"]
    for bad in ((), ("metadata",), ("id", "embedding; DROP TABLE x")):
        with pytest.raises(ValueError, match="cannot project"):
            s.project(bad)


def test_reset_empties_the_collection_which_stays_usable(s: Driver) -> None:
    s.insert([rec(f"r{i}") for i in range(10)])
    s.reset()
    assert s.count() == 0 and s.search(vec("r1"), limit=5) == [] and s.list_all() == []
    s.insert([rec("again")])
    assert ids(s.search(vec("again"), limit=5)) == ["again"]


# -- apply -------------------------------------------------------------------------------


def _history(memory_id: str, text: str) -> HistoryRecord:
    return HistoryRecord(
        id=f"h-{memory_id}", memory_id=memory_id, event="ADD", new_value=text,
        timestamp=NOW, user_id="alice",
    )


def test_apply_skips_duplicates_within_the_scope_only(s: Driver) -> None:
    s.insert([rec("old", "User likes tea", user_id="alice")])
    history = RecordingHistory()
    batch = WriteBatch(
        adds=[
            rec("dup-scope", "User likes tea", user_id="alice"),
            rec("new1", "User likes coffee", user_id="alice"),
            rec("dup-batch", "User likes coffee", user_id="alice"),
        ],
        history=[_history(i, "t") for i in ("dup-scope", "new1", "dup-batch")],
        dedup_scope=f({"user_id": "alice"}),
    )
    assert s.apply(batch, history) == {"dup-scope", "dup-batch"}
    assert sorted(ids(s.list_all())) == ["new1", "old"]
    assert [h.memory_id for h in history.rows] == ["new1"]

    other_scope = WriteBatch(
        adds=[rec("bob-tea", "User likes tea", user_id="bob")],
        history=[_history("bob-tea", "User likes tea")],
        dedup_scope=f({"user_id": "bob"}),
    )
    assert s.apply(other_scope, history) == set()
    assert s.get("bob-tea") is not None
    assert [h.memory_id for h in history.rows] == ["new1", "bob-tea"]


def test_apply_updates_deletes_and_records_history(s: Driver) -> None:
    s.insert([rec("keep", "v1"), rec("gone")])
    history = RecordingHistory()
    rows = [_history("keep", "v2"), _history("gone", "")]
    skipped = s.apply(
        WriteBatch(updates=[rec("keep", "v2", vector=None)], deletes=["gone"], history=rows),
        history,
    )
    assert skipped == set()
    got = s.get("keep")
    assert got is not None and got.memory == "v2"
    assert s.get("gone") is None
    assert history.rows == rows


def test_delete_at_scale_removes_every_record_of_the_scope(s: Driver) -> None:
    s.insert([rec(f"u{i:05}", user_id="bulk") for i in range(1500)])
    s.insert([rec(f"v{i}", user_id="other") for i in range(10)])
    bulk = f({"user_id": "bulk"})
    assert s.count(bulk) == 1500
    s.delete(ids(s.list_all(bulk)))
    assert s.count(bulk) == 0
    assert s.search(vec("u00001"), limit=5, filter=bulk) == []
    assert s.count() == 10
    assert len(s.search(vec("q"), limit=50)) == 10


# -- keyword ---------------------------------------------------------------------------------


def test_keyword_search_ranks_words_and_treats_operators_as_text(s: Driver) -> None:
    if not s.store.supports_keyword:
        pytest.skip(f"{type(s.store).__name__} has no keyword search")
    s.insert([
        rec("k1", "canine behavior training tips for dogs"),
        rec("k2", "User likes Python programming", user_id="bob"),
        rec("k3", "dogs dogs dogs everywhere"),
        rec("k4", "nothing to see here"),
    ])
    hits = s.keyword_search("dogs", limit=10)
    assert set(ids(hits)) == {"k1", "k3"}
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].score == pytest.approx(1.0)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert ids(s.keyword_search("python", limit=10, filter=f({"user_id": "bob"}))) == ["k2"]
    assert s.keyword_search("python", limit=10, filter=f({"user_id": "alice"})) == []
    assert len(s.keyword_search("dogs", limit=1)) == 1
    for hostile in ('dogs" OR "nothing', "NOT dogs", "dogs*", "(dogs", "NEAR(dogs see)",
                    "memory: dogs", "-dogs ^dogs", "'; DROP TABLE x; --", '"', "", "AND OR"):
        found = s.keyword_search(hostile, limit=10)
        assert all(0.0 <= h.score <= 1.0 for h in found)
    assert s.count() == 4


# -- persistence ---------------------------------------------------------------------------------


def test_records_survive_close_and_reopen(env: Env) -> None:
    if not env.stores.persistent:
        pytest.skip(f"{env.stores.name} does not persist")
    first = env.new()
    first.insert([rec("p1", "persisted", metadata={"k": [1, 2]}), rec("p2")])
    first.delete(["p2"])
    again = env.reopen(first)
    again.open()
    got = again.get("p1")
    assert got is not None and got.metadata == {"k": [1, 2]}
    assert ids(again.search(vec("p1"), limit=5)) == ["p1"]
    assert again.count() == 1
    third = env.reopen(again)
    with pytest.raises(ConfigError):
        third.open(DIM + 1, MODEL)
    with pytest.raises(ConfigError):
        third.open(DIM, "another-model")
