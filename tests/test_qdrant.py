"""Qdrant-specific behaviour: translation of the tricky forms, local persistence, the server."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

from memkit._errors import ConfigError, FilterError
from memkit._filters import Not, condition, parse_filter
from memkit._pipeline.runtime import aapply_batch
from memkit.history.sqlite import SQLiteHistory
from memkit.stores.base import Record, WriteBatch
from memkit.stores.qdrant import QdrantStore, encode_payload, first_uuid_from, translate

pytestmark = pytest.mark.engine  # a store library beyond memory and SQLite


def _record(
    memory: str = "Hello world", vector: list[float] | None = None, **metadata: object
) -> Record:
    stamp = "2024-01-02T00:00:00.000000+00:00"
    return Record(
        id=str(uuid.uuid4()), memory=memory, hash=memory, user_id="u1",
        created_at=stamp, updated_at=stamp,
        metadata=dict(metadata), vector=np.array(vector or [1.0, 0.0, 0.0], dtype=np.float32),
    )


def _ids(store: QdrantStore, spec: dict[str, object]) -> set[str]:
    return {r.id for r in store.list(parse_filter(spec), limit=1000)[0]}


@pytest.fixture
def store() -> QdrantStore:
    s = QdrantStore(path=":memory:")
    s.open(3, "m")
    return s


def test_payload_keeps_scalars_lists_and_types_apart() -> None:
    payload = encode_payload(_record(a=1, b=True, c=["X", 2, False], d="Hi", e={"x": 1}))
    assert payload["n"]["a"] == 1 and "a" not in payload["b"]
    assert payload["b"]["b"] is True and "b" not in payload["n"]
    assert payload["ls"]["c"] == ["X"] and payload["ll"]["c"] == ["x"]
    assert payload["ln"]["c"] == [2] and payload["lb"]["c"] == [False]
    assert payload["l"]["d"] == "hi"
    assert all("e" not in section for key, section in payload.items() if key not in ("id", "record"))


def test_translate_quotes_unusual_field_names() -> None:
    native = translate(condition("a key[0]", "eq", "x"))
    assert native.must[0].key == 's."a key[0]"'


def test_string_order_outside_timestamps_is_rejected() -> None:
    with pytest.raises(FilterError):
        translate(condition("name", "gt", "b"))
    translate(condition("created_at", "gt", "2024-01-01T00:00:00+00:00"))


def test_missing_and_list_fields_under_negation(store: QdrantStore) -> None:
    scalar, listed, missing, boolean = (
        _record(tag="a"), _record(tag=["a", "b"]), _record(), _record(tag=True)
    )
    store.insert([scalar, listed, missing, boolean])
    assert _ids(store, {"tag": "a"}) == {scalar.id}
    assert _ids(store, {"tag": {"ne": "a"}}) == {listed.id, missing.id, boolean.id}
    assert _ids(store, {"tag": {"contains": "a"}}) == {scalar.id, listed.id}
    assert _ids(store, {"tag": {"nin": ["a", True]}}) == {listed.id, missing.id}
    everything = {r.id for r in (scalar, listed, missing, boolean)}
    assert _ids(store, {"NOT": {"tag": {"in": []}}}) == everything


def test_booleans_are_not_integers(store: QdrantStore) -> None:
    one, true, float_one = _record(n=1), _record(n=True), _record(n=1.0)
    store.insert([one, true, float_one])
    assert _ids(store, {"n": 1}) == {one.id, float_one.id}
    assert _ids(store, {"n": True}) == {true.id}
    assert _ids(store, {"n": {"gte": 1}}) == {one.id, float_one.id}


def test_substring_matching_is_exact(store: QdrantStore) -> None:
    record = _record("Hello, wonderful World")
    store.insert([record])
    assert _ids(store, {"memory": {"contains": "o, w"}}) == {record.id}
    assert _ids(store, {"memory": {"contains": "world"}}) == set()
    assert _ids(store, {"memory": {"icontains": "WORLD"}}) == {record.id}
    assert _ids(store, {"memory": {"contains": ""}}) == {record.id}


def test_timestamps_order(store: QdrantStore) -> None:
    record = _record()
    store.insert([record])
    assert _ids(store, {"created_at": {"gt": "2024-01-01T23:59:59+00:00"}}) == {record.id}
    assert _ids(store, {"created_at": {"lt": "2024-01-02T00:00:00+00:00"}}) == set()
    assert store.count(Not(item=condition("created_at", "lte", "2024-01-02"))) == 0


def test_keyword_search_ranks_by_terms(store: QdrantStore) -> None:
    cats = _record("cats like cats")
    dogs = _record("dogs bark")
    store.insert([cats, dogs, _record("nothing here")])
    hits = store.keyword_search("Cats!", limit=5)
    assert [h.record.id for h in hits] == [cats.id]
    assert 0.0 < hits[0].score <= 1.0
    assert store.keyword_search("  ", limit=5) == []


def test_update_without_vector_keeps_it_and_reindexes_text(store: QdrantStore) -> None:
    record = _record("old words", vector=[0.0, 1.0, 0.0])
    store.insert([record])
    store.update([replace(record, memory="new words", vector=None)])
    assert store.keyword_search("old", limit=5) == []
    assert [h.record.memory for h in store.keyword_search("new", limit=5)] == ["new words"]
    hit = store.search(np.array([0.0, 1.0, 0.0], dtype=np.float32), limit=1)[0]
    assert hit.record.id == record.id and hit.score == pytest.approx(1.0)


def test_local_path_persists_and_checks_dimension(tmp_path: Path) -> None:
    path = str(tmp_path / "qdrant")
    store = QdrantStore(path=path, collection_name="persist")
    store.open(3, "m")
    record = _record()
    store.insert([record])
    store.close()

    reopened = QdrantStore(path=path, collection_name="persist")
    reopened.open(3, "m")
    assert reopened.get(record.id) == record.with_vector(None)
    with pytest.raises(ConfigError, match="3-dimensional"):
        reopened.open(4, "m")
    with pytest.raises(ConfigError, match="other"):
        reopened.open(3, "other")
    reopened.close()


def test_non_uuid_ids_are_unknown(store: QdrantStore) -> None:
    assert store.get("not-a-uuid") is None
    store.delete(["not-a-uuid"])


def _pages(store: QdrantStore, size: int, spec: dict[str, object] | None = None) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page, cursor = store.list(None if spec is None else parse_filter(spec), limit=size,
                                  cursor=cursor)
        ids += [r.id for r in page]
        if cursor is None:
            return ids


@pytest.mark.parametrize("marked", [True, False], ids=["current", "written-before-the-marker"])
def test_pages_in_id_order_mix_uuid_and_other_ids(store: QdrantStore, marked: bool) -> None:
    store._marked = marked
    others = ["", "0", "00000000-0000-0000-0000-00000000000", "7", "abc", "g", "~", "ffff"]
    records = [_record(f"m{i}", k=i % 3) for i in range(13)]
    records += [replace(_record(f"o{i}", k=i % 3), id=id) for i, id in enumerate(others)]
    store.insert(records)
    for size in (1, 2, 5, 100):
        assert _pages(store, size) == sorted(r.id for r in records)
        assert _pages(store, size, {"k": 1}) == sorted(r.id for r in records if r.metadata["k"] == 1)


def test_first_uuid_from_is_the_least_uuid_not_below() -> None:
    assert first_uuid_from("") == "00000000-0000-0000-0000-000000000000"
    assert first_uuid_from("7g") == "80000000-0000-0000-0000-000000000000"
    assert first_uuid_from("0000000g") == "00000010-0000-0000-0000-000000000000"
    assert first_uuid_from("12345678x") == "12345679-0000-0000-0000-000000000000"
    uid = str(uuid.uuid4())
    assert first_uuid_from(uid) == uid
    assert first_uuid_from("ffffffff-ffff-ffff-ffff-ffffffffffff~") is None
    assert first_uuid_from("~") is None


async def test_server_round_trip_sync_and_async(qdrant_url: str) -> None:
    name = f"memkit_test_{uuid.uuid4().hex[:12]}"
    store = QdrantStore(url=qdrant_url, api_key=os.environ.get("MEMKIT_TEST_QDRANT_API_KEY"),
                        collection_name=name)
    try:
        await store.aopen(3, "m")
        store.open(3, "m")
        record = _record(tag=["a"])
        store.insert([record])
        assert await store.aget(record.id) == record.with_vector(None)
        assert await store.acount(parse_filter({"tag": {"contains": "a"}})) == 1
        hits = await store.asearch(np.array([1.0, 0.0, 0.0], dtype=np.float32), limit=1)
        assert hits[0].record.id == record.id
    finally:
        store._client.delete_collection(name)
        await store.aclose()


async def test_local_async_methods_share_the_sync_client(store: QdrantStore) -> None:
    records = [_record(f"memory {i}") for i in range(5)]
    await aapply_batch(store, SQLiteHistory(":memory:"), WriteBatch(adds=records))
    page, cursor = await store.alist(limit=3)
    assert [r.id for r in page] == sorted(r.id for r in records)[:3]
    rest, end = await store.alist(limit=3, cursor=cursor)
    assert [r.id for r in page + rest] == sorted(r.id for r in records) and end is None
    assert await store.acount() == 5
    assert len(await store.akeyword_search("memory", limit=10)) == 5
